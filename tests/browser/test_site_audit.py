"""Every page of the built site, both editions (English, 中文 under ``zh/``), on phones,
projectors, in dark mode and for screen readers.

One page load per page (lean: the whole browser suite must stay within the test budget as the book
grows), then, on that page:

* axe-core (pinned, vendored for tests only: ``tests/browser/vendor/axe-core``) finds no critical
  or serious violation: every rule in light mode, then the colour rules again after switching the
  theme to dark mode; a 中文 page is held to the same result (its colours on its English page),
  with ``<html lang="zh-CN">``; axe
  reads code blocks and formulas as plain text in their own colour and background (token spans
  and MathJax's glyph elements are most of a chapter's DOM and most of axe's time;
  ``FLATTEN_FOR_AXE_JS``), and ``test_code_token_colours`` checks every token colour the site's
  stylesheets define, in both modes, once an edition;
* every widget's SVG text stands out from what is drawn under it (contrast at least
  ``SVG_TEXT_MIN_CONTRAST``, 4.5), in light mode and, on the English page of a pair, in dark mode:
  axe does not check SVG text (``SVG_TEXT_CONTRAST_JS``); in dark mode no widget area or checker
  output is a light box (``LIGHT_BOXES_JS``);
* no widget drawing lies over a neighbouring block of its row (a table beside a plot), at the
  desktop and, on a chapter page, on the projector (``DRAWING_OVERLAPS_JS``);
* at 390 px wide (a phone) the page does not scroll sideways;
* on a 1280x720 projector at 150% zoom (a CSS viewport of 853x480) every course widget fits on one
  screen; every saved widget view of the page must have been drawn and measured, so a widget that
  fails to render cannot pass by having no size;
* on a chapter page, at the desktop, the phone and the projector sizes above, no course widget
  draws text under 11 px (``WIDGET_TEXT_SIZES_JS``: an SVG text's font size times the scale its
  drawing is shown at; a drawing wider than the card scrolls inside it rather than shrink, and a
  drawing that scrolls is a named region a keyboard can focus: ``SCROLL_REGIONS_JS``) and no
  figure shows its smallest text under 11 px: the smallest text of each figure, in PNG pixels, is
  recorded in its PNG by ``course_utils.plotting`` (font size x dpi / 72), and the browser shows
  the PNG scaled by (shown width / natural width); every figure links to its full-size image, and
  on every page with code, the code fits the desktop column (``wide_code_blocks``, last: it opens
  folded cells; the cells' code, package code, the text's code blocks, printed output). The
  phone is a 390 px window, not a touch context: no course stylesheet or widget script asks about
  touch (``tests/test_course_site.py::test_no_widget_or_site_style_depends_on_touch``), so the
  sizes are the same, and every viewport is measured on the page's one load;
* a chapter page weighs at most ``PAGE_GZIP_BUDGET`` (1.5 MB): every same-origin response the page
  loads, each gzip-compressed (level 6, what a server with gzip on sends; the measure of
  ``benchmarks/widget_latency.py``), summed; no chapter is exempt, in either edition;
* from the top of the article, Tab reaches each widget's first control in at most as many presses
  as there are links, buttons and scrollable code blocks (the theme makes those tab stops so that
  a keyboard can scroll them) before it, plus a handful (``TAB_SLACK``); formulas are no tab
  stops.

Three checks run on the English page of a pair only (``_english_page``): axe's colour rules
(``COLOUR_RULES``, in light and in dark mode), the dark mode's boxes and the Tab walk. A 中文
page is its English page's DOM with other words (same stylesheets, classes, widgets, links and
controls; ``test_built_site_zh`` checks code, widgets and links): colours, sizes and tab stops
cannot differ, while everything that text can change (axe's other rules, names and labels among
them, ``lang``, SVG text contrast, phone width, projector fit, figure text, page weight, the live
checks) runs on both. A 中文 page whose English page is not audited gets every check.
* last, on the same load, the page works as a reader meets it (``live_page.check_live``, the checks
  of ``test_browser_site``): every widget view drawn, every control moves its drawing by keyboard,
  MathJax typeset, no blocked or failed request, no console error or warning.

Every page of the book's table of contents (chapters 1-13, the appendix, the back matter and the
instructor guide) is audited: ``test_every_toc_page_is_audited`` fails if one is missing.

The numbers behind these goals (before/after a change): ``python benchmarks/site_audit.py``.
"""

