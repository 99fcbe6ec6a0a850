"""Checkers for the exercises of the appendix pages ("Maths and PyTorch you need").

The learner writes a *function*; the checker calls it on its own cases and compares with the
package (:func:`course_utils.positions.rotation_matrix`,
:func:`course_utils.power_law.fit_power_law`, :func:`course_utils.memory.matmul_cost`). A
checker never raises on a wrong answer, and names the typical mistake when it recognises one.

- :func:`check_rotate` (page ``rotations``): ``rotate(v, angle)``, the vector ``v`` turned
  counter-clockwise by ``angle`` radians;
- :func:`check_loglog_slope` (page ``log_log_slopes``): ``slope(x1, y1, x2, y2)``, the exponent of
  the power law through two points;
- :func:`check_intensity` (page ``memory``): ``intensity(m, k, n, bytes_per_value)``, the FLOPs per
  byte of the product ``(m, k) @ (k, n)``.

>>> import numpy as np
>>> bool(check_loglog_slope(lambda x1, y1, x2, y2: np.log(y2 / y1) / np.log(x2 / x1)))
True
>>> print(check_loglog_slope(lambda x1, y1, x2, y2: (y2 - y1) / (x2 - x1)).hints[0])
that is the slope on linear axes: take the logarithms of both ratios, log(y2/y1) / log(x2/x1)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..i18n import t
from ..memory import matmul_cost
from ..positions import rotation_matrix
from ..power_law import fit_power_law
from ._checks import Mistake, check_number, described_cases, run_array_cases
from ._feedback import Feedback
from ._learner import run_cases

__all__ = ["check_intensity", "check_loglog_slope", "check_rotate"]


# --- rotations: turn a vector ---------------------------------------------------------------------


def check_rotate(rotate: Callable[[Any, float], Any]) -> Feedback:
    """Check ``rotate(v, angle)`` = ``R(angle) @ v`` for a 2-D ``v`` (float64 numpy ``(2,)``).

    Any array-like answer of shape ``(2,)`` is accepted (numpy, torch, a list or a tuple).

    >>> bool(check_rotate(lambda v, a: rotation_matrix(a) @ v))
    True
    >>> print(check_rotate(lambda v, a: rotation_matrix(a).T @ v).hints[0])
    that turns clockwise: R(θ) = [[cos θ, -sin θ], [sin θ, cos θ]] (the minus sign in the first row)
    """
    title = "rotate"

    def reference(v: np.ndarray, angle: float) -> tuple[Any, list[Mistake]]:
        mistakes = [
            Mistake(
                "that turns clockwise: R(θ) = [[cos θ, -sin θ], [sin θ, cos θ]] (the minus sign "
                "in the first row)",
                rotation_matrix(-angle) @ v,
            ),
            Mistake(
                "the angle is already in radians: do not convert it from degrees",
                rotation_matrix(math.radians(angle)) @ v,
            ),
        ]
        return rotation_matrix(angle) @ v, mistakes

    inputs = [((1.0, 0.0), 0.5), ((0.6, -1.3), math.pi / 2), ((2.0, 1.0), -1.2), ((-0.4, 0.9), 3.0)]
    cases = [
        (
            t("v = ({x:g}, {y:g}), angle = {angle:.4g}", x=x, y=y, angle=angle),
            (np.array([x, y]), angle),
        )
        for (x, y), angle in inputs
    ]
    passed = "all {n} cases equal rotation_matrix(angle) @ v"
    return run_array_cases(title, rotate, "rotate", cases, reference, passed, atol=1e-6)


# --- log–log slopes: the exponent through two points ----------------------------------------------


def check_loglog_slope(slope: Callable[[float, float, float, float], Any]) -> Feedback:
    """Check ``slope(x1, y1, x2, y2)`` = ``log(y2 / y1) / log(x2 / x1)``, in any logarithm base.

    >>> bool(check_loglog_slope(lambda x1, y1, x2, y2: math.log2(y2 / y1) / math.log2(x2 / x1)))
    True
    """
    title = "log–log slope"

    def compare(result: Any, x1: float, y1: float, x2: float, y2: float) -> Feedback:
        expected = fit_power_law([x1, x2], [y1, y2]).exponent
        mistakes = [
            (
                (y2 - y1) / (x2 - x1),
                "that is the slope on linear axes: take the logarithms of both ratios, "
                "log(y2/y1) / log(x2/x1)",
            ),
            (y2 / y1, "y2/y1 is the factor y grew by; the exponent is log(y2/y1) / log(x2/x1)"),
            (
                (y2 / y1) / (x2 / x1),
                "divide the logarithms of the ratios, not the ratios themselves",
            ),
            (1.0 / expected, "the ratio is upside down: log(y2/y1) on top, log(x2/x1) below"),
        ]

        wrong = "slope: got {value:.6g}, expected {expected:.6g}"
        return check_number(title, result, expected, mistakes, wrong, atol=1e-6)

    points = [(256, 1e-3, 1024, 1.6e-2), (64, 5.0, 4096, 320.0), (100, 8.0, 400, 16.0)]
    cases = described_cases("(x1, y1) = ({x1:g}, {y1:g}), (x2, y2) = ({x2:g}, {y2:g})", points)
    passed = "all {n} cases equal log(y2/y1) / log(x2/x1)"
    return run_cases(title, slope, "slope", cases, compare, passed)


# --- memory: the arithmetic intensity of a matrix product -----------------------------------------


def check_intensity(intensity: Callable[[int, int, int, int], Any]) -> Feedback:
    """Check ``intensity(m, k, n, bytes_per_value)``: ``2 m k n`` FLOPs divided by the bytes of
    both inputs and the output, ``(m k + k n + m n) · bytes_per_value``.

    >>> right = lambda m, k, n, b: 2 * m * k * n / ((m * k + k * n + m * n) * b)
    >>> bool(check_intensity(right))
    True
    >>> half = lambda m, k, n, b: m * k * n / ((m * k + k * n + m * n) * b)
    >>> print(check_intensity(half).hints[0])
    a multiply-add is 2 FLOPs: the product does 2·m·k·n of them
    """
    title = "arithmetic intensity"

    def compare(result: Any, m: int, k: int, n: int, b: int) -> Feedback:
        cost = matmul_cost(m, k, n, bytes_per_value=b)
        expected = cost.intensity
        numbers = m * k + k * n + m * n  # values read or written
        mistakes = [
            (expected / 2, "a multiply-add is 2 FLOPs: the product does 2·m·k·n of them"),
            (expected / 8, "bytes_per_value counts bytes, not bits: do not multiply by 8"),
            (
                cost.flops / numbers,
                "divide by bytes, not by numbers: multiply the count by bytes_per_value",
            ),
            (
                cost.flops / (m * k * b),
                "count every number moved: both inputs and the output, not only the weights",
            ),
        ]

        wrong = "intensity: got {value:.6g}, expected {expected:.6g} FLOPs per byte"
        return check_number(title, result, expected, mistakes, wrong)

    # Not m = 4096, n = 1 first: there the weights alone (1.0) are within 0.05 % of the answer,
    # so a right answer rounded to 2 decimals would be told to count the inputs and the output.
    sizes = ((4096, 4096, 64, 2), (4096, 4096, 1, 2), (512, 256, 128, 4), (3, 5, 7, 1))
    cases = described_cases("m = {m}, k = {k}, n = {n}, bytes_per_value = {b}", sizes)
    passed = "all {n} cases equal 2·m·k·n / ((m·k + k·n + m·n) · bytes_per_value)"
    return run_cases(title, intensity, "intensity", cases, compare, passed)
