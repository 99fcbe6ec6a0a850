"""The chapter 9 pattern widget: its frames are the course_utils.sparse masks and receptive
fields, the state fits the shared budget, bad input is rejected, JavaScript stays a view."""

from __future__ import annotations

import json

import numpy as np
import pytest

from course_utils.sparse import density, layers_to_reach_all, reach
from course_utils.widgets import SparsePatterns
from course_utils.widgets._base import MAX_STATE_BYTES
from course_utils.widgets.sparse_patterns import (
    EXTRA_VALUES,
    N_LAYERS,
    PARAM_VALUES,
    PATTERNS,
    T_VALUES,
    build_mask,
)


@pytest.fixture(scope="module")
def widget():
    return SparsePatterns()


@pytest.mark.parametrize("pattern", list(PATTERNS))
@pytest.mark.parametrize(("t", "param", "extra"), [(16, 2, 0), (24, 3, 1), (32, 8, 4)])
def test_frames_are_the_package_masks(widget, pattern, t, param, extra):
    widget.pattern_index = list(PATTERNS).index(pattern)
    widget.t_index, widget.param_index = T_VALUES.index(t), PARAM_VALUES.index(param)
    widget.extra_index = EXTRA_VALUES.index(extra)
    uses_extra = PATTERNS[pattern][1]
    m = build_mask(pattern, t, param, extra if uses_extra else 0)
    np.testing.assert_array_equal(widget.mask, m)
    np.testing.assert_array_equal(widget.reach, reach(m, N_LAYERS)[:, t - 1])
    assert widget.density == pytest.approx(density(m))
    frame = widget._frame()
    assert frame["pairs"] == m.sum()
    assert frame["layers"] == layers_to_reach_all(m)


def test_build_mask_examples():
    # block-sparse computes whole tiles: it holds the window and more
    w = build_mask("sliding window", 16, 4, 0)
    b = build_mask("block-sparse window", 16, 4, 0)
    assert (b | w == b).all() and b.sum() > w.sum()
    # extra tokens add global rows and columns
    g = build_mask("window + global", 16, 2, 2)
    assert g[:2].all() and g[:, :2].all()
    with pytest.raises(ValueError, match="pattern must be one of"):
        build_mask("diagonal", 4, 2, 0)


def test_state_is_small_and_repr_is_stable(widget):
    assert widget.data_bytes() < MAX_STATE_BYTES
    fresh = SparsePatterns()
    assert repr(fresh) == "SparsePatterns(pattern='window + global', t=24, param=3, extra=1)"
    json.dumps(fresh.get_state(), default=str)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pattern": "diagonal"}, "pattern must be one of"),
        ({"t": 20}, r"t must be one of \[16, 24, 32\]; got 20"),
        ({"param": 5}, "param must be one of"),
        ({"extra": 3}, "extra must be one of"),
        ({"extra": True}, "extra must be one of"),
    ],
)
def test_bad_arguments_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SparsePatterns(**kwargs)


def test_indices_are_validated(widget):
    with pytest.raises(ValueError, match=r"t_index must be an int in \[0, 2\]; got 3"):
        widget.t_index = 3
    with pytest.raises(ValueError, match=r"pattern_index must be an int in \[0, 5\]; got 6"):
        widget.pattern_index = 6


def test_every_control_of_the_initial_view_changes_the_mask():
    # the browser test presses one key on each control; each must change what is drawn
    w = SparsePatterns()
    start = w.mask.copy()
    for name in ("t_index", "param_index", "extra_index", "pattern_index"):
        before = getattr(w, name)
        setattr(w, name, before + 1)
        assert w.mask.shape != start.shape or (w.mask != start).any(), name
        setattr(w, name, before)
