"""Checkers of the appendix pages: right answers in several styles pass, each typical wrong answer
gets its own hint, broken answers get feedback and never a traceback."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from course_utils.exercises import Feedback, appendix
from course_utils.positions import rotation_matrix

# --- rotate(v, angle) --------------------------------------------------------------------------


def _rotate_lists(v, a):
    return [v[0] * math.cos(a) - v[1] * math.sin(a), v[0] * math.sin(a) + v[1] * math.cos(a)]


def _rotate_complex(v, a):
    z = complex(v[0], v[1]) * complex(math.cos(a), math.sin(a))
    return (z.real, z.imag)


@pytest.mark.parametrize(
    "rotate",
    [
        lambda v, a: rotation_matrix(a) @ v,
        _rotate_lists,
        _rotate_complex,
        lambda v, a: (
            torch.tensor(rotation_matrix(a), dtype=torch.float32) @ torch.tensor(v).float()
        ),
    ],
    ids=["package", "lists", "complex", "torch-float32"],
)
def test_rotate_accepts_right_answers(rotate) -> None:
    assert appendix.check_rotate(rotate).passed


@pytest.mark.parametrize(
    "rotate, hint",
    [
        (lambda v, a: rotation_matrix(-a) @ v, "clockwise"),
        (lambda v, a: rotation_matrix(math.radians(a)) @ v, "radians"),
        (lambda v, a: v @ rotation_matrix(a), "clockwise"),  # vᵀR = (Rᵀv)ᵀ: the same mistake
    ],
)
def test_rotate_names_the_mistake(rotate, hint) -> None:
    fb = appendix.check_rotate(rotate)
    assert not fb.passed and hint in fb.hints[0]


# --- slope(x1, y1, x2, y2) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "slope",
    [
        lambda x1, y1, x2, y2: math.log(y2 / y1) / math.log(x2 / x1),
        lambda x1, y1, x2, y2: np.log10(y2 / y1) / np.log10(x2 / x1),
        lambda x1, y1, x2, y2: torch.log2(torch.tensor(y2 / y1)) / math.log2(x2 / x1),
        lambda x1, y1, x2, y2: np.float32(math.log(y2 / y1) / math.log(x2 / x1)),
    ],
    ids=["ln", "log10", "torch-log2", "float32"],
)
def test_slope_accepts_right_answers(slope) -> None:
    assert appendix.check_loglog_slope(slope).passed


@pytest.mark.parametrize(
    "slope, hint",
    [
        (lambda x1, y1, x2, y2: (y2 - y1) / (x2 - x1), "linear axes"),
        (lambda x1, y1, x2, y2: y2 / y1, "factor y grew by"),
        (lambda x1, y1, x2, y2: (y2 / y1) / (x2 / x1), "not the ratios themselves"),
        (lambda x1, y1, x2, y2: math.log(x2 / x1) / math.log(y2 / y1), "upside down"),
    ],
)
def test_slope_names_the_mistake(slope, hint) -> None:
    fb = appendix.check_loglog_slope(slope)
    assert not fb.passed and hint in fb.hints[0]


# --- intensity(m, k, n, bytes_per_value) --------------------------------------------------------


@pytest.mark.parametrize(
    "intensity",
    [
        lambda m, k, n, b: 2 * m * k * n / ((m * k + k * n + m * n) * b),
        lambda m, k, n, b: np.float64(2 * m * k * n) / (b * (m * k + k * n + m * n)),
        lambda m, k, n, b: (
            torch.tensor(2.0 * m * k * n, dtype=torch.float64) / ((m * k + k * n + m * n) * b)
        ),
    ],
    ids=["python", "numpy", "torch"],
)
def test_intensity_accepts_right_answers(intensity) -> None:
    assert appendix.check_intensity(intensity).passed


@pytest.mark.parametrize(
    "intensity, hint",
    [
        (lambda m, k, n, b: m * k * n / ((m * k + k * n + m * n) * b), "2 FLOPs"),
        (lambda m, k, n, b: 2 * m * k * n / ((m * k + k * n + m * n) * b * 8), "not bits"),
        (lambda m, k, n, b: 2 * m * k * n / (m * k + k * n + m * n), "divide by bytes"),
        (lambda m, k, n, b: 2 * m * k * n / (m * k * b), "both inputs and the output"),
    ],
)
def test_intensity_names_the_mistake(intensity, hint) -> None:
    fb = appendix.check_intensity(intensity)
    assert not fb.passed and hint in fb.hints[0]


# --- broken answers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "checker", [appendix.check_rotate, appendix.check_loglog_slope, appendix.check_intensity]
)
@pytest.mark.parametrize(
    "answer",
    [..., None, "abc", lambda *a: 1 / 0, lambda *a: None, lambda *a: [[1, 2], [3]], lambda *a: "x"],
    ids=["starter", "none", "text", "crashes", "returns-none", "ragged", "string"],
)
def test_broken_answers_get_feedback(checker, answer) -> None:
    fb = checker(answer)
    assert isinstance(fb, Feedback) and not fb.passed and fb.messages
