"""``course_utils`` holds only what notebooks import; the build machinery lives in ``_ext/``.

The classroom kit (decks, learner copies, PDF, reveal.js) is ``_ext/course_kit`` and the
bibliography style is ``_ext/course_site/bibstyle.py``; both are loaded by the book through
``sphinx: local_extensions`` in ``_config.yml``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "course_utils"
#: Modules only a site or deck build needs; a learner's notebook never does.
BUILD_SIDE = ("sphinx", "docutils", "pybtex", "nbconvert", "course_site", "course_kit")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_package_imports_no_build_machinery() -> None:
    offenders = {
        p.relative_to(REPO).as_posix(): sorted(_imports(p) & set(BUILD_SIDE))
        for p in PACKAGE.rglob("*.py")
    }
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, f"build-side imports inside course_utils: {offenders}"


def test_the_kit_and_the_bibliography_style_are_not_in_the_package() -> None:
    assert not (PACKAGE / "classroom").exists(), "the classroom kit belongs in _ext/course_kit"
    assert not (PACKAGE / "bibstyle.py").exists(), "bibstyle belongs in _ext/course_site"
    assert (REPO / "_ext" / "course_kit" / "sphinx.py").is_file()
    assert (REPO / "_ext" / "course_kit" / "static" / "course_kit_vendor" / "reveal").is_dir()
    assert (REPO / "_ext" / "course_site" / "bibstyle.py").is_file()
    # No vendored JS/CSS of the site or the decks in the package: a widget's own files only.
    vendored = [p for p in PACKAGE.rglob("*") if "vendor" in p.name.lower()]
    assert not vendored, vendored


def test_the_book_loads_them_as_local_extensions() -> None:
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    local = config["sphinx"]["local_extensions"]
    for name in ("course_site", "course_site.bibstyle", "course_kit.sphinx"):
        assert local.get(name) == "_ext/", f"{name} is not a local extension from _ext/"
    extra = config["sphinx"].get("extra_extensions") or []
    assert not [e for e in extra if str(e).startswith("course_utils")], extra


def test_widget_tests_mirror_the_widget_modules() -> None:
    """One test file per widget module, named after it (not after a chapter): a contributor who
    changes ``widgets/rope_dial.py`` finds its tests in ``tests/test_widgets_rope_dial.py``."""
    tests = REPO / "tests"
    modules = {p.stem for p in (PACKAGE / "widgets").glob("[!_]*.py")}
    widget_tests = {p.stem.removeprefix("test_widgets_") for p in tests.glob("test_widgets_*.py")}
    assert modules <= widget_tests, f"widget modules without a test file: {modules - widget_tests}"
    assert widget_tests <= modules | {"base"}, f"not named after a module: {widget_tests - modules}"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package's modules it imports: every import statement, at module level or in
    a function, under ``TYPE_CHECKING`` or not (a cycle held by a late import is still a cycle)."""
    files = {_module_name(p, root): p for p in (root / package).rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                module = ".".join([*base, *(node.module.split(".") if node.module else [])])
                # ``from pkg import sub`` imports the submodule ``pkg.sub`` when there is one.
                targets = [
                    f"{module}.{a.name}" if f"{module}.{a.name}" in files else module
                    for a in node.names
                ]
            for target in targets:
                while target and target not in files:  # a name inside a module: its module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_finds_a_cycle_through_a_late_import(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import f\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    (pkg / "c.py").write_text("from pkg.a import f\n")
    assert _cycles(_import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b"]]


def test_no_import_cycles() -> None:
    """No module of the package or of the build machinery imports, however late, a module that
    imports it back (``course_utils.causal`` -> ``transformer`` -> ``causal`` used to be held
    together by a function-local import, a ``TYPE_CHECKING`` import and a module __getattr__)."""
    cycles = {
        package: _cycles(_import_graph(root, package))
        for root, package in (
            (REPO / "src", "course_utils"),
            (REPO / "_ext", "course_site"),
            (REPO / "_ext", "course_kit"),
        )
    }
    cycles = {k: v for k, v in cycles.items() if v}
    assert not cycles, f"import cycles: {cycles}"


def test_no_module_getattr() -> None:
    """A name is imported from the module that defines it: no module __getattr__ forwards one."""
    offenders = [
        p.relative_to(REPO).as_posix()
        for p in PACKAGE.rglob("*.py")
        if any(
            isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
            for node in ast.parse(p.read_text(encoding="utf-8")).body
        )
    ]
    assert not offenders, f"module __getattr__ in {offenders}"


def _concept_homes() -> str:
    """The "home" column of CONTRIBUTING's concept table, as one string."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text[text.index("## One home per concept") :]
    section = section[: section.index("\n## ", 1)]
    rows = [r for r in section.splitlines() if r.startswith("|") and r.count("|") >= 3]
    return " ".join(r.split("|")[2] for r in rows[2:])


def test_every_module_has_a_row_in_the_concept_table() -> None:
    """CONTRIBUTING's map of the house names every top-level module and subpackage of the package
    and every module of the build machinery, so that a concept leads to its one home."""
    homes = _concept_homes()
    top = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    top |= {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    missing = sorted(f"course_utils.{name}" for name in top if not re.search(rf"\b{name}\b", homes))
    missing += sorted(
        p.relative_to(REPO).as_posix()
        for p in (REPO / "_ext").glob("*/*.py")
        if p.stem not in ("__init__", "__main__")
        and p.relative_to(REPO).as_posix() not in homes
        and f"`{p.stem}`" not in homes
    )
    assert not missing, f"modules without a row in CONTRIBUTING's concept table: {missing}"


def test_a_module_name_leads_to_one_place() -> None:
    """No two modules of the package share a file name (two ``positions.py`` made readers open the
    wrong one), and no module sits beside a folder of the same name (``web.py`` and ``web/``)."""
    modules = [p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"]
    by_name: dict[str, list[str]] = {}
    for p in modules:
        by_name.setdefault(p.stem, []).append(p.relative_to(PACKAGE).as_posix())
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not shared, f"module names used twice: {shared}"
    beside = [p.relative_to(PACKAGE).as_posix() for p in modules if p.with_suffix("").is_dir()]
    assert not beside, f"modules beside a folder of the same name: {beside}"


def test_every_experiment_lives_in_experiments() -> None:
    """A training experiment a chapter runs is a module of ``course_utils.experiments``."""
    runners = {
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if re.search(r"^def (run_\w+_experiment|train_\w+)\(", p.read_text(encoding="utf-8"), re.M)
    }
    # Trainers that are not experiments: chapter 7's tiny LM and chapter 13's classifier are the
    # chapters' own models, built and trained in the chapter's cells.
    models = {"causal.py", "topic_focus/classifier.py", "_training.py"}
    outside = sorted(r for r in runners - models if not r.startswith("experiments/"))
    assert not outside, f"experiments outside course_utils.experiments: {outside}"


IMPORT_CHANGES_NOTHING = r"""
import json, sys
from IPython.core.interactiveshell import InteractiveShell
import matplotlib
matplotlib.use("Agg")
from matplotlib.text import Text
from matplotlib.axis import Tick

shell = InteractiveShell.instance()
png = shell.display_formatter.formatters["image/png"]
before = (dict(png.type_printers), dict(png.deferred_printers), Text.draw, Tick.draw)
import course_utils, course_utils.plotting, course_utils.widgets, course_utils.exercises
after = (dict(png.type_printers), dict(png.deferred_printers), Text.draw, Tick.draw)
print(json.dumps([a == b for a, b in zip(before, after)]))
"""


def test_importing_the_package_changes_nothing_outside_it(tmp_path) -> None:
    """``import course_utils`` (and its plotting, widgets and exercises), even under
    ``COURSE_LANG=zh``, leaves IPython's PNG formatter and matplotlib's text drawing as they were:
    the book's execute script and ``set_language("zh")`` do those, on purpose."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "COURSE_LANG": "zh", "IPYTHONDIR": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-c", IMPORT_CHANGES_NOTHING],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    unchanged = json.loads(run.stdout.strip().splitlines()[-1])
    names = ["PNG formatter by type", "PNG formatter by name", "Text.draw", "Tick.draw"]
    assert all(unchanged), [n for n, same in zip(names, unchanged, strict=True) if not same]


def test_the_package_reads_no_file_of_the_book() -> None:
    """The package is installed without the book (learner copies, pip): nothing in it reads the
    repository's ``glossary.md`` or other book files; lint rules that do live in ``_ext``."""
    offenders = [
        p.relative_to(REPO).as_posix()
        for p in PACKAGE.rglob("*.py")
        if re.search(r"glossary\.md|parents\[2\]", p.read_text(encoding="utf-8"))
    ]
    assert not offenders, offenders
