"""Browser helpers shared by the browser tests (tests/browser) and the benchmarks (benchmarks/).

Part of the site's build-and-check machinery, so benchmarks need not import from tests.

* :func:`serve` — serve a folder on 127.0.0.1 (free port) from a thread, with extra in-memory pages.
* :func:`launch` — Debian's Chromium through Playwright, headless, no network side-channels.
* :func:`block_outside` — record every request that does not go to the given origin (the browser
  :func:`launch` starts reaches nothing but this machine's loopback address).
* :data:`COLLECT_JS` — snapshot of a page's widgets: views, rendered areas, controls, drawings.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from course_utils.plotting import recorded_text_px

from . import widget_scripts

ROOT = Path(__file__).resolve().parents[2]
XSS_PAGE = "__course_widget_xss_test__.html"
XSS_TOKENS = ["<img src=x onerror=alert(1)>", "<script>alert(2)</script>", "&amp;", "ok"]
CHROMIUM = os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")
#: The features Playwright 1.65 turns off at launch (its ``chromiumSwitches``), repeated in ours
#: (``CHROMIUM_ARGS``, given after Playwright's) so that they stay off whether Chromium merges two
#: ``--disable-features`` switches or keeps the last.
#: ``tests/test_course_site.py`` fails if the pinned Playwright turns off one that is not listed.
PLAYWRIGHT_DISABLED_FEATURES = (
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "TcpPortRandomizationWin",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
    "msForceBrowserSignIn",
    "msEdgeUpdateLaunchServicesPreferredVersion",
)
#: Headless Chromium builds the address bar's pop-up (two WebUI pages in a renderer of their own)
#: for every new context: 0.09 s of CPU and 0.08 s of waiting per context, measured here, and the
#: browser tests open hundreds of contexts. No test has an address bar to type in.
NO_OMNIBOX_POPUP = ("WebUIOmniboxPopup", "WebUIOmniboxAimPopup")
#: Every host name and every address but the loopback one resolves to nothing, in the browser's
#: own network stack: a page cannot reach the internet (nor a LAN), and the site's own requests
#: pass without being intercepted (Playwright's ``route`` costs 0.15-0.25 s a page load, measured).
LOOPBACK_ONLY = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-features=" + ",".join(PLAYWRIGHT_DISABLED_FEATURES + NO_OMNIBOX_POPUP),
    f"--host-resolver-rules={LOOPBACK_ONLY}",
]


def site_dir() -> Path:
    return Path(os.environ.get("COURSE_SITE_DIR", ROOT / "_build" / "html"))


#: The folder of each edition in the built site: English at the root, 中文 in ``zh/``.
EDITION_PREFIXES = {"en": "", "zh": "zh/"}


def split_edition(rel: str) -> tuple[str, str]:
    """``(edition, page path within the edition)`` of a path relative to the site.

    >>> split_edition("zh/chapters/01_x.html"), split_edition("intro.html")
    (('zh', 'chapters/01_x.html'), ('en', 'intro.html'))
    """
    if rel.startswith(EDITION_PREFIXES["zh"]):
        return "zh", rel[len(EDITION_PREFIXES["zh"]) :]
    return "en", rel


def site_pages(root: Path, editions: tuple[str, ...] = ("en", "zh")) -> list[str]:
    """Every HTML page of the built site (relative paths), static/asset folders excluded, in both
    editions (the 中文 pages are ``zh/<page>.html``).

    The slide decks (``slides/``) are reveal.js pages with their own test
    (``test_browser_decks.py``)."""
    skip = ("_static/", "_sources/", "_images/", "_downloads/", "slides/")
    pages = []
    for p in sorted(root.rglob("*.html")):
        edition, inner = split_edition(p.relative_to(root).as_posix())
        if edition in editions and not inner.startswith(skip):
            pages.append(p.relative_to(root).as_posix())
    return pages


def is_redirect_page(root: Path, rel: str) -> bool:
    """Whether the page only sends the reader on (``<meta http-equiv="Refresh">``: index.html)."""
    return 'http-equiv="Refresh"' in (root / rel).read_text(encoding="utf-8", errors="replace")


class _Handler(http.server.SimpleHTTPRequestHandler):
    extra: dict[str, bytes] = {}  # noqa: RUF012 - replaced per server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in self.extra:
            body = self.extra[path]
            self.send_response(200)
            kind = self.guess_type(path)  # a module must come as JavaScript, a stylesheet as CSS
            if kind.startswith("text/") or kind.endswith("javascript"):
                kind += "; charset=utf-8"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # Chromium drops a request when a test navigates away (a language switch): not an error.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


@contextmanager
def serve(root: Path, extra: dict[str, bytes] | None = None) -> Iterator[str]:
    """Serve ``root`` on http://127.0.0.1:<free port>; yield the base URL (ends with /)."""
    handler = type("Handler", (_Handler,), {"extra": dict(extra or {})})
    factory = functools.partial(handler, directory=str(root))
    server = _QuietServer(("127.0.0.1", 0), factory)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


def block_outside(context: Any, allowed_prefixes: tuple[str, ...], blocked: list[str]) -> None:
    """Record in ``blocked`` every request whose URL does not start with an allowed prefix
    (``data:`` and ``blob:`` URLs are the page's own).

    The browser :func:`launch` starts resolves no host but the loopback one (``LOOPBACK_ONLY``), so
    a request to the internet fails in the network stack; one to another port of this machine is
    recorded here too. Recording, not intercepting: a page's own requests go straight through.
    """

    def note(request: Any) -> None:
        url = request.url
        if not url.startswith(allowed_prefixes) and not url.startswith(("data:", "blob:")):
            blocked.append(url)

    context.on("request", note)


#: Every widget drawing (an ``<svg viewBox>``) that lies over another block of its ``.cu-row`` (a
#: table, a legend beside it) by more than 2 px each way: the drawing keeps a readable minimum
#: width, and a flex item that may shrink below it lets it spill onto its neighbour.
DRAWING_OVERLAPS_JS = """
() => {
  const out = [];
  for (const svg of document.querySelectorAll('.cu-widget svg[viewBox]')) {
    const s = svg.getBoundingClientRect();
    const row = svg.closest('.cu-row');
    if (!s.width || !row) continue;
    for (const other of row.children) {
      if (other.contains(svg)) continue;
      const r = other.getBoundingClientRect();
      const x = Math.min(s.right, r.right) - Math.max(s.left, r.left);
      const y = Math.min(s.bottom, r.bottom) - Math.max(s.top, r.top);
      if (r.width && r.height && x > 2 && y > 2) {
        out.push({widget: svg.closest('.cu-widget').className, over: other.className,
                  x: Math.round(x), y: Math.round(y)});
      }
    }
  }
  return out;
}
"""


