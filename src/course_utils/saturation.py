"""How saturated is a softmax? Three measurements of one row of attention weights.

A softmax *saturates* when nearly all of its weight sits on one entry. Chapter 2 measures this
three ways:

- the **largest weight** ``max_j p_j`` (1 / T_k for a uniform row, 1 for a one-hot row);
- the **entropy** ``H(p) = -sum_j p_j log p_j`` in nats (``log T_k`` for a uniform row, 0 for a
  one-hot row);
- the **Jacobian** of the softmax, ``J = diag(p) - p pᵀ``, i.e. ``J[i, j] = d p_i / d z_j`` for
  ``p = softmax(z)``; its Frobenius norm says how strongly the weights react to a small change of
  the scores. It is ``sqrt(T_k - 1) / T_k`` for a uniform row and exactly 0 for a one-hot row: a
  saturated softmax passes (almost) no gradient back to the scores.

All three take the *weights* (the output of :func:`course_utils.softmax.softmax`), not the scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._validation import as_float_array, check_alloc, shape_str

__all__ = ["softmax_entropy", "softmax_jacobian", "softmax_jacobian_norm"]


def _as_weights(p: Any, name: str = "weights") -> NDArray:
    """Validate a probability vector (or a stack of them along the last axis)."""
    arr = as_float_array(p, name, min_ndim=1, expected="(..., T_k)")
    if np.isinf(arr).any():
        raise ValueError(
            f"{name} must be finite probabilities; got -inf (shape {shape_str(arr.shape)})"
        )
    if arr.shape[-1] == 0:
        raise ValueError(
            f"{name} must have at least one entry along its last axis; got shape (..., 0)"
        )
    if (arr < 0).any() or (arr > 1).any():
        raise ValueError(
            f"{name} must lie in [0, 1]; got values from {arr.min():.3g} to {arr.max():.3g} "
            f"(shape {shape_str(arr.shape)})"
        )
    tolerance = float(np.sqrt(np.finfo(arr.dtype).eps)) * arr.shape[-1]
    row_sums = arr.sum(axis=-1)  # (...,)
    if not np.allclose(row_sums, 1.0, atol=tolerance, rtol=0):
        worst = float(row_sums.flat[np.argmax(np.abs(row_sums - 1.0))])
        raise ValueError(
            f"{name} must sum to 1 along the last axis (shape {shape_str(arr.shape)}); "
            f"found a row summing to {worst:.6g}"
        )
    return arr


def softmax_entropy(weights: Any) -> NDArray:
    """Entropy ``-sum_j p_j log p_j`` (nats) of each row: shape ``(..., T_k) -> (...)``.

    ``0 log 0`` counts as 0, so masked positions (weight exactly 0) add nothing.

    >>> float(softmax_entropy([0.25, 0.25, 0.25, 0.25]).round(4))  # log 4
    1.3863
    >>> float(softmax_entropy([1.0, 0.0, 0.0]))
    0.0
    """
    p = _as_weights(weights)
    safe = np.where(p > 0, p, 1.0)  # log(1) = 0 where p == 0
    return 0.0 - np.sum(p * np.log(safe), axis=-1)  # (...,); "0.0 -" avoids printing -0.0


def softmax_jacobian(weights: Any) -> NDArray:
    """Jacobian ``J = diag(p) - p pᵀ`` of ``p = softmax(z)`` with respect to ``z``.

    ``J[..., i, j] = d p_i / d z_j``. Shape ``(..., T_k) -> (..., T_k, T_k)``. The matrix is
    symmetric, and every row sums to 0 (adding a constant to all scores changes nothing).

    >>> softmax_jacobian([0.5, 0.5])
    array([[ 0.25, -0.25],
           [-0.25,  0.25]])
    >>> softmax_jacobian([1.0, 0.0])  # saturated: no gradient at all
    array([[0., 0.],
           [0., 0.]])
    """
    p = _as_weights(weights)
    # the result, the diagonal and the outer product: three (..., T_k, T_k) arrays
    check_alloc((*p.shape, p.shape[-1]), 3 * p.itemsize, "softmax_jacobian")
    diag = p[..., :, None] * np.eye(p.shape[-1], dtype=p.dtype)  # (..., T_k, T_k)
    outer = p[..., :, None] * p[..., None, :]  # (..., T_k, T_k)
    return diag - outer  # (..., T_k, T_k)


def softmax_jacobian_norm(weights: Any) -> NDArray:
    """Frobenius norm of :func:`softmax_jacobian` for each row, shape ``(..., T_k) -> (...)``.

    Uniform weights over ``T_k`` keys give ``sqrt(T_k - 1) / T_k``; one-hot weights give 0.

    >>> float(softmax_jacobian_norm([0.25, 0.25, 0.25, 0.25]).round(4))  # sqrt(3) / 4
    0.433
    """
    jac = softmax_jacobian(weights)  # (..., T_k, T_k)
    return np.sqrt(np.sum(jac * jac, axis=(-2, -1)))  # (...,)
