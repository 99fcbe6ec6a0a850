"""Grade learners' notebooks with the course's own checkers, into a gradebook CSV.

``make grade SUBMISSIONS=<folder>`` (``python -m course_kit grade <folder>``) reads every
notebook under ``<folder>`` (or in a ``.zip``), finds out whose it is and which chapter it is, runs
each exercise cell the learner wrote and then the exercise's ``chNN.check_*`` call, and writes one
row per learner, two columns per exercise: the points, and the checker's feedback (its messages and
its hint for a wrong answer, the text a learner sees in the notebook).

Whose, which chapter
--------------------
* ``<learner>/<anything>.ipynb`` (a zip of the hub's exchange or of a learning platform, one folder
  per learner) or flat ``<learner>_<chapter>.ipynb``, e.g. ``ana_01_queries_keys_values.ipynb``
  or ``ana_01_queries_keys_values.learner.ipynb``: the learner is the folder, else the part of the
  file name before the chapter's name (``NN_name``), else the whole file name.
* The chapter is read from the notebook itself: the chapter whose checkers (``chNN.check_*``) its
  code calls; the file name only when no checker call is left.

What is run
-----------
Not the whole chapter (some chapters train models for tens of seconds): for each exercise, the
learner's exercise cell, found by its checker call, with the learner's own ``check_*`` calls
removed; before it, the chapter's cells (the committed chapter's, not the learner's copy) that
bind a name the learner's code reads, followed back transitively (:func:`context_units`; an
``import`` is run on its own, not the cell it stands in), and any cell the learner added to the
Exercises section. Then the checker, held by the grader before the learner's code ran, is called
as the chapter calls it (``ch01.check_dot_product(dot)``). A submission runs in its own Python
process (:mod:`course_kit.grade_worker`) with a time limit per exercise (:data:`EXERCISE_TIMEOUT`
seconds of CPU time, and :data:`WALL_FACTOR` times that on the clock): top-level code that loops
forever costs that exercise its points, and the process is started again for the next one. A
notebook that is not JSON, or whose exercise cell was deleted, gets 0 points with a message saying
so. No Docker, no Jupyter kernel.
"""

from __future__ import annotations

import ast
import csv
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course_kit.notebooks import (
    Notebook,
    cell_names,
    exercise_flags,
    is_solution,
    learner_copy,
    read_notebook,
    source,
)

ROOT = Path(__file__).resolve().parents[2]
#: CPU seconds one exercise may use in the grader (its context cells, the learner's cell and the
#: checker, which itself stops a learner's function after ``TIME_LIMIT`` = 5 s per test case).
EXERCISE_TIMEOUT = 60.0
#: The clock time an exercise may take, as a multiple of its CPU time limit: a cell that sleeps in
#: a loop uses no CPU time; a busy machine stretches the clock time of the others (never less
#: than :data:`MIN_WALL` seconds).
WALL_FACTOR = 5
MIN_WALL = 60.0
#: Points per exercise (every exercise counts the same).
POINTS = 1
#: Seconds a worker may take to import torch and the checkers before it grades anything.
STARTUP_TIMEOUT = 600.0
#: CPython 3.11's ``ast.parse`` can fail with "SystemError: AST constructor recursion depth
#: mismatch" when two threads parse at once (its recursion-depth counter is shared; reported from
#: threaded programs in python/cpython#106905, seen here in a clean-clone test run), and
#: :func:`grade_folder` grades submissions in threads: one parse at a time.
_AST_LOCK = threading.Lock()


def _parse(text: str) -> ast.Module:
    with _AST_LOCK:
        return ast.parse(text)


CHECK_CALL = re.compile(r"\b(ch\d\d)\.(check_\w+)\s*\(")


