"""Chapter 1 in a real JupyterLab with a kernel, driven by Chromium through the notebook UI.

What the test does:

1. Copies ``chapters/01_queries_keys_values.ipynb`` into a temporary folder (same ``chapters/``
   layout; stored outputs and widget state are cleared in the copy, so every widget view on the
   page comes from this run's kernel). The chapter only needs ``course_utils``, installed
   (editable) in the interpreter that runs the tests, which is also the kernel's interpreter.
2. Starts JupyterLab on 127.0.0.1 (free port, random token, ``--no-browser``, temporary
   ``JUPYTER_CONFIG_DIR``/``JUPYTER_RUNTIME_DIR``/``JUPYTER_DATA_DIR``/``IPYTHONDIR``); Chromium may
   only talk to that server (every other request is aborted and makes the test fail).
3. Opens the copy, runs every cell with the Run menu ("Run All Cells") and waits, with bounded
   waits, until every code cell has run and the kernel is idle; no cell may raise.
4. Finds every course widget view in the outputs (at least one QueryKeyPlane and one
   SentenceAttention), moves each of its controls one step with the keyboard and checks that the
   drawing (``.cu-stage``) changed and that the key went to the control, not to JupyterLab.
5. Appends a cell with the notebook UI (select the last cell, ``B``, ``Enter``, type,
   ``Shift+Enter``) that finds the course widgets in the kernel's globals (and ``Out``) and prints
   their index traits as JSON; they must equal the positions of the controls in the browser
   (matched by widget model id).
6. Appends a second cell that shows both widgets with hostile tokens and titles: the text must be
   shown as text (no ``<img>``/``<script>`` element appears) and no dialog (``alert``) may fire.

On failure a screenshot goes to ``test-artifacts/jupyterlab.png`` and the server log to
``test-artifacts/jupyterlab-server.log``.
"""

from __future__ import annotations

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

sys.path.insert(0, str(Path(__file__).parent))
from tests.browser.site_server import AT_END_JS, ROOT, XSS_TOKENS, block_outside, press_key_for

pytestmark = [pytest.mark.jupyterlab, pytest.mark.slow]

CHAPTER = ROOT / "chapters" / "01_queries_keys_values.ipynb"
ARTIFACTS = ROOT / "test-artifacts"

# Bounded waits (ms). Generous: the machine may be shared and the first run imports torch.
START_S = 120  # JupyterLab server answers /api/status
APP_MS = 120_000  # the notebook page, its kernel connected and idle
RUN_ALL_MS = 300_000  # every cell of the chapter has run
CELL_MS = 90_000  # one appended cell has run
DRAW_MS = 10_000  # a key press redraws the widget

#: The course widget classes and, per control label, the trait the control sets.
TRAITS = {
    "cu-qk-plane": {"Query angle": "angle_index", "Query length": "length_index"},
    "cu-sentence-attention": {"Sentence": "sentence_index", "Query token": "query_index"},
}

#: Appended cell 1: the index traits of every course widget the kernel knows by a name (or in Out).
STATE_CELL = """import json
from course_utils.widgets import QueryKeyPlane, SentenceAttention
found = {}
for obj in [*globals().values(), *Out.values()]:
    if isinstance(obj, QueryKeyPlane | SentenceAttention):
        traits = ("angle_index", "length_index", "sentence_index", "query_index")
        found[obj.model_id] = {t: getattr(obj, t) for t in traits if obj.has_trait(t)}
print("CU-STATE " + json.dumps(found, sort_keys=True))"""

#: Appended cell 2: both widgets fed with hostile text (tokens, labels, titles).
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


def _read_chapter() -> Any:
    """Chapter 1, read with a retry (another helper may be saving it at this moment)."""
    for attempt in range(5):
        try:
            return nbformat.read(CHAPTER, as_version=4)
        except (ValueError, OSError):  # half-written file: JSON error
            if attempt == 4:
                raise
            time.sleep(1)
    raise AssertionError("unreachable")


def _copy_chapter(work: Path) -> str:
    """Copy chapter 1 to ``work/chapters/`` without stored outputs/widget state; return its path."""
    nb = _read_chapter()
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    (work / "chapters").mkdir()
    nbformat.write(nb, work / "chapters" / CHAPTER.name)
    return f"chapters/{CHAPTER.name}"


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
    notebook = _copy_chapter(work)
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
            yield {"base": base, "token": token, "notebook": notebook, "log": log_path}
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

#: Index of the active cell, its source, and whether the notebook is in edit mode.
ACTIVE_JS = """() => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  return {index: nb.activeCellIndex, source: nb.activeCell.model.sharedModel.getSource(),
          mode: nb.mode};
}"""

#: Text of the stream outputs of cell ``i`` (null while it has not run).
KERNEL_STATUS = "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status"

CELL_TEXT_JS = """(i) => {
  const cell = window.jupyterapp.shell.currentWidget.content.widgets[i];
  if (!cell || cell.model.executionCount === null) return null;
  return cell.model.outputs.toJSON().map((o) => (o.output_type === 'stream' ? o.text
    : o.output_type === 'error' ? `${o.ename}: ${o.evalue}` : '')).join('');
}"""


