"""The built site, both editions (English, 中文 under ``zh/``), in a real Chromium, with every
non-local request blocked.

On every page (``live_page.check_live``): no blocked or failed request, no console error or
warning, every widget view rendered, MathJax typeset without errors where the page has math, and
every control of every course widget, moved with the keyboard (focus + ArrowRight / ArrowDown),
changes the drawing. Learner text is never run as HTML. ``test_site_audit`` runs these checks on
every content page after its own (one page load a page); here they run on the redirect pages, on
test pages with hostile learner text, from ``file://`` and on the MathJax shim. Screenshots of
failing pages go to test-artifacts/.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from course_site import LOADER, foreign_widget_models
from course_site.browser import (
    XSS_PAGE,
    XSS_TOKENS,
    is_redirect_page,
    serve,
    site_dir,
    site_pages,
    split_edition,
)
from tests.browser.live_page import (
    goto_settled,
    move_every_control,
    new_recorded_page,
    next_frames,
    open_page,
    run_page,
    wait_widgets,
)

pytestmark = pytest.mark.browser

_SITE = site_dir()
#: The pages the audit does not load (it checks every other page, these checks included).
REDIRECT_PAGES = (
    [rel for rel in site_pages(_SITE) if is_redirect_page(_SITE, rel)] if _SITE.is_dir() else []
)


def test_off_site_requests_fail_and_are_recorded(site_url: str, browser: Any) -> None:
    """The browser every test uses reaches nothing but this machine: a request to a host name, to
    an internet or LAN address, or from a Web Worker fails in the network stack (the site's own
    requests are not intercepted), and ``block_outside`` records each one, so a page that asks
    for anything off the site fails its test."""
    context, page, record = new_recorded_page(browser, (site_url,))
    try:
        goto_settled(page, site_url + "glossary.html")
        outside = [
            "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js",
            "http://93.184.216.34/",
            "http://10.0.0.1/",
            "http://[2606:2800:220:1::]/",
        ]
        fetched = page.evaluate(
            """async (urls) => Promise.all(urls.map((u) => fetch(u, {mode: 'no-cors'})
                 .then(() => 'loaded', () => 'failed')))""",
            outside,
        )
        assert fetched == ["failed"] * len(outside), dict(zip(outside, fetched, strict=True))
        from_worker = "https://example.org/from-a-worker.js"
        page.evaluate(
            """(u) => new Promise((done) => {
                 const code = `fetch('${u}').then(() => postMessage('loaded'),
                                                   () => postMessage('failed'))`;
                 const w = new Worker(URL.createObjectURL(new Blob([code])));
                 w.onmessage = (e) => done(e.data);
               })""",
            from_worker,
        )
        assert sorted(record.blocked) == sorted([*outside, from_worker]), record.blocked
        assert not record.failed, record.failed  # recorded as blocked, not as the site failing
    finally:
        context.close()


@pytest.mark.parametrize("rel", REDIRECT_PAGES or ["<no site>"])
def test_redirect_page(rel: str, site_url: str, browser: Any, artifacts: Path) -> None:
    """index.html sends the reader on (a meta refresh): the page it lands on works."""
    if rel == "<no site>":
        pytest.fail(f"no redirect pages under {_SITE} (index.html should be one)")
    run_page(browser, site_url, rel, artifacts)


def test_site_has_no_external_loads(site_root: Path) -> None:
    """No page loads an http(s) script, stylesheet, font or image (links to papers are fine)."""
    pattern = re.compile(
        r"""<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)\s*=\s*["'](https?:)?//""",
        re.IGNORECASE,
    )
    css_url = re.compile(r"url\(\s*['\"]?(https?:)?//", re.IGNORECASE)
    offenders = []
    for path in sorted(site_root.rglob("*")):
        if path.suffix == ".html":
            text = path.read_text(encoding="utf-8", errors="replace")
            for m in pattern.finditer(text):
                # <link rel="canonical"> and similar non-loading links are fine; stylesheets are
                # not.
                tag = text[m.start() : text.find(">", m.start()) + 1]
                if tag.lower().startswith("<link") and not re.search(
                    r"rel=[\"']?(stylesheet|preload|modulepreload|icon|manifest)", tag, re.I
                ):
                    continue
                offenders.append(f"{path.relative_to(site_root)}: {tag[:160]}")
        elif path.suffix == ".css":
            text = path.read_text(encoding="utf-8", errors="replace")
            offenders += [
                f"{path.relative_to(site_root)}: {m.group(0)}" for m in css_url.finditer(text)
            ]
    assert not offenders, "\n".join(offenders)


