"""Chapter 7's GenerationStepper: frames equal CausalSelfAttention's weights, the cache split is
right at every step, bad inputs are rejected, text stays text, and the state is within budget."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from course_utils.causal import CausalSelfAttention
from course_utils.masks import causal_mask
from course_utils.widgets import GenerationStepper
from course_utils.widgets._base import MAX_STATE_BYTES, unpack_array


def _weights(T: int, seed: int = 0) -> np.ndarray:
    torch.manual_seed(seed)
    attn = CausalSelfAttention(8, 1).double()
    _, w = attn(torch.randn(1, T, 8, dtype=torch.float64), return_weights=True)  # (1, 1, T, T)
    return w[0, 0].detach().numpy()


@pytest.mark.parametrize("T", [1, 4, 9])
def test_frames_equal_causal_self_attention(T):
    w = _weights(T, seed=T)
    stepper = GenerationStepper(
        [{"name": "x", "tokens": [f"t{i}" for i in range(T)], "weights": w}]
    )
    np.testing.assert_allclose(unpack_array(stepper.frames[0]), w, atol=5e-4)
    for t in range(T):
        stepper.step = t
        np.testing.assert_allclose(stepper.row, w[t], atol=5e-4)
        assert stepper.row[t + 1 :].sum() == 0


def test_cache_and_new_at_every_step():
    stepper = GenerationStepper([{"name": "看书真好", "tokens": list("看书真好")}])
    seen = []
    for t in range(4):
        stepper.step = t
        seen.append((stepper.cached, stepper.new))
    assert seen == [([], "看"), (["看"], "书"), (["看", "书"], "真"), (["看", "书", "真"], "好")]
    # with no weights the rows are the mask, normalised: the seed's 看书真好 table
    mask = causal_mask(4)
    np.testing.assert_allclose(stepper.weights, mask / mask.sum(-1, keepdims=True), atol=5e-4)


def test_switching_example_clamps_the_step():
    stepper = GenerationStepper(
        [{"tokens": list("abcdef")}, {"tokens": list("xy")}], example_index=0, step=5
    )
    stepper.example_index = 1
    assert stepper.step == 1 and stepper.new == "y"


@pytest.mark.parametrize(
    ("examples", "error", "match"),
    [
        ([], TypeError, "non-empty list"),
        ({"tokens": ["a"]}, TypeError, "non-empty list"),
        (["ab"], TypeError, r"examples\[0\] must be a dict"),
        (
            [{"tokens": list("abc"), "weights": np.ones((2, 2))}],
            ValueError,
            r"shape \(2, 2\), expected \(3, 3\)",
        ),
        (
            [{"tokens": list("ab"), "weights": np.full((2, 2), 0.5)}],
            ValueError,
            "above the diagonal",
        ),
        ([{"tokens": list("ab"), "weights": np.eye(2) * 2}], ValueError, "sum to 1"),
        (
            [{"tokens": list("ab"), "weights": np.array([[1, 0], [np.nan, 0]])}],
            ValueError,
            "finite",
        ),
        ([{"tokens": [str(i) for i in range(17)]}], ValueError, "1 to 16 tokens"),
    ],
)
def test_bad_inputs(examples, error, match):
    with pytest.raises(error, match=match):
        GenerationStepper(examples)


def test_bad_step_is_rejected():
    stepper = GenerationStepper([{"tokens": list("abc")}])
    with pytest.raises(Exception, match="step"):
        stepper.step = 3


def test_hostile_tokens_stay_plain_text():
    hostile = "<img src=x onerror=alert(1)>"
    stepper = GenerationStepper([{"tokens": [hostile, "b"]}])
    assert stepper.tokens[0][0] == hostile


def test_state_within_budget_and_js_reads_the_traits():
    examples = [
        {"name": str(i), "tokens": [f"w{j}" for j in range(16)], "weights": _weights(16, i)}
        for i in range(4)
    ]
    stepper = GenerationStepper(examples)
    size = len(json.dumps({k: getattr(stepper, k) for k in ("names", "tokens", "frames")}))
    assert size < MAX_STATE_BYTES
    js = stepper._esm
    for trait in ("names", "tokens", "frames", "example", "step"):
        assert f'"{trait}"' in js or f"change:{trait}" in js
