"""One page of the site in Chromium, checked as a reader meets it: the helpers of the browser tests.

``new_recorded_page`` opens a page that blocks every request outside the site and records what goes
wrong; ``check_live`` checks that it works (widgets drawn and moved by keyboard, MathJax typeset,
learner text never run as HTML, no console error or warning). ``test_browser_site`` runs it on the
pages the audit does not load (redirects, test pages) and ``test_site_audit`` on every other page,
after its own checks, so that each page is loaded once.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from course_site.browser import AT_END_JS, COLLECT_JS, DRAWING_JS, block_outside, press_key_for

NO_XSS_INIT = """
window.__xss = 0;
window.alert = () => { window.__xss += 1; };
"""


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


def new_recorded_page(
    browser: Any,
    allowed: tuple[str, ...],
    *,
    viewport: tuple[int, int] = (1200, 900),
    init_scripts: tuple[str, ...] = (),
) -> tuple[Any, Any, PageRecord]:
    """A fresh context and page that block every request outside ``allowed`` and record what goes
    wrong (blocked or failed requests, console errors and warnings, page errors)."""
    record = PageRecord()
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    block_outside(context, allowed, record.blocked)
    for script in (NO_XSS_INIT, *init_scripts):
        context.add_init_script(script)
    page = context.new_page()
    # No errors and no warnings.
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
    return context, page, record


#: Resolves after the browser has drawn two more frames: by then every ResizeObserver callback,
#: requestAnimationFrame redraw and layout that an event or a resize set off has run.
NEXT_FRAMES_JS = (
    "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done())))"
)


def next_frames(page: Any) -> None:
    """Wait for what a key press or a viewport change sets off to be drawn: the page's next two
    frames, not a fixed time (a busy machine draws later; a fixed wait would then read the old
    state, and on a quiet one it only wastes time)."""
    page.evaluate(NEXT_FRAMES_JS)


def goto_settled(page: Any, url: str) -> None:
    """Open ``url`` and wait for the load event of the page we end on (after a redirect page)."""
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


def open_page(browser: Any, url: str, allowed: tuple[str, ...]) -> tuple[Any, Any, PageRecord]:
    context, page, record = new_recorded_page(browser, allowed)
    goto_settled(page, url)
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


def check_live(page: Any, record: PageRecord, rel: str) -> dict[str, Any]:
    """The page works: every widget view drawn (and none frozen), MathJax typeset, every control
    moves its drawing by keyboard, no learner text run as HTML, nothing went wrong on the way."""
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


def save_failure(
    page: Any, record: PageRecord, rel: str, artifacts: Path, prefix: str = ""
) -> None:
    """A screenshot and the record of a failing page, in test-artifacts/."""
    name = prefix + re.sub(r"[^A-Za-z0-9_.-]", "_", rel)
    page.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)
    (artifacts / f"{name}.log").write_text("\n".join(record.problems()))


def run_page(browser: Any, base: str, rel: str, artifacts: Path) -> dict[str, Any]:
    context, page, record = open_page(browser, base + rel, (base,))
    try:
        return check_live(page, record, rel)
    except BaseException:
        save_failure(page, record, rel, artifacts)
        raise
    finally:
        context.close()
