"""Scaled dot-product attention in numpy: the seed's four steps (计算流程) in one function.

1. Score = Q Kᵀ                      (similarity of every query with every key)
2. Scaled = Score / √d_k             (keep the variance of the scores at about 1)
3. Weights = softmax(Scaled)         (each row becomes a probability distribution over keys)
4. Output = Weights V                (each output is a weighted average of the values)

Reference: Vaswani et al. (2017), "Attention Is All You Need", eq. (1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._validation import (
    as_bool_array,
    as_float_array,
    check_alloc,
    check_int,
    check_mask_shape,
    check_qkv_shapes,
    shape_str,
)
from .softmax import softmax

__all__ = ["attention_scores", "default_scale", "scaled_dot_product_attention", "softmax"]


def _broadcast_batch(q: NDArray, k: NDArray, v: NDArray) -> tuple[int, ...]:
    """Leading (batch) dimensions broadcast like numpy's matmul; say which argument does not fit."""
    batch_shapes = {"q": q.shape[:-2], "k": k.shape[:-2], "v": v.shape[:-2]}
    try:
        return np.broadcast_shapes(*batch_shapes.values())
    except ValueError:
        described = ", ".join(f"{n} {shape_str(s)}" for n, s in batch_shapes.items())
        raise ValueError(
            "the batch dimensions (all but the last two) of q, k and v must broadcast; "
            f"got {described}"
        ) from None


def attention_scores(q: Any, k: Any, *, scale: float | None = None) -> NDArray:
    """Steps 1 and 2: scaled scores ``Q Kᵀ · scale`` of shape ``(..., T_q, T_k)``.

    >>> attention_scores([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], scale=1.0)
    array([[1., 0.]])
    """
    q, k = _check_q_k(q, k)
    _broadcast_batch(q, k, k)
    return _scaled_scores(q, k, resolve_scale(scale, q.shape[-1]), np.result_type(q, k))


