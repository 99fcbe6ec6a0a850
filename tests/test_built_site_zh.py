"""The built 中文 edition (``_build/html/zh``) against the English one, page by page.

Read from the HTML (no browser), marked ``browser`` because they need the built site (``make book``
builds both editions); a missing site skips, except in CI. For every English page:

* the zh page exists with the same file name, says ``<html lang="zh-CN">`` (English: ``en``);
* both carry a language switch (``lang``/``hreflang``) to the same page of the other edition;
* the same widgets (count and kind, from the saved widget state), the same code cells (the text of
  every code block) and the same printed numbers (the numbers in every text output);
* the zh edition has its own classroom kit: decks (``<html lang="zh-CN">``), learner copies, zip.
"""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from course_site.browser import site_dir, site_pages, split_edition

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
SITE = site_dir()
ZH = SITE / "zh"
STATE_RE = re.compile(
    r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', re.S
)
VIEW_RE = re.compile(
    r'<script type="application/vnd.jupyter.widget-view\+json">(.*?)</script>', re.S
)
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
ENGLISH = [
    p for p in (site_pages(SITE, ("en",)) if SITE.is_dir() else []) if not p.startswith("zh/")
]
CHAPTERS = sorted(p.stem for p in (REPO / "chapters").glob("*.ipynb"))
#: Pages Sphinx writes from its own templates (no source page, so no language switch).
GENERATED = {"search.html", "genindex.html"}


@pytest.fixture(scope="module")
def built() -> Path:
    if not (ZH / "intro.html").is_file():
        message = f"the 中文 edition is not built at {ZH} (run `make book`)"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message)
        pytest.skip(message)
    return SITE


class Cells(HTMLParser):
    """The code blocks of a page's code cells, its text outputs, its language and its switch."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lang = ""
        self.switch: list[dict[str, str]] = []
        self.code: list[str] = []
        self.outputs: list[str] = []
        self._stack: list[str] = []  # "input" / "output" / "" per open <div>
        self._pre: list[str] | None = None
        self._in_switch = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = a.get("class", "").split()
        if tag == "html":
            self.lang = a.get("lang", "")
        if tag == "nav" and "cu-lang-switch" in classes:
            self._in_switch = True
        if tag == "a" and self._in_switch:
            self.switch.append(a)
        if tag == "div":
            kind = "input" if "cell_input" in classes else ""
            kind = "output" if "cell_output" in classes else kind
            # A cell excused from nbval times the reader's machine (tests/test_course_structure.py
            # says why): its printed numbers differ at every run, so neither edition's are read.
            kind = "volatile" if "tag_nbval-ignore-output" in classes else kind
            self._stack.append(kind)
        if tag == "pre" and self._where():
            self._pre = []

    def _where(self) -> str:
        return next((k for k in reversed(self._stack) if k), "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "nav":
            self._in_switch = False
        if tag == "pre" and self._pre is not None:
            text = "".join(self._pre)
            if self._where() == "input":
                self.code.append(text)
            elif "volatile" not in self._stack:
                self.outputs.append(text)
            self._pre = None
        if tag == "div" and self._stack:
            self._stack.pop()

    def handle_data(self, data: str) -> None:
        if self._pre is not None:
            self._pre.append(data)


def parse(path: Path) -> Cells:
    cells = Cells()
    cells.feed(path.read_text(encoding="utf-8", errors="replace"))
    return cells


def widget_kinds(path: Path) -> list[str]:
    """The kind (anywidget id) of every widget view on a page, in order."""
    text = path.read_text(encoding="utf-8", errors="replace")
    m = STATE_RE.search(text)
    state = json.loads(m.group(1).replace("<\\/", "</"))["state"] if m else {}
    kinds = []
    for view in VIEW_RE.finditer(text):
        model = json.loads(view.group(1).replace("<\\/", "</"))["model_id"]
        kinds.append(str(state.get(model, {}).get("state", {}).get("_anywidget_id", "?")))
    return kinds


def article_links(path: Path) -> int:
    """The links of a page's article: with its code blocks and widgets, its keyboard tab stops."""
    text = path.read_text(encoding="utf-8", errors="replace")
    start, end = text.find("<article"), text.find("</article>")
    return len(re.findall(r"<a\s", text[start:end])) if start >= 0 else 0


