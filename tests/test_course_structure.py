"""The course's structural rules, checked on the sources so that they cannot quietly regress.

Everything here reads files (``_toc.yml``, ``chapters/*.ipynb`` as JSON, ``*.md``,
``references.bib``, ``glossary.md``, the package's source with :mod:`ast`); nothing is executed
or imported from ``course_utils``, so the whole module runs in well under a second. The rules,
one test (or one parametrised test per chapter) each:

1. ``_toc.yml`` and ``chapters/`` agree, and every toc file exists.
2. A written chapter has a title ``# N. ...``, learning objectives, a summary, an "Exercises"
   section with at least 3 exercises (code cells tagged ``exercise`` that call ``chNN.check_*``),
   an executed hidden solution cell tagged ``["hide-cell", "solution"]`` after each that calls the
   same checker, and "Check your understanding". A chapter that still says
   "(This chapter is being written.)" is skipped, with that reason.
3. Notebooks: python3 kernel; executed top to bottom in one fresh run (counts 1..n, outputs kept);
   no error or stderr outputs; no nbval exemptions unless whitelisted below with a reason; if the
   notebook draws random numbers, the first code cell seeds them and no generator is unseeded.
4. No pasted package code: no ``def``/``class`` in a notebook that reuses a public name of
   ``course_utils`` (nor an assignment to ``softmax``, ``causal_mask``, ...), outside exercise
   cells (which a checker compares with the package) and cells tagged ``teaching-copy`` (which
   a test under ``tests/`` must compare with the package).
5. Every image output has alt text (cell metadata ``mystnb.image.alt``; recipe in
   ``course_utils.plotting``).
6. Citations resolve; every bib entry has title, author and year; no key is defined twice.
7. The glossary uses ``{glossary}``, every term is "English (中文)", and every ``{term}`` resolves.
8. Text that mentions GPT-4's configuration labels it as speculation (the seed's rule).
10. ``LICENSE``, ``LICENSE-CONTENT`` and a licence file in every vendored static directory.
11. The code the book shows fits its code column: every line of a notebook's code cells (chapters,
    appendix, their 中文 copies) and of the package code a page shows with ``literalinclude``
    is at most the notebooks' line length (``chapters/ruff.toml``), counted as ruff counts it.
12. The furniture: every chapter opens with a ``**Prerequisites:**`` paragraph right after its
    title, whose ``{doc}`` links exist; the Markdown cell right before every widget (chapters and
    appendix) asks a ``**Predict, then move it.**`` question and has an ``Answer`` dropdown after
    it.

Rule 9 (the built site) is in ``tests/test_built_site.py``.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import tomllib
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
CHAPTER_DIR = REPO / "chapters"
PACKAGE = REPO / "src" / "course_utils"
CHAPTERS = sorted(CHAPTER_DIR.glob("*.ipynb"))
PLACEHOLDER = "(This chapter is being written.)"

#: nbval exemptions that are allowed, as {(notebook file name, cell id): reason}. The course's rule
#: is that a result cell is never excused from comparison; only truly volatile output (a timing, a
#: memory address) may be, and then the reason is written here.
NBVAL_WHITELIST: dict[tuple[str, str], str] = {
    ("07_causal_attention.ipynb", "f18de7c4"): (
        "times a decoding step on the reader's own machine (measure_decode_floor): wall-clock "
        "times and the bandwidth change at every run; the saved benchmark above it is compared"
    ),
}
NBVAL_TAGS = {"nbval-ignore-output", "nbval-skip", "nbval-raises-exception", "raises-exception"}
NBVAL_COMMENT = re.compile(r"^\s*#\s*NBVAL_(IGNORE_OUTPUT|SKIP|RAISES_EXCEPTION)\b", re.M)

#: Names a notebook may not define even under another module's __all__ (the course's core concepts).
CORE_NAMES = {"softmax", "scaled_dot_product_attention", "MultiHeadAttention", "causal_mask"}
#: Tags that hide a solution's code behind a click in the book (myst-nb / Jupyter Book).
HIDING_TAGS = {"hide-cell", "hide-input", "dropdown"}
#: Tags that mark a cell as part of an exercise (starter or solution).
EXERCISE_TAGS = {"exercise", "solution"}
SPECULATION_WORDS = ("speculation", "speculative", "推测", "not disclosed", "undisclosed", "guess")


# --------------------------------------------------------------------------------------------
# Reading helpers
# --------------------------------------------------------------------------------------------


@functools.cache
def load_notebook(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def tags(cell: dict[str, Any]) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def strip_fences(text: str) -> str:
    """Markdown without the content of ``` / ~~~ code fences (```{admonition} content stays)."""
    out: list[str] = []
    fence: str | None = None  # the open code fence, whose content is dropped
    directives: list[str] = []  # open directive fences (```{admonition}), whose content is kept
    for line in text.splitlines():
        m = re.match(r"^\s*(`{3,}|~{3,})(.*)$", line)
        if fence is not None:
            if m and m.group(1).startswith(fence) and not m.group(2).strip():
                fence = None
            continue
        if m and m.group(2).strip().startswith("{"):
            directives.append(m.group(1))
        elif m and not m.group(2).strip() and directives and m.group(1).startswith(directives[-1]):
            directives.pop()
        elif m:
            fence = m.group(1)
            continue
        out.append(line)
    return "\n".join(out)


def headings(text: str) -> list[tuple[int, str]]:
    """(level, title) of every ATX heading outside code fences."""
    found = []
    for line in strip_fences(text).splitlines():
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            found.append((len(m.group(1)), m.group(2)))
    return found


def code_without_magics(text: str) -> str:
    """Cell source with IPython magics and shell escapes commented out, so that ast can parse it."""
    return "\n".join(
        "#" + line if line.lstrip().startswith(("%", "!")) else line for line in text.splitlines()
    )


def parse_cell(cell: dict[str, Any]) -> ast.Module | None:
    try:
        return ast.parse(code_without_magics(source(cell)))
    except SyntaxError:
        return None


def chapter_id(path: Path) -> str:
    return path.stem


def is_placeholder(nb: dict[str, Any]) -> bool:
    return any(PLACEHOLDER in source(c) for c in nb["cells"])


def skip_placeholder(path: Path) -> dict[str, Any]:
    nb = load_notebook(path)
    if is_placeholder(nb):
        pytest.skip(f"{path.name} is still a placeholder ({PLACEHOLDER!r})")
    return nb


def code_cells(nb: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return [(i, c) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]


def toc_files() -> list[str]:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    files: list[str] = [toc["root"]]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    return files


def resolve_toc_file(entry: str) -> Path | None:
    base = REPO / entry
    for candidate in (base, base.with_suffix(".md"), base.with_suffix(".ipynb")):
        if candidate.is_file() and candidate.suffix in {".md", ".ipynb"}:
            return candidate
    return None


def markdown_sources() -> list[tuple[str, str]]:
    """(where, text) of every Markdown text the book renders: toc .md files, notebook markdown."""
    texts = []
    for entry in toc_files():
        path = resolve_toc_file(entry)
        if path is None:
            continue
        if path.suffix == ".md":
            texts.append((path.name, path.read_text(encoding="utf-8")))
        else:
            nb = load_notebook(path)
            for i, cell in enumerate(nb["cells"]):
                if cell["cell_type"] == "markdown":
                    texts.append((f"{path.name} cell {i}", source(cell)))
    return texts


def module_public_names(path: Path) -> set[str]:
    """A module's ``__all__`` if it has a literal one, else its top-level public defs/classes.

    A package whose ``__all__`` joins its submodules' lists re-exports only: its names are found
    in the submodules.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            try:
                return set(ast.literal_eval(node.value))
            except ValueError:  # joins submodules' lists ([*a.__all__]): the names are theirs
                break
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and not node.name.startswith("_")
    }


