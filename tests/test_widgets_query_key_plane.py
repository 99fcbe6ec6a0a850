"""course_utils.widgets.query_key_plane: frames equal the package's maths (and torch); bad input
rejected; the data stays under the 50 KB budget."""

from __future__ import annotations

import json

import hypothesis
import numpy as np
import pytest
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from course_utils import scaled_dot_product_attention
from course_utils.softmax import softmax
from course_utils.widgets import QueryKeyPlane
from course_utils.widgets._base import MAX_STATE_BYTES, unpack_array


def _keys(seed: int, t_k: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(t_k, 2))  # (T_k, 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("n_angles", "lengths"), [(24, (0.5, 1.0, 2.0, 3.0)), (7, (1.0, 4.0))])
def test_plane_frames_equal_the_package_maths(seed, n_angles, lengths) -> None:
    k = _keys(seed)  # (T_k, 2)
    v = np.random.default_rng(seed + 100).normal(size=(5, 3))  # (T_k, d_v)
    w = QueryKeyPlane(k, v, n_angles=n_angles, lengths=lengths)
    theta = np.deg2rad(np.arange(n_angles) * 360.0 / n_angles)  # (A,)
    q = (
        np.stack([np.cos(theta), np.sin(theta)], -1)[:, None, :]
        * np.asarray(lengths)[None, :, None]
    )
    q_rows = q.reshape(-1, 2)  # (A*L, 2)
    out, weights = scaled_dot_product_attention(q_rows, k, v)  # (A*L, d_v), (A*L, T_k)
    frames = w.frames
    np.testing.assert_allclose(unpack_array(frames["query"]).reshape(-1, 2), q_rows, atol=5e-4)
    np.testing.assert_allclose(unpack_array(frames["weights"]).reshape(-1, 5), weights, atol=5e-4)
    np.testing.assert_allclose(unpack_array(frames["output"]).reshape(-1, 3), out, atol=5e-4)
    scores = q_rows @ k.T / np.sqrt(2)  # (A*L, T_k)
    np.testing.assert_allclose(unpack_array(frames["scores"]).reshape(-1, 5), scores, atol=5e-4)


@pytest.mark.parametrize("seed", [0, 3])
def test_plane_properties_match_torch_oracle(seed) -> None:
    k = _keys(seed, 4)  # (T_k, 2)
    v = np.random.default_rng(seed).normal(size=(4, 2))  # (T_k, d_v)
    w = QueryKeyPlane(k, v, n_angles=12, lengths=(1.0, 2.0, 3.0), angle_index=5, length_index=2)
    expected_q = 3.0 * np.array([np.cos(np.deg2rad(150)), np.sin(np.deg2rad(150))])  # (2,)
    np.testing.assert_allclose(w.query, expected_q, atol=1e-12)
    tq = torch.tensor(w.query[None, None, :])  # (1, 1, 2)
    out = torch.nn.functional.scaled_dot_product_attention(
        tq, torch.tensor(k[None]), torch.tensor(v[None])
    )  # (1, 1, d_v)
    np.testing.assert_allclose(w.output, out[0, 0].numpy(), atol=1e-10)
    np.testing.assert_allclose(w.weights, softmax(w.scores), atol=1e-12)
    np.testing.assert_allclose(w.weights.sum(), 1.0)


def test_plane_reads_the_index_javascript_sets() -> None:
    w = QueryKeyPlane([[1.0, 0.0], [0.0, 1.0]], n_angles=4, lengths=(1.0, 2.0, 3.0))
    before = w.weights.copy()
    w.set_state({"angle_index": 1})  # what a model.set + save_changes from the browser does
    assert w.angle_index == 1 and w.angle == 90.0
    assert w.weights[1] > w.weights[0] and not np.allclose(before, w.weights)


