"""Checkers of chapter 9: worked solutions pass, typical mistakes get their specific hint."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from course_utils.exercises import ch09
from course_utils.softmax import softmax


def window_mask(t, window):
    i, j = np.arange(t)[:, None], np.arange(t)[None, :]
    return (j <= i) & (j > i - window)


def layers_needed(t, window):
    return max(1, math.ceil((t - 1) / (window - 1)))


def window_attention(q, k, v, window):
    out = np.zeros((len(q), v.shape[1]))
    for i in range(len(q)):
        lo = max(0, i - window + 1)
        w = softmax(k[lo : i + 1] @ q[i] / np.sqrt(q.shape[1]))
        out[i] = w @ v[lo : i + 1]
    return out


def window_attention_torch(q, k, v, window):
    # a vectorised answer with torch, returning a tensor: also accepted
    q, k, v = (torch.from_numpy(a) for a in (q, k, v))
    t = len(q)
    i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
    mask = (j <= i) & (j > i - window)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


SOLUTIONS = [
    (ch09.check_window_mask, window_mask),
    (ch09.check_window_mask, lambda t, w: torch.from_numpy(window_mask(t, w))),
    (ch09.check_layers_needed, layers_needed),
    (ch09.check_window_attention, window_attention),
    (ch09.check_window_attention, window_attention_torch),
]


@pytest.mark.parametrize(("checker", "solution"), SOLUTIONS)
def test_worked_solutions_pass(checker, solution):
    fb = checker(solution)
    assert fb, str(fb)
    assert "✗" not in str(fb)


@pytest.mark.parametrize("checker", sorted({c for c, _ in SOLUTIONS}, key=lambda c: c.__name__))
def test_starter_code_gets_feedback_not_an_exception(checker):
    def starter(*args): ...

    fb = checker(starter)
    assert not fb
    assert "returned None" in str(fb)
    assert not checker(...)
    assert "expected the function" in str(checker(42))


def test_crashing_function_gets_feedback():
    def boom(*args):
        raise RuntimeError("oops")

    fb = ch09.check_window_attention(boom)
    assert not fb and "RuntimeError: oops" in str(fb)


def _i_j(t):
    return np.arange(t)[:, None], np.arange(t)[None, :]


def _att(mask_fn, scale=True):
    def f(q, k, v, window):
        t = len(q)
        s = q @ k.T / (np.sqrt(q.shape[1]) if scale else 1.0)
        s = np.where(mask_fn(t, window), s, -np.inf)
        return softmax(s, axis=-1) @ v

    return f


MISTAKES = [
    (ch09.check_window_mask, lambda t, w: ~window_mask(t, w), "True where a query MAY attend"),
    (
        ch09.check_window_mask,
        lambda t, w: (_i_j(t)[1] <= _i_j(t)[0]) & (_i_j(t)[1] >= _i_j(t)[0] - w),
        "one key too many",
    ),
    (ch09.check_window_mask, lambda t, w: np.tri(t, dtype=bool), "plain causal mask"),
    (
        ch09.check_window_mask,
        lambda t, w: np.abs(_i_j(t)[0] - _i_j(t)[1]) < w,
        "two-sided",
    ),
    (ch09.check_window_mask, lambda t, w: window_mask(t, w).astype(int), "dtype is int64"),
    (ch09.check_layers_needed, lambda t, w: math.ceil((t - 1) / w), "window - 1 positions"),
    (ch09.check_layers_needed, lambda t, w: (t - 1) // (w - 1), "round up"),
    (ch09.check_window_attention, _att(window_mask, scale=False), "scale the scores"),
    (ch09.check_window_attention, _att(lambda t, w: np.ones((t, t), bool)), "every key is used"),
    (ch09.check_window_attention, _att(lambda t, w: np.tri(t, dtype=bool)), "causal attention"),
    (ch09.check_window_attention, _att(lambda t, w: window_mask(t, w + 1)), "one key too many"),
]


@pytest.mark.parametrize(("checker", "wrong", "hint"), MISTAKES)
def test_typical_mistakes_get_their_hint(checker, wrong, hint):
    fb = checker(wrong)
    assert not fb
    assert hint in str(fb), str(fb)


# --- exercise 9.4: keys of a strided pattern (a count derived on paper) -------------------------


def strided_keys(i, stride):
    return min(i + 1, stride) + i // stride


STRIDED_RIGHT = [
    strided_keys,
    lambda i, s: np.int64(strided_keys(i, s)),  # numpy integer
    lambda i, s: torch.tensor(float(strided_keys(i, s))),  # a float tensor
    lambda i, s: int(((np.arange(i + 1) > i - s) | ((i - np.arange(i + 1)) % s == 0)).sum()),
]


@pytest.mark.parametrize("answer", STRIDED_RIGHT)
def test_strided_keys_accepts_every_right_form(answer):
    fb = ch09.check_strided_keys(answer)
    assert fb, str(fb)


STRIDED_WRONG = [
    (lambda i, s: min(i + 1, s) + i // s + 1, "counted twice"),
    (lambda i, s: min(i + 1, s + 1) + i // s, "counted twice"),  # the paper's band + stride
    (lambda i, s: s + i // s, "near the start"),
    (lambda i, s: min(i + 1, s), "only the band"),
    (lambda i, s: i // s + 1, "only the stride keys"),
]


@pytest.mark.parametrize(("wrong", "hint"), STRIDED_WRONG)
def test_strided_keys_names_the_mistake(wrong, hint):
    fb = ch09.check_strided_keys(wrong)
    assert not fb
    assert hint in str(fb), str(fb)


@pytest.mark.parametrize("answer", [..., None, lambda i, s: ..., lambda i, s: 1 / 0, 3])
def test_strided_keys_broken_answers_get_feedback(answer):
    fb = ch09.check_strided_keys(answer)
    assert not fb and fb.messages
