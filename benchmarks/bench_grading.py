"""How long ``make grade`` takes on a class of 30 submissions (the goal: at most 120 s on 2 cores).

Builds 30 learners' notebooks, one each, over all 13 chapters in turn (the heavy ones included):
a third solved (the worked solutions in the exercise cells), a third with a typical wrong answer
in every exercise cell (``tests/grading_wrong_answers.py``), a third untouched learner copies. Then
runs the command ``make grade`` runs (``python -m course_kit grade <folder>``) and reports its
wall-clock time, the CPU time of it and its workers, and the machine's load average before and
after (the development machine is shared: a load above 2 on its 2 cores stretches the clock).

Usage: ``PYTHONPATH=_ext:src python benchmarks/bench_grading.py [--learners 30] [--save]``
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _floor import load, machine, save_results

from course_kit.grading import answered_copy, load_chapters
from course_kit.notebooks import learner_copy, write_notebook

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.grading_wrong_answers import WRONG_ANSWERS  # noqa: E402 (the tests' fixture data)


def build_class(folder: Path, learners: int) -> dict[str, str]:
    """``<learner>/<chapter>.ipynb`` for each learner; returns learner -> kind."""
    chapters = list(load_chapters(REPO).values())
    kinds = {}
    for i in range(learners):
        chapter = chapters[i % len(chapters)]
        kind = ("solved", "wrong", "untouched")[i % 3]
        if kind == "solved":
            nb = answered_copy(chapter, {ex.id: ex.solution for ex in chapter.exercises})
        elif kind == "wrong":
            round_ = i % 3
            nb = answered_copy(
                chapter, {ex.id: WRONG_ANSWERS[ex.id][round_][0] for ex in chapter.exercises}
            )
        else:
            nb = learner_copy(chapter.notebook)
        learner = f"learner{i + 1:02d}"
        write_notebook(nb, folder / learner / f"{chapter.stem}.ipynb")
        kinds[learner] = kind
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--learners", type=int, default=30)
    parser.add_argument("--save", action="store_true", help="write results/grading.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "class"
        kinds = build_class(folder, args.learners)
        gradebook = Path(tmp) / "grades.csv"
        env = {**os.environ, "PYTHONPATH": str(REPO / "_ext")}
        load_before = load()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "course_kit",
                "grade",
                str(folder),
                "--gradebook",
                str(gradebook),
            ],
            check=True,
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        load_after = load()
        with gradebook.open(encoding="utf-8", newline="") as f:
            rows = {r["learner"]: r for r in csv.DictReader(f)}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    right = all(
        (rows[k]["points"] == rows[k]["max_points"]) == (kind == "solved")
        for k, kind in kinds.items()
    )
    result = {
        "submissions": args.learners,
        "wall_seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "load_before": load_before,
        "load_after": load_after,
        "solved_full_marks_others_not": right,
        "machine": machine(),
    }
    print(
        f"make grade, {args.learners} submissions: {seconds:.1f} s wall, {cpu:.1f} s CPU "
        f"(load average {load_before} before, {load_after} after); solved ones full marks, "
        f"the others not: {right}"
    )
    if args.save:
        save_results(REPO / "benchmarks" / "results" / "grading.json", result)


if __name__ == "__main__":
    main()