@dataclass(frozen=True)
class Exercise:
    """One exercise of a chapter: its exercise cell, its worked solution and its checker call."""

    chapter: str  # "01_queries_keys_values"
    number: int  # 1, 2, ... within the chapter
    module: str  # "ch01"
    checker: str  # "check_dot_product"
    call: str  # "ch01.check_dot_product(dot)", as the exercise cell calls it
    stub: str  # the exercise cell's source
    solution: str  # the solution cell's source, its ``*_solution`` names renamed to the stub's

    @property
    def id(self) -> str:
        """``ch01.dot_product``: the gradebook's column and the otter question's name stem."""
        return f"{self.module}.{self.checker.removeprefix('check_')}"


def _check_calls(text: str | ast.Module) -> list[ast.Call]:
    """The top-level ``chNN.check_*(...)`` calls of a cell (as statements), in order."""
    try:
        tree = _parse(_python_only(text)) if isinstance(text, str) else text
    except SyntaxError:
        return []
    return [
        node.value
        for node in tree.body
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and isinstance(node.value.func.value, ast.Name)
        and re.fullmatch(r"ch\d\d", node.value.func.value.id)
        and node.value.func.attr.startswith("check_")
    ]


def _python_only(text: str) -> str:
    """A cell's code without IPython lines (``%matplotlib inline``, ``!pip ...``)."""
    return "\n".join(
        "pass" if line.lstrip().startswith(("%", "!")) else line for line in text.splitlines()
    )


def _renamed_solution(solution: str) -> str:
    """A worked solution as the learner would write it in the exercise cell: ``dot_solution``
    becomes ``dot``, so the exercise's own checker call grades it."""
    return re.sub(r"\b(\w+?)_solution\b", r"\1", solution)


def chapter_exercises(nb: Notebook, chapter: str) -> list[Exercise]:
    """The exercises of a committed chapter notebook, in order."""
    cells = nb["cells"]
    found = []
    for i, is_ex in enumerate(exercise_flags(nb)):
        if not is_ex or cells[i].get("cell_type") != "code":
            continue
        stub = source(cells[i])
        calls = _check_calls(stub)
        if not calls:
            continue
        call = calls[-1]
        following = cells[i + 1] if i + 1 < len(cells) else {}
        solution = source(following) if is_solution(following) else ""
        found.append(
            Exercise(
                chapter=chapter,
                number=len(found) + 1,
                module=call.func.value.id,  # type: ignore[attr-defined]
                checker=call.func.attr,  # type: ignore[attr-defined]
                call=ast.unparse(call),
                stub=stub,
                solution=_renamed_solution(solution),
            )
        )
    return found


@dataclass
class Chapter:
    stem: str
    path: Path
    notebook: Notebook
    exercises: list[Exercise]

    @property
    def module(self) -> str:
        return f"ch{self.stem[:2]}"


def load_chapters(root: Path = ROOT) -> dict[str, Chapter]:
    """Every chapter of the course that has exercises, by ``chNN`` module name."""
    chapters = {}
    for path in sorted((root / "chapters").glob("*.ipynb")):
        nb = read_notebook(path)
        exercises = chapter_exercises(nb, path.stem)
        if exercises:
            chapters[f"ch{path.stem[:2]}"] = Chapter(path.stem, path, nb, exercises)
    return chapters


def answered_copy(chapter: Chapter, answers: dict[str, str]) -> Notebook:
    """The learner copy with the exercise cells of ``answers`` (exercise id -> code) replaced, as
    a learner fills them in: the stub's imports kept, the code, then the cell's checker call
    (unless the code makes it already)."""
    nb = learner_copy(chapter.notebook)
    by_call = {ex.call: ex for ex in chapter.exercises}
    for cell in nb["cells"]:
        if "exercise" not in cell.get("metadata", {}).get("tags", []):
            continue
        calls = _check_calls(source(cell))
        ex = by_call.get(ast.unparse(calls[-1])) if calls else None
        if ex is not None and ex.id in answers:
            code = answers[ex.id].rstrip("\n")
            call = [] if ex.call in code else ["", ex.call]
            cell["source"] = "\n".join([*stub_imports(ex.stub), code, *call]) + "\n"
    return nb


