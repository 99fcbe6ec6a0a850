"""course_utils.geometry: the convex hull of the values, and points inside a convex polygon."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils.geometry import convex_hull, in_convex_polygon
from course_utils.softmax import softmax


@pytest.mark.parametrize(
    "points,expected",
    [
        ([[0, 0], [1, 0], [0, 1]], [[0, 0], [1, 0], [0, 1]]),
        ([[0, 0], [2, 0], [1, 1], [0, 2], [2, 2]], [[0, 0], [2, 0], [2, 2], [0, 2]]),
        ([[0, 0], [1, 1], [2, 2]], [[0, 0], [2, 2]]),  # collinear: the two ends
    ],
)
def test_convex_hull(points, expected) -> None:
    assert convex_hull(points).tolist() == expected


def test_hull_is_counter_clockwise_and_contains_every_point() -> None:
    pts = np.random.default_rng(0).normal(size=(50, 2))  # (50, 2)
    hull = convex_hull(pts)  # (n, 2)
    edges = np.roll(hull, -1, axis=0) - hull  # (n, 2)
    area2 = np.sum(hull[:, 0] * np.roll(hull[:, 1], -1) - np.roll(hull[:, 0], -1) * hull[:, 1])
    assert area2 > 0 and len(edges) >= 3  # positive signed area: counter-clockwise
    assert in_convex_polygon(pts, hull).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_softmax_weighted_sum_lies_in_the_hull(seed: int) -> None:
    """The chapter's claim: a convex combination of the values never leaves their hull."""
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(5, 2))  # (T_k, 2)
    scores = rng.normal(size=(200, 5)) * rng.uniform(0.1, 10, size=(200, 1))  # (200, T_k)
    outputs = softmax(scores, axis=-1) @ values  # (200, 2)
    assert in_convex_polygon(outputs, convex_hull(values)).all()
    assert not in_convex_polygon([values.max(axis=0) + 1.0], convex_hull(values))[0]


@pytest.mark.parametrize(
    ("points", "error", "match"),
    [
        ([1.0, 2.0], ValueError, r"points must have at least 2 dimensions \(N, 2\)"),
        (
            [[1.0, 2.0, 3.0]],
            ValueError,
            r"must have shape \(N, 2\) with N >= 1; got shape \(1, 3\)",
        ),
        ([[np.inf, 0.0]], ValueError, r"points contains \+inf"),
    ],
)
def test_bad_points(points, error, match) -> None:
    with pytest.raises(error, match=match):
        convex_hull(points)