from __future__ import annotations

import contextlib
import gzip
import re
from pathlib import Path
from typing import Any

import pytest

from course_site.browser import (
    DARK_MAX_LUMINANCE,
    DRAWING_OVERLAPS_JS,
    FLATTEN_FOR_AXE_JS,
    LIGHT_BOXES_JS,
    N_VIEWS_JS,
    RESTORE_FOR_AXE_JS,
    ROOT,
    SVG_TEXT_CONTRAST_JS,
    SVG_TEXT_MIN_CONTRAST,
    SWITCH_THEME_JS,
    TOKEN_SAMPLE_JS,
    WIDGET_SIZES_JS,
    WIDTH_JS,
    figure_text_sizes,
    is_redirect_page,
    mode_init_script,
    run_axe,
    scroll_region_problems,
    site_dir,
    site_pages,
    split_edition,
    svg_text_overflow_problems,
    tab_stops_to_widgets,
    wide_code_blocks,
    widget_text_problems,
)
from course_utils.plotting import MIN_TEXT_PX
from tests.browser.live_page import (
    check_live,
    goto_settled,
    new_recorded_page,
    next_frames,
    save_failure,
)

pytestmark = pytest.mark.browser

_SITE = site_dir()
#: Every page but a bare redirect (index.html sends the reader to the first page, audited itself).
PAGES = [
    rel for rel in (site_pages(_SITE) if _SITE.is_dir() else []) if not is_redirect_page(_SITE, rel)
]
PHONE_WIDTH = 390
PROJECTOR_150 = (853, 480)  # 1280x720 at 150% zoom, in CSS pixels
BLOCKING = ("critical", "serious")
#: Moderate and minor rules the site passes and must keep passing: all content inside a landmark
#: (the theme's sidebar, with the brand and the search button, is named as one by ``course_site``),
#: and no table header cell left empty.
KEPT_PASSING_RULES = ("region", "empty-table-header")
DESKTOP = 1280
#: Tab presses a widget may take beyond the links and buttons before it ("a handful").
TAB_SLACK = 5
#: Most bytes a chapter page may load, gzip-compressed (issue 9's goal), every chapter alike.
PAGE_GZIP_BUDGET = 1_500_000


def toc_pages(toc: Path = ROOT / "_toc.yml") -> list[str]:
    """The HTML page (relative path) of every ``root:``/``file:`` entry of the table of contents."""
    text = toc.read_text(encoding="utf-8")
    files = re.findall(r"^\s*-?\s*(?:file|root):\s*(\S+)\s*$", text, re.M)
    return [f"{f.removesuffix('.md').removesuffix('.ipynb')}.html" for f in files]


def test_every_toc_page_is_audited(site_root: Path) -> None:
    """Chapters 1-13, the appendix and the back matter: none escapes the audit."""
    expected = toc_pages()
    assert len(expected) >= 13 + 4, expected  # 13 chapters and the appendix at least
    missing = [rel for rel in expected if rel not in PAGES]
    assert not missing, f"pages of _toc.yml not audited (not built?): {missing}"


#: The axe rules whose outcome depends on colours: all that can change with the colour mode. (The
#: other rules read the DOM, the same in both modes; running them again would only cost time.)
COLOUR_RULES = ["color-contrast", "link-in-text-block"]