@functools.cache
def package_public_names() -> dict[str, str]:
    """{public name: module} over every module of course_utils (read with ast, nothing imported)."""
    exported: dict[str, str] = {}
    defined: dict[str, str] = {}  # where a name is implemented, preferred over a re-export
    for path in sorted(PACKAGE.rglob("*.py")):
        if "static" in path.parts:
            continue
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {
            n.name
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        }
        for name in module_public_names(path):
            exported.setdefault(name, module)
            if name in top:
                defined.setdefault(name, module)
    return exported | defined


@functools.cache
def checker_names() -> frozenset[str]:
    """Every ``check*`` function a learner can call from ``course_utils.exercises``."""
    names = set()
    for path in (PACKAGE / "exercises").glob("*.py"):
        names |= {n for n in module_public_names(path) if n.startswith("check")}
    return frozenset(names)


def calls_checker(cell: dict[str, Any]) -> bool:
    tree = parse_cell(cell)
    checkers = checker_names()
    if tree is None:  # fall back on text when the cell is not valid Python (e.g. a starter)
        return any(re.search(rf"\b{re.escape(n)}\s*\(", source(cell)) for n in checkers)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else None
            )
            if name in checkers:
                return True
    return False


def checker_calls(cell: dict[str, Any]) -> list[tuple[str | None, str]]:
    """``(module, checker)`` of every checker call in a cell: ``("ch01", "check_shapes")`` for
    ``ch01.check_shapes(...)``, ``(None, "check_shapes")`` for a bare ``check_shapes(...)``."""
    tree = parse_cell(cell)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in checker_names():
                owner = func.value.id if isinstance(func.value, ast.Name) else None
                found.append((owner, func.attr))
            elif isinstance(func, ast.Name) and func.id in checker_names():
                found.append((None, func.id))
    return found


def sections(nb: dict[str, Any]) -> list[tuple[int, int, str]]:
    """(cell index, level, title) of every heading of the notebook, in order."""
    return [
        (i, level, title)
        for i, cell in enumerate(nb["cells"])
        if cell["cell_type"] == "markdown"
        for level, title in headings(source(cell))
    ]


def section_span(nb: dict[str, Any], pattern: str) -> tuple[int, int] | None:
    """Cells (first, last) of the level-2 section whose title matches ``pattern``."""
    heads = sections(nb)
    for k, (i, level, title) in enumerate(heads):
        if level == 2 and re.fullmatch(pattern, title, re.I):
            end = next((j for j, lv, _ in heads[k + 1 :] if lv <= 2), len(nb["cells"]))
            return i, end
    return None


