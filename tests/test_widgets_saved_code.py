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


def _saved_ids(nb: dict) -> list[str]:
    return sorted(nb["metadata"].get("widgets", {}).get(STATE, {}).get("state", {}))


def test_stable_ids_do_not_depend_on_the_kernels_random_ids():
    """The same notebook saved twice with different random model ids (as two executions save it)
    becomes the same file; every reference still points at a saved model."""
    import random
    import re

    from course_utils.widgets.saved_code import stable_model_ids

    text = (REPO / "chapters" / "01_queries_keys_values.ipynb").read_text(encoding="utf-8")
    ids = sorted(set(re.findall(r"[0-9a-f]{32}", text)))
    assert len(ids) >= 4, "chapter 1 saves several widget models"
    copies = []
    for seed in (1, 2):
        rng = random.Random(seed)
        fresh = {old: f"{rng.getrandbits(128):032x}" for old in ids}
        nb = json.loads(re.sub(r"[0-9a-f]{32}", lambda m, f=fresh: f[m.group(0)], text))
        assert stable_model_ids(nb, "en/chapters/01") == len(_saved_ids(nb))
        copies.append(json.dumps(nb, sort_keys=True))
    assert copies[0] == copies[1]
    nb = json.loads(copies[0])
    saved = set(_saved_ids(nb))
    refs = set(re.findall(r"IPY_MODEL_([0-9a-f]{32})", json.dumps(nb)))
    shown = {
        o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
        for c in nb["cells"]
        for o in c.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    }
    assert refs <= saved and shown <= saved and shown


def test_executing_an_unchanged_notebook_again_writes_the_same_file(tmp_path: Path):
    """No clock times and no random widget ids: the repository does not grow when every notebook
    is run again with nothing changed (before: every cell's timestamps and every model id)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "execute", REPO / "scripts" / "execute_notebooks.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    script.book_kernel_environment(str(tmp_path / "config"))
    path = tmp_path / "01_queries_keys_values.ipynb"
    path.write_bytes((REPO / "chapters" / path.name).read_bytes())
    saved = []
    for _ in range(2):
        script.execute(path, timeout=120)
        saved.append(path.read_bytes())
    if saved[0] != saved[1]:
        import difflib

        diff = difflib.unified_diff(
            saved[0].decode().splitlines(), saved[1].decode().splitlines(), lineterm="", n=0
        )
        raise AssertionError("\n".join(line[:160] for line in list(diff)[:20]))
    assert b'"iopub.execute_input"' not in saved[0]
