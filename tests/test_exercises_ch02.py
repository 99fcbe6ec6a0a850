"""Exercises of chapter 2: worked solutions pass; starter code and typical mistakes get specific
feedback; nothing raises on a wrong answer."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from course_utils.exercises import Feedback, ch02
from course_utils.scaling import saturation_sweep


def _score_var(d_k, sigma_q, sigma_k):
    return d_k * sigma_q**2 * sigma_k**2


def _unit_scale(d_k, sigma_q, sigma_k):
    return 1.0 / (sigma_q * sigma_k * math.sqrt(d_k))


def _jacobian(p):
    p = np.asarray(p, dtype=float)
    return np.diag(p) - np.outer(p, p)


def _starter(*args): ...


def _crashes(*args):
    raise ZeroDivisionError("boom")


# ---- exercise 2.1 -------------------------------------------------------------------------------


def test_score_variance_solution_passes() -> None:
    fb = ch02.check_score_variance(_score_var, _unit_scale)
    assert isinstance(fb, Feedback) and fb.passed, str(fb)


def test_score_variance_formula_matches_simulation() -> None:
    """The checker's closed form is backed by simulation (independent of the formula)."""
    for d_k, s_q, s_k in ch02._VAR_CASES:
        simulated = ch02._simulated_variance(d_k, s_q, s_k)
        assert simulated == pytest.approx(_score_var(d_k, s_q, s_k), rel=0.05)


@pytest.mark.parametrize(
    "score_var,unit_scale,message,hint",
    [
        (_starter, _unit_scale, "returned None", "replace the `...`"),
        (Ellipsis, _unit_scale, "score_var is still Ellipsis", "define the function"),
        (_crashes, _unit_scale, "raised ZeroDivisionError: boom", "small example"),
        (lambda d, a, b: d * a * b, _unit_scale, "expected 64", "sigma**2"),
        (lambda d, a, b: d, _unit_scale, "expected 64", "sigma_q² sigma_k²"),
        (lambda d, a, b: math.sqrt(d) * a**2 * b**2, _unit_scale, "expected 64", "add up"),
        (_score_var, lambda d, a, b: 1 / (d * a**2 * b**2), "unit_scale", "c = 1/√Var"),
        (_score_var, lambda d, a, b: 1 / math.sqrt(d), "unit_scale", "include sigma_q"),
        (_score_var, 3.0, "got a float", "without calling it"),
    ],
)
def test_score_variance_mistakes(score_var, unit_scale, message, hint) -> None:
    fb = ch02.check_score_variance(score_var, unit_scale)
    assert not fb.passed
    assert any(message in m for m in fb.messages), str(fb)
    assert any(hint in h for h in fb.hints), str(fb)


# ---- exercise 2.2 -------------------------------------------------------------------------------


def test_jacobian_solution_passes_and_agrees_with_autograd() -> None:
    assert ch02.check_jacobian(_jacobian).passed
    z = torch.tensor([0.3, -1.0, 2.0])
    auto = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), z).numpy()
    np.testing.assert_allclose(_jacobian(torch.softmax(z, -1).numpy()), auto, atol=1e-6)


@pytest.mark.parametrize(
    "jacobian,message,hint",
    [
        (_starter, "returned None", "replace the `...`"),
        (lambda p: np.diag(p) - p @ p, "entry [0, 0] is -0.421", "np.outer"),
        (lambda p: np.outer(p, p) - np.diag(p), "entry [0, 0]", "sign is flipped"),
        (lambda p: np.diag(p), "entry [0, 0] is 0.09", "off-diagonal"),
        (lambda p: np.zeros((len(p) + 1, len(p))), "got shape (4, 3)", "one row and one column"),
        (lambda p: "J", "expected a matrix", None),
    ],
)
def test_jacobian_mistakes(jacobian, message, hint) -> None:
    fb = ch02.check_jacobian(jacobian)
    assert not fb.passed
    assert any(message in m for m in fb.messages), str(fb)
    if hint is not None:
        assert any(hint in h for h in fb.hints), str(fb)


# ---- exercise 2.3 -------------------------------------------------------------------------------


def test_saturation_threshold_solution() -> None:
    sw = saturation_sweep(
        [2**i for i in range(11)], t_k=8, n_rows=500, rng=np.random.default_rng(0)
    )
    answer = int(sw.d_ks[np.argmax(sw.unscaled["max_weight"] > 0.9)])
    assert ch02.check_saturation_threshold(answer).passed
    assert answer == ch02.saturation_threshold()


@pytest.mark.parametrize(
    "answer,message",
    [
        (Ellipsis, "still Ellipsis"),
        (1024, "a smaller d_k already exceeds 0.9"),
        (4, "still at most 0.9"),
        (100, "not on the grid"),
        (128.0, "must be an int"),
        (True, "must be an int"),
    ],
)
def test_saturation_threshold_mistakes(answer, message) -> None:
    fb = ch02.check_saturation_threshold(answer)
    assert not fb.passed
    assert any(message in m for m in fb.messages), str(fb)
