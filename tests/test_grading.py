"""``make grade`` and the otter export, on a synthetic class (``course_kit.grading``).

One grading run, of the whole class handed in as one zip, covers it all (the grader's cost is
mostly its start and each notebook's checkers, so one class of many notebooks is cheaper than many
small runs): for every chapter,

* the solved copy (the learner copy with each exercise cell holding its worked solution) scores
  100 %;
* the untouched learner copy scores 0 %;
* round ``k`` (learner ``wrong<k>``) hands in the ``k``-th typical wrong answer of every exercise
  at once (``tests/grading_wrong_answers.py``): each scores 0 for that exercise, and its feedback
  holds the checker's specific hint;
* a notebook that is not JSON, one whose exercise cell was deleted and one whose top-level code
  never ends each get 0 points with a message saying why, and grading goes on;
* a cell that replaces the checker with one that always passes does not pass.
"""

from __future__ import annotations

import ast
import csv
import json
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

from course_kit import grading
from course_kit.notebooks import learner_copy, source, write_notebook

from .grading_wrong_answers import WRONG_ANSWERS

# One worker grades the class once: its module-scoped fixture would otherwise run on both
# pytest-xdist workers (the whole class graded twice).
pytestmark = pytest.mark.xdist_group("grading")

ROUNDS = max(len(v) for v in WRONG_ANSWERS.values())
CHAPTERS = grading.load_chapters()
ALL = [ex for c in CHAPTERS.values() for ex in c.exercises]
#: Counted from the notebooks' cells tagged ``exercise`` (not by the grader, which finds them by
#: their checker calls): the grader must find every one.
N_EXERCISES = sum(
    "exercise" in c.get("metadata", {}).get("tags", [])
    for path in sorted((Path(__file__).resolve().parents[1] / "chapters").glob("[0-9]*.ipynb"))
    for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
)


def write_class(folder: Path) -> None:
    """The synthetic class: ``<learner>/<chapter>.ipynb`` and one flat file."""
    for chapter in CHAPTERS.values():
        write_notebook(grading.solved_copy(chapter), folder / "solved" / f"{chapter.stem}.ipynb")
        untouched = learner_copy(chapter.notebook)
        write_notebook(untouched, folder / f"untouched_{chapter.stem}.learner.ipynb")
        for k in range(ROUNDS):
            answers = {
                ex.id: WRONG_ANSWERS[ex.id][k][0]
                for ex in chapter.exercises
                if k < len(WRONG_ANSWERS[ex.id])
            }
            if answers:
                nb = grading.answered_copy(chapter, answers)
                write_notebook(nb, folder / f"wrong{k + 1}" / f"{chapter.stem}.ipynb")
    broken = folder / "broken"
    broken.mkdir()
    (broken / "02_scaling.ipynb").write_text('{"cells": [', encoding="utf-8")
    chapter = CHAPTERS["ch01"]
    first, second = chapter.exercises[:2]
    endless = "while True:\n    pass\n"  # a loop that never ends
    nb = grading.answered_copy(chapter, {first.id: endless})
    nb["cells"] = [c for c in nb["cells"] if f"{second.module}.{second.checker}(" not in source(c)]
    write_notebook(nb, broken / f"{chapter.stem}.ipynb")
    cheat = (
        "from course_utils.exercises import Feedback\n\n"
        "ch01.check_dot_product = lambda f: Feedback(True, 'dot product')\n\n\n"
        "def dot(q, k):\n    return 0.0\n"
    )
    nb = grading.answered_copy(chapter, {first.id: cheat})
    write_notebook(nb, folder / "cheat" / f"{chapter.stem}.ipynb")


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[grading.Gradebook, Path]:
    folder = tmp_path_factory.mktemp("class")
    write_class(folder)
    # handed in as one zip, as a learning platform's "download all" gives it
    archive = shutil.make_archive(str(folder), "zip", folder)
    # a short limit of CPU time: the endless loop of "broken" costs that much
    book = grading.grade_folder(Path(archive), jobs=2, timeout=2)
    path = grading.write_gradebook(book, folder.parent / "grades.csv")
    return book, path


def test_every_exercise_has_three_typical_wrong_answers():
    assert len(ALL) == N_EXERCISES >= 60  # 60 in chapters 1-14
    assert sorted(WRONG_ANSWERS) == sorted(ex.id for ex in ALL)
    for ex_id, answers in WRONG_ANSWERS.items():
        assert len(answers) >= 3, ex_id
        assert all(hint.strip() for _, hint in answers), ex_id  # a specific hint each
        assert len({code for code, _ in answers}) == len(answers), ex_id


def test_the_solved_copy_scores_100_percent(graded):
    book, _ = graded
    got, most = book.total("solved")
    failed = {k: r.feedback for k, r in book.rows["solved"].items() if r.points != 1}
    assert (got, most) == (N_EXERCISES, N_EXERCISES), failed


def test_the_untouched_learner_copy_scores_0_percent(graded):
    book, _ = graded
    assert book.total("untouched") == (0, N_EXERCISES)
    for ex_id, result in book.rows["untouched"].items():
        assert "not yet right" in result.feedback, (ex_id, result.feedback)


