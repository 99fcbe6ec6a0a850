"""Every widget class in a real JupyterLab with a kernel, driven through the notebook UI.

The chapters are not re-run here: nbval runs every cell of every chapter (``make test-notebooks``),
and the site tests (``test_site_audit.py``) draw and move every saved widget view of every chapter
page. What only JupyterLab can show is the kernel half of a widget: its JavaScript and its Python
object in step. One small instance per widget class checks that in well under a minute of kernel
time, where running the chapters (which train small models before their widgets) cost minutes.

What the tests do:

1. Write ONE gallery notebook, ``chapters/widget_gallery.ipynb`` in a temporary folder, with one
   code cell per class of ``course_utils.widgets.__all__`` (the base ``CourseWidget`` aside):
   ``from course_utils.widgets import X`` / ``X.example()``. Every widget class has its own
   ``example()`` (``tests/test_widget_examples.py`` fails without it), so a new widget is covered
   with no change here. Start ONE JupyterLab on 127.0.0.1 for it and for a scratch notebook (free
   port, random token, ``--no-browser``, temporary ``JUPYTER_*``/``IPYTHONDIR``); Chromium may only
   talk to that server.
2. Open the gallery, Run > Run All Cells once, wait (bounded) until every code cell has run and the
   kernel is idle; no cell may raise. Every cell's widget output must be drawn as a course widget
   view.
3. Per widget class (one test each, on that one page): for every control of its view press one key;
   the drawing (``.cu-stage``) must change, the key must stay with the control (not JupyterLab),
   and Python must see the new value: a silent kernel request reads the integer traits of every
   course widget before and after, and some trait of that view's model must have changed. No page
   error, dialog or outside request may happen meanwhile.
4. A scratch notebook shows widgets with hostile tokens and titles: the text is shown as text (no
   ``<img>``/``<script>`` element appears) and no dialog (``alert``) fires.

On failure a screenshot goes to ``test-artifacts/jupyterlab-<name>.png`` and the server log to
``test-artifacts/jupyterlab-server.log``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from course_site.browser import AT_END_JS, ROOT, XSS_TOKENS, block_outside, press_key_for

# One JupyterLab server for the whole module: under xdist (`make test-browser`) its tests stay on
# one worker (--dist loadgroup), or each worker would start a server of its own.
pytestmark = [pytest.mark.jupyterlab, pytest.mark.slow, pytest.mark.xdist_group("jupyterlab")]

ARTIFACTS = ROOT / "test-artifacts"

# Bounded waits (ms). Generous: the machine may be shared and the first run imports torch.
START_S = 120  # JupyterLab server answers /api/status
APP_MS = 120_000  # the notebook page, its kernel connected and idle
RUN_ALL_MS = 300_000  # every cell of the notebook has run
CELL_MS = 90_000  # one appended cell has run
DRAW_MS = 10_000  # a key press redraws the widget

#: The scalar traits (control positions: an index, a choice, a toggle) of every live course widget,
#: by model id, as JSON. Private traits (``_esm``, ``_css``) and data (lists, dicts) are left out.
KERNEL_STATE = """import json as _cu_json
from ipywidgets.widgets.widget import _instances as _cu_instances
from course_utils.widgets._base import CourseWidget as _CuWidget
print(_cu_json.dumps({k: {n: getattr(w, n) for n in w.trait_names(sync=True)
                          if not n.startswith("_")
                          and type(getattr(w, n)) in (int, float, str, bool)}
                      for k, w in list(_cu_instances.items()) if isinstance(w, _CuWidget)}))"""

#: The scratch notebook's cell: both widgets fed with hostile text (tokens, labels, titles).
XSS_CELL = f"""import numpy as np
from course_utils.widgets import QueryKeyPlane, SentenceAttention
hostile = {XSS_TOKENS!r}
xss_sentence = SentenceAttention(
    [("<b>hostile</b>", hostile, np.eye(4))], title="<img src=x onerror=alert(3)>"
)
xss_plane = QueryKeyPlane(
    np.array([[1.0, 0.2], [0.1, 1.0], [-0.8, 0.4], [0.3, -0.9]]),
    key_labels=hostile,
    title="<script>alert(4)</script>",
)
display(xss_sentence, xss_plane)
print("CU-XSS-DONE")"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def widget_classes() -> list[str]:
    """The names in ``course_utils.widgets.__all__`` but the base, read without importing torch."""
    init = ROOT / "src" / "course_utils" / "widgets" / "__init__.py"
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [name for name in ast.literal_eval(node.value) if name != "CourseWidget"]
    raise AssertionError(f"no __all__ in {init}")