def has_dropdown(markdown: str) -> bool:
    return bool(
        re.search(r"^\s*:class:.*\bdropdown\b", markdown, re.M)
        or re.search(r"^\s*(`{3,}|:{3,})\s*\{(dropdown|toggle)\}", markdown, re.M)
    )


# --------------------------------------------------------------------------------------------
# Rule 1: table of contents
# --------------------------------------------------------------------------------------------


def test_toc_files_exist_and_are_unique():
    entries = toc_files()
    missing = [e for e in entries if resolve_toc_file(e) is None]
    assert not missing, f"_toc.yml lists files that do not exist (as .md or .ipynb): {missing}"
    dupes = sorted({e for e in entries if entries.count(e) > 1})
    assert not dupes, f"_toc.yml lists these files more than once: {dupes}"


def test_every_chapter_notebook_is_in_the_toc_and_vice_versa():
    listed = {Path(e).with_suffix("").as_posix() for e in toc_files()}
    on_disk = {p.relative_to(REPO).with_suffix("").as_posix() for p in CHAPTERS}
    not_listed = sorted(on_disk - listed)
    assert not not_listed, f"notebooks in chapters/ missing from _toc.yml: {not_listed}"
    listed_chapters = sorted(e for e in listed if e.startswith("chapters/"))
    not_on_disk = [e for e in listed_chapters if e not in on_disk]
    assert not not_on_disk, f"_toc.yml lists chapters with no chapters/*.ipynb: {not_on_disk}"
    assert CHAPTERS, "no notebooks in chapters/"


# --------------------------------------------------------------------------------------------
# Rule 2: chapter structure
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_chapter_has_required_sections(path: Path):
    nb = skip_placeholder(path)
    number = int(re.match(r"\d+", path.stem).group())
    problems = []
    first = next((c for c in nb["cells"] if c["cell_type"] == "markdown"), None)
    title = headings(source(first)) if first else []
    if not title or title[0][0] != 1 or not re.match(rf"{number}\.\s+\S", title[0][1]):
        got = title[0] if title else "no heading"
        problems.append(
            f"first markdown cell must start with the title '# {number}. ...' (got {got})"
        )
    # One look in every chapter: a green tip admonition holding a numbered list, in the first cell.
    objectives = re.search(
        r"^(`{3,}|:{3,})\{admonition\} Learning objectives\n:class: tip\n(.*?)^\1",
        source(first) if first else "",
        re.M | re.S,
    )
    if objectives is None or not re.search(r"^1\. ", objectives.group(2), re.M):
        problems.append(
            "the first cell needs the objectives as ```{admonition} Learning objectives, "
            ":class: tip, then a numbered list (as in every chapter)"
        )
    for pattern, label in [
        (r"summary", "## Summary"),
        (r"exercises", "## Exercises"),
        (r"check your understanding", "## Check your understanding"),
    ]:
        if section_span(nb, pattern) is None:
            problems.append(f"no level-2 heading {label!r}")
    quiz = section_span(nb, r"check your understanding")
    if quiz is not None:
        first_cell = source(nb["cells"][quiz[0]])
        text = first_cell[first_cell.lower().index("check your understanding") :] + "\n".join(
            source(c) for c in nb["cells"][quiz[0] + 1 : quiz[1]] if c["cell_type"] == "markdown"
        )
        if not has_dropdown(text):
            problems.append(
                f"'Check your understanding' (cell {quiz[0]}) has no revealable answer "
                f"(a dropdown, e.g. ```{{admonition}} Answer with :class: dropdown)"
            )
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


