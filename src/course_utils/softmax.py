"""A numerically stable softmax (seed §步骤 3: 归一化).

``softmax(x)_i = exp(x_i) / sum_j exp(x_j)``. Computed naively, ``exp(1000)`` overflows to ``inf``
and the result is ``nan``. Subtracting the row maximum first changes nothing mathematically (softmax
is invariant to adding a constant to every entry) but keeps every exponent ``<= 0``, so nothing
overflows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._validation import as_float_array, check_positive_finite, shape_str

__all__ = ["softmax"]


def softmax(x: Any, axis: int = -1, temperature: float = 1.0) -> NDArray:
    """Softmax of ``x`` along ``axis``, divided by ``temperature`` first.

    Parameters
    ----------
    x : array_like (numpy, list or torch tensor)
        Real scores (logits). ``-inf`` entries get weight exactly 0 (that is how masks work). NaN
        and ``+inf`` are rejected.
    axis : int
        The axis that is normalised (sums to 1). Default: the last one.
    temperature : float
        ``softmax(x / τ)``. ``τ -> 0`` approaches a one-hot argmax, ``τ -> inf`` the uniform
        distribution.

    Returns
    -------
    ndarray
        Same shape as ``x``, same float dtype (integers become float64). A slice that is entirely
        ``-inf`` (nothing may be attended to) gets all-zero weights rather than NaN, the convention
        PyTorch's ``scaled_dot_product_attention`` also uses for fully masked rows.

    Examples
    --------
    >>> softmax([1.0, 2.0, 3.0]).round(4)
    array([0.09  , 0.2447, 0.6652])
    >>> softmax([1000.0, 1001.0]).round(4)  # no overflow
    array([0.2689, 0.7311])
    >>> softmax([0.0, -np.inf])
    array([1., 0.])
    """
    scores = as_float_array(x, "x")
    temperature = check_positive_finite(temperature, "temperature")
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise TypeError(f"axis must be an int (the one axis that sums to 1, e.g. -1); got {axis!r}")
    if scores.ndim == 0:
        raise ValueError("x must have at least 1 dimension; got a scalar (shape ())")
    if not -scores.ndim <= axis < scores.ndim:
        raise ValueError(
            f"axis {axis} is out of range for x with {scores.ndim} dimensions "
            f"(shape {shape_str(scores.shape)})"
        )
    if scores.shape[axis] == 0:
        raise ValueError(
            f"x has shape {shape_str(scores.shape)}: softmax needs at least one entry along axis "
            f"{axis}, expected a length >= 1 there"
        )
    # float16 is computed in float32 (as PyTorch accumulates it) and rounded back at the end.
    work = scores.astype(np.promote_types(scores.dtype, np.float32), copy=False)
    t = work.dtype.type(temperature)
    if t == 0 or not np.isfinite(t):  # e.g. T = 1e-50 is 0 in float32: divide in float64 instead
        work = work.astype(np.float64)
        t = np.float64(temperature)
    # Subtract the maximum *before* dividing by the temperature: softmax((x - max x) / τ) equals
    # softmax(x / τ) because τ > 0, and x / τ alone could overflow to inf for a small τ.
    row_max = np.max(work, axis=axis, keepdims=True)  # (..., 1, ...) along axis
    # A row that is all -inf has max -inf; subtracting it would give nan. Shift such rows by 0:
    # exp(-inf) = 0 everywhere, the sum is 0, and the row ends up all zeros below.
    row_max = np.where(np.isfinite(row_max), row_max, 0)
    with np.errstate(over="ignore"):  # x - max may round to -inf (e.g. -3e38 - 3e38): exp gives 0
        shifted = (work - row_max) / t  # same shape as x, all <= 0
    exps = np.exp(shifted)  # every exponent <= 0, so exps in [0, 1]; the maximum gives exactly 1
    total = np.sum(exps, axis=axis, keepdims=True)  # >= 1 unless the row was all -inf
    safe_total = np.where(total > 0, total, 1)
    return (exps / safe_total).astype(scores.dtype, copy=False)