#: Describe the widgets of the page: number of widget views (state scripts), rendered views, and for
#: each course widget its controls.
COLLECT_JS = """
() => {
  const views = Array.from(document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-view+json"]'));
  const rendered = views.filter((s) => {
    const area = s.previousElementSibling;
    return area && area.classList.contains('widget-subarea') && area.childElementCount > 0;
  }).length;
  const widgets = Array.from(document.querySelectorAll('.cu-widget')).map((w) => ({
    cls: w.className,
    controls: Array.from(w.querySelectorAll('input[type=range], select')).map((c) => c.id),
  }));
  const other = Array.from(document.querySelectorAll('.widget-subarea')).filter(
    (a) => !a.querySelector('.cu-widget')).length;
  return {views: views.length, rendered, widgets, other};
}
"""

#: The drawing of the course widget that contains control ``id`` (its stage; controls excluded).
DRAWING_JS = """
(id) => {
  const c = document.getElementById(id);
  const w = c.closest('.cu-widget');
  const stage = w.querySelector('.cu-stage');
  return (stage || w).outerHTML;
}
"""


def press_key_for(control_tag: str, at_end: bool = False) -> str:
    """The key that moves a control one step: ArrowRight/ArrowDown, or back if it is at its end."""
    if control_tag == "select":
        return "ArrowUp" if at_end else "ArrowDown"
    return "ArrowLeft" if at_end else "ArrowRight"


#: Is the control at the end of its range (so that the forward key would not move it)?
AT_END_JS = """
(id) => {
  const c = document.getElementById(id);
  if (c.tagName.toLowerCase() === 'select') return c.selectedIndex === c.options.length - 1;
  return Number(c.value) >= Number(c.max);
}
"""


def _script_json(data: Any) -> str:
    """JSON safe inside <script>: no '</' can close the tag."""
    return json.dumps(data).replace("</", "<\\/")


def embed_page_html(widgets: list[Any], title: str) -> str:
    """A page built the way myst-nb builds one: local scripts, widget state, one view per widget."""
    from ipywidgets.embed import dependency_state, embed_data

    data = embed_data(
        views=widgets, state=dependency_state(widgets, drop_defaults=False), drop_defaults=False
    )
    views = "\n".join(
        f'<script type="application/vnd.jupyter.widget-view+json">{_script_json(v)}</script>'
        for v in data["view_specs"]
    )
    # The scripts the course_site extension gives a page with saved widgets: our loader.
    scripts = "\n".join(f'<script defer src="_static/{rel}"></script>' for rel in widget_scripts())
    state = _script_json(data["manager_state"])
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<link rel="icon" href="_static/favicon.svg">
{scripts}
<script type="application/vnd.jupyter.widget-state+json">{state}</script>
</head><body><main>
{views}
</main></body></html>
"""


def xss_page_html() -> str:
    """Course widgets fed with hostile tokens and titles, on a page built like myst-nb's."""
    import numpy as np

    from course_utils.widgets import QueryKeyPlane, SentenceAttention

    rng = np.random.default_rng(0)
    sentence = SentenceAttention(
        [("<b>hostile</b>", XSS_TOKENS, rng.normal(size=(len(XSS_TOKENS), 3)))],
        title="<img src=x onerror=alert(3)>",
    )
    plane = QueryKeyPlane(
        rng.normal(size=(4, 2)), key_labels=XSS_TOKENS, title="<script>alert(4)</script>"
    )
    return embed_page_html([sentence, plane], "XSS test")


# ---- Site audit: shared by tests/browser/test_site_audit.py and benchmarks/site_audit.py ----

AXE_JS = ROOT / "tests" / "browser" / "vendor" / "axe-core" / "axe.min.js"


#: Set before any page script runs: the theme's colour mode ("light" or "dark") and timing marks
#: (DOMContentLoaded, and the moment every widget view on the page is drawn).
def mode_init_script(mode: str) -> str:
    return f"""
try {{ localStorage.setItem('mode', {json.dumps(mode)});
       localStorage.setItem('theme', {json.dumps(mode)}); }} catch (e) {{}}
window.__cuDrawnAt = null;
(() => {{
  const drawn = () => {{
    const views = document.querySelectorAll(
      'script[type="application/vnd.jupyter.widget-view+json"]');
    if (!views.length) return false;
    return Array.from(views).every((s) => {{
      const a = s.previousElementSibling;
      if (!a || !a.classList.contains('widget-subarea')) return false;
      const stage = a.querySelector('.cu-stage');
      return stage ? stage.childElementCount > 0 : a.childElementCount > 0;
    }});
  }};
  const obs = new MutationObserver(() => {{
    if (window.__cuDrawnAt === null && drawn()) {{
      window.__cuDrawnAt = performance.now();
      obs.disconnect();
    }}
  }});
  obs.observe(document, {{subtree: true, childList: true}});
}})();
"""


#: When every widget view was drawn, in ms after DOMContentLoaded (negative: before it) and after
#: the start of the navigation (null: not yet, or no widgets).
STARTUP_JS = """
() => {
  const nav = performance.getEntriesByType('navigation')[0];
  if (window.__cuDrawnAt === null || !nav) return null;
  return {after_dcl: window.__cuDrawnAt - nav.domContentLoadedEventStart,
          after_start: window.__cuDrawnAt};
}
"""

#: axe-core violations as [{id, impact, nodes, targets}] (axe must be injected first); the
#: argument: a list of rule ids to run, or null for every rule.
AXE_RUN_JS = """
async ([rules, include, skip]) => {
  const options = {resultTypes: ['violations']};
  if (rules) options.runOnly = {type: 'rule', values: rules};
  if (skip.length) options.rules = Object.fromEntries(skip.map((id) => [id, {enabled: false}]));
  const r = await axe.run(include ? {include: [include]} : document, options);
  return r.violations.map((v) => ({id: v.id, impact: v.impact, nodes: v.nodes.length,
    targets: v.nodes.slice(0, 3).map((n) => n.target.join(' '))}));
}
"""

