"""Text a reader can read in the head explorer with a reader's own long sentence (over 60 tokens),
at each of the four ways the book is read (``course_site.browser.VIEWPORTS``: a 1280x800
desktop, the same in dark mode, a 390x844 phone, a 1280x720 projector at 150 % zoom, i.e. a CSS
viewport of 853x480): no widget text under ``MIN_TEXT_PX`` (11 CSS px), no page scrolling sideways
on the phone, the widget fitting the projector's screen.

Every chapter page's widget and figure text, at the same viewports and in both editions, is checked
by the page audit on its one page load (``tests/browser/test_site_audit.py``).

Where a drawing or a figure cannot keep its text at 11 px in the window, a keyboard and a screen
reader can still reach all of it: a drawing that scrolls inside its card is a named region, a Tab
stop that arrow keys scroll (chapter 6 on a phone); a figure links to its full-size image, one Tab
press away, named by its alt text and described as "Open the image at full size" (chapters 4 and
9). In dark mode (chapter 9, its folded solutions opened) no output is a light box, a checker's
feedback reads at 4.5:1 or more, figures are shown undimmed, and the sparse-pattern widget's
allowed pairs stand 3:1 or more from its masked cells (WCAG 1.4.11).

Accessible names and descriptions are Chromium's own (its accessibility tree through the DevTools
protocol: ``course_site.browser.accessible_nodes``), not computed by us.

The numbers per widget and viewport: ``python benchmarks/readable_text.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from course_site.browser import (
    DARK_MAX_LUMINANCE,
    FOCUS_BEFORE_JS,
    FOCUS_RING_JS,
    LIGHT_BOXES_JS,
    OUTPUT_TEXT_CONTRAST_JS,
    SPARSE_FILLS_JS,
    SWITCH_THEME_JS,
    VIEWPORTS,
    WIDGET_SIZES_JS,
    WIDTH_JS,
    accessible_nodes,
    contrast,
    open_in_viewport,
    scroll_region_problems,
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
            problems += scroll_region_problems(page, f"{viewport}, {n}-token sentence")
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


#: What the widgets' code (``CU.t``) and the build (``course_site.FIGURE_LINK_TITLE``) say, per
#: edition folder: a scrolling drawing's name starts with ``drawing``; a figure link's description.
WORDS = {
    "": {"drawing": "Drawing: ", "full size": "Open the image at full size"},
    "zh/": {"drawing": "图形：", "full size": "查看原尺寸大图"},
}
EDITIONS = pytest.mark.parametrize("edition", list(WORDS), ids=["en", "zh"])


@EDITIONS
def test_a_drawing_that_scrolls_is_a_named_region(
    site_url: str, browser: Any, edition: str
) -> None:
    """Chapter 6's block tracer on a phone keeps its text at 11 px, so its drawing is wider than
    the card and scrolls inside it: one Tab press reaches it, the arrow keys scroll it, and a screen
    reader hears a region named after the widget ("Drawing: <title>") described by the hint. On the
    desktop, where it fits, it is no Tab stop."""
    context, page = open_in_viewport(
        browser, site_url, f"{edition}chapters/06_transformer_block.html", "phone"
    )
    try:
        stage = ".cu-block-tracer .cu-stage"
        problems = scroll_region_problems(page, "phone")
        assert page.evaluate(WIDTH_JS)["scroll"] <= VIEWPORTS["phone"][0][0]
        box = page.locator(stage).first
        assert box.evaluate("(s) => s.scrollWidth > s.clientWidth + 1"), "nothing scrolls?"
        title = page.locator(".cu-block-tracer .cu-title").first.inner_text().strip()
        hint = page.locator(".cu-block-tracer .cu-scroll-hint").first.inner_text().strip()
        [node] = accessible_nodes(page, stage)
        expected = {
            "role": "region",
            "name": WORDS[edition]["drawing"] + title,
            "description": hint,
        }
        if node != expected:
            problems.append(f"accessibility tree: {node}, expected {expected}")
        # One Tab press from the stop before it, then the arrow keys scroll it (not the page).
        assert page.evaluate(FOCUS_BEFORE_JS, [stage, 0])
        page.keyboard.press("Tab")
        if not box.evaluate("(s) => document.activeElement === s"):
            problems.append("Tab from the control before does not reach the drawing")
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        next_frames(page)
        if box.evaluate("(s) => s.scrollLeft") <= 0:
            problems.append("ArrowRight on the focused drawing does not scroll it")
        _show(page, "desktop")
        problems += scroll_region_problems(page, "desktop")
        if box.get_attribute("tabindex") is not None:
            problems.append("desktop: the drawing fits but is still a Tab stop")
        assert not problems, "\n".join(problems)
    finally:
        context.close()


@pytest.mark.parametrize(
    ("edition", "chapter"),
    [("", "04_multi_head_attention"), ("zh/", "09_sparse_attention")],
    ids=["en-ch04", "zh-ch09"],  # both chapters and both editions, two page loads (the budget)
)
def test_figures_link_to_full_size_by_keyboard(
    site_url: str, browser: Any, edition: str, chapter: str
) -> None:
    """Every figure of chapters 4 and 9 (multi-panel heatmaps, the masks) is a link to its own
    full-size PNG: one Tab press reaches it, its focus ring is 2 px or more at 3:1 or more (light
    mode on a phone, where the figure scrolls in its box; dark mode on a desktop), a screen reader
    hears the figure's alt text as its name and "Open the image at full size" as its description,
    and Enter opens the image."""
    context, page = open_in_viewport(
        browser, site_url, f"{edition}chapters/{chapter}.html", "phone"
    )
    try:
        links = page.locator("a.cu-figure-link")
        n = links.count()
        assert n >= 2, f"{n} figure links"
        problems: list[str] = []
        nodes = accessible_nodes(page, "a.cu-figure-link")
        for i, node in enumerate(nodes):
            alt = links.nth(i).locator("img").get_attribute("alt") or ""
            expected = {"role": "link", "name": alt, "description": WORDS[edition]["full size"]}
            if not alt.strip() or node != expected:
                problems.append(f"figure {i}: accessibility tree {node}, expected {expected}")
            src = links.nth(i).locator("img").evaluate("(i) => i.currentSrc || i.src")
            if links.nth(i).evaluate("(a) => a.href") != src:
                problems.append(f"figure {i}: links to {links.nth(i).get_attribute('href')}")
        for viewport in ("phone", "dark"):  # light on the phone (figures scroll), dark on desktop
            if viewport != "phone":
                _show(page, viewport)
            for i in range(n):
                assert page.evaluate(FOCUS_BEFORE_JS, ["a.cu-figure-link", i])
                page.keyboard.press("Tab")
                if not links.nth(i).evaluate("(a) => document.activeElement === a"):
                    problems.append(f"{viewport}: Tab does not reach figure {i}'s link")
                    continue
                ring = page.evaluate(FOCUS_RING_JS)
                if ring["style"] == "none" or ring["width"] < 2 or ring["ratio"] < 3:
                    problems.append(f"{viewport}: figure {i}'s focus ring {ring}")
        assert not problems, "\n".join(problems)
        first = links.first.evaluate("(a) => a.href")
        links.first.focus()
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert page.url == first
    finally:
        context.close()


@EDITIONS
def test_dark_mode_outputs_figures_and_masked_cells(
    site_url: str, browser: Any, edition: str
) -> None:
    """Chapter 9 in dark mode with its folded solutions opened (the audit sees only what is open):
    no widget area or output is a light box, every text of every output (the checkers' "not yet
    right" and "correct" feedback) reads at 4.5:1 or more on what it stands on, no figure is dimmed
    or framed in a grey panel, and the sparse-pattern widget's masked cells are a dark colour from
    which its allowed and new cells stand 3:1 or more (a graphical object, WCAG 1.4.11)."""
    context, page = open_in_viewport(
        browser, site_url, f"{edition}chapters/09_sparse_attention.html", "dark"
    )
    try:
        page.evaluate("() => document.querySelectorAll('details').forEach((d) => (d.open = true))")
        page.evaluate(SWITCH_THEME_JS, "dark")
        next_frames(page)
        problems = [
            f"light box: {b['what']} rgb{tuple(b['bg'])}"
            for b in page.evaluate(LIGHT_BOXES_JS, DARK_MAX_LUMINANCE)
        ]
        feedback = page.locator(".course-feedback").count()
        text = page.evaluate(OUTPUT_TEXT_CONTRAST_JS, 4.5)
        assert feedback >= 4 and text["checked"] >= feedback, (feedback, text["checked"])
        problems += [
            f"output text {b['text']!r}: {b['ratio']}:1, rgb{tuple(b['fg'])} on rgb{tuple(b['bg'])}"
            for b in text["bad"]
        ]
        fills = page.evaluate(SPARSE_FILLS_JS)
        assert fills["on"] and fills["off"], fills  # (LIGHT_BOXES_JS: masked cells are dark)
        for kind in ("on", "new"):
            if fills[kind] and contrast(fills[kind], fills["off"]) < 3:
                problems.append(
                    f"{kind} cells rgb{tuple(fills[kind])} stand "
                    f"{contrast(fills[kind], fills['off']):.2f}:1 from masked cells "
                    f"rgb{tuple(fills['off'])} (under 3:1)"
                )
        assert not problems, "\n".join(problems)
    finally:
        context.close()


@EDITIONS
def test_sparse_cells_stand_out_from_masked_cells_in_light_mode(
    site_url: str, browser: Any, edition: str
) -> None:
    """Chapter 9's sparse-pattern widget in light mode: its allowed and new cells stand 3:1 or more
    from its masked cells (graphical objects, WCAG 1.4.11); Okabe-Ito's light orange for a new
    cell stood 2.05:1 from the light surface."""
    context, page = open_in_viewport(
        browser, site_url, f"{edition}chapters/09_sparse_attention.html", "desktop"
    )
    try:
        page.locator(".cu-sparse").first.scroll_into_view_if_needed()
        next_frames(page)
        fills = page.evaluate(SPARSE_FILLS_JS)
        assert fills["on"] and fills["off"] and fills["new"], fills
        ratios = {kind: round(contrast(fills[kind], fills["off"]), 2) for kind in ("on", "new")}
        assert min(ratios.values()) >= 3, (ratios, fills)
    finally:
        context.close()
