"""The head explorer's own-sentence box on the built site: MiniLM runs in the reader's browser.

On chapter 4's page, in Chromium with every off-site request blocked: nothing of the model is
fetched before the first edit; a typed sentence's 72 maps (computed by the Web Worker from the
float16 weights) are within 2e-3 of the Python reference and their rows sum to 1; its rollout
matches :func:`course_utils.topic_focus.attention_rollout`; a sentence over the cap gets the cap
message; no request leaves the site; no console error or warning. With the reader's sentence on
show, the widget still passes the site audit's goals (axe in light and dark mode, 390 px phone,
1280x720 projector at 150%).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from course_site import BROWSER_MODEL_DIR
from course_site.browser import WIDGET_SIZES_JS, WIDTH_JS, block_outside, run_axe
from course_utils.pretrained import attention_maps, load_tokenizer
from course_utils.pretrained.minilm_web import MAX_BROWSER_TOKENS, download_sizes
from course_utils.topic_focus import attention_rollout
from course_utils.widgets.head_explorer import too_long_message
from tests.browser.live_page import next_frames

pytestmark = pytest.mark.browser

PAGE = "chapters/04_multi_head_attention.html"
TOLERANCE = 2e-3
SENTENCE = "Readers type their own sentence, and every head of the model looks at it."
TOO_LONG = "many words " * 40

#: The widget's float results (kept on its root element for tests and curious readers).
RESULT_JS = """
() => {
  const r = document.querySelector('.cu-head-explorer').cuHeadExplorer;
  return r && {tokens: r.tokens, maps: Array.from(r.maps), rollout: Array.from(r.rollout),
               text: r.text, ms: r.ms};
}
"""
STATE_JS = "() => document.querySelector('.cu-head-explorer').dataset.cuOwn || ''"


def _wait_for_map_of(page: Any, sentence: str) -> None:
    """Wait until the widget shows the map of ``sentence`` itself. "ready" alone is not enough:
    while the text is typed, each edit starts a run, and on a busy machine the widget can be
    "ready" with the map of a half-typed sentence before the last edit's run has finished."""
    shown = "(document.querySelector('.cu-head-explorer').cuHeadExplorer || {}).text"
    page.wait_for_function(
        f"(s) => ({STATE_JS})() === 'ready' && {shown} === s", arg=sentence, timeout=180_000
    )


def _open(browser: Any, url: str) -> tuple[Any, Any, dict[str, list[Any]]]:
    record: dict[str, list[Any]] = {"blocked": [], "problems": [], "requests": []}
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    block_outside(context, (url.split("chapters/")[0],), record["blocked"])
    page = context.new_page()
    page.on(
        "console",
        lambda m: (
            record["problems"].append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning")
            else None
        ),
    )
    page.on("pageerror", lambda e: record["problems"].append(f"page error: {e}"))
    page.on("requestfailed", lambda r: record["problems"].append(f"failed: {r.url}"))
    page.on(
        "response",
        lambda r: (
            record["problems"].append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None
        ),
    )
    page.on("request", lambda r: record["requests"].append((time.monotonic(), r.url)))
    # Requests of the Web Worker are the context's, not the page's.
    context.on("request", lambda r: record["requests"].append((time.monotonic(), r.url)))
    page.goto(url, wait_until="load")
    page.evaluate("() => window.courseWidgetLoader && window.courseWidgetLoader.ready")
    page.wait_for_selector(".cu-head-explorer .cu-he-input", timeout=30_000)
    return context, page, record


def _model_requests(record: dict[str, list[Any]], after: float = 0.0) -> list[str]:
    return [u for t, u in record["requests"] if f"/{BROWSER_MODEL_DIR}/" in u and t >= after]


def test_built_site_has_the_model(site_root: Path) -> None:
    folder = site_root / BROWSER_MODEL_DIR
    assert (folder / "worker.mjs").is_file() and (folder / "model" / "manifest.json").is_file()
    upfront = sum(
        (folder / "model" / f).stat().st_size
        for f in ("manifest.json", "vocab.json", "weights.bin")
    )
    assert upfront == download_sizes("float16")["upfront_bytes"]
    # ES modules are not swept into every page as plain scripts
    page = (site_root / PAGE).read_text(encoding="utf-8")
    assert not re.search(r"<(script|link)\b[^>]*(src|href)=\"[^\"]*minilm/", page)


