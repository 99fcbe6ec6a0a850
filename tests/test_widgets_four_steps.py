"""course_utils.widgets.four_steps: frames equal the package's attention (and torch); bad input
rejected."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from course_utils.attention import scaled_dot_product_attention
from course_utils.data import bank_example, by_hand_example
from course_utils.masks import causal_mask
from course_utils.widgets import FourSteps
from course_utils.widgets._base import MAX_STATE_BYTES, unpack_array


@pytest.mark.parametrize("masked", [False, True])
def test_four_steps_frames_equal_package_and_torch(masked: bool) -> None:
    ex = bank_example()
    mask = causal_mask(ex.T) if masked else None
    w = FourSteps(ex.Q, ex.K, ex.V, tokens=list(ex.tokens), mask=mask)
    out_pkg, weights_pkg = scaled_dot_product_attention(ex.Q, ex.K, ex.V, mask)
    q, k, v = (torch.tensor(a) for a in (ex.Q, ex.K, ex.V))
    out_torch = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=masked).numpy()
    np.testing.assert_allclose(unpack_array(w.frames["scores"]), ex.Q @ ex.K.T, atol=5e-4)
    scaled = unpack_array(w.frames["scaled"])  # (T, T); masked cells stored as 0
    expected_scaled = ex.Q @ ex.K.T / math.sqrt(ex.d_k)
    keep = causal_mask(ex.T) if masked else np.ones((ex.T, ex.T), bool)
    np.testing.assert_allclose(scaled[keep], expected_scaled[keep], atol=5e-4)
    np.testing.assert_allclose(unpack_array(w.frames["weights"]), weights_pkg, atol=5e-4)
    np.testing.assert_allclose(unpack_array(w.frames["output"]), out_torch, atol=5e-4)
    np.testing.assert_allclose(unpack_array(w.frames["output"]), out_pkg, atol=5e-4)
    np.testing.assert_array_equal(unpack_array(w.frames["mask"]) == 1, keep)
    assert w.data_bytes() < MAX_STATE_BYTES


def test_four_steps_current_follows_the_step() -> None:
    ex = by_hand_example()
    w = FourSteps(ex.Q, ex.K, ex.V, tokens=list(ex.tokens))
    steps = w.steps()
    for i in range(4):
        w.step_index = i
        np.testing.assert_array_equal(w.current, steps[i])
    np.testing.assert_allclose(steps[2].sum(axis=-1), 1.0)
    with pytest.raises(ValueError, match=r"step_index must be an int in \[0, 3\]; got 4"):
        w.step_index = 4


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"k": np.zeros((4, 2))}, ValueError, r"k must have shape \(T, 3\); got shape \(4, 2\)"),
        ({"v": np.zeros((3, 3))}, ValueError, r"v must have shape \(4, d\); got shape \(3, 3\)"),
        ({"tokens": ["a", "b"]}, ValueError, r"tokens must have 4 labels \(one per row\); got 2"),
        ({"mask": np.ones((4, 4))}, TypeError, r"mask must be a boolean array"),
        (
            {"mask": np.ones((4, 3), bool)},
            ValueError,
            r"mask has shape \(4, 3\), expected \(4, 4\)",
        ),
        ({"q": np.zeros((40, 3)), "query_tokens": ["x"] * 40}, ValueError, r"at most 144"),
        ({"q": np.zeros((2, 3))}, ValueError, r"q has 2 rows and k 4: pass query_tokens"),
        (
            {"q": np.zeros((2, 3)), "query_tokens": ["x"]},
            ValueError,
            r"query_tokens must have 2 labels \(one per row of q\); got 1",
        ),
    ],
)
def test_four_steps_bad_input(kwargs, error, match) -> None:
    ex = by_hand_example()
    args = {"q": ex.Q, "k": ex.K, "v": ex.V, "tokens": list(ex.tokens)} | kwargs
    with pytest.raises(error, match=match):
        FourSteps(args.pop("q"), args.pop("k"), args.pop("v"), **args)
