"""Run a chapter's code cells in one namespace, so tests can compare its results with the package.

Used by the ``test_chapterNN_matches_package`` tests. IPython-only lines (``%matplotlib inline``)
are dropped, figures go to the Agg backend, and widgets are created without a kernel. ``mutate``
replaces one snippet of the chapter's code, so a test can prove that its comparison catches a
wrong step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib
import nbformat

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"


def run_notebook_cells(
    notebook: Path,
    *,
    mutate: tuple[str, str] | None = None,
    stop_before: str | None = None,
    drop_lines_starting_with: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Execute ``notebook``'s code cells in order in a fresh namespace and return the namespace.

    ``stop_before``: stop at the first code cell whose source contains this text.
    ``drop_lines_starting_with``: leave out lines that start with one of these prefixes (e.g. the
    chapter's own ``np.testing.assert_allclose`` checks, which a mutation test must get past).
    """
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nb = nbformat.read(notebook, as_version=4)
    namespace: dict[str, Any] = {"__name__": notebook.stem}
    replaced = False
    try:
        for cell in (c for c in nb.cells if c.cell_type == "code"):
            if stop_before is not None and stop_before in cell.source:
                break
            lines = [
                line
                for line in cell.source.splitlines()
                if not line.lstrip().startswith("%")
                and not (drop_lines_starting_with and line.startswith(drop_lines_starting_with))
            ]
            source = "\n".join(lines)
            if mutate is not None and mutate[0] in source:
                source, replaced = source.replace(*mutate), True
            exec(compile(source, f"{notebook.name}:{cell.id}", "exec"), namespace)
    finally:
        plt.close("all")
    if mutate is not None:
        assert replaced, f"mutation target not found in {notebook.name}: {mutate[0]!r}"
    return namespace


def included_pyobjects(stem: str, module: str) -> dict[str, list[str]]:
    """The ``:pyobject:`` names that chapter ``stem``'s Markdown includes from
    ``src/course_utils/<module>`` with ``{literalinclude}``, in the English notebook and in its
    zh-executed copy (keyed by edition: ``"en"``, ``"zh"``)."""
    import json
    import re

    repo = CHAPTERS.parent
    editions = {"en": CHAPTERS, "zh": repo / "locale" / "zh_CN" / "notebooks" / "chapters"}
    pattern = re.compile(
        rf"literalinclude\}} \.\./src/course_utils/{re.escape(module)}\n(?::\w+:.*\n)*?"
        r":pyobject: (\w+)"
    )
    shown = {}
    for edition, folder in editions.items():
        cells = json.loads((folder / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]
        text = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        shown[edition] = pattern.findall(text)
    return shown