def _scaled_scores(q: NDArray, k: NDArray, scale: float, dtype: np.dtype) -> NDArray:
    """``Q Kᵀ · scale`` in ``dtype``, checked finite: the one place the course computes scores."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported just below
        scores = (q @ np.swapaxes(k, -1, -2)).astype(dtype, copy=False)  # (..., T_q, T_k)
        scores = scores * dtype.type(scale)  # (..., T_q, T_k)
    return _finite_scores(scores)


def _check_q_k(q: Any, k: Any) -> tuple[NDArray, NDArray]:
    """Validate queries and keys: numeric, finite, at least 2-D, the same d_k >= 1, T_k >= 1."""
    q = as_float_array(q, "q", min_ndim=2, expected="(..., T_q, d_k)")
    k = as_float_array(k, "k", min_ndim=2, expected="(..., T_k, d_k)")
    for name, arr in (("q", q), ("k", k)):
        if np.isinf(arr).any():
            raise ValueError(
                f"{name} contains -inf (shape {shape_str(arr.shape)}); q, k and v must be finite: "
                "use mask to exclude positions, not -inf entries"
            )
    check_qkv_shapes(q.shape, k.shape)
    # the scores (..., T_q, T_k) in float64, and about as much again for the softmax on the way
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    except ValueError:  # named by the check of q, k and v together that follows
        batch = ()
    check_alloc((*batch, q.shape[-2], k.shape[-2]), 16, "attention over these q and k")
    return q, k


def _finite_scores(scores: NDArray) -> NDArray:
    """Finite inputs can still overflow in low precision (float16 above 65504): say so clearly."""
    if not np.isfinite(scores).all():
        raise ValueError(
            f"the scores Q Kᵀ · scale overflowed to inf in {scores.dtype} "
            f"(shape {shape_str(scores.shape)}); use a wider dtype or smaller inputs"
        )
    return scores


def default_scale(d_k: int) -> float:
    """The default score scale ``1/√d_k`` (Vaswani et al. 2017).

    A dot product of ``d_k`` unit-variance components has variance ``d_k``; the scale brings it
    back to 1.

    >>> default_scale(4)
    0.5
    >>> default_scale(0)
    Traceback (most recent call last):
    ...
    ValueError: d_k must be >= 1; got 0
    """
    return 1.0 / math.sqrt(check_int(d_k, "d_k", low=1))


def resolve_scale(scale: float | None, d_k: int) -> float:
    """``scale`` checked (a finite number), or the default ``1/√d_k`` when it is ``None``."""
    if scale is None:
        return default_scale(d_k)
    if isinstance(scale, bool) or not isinstance(scale, int | float | np.integer | np.floating):
        raise TypeError(f"scale must be a number or None; got {type(scale).__name__}")
    if not math.isfinite(scale):
        raise ValueError(f"scale must be finite; got {scale}")
    return float(scale)


def scaled_dot_product_attention(
    q: Any, k: Any, v: Any, mask: Any = None, *, scale: float | None = None
) -> tuple[NDArray, NDArray]:
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V, returning ``(output, weights)``.

    Parameters
    ----------
    q : array_like, shape ``(..., T_q, d_k)``
        Queries (查询): "what am I looking for?"
    k : array_like, shape ``(..., T_k, d_k)``
        Keys (键): "what do I offer to be matched?"
    v : array_like, shape ``(..., T_k, d_v)``
        Values (值): "what do I hand over when matched?"
    mask : array_like of bool, broadcastable to ``(..., T_q, T_k)``, optional
        ``True`` = may attend (PyTorch's polarity). Masked scores become ``-inf`` before the
        softmax, so masked positions get weight exactly 0. A query whose row is fully masked gets
        all-zero weights and a zero output, as ``torch.nn.functional.scaled_dot_product_attention``
        gives.
    scale : float, optional
        Multiplies the scores. Default ``1 / sqrt(d_k)``.

    Returns
    -------
    output : ndarray, shape ``(..., T_q, d_v)``
    weights : ndarray, shape ``(..., T_q, T_k)``; each unmasked row sums to 1.

    The leading (batch) dimensions of ``q``, ``k``, ``v`` and ``mask`` broadcast like numpy's
    matmul, but the mask may not enlarge the result: a mask that would broadcast the scores to a
    bigger shape is an error, not a silent broadcast.

    Examples
    --------
    Two keys; the query matches the first one, so the output leans towards the first value:

    >>> q = [[2.0, 0.0]]  # (T_q=1, d_k=2)
    >>> k = [[2.0, 0.0], [0.0, 2.0]]  # (T_k=2, d_k=2)
    >>> v = [[1.0], [0.0]]  # (T_k=2, d_v=1)
    >>> out, w = scaled_dot_product_attention(q, k, v)
    >>> w.round(3)
    array([[0.944, 0.056]])
    >>> out.round(3)
    array([[0.944]])
    """
    q, k = _check_q_k(q, k)
    v = as_float_array(v, "v", min_ndim=2, expected="(..., T_k, d_v)")
    if np.isinf(v).any():
        raise ValueError(f"v contains -inf (shape {shape_str(v.shape)}); v must be finite")
    d_k, t_k = check_qkv_shapes(q.shape, k.shape, v.shape)
    batch = _broadcast_batch(q, k, v)
    scale = resolve_scale(scale, d_k)

    dtype = np.result_type(q, k, v)
    scores = _scaled_scores(q, k, scale, dtype)  # (..., T_q, T_k)
    if mask is not None:
        mask = as_bool_array(mask, "mask")
        check_mask_shape(mask.shape, (*batch, q.shape[-2], t_k))
        scores = np.where(mask, scores, -np.inf)  # (..., T_q, T_k); masked -> -inf
    weights = softmax(scores, axis=-1)  # (..., T_q, T_k); fully masked rows -> 0
    output = weights @ v  # (..., T_q, d_v)
    return output.astype(dtype, copy=False), weights.astype(dtype, copy=False)
