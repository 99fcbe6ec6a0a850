"""Chapter 5's RoPE dials: each pair of q and k turns with its position; the score sees the gap.

A key sits at position ``p`` and a query at ``p + Δ``. :func:`course_utils.positions.apply_rope`
rotates every pair ``i`` of dimensions of both by ``position * theta_i``. The widget draws one dial
per pair (frequency) with the rotated pair of q and of k, and beside them the score
``q_{p+Δ} · k_p / √d`` against the distance ``Δ``. Moving the position slider turns every dial
(both arrows together) and leaves the score curve unchanged: only the distance matters. A select
changes the base (θ), which sets how fast the dials turn.

Python precomputes, for every base of the grid, the rotated pairs of q at positions
``0 .. n_positions + n_distances - 2`` and of k at ``0 .. n_positions - 1``, the score for every
``(p, Δ)`` and each pair's share of the score for every ``Δ``; JavaScript only looks them up.

>>> w = RopeDial(n_positions=8, n_distances=4)
>>> w.key_position, w.query_position
(0, 3)
>>> s = w.score
>>> w.position_index = 5  # move both tokens 5 places to the right
>>> w.key_position, w.query_position, bool(abs(w.score - s) < 1e-9)
(5, 8, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import torch
import traitlets
from numpy.typing import NDArray

from .._validation import as_float_array, check_positive_finite, shape_str
from ..attention import default_scale
from ..positions import apply_rope, rope_frequencies
from ._base import DECIMALS, CourseWidget, check_grid_size, check_index, check_vectors, pack_array

__all__ = ["RopeDial"]


def _default_pair() -> tuple[NDArray, NDArray]:
    """A query and a key of 8 dimensions (4 dials), seeded, rounded so that the page is stable."""
    rng = np.random.default_rng(5)
    q = rng.normal(size=8).round(2)  # (8,)
    k = (0.6 * q + 0.8 * rng.normal(size=8)).round(2)  # (8,): correlated, so scores vary
    return q, k


class RopeDial(CourseWidget):
    """One dial per frequency of RoPE, a position slider, a distance slider and a base select.

    Parameters
    ----------
    q, k : array_like, shape ``(d,)``, optional
        The query and key vectors (even ``d`` from 2 to 16, same length); default: a seeded pair of
        8 dimensions. Rotate-half pairing (GPT-NeoX, Hugging Face ``transformers``): dial ``i``
        shows dims ``(i, i + d/2)``.
    bases : sequence of float
        The values of θ (base) offered by the select (1 to 4 of them, each > 0).
    n_positions : int
        Key positions on the position slider, ``0 .. n_positions - 1`` (2..64).
    n_distances : int
        Distances on the distance slider, ``0 .. n_distances - 1`` (2..32).
    base_index, position_index, distance_index : int
        Initial control positions (default: the last base, position 0, distance 3).
    """

    _widget_file = "rope_dial"

    bases = traitlets.List(traitlets.Float()).tag(sync=True)
    d = traitlets.Int(8).tag(sync=True)
    n_positions = traitlets.Int(32).tag(sync=True)
    n_distances = traitlets.Int(16).tag(sync=True)
    # frames: q_pairs (n_b, n_positions + n_distances - 1, d/2, 2), k_pairs (n_b, n_positions, d/2,
    # 2), scores (n_b, n_positions, n_distances), shares (n_b, n_distances, d/2), theta (n_b, d/2),
    # score_range [lo, hi], radius (largest pair length)
    frames = traitlets.Dict().tag(sync=True)
    base_index = traitlets.Int(0).tag(sync=True)
    position_index = traitlets.Int(0).tag(sync=True)
    distance_index = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        q: Any = None,
        k: Any = None,
        *,
        bases: Sequence[float] = (10.0, 100.0, 10000.0),
        n_positions: int = 32,
        n_distances: int = 16,
        base_index: int | None = None,
        position_index: int = 0,
        distance_index: int = 3,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault(
            "description",
            "One dial per pair of dimensions: the query's pair (vermillion, solid) and the key's "
            "pair (blue, dashed) after RoPE. Beside them, the score against the distance between "
            "the two tokens. Moving the position slider turns both arrows together and leaves the "
            "score unchanged.",
        )
        super().__init__(**kwargs)
        if (q is None) != (k is None):
            raise ValueError("give both q and k, or neither (for the default pair)")
        if q is None:
            q, k = _default_pair()
        q_arr, k_arr = _check_vector(q, "q"), _check_vector(k, "k")
        if q_arr.shape != k_arr.shape:
            raise ValueError(
                f"q and k must have the same shape (d,); got q {q_arr.shape} and k {k_arr.shape}"
            )
        d = q_arr.shape[0]
        if d % 2 or not 2 <= d <= 16:
            raise ValueError(f"q and k must have an even length d from 2 to 16; got d = {d}")
        grid = _check_bases(bases)
        self._q, self._k = q_arr, k_arr
        with self.hold_trait_notifications():
            self.d = d
            self.n_positions = check_grid_size(n_positions, "n_positions", low=2, high=64)
            self.n_distances = check_grid_size(n_distances, "n_distances", low=2, high=32)
            self.bases = grid
        self._recompute()
        self.base_index = check_index(
            len(grid) - 1 if base_index is None else base_index, "base_index", len(grid)
        )
        self.position_index = check_index(position_index, "position_index", self.n_positions)
        self.distance_index = check_index(distance_index, "distance_index", self.n_distances)

    @classmethod
    def example(cls) -> Self:
        """Chapter 5's dials: the seeded pair of 8 dimensions (4 dials), bases 10, 100 and 10000.

        >>> w = RopeDial.example()
        >>> w.bases, w.base, (w.key_position, w.query_position)
        ([10.0, 100.0, 10000.0], 10000.0, (0, 3))
        >>> s = w.score
        >>> w.position_index = 20                 # both tokens 20 places on: the dials turn ...
        >>> (w.key_position, w.query_position), bool(abs(w.score - s) < 1e-9)   # ... same score
        ((20, 23), True)
        >>> w.base_index = 0                      # base 10: faster dials, another score at Δ = 3
        >>> bool(abs(w.score - s) > 0.01)
        True
        """
        return cls(title="RoPE: one dial per pair of dimensions")

    _v_index = traitlets.validate("base_index", "position_index", "distance_index")(
        CourseWidget._valid_index
    )

    def _index_size(self, name: str) -> int:
        if name == "base_index":
            return len(self.bases)
        return self.n_positions if name == "position_index" else self.n_distances

    # ---- the maths (course_utils.positions) --------------------------------------------------

    def rotated(self, which: str, positions: Any, base: float) -> NDArray[np.float64]:
        """``q`` or ``k`` rotated by RoPE at each of ``positions``: ``(len(positions), d)``."""
        vec = {"q": self._q, "k": self._k}[which]
        pos = torch.as_tensor(np.asarray(positions, dtype=np.int64))  # (P,)
        x = torch.from_numpy(np.tile(vec, (len(pos), 1)))  # (P, d): the same vector at each slot
        return apply_rope(x, pos, base=base).numpy()  # (P, d)

    def _recompute(self) -> None:
        d, half = self.d, self.d // 2
        n_p, n_d = self.n_positions, self.n_distances
        q_pos = np.arange(n_p + n_d - 1)  # every query position p + Δ
        k_pos = np.arange(n_p)  # every key position p
        q_pairs, k_pairs, scores, shares, thetas = [], [], [], [], []
        for base in self.bases:
            q_rot = self.rotated("q", q_pos, base)  # (n_p + n_d - 1, d)
            k_rot = self.rotated("k", k_pos, base)  # (n_p, d)
            # rotate-half pairing: dial i holds dimensions (i, i + d/2)
            q_pairs.append(np.stack([q_rot[:, :half], q_rot[:, half:]], axis=-1))  # (.., d/2, 2)
            k_pairs.append(np.stack([k_rot[:, :half], k_rot[:, half:]], axis=-1))  # (n_p, d/2, 2)
            idx = k_pos[:, None] + np.arange(n_d)[None, :]  # (n_p, n_d): query position p + Δ
            prod = q_rot[idx] * k_rot[:, None, :]  # (n_p, n_d, d): q_{p+Δ} * k_p
            scores.append(prod.sum(-1) * default_scale(d))  # (n_p, n_d): scaled by 1/√d
            pair_prod = prod[..., :half] + prod[..., half:]  # (n_p, n_d, d/2): each dial's share
            shares.append(pair_prod[0] * default_scale(d))  # (n_d, d/2): the same for every p
            thetas.append(rope_frequencies(d, base=base))  # (d/2,)
        scores_arr = np.stack(scores)  # (n_b, n_p, n_d)
        radius = max(
            np.hypot(*self._q.reshape(2, half)).max(), np.hypot(*self._k.reshape(2, half)).max()
        )
        self.frames = {
            "q_pairs": pack_array(np.stack(q_pairs)),
            "k_pairs": pack_array(np.stack(k_pairs)),
            "scores": pack_array(scores_arr),
            "shares": pack_array(np.stack(shares)),
            "theta": pack_array(np.stack(thetas), 6),
            "score_range": [
                round(float(scores_arr.min()), DECIMALS),
                round(float(scores_arr.max()), DECIMALS),
            ],
            "radius": round(float(radius), DECIMALS),
        }
        self._check_budget("use fewer positions, distances or bases")

    # ---- convenience for notebooks and tests -------------------------------------------------

    @property
    def base(self) -> float:
        return self.bases[self.base_index]

    @property
    def key_position(self) -> int:
        return self.position_index

    @property
    def query_position(self) -> int:
        return self.position_index + self.distance_index

    @property
    def score(self) -> float:
        """The current score ``q_{p+Δ} · k_p / √d`` (full precision)."""
        q = self.rotated("q", [self.query_position], self.base)[0]  # (d,)
        k = self.rotated("k", [self.key_position], self.base)[0]  # (d,)
        return float(q @ k * default_scale(self.d))


def _check_vector(x: Any, name: str) -> NDArray[np.float64]:
    """A finite float vector of shape ``(d,)``, or a clear error."""
    arr = as_float_array(x, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a vector of shape (d,); got shape {shape_str(arr.shape)}")
    return check_vectors(arr[None, :], name)[0]  # rejects inf


def _check_bases(bases: Any) -> list[float]:
    if isinstance(bases, str) or not isinstance(bases, Sequence | np.ndarray):
        raise TypeError(f"bases must be a sequence of numbers; got {type(bases).__name__}")
    values = [check_positive_finite(b, "every entry of bases") for b in bases]
    if not 1 <= len(values) <= 4:
        raise ValueError(f"bases must hold 1 to 4 numbers; got {len(values)}")
    return values