def test_widget_scripts_only_where_needed(site_root: Path) -> None:
    """Only pages with widget state load the widget manager; only pages with math, MathJax."""
    for path in sorted(site_root.rglob("*.html")):
        rel = path.relative_to(site_root).as_posix()
        if split_edition(rel)[1].startswith("_static/"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        has_state = "application/vnd.jupyter.widget-state+json" in text
        assert "embed-amd.js" not in text and "require.js" not in text, (
            f"{rel}: loads html-manager or require.js (the site draws anywidgets only)"
        )
        loads_loader = LOADER in text
        assert has_state == loads_loader, f"{rel}: widget state {has_state}, loader {loads_loader}"
        if has_state:
            state = json.loads(STATE_RE.search(text).group(1).replace("<\\/", "</"))["state"]
            assert not foreign_widget_models(state), (rel, foreign_widget_models(state))
        assert "data-jupyter-widgets-cdn-only" not in text, rel
        has_math = 'class="math' in text
        loads_mathjax = "tex-mml-chtml.js" in text
        assert has_math or not loads_mathjax, f"{rel}: MathJax loaded on a page without math"


def test_learner_text_is_never_html(site_url: str, browser: Any, artifacts: Path) -> None:
    """Widgets fed `<img src=x onerror=...>` etc. show them as text (page built like myst-nb's)."""
    result = run_page(browser, site_url, XSS_PAGE, artifacts)
    assert result["info"]["rendered"] == 2
    assert result["moved"] >= 3  # query token slider + angle + length


def test_learner_text_shown_verbatim(site_url: str, browser: Any) -> None:
    context, page, record = open_page(browser, site_url + XSS_PAGE, (site_url,))
    try:
        wait_widgets(page)
        texts = page.evaluate(
            "() => Array.from(document.querySelectorAll('.cu-token')).map((t) => t.textContent)"
        )
        for token in XSS_TOKENS:
            assert token in texts, f"{token!r} not shown as text; tokens shown: {texts}"
        assert page.evaluate("() => window.__xss") == 0
        assert not record.problems(), record.problems()
    finally:
        context.close()


def test_file_url(site_root: Path, browser: Any, tmp_path: Path, xss_html: str) -> None:
    """A widget page opened as file:// works (no server): a real site page if it has widgets."""
    widget_pages = [
        p
        for p in sorted(site_root.rglob("*.html"))
        if "_static" not in p.parts
        and "application/vnd.jupyter.widget-state+json" in p.read_text(errors="replace")
    ]
    if widget_pages:
        target = widget_pages[0]
    else:  # no chapter has widgets yet: the test page next to a link to the site's _static
        (tmp_path / "_static").symlink_to(site_root / "_static")
        target = tmp_path / "page.html"
        target.write_text(xss_html, encoding="utf-8")
    context, page, record = open_page(browser, target.as_uri(), ("file://",))
    try:
        info = wait_widgets(page)
        assert info["widgets"], f"{target}: no course widget rendered from file://"
        assert move_every_control(page, info) >= 1
        assert not record.problems(), record.problems()
    finally:
        context.close()


STATE_RE = re.compile(
    r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', re.DOTALL
)


def test_widget_state_budget(site_root: Path) -> None:
    """Each anywidget model on the site syncs < 50 KB of data (JSON; code `_esm`, `_css` aside)."""
    over = []
    for path in sorted(site_root.rglob("*.html")):
        for m in STATE_RE.finditer(path.read_text(encoding="utf-8", errors="replace")):
            state = json.loads(m.group(1).replace("<\\/", "</"))["state"]
            for model in state.values():
                if model.get("model_module") != "anywidget":
                    continue
                data = {k: v for k, v in model["state"].items() if k not in {"_esm", "_css"}}
                size = len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())
                if size >= 50_000:
                    name = model["state"].get("_anywidget_id", "?")
                    over.append(f"{path.relative_to(site_root)}: {name} {size} bytes")
    assert not over, "widget state over the 50 KB budget:\n" + "\n".join(over)