def with_chinese_comments(codes: list[str], page: str) -> list[str]:
    """The English code of a page with its comments translated as the 中文 edition's staging
    translates them (``locale/zh_CN/code_comments.json``): the zh code must be exactly this."""
    from course_site.zh_edition import load_code_comments, source, translate_code_comments

    catalog = load_code_comments(REPO).get(str(Path(page).with_suffix("").as_posix()), {})
    nb = {"cells": [{"cell_type": "code", "source": c, "metadata": {}} for c in codes]}
    translate_code_comments(nb, catalog)
    return [source(cell) for cell in nb["cells"]]


def numbers(texts: list[str]) -> list[str]:
    return [m.group(0) for t in texts for m in NUMBER.finditer(t)]


def test_every_english_page_has_a_zh_page(built: Path) -> None:
    assert ENGLISH, f"no English pages under {SITE}"
    missing = [rel for rel in ENGLISH if not (ZH / rel).is_file()]
    assert not missing, f"English pages without a 中文 page: {missing}"
    extra = [
        rel for rel in site_pages(SITE, ("zh",)) if not (SITE / split_edition(rel)[1]).is_file()
    ]
    assert not extra, f"中文 pages without an English page: {extra}"


@pytest.mark.parametrize("rel", ENGLISH or ["<no site>"])
def test_zh_page_matches_english(rel: str, built: Path) -> None:
    if rel == "<no site>":
        pytest.fail(f"no HTML pages under {SITE}")
    en_path, zh_path = SITE / rel, ZH / rel
    en, zh = parse(en_path), parse(zh_path)
    if 'http-equiv="Refresh"' in en_path.read_text(encoding="utf-8"):
        assert zh.lang == "zh-CN"  # the redirect page of each edition
        return
    assert (en.lang, zh.lang) == ("en", "zh-CN")
    if rel in GENERATED:
        return
    # The language switch: to the same page of the other edition, with lang and hreflang.
    for page, parsed, lang, other in (
        (en_path, en, "zh-CN", zh_path),
        (zh_path, zh, "en", en_path),
    ):
        assert len(parsed.switch) == 1, f"{page}: {len(parsed.switch)} language switch links"
        link = parsed.switch[0]
        assert link.get("lang") == lang and link.get("hreflang") == lang, link
        target = (page.parent / link["href"]).resolve()
        assert target == other.resolve(), f"{page}: the switch goes to {target}, not {other}"
    # One source of truth: the same code (its comments in Chinese), the same printed numbers,
    # the same widgets.
    assert zh.code == with_chinese_comments(en.code, rel), (
        f"{rel}: the code cells differ between the editions"
    )
    assert numbers(zh.outputs) == numbers(en.outputs), f"{rel}: the printed numbers differ"
    assert widget_kinds(zh_path) == widget_kinds(en_path), f"{rel}: the widgets differ"
    # The same tab stops (the browser audit walks them with Tab on the English page only).
    assert article_links(zh_path) == article_links(en_path), f"{rel}: the links differ"


def test_the_comparison_sees_code_and_outputs(built: Path) -> None:
    """The parser finds code and outputs where there are some (so the comparison is not empty)."""
    page = parse(SITE / "chapters" / f"{CHAPTERS[0]}.html")
    assert len(page.code) >= 5 and len(page.outputs) >= 3
    assert numbers(page.outputs)
    assert widget_kinds(SITE / "chapters" / f"{CHAPTERS[0]}.html")