def solved_copy(chapter: Chapter) -> Notebook:
    """The learner copy with every exercise cell holding its worked solution: what a learner who
    solved everything hands in (it scores 100 %)."""
    return answered_copy(chapter, {ex.id: ex.solution for ex in chapter.exercises})


def stub_imports(text: str) -> list[str]:
    """The top-level ``import`` statements of a cell, as source lines."""
    try:
        tree = _parse(_python_only(text))
    except SyntaxError:
        return []
    return [ast.unparse(s) for s in tree.body if isinstance(s, ast.Import | ast.ImportFrom)]


# --- what the learner's code needs from the chapter ----------------------------------------------


@dataclass(frozen=True)
class Unit:
    """A piece of the chapter's code run before an exercise: one ``import`` statement, or the
    rest of a code cell (its other statements)."""

    cell: int
    code: str
    binds: frozenset[str]
    reads: frozenset[str]


def chapter_units(nb: Notebook) -> tuple[list[Unit], int]:
    """The chapter's code before its first exercise as units, and the index of the cell that
    imports the exercises module (``from course_utils.exercises import chNN``), where the
    Exercises section starts (-1 if none)."""
    flags = exercise_flags(nb)
    first = next((i for i, f in enumerate(flags) if f), len(flags))
    units: list[Unit] = []
    section = -1
    for i, cell in enumerate(nb["cells"][:first]):
        if cell.get("cell_type") != "code" or is_solution(cell):
            continue
        text = _python_only(source(cell))
        if "course_utils.exercises import" in text:
            section = i
        try:
            tree = _parse(text)
        except SyntaxError:
            continue
        imports = [s for s in tree.body if isinstance(s, ast.Import | ast.ImportFrom)]
        rest = [s for s in tree.body if not isinstance(s, ast.Import | ast.ImportFrom)]
        pieces = [ast.unparse(s) for s in imports]
        if rest:
            pieces.append(ast.unparse(ast.Module(body=rest, type_ignores=[])))
        for code in pieces:
            names = cell_names(code) or (set(), set())
            units.append(Unit(i, code, frozenset(names[0]), frozenset(names[1])))
    return units, section


def context_units(units: list[Unit], code: str) -> list[int]:
    """Indices of the units to run before ``code`` so that every name it reads is bound: for each
    name, the last unit that binds it, followed back transitively (that unit's own reads are
    resolved among the units before it). A name no unit binds is left to Python (a builtin, or
    the learner's mistake)."""
    names = cell_names(code)
    wanted = [(len(units), n) for n in (names[1] - names[0] if names else set())]
    keep: set[int] = set()
    while wanted:
        before, name = wanted.pop()
        j = next((j for j in range(before - 1, -1, -1) if name in units[j].binds), None)
        if j is None or j in keep:
            continue
        keep.add(j)
        wanted += [(j, n) for n in units[j].reads]
    return sorted(keep)


# --- submissions ---------------------------------------------------------------------------------


@dataclass
class Submission:
    path: Path
    learner: str
    module: str | None = None  # "ch01"; None: not identified
    notebook: Notebook | None = None
    problem: str = ""  # why it could not be read, if it could not


def _chapter_of(nb: Notebook, chapters: dict[str, Chapter], path: Path) -> str | None:
    """The chapter a notebook belongs to: the one whose checkers its code cells call most; else the
    chapter whose stem or number its file name starts with."""
    counts: dict[str, int] = {}
    for cell in nb.get("cells", []):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            for m in CHECK_CALL.finditer(source(cell)):
                if m.group(1) in chapters:
                    counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    if counts:
        return max(sorted(counts), key=lambda k: counts[k])
    for module, chapter in chapters.items():
        if chapter.stem in path.name:
            return module
    return None


def learner_id(path: Path, root: Path, chapters: dict[str, Chapter]) -> str:
    """The learner a notebook belongs to: its folder below ``root``, else the part of its file
    name before the chapter's stem, else its whole file name (without ``.ipynb``)."""
    rel = path.relative_to(root)
    if len(rel.parts) > 1:
        return rel.parts[0]
    stem = path.name.removesuffix(".ipynb").removesuffix(".learner")
    for chapter in chapters.values():
        if chapter.stem in stem:
            prefix = stem.split(chapter.stem)[0].strip("_-. ")
            return prefix or stem
    m = re.match(r"(.+?)[_\-. ]+\d\d_", stem)
    return m.group(1) if m else stem