def _figure_problems(page: Any, site_root: Path, site_url: str, where: str) -> list[str]:
    """Figures whose smallest text is under MIN_TEXT_PX as shown in this viewport, or that record
    no text size, or do not link to their full-size image."""
    problems = []
    for fig in figure_text_sizes(page, site_root, site_url):
        if fig["shown_px"] is None:
            problems.append(
                f"{where}: figure {fig['file']}: its PNG records no text size (re-execute the "
                "chapter: course_utils.plotting records it)"
            )
        elif fig["shown_px"] < MIN_TEXT_PX:
            problems.append(
                f"{where}: figure {fig['file']}: smallest text {fig['shown_px']} px as shown "
                f"({fig['png_px']} px in the PNG x {fig['scale']}), under {MIN_TEXT_PX} px "
                f"({fig['alt']!r})"
            )
        if not fig["link"] or fig["link"].split("#")[0] != fig["src"]:
            problems.append(f"{where}: figure {fig['file'][:16]} does not link to its image")
    return problems


def _overlap_problems(page: Any, where: str) -> list[str]:
    """Widget drawings lying over a neighbouring block of their row (a table beside a plot)."""
    return [
        f"{where}: a drawing of {o['widget']} lies over its neighbour {o['over']!r} "
        f"({o['x']} x {o['y']} px)"
        for o in page.evaluate(DRAWING_OVERLAPS_JS)
    ]


def _tab_problems(page: Any) -> list[str]:
    problems = []
    for w in tab_stops_to_widgets(page):
        if w["first"] is None:
            continue
        if w["tabs"] is None:
            problems.append(f"keyboard: Tab never reaches the first control of {w['cls']}")
        elif w["tabs"] > w["links_before"] + TAB_SLACK:
            problems.append(
                f"keyboard: {w['cls']}'s first control is Tab stop {w['tabs']}, with "
                f"{w['links_before']} links/buttons/code blocks before it (at most +{TAB_SLACK})"
            )
        if w["formulas"]:
            problems.append(f"keyboard: {w['formulas']} formula(s) are tab stops before {w['cls']}")
    return problems


def _svg_text_problems(page: Any, mode: str) -> list[str]:
    """Widget SVG text that cannot be read on what lies under it (axe skips SVG text)."""
    page.evaluate("() => window.courseWidgetLoader ? window.courseWidgetLoader.ready : null")
    bad = page.evaluate(SVG_TEXT_CONTRAST_JS, SVG_TEXT_MIN_CONTRAST)
    return [
        f"{mode}: {b['widget']} SVG text {b['text']!r} has contrast {b['ratio']} "
        f"(under {SVG_TEXT_MIN_CONTRAST}; text rgb{tuple(b['fg'])} on rgb{tuple(b['bg'])})"
        for b in bad[:5]
    ] + ([f"{mode}: ... and {len(bad) - 5} more SVG texts"] if len(bad) > 5 else [])


def _violations(
    page: Any,
    mode: str,
    rules: list[str] | None = None,
    include: str | None = None,
    skip: list[str] | None = None,
    also: tuple[str, ...] = (),
) -> list[str]:
    """axe's critical and serious violations, and those of the rules in ``also`` whatever their
    impact (``rules`` only, or all but ``skip``; ``include``: one element only)."""
    return [
        f"{mode}: axe {v['impact']} {v['id']} ({v['nodes']} node(s), e.g. {v['targets'][:2]})"
        for v in run_axe(page, rules, include=include, skip=skip)
        if v["impact"] in BLOCKING or v["id"] in also
    ]


def _english_page(rel: str) -> str | None:
    """The English page of a 中文 page (``zh/chapters/x.html``: ``chapters/x.html``), else None."""
    edition, page = split_edition(rel)
    return page if edition == "zh" else None


#: A chapter page of each edition, where the token-colour sample is added.
TOKEN_PAGES = ["chapters/01_queries_keys_values.html", "zh/chapters/01_queries_keys_values.html"]


