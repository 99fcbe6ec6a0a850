"""``python -m course_kit slides|pdf [--site _build/html] [--out _build/pdf]``,
``python -m course_kit otter [--out _build/otter]`` (the exercises as otter-grader assignments) and
``python -m course_kit grade SUBMISSIONS [--gradebook PATH] [--lang en|zh]`` (``make grade``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path.cwd()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_kit")
    parser.add_argument("what", choices=["slides", "pdf", "otter", "grade"])
    parser.add_argument("submissions", nargs="?", type=Path, help="grade: a folder or a .zip")
    parser.add_argument("--site", type=Path, default=REPO / "_build" / "html")
    parser.add_argument("--out", type=Path, help="pdf: _build/pdf; otter: _build/otter")
    parser.add_argument(
        "--jobs",
        type=int,
        default=2,
        help="pdf: books printed at once (default 2: both editions); grade: worker processes",
    )
    parser.add_argument("--gradebook", type=Path, default=REPO / "_build" / "grades" / "grades.csv")
    parser.add_argument("--lang", default="en", help="grade: the feedback's language (en, zh)")
    parser.add_argument("--timeout", type=float, help="grade: seconds per exercise (default 60)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if args.what == "grade":
        return _grade(args, start)
    if args.what == "otter":
        from course_kit.otter_export import export

        folders = export(REPO, args.out or REPO / "_build" / "otter")
        print(f"{len(folders)} otter assignments in {folders[0].parent}")
    elif args.what == "slides":
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
            out = args.out or REPO / "_build" / "pdf"
            futures = [
                pool.submit(build_pdf, REPO, site, out, language=lang, name=name)
                for site, lang, name in books
            ]
            for future in futures:
                pdf = future.result()
                print(f"{pdf}: {pdf.stat().st_size / 1e6:.1f} MB")
    print(f"done in {time.perf_counter() - start:.1f} s")
    return 0


def _grade(args: argparse.Namespace, start: float) -> int:
    from course_kit.grading import EXERCISE_TIMEOUT, grade_folder, write_gradebook

    if args.submissions is None or not args.submissions.exists():
        print(
            f"grade: SUBMISSIONS must be a folder of notebooks or a .zip; got {args.submissions}",
            file=sys.stderr,
        )
        return 2
    book = grade_folder(
        args.submissions,
        root=REPO,
        language=args.lang,
        jobs=args.jobs,
        timeout=args.timeout or EXERCISE_TIMEOUT,
    )
    path = write_gradebook(book, args.gradebook)
    for learner in sorted(book.rows):
        got, most = book.total(learner)
        print(f"{learner}: {got:g} of {most}")
    print(
        f"{len(book.rows)} learners, {len(book.columns)} exercises, "
        f"in {time.perf_counter() - start:.1f} s"
    )
    print(f"gradebook: {path}")
    print(f"feedback per learner: {path.with_name(path.stem + '_feedback')}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