WIDGETS = widget_classes()
GALLERY = "chapters/widget_gallery.ipynb"
SCRATCH = "chapters/scratch_hostile_text.ipynb"
HOT_RELOAD = "chapters/scratch_hot_reload.ipynb"
#: A widget on screen, then its .js edited (in a copy of the files) and sent to it while it lives:
#: the edit marks the widget's element, which only the new code does.
HOT_RELOAD_CELLS = [
    "import pathlib, shutil, tempfile\n"
    "from course_utils.widgets import QueryKeyPlane\n"
    "from course_utils.widgets._base import HERE\n"
    "from course_utils.widgets.hot_reload import reload_widget_code\n"
    "copy = pathlib.Path(tempfile.mkdtemp())\n"
    "for p in [*HERE.glob('*.js'), *HERE.glob('*.css')]:\n"
    "    shutil.copy(p, copy / p.name)\n"
    "QueryKeyPlane.example()",
    "js = copy / 'query_key_plane.js'\n"
    "js.write_text(js.read_text().replace('function render({ model, el }) {',\n"
    "    'function render({ model, el }) {\\n  el.dataset.hotReload = \"reloaded\";', 1))\n"
    "print(reload_widget_code(copy), 'widget(s) got the new code')",
]


def _notebook(cells: list[str]) -> Any:
    nb = nbformat.v4.new_notebook()
    # A kernel named up front, or JupyterLab asks which one to start.
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(code) for code in cells]
    return nb


def _write_notebooks(work: Path) -> None:
    """The gallery (cell ``i`` shows ``WIDGETS[i].example()``) and the scratch notebook."""
    (work / "chapters").mkdir()
    gallery = [f"from course_utils.widgets import {name}\n{name}.example()" for name in WIDGETS]
    nbformat.write(_notebook(gallery), work / GALLERY)
    nbformat.write(_notebook([XSS_CELL]), work / SCRATCH)
    nbformat.write(_notebook(HOT_RELOAD_CELLS), work / HOT_RELOAD)


def _stop(proc: subprocess.Popen[bytes], base: str, token: str) -> None:
    """Shut JupyterLab down (and with it the kernel): REST shutdown, then SIGTERM, then SIGKILL."""
    if proc.poll() is None:
        request = urllib.request.Request(
            f"{base}api/shutdown", method="POST", headers={"Authorization": f"token {token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10):
                pass
        except OSError:
            pass
        try:
            proc.wait(timeout=30)
            return
        except subprocess.TimeoutExpired:
            proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    work = tmp_path_factory.mktemp("lab")
    _write_notebooks(work)
    dirs = tmp_path_factory.mktemp("lab-dirs")
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # keep plt.show() working
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "IPYTHONDIR"):
        (dirs / var.lower()).mkdir()
        env[var] = str(dirs / var.lower())
    # No "Would you like to get notified about Jupyter news?" toast over the notebook.
    settings = dirs / "jupyter_config_dir" / "lab" / "user-settings" / "@jupyterlab"
    (settings / "apputils-extension").mkdir(parents=True)
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYDEVD_DISABLE_FILE_VALIDATION="1")
    port, token = _free_port(), secrets.token_hex(16)
    log_path = dirs / "lab.log"
    cmd = [
        str(Path(sys.executable).parent / "jupyter"),
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={work}",
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
    ]
    base = f"http://127.0.0.1:{port}/"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work)
        try:
            deadline = time.monotonic() + START_S
            while True:
                try:
                    url = f"{base}api/status?token={token}"
                    with urllib.request.urlopen(url, timeout=5) as r:
                        json.load(r)
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        log.flush()
                        pytest.fail(
                            f"JupyterLab did not start within {START_S} s:\n"
                            + log_path.read_text(errors="replace")[-3000:]
                        )
                    time.sleep(0.5)
            yield {"base": base, "token": token, "log": log_path}
        finally:
            _stop(proc, base, token)


# ---- JavaScript run in the JupyterLab page (window.jupyterapp: expose_app_in_browser) ----

