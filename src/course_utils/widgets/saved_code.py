"""Widget code lives in files, not in notebooks: what a saved notebook keeps, and where the site
finds the code.

A live widget sends its whole ES module and stylesheet (``_esm``, ``_css``: ``_shared.js`` plus the
widget's own file, 25–60 KB) to the front end, and a notebook executed with widget state would save
that text in its metadata, once per widget, in every notebook of both editions. So:

* :func:`strip_widget_code` (run by ``scripts/execute_notebooks.py`` after each execution) replaces
  the saved ``_esm`` of every course widget by a short placeholder module whose first line names
  the module file (``// course-widget: head_explorer.zh``), and the saved ``_css`` by a one-line
  comment naming the stylesheet. The saved **state** (inputs, frames, texts) is kept whole.
* :func:`write_widget_modules` (run by the site build, ``_ext/course_site``) writes each widget's
  module and stylesheet once per language into ``_static/course_widgets/<stem>.<lang>.js``, a
  classic script (:func:`code_script`; classic so that a page opened from ``file://`` loads it too).
  The site's loader (``_static/course/widget_loader.js``) sees the placeholder, adds that script
  and draws the widget with its code. A change to a ``.js``/``.css`` file therefore reaches the
  site and the decks with ``make book`` alone: no notebook is re-executed, none changes.
* In JupyterLab a widget's module comes from its live class, as always. A notebook opened before
  it is run shows the placeholder's one sentence ("Run this cell...") where the widget will be.

>>> placeholder_esm("rope_dial", "zh").splitlines()[0]
'// course-widget: rope_dial.zh'
>>> module_file(placeholder_esm("rope_dial", "zh")), module_file("export default {}")
('rope_dial.zh.js', None)
>>> placeholder_css("rope_dial")
'/* course-widget: rope_dial */'
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..i18n import LANGUAGES, normalise_language, t_literal
from ._base import HERE, widget_css, widget_esm

__all__ = [
    "MODULE_FOLDER",
    "code_script",
    "module_file",
    "placeholder_css",
    "placeholder_esm",
    "read_code_script",
    "stable_model_ids",
    "strip_widget_code",
    "widget_stems",
    "write_widget_modules",
]

#: The folder, under the site's ``_static/``, that holds the widgets' modules and stylesheets.
MODULE_FOLDER = "course_widgets"
#: A saved course widget's ``_anywidget_id`` starts with this (then ``<stem>.<Class>``).
PACKAGE_PREFIX = "course_utils.widgets."
#: What a notebook opened before it is run shows in place of a widget (JupyterLab, Jupyter).
RUN_ME = "Run this cell to draw the widget (its code and its frames come from Python)."

_ESM_MARK = re.compile(r"^// course-widget: ([a-z0-9_]+)\.([a-z]+)$")


def widget_stems() -> list[str]:
    """The stems of the widgets that have a module (``<stem>.js`` beside ``<stem>.py``).

    >>> "head_explorer" in widget_stems() and "_shared" not in widget_stems()
    True
    """
    return sorted(p.stem for p in HERE.glob("[!_]*.js") if (HERE / f"{p.stem}.py").is_file())


def placeholder_esm(stem: str, lang: str = "en") -> str:
    """The ``_esm`` a saved notebook keeps for widget ``stem``: a first line naming its module
    file for the site's loader, and a module that asks the reader to run the cell."""
    lang = normalise_language(lang)
    message = json.dumps(t_literal(RUN_ME, lang), ensure_ascii=False)
    return (
        f"// course-widget: {stem}.{lang}\n"
        f"// The site draws this widget with _static/{MODULE_FOLDER}/{stem}.{lang}.js; "
        "a running kernel sends the code itself.\n"
        f"export default {{ render({{ el }}) {{ el.textContent = {message}; }} }};\n"
    )


def placeholder_css(stem: str) -> str:
    """The ``_css`` a saved notebook keeps for widget ``stem``: a comment naming its stylesheet."""
    return f"/* course-widget: {stem} */"


