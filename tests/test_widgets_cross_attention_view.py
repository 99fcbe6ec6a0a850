"""CrossAttentionView: frames are the weights it was given; bad input is a clear error."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils.experiments.reversal import ReversalModel, cross_attention_rows
from course_utils.widgets import CrossAttentionView


def test_frames_equal_the_model_rows_and_budget():
    torch.manual_seed(0)
    model = ReversalModel().eval()
    rows = cross_attention_rows(model, ["cab", "ja"]) + cross_attention_rows(
        model, ["cab", "ja"], use_padding_mask=False
    )
    w = CrossAttentionView(rows)
    for i, (_, src, out, weights) in enumerate(rows):
        assert w.frame(i).shape == (len(out), len(src))
        np.testing.assert_allclose(w.frame(i), weights, atol=5e-4)
    w.example_index, w.step_index = 1, 1
    np.testing.assert_allclose(w.weights, rows[1][3][1])
    # with the mask, the padding of "ja" gets exactly zero weight; without, it does not
    assert np.all(rows[1][3][:, 2] == 0) and np.all(rows[3][3][:, 2] > 0)
    assert w.data_bytes() < 50_000


def test_step_index_follows_the_example():
    w = CrossAttentionView(
        [("a", ["x", "y"], ["p", "q", "r"], np.full((3, 2), 0.5)), ("b", ["x"], ["p"], [[1.0]])]
    )
    w.step_index = 2
    w.example_index = 1
    assert w.step_index == 0


@pytest.mark.parametrize(
    ("examples", "error", "match"),
    [
        ([], TypeError, "non-empty"),
        ([("a", ["x"], ["p"])], TypeError, "tuple"),
        ([("a", ["x", "y"], ["p"], [[0.2, 0.2]])], ValueError, "summing to 1"),
        ([("a", ["x", "y"], ["p"], [[1.0, 0.0, 0.0]])], ValueError, "weights"),
        ([("", ["x"], ["p"], [[1.0]])], TypeError, "label"),
    ],
)
def test_bad_input(examples, error, match):
    with pytest.raises(error, match=match):
        CrossAttentionView(examples)