def test_plane_pointer_drag(site_url: str, browser: Any) -> None:
    """Dragging on the query/key plane snaps the query to the nearest grid point."""
    context, page, record = open_page(browser, site_url + XSS_PAGE, (site_url,))
    try:
        wait_widgets(page)
        svg = page.locator(".cu-qk-plane svg.cu-qk-svg").first
        box = svg.bounding_box()
        assert box is not None
        angle = page.locator(".cu-qk-plane input[type=range]").first
        assert angle.input_value() == "0"
        # Straight up from the centre: 90 degrees.
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2 - 60)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2 - 80)
        page.mouse.up()
        angles = page.evaluate(
            "() => Array.from(document.querySelectorAll('.cu-qk-plane output'))"
            ".map((o) => o.textContent)"
        )
        assert angles[0] == "90°", angles
        assert not record.problems(), record.problems()
    finally:
        context.close()


#: Where a reader finds the two sidebars once a button opened them: a link of the chapter list and
#: a link of the page's own sections.
CHAPTER_LIST_LINK = ".bd-sidebar-primary a[href*='02_scaling']"
SECTION_LINK = ".bd-sidebar-secondary #pst-page-toc-nav a"


#: Every visible Font Awesome icon of the two toggle buttons and the colour-mode button: the
#: font of its ``::before`` glyph, the glyph and its drawn width.
ICON_GLYPHS_JS = """() => Array.from(document.querySelectorAll(
    '.primary-toggle i, .secondary-toggle i, .theme-switch-button i'))
  .filter((i) => i.getClientRects().length > 0)
  .map((i) => { const b = getComputedStyle(i, '::before');
    return {cls: i.className, font: b.fontFamily, glyph: b.content,
            width: i.getBoundingClientRect().width}; })"""
FONT_LOADED_JS = """async () => { await document.fonts.ready;
  return document.fonts.check('900 16px "Font Awesome 6 Free"'); }"""


@pytest.mark.parametrize(
    ("edition", "viewport", "touch"),
    [
        ("", (390, 844), True),
        ("zh/", (390, 844), True),
        ("", (853, 480), False),  # a 1280x720 projector at 150 % zoom
    ],
    ids=["phone-en", "phone-zh", "projector-150"],
)
def test_navigation_and_contents_buttons_open_their_sidebars(
    edition: str, viewport: tuple[int, int], touch: bool, site_url: str, browser: Any
) -> None:
    """On a phone (a tap) and on a projector at 150 % (a click), the ☰ button shows the chapter
    list and the contents button the page's sections. Both sidebars start hidden there; the
    buttons a reader sees are the article header's."""
    context = browser.new_context(
        viewport={"width": viewport[0], "height": viewport[1]}, has_touch=touch, is_mobile=touch
    )
    try:
        page = context.new_page()
        page.goto(f"{site_url}{edition}chapters/01_queries_keys_values.html", wait_until="load")
        # The buttons' icons are glyphs of Font Awesome's web font (the theme's CSS; the site
        # ships no icon script): each visible icon is drawn in that font, and the font loaded.
        icons = page.evaluate(ICON_GLYPHS_JS)
        assert icons and all(i["font"].startswith('"Font Awesome') for i in icons), icons
        assert all(i["width"] > 0 and i["glyph"] not in ("", "none") for i in icons), icons
        assert page.evaluate(FONT_LOADED_JS), "Font Awesome's web font did not load"
        for button, target in (
            (".primary-toggle", CHAPTER_LIST_LINK),
            (".secondary-toggle", SECTION_LINK),
        ):
            assert not page.locator(target).first.is_visible(), f"{target} visible before {button}"
            visible = page.locator(f"{button}:visible").first
            if touch:
                visible.tap()
            else:
                visible.click()
            page.locator(target).first.wait_for(state="visible", timeout=5_000)
            page.keyboard.press("Escape")  # close the dialog before the next button
            page.locator(target).first.wait_for(state="hidden", timeout=5_000)
    finally:
        context.close()