def module_file(esm: str) -> str | None:
    """The file (under ``_static/course_widgets/``) a placeholder ``_esm`` names, else None."""
    match = _ESM_MARK.match(esm.split("\n", 1)[0])
    return f"{match.group(1)}.{match.group(2)}.js" if match else None


def _stem_and_language(state: dict[str, Any]) -> tuple[str, str] | None:
    """``(stem, language)`` of a saved course widget's state, or None for any other model."""
    widget_id = str(state.get("_anywidget_id", ""))
    if not widget_id.startswith(PACKAGE_PREFIX):
        return None
    stem = widget_id.removeprefix(PACKAGE_PREFIX).split(".")[0]
    if stem not in widget_stems():
        raise ValueError(
            f"a saved widget has _anywidget_id {widget_id!r}, but course_utils.widgets has no "
            f"module {stem!r} (expected one of {', '.join(widget_stems())})"
        )
    esm = str(state.get("_esm", ""))
    saved = module_file(esm)
    if saved is not None:  # already stripped
        return stem, saved.split(".")[1]
    for lang in LANGUAGES:
        if esm == widget_esm(stem, lang):
            return stem, lang
    raise ValueError(
        f"the saved code of widget {widget_id!r} is not the package's {stem}.js in any language "
        f"({', '.join(LANGUAGES)}): the notebook was saved with other code; re-execute it"
    )


def strip_widget_code(notebook: Any) -> int:
    """Replace the code (``_esm``, ``_css``) of every course widget saved in ``notebook`` (an
    ``nbformat`` notebook or its dict) by its placeholders; the state stays. Returns how many
    widgets it saw. Models that are not course widgets are left as they are.

    >>> nb = {"metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": {
    ...     "m1": {"model_module": "anywidget", "state": {
    ...         "_anywidget_id": "course_utils.widgets.rope_dial.RopeDial",
    ...         "_esm": widget_esm("rope_dial"), "_css": widget_css("rope_dial"), "angle": 3}}}}}}}
    >>> strip_widget_code(nb)
    1
    >>> state = nb["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    >>> module_file(state["m1"]["state"]["_esm"]), state["m1"]["state"]["angle"]
    ('rope_dial.en.js', 3)
    """
    widgets = notebook["metadata"].get("widgets", {})
    models = widgets.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    seen = 0
    for model in models.values():
        state = model.get("state", {})
        found = _stem_and_language(state)
        if found is None:
            continue
        stem, lang = found
        state["_esm"] = placeholder_esm(stem, lang)
        state["_css"] = placeholder_css(stem)
        seen += 1
    return seen


#: The line a code file starts with, then ``CODE_VARIABLE["<stem>.<lang>"] = {esm, css};``.
CODE_HEADER = (
    "// Attention, step by step: the code of one course widget, written by the site build from\n"
    "// src/course_utils/widgets/ (do not edit here). _static/course/widget_loader.js reads it.\n"
)
#: The global the code files fill (a classic script, so that file:// pages can load it too).
CODE_VARIABLE = "window.courseWidgetCode"


def code_script(stem: str, lang: str = "en", source: Path | None = None) -> str:
    """The classic script the site serves as ``_static/course_widgets/<stem>.<lang>.js``: it puts
    the widget's ES module and stylesheet into ``window.courseWidgetCode["<stem>.<lang>"]``.

    >>> read_code_script(code_script("rope_dial", "zh"))["esm"] == widget_esm("rope_dial", "zh")
    True
    """
    lang = normalise_language(lang)
    code = {"esm": widget_esm(stem, lang, source), "css": widget_css(stem, source)}
    text = json.dumps(code, ensure_ascii=False).replace("</", "<\\/")  # safe inside any <script>
    return f'{CODE_HEADER}({CODE_VARIABLE} = {CODE_VARIABLE} || {{}})["{stem}.{lang}"] = {text};\n'


def read_code_script(text: str) -> dict[str, str]:
    """The ``{"esm": ..., "css": ...}`` a code script (:func:`code_script`) defines."""
    body = text.removeprefix(CODE_HEADER)
    return json.loads(body[body.index("] = ") + 4 :].rstrip().removesuffix(";"))


