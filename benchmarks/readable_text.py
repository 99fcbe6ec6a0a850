"""Smallest text of every widget and figure, per chapter and viewport, on the built site.

Usage: python benchmarks/readable_text.py [--site _build/html] [--only 06_] [--json out.json]

The four viewports of ``course_site.browser.VIEWPORTS`` (1280x800 desktop, the same in dark mode, a
390x844 touch phone, a 1280x720 projector at 150 % zoom), each on a fresh page in headless Chromium:
for each course widget its smallest text as drawn (``WIDGET_TEXT_SIZES_JS``: SVG font size x the
drawing's scale, HTML font size) and how many of its texts are under 11 px; for each figure its
smallest text as shown. The goal (no text under 11 px) is tested by
``tests/browser/test_site_audit.py`` (chapter pages) and ``tests/browser/test_readable_text.py`` (a
long typed sentence); this script prints the numbers (one row a widget: its smallest size at each
viewport).
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
    VIEWPORTS,
    WIDGET_TEXT_SIZES_JS,
    figure_text_sizes,
    launch,
    open_in_viewport,
    serve,
    site_dir,
    site_pages,
)
from course_utils.plotting import MIN_TEXT_PX


def measure(browser: Any, site: Path, base: str, rel: str, viewport: str) -> list[dict[str, Any]]:
    context, page = open_in_viewport(browser, base, rel, viewport)
    try:
        page.wait_for_timeout(200)  # the widgets refit their drawings in the next frames
        rows = [
            {
                "what": w["widget"],
                "px": w["smallest"]["px"] if w["smallest"] else None,
                "under": len(w["small"]),
                "n": w["n"],
            }
            for w in page.evaluate(WIDGET_TEXT_SIZES_JS, MIN_TEXT_PX)
        ]
        rows += [
            {
                "what": f"figure {f['file'][:10]}",
                "px": f["shown_px"],
                "under": int((f["shown_px"] or 0) < MIN_TEXT_PX),
                "n": 1,
            }
            for f in figure_text_sizes(page, site, base)
        ]
        return rows
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=site_dir())
    parser.add_argument("--only", default="", help="chapter pages whose path contains this")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    pages = [p for p in site_pages(args.site) if "chapters/" in p and args.only in p]
    table: dict[tuple[str, str, int], dict[str, Any]] = {}
    with serve(args.site) as base, sync_playwright() as pw:
        browser = launch(pw)
        for rel in pages:
            for viewport in VIEWPORTS:
                for i, row in enumerate(measure(browser, args.site, base, rel, viewport)):
                    entry = table.setdefault((rel, row["what"], i), {"page": rel, **row})
                    entry[viewport] = (row["px"], row["under"])
        browser.close()
    print(f"{'page':42} {'widget / figure':26}" + "".join(f"{v:>14}" for v in VIEWPORTS))
    for entry in table.values():
        cells = "".join(
            f"{'-' if entry.get(v, (None,))[0] is None else entry[v][0]:>9} ({entry[v][1]:>2})"
            if v in entry
            else f"{'':>14}"
            for v in VIEWPORTS
        )
        print(f"{entry['page']:42} {entry['what'][:26]:26}{cells}")
    print(f"(smallest text in CSS px; in brackets, how many texts are under {MIN_TEXT_PX} px)")
    if args.json:
        args.json.write_text(json.dumps(list(table.values()), indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
