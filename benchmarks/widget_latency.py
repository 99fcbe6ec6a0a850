"""Measure the live widgets on the built site: key-press-to-redraw latency, state size, page weight.

Usage: python benchmarks/widget_latency.py [--site _build/html] [--presses 40] [--json out.json]
       python benchmarks/widget_latency.py --pages '*09_sparse*' --no-test-page  # one chapter

* Latency: for every control of every course widget on every page (and on the test page that the
  browser tests build), press ArrowRight/ArrowLeft (ArrowDown/ArrowUp for selects) alternately in
  Chromium. In the page, ``performance.now()`` is read at the keydown (capture listener on the
  document), after the synchronous DOM update (first MutationObserver callback), and at the next
  ``requestAnimationFrame`` (the frame that paints the new drawing), and at the first task after
  that frame (a ``MessageChannel`` message posted from the frame's callback: it runs once the
  browser has done the frame's style, layout and paint). Reported: median and p90 of "key -> DOM
  updated", "key -> next frame" and "key -> painted". Goals (issue 39): chapter 9's sparse-pattern
  widget painted <= 50 ms after a key press, every other widget <= 60 ms (medians; the verdicts
  are printed, with the load average, and saved with ``--json``).
* State size per widget: JSON bytes of each anywidget model in the page's widget state, with and
  without its code (``_esm``/``_css``).
* Page weight: bytes of every same-origin response the page loads, raw and gzip-compressed
  (level 6), i.e. what a server with gzip on would send. Goal: a chapter page <= 1.5 MB gzipped.
* Widget start-up: milliseconds from DOMContentLoaded until every widget view of the page is
  drawn (a MutationObserver installed before any page script notes the moment), median over
  ``--loads`` fresh loads. Goal: <= 500 ms on a local server.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fnmatch
import gzip
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))  # course_site
from course_site.browser import (
    AT_END_JS,
    STARTUP_JS,
    XSS_PAGE,
    block_outside,
    launch,
    mode_init_script,
    press_key_for,
    serve,
    site_dir,
    site_pages,
    xss_page_html,
)

INSTRUMENT = """
window.__lat = [];
window.__t0 = null;
document.addEventListener('keydown', () => { window.__t0 = performance.now(); }, true);
new MutationObserver(() => {
  if (window.__t0 === null) return;
  const t0 = window.__t0;
  const t1 = performance.now();
  window.__t0 = null;
  requestAnimationFrame(() => {
    const t2 = performance.now();
    // The frame's callbacks run before its style, layout and paint; the first task after them
    // runs once the frame is painted.
    const channel = new MessageChannel();
    channel.port1.onmessage = () => window.__lat.push([t1 - t0, t2 - t0, performance.now() - t0]);
    channel.port2.postMessage(0);
  });
}).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
"""

STATE_SIZES = """
() => {
  const s = document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]');
  if (!s) return []; const state = JSON.parse(s.textContent).state;
  return Object.values(state).filter((m) => m.model_module === 'anywidget').map((m) => {
    const data = Object.assign({}, m.state); const full = JSON.stringify(m.state).length;
    delete data._esm; delete data._css; return {widget: m.state._anywidget_id, full, data:
    JSON.stringify(data).length};
  });
}
"""


#: Issue 39: key press -> painted, median per control: the sparse-pattern widget (chapter 9)
#: <= 50 ms, every other widget <= 60 ms.
PAINT_GOALS_MS = {"cu-sparse": 50.0, "": 60.0}


def paint_goals(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The slowest control's median "key -> painted" against each goal of ``PAINT_GOALS_MS``."""
    out = []
    for cls, goal in PAINT_GOALS_MS.items():
        medians = [
            c["paint_median_ms"]
            for r in results
            for c in r["controls"]
            if (c["widget"] == cls if cls else c["widget"] not in PAINT_GOALS_MS)
        ]
        if medians:
            name = f"{cls} (sparse patterns)" if cls else "every other widget"
            out.append({"widgets": name, "goal_ms": goal, "worst_median_ms": max(medians),
                        "n_controls": len(medians)})  # fmt: skip
    return out


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    for line in cpuinfo.read_text().splitlines() if cpuinfo.exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def pctl(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def startup_ms(browser: Any, base: str, rel: str, loads: int) -> dict[str, float] | None:
    """Median ms to every widget view drawn, over fresh loads (no cache).

    ``after_dcl``: from DOMContentLoaded (negative: drawn before it, as a deferred loader can);
    ``after_start``: from the start of the navigation.
    """
    times = []
    for _ in range(loads):
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        block_outside(context, (base,), [])
        context.add_init_script(mode_init_script("light"))
        page = context.new_page()
        page.goto(base + rel, wait_until="domcontentloaded")
        try:
            page.wait_for_function("() => window.__cuDrawnAt !== null", timeout=30_000)
            times.append(page.evaluate(STARTUP_JS))
        finally:
            context.close()
    if not times:
        return None
    return {k: statistics.median(t[k] for t in times) for k in ("after_dcl", "after_start")}


def measure_page(browser: Any, base: str, rel: str, presses: int) -> dict[str, Any]:
    blocked: list[str] = []
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    block_outside(context, (base,), blocked)
    bodies: dict[str, int] = {}
    gz: dict[str, int] = {}
    page = context.new_page()

    def on_response(resp: Any) -> None:
        if resp.url.startswith(base) and resp.status < 300:
            try:
                body = resp.body()
            except Exception:  # redirects and aborted loads have no body
                return
            bodies[resp.url] = len(body)
            gz[resp.url] = len(gzip.compress(body, 6))

    page.on("response", on_response)
    page.add_init_script(INSTRUMENT)
    page.goto(base + rel, wait_until="load")
    page.wait_for_timeout(300)
    n_views = page.evaluate(
        "() => document.querySelectorAll("
        "'script[type=\"application/vnd.jupyter.widget-view+json\"]').length"
    )
    if n_views:
        page.wait_for_function(
            f"() => document.querySelectorAll('.cu-widget').length >= {n_views}"
            " || document.querySelectorAll('.widget-subarea > *').length >= " + str(n_views),
            timeout=30_000,
        )
    # Let late requests finish (a settle hint only: some pages never go idle).
    with contextlib.suppress(Exception):  # Playwright's TimeoutError
        page.wait_for_load_state("networkidle", timeout=5_000)
    result: dict[str, Any] = {
        "page": rel,
        "bytes": sum(bodies.values()),
        "gzip_bytes": sum(gz.values()),
        "requests": len(bodies),
        "blocked": blocked,
        "state": page.evaluate(STATE_SIZES),
        "controls": [],
    }
    controls = page.evaluate(
        "() => Array.from(document.querySelectorAll('.cu-widget input[type=range], "
        ".cu-widget select')).map((c) => [c.id, c.tagName.toLowerCase(), "
        "c.closest('.cu-widget').className])"
    )
    for control_id, tag, cls in controls:
        page.focus(f"#{control_id}")
        # Forward then back, or back then forward for a control that starts at its end (the
        # forward key would not move it, and nothing would be redrawn).
        at_end = page.evaluate(AT_END_JS, control_id)
        keys = (press_key_for(tag, at_end), press_key_for(tag, not at_end))
        page.evaluate("() => { window.__lat = []; }")
        for i in range(presses):
            page.keyboard.press(keys[i % 2])
            page.wait_for_function(f"() => window.__lat.length >= {i + 1}", timeout=15_000)
        lat = page.evaluate("() => window.__lat")
        result["controls"].append(
            {
                "widget": cls.replace("cu-widget", "").strip(),
                "control": tag,
                "n": len(lat),
                "dom_median_ms": statistics.median(x[0] for x in lat),
                "frame_median_ms": statistics.median(x[1] for x in lat),
                "frame_p90_ms": pctl([x[1] for x in lat], 0.9),
                "paint_median_ms": statistics.median(x[2] for x in lat),
                "paint_p90_ms": pctl([x[2] for x in lat], 0.9),
            }
        )
    context.close()
    return result


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=site_dir())
    parser.add_argument("--presses", type=int, default=40)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--loads", type=int, default=5, help="fresh loads per widget page")
    parser.add_argument(
        "--no-test-page",
        action="store_true",
        help="skip the test page built from the current widgets (e.g. for an older build's site)",
    )
    parser.add_argument(
        "--pages", default=None, help="only the pages matching this glob, e.g. '*09_sparse*'"
    )
    args = parser.parse_args(argv)
    pages = site_pages(args.site)
    if args.pages:
        pages = [rel for rel in pages if fnmatch.fnmatch(rel, args.pages)]
    load_before = [round(x, 2) for x in os.getloadavg()]
    results = []
    start = time.perf_counter()
    extra = {f"/{XSS_PAGE}": xss_page_html().encode()}
    with serve(args.site, extra=extra) as base, sync_playwright() as p:
        browser = launch(p)
        for rel in pages if args.no_test_page else [*pages, XSS_PAGE]:
            result = measure_page(browser, base, rel, args.presses)
            if result["state"]:
                result["startup_ms"] = startup_ms(browser, base, rel, args.loads)
            results.append(result)
        browser.close()
    elapsed = time.perf_counter() - start

    print(f"site: {args.site}  ({len(pages)} pages + test page; {elapsed:.1f} s)")
    print("\nkey press -> redraw (Chromium headless, median over presses)")
    print(
        f"{'page':42} {'widget':24} {'control':8} {'n':>3} {'DOM ms':>7} {'frame ms':>9} {'p90':>6}"
        f" {'painted ms':>10} {'p90':>6}"
    )
    all_frames = []
    for r in results:
        for c in r["controls"]:
            all_frames.append(c["frame_median_ms"])
            print(
                f"{r['page'][:42]:42} {c['widget'][:24]:24} {c['control']:8} {c['n']:>3} "
                f"{c['dom_median_ms']:7.2f} {c['frame_median_ms']:9.2f} {c['frame_p90_ms']:6.2f}"
                f" {c['paint_median_ms']:10.2f} {c['paint_p90_ms']:6.2f}"
            )
    if all_frames:
        print(f"median over controls of the frame medians: {statistics.median(all_frames):.2f} ms")
    load_after = [round(x, 2) for x in os.getloadavg()]
    goals = paint_goals(results)
    print(f"\nkey press -> painted, goals (issue 39; load average {load_before} -> {load_after}):")
    for g in goals:
        verdict = "met" if g["worst_median_ms"] <= g["goal_ms"] else "NOT met"
        print(
            f"  {g['widgets']:34} <= {g['goal_ms']} ms: slowest control median "
            f"{g['worst_median_ms']:.1f} ms ({g['n_controls']} controls)  {verdict}"
        )
    print("\nwidget state per widget (JSON bytes)")
    for r in results:
        for s in r["state"]:
            print(
                f"{r['page'][:42]:42} {s['widget']:45} data {s['data']:>7} with code {s['full']:>7}"
            )
    print("\npage weight (page + everything it loads, same origin)")
    print(
        f"{'page':42} {'requests':>8} {'raw KB':>9} {'gzip KB':>9} "
        "widgets drawn (ms after DOMContentLoaded / after navigation start)"
    )
    for r in results:
        start = r.get("startup_ms")
        drawn = "" if not start else f"{start['after_dcl']:8.0f} / {start['after_start']:6.0f}"
        print(
            f"{r['page'][:42]:42} {r['requests']:>8} {r['bytes'] / 1024:9.1f} "
            f"{r['gzip_bytes'] / 1024:9.1f} {drawn}"
            + (f"  BLOCKED {r['blocked']}" if r["blocked"] else "")
        )
    heaviest = max(results, key=lambda r: r["gzip_bytes"])
    print(f"heaviest page: {heaviest['page']} {heaviest['gzip_bytes'] / 1e6:.2f} MB gzipped")
    starts = [r["startup_ms"] for r in results if r.get("startup_ms")]
    if starts:
        print(
            "slowest widget start-up: "
            f"{max(s['after_dcl'] for s in starts):.0f} ms after DOMContentLoaded, "
            f"{max(s['after_start'] for s in starts):.0f} ms after navigation start"
        )
    if args.json:
        machine = {"platform": platform.platform(), "cpus": os.cpu_count(), "cpu": _cpu_model()}
        run = {"machine": machine, "load_before": load_before, "load_after": load_after,
               "finished_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "site": str(args.site), "pages": args.pages, "goals": goals}  # fmt: skip
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"run": run, "pages": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
