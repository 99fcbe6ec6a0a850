"""course_utils.widgets.temperature_mix: frames equal softmax (and torch); outputs stay in the
values' convex hull; bad input rejected."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils.geometry import in_convex_polygon
from course_utils.softmax import softmax
from course_utils.widgets import TemperatureMix
from course_utils.widgets._base import MAX_STATE_BYTES, unpack_array

SCORES = [1.2, 0.3, -0.5, 2.0]
VALUES = [[0.0, 0.0], [3.0, 0.5], [1.0, 2.5], [2.5, 2.0]]


def test_temperature_frames_equal_softmax_and_torch() -> None:
    w = TemperatureMix(SCORES, VALUES, labels=["a", "b", "c", "d"])
    weights = unpack_array(w.frames["weights"])  # (n_T, T_k)
    output = unpack_array(w.frames["output"])  # (n_T, 2)
    for i, t in enumerate(w.temperatures):
        oracle = torch.softmax(torch.tensor(SCORES, dtype=torch.float64) / t, dim=-1).numpy()
        np.testing.assert_allclose(weights[i], oracle, atol=5e-4)
        np.testing.assert_allclose(weights[i], softmax(SCORES, temperature=t), atol=5e-4)
        np.testing.assert_allclose(output[i], oracle @ np.array(VALUES), atol=2e-3)
    assert w.temperature == 1.0
    np.testing.assert_allclose(w.weights, softmax(SCORES))
    assert w.data_bytes() < MAX_STATE_BYTES


def test_temperature_limits_argmax_and_uniform() -> None:
    w = TemperatureMix(SCORES, VALUES, temperatures=[0.01, 1.0, 1000.0])
    w.t_index = 0
    np.testing.assert_allclose(w.weights, [0, 0, 0, 1], atol=1e-12)  # T -> 0: argmax
    np.testing.assert_allclose(w.output, VALUES[3], atol=1e-12)
    w.t_index = 2
    np.testing.assert_allclose(w.weights, 0.25, atol=1e-3)  # T -> inf: uniform
    np.testing.assert_allclose(w.output, np.mean(VALUES, axis=0), atol=1e-2)


def test_every_output_is_inside_the_convex_hull() -> None:
    w = TemperatureMix(SCORES, VALUES)
    hull = np.array(w.hull)  # (n_hull, 2)
    for i in range(len(w.temperatures)):
        w.t_index = i
        assert in_convex_polygon([w.output], hull)[0]
    assert not in_convex_polygon([[3.5, 3.5]], hull)[0]  # the check can fail


@pytest.mark.parametrize(
    "args,kwargs,error,match",
    [
        (
            (SCORES, VALUES[:3]),
            {},
            ValueError,
            r"values must have shape \(4, 2\); got shape \(3, 2\)",
        ),
        ((SCORES, [[1, 2, 3]] * 4), {}, ValueError, r"values must have shape \(4, 2\)"),
        (
            (SCORES, VALUES),
            {"labels": ["a"]},
            ValueError,
            r"labels must have 4 labels \(one per score\); got 1",
        ),
        ((SCORES, VALUES), {"temperatures": [1.0, 0.5]}, ValueError, r"increasing"),
        ((SCORES, VALUES), {"temperatures": [0.0, 1.0]}, ValueError, r"positive"),
        ((SCORES, VALUES), {"t_index": 7.0}, TypeError, r"t_index must be an int"),
        (([np.nan, 1, 2, 3], VALUES), {}, ValueError, r"NaN"),
    ],
)
def test_temperature_widget_bad_input(args, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        TemperatureMix(*args, **kwargs)
