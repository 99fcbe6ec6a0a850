"""``python -m course_site.i18n_coverage``: how much of the 中文 edition is translated, per page.

Prints, for every message catalogue ``locale/zh_CN/LC_MESSAGES/<page>.po``, the messages translated
(non-empty and not fuzzy) out of all, and the overall share; exits 1 unless at least 98 % are
translated overall and 100 % of every chapter (:func:`course_site.i18n.coverage_problems`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from course_site import i18n

REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_site.i18n_coverage")
    parser.add_argument("--repo", type=Path, default=REPO)
    args = parser.parse_args(argv)
    pages = i18n.coverage(args.repo)
    print(i18n.coverage_report(pages))
    problems = i18n.coverage_problems(pages)
    for problem in problems:
        print(f"not yet: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
