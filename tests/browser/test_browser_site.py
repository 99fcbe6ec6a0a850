"""Every page of the built site, both editions (English, 中文 under ``zh/``), in a real Chromium,
with every non-local request blocked.

For each page: no blocked or failed request, no console error or warning, every widget view
rendered, MathJax typeset without errors where the page has math, and every control of every course
widget, moved with the keyboard (focus + ArrowRight / ArrowDown), changes the drawing. Learner text
is never run as HTML. Screenshots of failing pages go to test-artifacts/.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from course_site import LOADER, page_widget_scripts
from course_site.browser import (
    AT_END_JS,
    COLLECT_JS,
    DRAWING_JS,
    SHIM_PAGE,
    XSS_PAGE,
    XSS_TOKENS,
    block_outside,
    press_key_for,
    site_dir,
    site_pages,
    split_edition,
)

pytestmark = pytest.mark.browser

_SITE = site_dir()
PAGES = site_pages(_SITE) if _SITE.is_dir() else []

NO_XSS_INIT = """
window.__xss = 0;
window.alert = () => { window.__xss += 1; };
"""


#: html-manager's own console warning (its JSON-schema compiler). Course pages load our loader,
#: not html-manager, so they must not show it; only the fallback test page (a core ipywidget) may.
FALLBACK_WARNING = "strict mode: use allowUnionTypes"


class PageRecord:
    """Everything that went wrong while a page was open."""

    def __init__(self) -> None:
        self.blocked: list[str] = []
        self.failed: list[str] = []
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []

    def problems(self, allowed: str | None = None) -> list[str]:
        """Everything that went wrong, but messages containing ``allowed``."""
        found = (
            [f"blocked request: {u}" for u in self.blocked]
            + [f"failed request: {u}" for u in self.failed]
            + [f"console {m}" for m in self.console_errors]
            + [f"page error: {m}" for m in self.page_errors]
        )
        return [m for m in found if not allowed or allowed not in m]


def open_page(browser: Any, url: str, allowed: tuple[str, ...]) -> tuple[Any, Any, PageRecord]:
    record = PageRecord()
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    block_outside(context, allowed, record.blocked)
    context.add_init_script(NO_XSS_INIT)
    page = context.new_page()
    # No errors and no warnings (html-manager used to log "strict mode: use allowUnionTypes").
    page.on(
        "console",
        lambda msg: (
            record.console_errors.append(f"{msg.type}: {msg.text}")
            if msg.type in ("error", "warning")
            else None
        ),
    )
    page.on("pageerror", lambda err: record.page_errors.append(str(err)))
    page.on(
        "requestfailed",
        lambda req: (
            record.failed.append(f"{req.url} ({req.failure})")
            if req.url not in record.blocked
            else None
        ),
    )
    page.on(
        "response",
        lambda resp: (
            record.failed.append(f"{resp.url} (HTTP {resp.status})") if resp.status >= 400 else None
        ),
    )
    page.goto(url, wait_until="load")
    # A redirect page (index.html -> intro.html, meta refresh) navigates again right after load.
    for _ in range(3):
        try:
            refresh = page.evaluate("() => !!document.querySelector('meta[http-equiv=refresh]')")
        except Exception:  # the context was destroyed by the redirect itself
            page.wait_for_load_state("load")
            continue
        if not refresh:
            break
        page.wait_for_url(lambda u: u != url, timeout=10_000)
        page.wait_for_load_state("load")
    # The check above can run in the redirect's target while that page is still being parsed (on a
    # loaded machine the refresh fires before the first check): wait until the page we are on has
    # loaded, or its scripts (MathJax) are not all in the document yet.
    page.wait_for_load_state("load")
    return context, page, record


def wait_widgets(page: Any) -> dict[str, Any]:
    info = page.evaluate(COLLECT_JS)
    if info["views"]:
        # Our loader (pages whose widgets are all anywidgets) says when every view is drawn.
        page.evaluate("() => window.courseWidgetLoader ? window.courseWidgetLoader.ready : null")
        page.wait_for_function(
            """() => {
              const views = document.querySelectorAll(
                'script[type="application/vnd.jupyter.widget-view+json"]');
              return Array.from(views).every((s) => {
                const a = s.previousElementSibling;
                return a && a.classList.contains('widget-subarea') && a.childElementCount > 0;
              });
            }""",
            timeout=30_000,
        )
        info = page.evaluate(COLLECT_JS)
    return info


def check_math(page: Any) -> int:
    """Wait for MathJax (if the page loads it); return the number of typeset formulas."""
    has_mathjax = page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')")
    n_math = page.evaluate("() => document.querySelectorAll('.math').length")
    if not has_mathjax:
        assert n_math == 0, f"{n_math} math elements but MathJax is not loaded"
        return 0
    page.wait_for_function(
        "() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30_000
    )
    page.evaluate("() => MathJax.startup.promise")
    errors = page.evaluate("() => document.querySelectorAll('mjx-merror').length")
    assert errors == 0, f"{errors} MathJax errors (mjx-merror)"
    typeset = page.evaluate("() => document.querySelectorAll('mjx-container').length")
    assert typeset >= n_math, f"only {typeset} of {n_math} formulas typeset"
    return typeset


def move_every_control(page: Any, info: dict[str, Any]) -> int:
    """Focus each control of each course widget, press one key, assert the drawing changed."""
    moved = 0
    for widget in info["widgets"]:
        for control_id in widget["controls"]:
            selector = f"#{control_id}"
            tag = page.eval_on_selector(selector, "(e) => e.tagName.toLowerCase()")
            before = page.evaluate(DRAWING_JS, control_id)
            label = page.evaluate(
                "(id) => Array.from(document.getElementById(id).labels || [])"
                ".map((l) => l.textContent.trim()).join(' ')",
                control_id,
            )
            assert label, f"{widget['cls']}: {tag}#{control_id} has no <label> for screen readers"
            page.focus(selector)
            assert page.evaluate("(id) => document.activeElement.id === id", control_id), (
                f"{control_id} cannot take keyboard focus"
            )
            key = press_key_for(tag, at_end=page.evaluate(AT_END_JS, control_id))
            page.keyboard.press(key)
            try:
                page.wait_for_function(
                    f"([id, before]) => ({DRAWING_JS})(id) !== before",
                    arg=[control_id, before],
                    timeout=5_000,
                )
            except Exception as err:
                raise AssertionError(
                    f"{widget['cls']}: pressing {key} on {tag}#{control_id} "
                    f"did not change the drawing"
                ) from err
            outline = page.evaluate(
                "(id) => { const e = document.getElementById(id);"
                " const cs = getComputedStyle(e);"
                " return e.matches(':focus-visible')"
                " ? cs.outlineStyle + ' ' + cs.outlineWidth : ''; }",
                control_id,
            )
            assert outline and not outline.startswith("none") and not outline.endswith(" 0px"), (
                f"{widget['cls']}: {tag}#{control_id} has no visible keyboard focus ({outline!r})"
            )
            moved += 1
    return moved


def check_no_html_injection(page: Any) -> None:
    assert page.evaluate("() => window.__xss") == 0, "learner text ran as JavaScript (alert called)"
    injected = page.evaluate(
        "() => document.querySelectorAll('.cu-widget img, .cu-widget script, .cu-widget b').length"
    )
    assert injected == 0, f"{injected} HTML elements injected from learner text inside widgets"


def run_page(browser: Any, base: str, rel: str, artifacts: Path) -> dict[str, Any]:
    context, page, record = open_page(browser, base + rel, (base,))
    try:
        info = wait_widgets(page)
        assert info["rendered"] == info["views"], (
            f"{info['views'] - info['rendered']} of {info['views']} widget views not rendered"
        )
        # A plain ipywidgets view (interact + matplotlib, say) is frozen without a kernel: the site
        # only carries course widgets, whose drawings are live.
        assert info["other"] == 0 or rel.startswith("__course_"), (
            f"{info['other']} widget view(s) that are not course widgets (frozen on the site)"
        )
        typeset = check_math(page)
        moved = move_every_control(page, info)
        check_no_html_injection(page)
        page.wait_for_timeout(100)  # let late errors and requests arrive
        problems = record.problems()
        assert not problems, "\n".join(problems)
        return {"info": info, "typeset": typeset, "moved": moved, "page": page}
    except BaseException:
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", rel)
        page.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)
        (artifacts / f"{name}.log").write_text("\n".join(record.problems()))
        raise
    finally:
        context.close()


@pytest.mark.parametrize("rel", PAGES or ["<no site>"])
def test_page(rel: str, site_url: str, browser: Any, artifacts: Path) -> None:
    if rel == "<no site>":
        pytest.fail(f"no HTML pages under {_SITE}")
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
        loads_manager = "embed-amd.js" in text or "require.js" in text
        loads_loader = "course/widget_loader.js" in text
        assert has_state == (loads_manager or loads_loader), (
            f"{rel}: widget state {has_state}, manager {loads_manager}, loader {loads_loader}"
        )
        assert not (loads_manager and loads_loader), f"{rel}: loads both html-manager and loader"
        if has_state:
            state = json.loads(STATE_RE.search(text).group(1).replace("<\\/", "</"))["state"]
            want_loader = page_widget_scripts(state) == [LOADER]
            assert loads_loader == want_loader, (
                f"{rel}: all-anywidget page {want_loader}, but loader {loads_loader}"
            )
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


FONT_URLS_JS = """
() => {
  const urls = [];
  for (const sheet of Array.from(document.styleSheets)) {
    let rules = [];
    try { rules = Array.from(sheet.cssRules); } catch (e) { continue; }
    for (const rule of rules) {
      if (rule.type !== CSSRule.FONT_FACE_RULE) continue;
      const src = rule.style.getPropertyValue('src');
      for (const m of src.matchAll(/url\\(["']?([^"')]+)["']?\\)/g)) {
        const base = sheet.href || document.baseURI;
        if (/\\.woff2?(\\?|#|$)/.test(m[1])) urls.push(new URL(m[1], base).href);
      }
    }
  }
  return urls;
}
"""


def test_widget_manager_fonts_are_local(site_url: str, browser: Any) -> None:
    """html-manager's Font Awesome @font-face URLs point at vendored files that exist.

    (On the page with a core ipywidget: pages of anywidgets only get our loader instead.)
    """
    context, page, record = open_page(browser, site_url + SHIM_PAGE, (site_url,))
    try:
        wait_widgets(page)
        urls = [u for u in page.evaluate(FONT_URLS_JS) if "course_vendor/html-manager" in u]
        assert urls, "no html-manager font URLs found (font path not configured?)"
        for url in sorted(set(urls)):
            status = page.evaluate("(u) => fetch(u).then((r) => r.status)", url)
            assert status == 200, f"{url}: HTTP {status}"
        assert not record.problems(FALLBACK_WARNING), record.problems(FALLBACK_WARNING)
    finally:
        context.close()


def test_mathjax2_calls_from_widget_controls_are_shimmed(site_url: str, browser: Any) -> None:
    """@jupyter-widgets/controls calls MathJax.Hub.Queue; on our MathJax 3 pages it typesets."""
    context, page, record = open_page(browser, site_url + SHIM_PAGE, (site_url,))
    try:
        wait_widgets(page)
        page.wait_for_function(
            "() => document.querySelector('.widget-subarea mjx-container')", timeout=15_000
        )
        assert page.evaluate("() => document.querySelectorAll('mjx-merror').length") == 0
        assert not record.problems(FALLBACK_WARNING), record.problems(FALLBACK_WARNING)
    finally:
        context.close()