@pytest.mark.parametrize("ex_id", sorted(WRONG_ANSWERS))
def test_each_typical_wrong_answer_gets_its_hint(graded, ex_id):
    book, _ = graded
    for k, (code, hint) in enumerate(WRONG_ANSWERS[ex_id]):
        result = book.rows[f"wrong{k + 1}"][ex_id]
        assert result.points == 0, (code, result.feedback)
        assert hint in result.feedback, (code, result.feedback)


def test_broken_submissions_score_0_with_a_reason(graded):
    book, _ = graded
    row = book.rows["broken"]
    assert row["ch02.score_variance"].points == 0
    assert "could not be read" in row["ch02.score_variance"].feedback
    looping, deleted = CHAPTERS["ch01"].exercises[:2]
    assert "used more than 2 s of CPU time" in row[looping.id].feedback
    assert "was the exercise cell deleted?" in row[deleted.id].feedback
    # the exercises after the one that hung were graded in a new process: stubs, not yet right
    assert "your function returned None" in row["ch01.attend_one"].feedback


def test_the_gradebook_csv(graded):
    book, path = graded
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["learner"] for r in rows] == sorted(book.rows)
    solved = next(r for r in rows if r["learner"] == "solved")
    assert (solved["points"], solved["max_points"]) == (str(N_EXERCISES),) * 2
    wrong = next(r for r in rows if r["learner"] == "wrong1")
    hint = WRONG_ANSWERS["ch01.all_scores"][0][1]
    assert wrong["ch01.all_scores"] == "0" and hint in wrong["ch01.all_scores feedback"]
    broken = next(r for r in rows if r["learner"] == "broken")
    assert broken["ch03.attention"] == ""  # chapter 3 not handed in: no score, not a 0
    feedback = path.with_name("grades_feedback") / "wrong1.md"
    assert hint in feedback.read_text(encoding="utf-8")


def test_learner_and_chapter_from_names_and_cells(tmp_path):
    chapter = CHAPTERS["ch03"]
    nb = learner_copy(chapter.notebook)
    write_notebook(nb, tmp_path / "ana_03_softmax_weighted_sum.learner.ipynb")
    write_notebook(nb, tmp_path / "Bo Li" / "homework.ipynb")
    subs = grading.find_submissions(tmp_path, CHAPTERS)
    assert sorted((s.learner, s.module) for s in subs) == [("Bo Li", "ch03"), ("ana", "ch03")]


def test_a_learner_cannot_replace_the_checker(graded):
    """A cell that rebinds ``ch01.check_dot_product`` to always pass changes nothing."""
    book, _ = graded
    result = book.rows["cheat"]["ch01.dot_product"]
    assert result.points == 0 and "not yet right" in result.feedback, result.feedback


def test_otter_export(tmp_path):
    """The otter assignment of chapter 1: otter's own test runner, on the solved and on the
    untouched answers, passes and fails with the course's hint as its message."""
    pytest.importorskip("otter")
    from otter.test_files import ExceptionTestFile

    from course_kit.otter_export import export_chapter, question

    chapter = CHAPTERS["ch01"]
    folder = export_chapter(chapter, tmp_path, autograder=False)
    student_path = folder / "student" / f"{chapter.stem}.ipynb"
    nbformat.validate(nbformat.read(student_path, as_version=4))  # cell ids included
    student = json.loads(student_path.read_text("utf-8"))
    checks = [c for c in student["cells"] if "grader.check(" in source(c)]
    assert len(checks) == len(chapter.exercises)
    assert all(c["metadata"]["nbgrader"]["points"] == 1 for c in checks)
    assert not any("solution" in c.get("metadata", {}).get("tags", []) for c in student["cells"])
    sys.path.insert(0, str(grading.ROOT / "src"))
    import numpy as np

    from course_utils import softmax

    env: dict = {"np": np, "softmax": softmax}
    for ex in chapter.exercises:  # the worked solutions' definitions (not their demo prints)
        answer = {n.id for n in ast.walk(ast.parse(ex.call)) if isinstance(n, ast.Name)}
        for stmt in ast.parse(ex.solution).body:
            defines = isinstance(stmt, ast.FunctionDef) and stmt.name in answer
            assigns = isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id in answer for t in stmt.targets
            )
            if defines or assigns:
                exec(ast.unparse(stmt), env)
    for ex in chapter.exercises:
        test = ExceptionTestFile.from_file(str(folder / "student" / "tests" / f"{question(ex)}.py"))
        test.run(env)
        assert test.passed_all, test.summary()
    code, hint = WRONG_ANSWERS["ch01.all_scores"][0]
    exec(code, env)
    test = ExceptionTestFile.from_file(str(folder / "student" / "tests" / "ch01_all_scores.py"))
    test.run(env)
    assert not test.passed_all and hint in test.summary()


def test_a_wrong_answer_is_not_right_by_accident():
    """The catalogue's answers differ from the worked solutions (a copy would pass)."""
    for ex in ALL:
        for code, _ in WRONG_ANSWERS[ex.id]:
            assert code.strip() != ex.solution.strip(), ex.id
