"""The chapter 1 widgets in a real JupyterLab with a kernel, driven by Chromium.

Starts JupyterLab on 127.0.0.1 (token, free port, temporary config/runtime/data dirs), opens a small
notebook that uses the chapter 1 widgets (with hostile tokens), runs all cells, moves a control with
the keyboard, and checks that the drawing changed AND that Python sees the new value.
"""

from __future__ import annotations

import json
import os
import secrets
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
from site_server import ROOT, block_outside

pytestmark = [pytest.mark.jupyterlab, pytest.mark.slow]

HOSTILE = "<img src=x onerror=alert(1)>"
CELLS = [
    "import numpy as np\nfrom course_utils.widgets import QueryKeyPlane, SentenceAttention",
    "keys = np.array([[1.0, 0.2], [0.1, 1.0], [-0.8, 0.4]])\n"
    f"plane = QueryKeyPlane(keys, key_labels=['cat', {HOSTILE!r}, '猫'], n_angles=12)\nplane",
    "rng = np.random.default_rng(0)\n"
    "sent = SentenceAttention([('English', ['the', 'cat', 'sat'], rng.normal(size=(3, 4))),\n"
    "    ('中文', ['猫', '坐', '在', '垫子'], rng.normal(size=(4, 4)))])\nsent",
    "print('angle_index =', plane.angle_index, '| weights =', plane.weights.round(3).tolist())\n"
    "print('sentence_index =', sent.sentence_index, '| query =', sent.query_token)",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    work = tmp_path_factory.mktemp("lab")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    nbformat.write(nb, work / "widgets.ipynb")
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "IPYTHONDIR"):
        path = work.parent / f"{work.name}-{var.lower()}"
        path.mkdir(exist_ok=True)
        env[var] = str(path)
    env.update(HF_HUB_OFFLINE="1", MPLBACKEND="Agg", PYDEVD_DISABLE_FILE_VALIDATION="1")
    log = open(work.parent / f"{work.name}-lab.log", "w")  # noqa: SIM115 - closed below
    cmd = [
        str(Path(sys.executable).parent / "jupyter"),
        "lab",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        "--ServerApp.open_browser=False",
        f"--ServerApp.root_dir={work}",
        "--LabApp.expose_app_in_browser=True",
        *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}api/status?token={token}", timeout=2) as r:
                    json.load(r)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(
                        "JupyterLab did not start:\n"
                        + (work.parent / f"{work.name}-lab.log").read_text()[-3000:]
                    )
                time.sleep(0.5)
        yield {"base": base, "token": token, "work": work}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


RUN_ALL = """async () => {
  const app = window.jupyterapp;
  await app.commands.execute('notebook:run-all-cells');
}"""

RUN_LAST = """async () => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  panel.content.activeCellIndex = panel.content.widgets.length - 1;
  await app.commands.execute('notebook:run-cell');
}"""

LAST_OUTPUT = """() => {
  const cells = document.querySelectorAll('.jp-Notebook .jp-Cell');
  const last = cells[cells.length - 1];
  const out = last && last.querySelector('.jp-OutputArea-output');
  return out ? out.textContent : '';
}"""


def test_widgets_in_jupyterlab(lab: dict[str, Any], browser: Any) -> None:
    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    blocked: list[str] = []
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    block_outside(context, (lab["base"],), blocked)
    context.add_init_script("window.__xss = 0; window.alert = () => { window.__xss += 1; };")
    page = context.new_page()
    page_errors: list[str] = []
    page.on("pageerror", lambda err: page_errors.append(str(err)))
    try:
        page.goto(f"{lab['base']}lab/tree/widgets.ipynb?token={lab['token']}")
        page.wait_for_function(
            "() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
            "&& window.jupyterapp.shell.currentWidget.sessionContext "
            "&& window.jupyterapp.shell.currentWidget.sessionContext.session "
            "&& window.jupyterapp.shell.currentWidget.sessionContext.session.kernel",
            timeout=90_000,
        )
        page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
            ".connectionStatus === 'connected'",
            timeout=60_000,
        )
        page.evaluate(RUN_ALL)
        page.wait_for_function(
            "() => document.querySelectorAll('.cu-widget').length === 2", timeout=90_000
        )
        page.wait_for_function(
            "(t) => (" + LAST_OUTPUT + ")().includes(t)", arg="angle_index = 0", timeout=60_000
        )

        # Keyboard: focus the angle slider of QueryKeyPlane and press ArrowRight.
        slider = page.locator(".cu-qk-plane input[type=range]").first
        stage = page.locator(".cu-qk-plane .cu-stage").first
        before = stage.evaluate("(e) => e.outerHTML")
        slider.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            "(before) => document.querySelector('.cu-qk-plane .cu-stage').outerHTML !== before",
            arg=before,
            timeout=5_000,
        )
        assert slider.input_value() == "1"
        # The notebook stayed in place: the key moved the slider, not the notebook's cell focus.
        assert page.evaluate("() => document.activeElement.type") == "range"

        # The sentence <select> works with the keyboard too (ArrowDown: next sentence).
        select = page.locator(".cu-sentence-attention select").first
        before = page.locator(".cu-sentence-attention .cu-stage").first.evaluate(
            "(e) => e.outerHTML"
        )
        select.focus()
        page.keyboard.press("ArrowDown")
        page.wait_for_function(
            "(b) => document.querySelector('.cu-sentence-attention .cu-stage').outerHTML !== b",
            arg=before,
            timeout=5_000,
        )

        # Python sees the new values.
        page.evaluate(RUN_LAST)
        page.wait_for_function(
            "(t) => (" + LAST_OUTPUT + ")().includes(t)", arg="angle_index = 1", timeout=60_000
        )
        assert "sentence_index = 1 | query = 猫" in page.evaluate(LAST_OUTPUT)

        # The sentence widget's query slider works too, and hostile text stays text.
        q_slider = page.locator(".cu-sentence-attention input[type=range]").first
        bars = page.locator(".cu-sentence-attention .cu-stage").first
        before = bars.evaluate("(e) => e.outerHTML")
        q_slider.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            "(b) => document.querySelector('.cu-sentence-attention .cu-stage').outerHTML !== b",
            arg=before,
            timeout=5_000,
        )
        tokens = page.evaluate(
            "() => Array.from(document.querySelectorAll('.cu-qk-plane .cu-token'))"
            ".map((t) => t.textContent)"
        )
        assert HOSTILE in tokens
        assert page.evaluate("() => document.querySelectorAll('.cu-widget img').length") == 0
        assert page.evaluate("() => window.__xss") == 0
        assert not page_errors, page_errors
        assert not blocked, f"JupyterLab page requested outside addresses: {blocked}"
    except BaseException:
        page.screenshot(path=str(artifacts / "jupyterlab.png"), full_page=True)
        raise
    finally:
        context.close()