KERNEL_IDLE_JS = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!(k && k.connectionStatus === 'connected' && k.status === 'idle' && w.content
            && w.content.widgets.length > 0);
}"""

#: Every code cell (of the first n) has an execution count and the kernel is idle.
ALL_RUN_JS = """(n) => {
  const w = window.jupyterapp.shell.currentWidget;
  const cells = w.content.widgets.slice(0, n).filter((c) => c.model.type === 'code');
  const k = w.sessionContext.session.kernel;
  return cells.length > 0 && cells.every((c) => c.model.executionCount !== null)
         && k.status === 'idle';
}"""

#: Errors in the outputs of the notebook's cells: [[cell index, ename, evalue], ...].
ERRORS_JS = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const out = [];
  w.content.widgets.forEach((c, i) => {
    if (c.model.type !== 'code') return;
    for (const o of c.model.outputs.toJSON()) {
      if (o.output_type === 'error') out.push([i, o.ename, o.evalue]);
    }
  });
  return out;
}"""

#: Tag every course widget view with its cell index and widget model id; describe its controls.
#: Output i of a cell's model is child i of its output area; returns {expected, views} where
#: expected counts the widget-view outputs of the model.
VIEWS_JS = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const MIME = 'application/vnd.jupyter.widget-view+json';
  const views = [];
  let expected = 0;
  w.content.widgets.forEach((cell, i) => {
    if (cell.model.type !== 'code') return;
    const children = Array.from(cell.outputArea.node.children).filter(
      (c) => c.classList.contains('jp-OutputArea-child'));
    cell.model.outputs.toJSON().forEach((o, j) => {
      if (!o.data || !o.data[MIME]) return;
      expected += 1;
      const v = children[j] && children[j].querySelector('.cu-widget');
      if (!v || !v.querySelector('.cu-stage')) return;
      v.setAttribute('data-test-model-id', o.data[MIME].model_id);
      views.push({
        cell: i,
        model_id: o.data[MIME].model_id,
        cls: Array.from(v.classList).find((c) => c !== 'cu-widget') || '',
        controls: Array.from(v.querySelectorAll('input[type=range], select')).map((c) => ({
          id: c.id,
          tag: c.tagName.toLowerCase(),
          label: (v.querySelector(`label[for="${c.id}"]`) || {}).textContent || '',
          value: Number(c.value),
        })),
      });
    });
  });
  return {expected, views};
}"""

#: The drawing of the course widget that holds control ``id`` (its stage; controls excluded).
STAGE_JS = """(id) => {
  const w = document.getElementById(id).closest('.cu-widget');
  return (w.querySelector('.cu-stage') || w).outerHTML;
}"""

CELL_COUNT_JS = "() => window.jupyterapp.shell.currentWidget.content.widgets.length"

#: Run ``code`` silently in the notebook's kernel (no cell, no history); resolve to its stdout.
KERNEL_RUN_JS = """async (code) => {
  const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = k.requestExecute({code, silent: false, store_history: false});
  let text = '';
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') text += msg.content.text;
    if (msg.header.msg_type === 'error') text += 'ERROR ' + msg.content.ename + ': '
                                               + msg.content.evalue;
  };
  await future.done;
  return text;
}"""


def _kernel_state(page: Any) -> dict[str, dict[str, Any]]:
    text = page.evaluate(KERNEL_RUN_JS, KERNEL_STATE)
    assert not text.startswith("ERROR"), text
    return json.loads(text.strip().splitlines()[-1])


def _move_controls(page: Any, views: list[dict[str, Any]]) -> int:
    """One key on every control of every view: the drawing changes and Python sees the move."""
    checked = 0
    state = _kernel_state(page)
    for view in views:
        assert view["controls"], f"{view['cls']} in cell {view['cell']} has no control"
        assert view["model_id"] in state, f"{view['cls']}: model not found in the kernel"
        for control in view["controls"]:
            cid = control["id"]
            key = press_key_for(control["tag"], page.evaluate(AT_END_JS, cid))
            before = page.evaluate(STAGE_JS, cid)
            value = page.evaluate("(id) => document.getElementById(id).value", cid)
            page.locator(f"[id='{cid}']").focus()
            page.keyboard.press(key)
            what = f"{view['cls']} (cell {view['cell']}) control {control['label']!r} ({key})"
            try:
                page.wait_for_function(
                    f"([id, b]) => ({STAGE_JS})(id) !== b", arg=[cid, before], timeout=DRAW_MS
                )
            except Exception as exc:
                raise AssertionError(f"drawing did not change: {what}") from exc
            now = page.evaluate("(id) => document.getElementById(id).value", cid)
            assert now != value, f"control did not move: {what}"
            # The key went to the control; JupyterLab did not take it (no cell change, no scroll).
            assert page.evaluate("() => document.activeElement.id") == cid, what
            # Python sees the new value: some integer trait of this widget changed in the kernel.
            deadline = time.monotonic() + DRAW_MS / 1000
            while True:
                after = _kernel_state(page)
                old, new = state[view["model_id"]], after[view["model_id"]]
                if old != new:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"Python did not see the move: {what}; traits {new}")
                time.sleep(0.2)
            state = after
            checked += 1
    return checked


def _open(page: Any, lab: dict[str, Any], notebook: str) -> None:
    """Open one notebook in a fresh workspace (JupyterLab would reopen the previous tabs)."""
    workspace = re.sub(r"[^A-Za-z0-9]", "-", Path(notebook).stem)
    url = f"{lab['base']}lab/workspaces/{workspace}/tree/{notebook}?reset&token={lab['token']}"
    page.goto(url, timeout=APP_MS)
    page.wait_for_function(KERNEL_IDLE_JS, timeout=APP_MS)


def _shut_down_kernel(lab: dict[str, Any], notebook: str) -> None:
    """End the kernel session of one notebook (another notebook's page may still be open)."""
    headers = {"Authorization": f"token {lab['token']}"}
    request = urllib.request.Request(f"{lab['base']}api/sessions", headers=headers)
    with urllib.request.urlopen(request, timeout=10) as r:
        sessions = json.load(r)
    for session in sessions:
        if session.get("path") != notebook:
            continue
        delete = urllib.request.Request(
            f"{lab['base']}api/sessions/{session['id']}", method="DELETE", headers=headers
        )
        with urllib.request.urlopen(delete, timeout=30):
            pass


def _run_all(page: Any) -> None:
    """Run > Run All Cells, as a learner would; wait for every cell; no cell may raise."""
    n_cells = page.evaluate(CELL_COUNT_JS)
    page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    page.wait_for_function(ALL_RUN_JS, arg=n_cells, timeout=RUN_ALL_MS)
    assert page.evaluate(ERRORS_JS) == [], "a cell raised"


class _Session:
    """A browser page on one notebook of the lab server that records every outside request,
    dialog and page error; on leaving it ends that notebook's kernel."""

    def __init__(self, browser: Any, lab: dict[str, Any], name: str, notebook: str) -> None:
        self.blocked: list[str] = []
        self.dialogs: list[str] = []
        self.page_errors: list[str] = []
        self.lab, self.name, self.notebook = lab, name, notebook
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.set_default_timeout(60_000)
        block_outside(self.context, (lab["base"],), self.blocked)
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda err: self.page_errors.append(str(err)))
        self.page.on("dialog", self._on_dialog)

    def _on_dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def open(self) -> None:
        _open(self.page, self.lab, self.notebook)

    def __enter__(self) -> _Session:
        ARTIFACTS.mkdir(exist_ok=True)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is not None:
                self.save_failure(self.name)
        finally:
            self.context.close()
            _shut_down_kernel(self.lab, self.notebook)

    def save_failure(self, name: str) -> None:
        """A screenshot of the page and the server log, for a failed test."""
        try:
            self.page.screenshot(path=str(ARTIFACTS / f"jupyterlab-{name}.png"), full_page=True)
        finally:
            shutil.copyfile(self.lab["log"], ARTIFACTS / "jupyterlab-server.log")

    def mark(self) -> tuple[int, int, int]:
        """How many dialogs, page errors and outside requests there were so far."""
        return len(self.dialogs), len(self.page_errors), len(self.blocked)

    def check_clean(self, since: tuple[int, int, int] = (0, 0, 0)) -> None:
        """No dialog, page error or outside request since ``since`` (a :meth:`mark`)."""
        dialogs, errors, blocked = since
        assert self.dialogs[dialogs:] == [], self.dialogs[dialogs:]
        assert not self.page_errors[errors:], self.page_errors[errors:]
        assert not self.blocked[blocked:], (
            f"JupyterLab page requested outside addresses: {self.blocked[blocked:]}"
        )


