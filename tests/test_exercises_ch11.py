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


def equivalent_mqa(h, d, dc, dr):
    return (dc + dr, dc, dc + dr)


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
        (ch11.check_equivalent_mqa, equivalent_mqa),
        (ch11.check_equivalent_mqa, lambda *a: list(equivalent_mqa(*a))),
        (ch11.check_equivalent_mqa, lambda *a: np.array(equivalent_mqa(*a))),
        (ch11.check_equivalent_mqa, lambda *a: torch.tensor(equivalent_mqa(*a)).float()),
        (ch11.check_equivalent_mqa, lambda h, d, dc, dr: (float(dc + dr), np.int64(dc), dc + dr)),
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
        (ch11.check_equivalent_mqa, lambda h, d, dc, dr: (d + dr, dc, dc + dr), "a head's d_h"),
        (ch11.check_equivalent_mqa, lambda h, d, dc, dr: (dc, dc, dc), "(and of the cache)"),
        (ch11.check_equivalent_mqa, lambda h, d, dc, dr: (dc, dc, dc + dr), "not d_c"),
        (ch11.check_equivalent_mqa, lambda h, d, dc, dr: (dc + dr, d, dc + dr), "W^UV went"),
        (ch11.check_equivalent_mqa, lambda h, d, dc, dr: (dc + dr, dc, dc + h * dr), "SHARED"),
        (ch11.check_equivalent_mqa, lambda h, d, dc, dr: (dc + dr, dc, 2 * dc + dr), "ONCE"),
    ],
)
def test_mistakes_get_hints(checker, fn, hint):
    fb = checker(fn)
    assert not fb
    assert hint in str(fb)


@pytest.mark.parametrize(
    "checker",
    [
        ch11.check_cache_values,
        ch11.check_absorb_query,
        ch11.check_latent_scores,
        ch11.check_equivalent_mqa,
    ],
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


# --- exercise 11.4: MLA alone at 16 bits against DeepSeek-V2's reported 93.3% ---


def kv_reduction(gqa, mla, bits, *, kv=2, rope=True, latents=1, gqa_bits=16, bits_per_byte=8):
    n_layers, n_kv_heads, d_head = gqa
    gqa_bytes = kv * n_layers * n_kv_heads * d_head * gqa_bits / 8
    n_layers, d_c, d_rope = mla
    mla_bytes = n_layers * (latents * d_c + rope * d_rope) * bits / bits_per_byte
    return 1 - mla_bytes / gqa_bytes


def test_kv_reduction_gives_82_percent_at_16_bits_and_the_papers_93_3_at_6():
    ds67, v2 = (95, 8, 128), (60, 512, 64)
    assert f"{kv_reduction(ds67, v2, 16):.1%}" == "82.2%"
    assert f"{kv_reduction(ds67, v2, 6):.1%}" == "93.3%"


@pytest.mark.parametrize(
    "fn",
    [
        kv_reduction,
        lambda g, m, b: np.float64(kv_reduction(g, m, b)),
        lambda g, m, b: torch.tensor(kv_reduction(g, m, b), dtype=torch.float32),
        lambda g, m, b: np.array([kv_reduction(g, m, b)], dtype=np.float32),
        lambda g, m, b: round(kv_reduction(g, m, b), 3),  # three decimals are enough
        lambda g, m, b: 1 - m[0] * (m[1] + m[2]) * b / (2 * g[0] * g[1] * g[2] * 16),  # in bits
    ],
    ids=["float", "numpy", "torch-f32", "array-f32", "rounded", "bits"],
)
def test_kv_reduction_right_answers_pass(fn):
    fb = ch11.check_kv_reduction(fn)
    assert fb, str(fb)


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (lambda g, m, b: 1 - kv_reduction(g, m, b), "fraction KEPT"),
        (lambda g, m, b: 100 * kv_reduction(g, m, b), "not a percentage"),
        (lambda g, m, b: kv_reduction(g, m, b, kv=1), "a key AND a value per KV head"),
        (lambda g, m, b: kv_reduction(g, m, b, rope=False), "RoPE key k^R is cached too"),
        (lambda g, m, b: kv_reduction(g, m, b, latents=2), "ONE latent"),
        (lambda g, m, b: kv_reduction(g, m, b, gqa_bits=b), "the GQA cache stays at 16 bits"),
        (lambda g, m, b: kv_reduction(g, m, b, bits_per_byte=1), "bits / 8 bytes"),
        (lambda g, m, b: kv_reduction(g, m, 16), "the MLA cache holds `bits`-bit numbers"),
    ],
    ids=["kept", "percent", "no-v", "no-rope", "two-latents", "both-quantized", "bits", "16-bit"],
)
def test_kv_reduction_mistakes_are_named(fn, hint):
    fb = ch11.check_kv_reduction(fn)
    assert not fb
    assert hint in str(fb), str(fb)


def test_kv_reduction_hard_coded_and_broken_answers_get_feedback():
    hard_coded = ch11.check_kv_reduction(lambda g, m, b: 0.822)
    assert not hard_coded and "bits = 6" in str(hard_coded)
    for fn, text in [
        (lambda g, m, b: None, "returned None"),
        (lambda g, m, b: [0.8, 0.9], "expected one number"),
        (lambda g, m, b: "82%", "expected one number"),
        (lambda g, m, b: 1 / 0, "ZeroDivisionError"),
        (..., "still Ellipsis"),
    ]:
        fb = ch11.check_kv_reduction(fn)
        assert not fb and text in str(fb), str(fb)


# --- exercise 11.5: MLA after absorption is MQA: its widths and its cache ---


def test_equivalent_mqa_hard_coded_and_broken_answers_get_feedback():
    hard_coded = ch11.check_equivalent_mqa(lambda h, d, dc, dr: (576, 512, 576))
    assert not hard_coded and "d_latent_kv = 256" in str(hard_coded)
    for fn, text in [
        (lambda *a: None, "None"),
        (lambda *a: (576, 512), "shape"),
        (lambda *a: "576", ""),
        (lambda *a: 1 / 0, "ZeroDivisionError"),
        (..., "Ellipsis"),
    ]:
        fb = ch11.check_equivalent_mqa(fn)
        assert not fb and text in str(fb), str(fb)
