"""Checkers of chapter 4: worked solutions pass, typical mistakes get their specific hint."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils.exercises import ch04
from course_utils.softmax import softmax


def split_heads(x, n_heads):
    B, T, d_model = x.shape
    return x.view(B, T, n_heads, d_model // n_heads).transpose(1, 2)


def count(d_model, n_heads, bias):
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def _head_weights(scale_by_d_model=False, scale=True, axis=-1):
    def head_weights(X, W_Q, W_K, n_heads):
        T, d_model = X.shape
        d_k = d_model // n_heads
        Q = (X @ W_Q).reshape(T, n_heads, d_k).transpose(1, 0, 2)
        K = (X @ W_K).reshape(T, n_heads, d_k).transpose(1, 0, 2)
        s = Q @ K.transpose(0, 2, 1)
        if scale:
            s = s / np.sqrt(d_model if scale_by_d_model else d_k)
        return softmax(s, axis=axis)

    return head_weights


SOLUTIONS = [
    (ch04.check_split_heads, split_heads),
    (ch04.check_parameter_count, count),
    (ch04.check_head_weights, _head_weights()),
    (ch04.check_torch_mask, lambda m: ~m),
]


@pytest.mark.parametrize(("checker", "solution"), SOLUTIONS)
def test_worked_solutions_pass(checker, solution):
    fb = checker(solution)
    assert fb, str(fb)
    assert "✗" not in str(fb)


@pytest.mark.parametrize(("checker", "_"), SOLUTIONS)
def test_starter_code_gets_feedback_not_an_exception(checker, _):
    def starter(*args): ...

    fb = checker(starter)
    assert not fb
    assert "returned None" in str(fb)
    assert not checker(...)
    assert "expected the function" in str(checker(42))


def test_crashing_function_gets_feedback():
    def boom(*args):
        raise RuntimeError("oops")

    fb = ch04.check_split_heads(boom)
    assert not fb and "RuntimeError: oops" in str(fb)


MISTAKES = [
    (
        ch04.check_split_heads,
        lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1),
        "numbers are scrambled",
    ),
    (
        ch04.check_split_heads,
        lambda x, h: x.view(*x.shape[:2], h, -1),
        "stopped at (B, T, n_heads, d_k)",
    ),
    (ch04.check_parameter_count, lambda d, h, b: h * count(d, h, b), "each head does not get"),
    (ch04.check_parameter_count, lambda d, h, b: 3 * d * d + (3 * d if b else 0), "forget W_O"),
    (ch04.check_parameter_count, lambda d, h, b: 4 * d * d, "count the biases"),
    (ch04.check_head_weights, _head_weights(scale_by_d_model=True), "not √d_model"),
    (ch04.check_head_weights, _head_weights(scale=False), "forget to divide"),
    (ch04.check_head_weights, _head_weights(axis=-2), "the last axis"),
    (ch04.check_torch_mask, lambda m: m, "may NOT attend"),
    (ch04.check_torch_mask, lambda m: (~m).float(), "keep it boolean"),
]


@pytest.mark.parametrize(("checker", "wrong", "hint"), MISTAKES)
def test_typical_mistakes_get_their_hint(checker, wrong, hint):
    fb = checker(wrong)
    assert not fb
    assert hint in str(fb), str(fb)


def test_hard_coded_answer_fails():
    fixed = split_heads(torch.arange(12.0).reshape(1, 3, 4), 2)
    assert not ch04.check_split_heads(lambda x, h: fixed)