def write_widget_modules(folder: str | Path, source: Path | None = None) -> list[Path]:
    """Write every widget's code script, per language, into ``folder`` (the site's
    ``_static/course_widgets/``): ``<stem>.<lang>.js`` (:func:`code_script`). Returns the files.
    ``source`` is the folder of the widgets' ``.js``/``.css`` files (a test passes an edited copy).

    >>> import tempfile
    >>> files = write_widget_modules(tempfile.mkdtemp())
    >>> sorted(f.name for f in files if f.name.startswith("rope_dial"))
    ['rope_dial.en.js', 'rope_dial.zh.js']
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for stem in widget_stems():
        for lang in LANGUAGES:
            path = out / f"{stem}.{lang}.js"
            path.write_text(code_script(stem, lang, source), encoding="utf-8")
            written.append(path)
    return written


#: A widget model's id as Jupyter writes it (a uuid4's 32 hex digits), alone or in a reference.
_MODEL_ID = re.compile(r"\b(?:IPY_MODEL_)?([0-9a-f]{32})\b")
#: The mime type of a widget's output (its ``model_id``) and the key of the saved models.
_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
_STATE_MIME = "application/vnd.jupyter.widget-state+json"


def stable_model_ids(notebook: Any, salt: str) -> int:
    """Rename the widget models saved in ``notebook`` to ids that depend only on where they are
    used, not on the random ids a kernel gave them, so that executing an unchanged notebook again
    writes the same file (no diff, no growth of the repository). Models are numbered in the order
    the outputs show them, each followed by the models its state refers to (``IPY_MODEL_<id>``);
    the ``n``-th gets ``md5(f"{salt}:{n}")``. Returns how many models were renamed.

    >>> a, b = "a" * 32, "b" * 32
    >>> nb = {"cells": [{"outputs": [{"data": {_VIEW_MIME: {"model_id": b}}}]}],
    ...       "metadata": {"widgets": {_STATE_MIME: {"state": {
    ...           a: {"state": {}}, b: {"state": {"layout": "IPY_MODEL_" + a}}}}}}}
    >>> stable_model_ids(nb, "ch01")
    2
    >>> models = nb["metadata"]["widgets"][_STATE_MIME]["state"]
    >>> first = nb["cells"][0]["outputs"][0]["data"][_VIEW_MIME]["model_id"]
    >>> models[first]["state"]["layout"][len("IPY_MODEL_"):] in models
    True
    """
    import hashlib

    models = notebook.get("metadata", {}).get("widgets", {}).get(_STATE_MIME, {}).get("state", {})
    order: list[str] = []

    def visit(model_id: str) -> None:
        if model_id in order or model_id not in models:
            return
        order.append(model_id)
        for ref in _MODEL_ID.findall(json.dumps(models[model_id], sort_keys=True)):
            visit(ref)

    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(_VIEW_MIME)
            if view and "model_id" in view:
                visit(view["model_id"])
    # Models no output shows (none today): after the others, in an order fixed by their content.
    rest = sorted(set(models) - set(order), key=lambda i: json.dumps(models[i], sort_keys=True))
    for model_id in rest:
        visit(model_id)
    new = {old: hashlib.md5(f"{salt}:{n}".encode()).hexdigest() for n, old in enumerate(order)}

    def renamed_id(m: re.Match[str]) -> str:
        return m.group(0).replace(m.group(1), new.get(m.group(1), m.group(1)))

    def rename(value: Any) -> Any:
        if isinstance(value, str):
            return _MODEL_ID.sub(renamed_id, value)
        if isinstance(value, list):
            return [rename(v) for v in value]
        if isinstance(value, dict):
            return {rename(k): rename(v) for k, v in value.items()}
        return value

    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(_VIEW_MIME)
            if view and "model_id" in view:
                view["model_id"] = new.get(view["model_id"], view["model_id"])
    if models:
        renamed = {new[i]: rename(models[i]) for i in order}
        models.clear()
        models.update(renamed)
    return len(order)