@pytest.fixture(scope="module")
def gallery(lab: dict[str, Any], browser: Any) -> Iterator[dict[str, Any]]:
    """The gallery notebook, run once: its session and the course widget view of every cell."""
    with _Session(browser, lab, "gallery", GALLERY) as s:
        s.open()
        _run_all(s.page)
        # Every widget output of the gallery is rendered as a course widget view.
        s.page.wait_for_function(
            f"(n) => {{ const r = ({VIEWS_JS})(); "
            "return r.expected === n && r.views.length === r.expected; }",
            arg=len(WIDGETS),
            timeout=CELL_MS,
        )
        views = s.page.evaluate(VIEWS_JS)["views"]
        s.check_clean()
        yield {"session": s, "views": views}


@pytest.mark.parametrize("name", WIDGETS)
def test_widget_example_in_jupyterlab(name: str, gallery: dict[str, Any]) -> None:
    """``name.example()`` in the gallery: every control redraws it and Python sees the move."""
    s = gallery["session"]
    cell = WIDGETS.index(name)
    views = [v for v in gallery["views"] if v["cell"] == cell]
    assert len(views) == 1, f"cell {cell} ({name}.example()) shows {len(views)} widget views"
    since = s.mark()
    try:
        checked = _move_controls(s.page, views)
        assert checked >= 1, f"{name}: no control checked"
        s.check_clean(since)
    except BaseException:
        s.save_failure(name)
        raise


