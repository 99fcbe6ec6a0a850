"""course_utils.saturation: entropy, softmax Jacobian and its norm.

Oracle: torch.autograd (the Jacobian of torch.softmax, computed by automatic differentiation) and
scipy-free closed forms for uniform and one-hot rows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from course_utils.saturation import softmax_entropy, softmax_jacobian, softmax_jacobian_norm
from course_utils.softmax import softmax


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("t_k", [1, 2, 5, 16])
@pytest.mark.parametrize("spread", [0.1, 1.0, 10.0])
def test_jacobian_matches_torch_autograd(seed: int, t_k: int, spread: float) -> None:
    z = np.random.default_rng(seed).normal(scale=spread, size=t_k)  # (t_k,)
    p = softmax(z)  # (t_k,)
    oracle = torch.autograd.functional.jacobian(
        lambda x: torch.softmax(x, dim=-1), torch.tensor(z, dtype=torch.float64)
    ).numpy()  # (t_k, t_k); oracle[i, j] = d p_i / d z_j
    np.testing.assert_allclose(softmax_jacobian(p), oracle, atol=1e-12)
    np.testing.assert_allclose(softmax_jacobian_norm(p), np.linalg.norm(oracle), atol=1e-12)


def test_jacobian_batched_matches_per_row() -> None:
    z = np.random.default_rng(3).normal(size=(2, 3, 4))  # (2, 3, 4)
    p = softmax(z)  # (2, 3, 4)
    jac = softmax_jacobian(p)  # (2, 3, 4, 4)
    assert jac.shape == (2, 3, 4, 4)
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(jac[i, j], softmax_jacobian(p[i, j]))
    assert softmax_jacobian_norm(p).shape == (2, 3)


def test_gradient_of_weighted_loss_matches_torch_backward() -> None:
    """J applied to an upstream gradient g is what backpropagation sends to the scores."""
    rng = np.random.default_rng(4)
    z = rng.normal(size=6)  # (6,)
    g = rng.normal(size=6)  # (6,), d loss / d p
    zt = torch.tensor(z, requires_grad=True)
    (torch.softmax(zt, dim=-1) * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(softmax_jacobian(softmax(z)).T @ g, zt.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("t_k", [1, 2, 4, 8, 64])
def test_uniform_row_closed_forms(t_k: int) -> None:
    p = np.full(t_k, 1.0 / t_k)  # (t_k,)
    assert softmax_entropy(p) == pytest.approx(math.log(t_k), abs=1e-12)
    assert softmax_jacobian_norm(p) == pytest.approx(math.sqrt(t_k - 1) / t_k, abs=1e-12)


@pytest.mark.parametrize("t_k,hot", [(1, 0), (3, 0), (3, 2), (8, 5)])
def test_one_hot_row_has_zero_entropy_and_zero_jacobian(t_k: int, hot: int) -> None:
    p = np.zeros(t_k)
    p[hot] = 1.0
    assert softmax_entropy(p) == 0.0
    assert not np.signbit(softmax_entropy(p))  # prints as 0.0, not -0.0
    assert np.all(softmax_jacobian(p) == 0.0)


def test_masked_zero_weights_add_no_entropy() -> None:
    assert softmax_entropy([0.5, 0.0, 0.5]) == pytest.approx(math.log(2))


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.integers(1, 12), elements=st.floats(-50, 50)))
def test_properties_of_any_softmax_row(z: np.ndarray) -> None:
    p = softmax(z)  # (t_k,)
    t_k = z.shape[0]
    jac = softmax_jacobian(p)  # (t_k, t_k)
    np.testing.assert_allclose(jac, jac.T, atol=1e-15)  # symmetric
    np.testing.assert_allclose(jac.sum(axis=-1), 0.0, atol=1e-12)  # shift invariance
    assert np.all(np.linalg.eigvalsh(jac) > -1e-12)  # positive semi-definite
    h = softmax_entropy(p)
    assert -1e-12 <= h <= math.log(t_k) + 1e-12
    # ||J||_F² = Σ p² − 2 Σ p³ + (Σ p²)², expanded by hand from J = diag(p) − p pᵀ.
    s2, s3 = np.sum(p**2), np.sum(p**3)
    assert softmax_jacobian_norm(p) ** 2 == pytest.approx(s2 - 2 * s3 + s2**2, abs=1e-12)
    assert 0.0 <= softmax_jacobian_norm(p) < 1.0


@pytest.mark.parametrize(
    "weights,error,match",
    [
        ([0.5, 0.6], ValueError, r"sum to 1.*shape \(2,\).*1\.1"),
        ([1.5, -0.5], ValueError, r"\[0, 1\]"),
        ([[0.5, 0.5], [0.2, 0.2]], ValueError, r"sum to 1.*\(2, 2\)"),
        (np.zeros((3, 0)), ValueError, r"at least one entry"),
        (0.5, ValueError, r"at least 1 dimensions"),
        ([np.nan, 1.0], ValueError, r"NaN"),
        ([-np.inf, 1.0], ValueError, r"-inf"),
        (["a", "b"], TypeError, r"numeric"),
    ],
)
@pytest.mark.parametrize("func", [softmax_entropy, softmax_jacobian, softmax_jacobian_norm])
def test_bad_weights_are_rejected(func, weights, error, match) -> None:
    with pytest.raises(error, match=match):
        func(weights)


def test_float32_weights_accepted_with_float32_tolerance() -> None:
    p = softmax(np.array([1.0, 2.0, 3.0], dtype=np.float32))  # (3,) float32
    assert softmax_jacobian(p).dtype == np.float32
