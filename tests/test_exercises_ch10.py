"""Checkers of chapter 10: worked solutions pass, typical mistakes get their specific hint."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from course_utils.exercises import ch10
from course_utils.softmax import softmax


def max_batch(memory_bytes, n_layers, n_heads, n_kv_heads, d_head, seq_len, bytes_per_value):
    return memory_bytes // (2 * n_layers * n_kv_heads * d_head * seq_len * bytes_per_value)


def gqa_attention(q, k, v):
    g = q.shape[0] // k.shape[0]
    k, v = np.repeat(k, g, axis=0), np.repeat(v, g, axis=0)  # (h, T, d) each
    return softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]), axis=-1) @ v


def gqa_attention_torch(q, k, v):
    # torch, returning a tensor, with SDPA itself: accepted
    q, k, v = (torch.from_numpy(a)[None] for a in (q, k, v))
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)[0]


def gqa_attention_loop(q, k, v):
    g = q.shape[0] // k.shape[0]
    out = []
    for i in range(q.shape[0]):
        j = i // g
        w = softmax(q[i] @ k[j].T / math.sqrt(q.shape[-1]), axis=-1)
        out.append((w @ v[j]).tolist())
    return out  # a nested list


def mean_pool(W, n_heads, n_kv_heads):
    d_k = W.shape[0] // n_heads
    blocks = W.reshape(n_kv_heads, n_heads // n_kv_heads, d_k, W.shape[1])
    return blocks.mean(axis=1).reshape(n_kv_heads * d_k, W.shape[1])


def mean_pool_torch_f32(W, n_heads, n_kv_heads):
    t = torch.tensor(W, dtype=torch.float32, requires_grad=True)
    d_k = W.shape[0] // n_heads
    return t.view(n_kv_heads, -1, d_k, W.shape[1]).mean(1).reshape(-1, W.shape[1])


SOLUTIONS = [
    (ch10.check_max_batch, max_batch),
    (ch10.check_max_batch, lambda *a: torch.tensor(max_batch(*a))),
    (ch10.check_max_batch, lambda *a: float(max_batch(*a))),
    (ch10.check_gqa_attention, gqa_attention),
    (ch10.check_gqa_attention, gqa_attention_torch),
    (ch10.check_gqa_attention, gqa_attention_loop),
    (ch10.check_mean_pool, mean_pool),
    (ch10.check_mean_pool, mean_pool_torch_f32),
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


@pytest.mark.parametrize("checker", [ch10.check_max_batch, ch10.check_gqa_attention])
def test_crashing_or_odd_answers_get_feedback(checker):
    def boom(*args):
        raise RuntimeError("oops")

    fb = checker(boom)
    assert not fb and "RuntimeError: oops" in str(fb)
    assert not checker(lambda *a: "many")
    assert not checker(lambda *a: [[1, 2], [3]])


def _per(m, L, kv, d, T, b):
    return 2 * L * kv * d * T * b


def _gqa_tiled(q, k, v):
    g = q.shape[0] // k.shape[0]
    k, v = np.tile(k, (g, 1, 1)), np.tile(v, (g, 1, 1))
    return softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]), axis=-1) @ v


def _gqa_unscaled(q, k, v):
    g = q.shape[0] // k.shape[0]
    k, v = np.repeat(k, g, axis=0), np.repeat(v, g, axis=0)
    return softmax(q @ k.transpose(0, 2, 1), axis=-1) @ v


def _pool_sum(W, h, kv):
    return mean_pool(W, h, kv) * (h // kv)


def _pool_strided(W, h, kv):
    d_k = W.shape[0] // h
    return W.reshape(h // kv, kv, d_k, -1).mean(0).reshape(kv * d_k, -1)


MISTAKES = [
    (
        ch10.check_max_batch,
        lambda m, L, h, kv, d, T, b: m // _per(m, L, h, d, T, b),
        "not one per query head",
    ),
    (
        ch10.check_max_batch,
        lambda m, L, h, kv, d, T, b: m // (_per(m, L, kv, d, T, b) // 2),
        "keys AND values",
    ),
    (
        ch10.check_max_batch,
        lambda m, L, h, kv, d, T, b: m // (_per(m, L, kv, d, T, b) // b),
        "bytes_per_value",
    ),
    (
        ch10.check_max_batch,
        lambda m, L, h, kv, d, T, b: m // (_per(m, L, kv, d, T, b) // L),
        "n_layers",
    ),
    (
        ch10.check_max_batch,
        lambda m, L, h, kv, d, T, b: math.ceil(m / _per(m, L, kv, d, T, b)),
        "round down",
    ),
    (ch10.check_max_batch, lambda m, L, h, kv, d, T, b: m / _per(m, L, kv, d, T, b), "expected"),
    (ch10.check_gqa_attention, _gqa_tiled, "wrong order"),
    (ch10.check_gqa_attention, _gqa_unscaled, "1/√d"),
    (ch10.check_mean_pool, _pool_sum, "don't sum"),
    (ch10.check_mean_pool, _pool_strided, "consecutive heads"),
]


@pytest.mark.parametrize(("checker", "wrong", "hint"), MISTAKES)
def test_typical_mistakes_get_their_hint(checker, wrong, hint):
    fb = checker(wrong)
    assert not fb
    assert hint in str(fb), str(fb)


# --- exercise 10.4: the cache of a 5:1 local/global model ---


def local_global_cache(n_layers, n_heads, n_kv_heads, d_head, window, seq_len, bytes_per_value):
    per = 2 * n_kv_heads * d_head * bytes_per_value  # one token, one layer
    n_full = n_layers // 6
    held = (n_layers - n_full) * min(seq_len, window) + n_full * seq_len
    return per * held, per * n_layers * seq_len


def local_global_cache_loop(L, h, kv, d, w, T, b):
    # layer by layer, a list of floats
    local = sum(2 * kv * d * b * (T if i % 6 == 5 else min(T, w)) for i in range(L))
    return [float(local), float(2 * kv * d * b * L * T)]


def _lg(fn):
    """A wrong answer built from the right one's pieces: fn(per, L, n_full, w, T)."""

    def wrong(L, h, kv, d, w, T, b):
        return fn(2 * kv * d * b, L, L // 6, w, T), 2 * kv * d * b * L * T

    return wrong


LOCAL_GLOBAL_RIGHT = [
    local_global_cache,
    local_global_cache_loop,
    lambda *a: np.array(local_global_cache(*a)),
    lambda *a: torch.tensor(local_global_cache(*a), dtype=torch.float64),
]
LOCAL_GLOBAL_WRONG = [
    (_lg(lambda per, L, nf, w, T: per * L * min(T, w)), "every sixth layer is full"),
    (lambda *a: tuple(x / 2 for x in local_global_cache(*a)), "keys AND values"),
    (
        lambda L, h, kv, d, w, T, b: local_global_cache(L, h, h, d, w, T, b),
        "not one per query head",
    ),
    (_lg(lambda per, L, nf, w, T: per * ((L - nf) * w + nf * T)), "while T is still shorter"),
    (_lg(lambda per, L, nf, w, T: per * L * T), "not all T"),
    (
        _lg(lambda per, L, nf, w, T: per * ((L - -(-L // 6)) * min(T, w) + -(-L // 6) * T)),
        "n_layers // 6 full layers",
    ),
]


@pytest.mark.parametrize("right", LOCAL_GLOBAL_RIGHT)
def test_local_global_cache_right_answers_pass(right):
    fb = ch10.check_local_global_cache(right)
    assert fb, str(fb)


@pytest.mark.parametrize(("wrong", "hint"), LOCAL_GLOBAL_WRONG)
def test_local_global_cache_mistakes_are_named(wrong, hint):
    fb = ch10.check_local_global_cache(wrong)
    assert not fb
    assert hint in str(fb), str(fb)
    # exactly one named mistake: the hints tell the mistakes apart
    assert len(fb.hints) == 1, fb.hints


@pytest.mark.parametrize(
    "broken",
    [
        lambda *a: None,
        lambda *a: 1 / 0,
        lambda *a: "lots",
        lambda *a: local_global_cache(*a)[0],  # one number, not the pair
        lambda *a: (*local_global_cache(*a), 0),
        lambda *a: (float("nan"), 1.0),
    ],
)
def test_local_global_cache_broken_answers_get_feedback(broken):
    fb = ch10.check_local_global_cache(broken)
    assert not fb
    assert str(fb)