@pytest.mark.parametrize(
    ("edition", "viewport"),
    [("", (1280, 800)), ("zh/", (1280, 800)), ("", (390, 844)), ("zh/", (853, 480))],
    ids=["wide-en", "wide-zh", "phone-en", "projector-zh"],
)
def test_one_search_box_and_no_empty_site_header(
    edition: str, viewport: tuple[int, int], site_url: str, browser: Any
) -> None:
    """A page shows one search control, not two: the theme's site header above the article held
    nothing but a second search box (64 px high on a wide screen). Ctrl+K still opens the search."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    try:
        page = context.new_page()
        page.goto(f"{site_url}{edition}chapters/01_queries_keys_values.html", wait_until="load")
        header_height = page.evaluate(
            "() => { const h = document.querySelector('#pst-header');"
            " return h ? h.getBoundingClientRect().height : 0; }"
        )
        assert header_height == 0, f"the empty site header is {header_height} px high"
        visible = page.locator(".search-button__button:visible, .search-button-field:visible")
        assert visible.count() == 1, f"{visible.count()} search controls visible"
        page.keyboard.press("Control+k")
        page.locator("#pst-search-dialog input[name=q]").wait_for(state="visible", timeout=5_000)
    finally:
        context.close()


@pytest.mark.parametrize(
    ("edition", "query", "page"),
    [
        ("zh/", "缩放", "chapters/02_scaling"),
        ("zh/", "因果", "chapters/07_causal_attention"),
        ("zh/", "注意力", "chapters/04_multi_head_attention"),
        ("zh/", "掩码", "chapters/07_causal_attention"),
        ("zh/", "头", "chapters/04_multi_head_attention"),
        ("zh/", "归一化指数函数", "glossary"),  # a glossary term, whole
        ("zh/", "多头注意力", "chapters/04_multi_head_attention"),
        ("", "因果", "chapters/07_causal_attention"),
        ("", "头", "chapters/04_multi_head_attention"),
        ("", "softmax", "chapters/03_softmax_weighted_sum"),
    ],
)
def test_search_finds_chinese_and_english_words(
    edition: str, query: str, page: str, site_url: str, browser: Any
) -> None:
    """The site's own search page (Sphinx's, no server) lists the chapter for a Chinese word in
    the 中文 edition, and for a Chinese word quoted from the seed in the English one."""
    context, tab, _ = open_page(browser, f"{site_url}{edition}search.html?q={query}", (site_url,))
    try:
        # Finished, not started: Sphinx clears #search-progress before it lists the pages one by
        # one (5 ms apart), and writes the summary ("found N pages") only after the last one
        # (_finishSearch is its one writer). Its pulse is no sign: stopPulse leaves the pending
        # 500 ms timer, which sets the status back from -1 to 0 and pulses on, so a slow poll
        # never sees -1 (CI timed out so on one case).
        tab.wait_for_function(
            "() => { const s = document.querySelector('#search-results .search-summary');"
            " return !!s && s.textContent.trim() !== ''; }",
            timeout=20_000,
        )
        links = tab.eval_on_selector_all(
            "#search-results ul.search li a", "(as) => as.map((a) => a.getAttribute('href'))"
        )
        assert any(page in (href or "") for href in links), (
            f"searching {edition or 'en/'} for {query!r}: {page} not among {links[:10]}"
        )
    finally:
        context.close()


#: The least touch target (CSS px, each side) of the language switch: WCAG 2.2's 2.5.8 minimum.
MIN_TARGET_PX = 24


@pytest.mark.parametrize(("width", "height"), [(1280, 900), (390, 844)], ids=["desktop", "phone"])
@pytest.mark.parametrize(("edition", "other"), [("", "zh/"), ("zh/", "")], ids=["en-zh", "zh-en"])
def test_language_switch_keeps_the_section(
    edition: str, other: str, width: int, height: int, site_url: str, browser: Any
) -> None:
    """Reading a section far down a chapter, the reader switches language and lands on the same
    section of the other edition (the switch adds its #anchor), not at the top of the page. At the
    desktop and on a phone the switch is in the article's sticky header bar, so it is on screen
    there, a touch target of at least 24x24 px, and the page does not scroll sideways."""
    context = browser.new_context(
        viewport={"width": width, "height": height}, has_touch=width < 600
    )
    try:
        page = context.new_page()
        page.goto(f"{site_url}{edition}chapters/02_scaling.html", wait_until="load")
        # Formulas and widgets drawn first: they change the page's height (a reader scrolls later).
        page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
        page.evaluate("() => window.courseWidgetLoader ? window.courseWidgetLoader.ready : null")
        ids = page.eval_on_selector_all("article section[id]", "(s) => s.map((e) => e.id)")
        assert len(ids) >= 4, ids
        target = ids[3]
        page.evaluate("(id) => document.getElementById(id).scrollIntoView()", target)
        next_frames(page)
        # A reader's click where the link is (in the sticky header bar): Playwright's own click
        # would first scroll the page to the element, which a reader's click does not.
        link = page.locator(".cu-lang-switch a").first
        box = link.bounding_box()
        assert box and box["y"] >= 0 and box["y"] + box["height"] <= height, (
            f"at {width} px the language switch is not on screen: {box}"
        )
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
        assert link.evaluate("(a) => !!a.closest('.bd-header-article')"), (
            f"at {width} px the language switch is not in the article's header bar"
        )
        assert min(box["width"], box["height"]) >= MIN_TARGET_PX, (
            f"at {width} px the language switch is {box['width']:.0f}x{box['height']:.0f} px, "
            f"under {MIN_TARGET_PX}x{MIN_TARGET_PX}"
        )
        sideways = page.evaluate("() => document.documentElement.scrollWidth")
        assert sideways <= width, f"at {width} px the page is {sideways} px wide"
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_url(f"{site_url}{other}chapters/02_scaling.html#*", timeout=15_000)
        assert page.url.endswith(f"#{target}"), f"landed on {page.url}, expected #{target}"
        top = page.evaluate(
            "(id) => document.getElementById(id).getBoundingClientRect().top", target
        )
        assert -5 <= top <= height / 2, f"section #{target} is at y = {top} px, not in view"
    finally:
        context.close()


def test_an_edited_widget_file_shows_without_re_executing_a_notebook(
    site_root: Path, browser: Any, tmp_path: Path
) -> None:
    """The site draws each widget with the package's current files, not with code saved in a
    notebook: edit a string and a style in a copy of the widgets' files, write the site's code
    files from it (what ``make book`` does from the package), and find both on chapter 5's page in
    each edition and in its deck. The notebooks are not touched."""
    from course_utils.widgets._base import HERE
    from course_utils.widgets.saved_code import MODULE_FOLDER, write_widget_modules

    copy = tmp_path / "widgets"
    shutil.copytree(HERE, copy)
    mark = "Edited after execution"
    js = copy / "rope_dial.js"
    assert 'CU.t("Base θ")' in js.read_text(encoding="utf-8")
    js.write_text(js.read_text(encoding="utf-8").replace('CU.t("Base θ")', f'"{mark}"'), "utf-8")
    with (copy / "rope_dial.css").open("a", encoding="utf-8") as css:
        css.write("\n.cu-widget { outline: 3px solid rgb(1, 2, 3); }\n")
    files = write_widget_modules(tmp_path / MODULE_FOLDER, source=copy)
    extra = {f"/_static/{MODULE_FOLDER}/{f.name}": f.read_bytes() for f in files}
    pages = ["chapters/05_positions.html", "zh/chapters/05_positions.html"]
    pages += ["slides/05_positions.slides.html"]
    with serve(site_root, extra=extra) as url:
        for rel in pages:
            context, page, record = open_page(browser, url + rel, (url,))
            try:
                info = wait_widgets(page)
                assert info["widgets"], f"{rel}: no widget drawn"
                text = page.evaluate(  # textContent: a deck hides the slides not shown
                    "() => Array.from(document.querySelectorAll('.cu-widget'),"
                    " (w) => w.textContent).join(' ')"
                )
                assert mark in text, f"{rel}: the edited string is not in its widgets"
                outline = page.evaluate(
                    "() => getComputedStyle(document.querySelector('.cu-widget')).outlineColor"
                )
                assert outline == "rgb(1, 2, 3)", f"{rel}: the edited style is not applied"
                assert not record.problems(), record.problems()
            finally:
                context.close()


@pytest.mark.parametrize("edition", ["", "zh/"])
def test_head_explorer_says_its_vocabulary_is_english(
    site_url: str, browser: Any, edition: str
) -> None:
    """Typing Chinese into the head explorer shows, before any run, that MiniLM's vocabulary is
    English (most characters become [UNK]); an English sentence shows no such note."""
    context, page, record = open_page(
        browser, f"{site_url}{edition}chapters/04_multi_head_attention.html", (site_url,)
    )
    try:
        wait_widgets(page)
        box = page.locator(".cu-head-explorer .cu-he-input").first
        note = page.locator(".cu-head-explorer .cu-he-cjk").first
        box.fill("The cat sat on the mat.")
        assert note.is_hidden()
        box.fill("小明在银行边的长椅上看书。")
        note.wait_for(state="visible", timeout=5_000)
        assert "[UNK]" in note.inner_text()
        assert not record.problems(), record.problems()
    finally:
        context.close()


#: Every text box of a widget drawing against the widget's own boxes: a row label that ends past the
#: first bar (runs under the drawing), and any SVG text wider than its SVG (cut at the viewBox).
TEXT_OVERRUNS_JS = r"""
(root) => {
  const out = [];
  for (const svg of root.querySelectorAll("svg")) {
    const box = svg.getBoundingClientRect();
    if (box.width < 40) continue;  // a swatch
    for (const t of svg.querySelectorAll("text")) {
      const r = t.getBoundingClientRect();
      if (r.width === 0) continue;
      if (r.left < box.left - 1 || r.right > box.right + 1) out.push("cut: " + t.textContent);
    }
  }
  const firstBar = root.querySelector("svg line.cu-bt-axis");
  if (firstBar) {
    const barLeft = firstBar.getBoundingClientRect().left;
    for (const t of root.querySelectorAll("text.cu-bt-label")) {
      const r = t.getBoundingClientRect();
      if (r.right > barLeft + 1) out.push("under the bars: " + t.textContent);
    }
  }
  return out;
}
"""


@pytest.mark.parametrize(
    ("page_path", "widget"),
    [
        ("zh/chapters/06_transformer_block.html", ".cu-block-tracer"),
        ("chapters/06_transformer_block.html", ".cu-block-tracer"),
        ("chapters/07_causal_attention.html", ".cu-gstep"),
        ("zh/chapters/07_causal_attention.html", ".cu-gstep"),
        ("chapters/10_grouped_query_attention.html", ".cu-kvcalc"),
        ("zh/chapters/10_grouped_query_attention.html", ".cu-kvcalc"),
    ],
)
def test_widget_text_is_neither_cut_nor_under_the_drawing(
    site_url: str, browser: Any, page_path: str, widget: str
) -> None:
    """The legends and captions that were cut at the SVG's edge (ch07 "…(b", ch10 "…does n") and the
    zh row label that ran under the block tracer's bars (ch06) now fit, on desktop."""
    context, page, record = open_page(browser, f"{site_url}{page_path}", (site_url,))
    try:
        wait_widgets(page)
        root = page.locator(widget).first
        root.scroll_into_view_if_needed()
        problems = root.evaluate(TEXT_OVERRUNS_JS)
        assert not problems, problems
        assert not record.problems(), record.problems()
    finally:
        context.close()


#: Inline formulas whose right edge passes the edge of the screen and that cannot be scrolled.
CUT_INLINE_MATH_JS = r"""
async () => {
  await window.MathJax.startup.promise;
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const width = document.documentElement.clientWidth;
  return Array.from(document.querySelectorAll('article mjx-container:not([display="true"])'))
    .filter((m) => m.getClientRects().length > 0)
    .filter((m) => {
      const r = m.getBoundingClientRect();
      const scrolls = m.scrollWidth > m.clientWidth + 1 && m.getAttribute("tabindex") === "0";
      // Inside a table (or code) that scrolls sideways as a whole: reachable by scrolling that.
      let box = m.parentElement;
      let inScroller = false;
      for (; box && box !== document.body; box = box.parentElement) {
        const x = getComputedStyle(box).overflowX;
        if ((x === "auto" || x === "scroll") && box.scrollWidth > box.clientWidth + 1) {
          inScroller = true;
          break;
        }
      }
      return r.right > width + 1 && !scrolls && !inScroller;
    })
    .map((m) => (m.querySelector("mjx-assistive-mml") || m).textContent.slice(0, 60));
}
"""


@pytest.mark.parametrize(
    "page_path",
    [
        "chapters/11_multi_head_latent_attention.html",
        "zh/chapters/11_multi_head_latent_attention.html",
        "zh/chapters/04_multi_head_attention.html",
        "zh/chapters/10_grouped_query_attention.html",
    ],
)
def test_long_inline_maths_scrolls_on_a_phone(site_url: str, browser: Any, page_path: str) -> None:
    """At 390 px, an inline formula wider than the line (ch11's absorption identity, zh ch04's
    MultiHead formula) scrolls inside its line and is a Tab stop, instead of being cut off."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True)
    try:
        page = context.new_page()
        goto_settled(page, f"{site_url}{page_path}")
        cut = page.evaluate(CUT_INLINE_MATH_JS)
        assert not cut, cut
    finally:
        context.close()


#: The least gap (CSS px) between a chapter-13 measure's name and another row's name or words.
TOPIC_ROW_GAP_PX = 8

#: Where a chapter-13 measure's name is not clearly its own row's: the name's text (its lines' box)
#: touches or comes within ``gap`` px of another row's name or words, or is nearer another row's
#: words than its own.
TOPIC_ROW_OVERLAPS_JS = r"""
(root, gap) => {
  const rows = Array.from(root.querySelectorAll('.cu-tf-row'));
  const textBox = (el) => { const r = document.createRange(); r.selectNodeContents(el);
                            return r.getBoundingClientRect(); };
  const apart = (a, b) => Math.hypot(Math.max(0, a.left - b.right, b.left - a.right),
                                     Math.max(0, a.top - b.bottom, b.top - a.bottom));
  const boxes = rows.map((row) => ({
    name: textBox(row.querySelector('.cu-tf-name')),
    words: Array.from(row.querySelectorAll('.cu-tf-tok')).map((c) => c.getBoundingClientRect()),
    label: row.querySelector('.cu-tf-name').textContent,
  }));
  const out = [];
  boxes.forEach((b, i) => {
    // Above or below: a name beside its words (a wide card) is 0 px from them.
    const own = Math.min(...b.words.map((w) => Math.max(0, w.top - b.name.bottom,
                                                        b.name.top - w.bottom)));
    boxes.forEach((other, j) => {
      if (j === i) return;
      const near = Math.min(apart(b.name, other.name), ...other.words.map((w) => apart(b.name, w)));
      if (near < gap) {
        out.push(`"${b.label}" is ${near.toFixed(1)} px from row "${other.label}" (< ${gap})`);
      } else if (near <= own) {
        out.push(`"${b.label}" is nearer row "${other.label}" (${near.toFixed(1)} px) than its own `
                 + `words (${own.toFixed(1)} px)`);
      }
    });
  });
  return out;
}
"""


@pytest.mark.parametrize(
    ("edition", "viewport"),
    [("", "desktop"), ("", "projector"), ("", "phone"), ("zh/", "desktop"), ("zh/", "phone")],
)
def test_topic_focus_labels_do_not_run_together(
    site_url: str, browser: Any, edition: str, viewport: str
) -> None:
    """Chapter 13's measure names ("MiniLM rollout (mean-pooled)", "gradient × input") are each
    clearly their own row's, however many lines a name takes: at least ``TOPIC_ROW_GAP_PX`` from
    every other row's name and words, and nearer (above or beside) their own words than any other
    row's, on a wide card and on a phone's stacked rows."""
    from course_site.browser import open_in_viewport

    rel = f"{edition}chapters/13_topic_words.html"
    context, page = open_in_viewport(browser, site_url, rel, viewport)
    try:
        root = page.locator(".cu-topic-focus").first
        root.scroll_into_view_if_needed()
        problems = []
        for index in range(len(root.locator("select").first.locator("option").all())):
            root.locator("select").first.select_option(index=index)
            page.wait_for_timeout(50)
            problems += root.evaluate(TOPIC_ROW_OVERLAPS_JS, TOPIC_ROW_GAP_PX)
        assert not problems, sorted(set(problems))
    finally:
        context.close()


#: Where a label of chapter 1's plane lies on a mark: a key's name or "q" (its text box) on a key's
#: dot (a circle of the dot's radius and outline), on the output diamond (a 12 px square turned 45
#: degrees, outline included) or on another label.
PLANE_LABEL_HITS_JS = r"""
(root) => {
  const svg = root.querySelector('svg.cu-qk-svg');
  const labels = Array.from(svg.querySelectorAll('text.cu-qk-label, text.cu-qk-qlabel'))
    .map((t) => ({name: t.textContent, box: t.getBBox()}));
  const marks = Array.from(svg.querySelectorAll('circle.cu-qk-keydot')).map((c) => ({
    name: 'a key dot', cx: +c.getAttribute('cx'), cy: +c.getAttribute('cy'),
    r: +c.getAttribute('r') + 0.75, circle: true}));
  const d = svg.querySelector('rect.cu-qk-output');
  if (d) marks.push({name: 'the output diamond', cx: +d.getAttribute('x') + 6,
                     cy: +d.getAttribute('y') + 6, r: 6 * Math.SQRT2 + 0.5, circle: false});
  const out = [];
  labels.forEach((l, i) => {
    const b = l.box;
    for (const m of marks) {  // the point of the text box nearest the mark's centre
      const dx = Math.abs(Math.max(b.x, Math.min(m.cx, b.x + b.width)) - m.cx);
      const dy = Math.abs(Math.max(b.y, Math.min(m.cy, b.y + b.height)) - m.cy);
      if (m.circle ? Math.hypot(dx, dy) < m.r : dx + dy < m.r) out.push(`${l.name} on ${m.name}`);
    }
    labels.slice(i + 1).forEach((o) => {
      const c = o.box;
      const meet = b.x < c.x + c.width && c.x < b.x + b.width
        && b.y < c.y + c.height && c.y < b.y + b.height;
      if (meet) out.push(`${l.name} on ${o.name}`);
    });
  });
  return out;
}
"""


#: Every angle x length of chapter 1's plane, each set as a value and an input event: the labels on
#: marks at each (``HITS``: PLANE_LABEL_HITS_JS) and the distinct query arrow ends drawn.
PLANE_SWEEP_JS = r"""
(root) => {
  const hits = HITS;
  const [angle, length] = root.querySelectorAll('input[type=range]');
  const line = () => root.querySelector('svg.cu-qk-svg line.cu-qk-query');
  const problems = [];
  const queries = new Set();
  for (let li = 0; li <= Number(length.max); li++) {
    length.value = String(li);
    length.dispatchEvent(new Event('input', {bubbles: true}));
    for (let ai = 0; ai <= Number(angle.max); ai++) {
      angle.value = String(ai);
      angle.dispatchEvent(new Event('input', {bubbles: true}));
      const q = line();
      queries.add(`${q.getAttribute('x2')},${q.getAttribute('y2')}`);
      for (const h of hits(root)) problems.push(`${10 * ai} degrees, length #${li}: ${h}`);
    }
  }
  return {problems, queries: Array.from(queries)};
}
"""


@pytest.mark.parametrize("edition", ["", "zh/"])
def test_plane_labels_lie_on_no_mark(site_url: str, browser: Any, edition: str) -> None:
    """Chapter 1's plane (``QueryKeyPlane``): at every angle of its slider (steps of 10 degrees)
    and every length, no label ("q", a key's name) lies on a key's dot, the output diamond or
    another label. (At 190 degrees "q" was under the diamond; a key's name lay on its own dot
    once the dot grew with its weight.)"""
    from course_site.browser import open_in_viewport

    rel = f"{edition}chapters/01_queries_keys_values.html"
    context, page = open_in_viewport(browser, site_url, rel, "desktop")
    try:
        plane = page.locator(".cu-qk-plane").first
        plane.scroll_into_view_if_needed()
        angle, length = plane.locator("input[type=range]").all()[:2]
        assert (angle.get_attribute("max"), angle.get_attribute("step") or "1") == ("35", "1")
        angle.fill("19")  # one move as a reader makes it, then the sweep inside the page
        assert plane.evaluate(PLANE_LABEL_HITS_JS) == []
        # The sweep moves the sliders as Playwright's fill does (a value, then an input event;
        # the widget redraws synchronously), in one call: 180 round trips cost 12 s.
        sweep = plane.evaluate(PLANE_SWEEP_JS.replace("HITS", PLANE_LABEL_HITS_JS))
        assert len(sweep["queries"]) >= 36 * int(length.get_attribute("max")), sweep["queries"]
        problems = sweep["problems"]
        assert not problems, f"{len(problems)} labels on marks: {problems[:8]}"
    finally:
        context.close()


@pytest.mark.parametrize("edition", ["", "zh/"])
def test_folded_answers_are_named_by_their_title(edition: str, site_url: str, browser: Any) -> None:
    """sphinx-togglebutton names every answer's button "Toggle hidden content" (English on a 中文
    page); site_nav.js names it by the admonition's title instead ("Answer", 答案...)."""
    url = f"{site_url}{edition}chapters/01_queries_keys_values.html"
    context, tab, _ = open_page(browser, url, (site_url,))
    try:
        names = tab.eval_on_selector_all(
            "button.toggle-button",
            "(bs) => bs.map((b) => [b.getAttribute('aria-label'), (document.getElementById("
            "b.getAttribute('aria-labelledby') || '') || {}).textContent])",
        )
        assert names, "no folded answer on the page"
        for label, title in names:
            assert label is None and title and title.strip(), (label, title)
            assert "Toggle" not in title
            if edition == "zh/":
                assert re.search(r"[\u4e00-\u9fff]", title), title
        # and the accessible name a screen reader hears is that title
        first = names[0][1].strip()
        assert tab.get_by_role("button", name=first).count() >= 1
    finally:
        context.close()