def _append_cell(page: Any, code: str) -> int:
    """Add a code cell after the last cell with the notebook UI, type ``code``, run it."""
    n = page.evaluate(CELL_COUNT_JS)
    last = page.locator(".jp-Notebook .jp-Cell").nth(n - 1)
    last.scroll_into_view_if_needed()
    last.locator(".jp-InputPrompt").first.click()  # select the cell (command mode)
    page.keyboard.press("Escape")
    page.wait_for_function(
        "(n) => { const nb = window.jupyterapp.shell.currentWidget.content;"
        " return nb.activeCellIndex === n - 1 && nb.mode === 'command'; }",
        arg=n,
        timeout=DRAW_MS,
    )
    page.keyboard.press("b")  # insert a code cell below
    page.wait_for_function(f"(n) => ({CELL_COUNT_JS})() === n + 1", arg=n, timeout=DRAW_MS)
    page.keyboard.press("Enter")  # edit mode
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.content.mode === 'edit'", timeout=DRAW_MS
    )
    page.keyboard.insert_text(code)
    active = page.evaluate(ACTIVE_JS)
    assert active["index"] == n, active
    assert active["source"] == code, f"typed text differs from the code:\n{active['source']}"
    page.keyboard.press("Shift+Enter")
    return n


def _run_cell_text(page: Any, code: str, marker: str) -> tuple[int, str]:
    """Append and run a cell; wait for it and the kernel; return (cell index, printed text)."""
    index = _append_cell(page, code)
    page.wait_for_function(
        f"(i) => {{ const t = ({CELL_TEXT_JS})(i); return t !== null && "
        f"{KERNEL_STATUS} === 'idle'; }}",
        arg=index,
        timeout=CELL_MS,
    )
    text = page.evaluate(CELL_TEXT_JS, index)
    assert marker in text, f"appended cell {index} printed:\n{text}"
    return index, text


def _move_controls(page: Any, views: list[dict[str, Any]]) -> None:
    """Press one key on every control of every view; the drawing must change each time."""
    for view in views:
        assert view["controls"], f"{view['cls']} in cell {view['cell']} has no control"
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


def test_chapter1_widgets_in_jupyterlab(lab: dict[str, Any], browser: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    blocked: list[str] = []
    dialogs: list[str] = []
    page_errors: list[str] = []
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(60_000)
    block_outside(context, (lab["base"],), blocked)
    page = context.new_page()
    page.on("pageerror", lambda err: page_errors.append(str(err)))

    def on_dialog(dialog: Any) -> None:
        dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    try:
        page.goto(f"{lab['base']}lab/tree/{lab['notebook']}?token={lab['token']}", timeout=APP_MS)
        page.wait_for_function(KERNEL_IDLE_JS, timeout=APP_MS)
        n_cells = page.evaluate(CELL_COUNT_JS)

        # Run > Run All Cells, as a learner would.
        page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        page.wait_for_function(ALL_RUN_JS, arg=n_cells, timeout=RUN_ALL_MS)
        assert page.evaluate(ERRORS_JS) == [], "a chapter cell raised"

        # Every widget output of the chapter is rendered as a course widget view.
        page.wait_for_function(
            f"() => {{ const r = ({VIEWS_JS})(); "
            "return r.expected > 0 && r.views.length === r.expected; }",
            timeout=CELL_MS,
        )
        views = page.evaluate(VIEWS_JS)["views"]
        classes = [v["cls"] for v in views]
        assert "cu-qk-plane" in classes, classes
        assert "cu-sentence-attention" in classes, classes

        _move_controls(page, views)
        after = page.evaluate(VIEWS_JS)["views"]
        for old, new in zip(views, after, strict=True):
            moved = [c["value"] for c in new["controls"]] != [c["value"] for c in old["controls"]]
            assert moved, f"{new['cls']} in cell {new['cell']}: no control ended elsewhere"

        # Python sees the new positions: an appended cell prints the kernel's widget traits.
        _, text = _run_cell_text(page, STATE_CELL, "CU-STATE ")
        state = json.loads(text.split("CU-STATE ", 1)[1].splitlines()[0])
        checked = 0
        for view in after:
            if view["cls"] not in TRAITS:
                continue
            assert view["model_id"] in state, (
                f"{view['cls']} of cell {view['cell']} not found in the kernel's globals: {state}"
            )
            traits = state[view["model_id"]]
            for control in view["controls"]:
                trait = TRAITS[view["cls"]].get(control["label"])
                assert trait, f"unknown control {control['label']!r} of {view['cls']}"
                assert traits[trait] == control["value"], (view, traits)
                checked += 1
        assert checked >= 3, f"only {checked} control(s) compared with Python"

        # Hostile text stays text in JupyterLab too, and no dialog fires.
        xss_cell, _ = _run_cell_text(page, XSS_CELL, "CU-XSS-DONE")
        page.evaluate(
            "(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].node"
            ".setAttribute('data-test-xss', '1')",
            xss_cell,
        )
        sel = ".jp-Notebook [data-test-xss] .cu-widget"
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
        assert dialogs == [], dialogs
        assert not page_errors, page_errors
        assert not blocked, f"JupyterLab page requested outside addresses: {blocked}"
    except BaseException:
        try:
            page.screenshot(path=str(ARTIFACTS / "jupyterlab.png"), full_page=True)
        finally:
            shutil.copyfile(lab["log"], ARTIFACTS / "jupyterlab-server.log")
        raise
    finally:
        context.close()
