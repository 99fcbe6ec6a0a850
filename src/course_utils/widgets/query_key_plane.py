"""The 2-D query/key plane: move a query, watch scores, softmax weights and the output change.

Keys are points in the plane; the query is an arrow set by an angle and a length. For every point of
the (angle x length) grid, Python precomputes with :func:`course_utils.scaled_dot_product_attention`
the scores, the weights and the output (the weighted mix of the value vectors); JavaScript only
picks the frame of the current slider positions.

>>> w = QueryKeyPlane([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], key_labels=["cat", "sat", "mat"],
...                   n_angles=8, lengths=[1.0, 2.0, 3.0])
>>> w.angle_index, w.length_index
(0, 1)
>>> w.query.round(3)
array([2., 0.])
>>> w.weights.round(3)  # scores (2·1, 0, -2)/√2 -> softmax
array([0.768, 0.187, 0.045])
>>> w.angle_index = 2  # the query now points at "sat" (90 degrees)
>>> w.weights.round(3)
array([0.164, 0.673, 0.164])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import traitlets
from numpy.typing import NDArray

from ..attention import attention_scores, default_scale, scaled_dot_product_attention
from ._base import (
    CourseWidget,
    check_grid_size,
    check_index,
    check_tokens,
    check_vectors,
    pack_array,
    unpack_array,
)

__all__ = ["QueryKeyPlane"]


class QueryKeyPlane(CourseWidget):
    """Keys as points in a 2-D plane, a query moved by angle and length sliders.

    Parameters
    ----------
    keys : array_like, shape ``(T_k, 2)``
        Key vectors (键), drawn as labelled points.
    values : array_like, shape ``(T_k, d_v)``, optional
        Value vectors (值). Default: the keys themselves (so the output is a point in the plane).
    key_labels : list of str, optional
        One label per key (shown as text). Default ``["k1", "k2", ...]``.
    n_angles : int
        Number of query directions on the slider, evenly spaced over 360 degrees (2..121).
    lengths : sequence of float
        Query lengths on the length slider (positive, at least 2 values). Longer queries give
        sharper weights: the chapter's temperature intuition.
    scale : float, optional
        Score scale; default ``1/sqrt(d_k)`` as in
        :func:`course_utils.scaled_dot_product_attention`.
    angle_index, length_index : int, optional
        Initial slider positions (default: angle 0, the second-largest length).
    """

    _widget_file = "query_key_plane"
    _default_description = (
        "Keys are labelled points in a plane and the query is an arrow. Move the query "
        "with the angle and length sliders; the table lists each key's score and softmax "
        "weight, and the output is the weighted mix of the values."
    )

    # Inputs (synced so the drawing can show them).
    # `keys` is taken by ipywidgets (Widget.keys lists the synced traits), hence key_vectors.
    key_vectors = traitlets.List().tag(sync=True)  # (T_k, 2) nested lists
    value_vectors = traitlets.List().tag(sync=True)  # (T_k, d_v) nested lists
    key_labels = traitlets.List(traitlets.Unicode()).tag(sync=True)
    angles = traitlets.List(traitlets.Float()).tag(sync=True)  # degrees, the angle grid
    lengths = traitlets.List(traitlets.Float()).tag(sync=True)  # the length grid
    # Precomputed frames, packed: queries (A, L, 2), scores/weights (A, L, T_k), outputs
    # (A, L, d_v).
    frames = traitlets.Dict().tag(sync=True)
    # Current slider positions: JavaScript sets them; Python reads them.
    angle_index = traitlets.Int(0).tag(sync=True)
    length_index = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        keys: Any,
        values: Any | None = None,
        *,
        key_labels: Sequence[str] | None = None,
        n_angles: int = 24,
        lengths: Sequence[float] = (0.5, 1.0, 1.5, 2.0, 3.0),
        scale: float | None = None,
        angle_index: int = 0,
        length_index: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._scale = scale
        k, v, labels = self._check_inputs(keys, values, key_labels)
        n_angles = check_grid_size(n_angles, "n_angles")
        grid_lengths = self._check_lengths(lengths)
        with self.hold_trait_notifications():
            self.key_vectors = k.tolist()
            self.value_vectors = v.tolist()
            self.key_labels = labels
            self.angles = [round(360.0 * a / n_angles, 6) for a in range(n_angles)]
            self.lengths = grid_lengths
        self._recompute()
        self.angle_index = check_index(angle_index, "angle_index", n_angles)
        default_len = max(0, len(grid_lengths) - 2)
        self.length_index = check_index(
            default_len if length_index is None else length_index, "length_index", len(grid_lengths)
        )

    @classmethod
    def example(cls) -> Self:
        """Chapter 1's plane (:func:`course_utils.data.query_plane_example`): four keys, plain dot
        products, the query at 190 degrees and length 2, close to the chapter's query.

        >>> w = QueryKeyPlane.example()
        >>> w.key_labels, (w.angle, w.length)
        (['cat', 'tiger', 'bicycle', 'truck'], (190.0, 2.0))
        >>> w.weights.round(3)                 # the small animal wins
        array([0.702, 0.295, 0.002, 0.001])
        >>> w.angle_index = 4                  # 40 degrees: towards the big vehicles
        >>> w.key_labels[int(w.weights.argmax())]
        'truck'
        """
        from ..data import query_plane_example

        plane = query_plane_example()
        return cls(
            plane.keys,
            plane.values,
            key_labels=list(plane.labels),
            scale=1.0,
            n_angles=36,
            lengths=[0.25, 0.5, 1.0, 2.0, 4.0],
            angle_index=19,
            length_index=3,
            title="Soft lookup in a plane: move the query",
        )

    # ---- validation ---------------------------------------------------------------------------
    @staticmethod
    def _check_inputs(
        keys: Any, values: Any | None, key_labels: Sequence[str] | None
    ) -> tuple[NDArray, NDArray, list[str]]:
        k = check_vectors(keys, "keys", dim=2)  # (T_k, 2)
        t_k = k.shape[0]
        v = k.copy() if values is None else check_vectors(values, "values", rows=t_k)  # (T_k, d_v)
        if key_labels is None:
            labels = [f"k{i + 1}" for i in range(t_k)]
        else:
            labels = check_tokens(key_labels, "key_labels", count=t_k, per="one per key")
        return k, v, labels

    @staticmethod
    def _check_lengths(lengths: Any) -> list[float]:
        arr = np.asarray(lengths)
        if arr.ndim != 1 or arr.size < 2 or not np.issubdtype(arr.dtype, np.number):
            raise ValueError(
                f"lengths must be a 1-D sequence of at least 2 positive numbers; got {lengths!r}"
            )
        if not np.isfinite(arr).all() or (arr <= 0).any():
            raise ValueError(f"lengths must be positive and finite; got {arr.tolist()}")
        return [float(x) for x in arr]

    _v_index = traitlets.validate("angle_index", "length_index")(CourseWidget._valid_index)

    def _index_size(self, name: str) -> int:
        return len(self.angles if name == "angle_index" else self.lengths)

    # ---- inputs that recompute --------------------------------------------------------------
    def set_inputs(
        self, keys: Any, values: Any | None = None, key_labels: Sequence[str] | None = None
    ) -> None:
        """Replace keys (and values, labels) and recompute every frame."""
        k, v, labels = self._check_inputs(keys, values, key_labels)
        with self.hold_trait_notifications():
            self.key_vectors = k.tolist()
            self.value_vectors = v.tolist()
            self.key_labels = labels
        self._recompute()

    @traitlets.observe("key_vectors", "value_vectors", "lengths", "angles")
    def _on_inputs(self, change: Any) -> None:
        # Direct assignment of a trait (w.lengths = [...]) recomputes too; set_inputs validates
        # first.
        if self.frames:
            self._recompute()

    def grid_queries(self) -> NDArray:
        """All queries of the grid, shape ``(n_angles, n_lengths, 2)``."""
        theta = np.deg2rad(np.asarray(self.angles))  # (A,)
        lengths = np.asarray(self.lengths)  # (L,)
        direction = np.stack([np.cos(theta), np.sin(theta)], axis=-1)  # (A, 2)
        return direction[:, None, :] * lengths[None, :, None]  # (A, L, 2)

    def _recompute(self) -> None:
        k = np.asarray(self.key_vectors, dtype=np.float64)  # (T_k, 2)
        v = np.asarray(self.value_vectors, dtype=np.float64)  # (T_k, d_v)
        q = self.grid_queries()  # (A, L, 2)
        A, L, _ = q.shape
        q_rows = q.reshape(A * L, 2)  # (A*L, 2) — every grid query is one row of Q
        scores = attention_scores(q_rows, k, scale=self._scale)  # (A*L, T_k)
        output, weights = scaled_dot_product_attention(q_rows, k, v, scale=self._scale)
        # output: (A*L, d_v); weights: (A*L, T_k)
        extent = float(max(np.abs(k).max(), np.abs(v[:, :2]).max() if v.shape[1] == 2 else 0.0))
        extent = max(extent, float(np.max(self.lengths)))
        self.frames = {
            "query": pack_array(q),  # (A, L, 2)
            "scores": pack_array(scores.reshape(A, L, -1)),  # (A, L, T_k)
            "weights": pack_array(weights.reshape(A, L, -1)),  # (A, L, T_k)
            "output": pack_array(output.reshape(A, L, -1)),  # (A, L, d_v)
            "extent": round(extent * 1.15, 3),
            "scale": round(default_scale(2) if self._scale is None else self._scale, 6),
        }
        self._check_budget()

    # ---- read the current state -------------------------------------------------------------
    def _frame(self, name: str) -> NDArray:
        return unpack_array(self.frames[name])[self.angle_index, self.length_index]

    @property
    def query(self) -> NDArray:
        """The current query vector, shape ``(2,)`` (exact, not rounded)."""
        return self.grid_queries()[self.angle_index, self.length_index]  # (2,)

    @property
    def scores(self) -> NDArray:
        """Scaled scores ``q·k_j · scale`` of the current query, shape ``(T_k,)``."""
        return attention_scores(
            self.query[None, :], np.asarray(self.key_vectors), scale=self._scale
        )[0]

    @property
    def weights(self) -> NDArray:
        """Softmax weights of the current query over the keys, shape ``(T_k,)``."""
        k = np.asarray(self.key_vectors)
        v = np.asarray(self.value_vectors)
        return scaled_dot_product_attention(self.query[None, :], k, v, scale=self._scale)[1][0]

    @property
    def output(self) -> NDArray:
        """The output: weights @ values, shape ``(d_v,)``."""
        k = np.asarray(self.key_vectors)
        v = np.asarray(self.value_vectors)
        return scaled_dot_product_attention(self.query[None, :], k, v, scale=self._scale)[0][0]

    @property
    def angle(self) -> float:
        """Current query angle in degrees."""
        return self.angles[self.angle_index]

    @property
    def length(self) -> float:
        """Current query length."""
        return self.lengths[self.length_index]
