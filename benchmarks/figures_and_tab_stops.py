"""Figure text sizes and Tab stops before widgets, on every chapter of the built site.

Usage: python benchmarks/figures_and_tab_stops.py [--site _build/html] [--json out.json]

At a 1280 px desktop, 100% zoom, in headless Chromium:

* every figure a notebook drew: its natural and shown width, the smallest text its PNG records
  (``course_utils.plotting`` writes it; "-" for a PNG drawn before it did) and that text's size
  as shown (recorded size x shown width / natural width);
* every course widget: the Tab press, counted from the top of the article, that reaches its first
  control, the links/buttons before it in the article, and the formulas met on the way.

The goals (text >= 11 px; Tab stops <= links before + a handful) are tests in
``tests/browser/test_site_audit.py``; this script prints the numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))  # course_site
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # course_utils
from course_site.browser import (
    block_outside,
    figure_text_sizes,
    launch,
    serve,
    site_dir,
    site_pages,
    tab_stops_to_widgets,
)


def measure(browser: Any, site: Path, base: str, rel: str) -> dict[str, Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    block_outside(context, (base,), [])
    page = context.new_page()
    page.goto(base + rel, wait_until="load")
    page.evaluate("() => window.courseWidgetLoader ? window.courseWidgetLoader.ready : null")
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    out = {
        "page": rel,
        "figures": figure_text_sizes(page, site, base),
        "widgets": tab_stops_to_widgets(page),
    }
    context.close()
    return out


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=site_dir())
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    pages = [p for p in site_pages(args.site) if p.startswith(("chapters/", "appendix/"))]
    with serve(args.site) as base, sync_playwright() as p:
        browser = launch(p)
        results = [measure(browser, args.site, base, rel) for rel in pages]
        browser.close()
    print("figures at 1280 px: natural -> shown width, smallest text (PNG px -> shown px)")
    shown = []
    for r in results:
        for f in r["figures"]:
            png = "-" if f["png_px"] is None else f"{f['png_px']:.2f}"
            px = "-" if f["shown_px"] is None else f"{f['shown_px']:.2f}"
            shown.append(f["shown_px"])
            print(
                f"{r['page'][9:40]:32} {f['file'][:12]} {f['natural']:>5} -> {f['shown']:>4.0f}"
                f"  {png:>6} -> {px:>6}"
            )
    known = [s for s in shown if s is not None]
    if known:
        small = sum(s < 11 for s in known)
        print(
            f"{len(shown)} figures, {len(known)} measured: smallest {min(known):.2f} px, "
            f"{small} under 11 px"
        )
    print("\nTab from the top of the article to each widget's first control")
    print(f"{'page':40} {'widget':24} {'tabs':>5} {'links before':>13} {'formulas':>9}")
    for r in results:
        for w in r["widgets"]:
            print(
                f"{r['page'][:40]:40} {w['cls'][:24]:24} {w['tabs']!s:>5} "
                f"{w['links_before']!s:>13} {w['formulas']:>9}"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