def test_plane_recomputes_when_inputs_change() -> None:
    w = QueryKeyPlane([[1.0, 0.0], [0.0, 1.0]], n_angles=4)
    old = json.dumps(w.frames)
    w.set_inputs([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], key_labels=["a", "b", "c"])
    assert json.dumps(w.frames) != old
    assert unpack_array(w.frames["weights"]).shape == (4, 5, 3)
    w.lengths = [1.0, 5.0]
    assert unpack_array(w.frames["weights"]).shape == (4, 2, 3)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"keys": [[1.0, 0.0, 0.0]]},
            ValueError,
            r"keys must have shape \(T, 2\); got shape \(1, 3\)",
        ),
        (
            {"keys": [[1.0, 0.0]], "values": [[1.0], [2.0]]},
            ValueError,
            r"values must have shape \(1, d\); got shape \(2, 1\)",
        ),
        (
            {"keys": [[1.0, 0.0]], "key_labels": ["a", "b"]},
            ValueError,
            r"key_labels must have 1 label \(one per key\); got 2",
        ),
        (
            {"keys": [[1.0, 0.0]], "key_labels": "a"},
            TypeError,
            r"key_labels must be a list of strings",
        ),
        (
            {"keys": [[1.0, 0.0]], "lengths": [1.0]},
            ValueError,
            r"lengths must be a 1-D sequence of at least 2",
        ),
        ({"keys": [[1.0, 0.0]], "lengths": [1.0, -2.0]}, ValueError, r"lengths must be positive"),
        (
            {"keys": [[1.0, 0.0]], "n_angles": 1},
            ValueError,
            r"n_angles must be an int in \[2, 121\]; got 1",
        ),
        (
            {"keys": [[1.0, 0.0]], "angle_index": 99},
            ValueError,
            r"angle_index must be an int in \[0, 23\]; got 99",
        ),
        ({"keys": [[1.0, 0.0]], "length_index": 1.5}, TypeError, r"length_index must be an int"),
    ],
)
def test_plane_bad_inputs(kwargs, error, match) -> None:
    keys = kwargs.pop("keys")
    with pytest.raises(error, match=match):
        QueryKeyPlane(keys, **kwargs)


def test_plane_rejects_bad_index_from_python() -> None:
    w = QueryKeyPlane([[1.0, 0.0]], n_angles=4)
    with pytest.raises(ValueError, match=r"angle_index must be an int in \[0, 3\]; got -1"):
        w.angle_index = -1
    assert w.angle_index == 0


def test_plane_budget_is_enforced() -> None:
    with pytest.raises(ValueError, match=r"more than the budget of 50000; use a coarser grid"):
        QueryKeyPlane(_keys(0, 30), n_angles=121, lengths=np.linspace(0.1, 4, 20))


def test_state_size_under_budget() -> None:
    w = QueryKeyPlane(_keys(0, 6), n_angles=36, lengths=(0.5, 1, 1.5, 2, 3, 4))
    assert w.data_bytes() < MAX_STATE_BYTES
    # The whole state, code included, is what a notebook stores for one view.
    assert w.state_bytes() < MAX_STATE_BYTES + len(w._esm) + len(w._css) + 2_000


@hypothesis.settings(max_examples=40, deadline=None, derandomize=True)
@hypothesis.given(
    keys=hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 6), st.just(2)),
        elements=st.floats(-5, 5, allow_nan=False, allow_infinity=False),
    ),
    n_angles=st.integers(2, 24),
)
def test_plane_frames_are_distributions(keys, n_angles) -> None:
    """Every precomputed weight row is a probability distribution (up to the 3-decimal rounding)."""
    w = QueryKeyPlane(keys, n_angles=n_angles, lengths=(0.5, 2.0))
    weights = unpack_array(w.frames["weights"])  # (A, L, T_k)
    assert weights.shape == (n_angles, 2, keys.shape[0])
    assert (weights >= 0).all() and (weights <= 1).all()
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=keys.shape[0] * 5e-4)
    assert w.data_bytes() < MAX_STATE_BYTES