#: Before axe runs on a page, the two kinds of element that are most of its DOM and repeat the same
#: few styles are made plain, keeping what axe judges (text, colour, background, the element and
#: its attributes); ``RESTORE_FOR_AXE_JS`` puts them back before the page's other checks:
#:
#: * each highlighted code block loses its token spans (one text node instead of one element a
#:   token: 4,300 of ch04's 8,200 elements); the token colours themselves are checked once an
#:   edition, every class the site's pygments CSS defines, in both colour modes
#:   (``TOKEN_SAMPLE_JS``, ``test_site_audit``);
#: * each MathJax formula but the first inline and the first display one of the page (kept as
#:   MathJax drew them, so MathJax's own markup is still audited on every page) becomes its text
#:   (its assistive MathML's): 3,968 of ch12's 5,997 elements are MathJax's, and they carry no text
#:   (MathJax draws glyphs with CSS ``content``), so axe cannot check their contrast anyway; as
#:   text, in the colour it inherits, it can. The text wraps, as the formula did not need to.
#:
#: axe's rules cost time per element: a chapter page's two axe runs take 2-3 times less
#: (ch12: 2.8 + 2.1 s with code made plain, 1.2 + 0.9 s with formulas too; ch04: 5.8 s to 2.6 s
#: for code alone, measured).
FLATTEN_FOR_AXE_JS = """
() => {
  const blocks = Array.from(document.querySelectorAll('div.highlight pre'));
  const saved = {code: blocks.map((pre) => pre.innerHTML), math: []};
  blocks.forEach((pre) => { pre.textContent = pre.textContent; });
  const formulas = Array.from(document.querySelectorAll('mjx-container'));
  const keep = [
    formulas.find((c) => c.getAttribute('display') !== 'true'),
    formulas.find((c) => c.getAttribute('display') === 'true'),
  ];
  for (const c of formulas) {
    if (keep.includes(c)) continue;
    const mml = c.querySelector('mjx-assistive-mml');
    saved.math.push([c, c.innerHTML, c.getAttribute('style')]);
    c.textContent = mml ? mml.textContent : '';
    c.style.whiteSpace = 'normal';
    c.style.overflowWrap = 'anywhere';
  }
  window.__cuFlattened = saved;
  return {code: blocks.length, math: saved.math.length};
}
"""

RESTORE_FOR_AXE_JS = """
() => {
  const saved = window.__cuFlattened || {code: [], math: []};
  document.querySelectorAll('div.highlight pre').forEach((pre, i) => {
    if (i < saved.code.length) pre.innerHTML = saved.code[i];
  });
  for (const [c, html, style] of saved.math) {
    c.innerHTML = html;
    if (style === null) c.removeAttribute('style'); else c.setAttribute('style', style);
  }
  delete window.__cuFlattened;
  return {code: saved.code.length, math: saved.math.length};
}
"""

#: A code block with one span of every token class the page's stylesheets colour inside
#: ``.highlight`` (pygments), appended to the article: its id, and the classes it holds.
TOKEN_SAMPLE_JS = """
() => {
  const classes = new Set();
  for (const sheet of Array.from(document.styleSheets)) {
    let rules;
    try { rules = sheet.cssRules; } catch (e) { continue; }
    for (const rule of Array.from(rules || [])) {
      const sel = rule.selectorText || '';
      for (const m of sel.matchAll(/\\.highlight \\.([A-Za-z0-9]+)(?![\\w-])/g)) classes.add(m[1]);
    }
  }
  classes.delete('hll');  // a highlighted line's background, not a token colour
  const article = document.querySelector('article') || document.querySelector('main');
  const block = document.createElement('div');
  block.className = 'highlight-python notranslate';
  block.id = 'cu-token-sample';
  const inner = document.createElement('div');
  inner.className = 'highlight';
  const pre = document.createElement('pre');
  for (const c of Array.from(classes).sort()) {
    const span = document.createElement('span');
    span.className = c;
    span.textContent = 'token_' + c;
    pre.append(span, document.createTextNode(' '));
  }
  inner.append(pre);
  block.append(inner);
  article.append(block);
  return Array.from(classes).sort();
}
"""

#: Widest element of the page (document scroll width) and the elements that stick out most.
WIDTH_JS = """
() => {
  const vw = document.documentElement.clientWidth;
  const out = [];
  for (const e of document.querySelectorAll('body *')) {
    const r = e.getBoundingClientRect();
    if (r.width && r.right > vw + 1) {
      let hidden = false;
      for (let p = e.parentElement; p; p = p.parentElement) {
        const ov = getComputedStyle(p).overflowX;
        if (ov === 'auto' || ov === 'scroll' || ov === 'hidden') { hidden = true; break; }
      }
      if (!hidden) out.push([Math.round(r.right), e.tagName.toLowerCase() + '.' +
        String(e.className && e.className.baseVal !== undefined ? e.className.baseVal
        : e.className).split(' ').slice(0, 2).join('.')]);
    }
  }
  out.sort((a, b) => b[0] - a[0]);
  return {scroll: document.documentElement.scrollWidth, viewport: vw, worst: out.slice(0, 5)};
}
"""

#: Every code block of the article (``div.highlight pre``) with its kind (``input``: a cell's
#: code; ``output``: what a cell printed; ``include``: package code shown by ``literalinclude``),
#: whether it scrolls sideways (scroll width past its box), its first line, its longest line and how
#: many monospace characters fit its box. Folded cells (``<details>``: solutions, hidden inputs) are
#: opened first, as a reader does: their code is measured as shown.
CODE_BLOCKS_JS = """
async () => {
  await document.fonts.ready;
  for (const d of document.querySelectorAll('article details')) d.open = true;
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const probe = document.createElement('span');
  const out = [];
  for (const pre of document.querySelectorAll('article div.highlight pre')) {
    if (pre.getClientRects().length === 0) continue;
    const kind = pre.closest('.cell_output') ? 'output'
      : pre.closest('.cell_input') ? 'input' : 'include';
    const lines = pre.textContent.replace(/\\n$/, '').split('\\n');
    const longest = lines.reduce((a, b) => (b.length > a.length ? b : a), '');
    const style = getComputedStyle(pre);
    probe.textContent = 'x'.repeat(100);
    probe.style.font = style.font;
    probe.style.whiteSpace = 'pre';
    pre.append(probe);
    const charWidth = probe.getBoundingClientRect().width / 100;
    probe.remove();
    const inner = pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    out.push({kind, scrolls: pre.scrollWidth > pre.clientWidth + 1,
              first: lines.find((l) => l.trim()) || '', longest: longest.length,
              fit: Math.floor(inner / charWidth)});
  }
  return out;
}
"""