@pytest.mark.parametrize("stem", CHAPTERS)
def test_zh_kit(stem: str, built: Path) -> None:
    """The 中文 edition's decks, learner copies and links (its own, under ``zh/``)."""
    deck = ZH / "slides" / f"{stem}.slides.html"
    assert deck.is_file(), f"no 中文 deck {deck}"
    assert '<html lang="zh-CN">' in deck.read_text(encoding="utf-8")
    assert (ZH / "learner" / f"{stem}.learner.ipynb").is_file()
    page = (ZH / "chapters" / f"{stem}.html").read_text(encoding="utf-8")
    assert f'href="../slides/{stem}.slides.html"' in page and "本章幻灯片" in page
    assert (ZH / "learner" / "attention-step-by-step-learner.zip").is_file()
    index = (ZH / "slides" / "index.html").read_text(encoding="utf-8")
    assert f'href="{stem}.slides.html"' in index and '<html lang="zh-CN">' in index
    # The deck's title as plain text in Chinese: no Markdown escape ("1\\. 查询"), no "(slides)";
    # the index names the book, not Sphinx's "Project name not set".
    title = re.search(r"<title>([^<]*)</title>", deck.read_text(encoding="utf-8")).group(1)
    assert "\\" not in title and title.endswith("（幻灯片）"), title
    assert "Project name not set" not in index and "注意力，一步一步来" in index


@pytest.mark.parametrize("edition", ["", "zh/"])
def test_the_slide_index_names_the_book(edition: str, built: Path) -> None:
    index = (SITE / edition / "slides" / "index.html").read_text(encoding="utf-8")
    title = re.search(r"<title>([^<]*)</title>", index).group(1)
    assert "Project name not set" not in title, title
    assert title in {"Slides: Attention, step by step", "幻灯片：注意力，一步一步来"}, title


def test_a_folded_answer_hints_in_chinese(built: Path) -> None:
    """sphinx-togglebutton's "Click to show" hint, in Chinese on every 中文 chapter."""
    for stem in CHAPTERS:
        page = (ZH / "chapters" / f"{stem}.html").read_text(encoding="utf-8")
        assert "let toggleHintShow = '点击显示';" in page, stem
        assert "Click to show" not in page and "Click to hide" not in page, stem


#: The English glosses of chapter 1's Chinese seed text ({gloss} roles): shown in English only.
GLOSSES = (
    "Let every element of a sequence",
    "Xiao Ming is reading on a bench by the bank.",
    "What information am I looking for?",
    "compute the similarities",
)


def test_seed_glosses_are_english_only(built: Path) -> None:
    """The English page shows each gloss in italics; the 中文 page, its slides and its learner copy
    leave them out (their readers read the Chinese itself), with no empty paragraph left."""
    stem = "01_queries_keys_values"
    en = (SITE / "chapters" / f"{stem}.html").read_text(encoding="utf-8")
    zh = (ZH / "chapters" / f"{stem}.html").read_text(encoding="utf-8")
    for gloss in GLOSSES:
        assert re.search(r'<em class="cu-gloss">' + re.escape(gloss), en), gloss
        assert gloss not in zh, gloss
        for kit in (f"slides/{stem}.slides.html", f"learner/{stem}.learner.ipynb"):
            assert gloss not in (ZH / kit).read_text(encoding="utf-8"), (kit, gloss)
    assert "{gloss}" not in en and "{gloss}" not in zh
    assert "<p></p>" not in zh
    assert "小明在银行边的长椅上看书" in zh and "我想找什么信息？" in zh


