"""Hot reload while a widget is being written: edit its ``.js``/``.css``, save, see it redrawn.

A widget's code reaches JupyterLab as its ``_esm``/``_css`` traits (``_shared.js`` and the
widget's own file, put together by :func:`~course_utils.widgets._base.widget_esm`). Setting those
traits on a live widget makes anywidget load the new module and redraw every view of it, with no
kernel restart and no re-execution (the same mechanism as anywidget's file-path ``_esm``, which a
module assembled from several files cannot use directly). The static site takes the same files at
build time (``make book``).

>>> from course_utils.widgets import QueryKeyPlane
>>> plane = QueryKeyPlane.example()
>>> reload_widget_code()  # nothing changed on disk: nothing to send
0
>>> stop = watch_widget_code(interval=0.2)  # in a notebook cell while you edit the files
>>> stop()
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from ._base import HERE, LIVE_WIDGETS, CourseWidget, widget_css, widget_esm

__all__ = ["reload_widget_code", "watch_widget_code"]


def _widget_classes() -> list[type[CourseWidget]]:
    found, todo = [], [CourseWidget]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            todo.append(sub)
            if sub.__dict__.get("_widget_file"):
                found.append(sub)
    return found


def reload_widget_code(source: Path | None = None) -> int:
    """Read every widget's ``.js``/``.css`` (and ``_shared.*``) again and send the new code to
    the live widgets whose code changed; return how many were updated. New widgets get it too.

    ``source`` is the folder of the files (default: this package's; a test passes a copy).
    """
    folder = HERE if source is None else Path(source)
    # Only the widgets whose files are in the folder (a widget defined elsewhere, e.g. in a test,
    # keeps its code).
    known = {p.stem for p in folder.glob("*.js")}
    for cls in _widget_classes():
        if cls._widget_file in known:
            cls._esm = widget_esm(cls._widget_file, source=folder)
            cls._css = widget_css(cls._widget_file, source=folder)
    updated = 0
    for widget in list(LIVE_WIDGETS):
        stem = type(widget)._widget_file
        if stem not in known:
            continue
        esm = widget_esm(stem, widget._code_language, source=folder)
        css = widget_css(stem, source=folder)
        if widget._esm != esm or widget._css != css:
            with widget.hold_sync():
                widget._esm, widget._css = esm, css
            updated += 1
    return updated


def watch_widget_code(interval: float = 0.5, source: Path | None = None) -> Callable[[], None]:
    """Watch the widgets' ``.js``/``.css`` files (every ``interval`` seconds, in a background
    thread) and call :func:`reload_widget_code` when one changes. Returns the function that stops
    the watching.
    """
    if not isinstance(interval, int | float) or not 0.05 <= interval <= 60:
        raise ValueError(f"interval must be a number of seconds in [0.05, 60]; got {interval!r}")
    folder = HERE if source is None else Path(source)

    def stamps() -> dict[Path, int]:
        files = [*folder.glob("*.js"), *folder.glob("*.css")]
        return {p: p.stat().st_mtime_ns for p in sorted(files)}

    stopped = threading.Event()

    def run() -> None:
        last = stamps()
        while not stopped.wait(interval):
            now = stamps()
            if now != last:
                last = now
                reload_widget_code(source)

    threading.Thread(target=run, name="course-widget-code", daemon=True).start()
    return stopped.set
