"""Execute chapter notebooks in place, the way nbval and the book build will re-run them.

Usage: python scripts/execute_notebooks.py chapters/*.ipynb
       python scripts/execute_notebooks.py --lang zh chapters/*.ipynb appendix/*.ipynb

Each notebook runs top to bottom in a fresh kernel with its own folder as the working directory.
Widget state is stored in the notebook metadata (nbclient's ``store_widget_state``) so the built
site shows live widgets too, under ids fixed by the notebook (``stable_model_ids``) and with no
clock times, so that running an unchanged notebook again changes nothing in the file. The
widgets' code is not saved (``strip_widget_code``: the site takes it from
``_static/course_widgets/``, JupyterLab from the live class). Run this after changing a chapter
or ``course_utils``; commit the outputs.

``--lang zh`` (``make execute-zh``) runs the same notebooks with ``COURSE_LANG=zh``
(``course_utils`` then draws Chinese figure labels, widget labels and exercise feedback) and writes
each one, the source notebook unchanged, to ``locale/zh_CN/notebooks/<folder>/<name>.ipynb``: the
outputs the 中文 edition shows. ``tests/test_zh_edition.py`` checks that their code cells are the
English notebook's and that they print the same numbers.
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

from course_utils.widgets.saved_code import stable_model_ids, strip_widget_code

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "_ext"))  # course_kit: build machinery, not the learners' package
from course_kit.kernels import socket_kernel_manager_class  # noqa: E402

#: Where the zh-executed copies of the notebooks live (committed, like the English outputs).
ZH_NOTEBOOKS = REPO / "locale" / "zh_CN" / "notebooks"
#: The value of ``COURSE_LANG`` each ``--lang`` sets in the kernel's environment.
LANGUAGES = {"zh": "zh"}

#: What the book's kernels do that a learner's does not (importing course_utils changes nothing):
#: show figures with their smallest text recorded in the PNG (the site's browser test checks it is
#: >= 11 px as shown; reinstalled before every cell, as ``%matplotlib inline`` puts IPython's own
#: formatter back), and under ``--lang zh`` draw figure text in Chinese.
KERNEL_STARTUP = """\
from course_utils.i18n import get_language, install_matplotlib_hook
from course_utils.plotting import install_figure_format

get_ipython().events.register("pre_run_cell", lambda info: install_figure_format())
if get_language() == "zh":
    install_matplotlib_hook()
"""


def book_kernel_environment(folder: str | None = None) -> Path:
    """Set this process's environment (inherited by the kernels) as the book's: no hub access, an
    empty IPython/Jupyter configuration (a user's startup files or settings must not change the
    committed outputs) except :data:`KERNEL_STARTUP`. Returns the IPython directory."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    clean = Path(folder or tempfile.mkdtemp(prefix="course-utils-execute-config-"))
    os.environ["IPYTHONDIR"] = str(clean / "ipython")
    os.environ["JUPYTER_CONFIG_DIR"] = str(clean / "jupyter")
    startup = clean / "ipython" / "profile_default" / "startup" / "00-course-book.py"
    startup.parent.mkdir(parents=True, exist_ok=True)
    startup.write_text(KERNEL_STARTUP, encoding="utf-8")
    return clean / "ipython"


def output_path(path: Path, lang: str | None) -> Path:
    """Where the executed notebook is written: in place, or under ``locale/zh_CN/notebooks/``."""
    if lang is None:
        return path
    rel = path.resolve().relative_to(REPO)
    return ZH_NOTEBOOKS / rel


def coalesce_streams(notebook: nbformat.NotebookNode) -> None:
    """Join a cell's consecutive ``stdout`` (or ``stderr``) outputs into one: how a cell's printing
    is cut into messages depends on when the kernel flushed it (on a busy machine, more often),
    not on what it printed. nbval compares the joined text too. Drops the clock times an earlier
    run recorded (``metadata.execution``)."""
    for cell in notebook.cells:
        joined: list = []
        for output in cell.get("outputs", []):
            last = joined[-1] if joined else None
            if (
                output.get("output_type") == "stream"
                and last is not None
                and last.get("output_type") == "stream"
                and last.get("name") == output.get("name")
            ):
                last["text"] += output["text"]
            else:
                joined.append(output)
        if "outputs" in cell:
            cell["outputs"] = joined
        cell.get("metadata", {}).pop("execution", None)  # clock times of an earlier run


def tidy(notebook: nbformat.NotebookNode, target: Path) -> None:
    """What an executed notebook keeps (``target``: where it is written): widget state without
    the widgets' code, each cell's printing as one output per stream, no clock times, and widget
    ids fixed by the notebook's path and the model's place, not the kernel's random ones (unique
    across notebooks: the printed book puts every chapter on one page)."""
    strip_widget_code(notebook)  # state only: the code lives in the package's .js/.css files
    coalesce_streams(notebook)
    where = target.resolve().with_suffix("")
    rel = where.relative_to(REPO).as_posix() if where.is_relative_to(REPO) else where.name
    stable_model_ids(notebook, rel)


def execute(path: Path, timeout: int, lang: str | None = None) -> float:
    notebook = nbformat.read(path, as_version=4)
    if lang is None:
        os.environ.pop("COURSE_LANG", None)
    else:
        os.environ["COURSE_LANG"] = LANGUAGES[lang]  # the kernel inherits our environment
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        # Unix sockets: `make execute` and `make execute-zh` may start kernels side by side.
        kernel_manager_class=socket_kernel_manager_class(asynchronous=True),
        resources={"metadata": {"path": str(path.resolve().parent)}},
        store_widget_state=True,
        record_timing=False,  # no clock times in the file: an unchanged notebook stays unchanged
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    target = output_path(path, lang)
    tidy(notebook, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    parser.add_argument(
        "--lang",
        choices=sorted(LANGUAGES),
        default=None,
        help="run with COURSE_LANG set, write to locale/zh_CN/notebooks/ (sources unchanged)",
    )
    parser.add_argument(
        "--tidy-only",
        action="store_true",
        help="do not execute: rewrite the saved notebooks as an execution would save them (tidy)",
    )
    args = parser.parse_args(argv)
    if args.tidy_only:
        for path in args.notebooks:
            target = output_path(path, args.lang)
            notebook = nbformat.read(target, as_version=4)
            tidy(notebook, target)
            nbformat.write(notebook, target)
            print(f"{target}: tidied", flush=True)
        return 0
    book_kernel_environment()
    for path in args.notebooks:
        elapsed = execute(path, args.timeout, args.lang)
        print(f"{output_path(path, args.lang)}: executed in {elapsed:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