def exercise_cells(nb: dict[str, Any]) -> tuple[tuple[int, int] | None, list[int]]:
    """The Exercises section's span and its visible code cells that call a checker."""
    span = section_span(nb, r"exercises")
    if span is None:
        return None, []
    start, end = span
    cells = [
        i
        for i in range(start + 1, end)
        if nb["cells"][i]["cell_type"] == "code"
        and not tags(nb["cells"][i]) & HIDING_TAGS
        and calls_checker(nb["cells"][i])
    ]
    return span, cells


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_chapter_exercises_call_checkers_and_have_solutions(path: Path):
    nb = skip_placeholder(path)
    span, exercises = exercise_cells(nb)
    assert span is not None, f"{path.name}: no '## Exercises' section"
    assert len(exercises) >= 3, (
        f"{path.name}: the Exercises section (cells {span[0]}..{span[1] - 1}) has "
        f"{len(exercises)} visible code cells calling a course_utils.exercises checker "
        f"(cells {exercises}); need >= 3"
    )
    problems = []
    number = int(re.match(r"\d+", path.stem).group())
    module = f"ch{number:02d}"
    bounds = [*exercises[1:], span[1] + 1]
    for i, nxt in zip(exercises, bounds, strict=True):
        cell = nb["cells"][i]
        if "exercise" not in tags(cell):
            problems.append(f"exercise cell {i} is not tagged 'exercise'")
        called = checker_calls(cell)
        if not called or any(owner != module for owner, _ in called):
            problems.append(
                f"exercise cell {i} must call its checker as {module}.check_...(...) (one call "
                f"style in every chapter: `from course_utils.exercises import {module}`); found "
                f"{[f'{o}.{n}' if o else n for o, n in called]}"
            )
        # The solution follows its exercise, before the next one: an EXECUTED code cell tagged
        # ["hide-cell", "solution"] (hidden behind a click in the book, checked by nbval) that calls
        # the same checker. Markdown dropdowns are not accepted: nbval could not check them.
        after = list(enumerate(nb["cells"][i + 1 : min(nxt, len(nb["cells"]))], start=i + 1))
        solutions = [
            (j, c)
            for j, c in after
            if c["cell_type"] == "code" and {"hide-cell", "solution"} <= tags(c)
        ]
        if not solutions:
            problems.append(
                f"exercise cell {i} has no solution after it: a code cell tagged "
                f"['hide-cell', 'solution'] (as chapter 1 does), executed, that calls the checker"
            )
            continue
        j, solution = solutions[0]
        if solution.get("execution_count") is None or not solution.get("outputs"):
            problems.append(f"solution cell {j} was not executed (no execution_count or outputs)")
        if {n for _, n in checker_calls(solution)} != {n for _, n in called}:
            problems.append(
                f"solution cell {j} must call the same checker as exercise cell {i} "
                f"({sorted({n for _, n in called})}); it calls "
                f"{sorted({n for _, n in checker_calls(solution)})}"
            )
        dropdowns = [
            k
            for k, c in after
            if c["cell_type"] == "markdown" and "{admonition} Solution" in source(c)
        ]
        if dropdowns:
            problems.append(
                f"cells {dropdowns}: a markdown solution dropdown; use the hidden solution cell "
                f"only (one reveal style across chapters)"
            )
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


# --------------------------------------------------------------------------------------------
# Rule 3: executed, deterministic notebooks
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_notebook_kernel_is_python3(path: Path):
    spec = load_notebook(path)["metadata"].get("kernelspec", {})
    assert spec.get("name") == "python3", f"{path.name}: kernelspec name is {spec.get('name')!r}"
    assert spec.get("language", "python") == "python", f"{path.name}: kernelspec {spec}"


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_notebook_was_executed_top_to_bottom(path: Path):
    nb = skip_placeholder(path)
    cells = [(i, c) for i, c in code_cells(nb) if source(c).strip()]
    counts = [c.get("execution_count") for _, c in cells]
    not_run = [i for i, c in cells if c.get("execution_count") is None]
    assert not not_run, (
        f"{path.name}: code cells {not_run} have no execution_count: the notebook was not executed "
        f"(run scripts/execute_notebooks.py {path.relative_to(REPO)})"
    )
    expected = list(range(1, len(cells) + 1))
    if counts != expected:
        bad = next(k for k, (a, b) in enumerate(zip(counts, expected, strict=True)) if a != b)
        pytest.fail(
            f"{path.name}: execution counts are not 1..{len(cells)} in order (not one fresh "
            f"top-to-bottom run): cell {cells[bad][0]} has [{counts[bad]}], "
            f"expected [{expected[bad]}]"
        )


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_notebook_has_no_error_or_stderr_output(path: Path):
    nb = load_notebook(path)
    problems = []
    for i, cell in code_cells(nb):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                problems.append(f"cell {i}: error output {out.get('ename')}: {out.get('evalue')}")
            elif out.get("output_type") == "stream" and out.get("name") == "stderr":
                text = "".join(out.get("text", ""))[:200]
                problems.append(f"cell {i}: stderr output (the build fails on it): {text!r}")
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_no_nbval_exemptions_outside_the_whitelist(path: Path):
    nb = load_notebook(path)
    problems = []
    for i, cell in code_cells(nb):
        marked = sorted(tags(cell) & NBVAL_TAGS) + NBVAL_COMMENT.findall(source(cell))
        if marked and (path.name, cell.get("id", "")) not in NBVAL_WHITELIST:
            problems.append(
                f"cell {i} (id {cell.get('id')}) is excused from nbval by {marked}; results are "
                f"compared strictly. Make the output deterministic, or whitelist it in "
                f"tests/test_course_structure.py with the reason it is volatile"
            )
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


def test_nbval_whitelist_entries_exist():
    """A whitelist entry whose cell no longer exists (or is no longer exempted) must be removed."""
    for (name, cell_id), reason in NBVAL_WHITELIST.items():
        assert reason.strip(), f"whitelist entry {name} {cell_id} has no reason"
        nb = load_notebook(CHAPTER_DIR / name)
        assert any(c.get("id") == cell_id for c in nb["cells"]), f"{name}: no cell id {cell_id}"