@pytest.mark.parametrize("rel", TOKEN_PAGES)
def test_code_token_colours(rel: str, site_url: str, browser: Any, artifacts: Path) -> None:
    """Every token colour of the code blocks (each class the site's pygments CSS defines inside
    ``.highlight``) has enough contrast on the code background, in light and in dark mode. The
    page audit reads code blocks without their token spans; this is where the tokens are read."""
    context, page, record = new_recorded_page(
        browser, (site_url,), viewport=(DESKTOP, 900), init_scripts=(mode_init_script("light"),)
    )
    try:
        goto_settled(page, site_url + rel)
        classes = page.evaluate(TOKEN_SAMPLE_JS)
        # Names, keywords, strings, numbers, comments, operators at least (pygments' short names).
        assert {"n", "k", "s2", "mi", "c1", "o"} <= set(classes), classes
        problems = []
        for mode in ("light", "dark"):
            page.evaluate(SWITCH_THEME_JS, mode)
            problems += _violations(page, mode, ["color-contrast"], include="#cu-token-sample")
        assert not problems, "\n".join(problems)
    except BaseException:
        save_failure(page, record, rel, artifacts, prefix="tokens-")
        raise
    finally:
        context.close()


@pytest.mark.parametrize("rel", PAGES or ["<no site>"])
def test_page_audit(
    rel: str, site_root: Path, site_url: str, browser: Any, artifacts: Path
) -> None:
    if rel == "<no site>":
        pytest.fail(f"no HTML pages under {_SITE}")
    context, page, record = new_recorded_page(
        browser, (site_url,), viewport=(DESKTOP, 900), init_scripts=(mode_init_script("light"),)
    )
    gzipped: dict[str, int] = {}  # URL -> gzip-compressed bytes of every same-origin response

    def on_response(resp: Any) -> None:
        if resp.url.startswith(site_url) and resp.status < 300:
            with contextlib.suppress(Exception):  # redirects and aborted loads have no body
                gzipped[resp.url] = len(gzip.compress(resp.body(), 6))

    is_chapter = split_edition(rel)[1].startswith("chapters/")
    if is_chapter:  # only chapters have a weight budget: no other page pays for reading bodies
        page.on("response", on_response)
    problems: list[str] = []
    try:
        goto_settled(page, site_url + rel)
        page.evaluate("() => window.courseWidgetLoader ? window.courseWidgetLoader.ready : null")
        page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
        if is_chapter:
            # Late requests (fonts, a widget's worker) count too: let them finish first.
            with contextlib.suppress(Exception):  # a settle hint only: some pages never go idle
                page.wait_for_load_state("networkidle", timeout=5_000)
            total = sum(gzipped.values())
            if total > PAGE_GZIP_BUDGET:
                heaviest = sorted(gzipped.items(), key=lambda kv: -kv[1])[:3]
                problems.append(
                    f"page weight {total / 1e6:.2f} MB gzipped ({len(gzipped)} responses), "
                    f"over the budget of {PAGE_GZIP_BUDGET / 1e6:.1f} MB; heaviest: "
                    + ", ".join(f"{url.rsplit('/', 1)[-1]} {n / 1e3:.0f} KB" for url, n in heaviest)
                )
        assert page.evaluate("() => document.documentElement.dataset.theme") == "light"
        # Both editions are audited alike (0 critical/serious); the 中文 pages say their language.
        lang = page.evaluate("() => document.documentElement.lang")
        if split_edition(rel)[0] == "zh" and lang != "zh-CN":
            problems.append(f'<html lang="{lang}">, expected "zh-CN" on a 中文 page')
        # axe reads the code blocks without their token spans (same text, colour and background;
        # the token colours are test_code_token_colours' job): half the time on a chapter page.
        page.evaluate(FLATTEN_FOR_AXE_JS)
        once_a_pair_done = _english_page(rel) in PAGES
        # The colour rules are most of axe's time and read only colours, sizes and weights: the
        # same stylesheets give a 中文 page the English page's (checked there, in both modes).
        problems += _violations(
            page, "light", skip=COLOUR_RULES if once_a_pair_done else None, also=KEPT_PASSING_RULES
        )
        problems += _svg_text_problems(page, "light")

        # The theme's dark mode is a data attribute on <html>: CSS variables do the rest.
        if not once_a_pair_done:
            page.evaluate(SWITCH_THEME_JS, "dark")
            problems += _violations(page, "dark", COLOUR_RULES)
            problems += _svg_text_problems(page, "dark")
            light = page.evaluate(LIGHT_BOXES_JS, DARK_MAX_LUMINANCE)
            if light:
                kinds = sorted({b["what"] for b in light})
                problems.append(
                    f"dark: {len(light)} light box(es) ({', '.join(kinds)}), e.g. background "
                    f"rgb{tuple(light[0]['bg'])}"
                )
            page.evaluate(SWITCH_THEME_JS, "light")
        page.evaluate(RESTORE_FOR_AXE_JS)

        problems += _figure_problems(page, site_root, site_url, "desktop")
        problems += widget_text_problems(page, "desktop", MIN_TEXT_PX)
        problems += svg_text_overflow_problems(page, "desktop")
        problems += _overlap_problems(page, "desktop")
        if not once_a_pair_done:
            problems += _tab_problems(page)

        page.set_viewport_size({"width": PHONE_WIDTH, "height": 844})
        next_frames(page)
        width = page.evaluate(WIDTH_JS)
        if width["scroll"] > PHONE_WIDTH:
            problems.append(
                f"at {PHONE_WIDTH} px the page is {width['scroll']} px wide "
                f"(sticking out: {width['worst']})"
            )
        if is_chapter:
            next_frames(page)  # the widgets refit their drawings in the frame after a resize
            problems += widget_text_problems(page, "phone", MIN_TEXT_PX)
            problems += scroll_region_problems(page, "phone")
            problems += _figure_problems(page, site_root, site_url, "phone")

        page.set_viewport_size({"width": PROJECTOR_150[0], "height": PROJECTOR_150[1]})
        next_frames(page)
        if is_chapter:
            next_frames(page)
            problems += widget_text_problems(page, "projector", MIN_TEXT_PX)
            problems += _overlap_problems(page, "projector")
            problems += scroll_region_problems(page, "projector")
            problems += _figure_problems(page, site_root, site_url, "projector")
        sizes = page.evaluate(WIDGET_SIZES_JS)
        n_views = page.evaluate(N_VIEWS_JS)
        drawn = [w for w in sizes if w["height"] > 0]
        if len(drawn) < n_views:
            problems.append(
                f"projector 150%: {n_views} saved widget view(s) but {len(drawn)} course "
                "widget(s) drawn and measured"
            )
        for w in sizes:
            if w["height"] > PROJECTOR_150[1]:
                problems.append(
                    f"projector 150%: {w['cls']} is {w['height']} px high, the screen "
                    f"{PROJECTOR_150[1]} px"
                )

        # Then the page works as a reader meets it (test_browser_site's checks, on this one load):
        # widgets drawn and moved by keyboard, math typeset, no console error or warning.
        page.set_viewport_size({"width": DESKTOP, "height": 900})
        try:
            check_live(page, record, rel)
        except AssertionError as failure:
            problems.append(f"live: {failure}")
        # Last: it opens the folded cells to measure them. Every page with code, both editions:
        # cells, package code (literalinclude), the text's code blocks, printed output.
        if page.evaluate("() => !!document.querySelector('pre')"):
            problems += wide_code_blocks(page, rel)
        assert not problems, "\n".join(problems)
    except BaseException:
        save_failure(page, record, rel, artifacts, prefix="audit-")
        raise
    finally:
        context.close()
