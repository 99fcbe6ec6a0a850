"""Chapter 3's temperature slider: a row of scores, its softmax weights, the weighted sum of values.

The row of scores ``s`` (one query against ``T_k`` keys) is fixed; the slider picks a temperature
``τ``. For every ``τ`` of the grid Python precomputes the weights ``softmax(s / τ)``
(:func:`course_utils.softmax.softmax`) and the output ``weights @ values`` (加权求和). The values
are 2-D points, so the output can be drawn: it always lies inside their convex hull, moving
towards the best-matching value as ``τ -> 0`` and towards the plain average as ``τ -> inf``.

>>> w = TemperatureMix([2.0, 1.0, 0.0], [[0, 0], [4, 0], [0, 3]], temperatures=[0.5, 1.0, 100.0])
>>> w.temperature
1.0
>>> w.weights.round(3)
array([0.665, 0.245, 0.09 ])
>>> w.t_index = 2  # very hot: almost uniform, output near the centroid (1.333, 1.0)
>>> w.output.round(2)
array([1.33, 0.99])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import traitlets
from numpy.typing import NDArray

from .._validation import check_int
from ..geometry import convex_hull
from ..softmax import softmax
from ._base import CourseWidget, check_tokens, check_vectors, pack_array

__all__ = ["TemperatureMix"]

DEFAULT_TEMPERATURES = tuple(float(t) for t in np.round(np.geomspace(0.1, 10.0, 21), 3))


class TemperatureMix(CourseWidget):
    """A temperature slider over one row of scores; bars of weights and the output among the values.

    Parameters
    ----------
    scores : array_like, shape ``(T_k,)``
        One row of (scaled) scores.
    values : array_like, shape ``(T_k, 2)``
        The value vectors (值), 2-D so that they can be drawn.
    labels : list of str, optional
        One label per key/value. Default ``["v1", "v2", ...]``.
    temperatures : sequence of float
        The slider grid (2..61 positive numbers, increasing). Default: 21 steps from 0.1 to 10.
    t_index : int, optional
        Initial position (default: the temperature closest to 1).
    """

    _widget_file = "temperature_mix"

    scores = traitlets.List(traitlets.Float()).tag(sync=True)  # (T_k,)
    values = traitlets.List().tag(sync=True)  # (T_k, 2)
    labels = traitlets.List(traitlets.Unicode()).tag(sync=True)
    temperatures = traitlets.List(traitlets.Float()).tag(sync=True)  # (n_T,)
    hull = traitlets.List().tag(sync=True)  # (n_hull, 2)
    frames = traitlets.Dict().tag(sync=True)  # weights (n_T, T_k), output (n_T, 2)
    t_index = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        scores: Any,
        values: Any,
        *,
        labels: Sequence[str] | None = None,
        temperatures: Sequence[float] = DEFAULT_TEMPERATURES,
        t_index: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        s = check_vectors([scores] if np.ndim(scores) == 1 else scores, "scores", rows=1)[0]
        v = check_vectors(values, "values", rows=s.shape[0], dim=2)  # (T_k, 2)
        if labels is None:
            names = [f"v{j + 1}" for j in range(s.shape[0])]
        else:
            names = check_tokens(labels, "labels", count=s.shape[0], per="one per score")
        grid = np.asarray(temperatures, dtype=np.float64)
        if grid.ndim != 1 or not 2 <= grid.size <= 61:
            raise ValueError(
                f"temperatures must be a 1-D sequence of 2 to 61 numbers; got shape {grid.shape}"
            )
        if not np.isfinite(grid).all() or (grid <= 0).any() or (np.diff(grid) <= 0).any():
            raise ValueError(
                f"temperatures must be positive, finite and increasing; got {grid.tolist()}"
            )
        with self.hold_trait_notifications():
            self.scores = s.tolist()
            self.values = v.tolist()
            self.labels = names
            self.temperatures = grid.tolist()
            self.hull = convex_hull(v).tolist()
        self._recompute()
        start = int(np.argmin(np.abs(np.log(grid)))) if t_index is None else t_index
        self.t_index = check_int(start, "t_index")

    @classmethod
    def example(cls) -> Self:
        """Chapter 3's row: the plane query's scaled scores against the four keys of
        :func:`course_utils.data.query_plane_example`, whose values are the keys' own points.

        >>> w = TemperatureMix.example()
        >>> w.labels, w.temperature
        (['cat', 'tiger', 'bicycle', 'truck'], 1.0)
        >>> w.weights.round(3)
        array([0.621, 0.365, 0.009, 0.005])
        >>> w.t_index = 0                     # τ = 0.1: the output is almost cat's value
        >>> w.output.round(2)
        array([-1.5 , -0.99])
        """
        from ..data import query_plane_example

        plane = query_plane_example()
        scores = plane.keys @ plane.query / np.sqrt(2.0)  # (T_k,): scaled scores of the query
        return cls(
            scores,
            plane.values,
            labels=list(plane.labels),
            title="One row of scores at different temperatures: weights (left) and output (right)",
        )

    _v_index = traitlets.validate("t_index")(CourseWidget._valid_index)

    def _index_size(self, name: str) -> int:
        return len(self.temperatures)

    def _recompute(self) -> None:
        s = np.asarray(self.scores)  # (T_k,)
        v = np.asarray(self.values)  # (T_k, 2)
        weights = np.stack([softmax(s, temperature=t) for t in self.temperatures])  # (n_T, T_k)
        output = weights @ v  # (n_T, 2)
        self.frames = {
            "weights": pack_array(weights),
            "output": pack_array(output),
        }
        self._check_budget()

    _repr_format = "T_k={T_k}, temperature={temperature}"

    def _repr_values(self) -> dict[str, Any]:
        return {"T_k": len(self.scores)}

    @property
    def temperature(self) -> float:
        """The temperature currently selected."""
        return self.temperatures[self.t_index]

    @property
    def weights(self) -> NDArray:
        """``softmax(scores / T)`` for the current ``T`` (exact), shape ``(T_k,)``."""
        return softmax(np.asarray(self.scores), temperature=self.temperature)

    @property
    def output(self) -> NDArray:
        """The weighted sum of the values for the current ``τ``, shape ``(2,)``."""
        return self.weights @ np.asarray(self.values)  # (2,)