def test_typed_sentence_runs_in_the_browser(site_url: str, browser: Any) -> None:
    context, page, record = _open(browser, site_url + PAGE)
    try:
        page.wait_for_timeout(300)
        assert _model_requests(record) == [], "model files fetched before the first edit"
        root = page.locator(".cu-head-explorer")
        mb = f"{download_sizes('float16')['upfront_bytes'] / 1e6:.1f} MB"
        assert mb in root.locator(".cu-he-run").inner_text(), "the button states the download size"

        edited = time.monotonic()
        root.locator(".cu-he-input").press_sequentially(SENTENCE, delay=5)
        _wait_for_map_of(page, SENTENCE)
        assert _model_requests(record, after=edited), "the first edit did not load the model"
        result = page.evaluate(RESULT_JS)
        tokens, expected = attention_maps(SENTENCE)  # (L, H, T, T)
        assert result["tokens"] == tokens and result["text"] == SENTENCE
        T = len(tokens)
        maps = np.asarray(result["maps"]).reshape(expected.shape)  # (L, H, T, T)
        np.testing.assert_allclose(maps.sum(axis=-1), 1.0, atol=1e-5)  # rows sum to 1
        diff = float(np.abs(maps - expected).max())
        assert diff <= TOLERANCE, f"max |browser - Python| = {diff}"
        rollout = np.asarray(result["rollout"]).reshape(T, T)
        assert float(np.abs(rollout - attention_rollout(expected)).max()) <= TOLERANCE
        print(f"browser vs Python: max abs diff {diff:.2e} over {maps.size} weights")
        # the drawing shows it: the sentence menu's last option, a T x T grid
        assert root.locator("select").first.evaluate("(s) => s.selectedIndex") == 3
        assert root.locator(".cu-stage svg rect").count() == T * T
        assert SENTENCE in root.locator(".cu-stage svg").get_attribute("aria-label")

        # over the cap: a clear message, not a map
        box = root.locator(".cu-he-input")
        box.fill(TOO_LONG)
        box.press("Enter")
        page.wait_for_function(f"() => ({STATE_JS})() === 'too-long'", timeout=60_000)
        n = len(load_tokenizer().encode(TOO_LONG).ids)
        assert n > MAX_BROWSER_TOKENS
        assert root.locator(".cu-he-status").inner_text() == too_long_message(n)

        page.wait_for_timeout(200)
        assert record["blocked"] == [], f"off-site requests: {record['blocked']}"
        assert record["problems"] == [], "\n".join(record["problems"])
    finally:
        context.close()


def test_typed_sentence_passes_the_audit(site_url: str, browser: Any) -> None:
    context, page, record = _open(browser, site_url + PAGE)
    try:
        box = page.locator(".cu-head-explorer .cu-he-input")
        box.focus()
        page.keyboard.type("A phone, a projector and a dark room.")
        page.keyboard.press("Enter")
        _wait_for_map_of(page, "A phone, a projector and a dark room.")
        problems = []
        for mode, rules in (("light", None), ("dark", ["color-contrast", "link-in-text-block"])):
            page.evaluate(
                "(m) => { document.documentElement.dataset.theme = m;"
                " for (const a of document.getAnimations()) a.finish(); }",
                mode,
            )
            problems += [
                f"{mode}: axe {v['impact']} {v['id']} {v['targets'][:2]}"
                for v in run_axe(page, rules)
                if v["impact"] in ("critical", "serious")
            ]
        page.set_viewport_size({"width": 390, "height": 844})
        next_frames(page)
        width = page.evaluate(WIDTH_JS)
        if width["scroll"] > 390:
            problems.append(f"390 px: the page is {width['scroll']} px wide: {width['worst']}")
        page.set_viewport_size({"width": 853, "height": 480})
        next_frames(page)
        for w in page.evaluate(WIDGET_SIZES_JS):
            if w["cls"] == "cu-head-explorer" and w["height"] > 480:
                problems.append(f"projector 150%: the head explorer is {w['height']} px high")
        assert not problems, "\n".join(problems)
        assert record["problems"] == [] and record["blocked"] == []
    finally:
        context.close()
