"""Committed notebooks save widget state, never widget code.

A live widget sends its whole ES module and stylesheet (``_esm``, ``_css``); the execute script
replaces them by placeholders naming the module file (``course_utils.widgets.saved_code``), and the
site build writes the files into ``_static/course_widgets/``. So a change to a widget's ``.js`` or
``.css`` needs ``make book``, not a re-execution of every notebook.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from course_utils.widgets._base import widget_css, widget_esm
from course_utils.widgets.saved_code import (
    PACKAGE_PREFIX,
    module_file,
    placeholder_css,
    placeholder_esm,
    read_code_script,
    strip_widget_code,
    widget_stems,
    write_widget_modules,
)

REPO = Path(__file__).resolve().parents[1]
ZH = REPO / "locale" / "zh_CN" / "notebooks"
NOTEBOOKS = [
    *((p, "en") for p in sorted([*REPO.glob("chapters/*.ipynb"), *REPO.glob("appendix/*.ipynb")])),
    *((p, "zh") for p in sorted(ZH.glob("*/*.ipynb"))),
]
STATE = "application/vnd.jupyter.widget-state+json"
#: Longest code a saved widget may keep: the placeholder is about 300 bytes, a real module 25 KB.
MAX_SAVED_CODE = 600


def _saved_models(path: Path) -> list[dict]:
    meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
    return list(meta.get("widgets", {}).get(STATE, {}).get("state", {}).values())


def _saved_widgets(path: Path) -> list[tuple[str, dict]]:
    """``(widget module stem, saved state)`` of every course widget saved in a notebook."""
    saved = []
    for model in _saved_models(path):
        state = model.get("state", {})
        widget_id = state.get("_anywidget_id", "")
        if widget_id.startswith(PACKAGE_PREFIX):
            saved.append((widget_id.removeprefix(PACKAGE_PREFIX).split(".")[0], state))
    return saved


def test_the_notebooks_save_course_widgets():
    """The checks below see the widgets (a renamed id would make them pass vacuously)."""
    saved = [w for path, _ in NOTEBOOKS for w in _saved_widgets(path)]
    assert {stem for stem, _ in saved} == set(widget_stems())  # every widget is met somewhere
    assert len(saved) >= 2 * len(widget_stems())  # in both editions


@pytest.mark.parametrize(
    ("path", "lang"), NOTEBOOKS, ids=[f"{lang}-{p.parent.name}-{p.stem}" for p, lang in NOTEBOOKS]
)
def test_no_notebook_saves_widget_code(path: Path, lang: str):
    """Every saved anywidget keeps only a placeholder naming its module file, in its language."""
    problems = []
    for model in _saved_models(path):
        state = model.get("state", {})
        esm, css = str(state.get("_esm", "")), str(state.get("_css", ""))
        if model.get("model_module") != "anywidget":
            continue
        stem = state.get("_anywidget_id", "").removeprefix(PACKAGE_PREFIX).split(".")[0]
        if len(esm) > MAX_SAVED_CODE or len(css) > MAX_SAVED_CODE:
            problems.append(f"{stem}: saves {len(esm) + len(css)} bytes of code")
        elif esm != placeholder_esm(stem, lang) or css != placeholder_css(stem):
            problems.append(f"{stem}: saved code is not the {lang} placeholder")
    assert not problems, (
        f"{path.relative_to(REPO)}: {problems}; re-execute it "
        f"({'make execute-zh' if lang == 'zh' else 'make execute'}), which keeps state only"
    )


@pytest.mark.parametrize("stem", widget_stems())
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_placeholder_names_the_files_the_site_writes(tmp_path: Path, stem: str, lang: str):
    files = {p.name: p for p in write_widget_modules(tmp_path)}
    code = read_code_script(files[module_file(placeholder_esm(stem, lang))].read_text("utf-8"))
    assert code == {"esm": widget_esm(stem, lang), "css": widget_css(stem)}


def test_strip_keeps_state_and_rejects_code_it_does_not_know():
    def notebook(esm: str) -> dict:
        state = {
            "_anywidget_id": "course_utils.widgets.rope_dial.RopeDial",
            "_esm": esm,
            "_css": widget_css("rope_dial"),
            "angle": 3,
        }
        other = {"model_module": "anywidget", "state": {"_anywidget_id": "x.Y", "_esm": "code"}}
        models = {"a": {"model_module": "anywidget", "state": state}, "b": other}
        return nbformat.from_dict({"metadata": {"widgets": {STATE: {"state": models}}}})

    nb = notebook(widget_esm("rope_dial", "zh"))
    assert strip_widget_code(nb) == 1
    models = nb["metadata"]["widgets"][STATE]["state"]
    assert models["a"]["state"]["_esm"] == placeholder_esm("rope_dial", "zh")
    assert models["a"]["state"]["angle"] == 3
    assert models["b"]["state"]["_esm"] == "code"  # not a course widget: left alone
    assert strip_widget_code(nb) == 1  # stripping twice changes nothing
    assert models["a"]["state"]["_esm"] == placeholder_esm("rope_dial", "zh")
    with pytest.raises(ValueError, match=r"rope_dial.*re-execute"):
        strip_widget_code(notebook("export default { render() {} }  // older code"))
