"""Plane geometry of chapter 3: a softmax-weighted sum of values lies in the values' convex hull.

The weights are non-negative and sum to 1, so ``output = weights @ values`` is a convex combination
of the value vectors: whatever the scores, the output never leaves the polygon the values span.
:func:`convex_hull` finds that polygon (the widget draws it) and :func:`in_convex_polygon` tests
points against it (the chapter checks hundreds of random outputs).

>>> hull = convex_hull([[0, 0], [2, 0], [1, 1], [0, 2], [2, 2]])
>>> hull.tolist()
[[0.0, 0.0], [2.0, 0.0], [2.0, 2.0], [0.0, 2.0]]
>>> in_convex_polygon([[1.0, 1.0], [3.0, 3.0]], hull).tolist()
[True, False]
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._validation import as_float_array, shape_str

__all__ = ["convex_hull", "in_convex_polygon"]


def _points(x: Any, name: str) -> NDArray[np.float64]:
    arr = as_float_array(x, name, min_ndim=2, expected="(N, 2)")  # numeric, finite
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1:
        got = shape_str(arr.shape)
        raise ValueError(f"{name} must have shape (N, 2) with N >= 1; got shape {got}")
    return arr.astype(np.float64)


def convex_hull(points: Any) -> NDArray[np.float64]:
    """Vertices of the convex hull of 2-D points, counter-clockwise (Andrew's monotone chain).

    Duplicates are dropped; collinear points on an edge are not vertices. One or two distinct
    points give themselves.

    >>> convex_hull([[0, 0], [1, 1], [2, 2]]).tolist()  # collinear: the two ends
    [[0.0, 0.0], [2.0, 2.0]]
    """
    pts = sorted({(float(x), float(y)) for x, y in _points(points, "points")})
    if len(pts) <= 2:
        return np.array(pts)

    def cross(o: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list[tuple[float, float]] = []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    upper: list[tuple[float, float]] = []
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


def in_convex_polygon(points: Any, polygon: Any, *, tol: float = 1e-9) -> NDArray[np.bool_]:
    """For each point, is it inside (or on the edge of) a counter-clockwise convex polygon?

    A point is inside when it is left of, or on, every edge (cross product >= ``-tol``), the
    order :func:`convex_hull` returns.

    >>> in_convex_polygon([[0.5, 0.5]], [[0, 0], [1, 0], [0, 1]]).tolist()
    [True]
    """
    pts = _points(points, "points")  # (N, 2)
    poly = _points(polygon, "polygon")  # (n, 2)
    edges = np.roll(poly, -1, axis=0) - poly  # (n, 2)
    rel = pts[:, None, :] - poly[None, :, :]  # (N, n, 2)
    cross = edges[None, :, 0] * rel[..., 1] - edges[None, :, 1] * rel[..., 0]  # (N, n)
    return np.all(cross >= -tol, axis=-1)  # (N,)
