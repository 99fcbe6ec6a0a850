"""Power laws and log–log slopes: how a cost grows with the sequence length.

A cost ``y = c · x^k`` is a straight line on log–log axes, ``log y = log c + k log x``, so its
exponent ``k`` is the slope. Chapters 6, 9 and 12 read their measured FLOPs, bytes and timings this
way (``T²`` for dense attention, ``T`` for a sliding window); the appendix page
``appendix/log_log_slopes`` explains it. :func:`fit_power_law` fits ``k`` and ``c`` by least
squares on the logarithms; :func:`doubling_ratio` is the same exponent read off two points.

>>> fit_power_law([1, 2, 4, 8], [3, 12, 48, 192])       # y = 3 x²
PowerLaw(exponent=2.0, coefficient=3.0)
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ._validation import as_float_array, shape_str

__all__ = ["PowerLaw", "doubling_ratio", "fit_power_law"]


class PowerLaw(NamedTuple):
    """``y ≈ coefficient · x ** exponent``; ``exponent`` is the log–log slope."""

    exponent: float
    coefficient: float


def fit_power_law(x: Any, y: Any) -> PowerLaw:
    """Least-squares fit of ``log y = log c + k log x``: the slope ``k`` and ``c``, as floats.

    ``x`` and ``y`` are ``(n,)`` with ``n >= 2`` positive, finite numbers and at least two
    different ``x``. The logarithms' base does not matter for the slope (it cancels).
    Rounded to 12 significant digits so that a fit of exact data prints exact numbers.

    >>> fit_power_law([256, 512, 1024], [1.0, 2.0, 4.0]).exponent   # doubles when T doubles
    1.0
    """
    xs = as_float_array(x, "x", min_ndim=1, expected="(n,)")
    ys = as_float_array(y, "y", min_ndim=1, expected="(n,)")
    if xs.ndim != 1 or xs.shape != ys.shape or xs.size < 2:
        raise ValueError(
            f"x and y must be 1-D of the same length >= 2; got {shape_str(xs.shape)} "
            f"and {shape_str(ys.shape)}"
        )
    if not (np.isfinite(xs).all() and np.isfinite(ys).all() and (xs > 0).all() and (ys > 0).all()):
        raise ValueError("x and y must be positive and finite (their logarithms are fitted)")
    if np.ptp(xs) == 0:
        raise ValueError("x must take at least two different values to have a slope")
    lx = np.log(xs.astype(np.float64))  # (n,): float64 whatever the input dtype
    ly = np.log(ys.astype(np.float64))  # (n,)
    k, log_c = np.polyfit(lx, ly, 1)  # slope and intercept of the straight line
    return PowerLaw(float(f"{k:.12g}"), float(f"{math.exp(log_c):.12g}"))


def doubling_ratio(exponent: float) -> float:
    """How many times ``y = c x^k`` grows when ``x`` doubles: ``2 ** exponent``.

    >>> doubling_ratio(2), doubling_ratio(1), doubling_ratio(0.5)
    (4.0, 2.0, 1.4142135623730951)
    """
    k = float(exponent)
    if not math.isfinite(k):
        raise ValueError(f"exponent must be finite; got {exponent!r}")
    return 2.0**k