def find_submissions(folder: Path, chapters: dict[str, Chapter]) -> list[Submission]:
    """Every notebook under ``folder`` (checkpoints and hidden folders left out)."""
    found = []
    for path in sorted(folder.rglob("*.ipynb")):
        rel = path.relative_to(folder)
        if any(p.startswith(".") or p == "__MACOSX" for p in rel.parts):
            continue
        sub = Submission(path, learner_id(path, folder, chapters))
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
                raise ValueError("it has no list of cells")
            sub.notebook = nb
            sub.module = _chapter_of(nb, chapters, path)
            if sub.module is None:
                sub.problem = "no exercise of the course was found in it"
        except (OSError, UnicodeDecodeError, ValueError) as err:
            sub.problem = f"the notebook could not be read ({type(err).__name__}: {err})"
            sub.module = _chapter_of({"cells": []}, chapters, path)
        found.append(sub)
    return found


# --- running a submission ------------------------------------------------------------------------


@dataclass
class Result:
    points: float
    feedback: str


def _learner_cells(sub: Submission, chapter: Chapter) -> tuple[dict[str, str], list[str]]:
    """The learner's cell for each exercise (by its checker call), and the code cells the learner
    added to the Exercises section (run before the exercises, in order)."""
    cells = [c for c in sub.notebook["cells"] if isinstance(c, dict)] if sub.notebook else []
    by_id: dict[str, str] = {}
    known = {source(c).strip() for c in chapter.notebook["cells"]}
    wanted = {f"{ex.module}.{ex.checker}": ex.id for ex in chapter.exercises}
    start = next(
        (
            i
            for i, c in enumerate(cells)
            if c.get("cell_type") == "code" and "course_utils.exercises import" in source(c)
        ),
        len(cells),
    )
    added = []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        text = source(cell)
        hits = [m for m in CHECK_CALL.finditer(text) if f"{m.group(1)}.{m.group(2)}" in wanted]
        if hits:
            ex_id = wanted[f"{hits[-1].group(1)}.{hits[-1].group(2)}"]
            # the exercise cell (tagged) wins over another cell that calls the same checker
            if ex_id not in by_id or "exercise" in cell.get("metadata", {}).get("tags", []):
                by_id[ex_id] = text
        elif i > start and text.strip() and text.strip() not in known:
            added.append(text)
    return by_id, added


def _strip_check_calls(text: str) -> str:
    """The learner's cell without its top-level ``chNN.check_*`` calls (the grader makes the one
    that counts)."""
    code = _python_only(text)
    try:
        tree = _parse(code)
    except SyntaxError:
        return code  # the worker reports the SyntaxError
    calls = {id(c) for c in _check_calls(tree)}
    tree.body = [
        s for s in tree.body if not (isinstance(s, ast.Expr) and id(s.value) in calls)
    ] or [ast.Pass()]
    return ast.unparse(tree)


def _job(sub: Submission, chapter: Chapter) -> tuple[dict[str, Any], dict[str, Result]]:
    """The worker's job for one submission, and the results known without running anything."""
    units, _ = chapter_units(chapter.notebook)
    by_id, added = _learner_cells(sub, chapter)
    added_code = [_python_only(a) for a in added]
    exercises, known = [], {}
    for ex in chapter.exercises:
        if ex.id not in by_id:
            known[ex.id] = Result(
                0,
                f"✗ exercise {ex.number}: no cell calls {ex.module}.{ex.checker}(...) any more "
                "(was the exercise cell deleted?); 0 points",
            )
            continue
        code = _strip_check_calls(by_id[ex.id])
        needs = sorted(
            set(context_units(units, "\n".join([*added_code, code, ex.call])))
            | set(context_units(units, f"import course_utils.exercises.{ex.module}"))
        )
        exercises.append({"id": ex.id, "units": needs, "code": code, "call": ex.call})
    job = {
        "cwd": str(chapter.path.parent),
        "units": [u.code for u in units],
        "added": added_code,
        "exercises": exercises,
    }
    return job, known


