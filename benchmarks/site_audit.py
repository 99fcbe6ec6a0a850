"""Audit every page of the built site: accessibility, phones, projectors, dark mode.

Usage: python benchmarks/site_audit.py [--site _build/html] [--json out.json]

For every page, in headless Chromium with every non-local request blocked:

* axe-core (vendored for tests, ``tests/browser/vendor/axe-core``) in light and in dark mode:
  violations counted by impact (critical / serious / moderate / minor) and by rule;
* the page at 390 px wide (a phone): its scroll width (wider than 390 means sideways scrolling)
  and the elements that stick out furthest;
* every course widget on a 1280x720 projector at 150% and 200% zoom (a CSS viewport of 853x480
  and 640x360): its height, and whether it fits on one screen.

The same checks, as pass/fail goals, are tests/browser/test_site_audit.py; this script prints the
numbers (before/after figures for a change).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))  # course_site
from course_site.browser import (
    WIDGET_SIZES_JS,
    WIDTH_JS,
    block_outside,
    launch,
    mode_init_script,
    run_axe,
    serve,
    site_dir,
    site_pages,
)

#: (name, CSS viewport) of a 1280x720 screen at a browser zoom.
PROJECTOR = [("150%", (853, 480)), ("200%", (640, 360))]
PHONE = (390, 844)


def audit_page(browser: Any, base: str, rel: str) -> dict[str, Any]:
    out: dict[str, Any] = {"page": rel}
    for mode in ("light", "dark"):
        blocked: list[str] = []
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        block_outside(context, (base,), blocked)
        context.add_init_script(mode_init_script(mode))
        page = context.new_page()
        page.goto(base + rel, wait_until="load")
        page.evaluate("() => window.courseWidgetLoader ? window.courseWidgetLoader.ready : null")
        with contextlib.suppress(Exception):  # a settle hint only: some pages never go idle
            page.wait_for_load_state("networkidle", timeout=5_000)
        page.wait_for_timeout(300)
        out[f"theme_{mode}"] = page.evaluate("() => document.documentElement.dataset.theme")
        out[f"axe_{mode}"] = run_axe(page)
        if mode == "light":
            page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
            page.wait_for_timeout(200)
            out["phone"] = page.evaluate(WIDTH_JS)
            for name, (w, h) in PROJECTOR:
                page.set_viewport_size({"width": w, "height": h})
                page.wait_for_timeout(200)
                out[f"projector_{name}"] = {"height": h, "widgets": page.evaluate(WIDGET_SIZES_JS)}
        context.close()
    return out


def impacts(violations: list[dict[str, Any]]) -> dict[str, int]:
    count = collections.Counter(v["impact"] for v in violations)
    return {k: count.get(k, 0) for k in ("critical", "serious", "moderate", "minor")}


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=site_dir())
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    # A bare redirect (index.html -> the first page) is audited as that page.
    pages = [
        rel
        for rel in site_pages(args.site)
        if 'http-equiv="Refresh"' not in (args.site / rel).read_text(errors="replace")
    ]
    start = time.perf_counter()
    with serve(args.site) as base, sync_playwright() as p:
        browser = launch(p)
        results = [audit_page(browser, base, rel) for rel in pages]
        browser.close()
    print(f"site: {args.site}  ({len(pages)} pages; {time.perf_counter() - start:.1f} s)")
    print("\naxe-core violations (rules, by impact: critical/serious/moderate/minor)")
    print(f"{'page':40} {'light':>12} {'dark':>12}  serious+critical rules")
    for r in results:
        cells = []
        for mode in ("light", "dark"):
            i = impacts(r[f"axe_{mode}"])
            cells.append(f"{i['critical']}/{i['serious']}/{i['moderate']}/{i['minor']}")
        rules = sorted(
            {
                v["id"]
                for m in ("light", "dark")
                for v in r[f"axe_{m}"]
                if v["impact"] in ("critical", "serious")
            }
        )
        print(f"{r['page'][:40]:40} {cells[0]:>12} {cells[1]:>12}  {', '.join(rules)}")
    print(f"\nphone: page scroll width at {PHONE[0]} px (> {PHONE[0]}: sideways scrolling)")
    for r in results:
        ph = r["phone"]
        worst = "; ".join(f"{x} {w}" for x, w in ph["worst"][:2])
        print(f"{r['page'][:40]:40} {ph['scroll']:>5}  {worst}")
    widest = max(results, key=lambda r: r["phone"]["scroll"])
    print(f"widest page at {PHONE[0]} px: {widest['page']} {widest['phone']['scroll']} px")
    print("\nprojector 1280x720: course widgets taller than the screen")
    for name, (_w, h) in PROJECTOR:
        rows = [
            (r["page"], w)
            for r in results
            for w in r[f"projector_{name}"]["widgets"]
            if w["height"] > h
        ]
        n_all = sum(len(r[f"projector_{name}"]["widgets"]) for r in results)
        print(f"  at {name} (screen {h} CSS px high): {len(rows)} of {n_all} widgets too tall")
        for page, w in rows:
            print(f"    {page[:40]:40} {w['cls']:24} {w['height']} px")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
