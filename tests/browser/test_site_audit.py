"""Every page of the built site, both editions (English, 中文 under ``zh/``), on phones,
projectors, in dark mode and for screen readers.

One page load per page (lean: the whole browser suite must stay within the test budget as the book
grows), then, on that page:

* axe-core (pinned, vendored for tests only: ``tests/browser/vendor/axe-core``) finds no critical
  or serious violation: every rule in light mode, then the colour rules again after switching the
  theme to dark mode; a 中文 page is held to the same result, with ``<html lang="zh-CN">``;
* at 390 px wide (a phone) the page does not scroll sideways;
* on a 1280x720 projector at 150% zoom (a CSS viewport of 853x480) every course widget fits on one
  screen.

The numbers behind these goals (before/after a change): ``python benchmarks/site_audit.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from course_site.browser import (
    WIDGET_SIZES_JS,
    WIDTH_JS,
    block_outside,
    mode_init_script,
    run_axe,
    site_dir,
    site_pages,
    split_edition,
)

pytestmark = pytest.mark.browser

_SITE = site_dir()
#: Every page but a bare redirect (index.html sends the reader to the first page, audited itself).
PAGES = [
    rel
    for rel in (site_pages(_SITE) if _SITE.is_dir() else [])
    if 'http-equiv="Refresh"' not in (_SITE / rel).read_text(encoding="utf-8", errors="replace")
]
PHONE_WIDTH = 390
PROJECTOR_150 = (853, 480)  # 1280x720 at 150% zoom, in CSS pixels
BLOCKING = ("critical", "serious")


#: Known gaps, excused by page and by the start of the problem's text, each with its reason. The
#: widgets of chapters 5, 9, 11, 12 and 13 were written before the projector and phone conventions
#: of ``src/course_utils/widgets/README.md`` existed; they still need their layouts reworked (issue
#: 9 stays open for them). Only the sizes listed here are excused: axe and every other page and
#: widget are held to the goals, and a gap that is fixed must be removed from this table.
KNOWN_GAPS: dict[str, tuple[str, ...]] = {
    "chapters/05_positions.html": ("projector 150%: cu-rope-dial",),
    "chapters/09_sparse_attention.html": ("projector 150%: cu-sparse",),
    "chapters/11_multi_head_latent_attention.html": (
        "projector 150%: cu-kvcache",
        f"at {PHONE_WIDTH} px the page is",
    ),
    "chapters/12_efficient_attention.html": ("projector 150%: cu-tiling",),
    "chapters/13_topic_words.html": (
        "projector 150%: cu-topic-focus",
        f"at {PHONE_WIDTH} px the page is",
    ),
}


def excuse_known_gaps(rel: str, problems: list[str]) -> list[str]:
    """The problems that are not a known gap of page ``rel`` (in either edition)."""
    gaps = KNOWN_GAPS.get(split_edition(rel)[1], ())
    return [p for p in problems if not p.startswith(gaps)]


#: The axe rules whose outcome depends on colours: all that can change with the colour mode. (The
#: other rules read the DOM, the same in both modes; running them again would only cost time.)
COLOUR_RULES = ["color-contrast", "link-in-text-block"]


#: Switch the theme's colour mode (a data attribute on <html>; CSS variables do the rest) and finish
#: the theme's colour transitions at once, so that axe reads the final colours.
SWITCH_THEME_JS = """(mode) => {
  document.documentElement.dataset.theme = mode;
  for (const a of document.getAnimations()) a.finish();
}"""


def _violations(page: Any, mode: str, rules: list[str] | None = None) -> list[str]:
    return [
        f"{mode}: axe {v['impact']} {v['id']} ({v['nodes']} node(s), e.g. {v['targets'][:2]})"
        for v in run_axe(page, rules)
        if v["impact"] in BLOCKING
    ]


@pytest.mark.parametrize("rel", PAGES or ["<no site>"])
def test_page_audit(rel: str, site_url: str, browser: Any, artifacts: Path) -> None:
    if rel == "<no site>":
        pytest.fail(f"no HTML pages under {_SITE}")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    block_outside(context, (site_url,), [])
    context.add_init_script(mode_init_script("light"))
    page = context.new_page()
    problems: list[str] = []
    try:
        page.goto(site_url + rel, wait_until="load")
        page.evaluate("() => window.courseWidgetLoader ? window.courseWidgetLoader.ready : null")
        page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
        assert page.evaluate("() => document.documentElement.dataset.theme") == "light"
        # Both editions are audited alike (0 critical/serious); the 中文 pages say their language.
        lang = page.evaluate("() => document.documentElement.lang")
        if split_edition(rel)[0] == "zh" and lang != "zh-CN":
            problems.append(f'<html lang="{lang}">, expected "zh-CN" on a 中文 page')
        problems += _violations(page, "light")

        # The theme's dark mode is a data attribute on <html>: CSS variables do the rest.
        page.evaluate(SWITCH_THEME_JS, "dark")
        problems += _violations(page, "dark", COLOUR_RULES)
        page.evaluate(SWITCH_THEME_JS, "light")

        page.set_viewport_size({"width": PHONE_WIDTH, "height": 844})
        page.wait_for_timeout(100)
        width = page.evaluate(WIDTH_JS)
        if width["scroll"] > PHONE_WIDTH:
            problems.append(
                f"at {PHONE_WIDTH} px the page is {width['scroll']} px wide "
                f"(sticking out: {width['worst']})"
            )

        page.set_viewport_size({"width": PROJECTOR_150[0], "height": PROJECTOR_150[1]})
        page.wait_for_timeout(100)
        for w in page.evaluate(WIDGET_SIZES_JS):
            if w["height"] > PROJECTOR_150[1]:
                problems.append(
                    f"projector 150%: {w['cls']} is {w['height']} px high, the screen "
                    f"{PROJECTOR_150[1]} px"
                )
        problems = excuse_known_gaps(rel, problems)
        assert not problems, "\n".join(problems)
    except BaseException:
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", rel)
        page.screenshot(path=str(artifacts / f"audit-{name}.png"), full_page=True)
        raise
    finally:
        context.close()
