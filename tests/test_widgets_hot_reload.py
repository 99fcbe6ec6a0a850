"""Hot reload of a widget's code in a live kernel (course_utils.widgets.hot_reload)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from course_utils.i18n import set_language
from course_utils.widgets import QueryKeyPlane, SentenceAttention
from course_utils.widgets._base import HERE
from course_utils.widgets.hot_reload import reload_widget_code, watch_widget_code

MARK = "hot-reload-test-mark"


@pytest.fixture
def edited_copy(tmp_path: Path):
    """A copy of the widgets' .js/.css files; the package's own code is restored afterwards."""
    for path in [*HERE.glob("*.js"), *HERE.glob("*.css")]:
        shutil.copy(path, tmp_path / path.name)
    yield tmp_path
    reload_widget_code()  # back to the package's files, for the classes and the live widgets


def _edit(folder: Path, name: str) -> None:
    path = folder / name
    path.write_text(path.read_text(encoding="utf-8") + f"\n// {MARK}\n", encoding="utf-8")


def test_an_edited_js_file_reaches_the_live_widget_and_new_ones(edited_copy: Path) -> None:
    plane, other = QueryKeyPlane.example(), SentenceAttention.example()
    before = other._esm
    _edit(edited_copy, "query_key_plane.js")
    assert reload_widget_code(edited_copy) >= 1
    assert MARK in plane._esm and other._esm == before  # only the edited widget's code changes
    assert MARK in QueryKeyPlane.example()._esm  # a widget made afterwards has it too
    assert reload_widget_code(edited_copy) == 0  # nothing new on disk: nothing sent


def test_shared_css_reaches_every_widget_and_zh_keeps_its_messages(edited_copy: Path) -> None:
    set_language("zh")
    try:
        zh_plane = QueryKeyPlane.example()
    finally:
        set_language(None)
    assert "CU.addMessages(" in zh_plane._esm
    _edit(edited_copy, "_shared.css")
    reload_widget_code(edited_copy)
    assert MARK in zh_plane._css
    _edit(edited_copy, "query_key_plane.js")
    reload_widget_code(edited_copy)
    assert MARK in zh_plane._esm and "CU.addMessages(" in zh_plane._esm  # still Chinese


def test_the_watcher_sends_a_saved_file_and_stops(edited_copy: Path) -> None:
    plane = QueryKeyPlane.example()
    stop = watch_widget_code(interval=0.05, source=edited_copy)
    try:
        # Save the file until the widget has the new code: an edit made before the watcher's
        # first look at the files is not a change to it, so one save alone could be missed.
        deadline = time.monotonic() + 10
        while MARK not in plane._esm and time.monotonic() < deadline:
            _edit(edited_copy, "query_key_plane.js")
            time.sleep(0.25)
        assert MARK in plane._esm
    finally:
        stop()


@pytest.mark.parametrize("interval", [0, -1, 1000, "1"])
def test_a_bad_interval_is_named(interval: object) -> None:
    with pytest.raises(ValueError, match="interval must be a number of seconds"):
        watch_widget_code(interval=interval)  # type: ignore[arg-type]