NUMPY_LEGACY = re.compile(
    r"\bnp\.random\.(rand|randn|randint|random|normal|uniform|choice|shuffle|permutation|"
    r"standard_normal|binomial|poisson|multinomial)\s*\("
)
TORCH_RANDOM = re.compile(
    r"\btorch\.(rand|randn|randint|randperm|normal|multinomial|bernoulli|rand_like|randn_like)\s*\("
    r"|\b(nn\.\w+|MultiHeadAttention|run_heads_experiment)\s*\("
)
STDLIB_RANDOM = re.compile(r"\brandom\.(random|randint|choice|choices|shuffle|sample|gauss)\s*\(")


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_randomness_is_seeded(path: Path):
    nb = skip_placeholder(path)
    cells = [(i, source(c)) for i, c in code_cells(nb) if source(c).strip()]
    if not cells:
        return
    first_i, first = cells[0]
    problems = []
    for i, src in cells:
        code = "\n".join(line.split("#", 1)[0] for line in src.splitlines())  # drop comments
        if re.search(r"default_rng\(\s*\)", code):
            problems.append(f"cell {i}: np.random.default_rng() without a seed")
        if NUMPY_LEGACY.search(code) and "np.random.seed(" not in first:
            problems.append(
                f"cell {i} uses numpy's global RNG ({NUMPY_LEGACY.search(code).group()}...) but "
                f"the first code cell (cell {first_i}) does not call np.random.seed(...)"
            )
        if TORCH_RANDOM.search(code) and "torch.manual_seed(" not in first:
            problems.append(
                f"cell {i} draws torch random numbers ({TORCH_RANDOM.search(code).group()}...) but "
                f"the first code cell (cell {first_i}) does not call torch.manual_seed(...)"
            )
        if STDLIB_RANDOM.search(code) and "random.seed(" not in first:
            problems.append(f"cell {i} uses the random module; seed it in cell {first_i}")
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


# --------------------------------------------------------------------------------------------
# Rule 4: no pasted package code
# --------------------------------------------------------------------------------------------


