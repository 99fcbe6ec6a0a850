"""The programs from outside Python that some tests need, and what happens when one is missing.

Each is a Debian package (`.ci/run` and `make browser-deps` install them; the README lists them).
On a developer's machine a test that needs a missing one is skipped with a message naming the
package; in CI (``CI=true``) it **fails** with that message, so a missing tool can never turn
part of the suite silently into skips.

>>> SYSTEM_TOOLS["node"].package
'nodejs'
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

__all__ = [
    "SYSTEM_TOOLS",
    "SystemTool",
    "in_ci",
    "missing",
    "require",
    "require_cjk_font",
    "run_node_tests",
    "run_widget_dom",
]


@dataclass(frozen=True)
class SystemTool:
    command: str  # what is looked up on PATH (or an absolute path)
    package: str  # the Debian package that installs it
    used_for: str


SYSTEM_TOOLS = {
    "node": SystemTool("node", "nodejs", "the JavaScript tests of the widgets and the web model"),
    # Debian's nodejs has no npm (NodeSource's does); the hub test installs its proxy with it.
    "npm": SystemTool("npm", "npm", "installing JupyterHub's proxy (configurable-http-proxy)"),
    "chromium": SystemTool(
        os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"),
        "chromium",
        "the browser tests, the slide decks and the PDF",
    ),
    "pdftotext": SystemTool("pdftotext", "poppler-utils", "reading the printed book back"),
    "pdftoppm": SystemTool("pdftoppm", "poppler-utils", "seeing the printed book's pages"),
    "fc-list": SystemTool("fc-list", "fontconfig", "the font tests"),
}


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def missing(what: str, package: str, used_for: str) -> NoReturn:
    """Skip (on a developer's machine) or fail (in CI) naming the Debian package to install."""
    message = (
        f"{what} not found: install Debian's package {package} "
        f"(apt-get install {package}); it is needed for {used_for}"
    )
    if in_ci():
        pytest.fail(message + " (CI=true: a missing tool is a failure, not a skip)")
    pytest.skip(message)


def require(name: str) -> str:
    """The path of the tool ``name`` (a key of :data:`SYSTEM_TOOLS`), or skip/fail naming it."""
    tool = SYSTEM_TOOLS[name]
    found = tool.command if Path(tool.command).is_absolute() else shutil.which(tool.command)
    if found is None or not Path(found).exists():
        missing(f"{name} ({tool.command})", tool.package, tool.used_for)
    return str(found)


def require_cjk_font() -> None:
    """A CJK font fontconfig can find (Chromium draws the book's Chinese with it)."""
    fc_list = require("fc-list")
    found = subprocess.run(
        [fc_list, ":lang=zh", "family"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if not found:
        missing("a CJK font", "fonts-noto-cjk", "drawing the Chinese of the PDF and the decks")


def run_node_tests(test_file: Path, env: dict[str, str], timeout: int = 1200) -> str:
    """Run ``node --test test_file`` with ``env`` (plus node's folder on PATH); fail with its
    output unless every test ran and passed (none skipped). Returns its output."""
    import subprocess

    node = require("node")
    run = subprocess.run(
        [node, "--test", "--test-reporter=spec", str(test_file)],
        env={"PATH": str(Path(node).parent), **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "skipped 0" in run.stdout, run.stdout
    return run.stdout


def run_widget_dom(widget: Any, runner: Path, tmp_path: Path) -> Any:
    """Run a widget's own ES module in Node on the fake DOM of ``tests/js/fake_dom.mjs``:
    ``node runner widget.mjs state.json`` with the widget's synced state; returns the JSON the
    runner prints (what the widget drew)."""
    import json

    from course_utils.widgets._base import widget_esm

    node = require("node")
    state = {k: v for k, v in widget.get_state().items() if not k.startswith("_")}
    (tmp_path / "state.json").write_text(json.dumps(state), encoding="utf-8")
    (tmp_path / "widget.mjs").write_text(widget_esm(widget._widget_file), encoding="utf-8")
    run = subprocess.run(
        [node, str(runner), str(tmp_path / "widget.mjs"), str(tmp_path / "state.json")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)
