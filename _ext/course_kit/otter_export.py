"""The chapters' exercises as otter-grader assignments (``python -m course_kit otter``).

For each chapter, ``<out>/<stem>/``:

* ``student/<stem>.ipynb``: the learner copy (no solutions, exercise outputs cleared) with, first,
  the cell ``grader = otter.Notebook(tests_dir="tests")`` and, after each exercise cell, a cell
  ``grader.check("ch01_dot_product")``; nbgrader metadata on both (the exercise cell an
  autograded answer, the check cell its autograder test worth 1 point);
* ``student/tests/<question>.py``: one otter exception-based test file per exercise: it calls the
  course's checker and fails with the checker's feedback as its message, so otter shows the same
  text, hint included, as the chapter does;
* ``autograder.zip``: the same tests as otter's autograder configuration (``otter generate``), for
  ``otter run -a autograder.zip <notebook>``. It needs the course's environment
  (``requirements.txt``) where it runs: the zip does not install it.
* ``solution/<stem>.ipynb``: the student notebook with every exercise cell solved (the worked
  solutions), for the teacher.

Both editions share one export: the checkers answer in the language of the kernel
(``COURSE_LANG``, or ``set_language("zh")``).
"""

from __future__ import annotations

import ast
import copy
import io
import shutil
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from course_kit.grading import Chapter, Exercise, load_chapters, solved_copy
from course_kit.notebooks import Notebook, learner_copy, source, write_notebook

INIT = 'import otter\n\ngrader = otter.Notebook(tests_dir="tests")'


def question(ex: Exercise) -> str:
    """The otter question's name: ``ch01_dot_product``."""
    return ex.id.replace(".", "_")


class _FromEnv(ast.NodeTransformer):
    """``dot`` -> ``env["dot"]``: a name of the learner's, looked up in the notebook's globals."""

    def __init__(self, keep: str) -> None:
        self.keep = keep

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.keep or not isinstance(node.ctx, ast.Load):
            return node
        subscript = ast.Subscript(ast.Name("env", ast.Load()), ast.Constant(node.id), ast.Load())
        return ast.copy_location(subscript, node)


def otter_test_file(ex: Exercise) -> str:
    """The otter test file of one exercise."""
    call = _FromEnv(ex.module).visit(ast.parse(ex.call, mode="eval"))
    name = question(ex)
    return (
        f'"""{name}: chapter {ex.chapter}, exercise {ex.number}, checked by the course\'s '
        f'{ex.module}.{ex.checker}."""\n\n'
        "from otter.test_files import test_case\n\n"
        "OK_FORMAT = False\n"
        f'name = "{name}"\n'
        "points = 1\n\n\n"
        "@test_case(points=1, hidden=False)\n"
        f"def test_{name}(env):\n"
        f"    from course_utils.exercises import {ex.module}\n\n"
        f"    feedback = {ast.unparse(call)}\n"
        "    # the message otter shows: the checker's own feedback, hint included\n"
        "    assert feedback.passed, str(feedback)\n"
    )


def _nbgrader(cell: dict[str, Any], grade_id: str, *, answer: bool) -> None:
    meta = {
        "grade": not answer,
        "grade_id": grade_id,
        "locked": not answer,
        "schema_version": 3,
        "solution": answer,
        "task": False,
    }
    if not answer:
        meta["points"] = 1
    cell.setdefault("metadata", {})["nbgrader"] = meta


def _code_cell(text: str, tags: list[str], cell_id: str) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": cell_id,  # nbformat 4.5 wants one on every cell
        "metadata": {"tags": tags},
        "outputs": [],
        "source": text,
    }


def student_notebook(chapter: Chapter, nb: Notebook | None = None) -> Notebook:
    """The learner copy (or ``nb``, a copy made from it) with otter's cells and nbgrader's
    metadata."""
    nb = copy.deepcopy(nb if nb is not None else learner_copy(chapter.notebook))
    by_call = {ex.checker: ex for ex in chapter.exercises}
    cells = []
    for cell in nb["cells"]:
        if not cells and cell.get("cell_type") == "code":
            cells.append(_code_cell(INIT, ["otter"], "otter-init"))
        cells.append(cell)
        if "exercise" not in cell.get("metadata", {}).get("tags", []):
            continue
        ex = next((e for k, e in by_call.items() if f".{k}(" in source(cell)), None)
        if ex is None:
            continue
        _nbgrader(cell, f"{question(ex)}_answer", answer=True)
        check = _code_cell(f'grader.check("{question(ex)}")', ["otter"], f"otter-{question(ex)}")
        _nbgrader(check, question(ex), answer=False)
        cells.append(check)
    nb["cells"] = cells
    nb.setdefault("metadata", {})["otter"] = {"assignment_name": chapter.stem}
    return nb


def export_chapter(chapter: Chapter, out: Path, *, autograder: bool = True) -> Path:
    """Write one chapter's assignment into ``out/<stem>/``; return that folder."""
    folder = out / chapter.stem
    shutil.rmtree(folder, ignore_errors=True)
    tests = folder / "student" / "tests"
    tests.mkdir(parents=True)
    for ex in chapter.exercises:
        (tests / f"{question(ex)}.py").write_text(otter_test_file(ex), encoding="utf-8")
    write_notebook(student_notebook(chapter), folder / "student" / f"{chapter.stem}.ipynb")
    solved = student_notebook(chapter, solved_copy(chapter))
    write_notebook(solved, folder / "solution" / f"{chapter.stem}.ipynb")
    if autograder:
        from otter.generate import main as generate

        with redirect_stdout(io.StringIO()):  # otter prints its progress
            generate(
                tests_dir=str(tests),
                output_path=str(folder / "autograder.zip"),
                no_config=True,
                no_requirements=True,
                no_environment=True,
                python_version="3.11",
            )
    return folder


def export(root: Path, out: Path, *, autograder: bool = True) -> list[Path]:
    """Every chapter's assignment; returns their folders."""
    out.mkdir(parents=True, exist_ok=True)
    return [export_chapter(c, out, autograder=autograder) for c in load_chapters(root).values()]