def defined_names(tree: ast.Module) -> list[tuple[str, str]]:
    """(kind, name) of every def, class and plain assignment target in a cell, at any depth."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(("def", node.name))
        elif isinstance(node, ast.ClassDef):
            found.append(("class", node.name))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [("assignment", t.id) for t in targets if isinstance(t, ast.Name)]
    return found


@functools.cache
def all_tests_source() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "tests").glob("test_*.py"))


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_notebook_does_not_redefine_package_names(path: Path):
    nb = load_notebook(path)
    public = package_public_names()
    span = section_span(nb, r"exercises")
    problems = []
    for i, cell in code_cells(nb):
        tree = parse_cell(cell)
        if tree is None:
            problems.append(f"cell {i} is not valid Python (cannot check it)")
            continue
        in_exercises = span is not None and span[0] < i < span[1]
        if (in_exercises and calls_checker(cell)) or tags(cell) & EXERCISE_TAGS:
            continue  # an exercise: the learner writes it, the checker compares it with the package
        for kind, name in defined_names(tree):
            # def/class: any public name; a plain assignment (softmax = lambda ...): core names only
            if name not in CORE_NAMES and (kind == "assignment" or name not in public):
                continue
            origin = public.get(name, "course_utils")
            if "teaching-copy" in tags(cell):
                if path.name not in all_tests_source():
                    problems.append(
                        f"cell {i} is a teaching copy of {origin}.{name} but no tests/test_*.py "
                        f"mentions {path.name} to compare it with the package"
                    )
                continue
            problems.append(
                f"cell {i}: {kind} {name!r} redefines {origin}.{name}; import it instead, or tag "
                f"the cell 'teaching-copy' and compare it with the package in a test"
            )
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


# --------------------------------------------------------------------------------------------
# Rule 5: alt text on every image output
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_image_outputs_have_alt_text(path: Path):
    nb = load_notebook(path)
    problems = []
    for i, cell in code_cells(nb):
        mimes = {m for out in cell.get("outputs", []) for m in out.get("data", {})}
        images = sorted(m for m in mimes if m.startswith("image/"))
        if not images:
            continue
        alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", "")
        if not str(alt).strip():
            problems.append(
                f"cell {i} outputs {images} but has no cell metadata mystnb.image.alt "
                f"(recipe: course_utils.plotting docstring)"
            )
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


# --------------------------------------------------------------------------------------------
# Rule 6: citations and the bibliography
# --------------------------------------------------------------------------------------------


def parse_bib(text: str) -> list[tuple[str, str, dict[str, str]]]:
    """(type, key, {field: value}) of every entry; a small brace-aware parser (no macros needed)."""
    entries = []
    for m in re.finditer(r"@(\w+)\s*\{\s*([^,\s]+)\s*,", text):
        kind, key = m.group(1).lower(), m.group(2)
        if kind in {"comment", "preamble", "string"}:
            continue
        depth, pos = 1, m.end()
        while depth and pos < len(text):
            depth += {"{": 1, "}": -1}.get(text[pos], 0)
            pos += 1
        body = text[m.end() : pos - 1]
        fields: dict[str, str] = {}
        depth, start = 0, 0
        for k, ch in enumerate(body + ","):
            depth += {"{": 1, "}": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                part = body[start:k]
                start = k + 1
                if "=" in part:
                    name, value = part.split("=", 1)
                    fields[name.strip().lower()] = value.strip().strip('{}"').strip()
        entries.append((kind, key, fields))
    return entries


@functools.cache
def bib_entries() -> list[tuple[str, str, dict[str, str]]]:
    return parse_bib((REPO / "references.bib").read_text(encoding="utf-8"))


def test_bib_parser_finds_fields():
    """Guards the parser itself: a field that is missing must be reported missing."""
    entries = parse_bib("@misc{a, title={T {X}}, year = 2020}\n@book{b,\n author = {A and B},}")
    assert entries == [
        ("misc", "a", {"title": "T {X", "year": "2020"}),
        ("book", "b", {"author": "A and B"}),
    ]


def test_bib_keys_are_unique():
    keys = [key for _, key, _ in bib_entries()]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    assert keys, "references.bib has no entries"
    assert not dupes, f"references.bib defines these keys more than once: {dupes}"


def test_bib_entries_have_title_author_year():
    problems = []
    for kind, key, fields in bib_entries():
        missing = [f for f in ("title", "author", "year") if not fields.get(f)]
        if missing:
            problems.append(f"@{kind}{{{key}}} lacks {missing}")
        elif not re.fullmatch(r"\d{4}", fields["year"]):
            problems.append(f"@{kind}{{{key}}} year is {fields['year']!r}, not a 4-digit year")
    assert not problems, "references.bib:\n  " + "\n  ".join(problems)


CITE = re.compile(r"\{cite(?::\w+)?\}`([^`]*)`")


def test_citation_keys_exist_in_bib():
    keys = {key for _, key, _ in bib_entries()}
    problems = []
    for where, text in markdown_sources():
        for m in CITE.finditer(text):
            for key in (k.strip() for k in m.group(1).split(",")):
                if key not in keys:
                    problems.append(f"{where}: {{cite}}`{key}` is not in references.bib")
    assert not problems, "\n  ".join(["unknown citation keys:", *problems])


# --------------------------------------------------------------------------------------------
# Rule 7: glossary
# --------------------------------------------------------------------------------------------

CJK = r"[\u3400-\u9fff]"


def glossary_terms() -> list[str]:
    text = (REPO / "glossary.md").read_text(encoding="utf-8")
    block = re.search(r"^(`{3,}|:{3,})\{glossary\}[^\n]*\n(.*?)^\1\s*$", text, re.M | re.S)
    assert block, "glossary.md has no ```{glossary} directive"
    body = block.group(2)
    return [
        line.strip()
        for line in body.splitlines()
        if line.strip() and not line[0].isspace() and not line.startswith(":")
    ]


def test_glossary_terms_are_english_with_chinese():
    terms = glossary_terms()
    assert len(terms) >= 5, f"glossary has only {len(terms)} terms: {terms}"
    bad = [t for t in terms if not re.fullmatch(rf"[A-Za-z][^()]*\s\([^()]*{CJK}[^()]*\)", t)]
    assert not bad, f"glossary terms not of the form 'English (中文)': {bad}"
    lowered = [t.lower() for t in terms]
    dupes = sorted({t for t in lowered if lowered.count(t) > 1})
    assert not dupes, f"glossary defines these terms twice: {dupes}"


def test_term_references_resolve():
    terms = {t.lower() for t in glossary_terms()}
    problems = []
    for where, text in markdown_sources():
        for m in re.finditer(r"\{term\}`([^`]*)`", text):
            ref = m.group(1)
            target = re.search(r"<([^<>]+)>\s*$", ref)
            name = (target.group(1) if target else ref).strip()
            if name.lower() not in terms:
                problems.append(f"{where}: {{term}}`{ref}` has no glossary entry {name!r}")
    assert not problems, "\n  ".join(["unresolved {term} references:", *problems])


# --------------------------------------------------------------------------------------------
# Rule 8: GPT-4 speculation is labelled
# --------------------------------------------------------------------------------------------


def text_units(text: str) -> list[str]:
    """Paragraphs, with every table row and list item on its own (each must carry its own label)."""
    units = []
    for para in re.split(r"\n\s*\n", text):
        lines = para.splitlines()
        if any(re.match(r"^\s*(\||[-*+]\s|\d+\.\s)", ln) for ln in lines):
            units += lines
        else:
            units.append(para)
    return units


def gpt4_texts() -> list[tuple[str, str]]:
    texts = list(markdown_sources())
    for path in CHAPTERS:
        for i, cell in code_cells(load_notebook(path)):
            texts.append((f"{path.name} cell {i} (code)", source(cell)))
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                out_text = (
                    out.get("text", "") or data.get("text/plain", "") or data.get("text/html", "")
                )
                texts.append((f"{path.name} cell {i} (output)", "".join(out_text)))
    return texts


def test_gpt4_configuration_is_labelled_speculation():
    problems = []
    for where, text in gpt4_texts():
        for unit in text_units(text):
            if re.search(r"GPT[-‑ ]?4(?![0-9])", unit, re.I) and not any(
                w in unit.lower() for w in SPECULATION_WORDS
            ):
                problems.append(f"{where}: {unit.strip()[:160]!r}")
    assert not problems, "\n  ".join(
        [f"text mentioning GPT-4 without a speculation label {SPECULATION_WORDS}:", *problems]
    )


# --------------------------------------------------------------------------------------------
# Rule 10: licences
# --------------------------------------------------------------------------------------------


def test_licence_files_exist():
    for name in ("LICENSE", "LICENSE-CONTENT"):
        path = REPO / name
        assert path.is_file() and path.stat().st_size > 100, f"{name} is missing or nearly empty"


def test_every_vendored_directory_has_a_licence():
    vendor = REPO / "_ext" / "course_site" / "static" / "course_vendor"
    dirs = sorted(d for d in vendor.iterdir() if d.is_dir())
    assert dirs, f"nothing vendored under {vendor}?"
    missing = [
        d.name
        for d in dirs
        if not any(re.match(r"(LICEN[CS]E|COPYING|NOTICE)", f.name, re.I) for f in d.iterdir())
    ]
    assert not missing, f"vendored directories without a licence file in {vendor}: {missing}"
    # The other static folders hold the course's own code (MIT, /LICENSE), never third-party code.
    for other in (REPO / "_ext" / "course_site" / "static").iterdir():
        if other.is_dir() and other != vendor:
            for f in other.rglob("*"):
                if f.is_file():
                    head = f.read_text(encoding="utf-8", errors="replace")[:2000].lower()
                    assert "copyright" not in head or "attention, step by step" in head, (
                        f"{f.relative_to(REPO)} looks third-party (it has a copyright notice): "
                        f"vendor it under course_vendor/ with its licence"
                    )


# --------------------------------------------------------------------------------------------
# Rule 11: the code the book shows fits its column
# --------------------------------------------------------------------------------------------

#: The notebooks and their 中文 copies: their code cells are shown in the book's column.
NOTEBOOK_DIRS = (CHAPTER_DIR, REPO / "appendix")
ZH_NOTEBOOKS = REPO / "locale" / "zh_CN" / "notebooks"
#: ``{literalinclude} path`` and its options, in a Markdown cell (MyST).
LITERALINCLUDE = re.compile(r"\{literalinclude\}\s+(\S+)\n((?:\s*:\w+:.*\n)*)")


def code_line_length() -> int:
    """The notebooks' line length: what a code block of the book holds at 1280 px (measured by
    ``tests/browser/test_site_audit.py::test_page_audit``, on every page with code)."""
    lengths = {
        tomllib.loads((folder / "ruff.toml").read_text(encoding="utf-8"))["line-length"]
        for folder in NOTEBOOK_DIRS
    }
    assert len(lengths) == 1, f"chapters/ and appendix/ have different line lengths: {lengths}"
    return lengths.pop()


def columns(line: str) -> int:
    """Width of a line in a monospace column, as ruff counts it: wide (CJK) characters take two.

    >>> columns("x = 1"), columns("小明")
    (5, 4)
    """
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


def shown_source(path: Path, options: str) -> str:
    """The lines of ``path`` that ``literalinclude`` shows: the whole file, or its ``:pyobject:``
    (a top-level function or class, or ``Class.method``)."""
    text = path.read_text(encoding="utf-8")
    obj = re.search(r":pyobject:\s*(\S+)", options)
    if re.search(r":(lines|start-after|end-before|start-at|end-at):", options):
        pytest.fail(f"literalinclude option not read by this test: {options!r}")
    if not obj:
        return text
    body: list[ast.stmt] = ast.parse(text).body
    node: ast.AST | None = None
    for name in obj.group(1).split("."):
        node = next((n for n in body if getattr(n, "name", None) == name), None)
        assert node is not None, f"{path.name}: no {obj.group(1)} to include"
        body = getattr(node, "body", [])
    lines = text.splitlines()
    return "\n".join(lines[node.lineno - 1 : node.end_lineno])


def book_notebooks() -> list[Path]:
    english = [p for folder in NOTEBOOK_DIRS for p in sorted(folder.glob("*.ipynb"))]
    return english + [ZH_NOTEBOOKS / p.relative_to(REPO) for p in english]


@pytest.mark.parametrize("path", book_notebooks(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_code_shown_fits_the_column(path: Path):
    """No code line of the notebook, nor of the package code it includes, is wider than the
    notebooks' line length (it would scroll sideways in the book)."""
    limit = code_line_length()
    nb = load_notebook(path)
    wide = [
        f"code cell {i}: {line.strip()[:50]!r} ({columns(line)} columns)"
        for i, cell in enumerate(nb["cells"])
        if cell["cell_type"] == "code"
        for line in source(cell).splitlines()
        if columns(line) > limit
    ]
    # A 中文 copy's includes are read from where its English notebook is.
    folder = (
        REPO / path.relative_to(ZH_NOTEBOOKS) if path.is_relative_to(ZH_NOTEBOOKS) else path
    ).parent
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for m in LITERALINCLUDE.finditer(source(cell)):
            included = folder / m[1]
            wide += [
                f"literalinclude {m[1]}: {line.strip()[:50]!r} ({columns(line)} columns)"
                for line in shown_source(included.resolve(), m[2]).splitlines()
                if columns(line) > limit
            ]
    assert not wide, (
        f"{len(wide)} line(s) wider than {limit} columns (chapters/ruff.toml):\n"
        + "\n".join(wide[:20])
    )


