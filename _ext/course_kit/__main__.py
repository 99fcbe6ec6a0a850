"""``python -m course_kit slides|pdf [--site _build/html] [--out _build/pdf]``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path.cwd()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_kit")
    parser.add_argument("what", choices=["slides", "pdf"])
    parser.add_argument("--site", type=Path, default=REPO / "_build" / "html")
    parser.add_argument("--out", type=Path, default=REPO / "_build" / "pdf")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if args.what == "slides":
        from course_kit import build_kit

        if not (args.site / "_static").is_dir():
            print(
                f"warning: {args.site}/_static is missing; run `make book` so the decks' "
                "scripts exist",
                file=sys.stderr,
            )
        report = build_kit(REPO, args.site)
        for d in report.decks:
            path = args.site / "slides" / f"{d.stem}.slides.html"
            print(
                f"{path}: {d.slides} slides, {d.notes} speaker notes, {d.widgets} widgets, "
                f"{path.stat().st_size / 1024:.0f} KiB"
            )
        print(f"{len(report.learner)} learner copies and {report.zip_path}")
    else:
        from course_kit.pdf import PDF_NAME_ZH, build_pdf

        pdf = build_pdf(REPO, args.site, args.out)
        print(f"{pdf}: {pdf.stat().st_size / 1e6:.1f} MB")
        zh_site = args.site / "zh"  # the 中文 edition (course_site.zh_edition), when built
        if (zh_site / "intro.html").is_file():
            pdf = build_pdf(REPO, zh_site, args.out, language="zh-CN", name=PDF_NAME_ZH)
            print(f"{pdf}: {pdf.stat().st_size / 1e6:.1f} MB")
    print(f"done in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
