"""Chapter 11's checkers: right answers in every form pass, typical mistakes get their hint."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from course_utils.exercises import ch11


def cache_values(h, d, dc, dr):
    return (2 * h * d, dc + dr)


def absorb_query(q_c, w_uk):
    return np.einsum("hn,hnc->hc", q_c, w_uk)


def latent_scores(q_c, q_r, c_kv, k_r, w_uk):
    q_lat = np.einsum("hn,hnc->hc", q_c, w_uk)  # (h, d_c)
    return (q_lat @ c_kv.T + q_r @ k_r.T) / np.sqrt(q_c.shape[1] + q_r.shape[1])


def latent_scores_torch_f32(*args):
    t = [torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in args]
    q_c, q_r, c_kv, k_r, w_uk = t
    k_c = torch.einsum("hnc,sc->hsn", w_uk, c_kv)
    s = torch.einsum("hn,hsn->hs", q_c, k_c) + q_r @ k_r.T
    return s / (q_c.shape[1] + q_r.shape[1]) ** 0.5


@pytest.mark.parametrize(
    ("checker", "fn"),
    [
        (ch11.check_cache_values, cache_values),
        (ch11.check_cache_values, lambda *a: list(cache_values(*a))),
        (ch11.check_absorb_query, absorb_query),
        (ch11.check_absorb_query, lambda q, w: torch.from_numpy(absorb_query(q, w)).float()),
        (ch11.check_latent_scores, latent_scores),
        (ch11.check_latent_scores, latent_scores_torch_f32),
    ],
)
def test_right_answers_pass(checker, fn):
    fb = checker(fn)
    assert fb, str(fb)


@pytest.mark.parametrize(
    ("checker", "fn", "hint"),
    [
        (ch11.check_cache_values, lambda h, d, dc, dr: (h * d, dc + dr), "key AND a value"),
        (ch11.check_cache_values, lambda h, d, dc, dr: (2 * h * d, dc), "cached too"),
        (
            ch11.check_absorb_query,
            lambda q, w: np.broadcast_to(absorb_query(q, w).sum(0), (q.shape[0], w.shape[2])),
            "do not sum over the heads",
        ),
        (
            ch11.check_latent_scores,
            lambda q_c, q_r, c, k_r, w: (
                latent_scores(q_c, q_r, c, k_r, w) * np.sqrt(q_c.shape[1] + q_r.shape[1])
            ),
            "divide by sqrt",
        ),
        (
            ch11.check_latent_scores,
            lambda q_c, q_r, c, k_r, w: latent_scores(q_c, 0 * q_r, c, k_r, w),
            "RoPE part",
        ),
    ],
)
def test_mistakes_get_hints(checker, fn, hint):
    fb = checker(fn)
    assert not fb
    assert hint in str(fb)


@pytest.mark.parametrize(
    "checker", [ch11.check_cache_values, ch11.check_absorb_query, ch11.check_latent_scores]
)
def test_never_raises(checker):
    for answer in (None, 3, lambda *a: ..., lambda *a: 1 / 0, lambda *a: "text"):
        fb = checker(answer)
        assert not fb


def test_hanging_function_is_stopped(monkeypatch):
    from course_utils.exercises import _learner

    monkeypatch.setattr(_learner, "TIME_LIMIT", 0.5)

    def hang(*a):
        while True:
            time.sleep(0.01)

    t0 = time.perf_counter()
    assert not ch11.check_absorb_query(hang)
    assert time.perf_counter() - t0 < 10