def test_learner_text_is_never_html_in_jupyterlab(lab: dict[str, Any], browser: Any) -> None:
    """Hostile tokens and titles stay text in JupyterLab too, and no dialog fires."""
    with _Session(browser, lab, "hostile-text", SCRATCH) as s:
        page = s.page
        s.open()
        _run_all(page)
        sel = ".jp-Notebook .cu-widget"
        page.wait_for_function(
            "(s) => document.querySelectorAll(s + ' .cu-stage').length === 2",
            arg=sel,
            timeout=CELL_MS,
        )
        tokens = page.evaluate(
            "(s) => Array.from(document.querySelectorAll(s + ' .cu-token'))"
            ".map((t) => t.textContent)",
            sel,
        )
        for hostile in XSS_TOKENS:
            assert tokens.count(hostile) >= 2, (hostile, tokens)  # in both widgets
        labels = page.evaluate(
            "(s) => Array.from(document.querySelectorAll(s + ' .cu-qk-label'))"
            ".map((t) => t.textContent)",
            sel,
        )
        assert labels == XSS_TOKENS, labels
        titles = page.evaluate(
            "(s) => Array.from(document.querySelectorAll(s + ' .cu-title'))"
            ".map((t) => t.textContent)",
            sel,
        )
        assert "<img src=x onerror=alert(3)>" in titles, titles
        assert "<script>alert(4)</script>" in titles, titles
        injected = page.evaluate(
            "(s) => document.querySelectorAll(`${s} img, ${s} script, ${s} b`).length", sel
        )
        assert injected == 0, "hostile text became HTML elements"
        page.wait_for_timeout(500)  # give a broken image's onerror time to fire
        s.check_clean()


def test_an_edited_widget_file_redraws_the_live_widget_in_jupyterlab(
    lab: dict[str, Any], browser: Any
) -> None:
    """Hot reload: a widget's .js edited while its view is on screen reaches the view through
    ``reload_widget_code`` (new ``_esm``), with no kernel restart and no re-execution of the cell
    that made the widget."""
    with _Session(browser, lab, "hot-reload", HOT_RELOAD) as s:
        s.open()
        _run_all(s.page)
        s.page.wait_for_selector('.jp-Notebook [data-hot-reload="reloaded"]', timeout=CELL_MS)
        views = s.page.evaluate(
            "() => document.querySelectorAll('.jp-Notebook .cu-widget .cu-stage').length"
        )
        assert views == 1, views  # redrawn in place, not a second view
        s.check_clean()


#: The writer's Python object in the kernel, found by its model id, set for a short greedy run.
WRITER_SET = """from ipywidgets.widgets.widget import _instances as _cu_instances
_cu_w = _cu_instances[{model_id!r}]
_cu_w.decoding_index = 0  # greedy
_cu_w.new_tokens_index = _cu_w.new_tokens.index({n_new})
_cu_w.knockout = []
_cu_w.layer, _cu_w.head = {layer}, {head}
print("CU-SET")"""