class Worker:
    """A :mod:`course_kit.grade_worker` process: it imports torch and the checkers once, then
    grades each job in a forked child. :meth:`run` restarts the job after an exercise that hangs
    (the child is killed) or that ends the child, with the exercises still to do."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "course_kit.grade_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
            encoding="utf-8",
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.ready = False
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _wait_until_ready(self) -> None:
        """Wait for the worker's imports (seconds on a quiet machine, a minute on a busy one):
        the time limits start after them."""
        while not self.ready:
            line = self.lines.get(timeout=STARTUP_TIMEOUT)
            if line is None:
                raise RuntimeError("the grader's worker process ended while starting")
            self.ready = json.loads(line)["event"] == "ready"

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def close(self) -> None:
        """End the worker (it ends when its standard input does) and close its pipes."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()
        self.pump.join()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def run(self, job: dict[str, Any], timeout: float) -> dict[str, Result]:
        results: dict[str, Result] = {}
        todo = list(job["exercises"])
        self._wait_until_ready()
        while todo:
            assert self.proc.stdin is not None
            self.proc.stdin.write(
                json.dumps({**job, "exercises": todo, "cpu_seconds": timeout}) + "\n"
            )
            self.proc.stdin.flush()
            child, current = None, None
            wall = max(WALL_FACTOR * timeout, MIN_WALL)
            deadline = time.monotonic() + wall
            while True:
                try:
                    line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    line = "timeout"
                if line is None:
                    raise RuntimeError("the grader's worker process ended")
                if line == "timeout":
                    if child is not None:
                        os.kill(child, signal.SIGKILL)
                    why = f"took longer than {wall:g} s, so the grader stopped it"
                    deadline = time.monotonic() + wall
                    if current is not None:
                        results[current] = Result(0, _stopped(current, why))
                    current = None
                    continue
                event = json.loads(line)
                if event["event"] == "child":
                    child = event["pid"]
                elif event["event"] == "start":
                    current, deadline = event["id"], time.monotonic() + wall
                elif event["event"] == "timeout":
                    why = f"used more than {timeout:g} s of CPU time, so the grader stopped it"
                    results[event["id"]] = Result(0, _stopped(event["id"], why))
                    current = None
                elif event["event"] == "done":
                    results[event["id"]] = Result(event["points"], event["feedback"])
                    current = None
                else:  # "exit": the child has ended
                    if current is not None:
                        results[current] = Result(
                            0, _stopped(current, "ended the Python process that graded it")
                        )
                    break
            left = [e for e in todo if e["id"] not in results]
            if len(left) == len(todo):  # no progress: the child died before its first exercise
                for e in left:
                    results[e["id"]] = Result(0, f"✗ {e['id']}: the grader could not run it")
                left = []
            todo = left
        return results


def _stopped(ex_id: str, why: str) -> str:
    return (
        f"✗ {ex_id}: your exercise cell {why} (a loop that never ends at the top level of the "
        "cell?); 0 points"
    )


def worker_environment(language: str) -> dict[str, str]:
    """The worker's environment: the course's package and kit on the path, one thread for torch
    (two workers share two cores), figures drawn off screen, no model hub, ``COURSE_LANG``."""
    return {
        **os.environ,
        "COURSE_LANG": language,
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "src"), str(ROOT / "_ext"), os.environ.get("PYTHONPATH", "")]
        ),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def grade_submission(
    sub: Submission, chapters: dict[str, Chapter], worker: Worker, *, timeout: float
) -> dict[str, Result]:
    """Points and feedback per exercise id for one submission."""
    if sub.module is None:
        return {}
    chapter = chapters[sub.module]
    if sub.notebook is None:
        return {ex.id: Result(0, f"✗ {sub.problem}; 0 points") for ex in chapter.exercises}
    job, results = _job(sub, chapter)
    if job["exercises"]:
        results |= worker.run(job, timeout)
    return results