# --------------------------------------------------------------------------------------------
# Rule 12: the chapter furniture (a prerequisites line, a question above every widget)
# --------------------------------------------------------------------------------------------

#: A code cell whose committed output is a live widget.
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: The question above a widget: a paragraph that opens with this lead, then the question.
PREDICT = re.compile(r"^\*\*Predict, then move it\.\*\*[ \t]+\S", re.M)
#: Its answer: a revealable ``Answer`` admonition (```` ```{admonition} Answer ```` + dropdown).
ANSWER = re.compile(
    r"^(`{3,}|:{3,})\{admonition\}\s+Answer\s*\n(?:\s*:\w+:.*\n)*?\s*:class:.*\bdropdown\b", re.M
)
#: The prerequisites line, right after the chapter's title.
PREREQUISITES = re.compile(r"^\*\*Prerequisites:\*\*[ \t]+\S", re.M)
#: ``{doc}`target``` or ``{doc}`text <target>```.
DOC_ROLE = re.compile(r"\{doc\}`(?:[^`<]*<([^`>]+)>|([^`]+))`")
APPENDIX = sorted((REPO / "appendix").glob("*.ipynb"))


def _furniture_params(paths: list[Path]) -> list[Any]:
    return [pytest.param(p, id=p.relative_to(REPO).as_posix()) for p in paths]


