"""Every JavaScript file the site or a widget ships parses (``node --check``).

A syntax error in one widget's module stops only that widget from drawing, on the site, in the
slides, in the printed book and in JupyterLab; the browser tests would find it late and far from
its cause. The widget modules are checked as anywidget receives them (``_shared.js`` + the widget's
file, an ES module).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .system_tools import require

ROOT = Path(__file__).resolve().parents[1]
WIDGETS = ROOT / "src" / "course_utils" / "widgets"
FILES = sorted(
    [p for p in WIDGETS.glob("*.js") if p.name != "_shared.js"]
    + list((ROOT / "_ext" / "course_site" / "static" / "course").glob("*.js"))
    + list((ROOT / "src" / "course_utils" / "pretrained" / "web").glob("*.mjs"))
)


def test_the_files_are_found() -> None:
    assert len([p for p in FILES if p.parent == WIDGETS]) >= 15


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_javascript_parses(path: Path, tmp_path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if path.parent == WIDGETS:  # what anywidget loads: the shared helpers, then the widget
        text = (WIDGETS / "_shared.js").read_text(encoding="utf-8") + "\n" + text
    module = tmp_path / (path.stem + (".mjs" if "export " in text or "import " in text else ".js"))
    module.write_text(text, encoding="utf-8")
    done = subprocess.run([require("node"), "--check", str(module)], capture_output=True, text=True)
    assert done.returncode == 0, f"{path.relative_to(ROOT)}:\n{done.stderr[-1500:]}"