# --- the gradebook -------------------------------------------------------------------------------


@dataclass
class Gradebook:
    columns: list[Exercise]
    rows: dict[str, dict[str, Result]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    submitted: dict[str, set[str]] = field(default_factory=dict)  # learner -> chapter modules

    def total(self, learner: str) -> tuple[float, int]:
        got = sum(r.points for r in self.rows[learner].values())
        most = sum(POINTS for ex in self.columns if ex.module in self.submitted[learner])
        return got, most


def grade_folder(
    folder: Path,
    *,
    root: Path = ROOT,
    language: str = "en",
    jobs: int = 2,
    timeout: float = EXERCISE_TIMEOUT,
) -> Gradebook:
    """Grade every submission under ``folder`` (a folder, or a ``.zip`` of one)."""
    chapters = load_chapters(root)
    with tempfile.TemporaryDirectory(prefix="course-grade-") as tmp:
        if folder.is_file() and folder.suffix == ".zip":
            with zipfile.ZipFile(folder) as zf:
                zf.extractall(tmp)
            folder = Path(tmp)
        subs = find_submissions(folder, chapters)
        workers: queue.Queue[Worker] = queue.Queue()
        env = worker_environment(language)
        started = [Worker(env) for _ in range(max(1, min(jobs, len(subs))))]
        for w in started:
            workers.put(w)

        def one(sub: Submission) -> dict[str, Result]:
            worker = workers.get()
            try:
                return grade_submission(sub, chapters, worker, timeout=timeout)
            finally:
                workers.put(worker)

        try:
            with ThreadPoolExecutor(max_workers=len(started)) as pool:
                graded = list(pool.map(one, subs))
        finally:
            for w in started:
                w.close()
    modules = sorted({s.module for s in subs if s.module})
    book = Gradebook([ex for m in modules for ex in chapters[m].exercises])
    for sub, results in zip(subs, graded, strict=True):
        row = book.rows.setdefault(sub.learner, {})
        notes = book.notes.setdefault(sub.learner, [])
        book.submitted.setdefault(sub.learner, set())
        if sub.module is None:
            notes.append(f"{sub.path.name}: {sub.problem}")
            continue
        if sub.module in book.submitted[sub.learner]:
            notes.append(f"{sub.path.name}: a second notebook of {sub.module}; the last one counts")
        elif sub.problem:
            notes.append(f"{sub.path.name}: {sub.problem}")
        book.submitted[sub.learner].add(sub.module)
        row.update(results)
    return book


def write_gradebook(book: Gradebook, path: Path) -> Path:
    """The CSV: ``learner, points, max_points, notes``, then per exercise its points and its
    feedback (empty for a chapter the learner did not hand in). Also one Markdown feedback file
    per learner in ``<path stem>_feedback/``, to hand back."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = ["learner", "points", "max_points", "notes"]
    for ex in book.columns:
        header += [ex.id, f"{ex.id} feedback"]
    feedback_dir = path.with_name(f"{path.stem}_feedback")
    feedback_dir.mkdir(exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for learner in sorted(book.rows):
            got, most = book.total(learner)
            row: list[Any] = [learner, f"{got:g}", most, "; ".join(book.notes[learner])]
            lines = [f"# Feedback for {learner}", "", f"Points: {got:g} of {most}", ""]
            for ex in book.columns:
                result = book.rows[learner].get(ex.id)
                if ex.module not in book.submitted[learner] or result is None:
                    row += ["", ""]
                    continue
                row += [f"{result.points:g}", result.feedback]
                lines += [f"## {ex.chapter}, exercise {ex.number} ({ex.id})", ""]
                lines += ["```text", result.feedback, "```", ""]
            writer.writerow(row)
            safe = re.sub(r"[^\w.-]+", "_", learner) or "learner"
            (feedback_dir / f"{safe}.md").write_text("\n".join(lines), encoding="utf-8")
    return path