def wide_code_blocks(page: Any, rel: str) -> list[str]:
    """The code blocks of the open page (at 1280 px: the book's desktop column) that scroll
    sideways: a cell's code (folded cells opened), package code shown by ``literalinclude``, a
    code block of the text, and what a cell printed (``course_site.fit_outputs`` and the site's
    style sheet fit it). Each named by its first line, its longest line and what fits."""
    blocks = page.evaluate(CODE_BLOCKS_JS)
    return [
        f"{rel}: {b['kind']} {b['first'][:60]!r} scrolls sideways (longest line "
        f"{b['longest']} characters, {b['fit']} fit)"
        for b in blocks
        if b["scrolls"]
    ]


#: Size (CSS px) of every course widget: [{cls, width, height}].
#: How many widget views the page saved (each must be drawn as one course widget).
N_VIEWS_JS = """() => document.querySelectorAll(
  'script[type="application/vnd.jupyter.widget-view+json"]').length"""


def wait_for_widgets(page: Any, timeout_ms: int) -> int:
    """Wait until every widget view the page saved is drawn (``.cu-widget``); return how many."""
    views = page.evaluate(N_VIEWS_JS)
    if views:
        page.wait_for_function(
            "(n) => document.querySelectorAll('.cu-widget').length >= n",
            arg=views,
            timeout=timeout_ms,
        )
    return views


WIDGET_SIZES_JS = """
() => Array.from(document.querySelectorAll('.cu-widget')).map((w) => {
  const r = w.getBoundingClientRect();
  return {cls: Array.from(w.classList).find((c) => c !== 'cu-widget') || '',
          width: Math.round(r.width), height: Math.round(r.height)};
})
"""