def widget_cells(nb: dict[str, Any]) -> list[int]:
    """Indices of the code cells whose committed output is a live widget."""
    return [
        i
        for i, cell in code_cells(nb)
        if any(WIDGET_MIME in out.get("data", {}) for out in cell.get("outputs", []))
    ]


def doc_targets(markdown: str) -> list[str]:
    """The targets of the ``{doc}`` roles of a Markdown text.

    >>> doc_targets("see {doc}`02_scaling` and {doc}`the page <../appendix/memory>`")
    ['02_scaling', '../appendix/memory']
    """
    return [(m[1] or m[2]).strip() for m in DOC_ROLE.finditer(markdown)]


def doc_exists(folder: Path, target: str) -> bool:
    """``{doc}`` resolves a target relative to the page's folder (or to the book root if it
    starts with ``/``), to a ``.md`` or ``.ipynb`` file."""
    base = REPO / target.lstrip("/") if target.startswith("/") else folder / target
    return any(base.with_suffix(ext).resolve().is_file() for ext in (".md", ".ipynb"))


@pytest.mark.parametrize("path", _furniture_params(CHAPTERS + APPENDIX))
def test_every_widget_has_a_predict_question_above_it(path: Path):
    """The Markdown cell right before a widget's code cell asks a "Predict, then move it." question
    and reveals its answer in an ``Answer`` dropdown after it."""
    nb = load_notebook(path)
    problems = []
    for i in widget_cells(nb):
        before = nb["cells"][i - 1] if i else None
        text = source(before) if before and before["cell_type"] == "markdown" else ""
        question = PREDICT.search(text)
        if question is None:
            problems.append(
                f"widget cell {i}: the Markdown cell before it has no paragraph starting "
                f"'**Predict, then move it.**' followed by the question"
            )
        elif not ANSWER.search(text, question.end()):
            problems.append(
                f"widget cell {i}: the question has no answer after it "
                f"(````{{admonition}} Answer with :class: dropdown)"
            )
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("path", _furniture_params(CHAPTERS))
def test_chapter_opens_with_a_prerequisites_line(path: Path):
    """Right after the title ``# N. ...``, a paragraph ``**Prerequisites:** ...`` whose ``{doc}``
    links all lead to pages of the book."""
    nb = skip_placeholder(path)
    first = next((c for c in nb["cells"] if c["cell_type"] == "markdown"), None)
    text = source(first) if first else ""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
    assert len(blocks) >= 2 and blocks[0].startswith("# "), f"{path.name}: no title block"
    assert PREREQUISITES.match(blocks[1]), (
        f"{path.name}: the paragraph after the title must start '**Prerequisites:** ' "
        f"(got {blocks[1][:60]!r})"
    )
    missing = [t for t in doc_targets(blocks[1]) if not doc_exists(path.parent, t)]
    assert not missing, f"{path.name}: prerequisites link to pages that do not exist: {missing}"


def test_no_backtick_fence_has_a_backtick_in_its_title():
    """CommonMark: the info string of a backtick fence may not hold a backtick, so
    ````{admonition} How `f` works```` is no fence at all, and its closing line opens a code block
    that swallows the rest of the cell. Such a title needs a colon fence (``::::{admonition}``)."""
    bad = [
        (where, line.strip()[:70])
        for where, text in markdown_sources()
        for line in text.splitlines()
        if re.match(r"^\s*`{3,}(?=[^`])[^`\n]*`", line)
    ]
    assert not bad, bad


def test_the_instructor_guide_states_the_furniture_and_the_evidence_standard():
    """One chapter furniture and one evidence standard, stated where teachers read them."""
    guide = (REPO / "instructor_guide.md").read_text(encoding="utf-8")
    furniture = guide[guide.index("## What every chapter has") :][:1600]
    for piece in ("Learning objectives", "prerequisites", "Predict, then move it", "3 checked",
                  "predict, derive or build", "Check your understanding", "summary"):  # fmt: skip
        assert piece in furniture, piece
    evidence = guide[guide.index("## The evidence standard") :][:1200]
    for piece in ("at least 3 random seeds", "spread", "citation", "labelled as a guess"):
        assert piece in evidence, piece
