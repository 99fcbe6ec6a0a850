"""Every chapter's slide deck (``slides/<stem>.slides.html``) in a real Chromium, offline.

For each deck, with every request outside the local site blocked: no blocked or failed request and
no console error; at least 8 slides; the maths typeset (MathJax containers, no errors, no raw TeX
left in the slides' text); every widget view rendered, and every control of every course widget,
focused and moved with a key on its own slide, changes the drawing without changing the slide; the
arrow keys move between slides; and at 1280x720 every slide's content fits the slide and the page
does not scroll.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from course_kit.notebooks import is_placeholder, read_notebook
from course_site.browser import (
    AT_END_JS,
    DRAWING_JS,
    block_outside,
    press_key_for,
    wait_for_widgets,
)
from tests.browser.live_page import PageRecord

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(p.stem for p in (REPO / "chapters").glob("*.ipynb"))

READY_JS = "() => window.Reveal && Reveal.isReady && Reveal.isReady()"

RAW_TEX_JS = """
() => {
  const clone = document.querySelector('.reveal .slides').cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, aside, mjx-container, .cu-widget, '
    + '.widget-subarea, .jp-OutputArea').forEach((e) => e.remove());
  const text = clone.textContent;
  return ['$$', '\\\\frac', '\\\\sqrt', '\\\\top'].filter((t) => text.includes(t));
}
"""

FIT_JS = """
() => {
  const slide = Reveal.getCurrentSlide();
  const box = Reveal.getSlidesElement().getBoundingClientRect();
  let bottom = 0;
  for (const e of slide.querySelectorAll('*')) {
    if (e.closest('aside.notes')) continue;
    const folded = e.closest('details');
    if (folded && !folded.open && !e.closest('summary')) continue;  // not shown until opened
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) bottom = Math.max(bottom, r.bottom);
  }
  const scroller = document.scrollingElement;
  return {bottom: bottom, limit: box.bottom, pageScroll: scroller.scrollHeight - window.innerHeight,
          title: (slide.querySelector('h1, h2, h3') || {textContent: ''}).textContent.trim()};
}
"""

EVERY_SLIDE_FIT_JS = (
    "async (total) => { const fit = " + FIT_JS.strip() + "; const out = []; Reveal.slide(0, 0);"
    " for (let i = 0; i < total; i++) {"
    " await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));"
    " out.push(fit()); Reveal.next(); } return out; }"
)

#: What a room reads of the current slide: the smallest body text and code as shown (CSS px x the
#: slide's zoom x reveal's scale; a widget's own drawing, the notes, formulas and folded answers
#: aside), its speaker notes' length, and its text (for citation keys).
SLIDE_READ_JS = """
() => {
  const section = Reveal.getCurrentSlide();
  const scale = Reveal.getScale();
  let zoom = 1;
  for (let n = section; n; n = n.parentElement) zoom *= parseFloat(getComputedStyle(n).zoom) || 1;
  let body = 1e9, code = 1e9, bodyText = '', codeText = '';
  const walker = document.createTreeWalker(section, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    if (!t.nodeValue.trim()) continue;
    const el = t.parentElement;
    if (el.closest('.cu-widget, aside.notes, .cu-sr-only, mjx-container, summary')) continue;
    if (el.closest('details') && !el.closest('details').open) continue;
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    const px = parseFloat(getComputedStyle(el).fontSize) * zoom * scale;
    if (el.closest('pre, code')) {
      if (px < code) { code = px; codeText = t.nodeValue.trim().slice(0, 40); }
    } else if (px < body) { body = px; bodyText = t.nodeValue.trim().slice(0, 40); }
  }
  const notes = Array.from(section.querySelectorAll(':scope > aside.notes'))
    .map((a) => a.textContent.trim()).join(' ');
  const clone = section.cloneNode(true);
  clone.querySelectorAll('aside.notes').forEach((a) => a.remove());
  const text = clone.textContent;
  clone.querySelectorAll('h1, h2, h3, h4, h5, h6').forEach((h) => h.remove());
  const title = section.querySelector('h1, h2, h3, h4, h5, h6');
  // Anything shown besides a heading: text, or a figure, widget, formula, table or code.
  const more = clone.textContent.trim() !== '' || !!clone.querySelector(
    'img, svg, canvas, video, table, pre, mjx-container, .cu-widget, '
    + 'script[type="application/vnd.jupyter.widget-view+json"]');
  return {body, code, bodyText, codeText, notes: notes.length, text,
          heading: title ? title.textContent.trim() : '', headingOnly: !more};
}
"""
EVERY_SLIDE_READ_JS = (
    "async (total) => { const read = " + SLIDE_READ_JS.strip() + "; const out = [];"
    " await document.fonts.ready; Reveal.slide(0, 0); for (let i = 0; i < total; i++) {"
    " await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));"
    " out.push({...read(), index: i}); Reveal.next(); } return out; }"
)
#: Projected at 1280x720, a slide's body text is at least this big (CSS px), its code this big.
MIN_BODY_PX, MIN_CODE_PX = 24, 18
#: A chapter's deck holds this many slides (a 45-90 minute lesson), in both editions (the chapters
#: with a practitioners' section, 5, 6, 7 and 13, hold 28-36; their tables of numbers are left to
#: the notebook, ``slides-skip``): 中文 text is
#: shorter, and a deck that would fall short is cut with fewer lines a slide
#: (``course_kit.slides.deck_notebook``, MIN_SLIDES).
SLIDES_PER_DECK = {"en": (15, 36), "zh": (15, 36)}


def readable_problems(page: Any, total: int, edition: str) -> list[str]:
    """Every slide of the open deck read as a room sees it: text sizes, notes, citation keys, and
    no slide but the first (the title) that shows a heading and nothing else."""
    from course_site.bibstyle import _entries

    keys = set(_entries(REPO / "references.bib"))
    problems = []
    low, high = SLIDES_PER_DECK[edition]
    if not low <= total <= high:
        problems.append(f"{total} slides, expected {low}-{high}")
    for s in page.evaluate(EVERY_SLIDE_READ_JS, total):
        where = f"slide {s['index'] + 1}"
        if s["body"] < MIN_BODY_PX:
            problems.append(f"{where}: body text {s['body']:.1f} px ({s['bodyText']!r})")
        if s["code"] < MIN_CODE_PX:
            problems.append(f"{where}: code {s['code']:.1f} px ({s['codeText']!r})")
        if not s["notes"]:
            problems.append(f"{where}: no speaker notes")
        if s["headingOnly"] and s["index"] > 0:  # the title slide is a heading
            problems.append(f"{where}: nothing but its heading {s['heading']!r}")
        shown = [k for k in keys if re.search(rf"\b{re.escape(k)}\b", s["text"])]
        if shown:
            problems.append(f"{where}: citation keys shown {shown}")
    return problems


WIDGETS_JS = """
() => Array.from(document.querySelectorAll('.cu-widget')).map((w) => {
  const idx = Reveal.getIndices(w.closest('section'));
  return {h: idx.h, v: idx.v || 0, cls: w.className,
          controls: Array.from(w.querySelectorAll('input[type=range], select')).map((c) => c.id)};
})
"""


#: Resolves after two animation frames: deck.js fits a slide in the frame after a change.
TWO_FRAMES_JS = (
    "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
)

#: How much of a widget's slide is left empty below its content (fraction of the slide's height),
#: and the zoom at which course_kit/deck.js stops growing a widget's slide (GROW_MAX).
WIDGET_SLIDE_MAX_EMPTY, WIDGET_SLIDE_GROW_MAX = 0.25, 1.8

WIDGET_SLIDE_ROOM_JS = """
() => {
  const slide = Reveal.getCurrentSlide();
  const box = Reveal.getSlidesElement().getBoundingClientRect();
  let bottom = box.top;
  for (const e of slide.querySelectorAll('*')) {
    if (e.closest('aside.notes')) continue;
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) bottom = Math.max(bottom, r.bottom);
  }
  return {empty: (box.bottom - bottom) / box.height, zoom: parseFloat(slide.style.zoom) || 1};
}
"""


def _deck_or_fail(site_root: Path, stem: str) -> Path:
    deck = site_root / "slides" / f"{stem}.slides.html"
    assert deck.is_file(), f"no deck for chapter {stem}: {deck} (run `make slides`)"
    return deck


@pytest.mark.parametrize("stem", CHAPTERS)
def test_deck(stem: str, site_root: Path, site_url: str, browser: Any, artifacts: Path) -> None:
    _deck_or_fail(site_root, stem)
    if is_placeholder(read_notebook(REPO / "chapters" / f"{stem}.ipynb")):
        pytest.skip(f"{stem} is still a placeholder")
    record = PageRecord()
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    block_outside(context, (site_url,), record.blocked)
    page = context.new_page()
    page.on(
        "console", lambda m: record.console_errors.append(m.text) if m.type == "error" else None
    )
    page.on("pageerror", lambda e: record.page_errors.append(str(e)))
    page.on(
        "response",
        lambda r: record.failed.append(f"{r.url} (HTTP {r.status})") if r.status >= 400 else None,
    )
    try:
        page.goto(f"{site_url}slides/{stem}.slides.html", wait_until="load")
        page.wait_for_function(READY_JS, timeout=30_000)

        total = page.evaluate("() => Reveal.getTotalSlides()")
        assert total >= 8, f"only {total} slides"
        if (REPO / "instructor" / f"{stem}.md").is_file():
            notes = page.evaluate("() => document.querySelectorAll('aside.notes').length")
            assert notes >= 1, "the lesson plan gave no speaker notes"

        # Maths (a deck without maths loads no MathJax; the raw-TeX check below still applies).
        if page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')"):
            page.wait_for_function(
                "() => window.MathJax && MathJax.startup && MathJax.startup.promise"
            )
            page.evaluate("() => MathJax.startup.promise")
            typeset = page.evaluate("() => document.querySelectorAll('mjx-container').length")
            assert typeset > 0, "no formula typeset"
            assert page.evaluate("() => document.querySelectorAll('mjx-merror').length") == 0
        raw = page.evaluate(RAW_TEX_JS)
        assert not raw, f"raw TeX left in the slides' text: {raw}"

        # Widgets: rendered, and each control moves its drawing (not the deck) on its own slide.
        views = wait_for_widgets(page, timeout_ms=30_000)
        widgets = page.evaluate(WIDGETS_JS)
        assert len(widgets) == views, f"{len(widgets)} of {views} widgets rendered"
        for w in widgets:
            page.evaluate("([h, v]) => Reveal.slide(h, v)", [w["h"], w["v"]])
            assert w["controls"], f"{w['cls']}: no keyboard control"
            for control in w["controls"]:
                before = page.evaluate(DRAWING_JS, control)
                tag = page.eval_on_selector(f"#{control}", "(e) => e.tagName.toLowerCase()")
                page.focus(f"#{control}")
                key = press_key_for(tag, at_end=page.evaluate(AT_END_JS, control))
                page.keyboard.press(key)
                page.wait_for_function(
                    f"([id, before]) => ({DRAWING_JS})(id) !== before",
                    arg=[control, before],
                    timeout=5_000,
                )
                where = page.evaluate("() => Reveal.getIndices()")
                assert (where["h"], where.get("v") or 0) == (w["h"], w["v"]), (
                    f"{key} on #{control} moved the deck instead of only the widget"
                )

        # A widget fills its slide: a slide with room to spare is zoomed in (the ch07 grid was
        # 130 px high on a projector), up to GROW_MAX; a slide too tall is zoomed out to fit.
        for w in widgets:
            page.evaluate("([h, v]) => Reveal.slide(h, v)", [w["h"], w["v"]])
            page.evaluate(TWO_FRAMES_JS)
            room = page.evaluate(WIDGET_SLIDE_ROOM_JS)
            assert (
                room["empty"] <= WIDGET_SLIDE_MAX_EMPTY
                or room["zoom"] >= WIDGET_SLIDE_GROW_MAX - 1e-9
            ), (
                f"{w['cls']} on slide {w['h']}/{w['v']} leaves {room['empty']:.0%} empty"
                f" at zoom {room['zoom']}"
            )
            # Opening a folded note of a (grown) widget refits the slide: it still fits.
            opened = page.evaluate(
                "() => { const d = Reveal.getCurrentSlide().querySelector('.cu-widget details');"
                " if (!d) return false; d.open = true; return true; }"
            )
            if opened:
                page.evaluate(TWO_FRAMES_JS)
                fit = page.evaluate(FIT_JS)
                assert fit["bottom"] <= fit["limit"] + 2, f"{w['cls']}: opened note overflows {fit}"
                page.evaluate(
                    "() => { Reveal.getCurrentSlide().querySelector('.cu-widget details')"
                    ".open = false; }"
                )

        # Escape on a focused control gives the arrow keys back to the deck (not the overview).
        if widgets:
            w = widgets[0]
            page.evaluate("([h, v]) => Reveal.slide(h, v)", [w["h"], w["v"]])
            page.focus(f"#{w['controls'][0]}")
            page.keyboard.press("Escape")
            assert not page.evaluate("() => Reveal.isOverview()"), "Escape opened the overview"
            assert not page.evaluate("() => !!document.activeElement.closest('.cu-widget')"), (
                "Escape left the focus in the widget"
            )
            if not page.evaluate("() => Reveal.isLastSlide()"):
                past = page.evaluate("() => Reveal.getSlidePastCount()")
                page.keyboard.press("ArrowRight")
                assert page.evaluate("() => Reveal.getSlidePastCount()") > past, (
                    "after Escape, ArrowRight did not move the deck"
                )

        # Arrow keys move between slides.
        page.evaluate("() => { Reveal.slide(0, 0); document.activeElement.blur(); }")
        page.keyboard.press("ArrowRight")
        assert page.evaluate("() => Reveal.getSlidePastCount()") == 1, "ArrowRight did not move"
        page.keyboard.press("ArrowLeft")
        assert page.evaluate("() => Reveal.getSlidePastCount()") == 0, "ArrowLeft did not move"

        # Every slide fits 1280x720 without scrolling: each slide in turn, measured after the two
        # frames that follow its slidechanged (the fit runs then), all in one call to the page.
        fits = page.evaluate(EVERY_SLIDE_FIT_JS, total)
        overflowing = [f for f in fits if f["bottom"] > f["limit"] + 2 or f["pageScroll"] > 0]
        assert len(fits) == total, f"measured {len(fits)} of {total} slides"
        assert not overflowing, f"slides that do not fit 1280x720: {overflowing}"

        # Readable when projected: text sizes, speaker notes on every slide, no citation keys.
        problems = readable_problems(page, total, "en")
        assert not problems, "\n".join(problems)

        page.wait_for_timeout(100)
        assert not record.problems(), "\n".join(record.problems())
    except BaseException:
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"deck_{stem}")
        page.screenshot(path=str(artifacts / f"{name}.png"))
        (artifacts / f"{name}.log").write_text("\n".join(record.problems()))
        raise
    finally:
        context.close()


@pytest.mark.parametrize("stem", CHAPTERS)
def test_zh_deck_is_readable_projected(
    stem: str, site_root: Path, site_url: str, browser: Any
) -> None:
    """The 中文 deck of each chapter, held to the English deck's projector goals: text sizes,
    speaker notes (from the 中文 lesson plan and the chapter's prose) on every slide, no keys."""
    assert (site_root / "zh" / "slides" / f"{stem}.slides.html").is_file()
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        page.goto(f"{site_url}zh/slides/{stem}.slides.html", wait_until="load")
        page.wait_for_function(READY_JS, timeout=30_000)
        wait_for_widgets(page, timeout_ms=30_000)
        total = page.evaluate("() => Reveal.getTotalSlides()")
        problems = readable_problems(page, total, "zh")
        assert not problems, "\n".join(problems)
    finally:
        context.close()


#: The kit of each edition: English at the site's root, 中文 under ``zh/`` (same file names).
EDITIONS = {"en": ("", "en"), "zh": ("zh/", "zh-CN")}


@pytest.mark.parametrize("edition", sorted(EDITIONS))
def test_slide_index_lists_every_deck(site_root: Path, edition: str) -> None:
    folder, lang = EDITIONS[edition]
    index = site_root / folder / "slides" / "index.html"
    assert index.is_file(), f"no {folder}slides/index.html"
    text = index.read_text(encoding="utf-8")
    assert f'<html lang="{lang}">' in text
    for stem in CHAPTERS:
        assert f'href="{stem}.slides.html"' in text, f"slides/index.html does not list {stem}"


@pytest.mark.parametrize("edition", sorted(EDITIONS))
@pytest.mark.parametrize("stem", CHAPTERS)
def test_chapter_page_links_deck_and_learner_copy(stem: str, site_root: Path, edition: str) -> None:
    """The chapter page links to its deck and its learner copy; both files exist (both editions;
    the 中文 deck is in Chinese: ``<html lang="zh-CN">``)."""
    folder, lang = EDITIONS[edition]
    site_root = site_root / folder if folder else site_root
    deck = (site_root / "slides" / f"{stem}.slides.html").read_text(encoding="utf-8")
    assert f'<html lang="{lang}">' in deck
    text = (site_root / "chapters" / f"{stem}.html").read_text(encoding="utf-8")
    assert f'href="../slides/{stem}.slides.html"' in text, "no link to the deck"
    assert f'href="../learner/{stem}.learner.ipynb" download' in text, "no learner copy download"
    assert (site_root / "learner" / f"{stem}.learner.ipynb").is_file()
    if not is_placeholder(read_notebook(REPO / "chapters" / f"{stem}.ipynb")):
        assert (site_root / "instructor" / f"{stem}.html").is_file(), "no lesson plan page"
    intro = (site_root / "intro.html").read_text(encoding="utf-8")
    assert 'href="learner/attention-step-by-step-learner.zip"' in intro
    assert 'href="slides/index.html"' in intro
