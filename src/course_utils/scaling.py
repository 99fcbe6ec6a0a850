"""Why attention divides by √d_k (seed §步骤 2: 缩放): simulations behind chapter 2.

If the ``d_k`` entries of a query ``q`` and a key ``k`` are independent with mean 0 and variance 1,
then ``q · k = sum_i q_i k_i`` is a sum of ``d_k`` independent terms, each of mean 0 and variance 1,
so ``Var(q · k) = d_k`` and the standard deviation of a score grows like ``√d_k``. Dividing by
``√d_k`` brings the variance back to 1 whatever ``d_k`` is (Vaswani et al., 2017, footnote 4).

This module draws such queries and keys and measures, for a grid of ``d_k``:

- the variance of the raw scores (:func:`score_variance`), to compare with the prediction ``d_k``;
- how saturated the softmax of a row of scores is, with and without the ``1/√d_k`` factor
  (:func:`saturation_sweep`), using :mod:`course_utils.saturation`.

Every function takes a ``numpy.random.Generator`` so that results are reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ._validation import as_float_array, check_int, shape_str
from .attention import default_scale
from .saturation import softmax_entropy, softmax_jacobian_norm
from .softmax import softmax

__all__ = [
    "SaturationStats",
    "SaturationSweep",
    "sample_scores",
    "saturation_stats",
    "saturation_sweep",
    "score_variance",
]

Distribution = Literal["normal", "uniform"]


def _check_rng(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator (np.random.default_rng(seed)); "
            f"got {type(rng).__name__}"
        )
    return rng


def _check_d_ks(d_ks: Sequence[int]) -> list[int]:
    values = list(d_ks)
    if not values:
        raise ValueError("d_ks must contain at least one dimension; got an empty sequence")
    return [check_int(d, "each entry of d_ks", low=1) for d in values]


def _draw(rng: np.random.Generator, shape: tuple[int, ...], distribution: Distribution) -> NDArray:
    """Independent entries with mean 0 and variance 1."""
    if distribution == "normal":
        return rng.standard_normal(shape)
    if distribution == "uniform":
        half_width = math.sqrt(3.0)  # Var(U(-a, a)) = a² / 3 = 1
        return rng.uniform(-half_width, half_width, size=shape)
    raise ValueError(f"distribution must be 'normal' or 'uniform'; got {distribution!r}")


def sample_scores(
    d_k: int,
    t_k: int,
    n_rows: int,
    rng: np.random.Generator,
    *,
    distribution: Distribution = "normal",
) -> NDArray:
    """Raw scores ``q · k_j`` for ``n_rows`` random queries, each against ``t_k`` random keys.

    Entries of every ``q`` and ``k_j`` are independent, mean 0, variance 1. Returns shape
    ``(n_rows, t_k)``, *unscaled*: multiply by ``1 / sqrt(d_k)`` for the scaled scores.

    >>> s = sample_scores(64, 8, 3, np.random.default_rng(0))
    >>> s.shape
    (3, 8)
    """
    d_k = check_int(d_k, "d_k", low=1)
    t_k = check_int(t_k, "t_k", low=1)
    n_rows = check_int(n_rows, "n_rows", low=1)
    rng = _check_rng(rng)
    q = _draw(rng, (n_rows, 1, d_k), distribution)  # (n_rows, 1, d_k)
    k = _draw(rng, (n_rows, t_k, d_k), distribution)  # (n_rows, t_k, d_k)
    return np.sum(q * k, axis=-1)  # (n_rows, t_k)


def score_variance(
    d_ks: Sequence[int],
    n_samples: int,
    rng: np.random.Generator,
    *,
    distribution: Distribution = "normal",
) -> NDArray:
    """Measured variance of ``q · k`` for each ``d_k`` in ``d_ks`` (the prediction: ``d_k``).

    ``n_samples`` independent (q, k) pairs per ``d_k``. Returns shape ``(len(d_ks),)``.

    >>> v = score_variance([1, 16, 256], 20_000, np.random.default_rng(0))
    >>> (v / np.array([1, 16, 256])).round(1)  # measured / predicted
    array([1., 1., 1.])
    """
    values = _check_d_ks(d_ks)
    n_samples = check_int(n_samples, "n_samples", low=2)
    rng = _check_rng(rng)
    out = np.empty(len(values))  # (n_d,)
    for i, d_k in enumerate(values):
        scores = sample_scores(d_k, 1, n_samples, rng, distribution=distribution)  # (n_samples, 1)
        out[i] = scores.var(ddof=1)
    return out


@dataclass(frozen=True)
class SaturationStats:
    """Averages over the rows of a batch of softmax rows (see :mod:`course_utils.saturation`)."""

    max_weight: float
    """Mean of the largest weight in each row (1/T_k = uniform, 1 = one-hot)."""
    entropy: float
    """Mean entropy of each row, in nats (log T_k = uniform, 0 = one-hot)."""
    jacobian_norm: float
    """Mean Frobenius norm of the softmax Jacobian (0 = no gradient flows back to the scores)."""


def saturation_stats(scores: NDArray, *, scale: float = 1.0) -> SaturationStats:
    """Apply ``softmax(scale * scores)`` row by row and average the three saturation measures.

    ``scores`` has shape ``(n_rows, T_k)``.

    >>> st = saturation_stats(np.zeros((2, 4)))
    >>> st.max_weight, round(st.entropy, 4), round(st.jacobian_norm, 4)
    (0.25, 1.3863, 0.433)
    """
    scores = as_float_array(scores, "scores")
    if scores.ndim != 2 or scores.shape[-1] == 0:
        raise ValueError(
            f"scores must have shape (n_rows, T_k); got shape {shape_str(scores.shape)} "
            "(and T_k must be >= 1)"
        )
    if isinstance(scale, bool) or not isinstance(scale, int | float | np.integer | np.floating):
        raise TypeError(f"scale must be a number; got {type(scale).__name__}")
    if not math.isfinite(scale):
        raise ValueError(f"scale must be finite; got {scale}")
    with np.errstate(over="ignore"):
        scaled = scores * scores.dtype.type(scale)  # (n_rows, T_k)
    if np.isposinf(scaled).any() or np.isnan(scaled).any():
        raise ValueError(
            f"scores * scale overflowed (shape {shape_str(scores.shape)}, scale {scale:g}); "
            "use smaller scores or a smaller scale"
        )
    weights = softmax(scaled, axis=-1)  # (n_rows, T_k)
    return SaturationStats(
        max_weight=float(weights.max(axis=-1).mean()),
        entropy=float(softmax_entropy(weights).mean()),
        jacobian_norm=float(softmax_jacobian_norm(weights).mean()),
    )


@dataclass(frozen=True)
class SaturationSweep:
    """Saturation over a grid of ``d_k``, on the same random scores with and without scaling.

    Every array has shape ``(len(d_ks),)``.
    """

    d_ks: NDArray
    t_k: int
    score_variance: NDArray
    unscaled: dict[str, NDArray]
    """``{"max_weight", "entropy", "jacobian_norm"}`` for ``softmax(q · k)``."""
    scaled: dict[str, NDArray]
    """The same for ``softmax(q · k / √d_k)``."""


def saturation_sweep(
    d_ks: Sequence[int],
    *,
    t_k: int = 8,
    n_rows: int = 500,
    rng: np.random.Generator,
    distribution: Distribution = "normal",
) -> SaturationSweep:
    """Measure score variance and softmax saturation for each ``d_k``, without and with ``1/√d_k``.

    For each ``d_k`` the same ``(n_rows, t_k)`` block of raw scores is used for both columns, so the
    only difference between them is the factor ``1/√d_k``.

    >>> sw = saturation_sweep([1, 1024], n_rows=200, rng=np.random.default_rng(0))
    >>> bool(sw.unscaled["max_weight"][1] > 0.9), bool(sw.scaled["max_weight"][1] < 0.6)
    (True, True)
    """
    values = _check_d_ks(d_ks)
    t_k = check_int(t_k, "t_k", low=2)
    n_rows = check_int(n_rows, "n_rows", low=2)
    rng = _check_rng(rng)
    keys = ("max_weight", "entropy", "jacobian_norm")
    unscaled = {key: np.empty(len(values)) for key in keys}
    scaled = {key: np.empty(len(values)) for key in keys}
    variance = np.empty(len(values))  # (n_d,)
    for i, d_k in enumerate(values):
        scores = sample_scores(d_k, t_k, n_rows, rng, distribution=distribution)  # (n_rows, t_k)
        variance[i] = scores.var(ddof=1)
        raw = saturation_stats(scores, scale=1.0)
        fixed = saturation_stats(scores, scale=default_scale(d_k))
        for key in keys:
            unscaled[key][i] = getattr(raw, key)
            scaled[key][i] = getattr(fixed, key)
    return SaturationSweep(
        d_ks=np.array(values),
        t_k=t_k,
        score_variance=variance,
        unscaled=unscaled,
        scaled=scaled,
    )
