"""Exercises of chapter 3: worked solutions pass; starter code and typical mistakes get specific
feedback; nothing raises on a wrong answer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils.exercises import Feedback, ch03
from course_utils.softmax import softmax


def _stable_softmax(x):
    x = np.asarray(x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _attention(Q, K, V, mask=None):
    scores = Q @ K.T / math.sqrt(Q.shape[-1])  # (T_q, T_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores, axis=-1) @ V  # (T_q, d_v)


def _starter(*args, **kwargs): ...


# ---- exercise 3.1 -------------------------------------------------------------------------------


def test_stable_softmax_solution_passes() -> None:
    fb = ch03.check_stable_softmax(_stable_softmax)
    assert isinstance(fb, Feedback) and fb.passed, str(fb)


@pytest.mark.parametrize(
    "fn,message,hint",
    [
        (_starter, "returned None", "replace the `...`"),
        (
            lambda x: np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True),
            "softmax contains NaN",
            "subtract the maximum",
        ),
        (
            lambda x: np.exp(x - np.max(x)) / np.exp(x - np.max(x)).sum(axis=0, keepdims=True),
            "(3, 5) matrix",
            "wrong axis",
        ),
        (
            lambda x: np.exp(x - np.max(x, axis=-1, keepdims=True)),
            "[1, 2, 3]",
            "divide the exponentials",
        ),
        (lambda x: 1 / 0, "raised ZeroDivisionError", "small example"),
    ],
)
def test_stable_softmax_mistakes(fn, message, hint) -> None:
    fb = ch03.check_stable_softmax(fn)
    assert not fb.passed
    assert any(message in m for m in fb.messages), str(fb)
    assert any(hint in h for h in fb.hints), str(fb)


# ---- exercise 3.2 -------------------------------------------------------------------------------


def test_temperature_limits_solution_passes() -> None:
    assert ch03.check_temperature_limits([0, 0.5, 0.5, 0], [0.25] * 4).passed
    # and the expected answers really are the package's limits
    s = np.array(ch03.TEMPERATURE_SCORES)
    np.testing.assert_allclose(softmax(s, temperature=1e-3), [0, 0.5, 0.5, 0], atol=1e-9)
    np.testing.assert_allclose(softmax(s, temperature=1e6), 0.25, atol=1e-5)


@pytest.mark.parametrize(
    "zero,inf,message,hint",
    [
        (..., [0.25] * 4, "still Ellipsis", "list of 4 weights"),
        ([0, 1, 0, 0], [0.25] * 4, "τ -> 0: entry [1] is 1, expected 0.5", "share the weight"),
        ([0, 0.5, 0.5, 0], [0, 0.5, 0.5, 0], "τ -> inf", "uniform"),
        ([0, 0.5, 0.5], [0.25] * 4, "shape (3,), expected (4,)", None),
    ],
)
def test_temperature_limits_mistakes(zero, inf, message, hint) -> None:
    fb = ch03.check_temperature_limits(zero, inf)
    assert not fb.passed
    assert any(message in m for m in fb.messages), str(fb)
    if hint is not None:
        assert any(hint in h for h in fb.hints), str(fb)


# ---- exercise 3.3 -------------------------------------------------------------------------------


def test_attention_solution_passes() -> None:
    fb = ch03.check_attention(_attention)
    assert fb.passed, str(fb)


def _no_scaling(Q, K, V, mask=None):
    scores = Q @ K.T
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores) @ V


def _mask_ignored(Q, K, V, mask=None):
    return softmax(Q @ K.T / math.sqrt(Q.shape[-1])) @ V


def _returns_tuple(Q, K, V, mask=None):
    return _attention(Q, K, V, mask), None


@pytest.mark.parametrize(
    "fn,message,hint",
    [
        (_starter, "returned None", "replace the `...`"),
        (_no_scaling, "'the cat sat down'", "√d_k"),
        (_mask_ignored, "看书真好 with causal_mask(4)", "mask was not applied"),
        (_returns_tuple, "returned a tuple of 2 items", "return only the output"),
    ],
)
def test_attention_mistakes(fn, message, hint) -> None:
    fb = ch03.check_attention(fn)
    assert not fb.passed
    assert any(message in m for m in fb.messages), str(fb)
    assert any(hint in h for h in fb.hints), str(fb)
