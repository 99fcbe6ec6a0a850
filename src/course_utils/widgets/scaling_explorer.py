"""Chapter 2's d_k slider: the score distribution and softmax saturation, without and with 1/√d_k.

For each ``d_k`` of the grid, Python draws ``n_rows`` random queries, each against ``t_k`` random
keys (entries independent, mean 0, variance 1; :func:`course_utils.scaling.sample_scores`), and
precomputes, side by side for the raw scores ``q·k`` and the scaled scores ``q·k/√d_k``:

* a histogram of the scores on a fixed axis (so that widening is visible as the slider moves);
* the softmax weights of one example row;
* the mean largest weight, mean entropy and mean softmax-Jacobian norm
  (:func:`course_utils.scaling.saturation_stats`).

JavaScript only picks the frame of the current ``d_k``.

>>> w = ScalingExplorer(d_ks=[1, 16, 256], n_rows=200, seed=0)
>>> w.d_k_index, w.d_k
(1, 16)
>>> w.stats["unscaled"].max_weight > w.stats["scaled"].max_weight
True
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import traitlets
from numpy.typing import NDArray

from .._validation import check_int
from ..attention import default_scale
from ..scaling import SaturationStats, sample_scores, saturation_stats
from ..softmax import softmax
from ._base import DECIMALS, CourseWidget, check_grid_size, check_index, pack_array

__all__ = ["ScalingExplorer"]

MODES = ("unscaled", "scaled")


class ScalingExplorer(CourseWidget):
    """A ``d_k`` slider over precomputed score histograms and saturation measures.

    Parameters
    ----------
    d_ks : sequence of int
        The slider grid (2 to 16 increasing dimensions). Default ``1, 2, 4, ..., 1024``.
    t_k : int
        Keys per query (the length of one softmax row), 2..16.
    n_rows : int
        Random queries per ``d_k`` (each with its own ``t_k`` keys), 10..2000.
    n_bins : int
        Histogram bins, 5..60.
    seed : int
        Seed of ``numpy.random.default_rng``: the same seed gives the same frames.
    d_k_index : int, optional
        Initial slider position (default: the middle of the grid).
    """

    _widget_file = "scaling_explorer"

    d_ks = traitlets.List(traitlets.Int()).tag(sync=True)
    t_k = traitlets.Int(8).tag(sync=True)
    # Histogram edges per mode: {"unscaled": [lo, hi], "scaled": [lo, hi]}; n_bins equal bins.
    ranges = traitlets.Dict().tag(sync=True)
    # Packed frames: hist (n_d, 2, n_bins) fractions; example (n_d, 2, t_k) weights;
    # stats (n_d, 2, 3) = max_weight, entropy, jacobian_norm; mode axis: 0 unscaled, 1 scaled.
    frames = traitlets.Dict().tag(sync=True)
    d_k_index = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        d_ks: Sequence[int] = tuple(2**i for i in range(11)),
        *,
        t_k: int = 8,
        n_rows: int = 400,
        n_bins: int = 31,
        seed: int = 0,
        d_k_index: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        grid = self._check_d_ks(d_ks)
        self._n_rows = check_grid_size(n_rows, "n_rows", low=10, high=2000)
        self._n_bins = check_grid_size(n_bins, "n_bins", low=5, high=60)
        self._seed = check_int(seed, "seed", low=0)
        with self.hold_trait_notifications():
            self.t_k = check_grid_size(t_k, "t_k", low=2, high=16)
            self.d_ks = grid
        self._recompute()
        middle = len(grid) // 2
        self.d_k_index = check_index(
            middle if d_k_index is None else d_k_index, "d_k_index", len(grid)
        )

    @classmethod
    def example(cls) -> Self:
        """Chapter 2's explorer: ``d_k`` from 1 to 1024, 8 keys per query, 400 seeded rows.

        >>> w = ScalingExplorer.example()
        >>> w.d_k
        32
        >>> w.d_k_index = len(w.d_ks) - 1       # d_k = 1024: raw scores saturate the softmax
        >>> stats = w.stats
        >>> round(stats["unscaled"].max_weight, 2), round(stats["scaled"].max_weight, 2)
        (0.97, 0.37)
        """
        return cls(
            seed=0,
            title="Scores and softmax as d_k grows: without scaling (left), with 1/√d_k (right)",
        )

    @staticmethod
    def _check_d_ks(d_ks: Any) -> list[int]:
        values = list(d_ks) if isinstance(d_ks, Sequence | np.ndarray) else None
        if values is None or not 2 <= len(values) <= 16:
            raise ValueError(f"d_ks must be a sequence of 2 to 16 ints; got {d_ks!r}")
        for d in values:
            check_int(d, f"every entry of d_ks {values}", low=1)
        if any(b <= a for a, b in itertools.pairwise(values)):
            raise ValueError(f"d_ks must be strictly increasing; got {values}")
        return [int(d) for d in values]

    _v_index = traitlets.validate("d_k_index")(CourseWidget._valid_index)

    def _index_size(self, name: str) -> int:
        return len(self.d_ks)

    def raw_scores(self, d_k: int) -> NDArray:
        """The random raw scores behind the frame of ``d_k``, shape ``(n_rows, t_k)``.

        Each ``d_k`` has its own generator seeded with ``(seed, d_k)``, so a frame does not depend
        on which other dimensions are on the grid.
        """
        rng = np.random.default_rng([self._seed, int(d_k)])
        return sample_scores(int(d_k), self.t_k, self._n_rows, rng)  # (n_rows, t_k)

    def _recompute(self) -> None:
        d_max = max(self.d_ks)
        half = {"unscaled": 4.0 * math.sqrt(d_max), "scaled": 4.0}
        self.ranges = {m: [-round(h, 3), round(h, 3)] for m, h in half.items()}
        n_d, n_b = len(self.d_ks), self._n_bins
        hist = np.zeros((n_d, 2, n_b))  # (n_d, 2, n_bins)
        example = np.zeros((n_d, 2, self.t_k))  # (n_d, 2, t_k)
        stats = np.zeros((n_d, 2, 3))  # (n_d, 2, 3)
        for i, d_k in enumerate(self.d_ks):
            raw = self.raw_scores(d_k)  # (n_rows, t_k)
            for m, mode in enumerate(MODES):
                scale = 1.0 if mode == "unscaled" else default_scale(d_k)
                scores = raw * scale  # (n_rows, t_k)
                clipped = np.clip(scores, -half[mode], half[mode])  # outliers in the end bins
                counts, _ = np.histogram(clipped, bins=n_b, range=(-half[mode], half[mode]))
                hist[i, m] = counts / counts.sum()
                example[i, m] = softmax(scores[0])  # (t_k,)
                st = saturation_stats(raw, scale=scale)
                stats[i, m] = (st.max_weight, st.entropy, st.jacobian_norm)
        self.frames = {
            "hist": pack_array(hist),
            "example": pack_array(example),
            "stats": pack_array(stats),
            "log_t_k": round(math.log(self.t_k), DECIMALS),
        }
        self._check_budget()

    _repr_format = "d_ks={d_ks}, t_k={t_k}, d_k={d_k}"

    @property
    def d_k(self) -> int:
        """The ``d_k`` currently selected on the slider."""
        return self.d_ks[self.d_k_index]

    @property
    def stats(self) -> dict[str, SaturationStats]:
        """Saturation measures of the current ``d_k`` (exact, not rounded), per mode."""
        raw = self.raw_scores(self.d_k)  # (n_rows, t_k)
        return {
            "unscaled": saturation_stats(raw, scale=1.0),
            "scaled": saturation_stats(raw, scale=default_scale(self.d_k)),
        }
