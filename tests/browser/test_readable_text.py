"""Text a reader can read, on every chapter page of both editions, at each of the four ways the book
is read (``course_site.browser.VIEWPORTS``: a 1280x800 desktop, the same in dark mode, a 390x844
touch phone, a 1280x720 projector at 150 % zoom, i.e. a CSS viewport of 853x480):

* no text of any course widget is drawn under ``MIN_TEXT_PX`` (11 CSS px): an SVG text's font size
  times the scale its drawing is shown at, an HTML text's font size (``WIDGET_TEXT_SIZES_JS``). A
  drawing wider than the card keeps its size and scrolls inside the card instead of shrinking;
* no figure a notebook drew shows its smallest text under 11 px (the size its PNG records, times
  shown / natural width), and every figure links to its full-size image;
* in dark mode nothing is a light panel on the dark page (widget areas and cards, checker outputs,
  the sparse-pattern widget's masked cells), no figure is dimmed or framed by the theme, and every
  widget's SVG text has a contrast of at least 4.5 with what is drawn under it.

The head explorer with a reader's own long sentence (over 60 tokens) is held to the same text size,
at the same four viewports, with no page scrolling sideways on the phone and the widget fitting the
projector's screen.

The numbers per widget and viewport: ``python benchmarks/readable_text.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from course_site.browser import (
    DARK_MAX_LUMINANCE,
    LIGHT_BOXES_JS,
    SVG_TEXT_CONTRAST_JS,
    SVG_TEXT_MIN_CONTRAST,
    VIEWPORTS,
    WIDGET_SIZES_JS,
    WIDGET_TEXT_SIZES_JS,
    WIDTH_JS,
    figure_text_sizes,
    open_in_viewport,
    site_dir,
    site_pages,
    split_edition,
    wide_code_blocks,
)
from course_utils.plotting import MIN_TEXT_PX
from tests.browser.live_page import next_frames

pytestmark = pytest.mark.browser

_SITE = site_dir()
CHAPTERS = [
    rel
    for rel in (site_pages(_SITE) if _SITE.is_dir() else [])
    if split_edition(rel)[1].startswith("chapters/")
]
#: Switch the theme's colour mode and finish its colour transitions at once.
SWITCH_THEME_JS = """(mode) => {
  document.documentElement.dataset.theme = mode;
  for (const a of document.getAnimations()) a.finish();
}"""


def _show(page: Any, viewport: str) -> None:
    """Put an open page in ``viewport``'s size and colour mode (touch needs its own context)."""
    (width, height), mode, _ = VIEWPORTS[viewport]
    page.set_viewport_size({"width": width, "height": height})
    page.evaluate(SWITCH_THEME_JS, mode)
    next_frames(page)
    next_frames(page)  # the widgets refit their drawings in the frame after a resize


def text_problems(page: Any, where: str) -> list[str]:
    """Every widget text under MIN_TEXT_PX, named by widget, text and size."""
    problems = []
    for w in page.evaluate(WIDGET_TEXT_SIZES_JS, MIN_TEXT_PX):
        small = w["small"]
        if small:
            shown = ", ".join(f"{t['text']!r} {t['px']} px" for t in small[:4])
            problems.append(
                f"{where}: {w['widget']} (widget {w['index']}) has {len(small)} of {w['n']} "
                f"texts under {MIN_TEXT_PX} px: {shown}"
            )
    return problems


def figure_problems(page: Any, site_root: Path, site_url: str, where: str) -> list[str]:
    problems = []
    for fig in figure_text_sizes(page, site_root, site_url):
        if fig["shown_px"] is not None and fig["shown_px"] < MIN_TEXT_PX:
            problems.append(
                f"{where}: figure {fig['file'][:16]} shows its smallest text at {fig['shown_px']} "
                f"px ({fig['png_px']} px in the PNG x {fig['scale']})"
            )
        if not fig["link"] or fig["link"].split("#")[0] != fig["src"]:
            problems.append(f"{where}: figure {fig['file'][:16]} does not link to its image")
    return problems


def dark_problems(page: Any, where: str) -> list[str]:
    problems = [
        f"{where}: {b['what']}" + (f" is light (rgb{tuple(b['bg'])})" if b["bg"] else "")
        for b in page.evaluate(LIGHT_BOXES_JS, DARK_MAX_LUMINANCE)
    ]
    problems += [
        f"{where}: {b['widget']} SVG text {b['text']!r} has contrast {b['ratio']} "
        f"(text rgb{tuple(b['fg'])} on rgb{tuple(b['bg'])})"
        for b in page.evaluate(SVG_TEXT_CONTRAST_JS, SVG_TEXT_MIN_CONTRAST)
    ]
    return problems


@pytest.mark.parametrize("rel", CHAPTERS or ["<no site>"])
def test_widget_and_figure_text_is_readable(
    rel: str, site_root: Path, site_url: str, browser: Any
) -> None:
    if rel == "<no site>":
        pytest.fail(f"no chapter pages under {_SITE}")
    problems: list[str] = []
    context, page = open_in_viewport(browser, site_url, rel, "desktop")
    try:
        # Code fits the 1280 px column (folded cells are opened to measure them).
        problems += wide_code_blocks(page, rel)
        for viewport in ("desktop", "dark", "projector"):
            _show(page, viewport)
            problems += text_problems(page, viewport)
            problems += figure_problems(page, site_root, site_url, viewport)
            if viewport == "dark":
                problems += dark_problems(page, viewport)
    finally:
        context.close()
    context, page = open_in_viewport(browser, site_url, rel, "phone")  # touch: a context of its own
    try:
        next_frames(page)
        problems += text_problems(page, "phone")
        problems += figure_problems(page, site_root, site_url, "phone")
    finally:
        context.close()
    assert not problems, f"{rel}:\n" + "\n".join(problems[:40])


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
            problems += text_problems(page, f"{viewport}, {n}-token sentence")
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
