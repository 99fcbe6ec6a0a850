"""Execute chapter notebooks in place, the way nbval and the book build will re-run them.

Usage: python scripts/execute_notebooks.py chapters/*.ipynb

Each notebook runs top to bottom in a fresh kernel with its own folder as the working directory.
Widget state is stored in the notebook metadata (nbclient's ``store_widget_state``) so the committed
notebook shows live widgets too. Run this after changing a chapter or ``course_utils``; commit the
outputs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

# Same environment as `make test`: no hub access, headless plots.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
# An empty IPython/Jupyter configuration, as in the tests: a user's startup files or settings must
# not change the committed outputs.
_CLEAN = tempfile.mkdtemp(prefix="course-utils-execute-config-")
os.environ["IPYTHONDIR"] = os.path.join(_CLEAN, "ipython")
os.environ["JUPYTER_CONFIG_DIR"] = os.path.join(_CLEAN, "jupyter")


def execute(path: Path, timeout: int) -> float:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=True,
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    nbformat.write(notebook, path)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        elapsed = execute(path, args.timeout)
        print(f"{path}: executed in {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
