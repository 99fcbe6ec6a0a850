"""Unit tests of the HeadGrouping widget (chapter 10): which query heads share a key/value head
equals course_utils.gqa.head_groups; bad input is rejected clearly."""

from __future__ import annotations

import pytest

from course_utils.gqa import head_groups
from course_utils.widgets import HeadGrouping


@pytest.mark.parametrize("n_heads", [2, 8, 9, 12, 32])
def test_grouping_frames_equal_head_groups(n_heads):
    w = HeadGrouping(n_heads)
    assert w.kv_options == [d for d in range(n_heads, 0, -1) if n_heads % d == 0]
    for o, n_kv in enumerate(w.kv_options):
        for j, heads in enumerate(head_groups(n_heads, n_kv)):
            assert all(w.kv_of[o][i] == j for i in heads)
    assert w.data_bytes() < 50_000


def test_grouping_state_and_measured():
    w = HeadGrouping(
        12, measured=[0, 0.1, 0.2, 0.3, 0.4, 0.5], measured_label="change", n_kv_heads=4
    )
    assert w.n_kv_heads == 4 and w.groups()[1] == [3, 4, 5]
    assert w.measured == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    assert repr(w) == "HeadGrouping(n_heads=12, n_kv_heads=4, query_head=0)"


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"n_heads": 1}, ValueError, "n_heads"),
        ({"n_heads": 33}, ValueError, "n_heads"),
        ({"n_heads": 4, "measured": [1.0]}, ValueError, r"one finite number per n_kv_heads"),
        ({"n_heads": 4, "n_kv_heads": 3}, ValueError, r"n_kv_heads must be one of \[4, 2, 1\]"),
        ({"n_heads": 4.0}, TypeError, "n_heads"),
    ],
)
def test_grouping_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        HeadGrouping(**kwargs)


def test_grouping_bad_index():
    w = HeadGrouping(4)
    with pytest.raises((ValueError, TypeError), match="query_index"):
        w.query_index = 4
