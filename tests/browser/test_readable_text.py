"""Text a reader can read in the head explorer with a reader's own long sentence (over 60 tokens),
at each of the four ways the book is read (``course_site.browser.VIEWPORTS``: a 1280x800
desktop, the same in dark mode, a 390x844 phone, a 1280x720 projector at 150 % zoom, i.e. a CSS
viewport of 853x480): no widget text under ``MIN_TEXT_PX`` (11 CSS px), no page scrolling sideways
on the phone, the widget fitting the projector's screen.

Every chapter page's widget and figure text, at the same viewports and in both editions, is checked
by the page audit on its one page load (``tests/browser/test_site_audit.py``).

The numbers per widget and viewport: ``python benchmarks/readable_text.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from course_site.browser import (
    SWITCH_THEME_JS,
    VIEWPORTS,
    WIDGET_SIZES_JS,
    WIDTH_JS,
    open_in_viewport,
    widget_text_problems,
)
from course_utils.plotting import MIN_TEXT_PX
from tests.browser.live_page import next_frames

pytestmark = pytest.mark.browser


def _show(page: Any, viewport: str) -> None:
    """Put an open page in ``viewport``'s size and colour mode."""
    (width, height), mode, _ = VIEWPORTS[viewport]
    page.set_viewport_size({"width": width, "height": height})
    page.evaluate(SWITCH_THEME_JS, mode)
    next_frames(page)
    next_frames(page)  # the widgets refit their drawings in the frame after a resize


#: A reader's own sentence of 60 tokens or more (MiniLM's WordPiece; at most the browser's cap).
LONG_SENTENCE = (
    "On a small phone in the evening, a reader types a long sentence about the river bank, the "
    "old bank building, the money she kept there, the heron that waited by the water, and the "
    "light that went down slowly over the hills while the boats came home to the old harbour "
    "again at night."
)


def test_head_explorer_long_sentence_is_readable(site_url: str, browser: Any) -> None:
    """The map of a typed sentence of 60+ tokens keeps its labels at 11 px or more, at every
    viewport: it scrolls inside the card where it cannot fit (the page does not scroll sideways on
    the phone, the widget fits the projector's screen)."""
    from course_utils.pretrained import load_tokenizer
    from course_utils.pretrained.minilm_web import MAX_BROWSER_TOKENS

    n = len(load_tokenizer().encode(LONG_SENTENCE).ids)
    assert 60 <= n <= MAX_BROWSER_TOKENS, n
    context, page = open_in_viewport(
        browser, site_url, "chapters/04_multi_head_attention.html", "desktop"
    )
    try:
        box = page.locator(".cu-head-explorer .cu-he-input").first
        box.fill(LONG_SENTENCE)
        box.press("Enter")
        page.wait_for_function(
            "(s) => (document.querySelector('.cu-head-explorer').cuHeadExplorer || {}).text === s"
            " && document.querySelector('.cu-head-explorer').dataset.cuOwn === 'ready'",
            arg=LONG_SENTENCE,
            timeout=180_000,
        )
        problems: list[str] = []
        # The phone in this context (no touch): the model's run is not repeated for a new one.
        for viewport in ("desktop", "dark", "projector", "phone"):
            _show(page, viewport)
            problems += widget_text_problems(page, f"{viewport}, {n}-token sentence", MIN_TEXT_PX)
            (width, height), _, _ = VIEWPORTS[viewport]
            if viewport == "phone" and page.evaluate(WIDTH_JS)["scroll"] > width:
                problems.append(f"phone: the page scrolls sideways ({page.evaluate(WIDTH_JS)})")
            if viewport == "projector":
                problems += [
                    f"projector: the head explorer is {w['height']} px high, the screen {height}"
                    for w in page.evaluate(WIDGET_SIZES_JS)
                    if w["height"] > height
                ]
        assert not problems, "\n".join(problems)
    finally:
        context.close()