def _lang_switch(page: Path) -> tuple[str, str]:
    """The (href, hreflang) of a deck's or slide index's language link (attributes in any order)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    nav = soup.find("nav", attrs={"aria-label": "Language / 语言"})
    link = nav.find("a", href=True) if nav else None
    assert link is not None, f"{page}: no language switch"
    return link["href"], link.get("hreflang", "")


@pytest.mark.parametrize("name", ["index.html", *(f"{s}.slides.html" for s in CHAPTERS)])
def test_decks_and_slide_index_switch_language(name: str, built: Path) -> None:
    """Each deck and the slide index link to the same file of the other edition, and back."""
    english, chinese = SITE / "slides" / name, ZH / "slides" / name
    href, lang = _lang_switch(english)
    assert lang == "zh-CN" and (english.parent / href).resolve() == chinese.resolve(), href
    href, lang = _lang_switch(chinese)
    assert lang == "en" and (chinese.parent / href).resolve() == english.resolve(), href


def _text(nb: dict[str, Any]) -> str:
    return "\n".join(
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in nb["cells"]
        if c["cell_type"] == "markdown"
    )


@pytest.mark.parametrize("stem", CHAPTERS)
def test_zh_learner_copy_has_the_translated_prose(stem: str, built: Path) -> None:
    """Every translated message of the chapter (a heading or a paragraph the translators filled)
    reaches the zh learner copy; its code is the English learner copy's."""
    from course_site import i18n

    zh = json.loads((ZH / "learner" / f"{stem}.learner.ipynb").read_text(encoding="utf-8"))
    en = json.loads((SITE / "learner" / f"{stem}.learner.ipynb").read_text(encoding="utf-8"))
    from course_kit.notebooks import SET_CHINESE

    code = [c["source"] for c in zh["cells"] if c["cell_type"] == "code"]
    # The zh copy opens with the cell that sets the language (importing course_utils does not).
    assert code[0] == SET_CHINESE
    english = [c["source"] for c in en["cells"] if c["cell_type"] == "code"]
    english = with_chinese_comments(["".join(c) for c in english], f"chapters/{stem}")
    assert ["".join(c) for c in code[1:]] == english
    catalog = i18n.load_catalog(i18n.messages_dir(REPO) / "chapters" / f"{stem}.po")
    headings = [re.sub(r"^#+\s*", "", ln) for ln in _text(en).splitlines() if ln.startswith("#")]
    expected = [catalog[i18n.normalise(h)] for h in headings if i18n.normalise(h) in catalog]
    text = _text(zh)
    missing = [t for t in expected if t not in text]
    assert not missing, f"translated headings missing from the zh learner copy: {missing[:5]}"


def test_every_translated_message_is_applied_on_its_page(built: Path) -> None:
    """Sphinx keeps the English, with no warning, when a translation parses as another node (a
    heading ``1. 掩码`` read as a list) or is inserted after its translation step (the table of
    contents' part captions): every translated message's text is on its zh page, and its English
    is not (``course_site.zh_catalogues --applied``)."""
    from course_site import zh_catalogues

    cats = zh_catalogues.load_catalogues(zh_catalogues.DEFAULT_LOCALE)
    report = zh_catalogues.Report()
    zh_catalogues.check_applied(cats, ZH, report)
    problems = [
        f"{e.get('page')}: {e['detail']} {e.get('msgid', '')[:60]!r}" for e in report.errors
    ]
    assert not problems, f"{len(problems)} translations not applied:\n" + "\n".join(problems[:30])
    applied = sum(page["applied"] for page in report.pages.values())
    translated = sum(page["translated"] for page in report.pages.values())
    assert applied == translated > 2000, (applied, translated)


#: Pages that are English by nature: the bibliography (titles of papers), Sphinx's own index and
#: search pages (no source page).
NOT_PROSE = {"references.html", "genindex.html", "search.html"}


@pytest.mark.parametrize("rel", [p for p in ENGLISH if p not in NOT_PROSE])
def test_zh_page_has_no_english_prose(rel: str, built: Path) -> None:
    """What a reader meets on a 中文 page (prose, headings, toggles, labels, the theme's tooltips
    and landmark names) is Chinese, apart from names, data and the terms of
    ``course_site.zh_lint.PAGE_ENGLISH_ALLOWED``. Code, maths, printed output (checked in the
    notebooks and figures) and citations are not prose."""
    from course_site.zh_lint import page_english

    found = page_english((built / "zh" / rel).read_text(encoding="utf-8"))
    assert not found, "\n".join(f"{where}: {run!r} in {text!r}" for where, run, text in found)


def test_the_page_check_sees_english_prose() -> None:
    """The check itself: English in a paragraph, a toggle, a tooltip is found; names, code,
    maths, glosses and citation links are not."""
    from course_site.zh_lint import page_english

    page = (
        '<p>Gemma 用 <code>np.tril</code> 和 <span class="math">\\(QK^T\\)</span>；'
        '注意力（attention）<a href="../references.html#id1">Vaswani et al.</a></p>'
        "<summary>Show the solution</summary>"
        '<a title="Toggle primary sidebar">☰</a><p>这里 the rows sum to one。</p>'
    )
    assert [(w, run) for w, run, _ in page_english(page)] == [
        ("summary", "Show the solution"),
        ("@title", "Toggle primary sidebar"),
        ("p", "the rows sum to one"),
    ]