#: The oracle, computed in the same kernel by other code: our ``generate`` on ``load_smollm2()``,
#: with the knocked-out heads zeroed by ``knocked_out_heads`` (empty list: the plain model).
WRITER_EXPECTED = """import json as _cu_json
from course_utils.causal import generate as _cu_generate
from course_utils.pretrained.smollm2 import knocked_out_heads as _cu_ko, load_smollm2 as _cu_load
_cu_m = _cu_load()
_cu_ids = _cu_m.tokenizer.encode({prompt!r})
with _cu_ko(_cu_m, {heads!r}):
    _cu_new = _cu_generate(_cu_m, _cu_ids, {n_new})[0, len(_cu_ids):].tolist()
print(_cu_json.dumps({{"n_prompt": len(_cu_ids), "new": _cu_new}}))"""

#: The writer's output: generated ids (``data-token-ids``), the shown head's weights
#: (``data-weights``) and whether Generate can be pressed again (the run has ended).
WRITER_READ_JS = """(root) => {
  const w = document.querySelector(root);
  const strip = w.querySelector('.cu-sw-strip');
  return {ids: JSON.parse(w.querySelector('.cu-sw-output').dataset.tokenIds),
          weights: JSON.parse(strip.dataset.weights), layer: Number(strip.dataset.layer),
          head: Number(strip.dataset.head), ready: !w.querySelector('.cu-sw-go').disabled,
          status: w.querySelector('.cu-sw-status').textContent};
}"""


def test_smollm2_writer_generates_from_python_in_jupyterlab(gallery: dict[str, Any]) -> None:
    """JupyterLab's writer is backed by the kernel: the reader types a prompt and presses
    Generate; the tokens shown equal ``generate(load_smollm2(), …)``'s, greedy, and after the
    reader knocks out a head (layer 2, head 3, which changes this prompt's continuation) and
    presses Generate again, they equal the model's with that head zeroed."""
    s = gallery["session"]
    page = s.page
    cell = WIDGETS.index("SmolLM2Writer")
    (view,) = [v for v in gallery["views"] if v["cell"] == cell]
    root = f'[data-test-model-id="{view["model_id"]}"]'
    prompt, n_new, layer, head = "The capital of France is", 8, 2, 3
    since = s.mark()
    try:
        out = page.evaluate(
            KERNEL_RUN_JS,
            WRITER_SET.format(model_id=view["model_id"], n_new=n_new, layer=layer, head=head),
        )
        assert out.strip() == "CU-SET", out
        page.locator(f"{root} textarea").fill(prompt)
        runs = []
        for heads in ([], [(layer, head)]):
            if heads:
                page.locator(f"{root} .cu-sw-knock").click()
                page.wait_for_function(
                    "(r) => document.querySelector(r + ' .cu-sw-knock')"
                    ".getAttribute('aria-pressed') === 'true'",
                    arg=root,
                    timeout=DRAW_MS,
                )
            page.locator(f"{root} .cu-sw-go").click()
            page.wait_for_function(
                f"([r, n]) => {{ const o = ({WRITER_READ_JS})(r); "
                "return o.ready && o.ids.length === n; }",
                arg=[root, n_new],
                timeout=CELL_MS,
            )
            shown = page.evaluate(WRITER_READ_JS, root)
            text = page.evaluate(
                KERNEL_RUN_JS, WRITER_EXPECTED.format(prompt=prompt, heads=heads, n_new=n_new)
            )
            assert not text.startswith("ERROR"), text
            expected = json.loads(text.strip().splitlines()[-1])
            assert shown["ids"] == expected["new"], (heads, shown, expected)
            # The shown head's row: the query that chose the last token over every token before
            # it (the prompt and the other new tokens), summing to 1.
            assert (shown["layer"], shown["head"]) == (layer, head), shown
            assert len(shown["weights"]) == expected["n_prompt"] + n_new - 1, shown
            assert abs(sum(shown["weights"]) - 1) < 1e-4, shown["weights"]
            runs.append(shown["ids"])
        assert runs[0] != runs[1], "knocking out layer 2, head 3 should change these tokens"
        s.check_clean(since)
    except BaseException:
        s.save_failure("smollm2-writer")
        raise
