"""Numbers the prose quotes, glued into the page from the executed cell that computed them.

``glue(name, value, display=False)`` publishes ``value`` exactly as ``myst_nb.glue`` does (the
same display data, MIME prefix and ``scrapbook`` metadata; ``tests/test_glue.py`` holds the two
to the same output), so the book's ``{glue:text}`` roles read it. It is here because importing
``myst_nb.ext.glue`` in a kernel loads nbformat, jsonschema and myst_nb's loggers (1.2 s on a
quiet machine, 3 s on a busy one) for five lines that need none of them: every run of a chapter
(the book's execution, nbval, the learner copy) paid it.

>>> data, metadata = glued_output("accuracy", 0.992, display=False)
>>> data
{'application/papermill.record/text/plain': '0.992'}
>>> metadata["scrapbook"]
{'name': 'accuracy', 'mime_prefix': 'application/papermill.record/'}
"""

from __future__ import annotations

from typing import Any

__all__ = ["GLUE_PREFIX", "glue", "glued_output"]

#: The MIME prefix of a value glued without being shown (myst_nb's ``GLUE_PREFIX``).
GLUE_PREFIX = "application/papermill.record/"


def glued_output(name: str, value: Any, display: bool = True) -> tuple[dict, dict]:
    """The display data and metadata that :func:`glue` publishes for ``value``."""
    from IPython.core.formatters import format_display_data

    if not isinstance(name, str) or not name:
        raise TypeError(f"glue: name must be a non-empty str; got {name!r}")
    bundle, metadata = format_display_data(value)
    prefix = "" if display else GLUE_PREFIX
    metadata["scrapbook"] = {"name": name, "mime_prefix": prefix}
    return {prefix + k: v for k, v in bundle.items()}, metadata


def glue(name: str, value: Any, display: bool = True) -> None:
    """Publish ``value`` under ``name`` for the page's ``{glue:text}`` roles (``display``: also
    show it in the cell's output, as myst_nb's ``glue`` does)."""
    from IPython.display import display as ipython_display

    data, metadata = glued_output(name, value, display)
    ipython_display(data, raw=True, metadata=metadata)
