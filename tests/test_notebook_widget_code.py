"""The widget code saved in every committed notebook is the package's current code.

A notebook executed with ``store_widget_state`` keeps each widget's ES module and stylesheet
(``_esm``, ``_css``) in its metadata, and the built site runs that saved copy, not the package's
``.js`` file. After a change to a widget's ``.js``/``.css`` (or to ``_shared.js``) the notebooks
must be re-executed (``make execute``, ``make execute-zh``), or the website would keep drawing with
the old code while JupyterLab uses the new one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course_utils.widgets._base import widget_css, widget_esm

REPO = Path(__file__).resolve().parents[1]
ZH = REPO / "locale" / "zh_CN" / "notebooks"
NOTEBOOKS = [
    *((p, "en") for p in sorted([*REPO.glob("chapters/*.ipynb"), *REPO.glob("appendix/*.ipynb")])),
    *((p, "zh") for p in sorted(ZH.glob("*/*.ipynb"))),
]
PACKAGE_PREFIX = "course_utils.widgets."


def _saved_widgets(path: Path) -> list[tuple[str, dict]]:
    """``(widget module stem, saved state)`` of every course widget saved in a notebook."""
    meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
    states = meta.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    saved = []
    for model in states.get("state", {}).values():
        state = model.get("state", {})
        widget_id = state.get("_anywidget_id", "")
        if widget_id.startswith(PACKAGE_PREFIX):
            stem = widget_id.removeprefix(PACKAGE_PREFIX).split(".")[0]
            saved.append((stem, state))
    return saved


def test_the_notebooks_save_course_widgets():
    """The check below sees the widgets (a renamed id would make it pass vacuously)."""
    saved = [w for path, _ in NOTEBOOKS for w in _saved_widgets(path)]
    modules = {p.stem for p in (REPO / "src" / "course_utils" / "widgets").glob("[!_]*.py")}
    assert {stem for stem, _ in saved} == modules  # every widget is met in some chapter
    assert len(saved) >= 2 * len(modules)  # in both editions


@pytest.mark.parametrize(
    ("path", "lang"), NOTEBOOKS, ids=[f"{lang}-{p.parent.name}-{p.stem}" for p, lang in NOTEBOOKS]
)
def test_saved_widget_code_is_the_current_code(path: Path, lang: str):
    stale = [
        stem
        for stem, state in _saved_widgets(path)
        if state.get("_esm") != widget_esm(stem, lang) or state.get("_css") != widget_css(stem)
    ]
    assert not stale, (
        f"{path.relative_to(REPO)} saves older code of {sorted(set(stale))}: re-execute it "
        f"({'make execute-zh' if lang == 'zh' else 'make execute'})"
    )
