"""``course_utils`` holds only what notebooks import; the build machinery lives in ``_ext/``.

The classroom kit (decks, learner copies, PDF, reveal.js) is ``_ext/course_kit`` and the
bibliography style is ``_ext/course_site/bibstyle.py``; both are loaded by the book through
``sphinx: local_extensions`` in ``_config.yml``.
"""

from __future__ import annotations

import ast
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
