"""Widgets made under COURSE_LANG=zh show Chinese on a static page (no kernel), in Chromium.

Every chapter widget is created under ``set_language("zh")`` (as the zh edition's notebooks are
executed), embedded the way myst-nb embeds saved widget state, and drawn by the site's own loader
(``_ext/course_site/static``, no built site needed). Every control is moved one step; then every
visible UI string (labels, captions, descriptions, live regions, aria labels and values, table
heads, options, SVG titles and text) must pass :func:`course_site.zh_lint.untranslated_english`
once the widget's own data (its tokens and sentences, which are not translated) is taken out.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import traitlets

from course_site.browser import ROOT, embed_page_html, serve
from course_site.zh_lint import untranslated_english
from course_utils.i18n import set_language
from tests.browser.live_page import next_frames

pytestmark = pytest.mark.browser

COLLECT_JS = r"""
() => Array.from(document.querySelectorAll("figure.cu-widget")).map((fig) => {
  const out = [];
  const add = (s) => { if (s && s.trim()) out.push(s.trim()); };
  // A symbol drawn with <sub>/<sup> (d_c, d_h^R) is read as the notation it draws, not as a word.
  const text = (n) => {
    if (!n.querySelector("sub, sup")) return n.textContent;
    const copy = n.cloneNode(true);
    copy.querySelectorAll("sub").forEach((e) => { e.textContent = "_" + e.textContent; });
    copy.querySelectorAll("sup").forEach((e) => { e.textContent = "^" + e.textContent; });
    return copy.textContent;
  };
  const visible = "label, figcaption, .cu-description, [aria-live], th, option, output, button";
  fig.querySelectorAll(visible).forEach((n) => add(text(n)));
  fig.querySelectorAll("svg title, svg text").forEach((n) => add(n.textContent));
  fig.querySelectorAll("[aria-label], [aria-valuetext], [title]").forEach((n) => {
    add(n.getAttribute("aria-label")); add(n.getAttribute("aria-valuetext"));
    add(n.getAttribute("title"));
  });
  return out;
})
"""

STEP_JS = r"""
() => {
  for (const input of document.querySelectorAll("figure.cu-widget input[type=range]")) {
    if (Number(input.value) < Number(input.max)) input.value = String(Number(input.value) + 1);
    else input.value = String(Number(input.value) - 1);
    input.dispatchEvent(new Event("input", { bubbles: true }));
  }
  for (const sel of document.querySelectorAll("figure.cu-widget select")) {
    sel.value = String((Number(sel.value) + 1) % sel.options.length);
    sel.dispatchEvent(new Event("change", { bubbles: true }));
  }
}
"""


def _data_words(widget: Any) -> set[str]:
    """Words of the widget's data traits (plain Unicode: tokens, sentences), never translated."""
    from course_utils.widgets._text import Text

    words: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            words.update(re.findall(r"[A-Za-z][A-Za-z']*", value))
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v)

    for name, trait in widget.traits(sync=True).items():
        inner = getattr(trait, "_trait", None)
        if isinstance(trait, Text) or isinstance(inner, Text) or name.startswith("_"):
            continue
        if isinstance(trait, traitlets.Unicode | traitlets.List):
            walk(getattr(widget, name))
    return words


def _without(text: str, words: set[str]) -> str:
    for word in sorted(words, key=len, reverse=True):
        text = re.sub(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", " ", text)
    return text


def test_zh_widgets_show_no_english_on_a_static_page(browser, tmp_path: Path) -> None:
    from course_utils.topic_focus import make_split, real_sentences, train_classifier
    from course_utils.widgets import HeadExplorer, TopicWordFocus
    from tests.test_i18n import _chapter_widgets

    set_language("zh")
    try:
        widgets = _chapter_widgets()
        widgets.append(
            HeadExplorer(
                ["The cat sat on the mat."],
                notes={(0, 2): "highest previous score (0.93)"},
                title="all-MiniLM-L6-v2: one head's attention map",
            )
        )
        result = train_classifier(make_split(n_train=300, n_test=60, seed=0), seed=0, steps=40)
        widgets.append(
            TopicWordFocus(
                result,
                [real_sentences()[i] for i in (0, 44)],
                k_max=2,
                option_index=1,
                title="Which words does the decision rest on?",
            )
        )
        page = embed_page_html(widgets, "zh widgets").replace('lang="en"', 'lang="zh-CN"')
    finally:
        set_language(None)
    (tmp_path / "_static").symlink_to(ROOT / "_ext" / "course_site" / "static")
    errors: list[str] = []
    with serve(tmp_path, extra={"/zh.html": page.encode("utf-8")}) as url:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        tab = context.new_page()
        tab.on("pageerror", lambda e: errors.append(str(e)))
        tab.goto(f"{url}/zh.html")
        tab.wait_for_function(
            f"document.querySelectorAll('figure.cu-widget').length === {len(widgets)}",
            timeout=60_000,
        )
        before = tab.evaluate(COLLECT_JS)
        tab.evaluate(STEP_JS)
        next_frames(tab)
        after = tab.evaluate(COLLECT_JS)
        context.close()
    assert not errors
    bad = {}
    for w, texts in zip(widgets, [b + a for b, a in zip(before, after, strict=True)], strict=True):
        data = _data_words(w)
        assert texts, type(w).__name__
        for text in texts:
            runs = untranslated_english(_without(text, data))
            if runs:
                bad.setdefault(type(w).__name__, []).append((text[:120], runs))
    assert not bad, bad
