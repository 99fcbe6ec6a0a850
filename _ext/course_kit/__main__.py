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
    parser.add_argument(
        "--jobs", type=int, default=2, help="pdf: books printed at once (default 2: both editions)"
    )
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
        from concurrent.futures import ProcessPoolExecutor

        from course_kit.pdf import PDF_NAME, PDF_NAME_ZH, build_pdf

        books = [(args.site, "en", PDF_NAME)]
        zh_site = args.site / "zh"  # the 中文 edition (course_site.zh_edition), when built
        if (zh_site / "intro.html").is_file():
            books.append((zh_site, "zh-CN", PDF_NAME_ZH))
        # The two books at once, one process (one Chromium) each: printing a book is mostly one
        # renderer busy with MathJax, layout and printing, so two books use two cores.
        with ProcessPoolExecutor(max_workers=max(1, min(args.jobs, len(books)))) as pool:
            futures = [
                pool.submit(build_pdf, REPO, site, args.out, language=lang, name=name)
                for site, lang, name in books
            ]
            for future in futures:
                pdf = future.result()
                print(f"{pdf}: {pdf.stat().st_size / 1e6:.1f} MB")
    print(f"done in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