def run_axe(
    page: Any,
    rules: list[str] | None = None,
    include: str | None = None,
    *,
    skip: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Inject the vendored axe-core (tests only, never served by the site) and run it: every rule
    (but those in ``skip``) or only ``rules``, on the whole page or only the element matching the
    selector ``include``."""
    if rules is not None and skip:
        raise ValueError(f"run_axe: give rules or skip, not both; got rules={rules}, skip={skip}")
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=AXE_JS.read_text(encoding="utf-8"))
    return page.evaluate(AXE_RUN_JS, [rules, include, skip or []])


#: Every figure a notebook cell drew (an image in a cell's output) as the page shows it: its
#: address, natural width (PNG pixels) and shown width (CSS pixels).
#: The shown width is the image's own (its content box: a padded frame around it is not the image);
#: ``link``: the address of the link around it, if any (its full-size image).
FIGURES_JS = """
() => Array.from(document.querySelectorAll('.cell_output img, .output img')).filter(
  (i) => i.getClientRects().length > 0).map((i) => {
    const s = getComputedStyle(i);
    const frame = ['paddingLeft', 'paddingRight', 'borderLeftWidth', 'borderRightWidth'].reduce(
      (sum, k) => sum + parseFloat(s[k] || 0), 0);
    const link = i.closest('a[href]');
    return {src: i.currentSrc || i.src, natural: i.naturalWidth,
            shown: i.getBoundingClientRect().width - frame, link: link ? link.href : null,
            alt: (i.getAttribute('alt') || '').slice(0, 60)};
  })
"""


def figure_text_sizes(page: Any, site_root: Path, site_url: str) -> list[dict[str, Any]]:
    """Each figure of the open page with the size of its smallest text as shown, in CSS px.

    Shown size = (smallest text in the PNG, in PNG px, recorded by ``course_utils.plotting``) x
    (shown width / natural width): the browser draws the PNG scaled by that ratio.
    """
    out = []
    for fig in page.evaluate(FIGURES_JS):
        src = str(fig["src"])
        rel = src[len(site_url) :] if src.startswith(site_url) else None
        path = site_root / rel.split("?", 1)[0] if rel else None
        png_px = recorded_text_px(path) if path is not None and path.is_file() else None
        scale = fig["shown"] / fig["natural"] if fig["natural"] else 0.0
        out.append(
            {
                **fig,
                "file": path.name if path is not None else src,
                "png_px": png_px,
                "scale": round(scale, 3),
                "shown_px": None if png_px is None else round(png_px * scale, 2),
            }
        )
    return out


#: Walk the page with the Tab key from the top of the article; for each course widget, at which
#: Tab press its first control gets the focus, and how many links, buttons and scrollable code
#: blocks (the tab stops a reader expects) stand in the article before that control. The caller
#: presses the keys.
TAB_START_JS = """
() => {
  const article = document.querySelector('article') || document.querySelector('main');
  const start = document.createElement('span');
  start.id = 'cu-tab-start';
  start.tabIndex = -1;
  article.prepend(start);
  start.focus();
  const shown = (e) => e.getClientRects().length > 0;
  // Links, buttons, form controls, and the code blocks the theme makes tab stops so that a
  // keyboard can scroll them (pre[tabindex="0"]), and likewise a formula too wide for its column
  // (scrollable_math.js makes it a stop, as axe's scrollable-region-focusable asks): the
  // stops a reader expects. Formulas that fit are not stops.
  const expected = 'a[href], button, summary, input, select, textarea, pre[tabindex="0"], ' +
    'mjx-container[display="true"][tabindex="0"], mjx-container.cu-math-scroll[tabindex="0"]';
  const before = (a, b) => Boolean(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
  const stops = Array.from(article.querySelectorAll(expected)).filter(shown);
  return Array.from(document.querySelectorAll('.cu-widget')).map((w, i) => {
    const first = Array.from(w.querySelectorAll('input, select, button, textarea')).find(shown);
    if (!first) return {widget: i, cls: w.className, first: null, links_before: null};
    first.dataset.cuTabTarget = String(i);
    return {widget: i, cls: Array.from(w.classList).find((c) => c !== 'cu-widget') || '',
            first: first.tagName.toLowerCase(),
            links_before: stops.filter(
              (s) => s !== first && before(s, first) && !w.contains(s)).length};
  });
}
"""

#: What has the focus now: a widget's first control (its index), and whether it is a formula that
#: should not be a stop (one that scrolls sideways is a stop on purpose, for the keyboard).
TAB_FOCUS_JS = """
() => {
  const e = document.activeElement;
  if (!e || e === document.body) return {target: null, formula: false, tag: null};
  const math = e.closest('mjx-container');
  const scrolls = Boolean(math) && (math.getAttribute('display') === 'true' ||
    math.classList.contains('cu-math-scroll')) && math.scrollWidth > math.clientWidth + 1;
  return {target: e.dataset ? (e.dataset.cuTabTarget ?? null) : null,
          formula: Boolean(math) && !scrolls, tag: e.tagName.toLowerCase()};
}
"""


#: Records, at each focus change, what ``TAB_FOCUS_JS`` says: one entry a Tab press, read in
#: batches (one round trip to the page for many presses instead of one a press).
TAB_LOG_JS = (
    "() => { window.__cuTabLog = []; document.addEventListener('focusin', () => "
    "window.__cuTabLog.push((" + TAB_FOCUS_JS.strip() + ")()), true); }"
)


def tab_stops_to_widgets(page: Any, most: int = 600, batch: int = 16) -> list[dict[str, Any]]:
    """Press Tab from the top of the article until every widget's first control had the focus.

    Returns one row a widget: ``tabs`` (the Tab press that reached its first control, ``None`` if
    ``most`` presses did not), ``links_before`` (links, buttons, form controls and scrollable code
    blocks in the article before it) and ``formulas`` (tab stops on formulas met on the way).
    Each press moves the focus once; a ``focusin`` listener logs where it went, read every
    ``batch`` presses.
    """
    widgets = page.evaluate(TAB_START_JS)
    page.evaluate(TAB_LOG_JS)
    waiting = {str(w["widget"]) for w in widgets if w["first"]}
    reached: dict[str, tuple[int, int]] = {}
    formulas = 0
    pressed = 0
    while waiting and pressed < most:
        for _ in range(min(batch, most - pressed)):
            page.keyboard.press("Tab")
        pressed += min(batch, most - pressed)
        log = page.evaluate("() => window.__cuTabLog")
        formulas = 0
        for n, focus in enumerate(log[:pressed], start=1):
            formulas += bool(focus["formula"])
            target = focus["target"]
            if target in waiting:
                reached[target] = (n, formulas)
                waiting.discard(target)
    for w in widgets:
        n, f = reached.get(str(w["widget"]), (None, formulas))
        w["tabs"], w["formulas"] = n, f
    return widgets


#: WCAG's relative luminance of an sRGB colour ``[r, g, b]`` (0-255), shared by the checks below.
_LUMINANCE_JS = """  const lin = (v) => {
    v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
  };
  const lum = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);"""

#: ``parse`` a CSS colour to [r, g, b, alpha]; ``over``: a colour laid over another; ``background``:
#: the colour an element is shown on (its own background over its ancestors', white at the root).
_BACKGROUND_JS = """  const parse = (c) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(c || '');
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, alpha, under) => [0, 1, 2].map((i) => top[i] * alpha + under[i] * (1 - alpha));
  const background = (el) => {
    const layers = [];
    for (let n = el; n; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let colour = [255, 255, 255];
    for (const c of layers.reverse()) colour = over(c, c[3], colour);
    return colour;
  };"""

#: The SVG text of every course widget whose colour stands out too little from what is drawn under
#: it (axe does not check SVG text): ``[{widget, text, ratio, fg, bg}]`` for each text whose WCAG
#: contrast ratio is under ``minRatio``. What lies under a text is the last filled shape painted
#: before it whose fill holds the text's centre (``isPointInFill``), over the card's background;
#: opacities blend; a text with a halo (a stroke painted under it) stands on the halo's colour.
#: Hidden and empty texts are skipped.
SVG_TEXT_CONTRAST_JS = """
(minRatio) => {
/*LUMINANCE*/
/*BACKGROUND*/
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const alphaOf = (el, s) => Number(s.fillOpacity) * Number(s.opacity);
  const bad = [];
  for (const text of document.querySelectorAll('.cu-widget svg text')) {
    const label = text.textContent.trim();
    const s = getComputedStyle(text);
    const box = text.getBoundingClientRect();
    if (!label || s.visibility === 'hidden' || s.display === 'none' || !box.width) continue;
    const fg = parse(s.fill);
    if (!fg) continue;
    const svg = text.ownerSVGElement;
    let under = background(svg);
    const cx = box.left + box.width / 2, cy = box.top + box.height / 2;
    for (const shape of svg.querySelectorAll('rect, circle, ellipse, path, polygon')) {
      if (!(shape.compareDocumentPosition(text) & Node.DOCUMENT_POSITION_FOLLOWING)) continue;
      const ss = getComputedStyle(shape);
      const fill = parse(ss.fill);
      if (!fill || ss.visibility === 'hidden' || ss.display === 'none') continue;
      const ctm = shape.getScreenCTM();
      if (!ctm) continue;
      const pt = new DOMPoint(cx, cy).matrixTransform(ctm.inverse());
      if (shape.isPointInFill(pt)) under = over(fill, fill[3] * alphaOf(shape, ss), under);
    }
    // A halo (stroke painted under the glyphs, 2 px or more) is what the glyphs stand on.
    const halo = parse(s.stroke);
    if (halo && s.paintOrder.startsWith('stroke') && parseFloat(s.strokeWidth) >= 2) {
      under = over(halo, halo[3] * Number(s.strokeOpacity), under);
    }
    const colour = over(fg, fg[3] * alphaOf(text, s), under);
    const r = ratio(colour, under);
    if (r < minRatio) {
      const widget = text.closest('.cu-widget');
      bad.push({
        widget: Array.from(widget.classList).find((c) => c !== 'cu-widget') || '',
        text: label.slice(0, 40), ratio: Math.round(r * 100) / 100,
        fg: colour.map(Math.round), bg: under.map(Math.round),
      });
    }
  }
  return bad;
}
""".replace("/*LUMINANCE*/", _LUMINANCE_JS).replace("/*BACKGROUND*/", _BACKGROUND_JS)


#: Most relative luminance of a background in dark mode (the theme's page, #14181e, is 0.009; the
#: light panel it paints outputs with, #ced6dd, 0.66).
DARK_MAX_LUMINANCE = 0.1
#: Least WCAG contrast of a widget's SVG text with what is drawn under it: 4.5, normal text's (the
#: labels are 11-14 px, none is "large text").
SVG_TEXT_MIN_CONTRAST = 4.5

#: In dark mode, what is painted light on the dark page: ``[{what, bg}]`` for each widget area,
#: course widget card and HTML output (a checker's feedback) whose background, as shown (its own
#: colour over its ancestors'), has a relative luminance over ``maxLum``; each masked cell of the
#: sparse-pattern widget likewise; and each figure the theme dims (a CSS filter) or frames in a
#: padded panel of another colour. The theme paints outputs light for outputs drawn for a white
#: page, and dims images; ours follow the theme, and a figure drawn on white is shown as drawn.
LIGHT_BOXES_JS = """
(maxLum) => {
/*LUMINANCE*/
/*BACKGROUND*/
  const out = [];
  const kinds = [['.cell_output .widget-subarea', 'widget area'], ['.cu-widget', 'widget card'],
                 ['.cell_output .text_html', 'HTML output (checker)']];
  for (const [selector, what] of kinds) {
    for (const box of document.querySelectorAll(selector)) {
      if (!box.getClientRects().length) continue;
      const bg = background(box).map(Math.round);
      if (lum(bg) > maxLum) out.push({what, bg});
    }
  }
  for (const cell of document.querySelectorAll('.cu-sparse .cu-sparse-off')) {
    const fill = parse(getComputedStyle(cell).fill);
    if (fill && lum(fill) > maxLum) {
      out.push({what: 'sparse masked cell', bg: fill.slice(0, 3)});
      break;
    }
  }
  for (const img of document.querySelectorAll('.cell_output img')) {
    const s = getComputedStyle(img);
    if (s.filter !== 'none') out.push({what: 'figure dimmed (' + s.filter + ')', bg: []});
    const bg = parse(s.backgroundColor);
    if (parseFloat(s.paddingLeft) > 0 && bg && bg[3] > 0)
      out.push({what: 'figure framed by a panel', bg: bg.slice(0, 3)});
  }
  return out;
}
""".replace("/*LUMINANCE*/", _LUMINANCE_JS).replace("/*BACKGROUND*/", _BACKGROUND_JS)


# ---- Readable text: every widget and figure text at least MIN_TEXT_PX, at every viewport ----

#: The four ways the book is read, as the browser tests emulate them: name -> (CSS viewport, colour
#: mode, touch). A 1280x720 projector at 150 % zoom is a CSS viewport of 853x480.
VIEWPORTS: dict[str, tuple[tuple[int, int], str, bool]] = {
    "desktop": ((1280, 800), "light", False),
    "dark": ((1280, 800), "dark", False),
    "phone": ((390, 844), "light", True),
    "projector": ((853, 480), "light", False),
}
#: The device pixels per CSS pixel of each viewport (1 if not named): a phone's screen is dense
#: (3), a projector at 150 % zoom draws each CSS pixel with 1.5 device pixels. Text sizes in CSS
#: px do not depend on it, but rounding, image choice and layout snapping can.
DEVICE_SCALE: dict[str, float] = {"phone": 3, "projector": 1.5}


def open_in_viewport(browser: Any, site_url: str, rel: str, viewport: str) -> tuple[Any, Any]:
    """A new context and page on ``site_url + rel`` in one of :data:`VIEWPORTS` (size, colour
    mode, touch; its :data:`DEVICE_SCALE`), off-site requests blocked, once every widget view is
    drawn. Close the context."""
    (width, height), mode, touch = VIEWPORTS[viewport]
    context = browser.new_context(
        viewport={"width": width, "height": height},
        device_scale_factor=DEVICE_SCALE.get(viewport, 1),
        has_touch=touch,
        is_mobile=touch,
    )
    context.add_init_script(mode_init_script(mode))
    block_outside(context, (site_url,), [])
    page = context.new_page()
    page.goto(site_url + rel, wait_until="load")
    page.evaluate("() => window.courseWidgetLoader ? window.courseWidgetLoader.ready : null")
    wait_for_widgets(page, 30_000)
    return context, page


#: Every visible text of every course widget with its size as drawn, in CSS px:
#: ``[{widget, index, n, smallest: {text, px, kind}, small: [{text, px, kind}]}]`` where ``small``
#: lists the texts under ``minPx``. An SVG text's size is its font size times the scale its SVG is
#: drawn at (the screen matrix of the text: viewBox scale and transforms; sqrt of its determinant,
#: so a rotated label counts too); an HTML text's is its computed font size; a text box or menu,
#: its own. Empty, hidden and visually hidden (screen-reader only) texts are skipped.
WIDGET_TEXT_SIZES_JS = """
(minPx) => {
  const shown = (el) => {
    const s = getComputedStyle(el);
    return s.visibility !== 'hidden' && s.display !== 'none' && Number(s.opacity) > 0 &&
      el.getClientRects().length > 0;
  };
  const hiddenForEyes = '.cu-description, .cu-sr-only, option, title, style, script';
  return Array.from(document.querySelectorAll('.cu-widget')).map((w, index) => {
    const texts = [];
    for (const t of w.querySelectorAll('svg text')) {
      const label = t.textContent.trim();
      if (!label || !shown(t) || !t.getBoundingClientRect().width) continue;
      const m = t.getScreenCTM();
      if (!m) continue;
      const scale = Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
      texts.push({kind: 'svg', text: label, px: parseFloat(getComputedStyle(t).fontSize) * scale});
    }
    const walker = document.createTreeWalker(w, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const label = n.nodeValue.trim();
      const el = n.parentElement;
      if (!label || !el || el.closest('svg') || el.closest(hiddenForEyes) || !shown(el)) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      const r = range.getBoundingClientRect();
      if (r.width < 2 || r.height < 2) continue;
      texts.push({kind: 'html', text: label, px: parseFloat(getComputedStyle(el).fontSize)});
    }
    for (const c of w.querySelectorAll('select, input[type=text], textarea')) {
      if (!shown(c)) continue;
      const label = c.tagName === 'SELECT' ? (c.selectedOptions[0] || {}).text || '' : c.value ||
        c.placeholder || '(text box)';
      texts.push({kind: c.tagName.toLowerCase(), text: label.trim(),
                  px: parseFloat(getComputedStyle(c).fontSize)});
    }
    for (const t of texts) { t.px = Math.round(t.px * 100) / 100; t.text = t.text.slice(0, 40); }
    texts.sort((a, b) => a.px - b.px);
    return {widget: Array.from(w.classList).find((c) => c !== 'cu-widget') || '', index,
            n: texts.length, smallest: texts[0] || null,
            small: texts.filter((t) => t.px < minPx)};
  });
}
"""


def widget_text_problems(page: Any, where: str, min_px: float) -> list[str]:
    """Every course widget text of ``page`` drawn under ``min_px`` CSS px
    (:data:`WIDGET_TEXT_SIZES_JS`), named by widget, text and size; ``where`` leads each line."""
    problems = []
    for w in page.evaluate(WIDGET_TEXT_SIZES_JS, min_px):
        small = w["small"]
        if small:
            shown = ", ".join(f"{t['text']!r} {t['px']} px" for t in small[:4])
            problems.append(
                f"{where}: {w['widget']} (widget {w['index']}) has {len(small)} of {w['n']} "
                f"texts under {min_px} px: {shown}"
            )
    return problems


#: Each course widget's SVG text that runs past its drawing's viewBox (more than 1 unit), where the
#: SVG clips it: ``[{widget, text, over}]``. Text under a ``transform`` is left out (its box is in
#: other units); hidden text too.
SVG_TEXT_OVERFLOW_JS = """() => {
  const out = [];
  for (const svg of document.querySelectorAll('.cu-widget svg[viewBox]')) {
    const vb = svg.viewBox.baseVal;
    if (!vb || !vb.width) continue;
    const widget = svg.closest('.cu-widget');
    for (const t of svg.querySelectorAll('text')) {
      if (!t.getClientRects().length) continue;
      let el = t, moved = false;
      while (el && el !== svg) {
        if (el.getAttribute && el.getAttribute('transform')) moved = true;
        el = el.parentNode;
      }
      if (moved) continue;
      const b = t.getBBox();
      const over = Math.max(b.x + b.width - (vb.x + vb.width), vb.x - b.x,
                            b.y + b.height - (vb.y + vb.height), vb.y - b.y);
      if (over > 1) {
        const text = t.textContent.slice(0, 40);
        out.push({ widget: widget.className, text, over: Math.round(over) });
      }
    }
  }
  return out;
}"""


def svg_text_overflow_problems(page: Any, where: str) -> list[str]:
    """Every course widget text of ``page`` that its SVG clips (:data:`SVG_TEXT_OVERFLOW_JS`)."""
    return [
        f"{where}: {o['widget']}: {o['text']!r} runs {o['over']} units past the drawing's edge"
        for o in page.evaluate(SVG_TEXT_OVERFLOW_JS)
    ]


#: Switch the theme's colour mode (a data attribute on <html>; CSS variables do the rest) and finish
#: the theme's colour transitions at once, so that what is read next has its final colours.
SWITCH_THEME_JS = """(mode) => {
  document.documentElement.dataset.theme = mode;
  for (const a of document.getAnimations()) a.finish();
}"""


# ---- What a keyboard and a screen reader meet: scrolling drawings, figure links, dark outputs ----

#: Each course widget's drawing stage that scrolls (wider or taller than its box) but is not a named
#: Tab stop (``tabindex="0"``, ``role="region"``, an ``aria-label``, ``aria-describedby`` naming the
#: shown hint), and each that does not scroll but is still a Tab stop or a region:
#: ``[{widget, problem}]``. A keyboard can scroll only what it can focus, and a screen reader says
#: what it focused only if it has a role and a name.
SCROLL_REGIONS_JS = """
() => {
  const out = [];
  for (const stage of document.querySelectorAll('.cu-widget .cu-stage')) {
    if (!stage.getClientRects().length) continue;
    const widget = Array.from(stage.closest('.cu-widget').classList).find(
      (c) => c !== 'cu-widget') || '';
    const scrolls = stage.scrollWidth > stage.clientWidth + 1 ||
      stage.scrollHeight > stage.clientHeight + 1;
    const a = (name) => stage.getAttribute(name);
    if (scrolls) {
      const hint = a('aria-describedby') && document.getElementById(a('aria-describedby'));
      const missing = [];
      if (stage.tabIndex !== 0 || a('tabindex') !== '0') missing.push('tabindex="0"');
      if (a('role') !== 'region') missing.push('role="region"');
      if (!(a('aria-label') || '').trim()) missing.push('aria-label');
      if (!hint || hint.hidden || !hint.textContent.trim()) missing.push('aria-describedby (hint)');
      if (missing.length) out.push({widget, problem: 'scrolls without ' + missing.join(', ')});
    } else if (a('tabindex') !== null || a('role') !== null) {
      out.push({widget, problem: 'does not scroll but is a Tab stop or a region'});
    }
  }
  return out;
}
"""


def scroll_region_problems(page: Any, where: str) -> list[str]:
    """:data:`SCROLL_REGIONS_JS`'s findings, one line each, ``where`` leading."""
    return [
        f"{where}: {p['widget']} drawing {p['problem']}" for p in page.evaluate(SCROLL_REGIONS_JS)
    ]


def accessible_nodes(page: Any, selector: str) -> list[dict[str, str]]:
    """Chromium's accessibility tree for each element matching ``selector``: ``[{role, name,
    description}]``, as a screen reader gets them (computed by the browser, not by us: the DevTools
    protocol's ``Accessibility.getPartialAXTree``)."""
    cdp = page.context.new_cdp_session(page)
    try:
        root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        ids = cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": selector})["nodeIds"]
        out = []
        for node_id in ids:
            backend = cdp.send("DOM.describeNode", {"nodeId": node_id})["node"]["backendNodeId"]
            tree = cdp.send(
                "Accessibility.getPartialAXTree", {"nodeId": node_id, "fetchRelatives": False}
            )["nodes"]
            node = next(n for n in tree if n.get("backendDOMNodeId") == backend)
            out.append(
                {
                    key: str((node.get(key) or {}).get("value", ""))
                    for key in ("role", "name", "description")
                }
            )
        return out
    finally:
        cdp.detach()


#: Put the keyboard focus on the Tab stop just before the ``index``-th element matching ``selector``
#: (document order, visible, tabIndex >= 0), so that one Tab press should land on that element.
#: Returns false if there is none before it.
FOCUS_BEFORE_JS = """
([selector, index]) => {
  const target = document.querySelectorAll(selector)[index];
  const stops = Array.from(document.querySelectorAll(
    'a[href], button, input, select, textarea, summary, [tabindex]')).filter((e) =>
      e.tabIndex >= 0 && !e.disabled && e.getClientRects().length &&
      getComputedStyle(e).visibility !== 'hidden');
  const k = stops.indexOf(target);
  if (k <= 0) return false;
  stops[k - 1].focus();
  return document.activeElement === stops[k - 1];
}
"""

#: The focused element's focus ring: ``{width, style, ratio}``, ``ratio`` the WCAG contrast of the
#: outline's colour with what the element stands on (WCAG 2.4.11 asks 3:1 of a focus indicator).
FOCUS_RING_JS = """
() => {
/*LUMINANCE*/
/*BACKGROUND*/
  const el = document.activeElement;
  const s = getComputedStyle(el);
  const ring = parse(s.outlineColor) || [0, 0, 0, 0];
  const under = background(el.parentElement);
  const [x, y] = [lum(over(ring, ring[3], under)), lum(under)].sort((p, q) => q - p);
  return {width: parseFloat(s.outlineWidth), style: s.outlineStyle,
          ratio: Math.round((x + 0.05) / (y + 0.05) * 100) / 100};
}
""".replace("/*LUMINANCE*/", _LUMINANCE_JS).replace("/*BACKGROUND*/", _BACKGROUND_JS)

#: Every visible text of the cells' outputs (a checker's feedback, printed text, HTML tables) whose
#: WCAG contrast with its background (as shown: its own over its ancestors') is under ``minRatio``:
#: ``{checked, bad: [{text, ratio, fg, bg}]}``; ``checked``: how many texts were read.
OUTPUT_TEXT_CONTRAST_JS = """
(minRatio) => {
/*LUMINANCE*/
/*BACKGROUND*/
  const bad = [];
  let checked = 0;
  const outputs = document.querySelectorAll(
    '.cell_output .text_html, .cell_output .output.text_plain, .cell_output .output.stream');
  for (const box of outputs) {
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!n.nodeValue.trim() || !el || !el.getClientRects().length) continue;
      const fg = parse(getComputedStyle(el).color);
      if (!fg) continue;
      const bg = background(el);
      const shown = over(fg, fg[3], bg);
      const [x, y] = [lum(shown), lum(bg)].sort((p, q) => q - p);
      const ratio = (x + 0.05) / (y + 0.05);
      checked += 1;
      if (ratio < minRatio) bad.push({text: n.nodeValue.trim().slice(0, 50),
        ratio: Math.round(ratio * 100) / 100, fg: shown.map(Math.round), bg: bg.map(Math.round)});
    }
  }
  return {checked, bad};
}
""".replace("/*LUMINANCE*/", _LUMINANCE_JS).replace("/*BACKGROUND*/", _BACKGROUND_JS)

#: The fills of chapter 9's sparse-pattern cells as drawn: ``{on, off, new}`` (``[r, g, b]`` or
#: null), read from the first cell of each kind.
SPARSE_FILLS_JS = """
() => {
/*BACKGROUND*/
  const fill = (cls) => {
    const cell = document.querySelector('.cu-sparse svg .' + cls);
    return cell ? parse(getComputedStyle(cell).fill).slice(0, 3) : null;
  };
  return {on: fill('cu-sparse-on'), off: fill('cu-sparse-off'), new: fill('cu-sparse-new')};
}
""".replace("/*BACKGROUND*/", _BACKGROUND_JS)


def contrast(a: list[float], b: list[float]) -> float:
    """WCAG's contrast ratio of two sRGB colours ``[r, g, b]`` (0-255).

    >>> round(contrast([0, 0, 0], [255, 255, 255]), 1)
    21.0
    >>> round(contrast([0, 114, 178], [41, 49, 61]), 2)  # Okabe-Ito blue on a dark surface
    2.53
    """

    def lum(c: list[float]) -> float:
        lin = [
            v / 255 / 12.92 if v / 255 <= 0.03928 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in c
        ]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    high, low = sorted((lum(a), lum(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


#: A page that drives SmolLM2's browser worker (``_static/smollm2/smollm2_worker.mjs``) directly,
#: without the widget: ``await window.smollm2(request)`` resolves to the run's messages (prompt,
#: tokens, done). Served beside a folder ``smollm2/`` written by
#: :func:`course_utils.pretrained.smollm2_web.write_browser_files`; used by
#: ``tests/browser/test_browser_smollm2.py`` and ``benchmarks/bench_browser_smollm2.py``.
SMOLLM2_HARNESS_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>SmolLM2 worker</title>
<link rel="icon" href="data:,"></head><body><p>SmolLM2 worker harness</p>
<script type="module">
const worker = new Worker("smollm2/smollm2_worker.mjs", { type: "module" });
let waiting = null;
let runs = new Map();
window.smollm2Ready = new Promise((resolve, reject) => { waiting = { resolve, reject }; });
worker.onmessage = (ev) => {
  const m = ev.data;
  m.at = performance.now();
  if (m.type === "ready") return waiting.resolve(m);
  if (m.type === "error" && m.id === undefined) return waiting.reject(new Error(m.message));
  const run = runs.get(m.id);
  if (!run) return;
  if (m.weights) m.weights = run.keepWeights(m.index) ? Array.from(m.weights) : null;
  run.messages.push(m);
  if (["done", "too-long", "error"].includes(m.type)) run.resolve(run.messages);
};
worker.postMessage({ type: "load" });
window.smollm2 = (request, keepSteps = []) => new Promise((resolve) => {
  const keep = new Set(keepSteps);
  runs.set(request.id, { messages: [{ type: "asked", at: performance.now() }], resolve,
    keepWeights: (i) => keep.has(i) });
  worker.postMessage({ type: "generate", ...request });
});
</script></body></html>
"""
