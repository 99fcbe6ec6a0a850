"""A catalogue of what learners hand to the checkers of chapters 5-13.

Table-driven, one row per answer: right answers written in other styles (numpy or torch, float32
or float64, loops or vectorised, lists) must pass; typical wrong answers must fail with the hint
that names *their* mistake (a key phrase of it). Rows marked "was:" failed on the checkers before
this catalogue: wrong answers accepted (a too-symmetric fixture, no tie at k, an answer that edits
its input), right float32 answers rejected, central mistakes without their own hint. The shared
runner's time limit must stop a learner's ``except: pass`` loop, and ``sys.exit()`` is named.
"""

from __future__ import annotations

import functools
import math
import sys
import threading
import time

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_utils.exercises import (
    Feedback,
    _learner,
    ch05,
    ch06,
    ch07,
    ch08,
    ch09,
    ch10,
    ch11,
    ch12,
    ch13,
)
from course_utils.positions import alibi_bias, apply_rope, sinusoidal_encoding

T = torch.as_tensor


def _check(checker, answer) -> Feedback:
    fb = checker(answer)
    assert isinstance(fb, Feedback), type(fb)
    return fb


# --- right answers in other styles ---------------------------------------------------------------


def _sinusoid_loops(n, d):
    out = [[0.0] * d for _ in range(n)]
    for p in range(n):
        for i in range(d // 2):
            angle = p / 10000 ** (2 * i / d)
            out[p][2 * i], out[p][2 * i + 1] = math.sin(angle), math.cos(angle)
    return out  # a list of lists


def _rope_numpy(x, positions, base):
    d = x.shape[1]
    theta = base ** (-2 * np.arange(d // 2) / d)  # (d/2,)
    ang = positions[:, None] * theta  # (T, d/2)
    a, b = x[:, : d // 2], x[:, d // 2 :]
    return np.concatenate([a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)], 1)


def _layer_norm_f32(x, gamma, beta, eps):
    x, gamma, beta = x.float(), gamma.float(), beta.float()
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)


def _rms_norm_numpy(x, gamma, eps):
    x = x.numpy()
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * gamma.numpy()


def _pre_ln(x, attn, ffn, norm1, norm2):
    h = x + attn(norm1(x))
    return h + ffn(norm2(h))


def _decoder_block(x, memory, self_attn, cross_attn, ffn, norm1, norm2, norm3):
    x = x + self_attn(norm1(x))
    x = x + cross_attn(norm2(x), memory)
    return x + ffn(norm3(x))


def _cross_attention_numpy(x, memory, W_Q, W_K, W_V):
    q, k, v = (a.numpy() for a in (x @ W_Q, memory @ W_K, memory @ W_V))
    s = q @ k.T / np.sqrt(k.shape[1])
    w = np.exp(s - s.max(1, keepdims=True))
    return (w / w.sum(1, keepdims=True)) @ v


def _window_attention_f32(q, k, v, window):
    q, k, v = (torch.from_numpy(a).float() for a in (q, k, v))
    n = q.shape[0]
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    mask = (j <= i) & (j > i - window)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def _gqa_torch_f32(q, k, v):
    g = q.shape[0] // k.shape[0]
    q, k, v = (torch.from_numpy(a).float() for a in (q, k, v))
    k, v = k.repeat_interleave(g, 0), v.repeat_interleave(g, 0)
    return torch.softmax(q @ k.transpose(1, 2) / q.shape[-1] ** 0.5, -1) @ v


def _merge_torch_f32(m1, l1, m2, l2):
    m1, l1, m2, l2 = (torch.tensor(v, dtype=torch.float32) for v in (m1, l1, m2, l2))
    m = torch.maximum(m1, m2)
    return m, l1 * torch.exp(m1 - m) + l2 * torch.exp(m2 - m)


def _streaming_torch_f32(x, block_size):
    x = torch.from_numpy(np.asarray(x, dtype=np.float32))
    m, total = torch.tensor(-math.inf), torch.tensor(0.0)
    for s in range(0, len(x), block_size):
        part = x[s : s + block_size]
        m_new = torch.maximum(m, part.max())
        if m_new == -math.inf:
            continue
        total = total * torch.exp(m - m_new) + torch.exp(part - m_new).sum()
        m = m_new
    return torch.exp(x - m) / total


def _key_block_f32(Q, K, V, block_k):
    Q, K, V = (torch.from_numpy(a).float() for a in (Q, K, V))
    m = torch.full((Q.shape[0], 1), -math.inf)
    total = torch.zeros(Q.shape[0], 1)
    o = torch.zeros(Q.shape[0], V.shape[1])
    for s in range(0, K.shape[0], block_k):
        scores = Q @ K[s : s + block_k].T / Q.shape[1] ** 0.5
        m_new = torch.maximum(m, scores.max(-1, keepdim=True).values)
        p = torch.exp(scores - m_new)
        total = total * torch.exp(m - m_new) + p.sum(-1, keepdim=True)
        o = o * torch.exp(m - m_new) + p @ V[s : s + block_k]
        m = m_new
    return o / total


def _rollout_loops(maps):
    L, _, n, _ = maps.shape
    R = np.eye(n)
    for layer in range(L):
        A = 0.5 * np.eye(n) + 0.5 * maps[layer].mean(0)
        A = A / A.sum(-1, keepdims=True)
        R = A @ R
    return R.tolist()


RIGHT = [
    (
        "5.1 loops, list",
        ch05.check_sinusoidal,
        _sinusoid_loops,
    ),
    ("5.1 torch float32", ch05.check_sinusoidal, lambda n, d: T(sinusoidal_encoding(n, d)).float()),
    ("5.2 numpy", ch05.check_rope, _rope_numpy),
    (
        "5.2 torch float32",
        ch05.check_rope,
        lambda x, p, base: apply_rope(T(x).float(), T(p), base=base),
    ),
    ("5.3 torch float32", ch05.check_alibi, lambda n, t: alibi_bias(n, t).float()),
    ("5.4 numpy int", ch05.check_learned_parameters, lambda n, d: np.int64(n) * d),
    ("6.1 float32", ch06.check_layer_norm, _layer_norm_f32),
    ("6.2 numpy", ch06.check_rms_norm, _rms_norm_numpy),
    ("6.3 pre-LN", ch06.check_pre_ln_block, _pre_ln),
    (
        "7.1 torch",
        ch07.check_cache_mask,
        lambda t_new, t_past: torch.ones(t_new, t_past + t_new, dtype=torch.bool).tril(t_past),
    ),
    ("7.2 float", ch07.check_kv_cache_bytes, lambda L, h, d, n, b: float(2 * L * h * d * n * b)),
    (
        "7.3 numpy float32 list",
        ch07.check_next_token_probs,
        lambda z, tau: torch.softmax(z.float() / tau, -1).tolist(),
    ),
    ("8.1 numpy", ch08.check_cross_attention, _cross_attention_numpy),
    (
        "8.2 lists",
        ch08.check_padding_mask,
        lambda lengths, t_k: [[j < n for j in range(t_k)] for n in lengths],
    ),
    ("8.3 wiring", ch08.check_decoder_block, _decoder_block),
    (
        "9.1 torch",
        ch09.check_window_mask,
        lambda t, w: (
            torch.ones(t, t, dtype=torch.bool).tril() & ~torch.ones(t, t, dtype=torch.bool).tril(-w)
        ),
    ),
    ("9.2 loop", ch09.check_layers_needed, lambda t, w: -(-(t - 1) // (w - 1)) or 1),
    ("9.3 torch float32", ch09.check_window_attention, _window_attention_f32),
    (
        "10.1 numpy",
        ch10.check_max_batch,
        lambda m, L, h, kv, d, n, b: np.floor_divide(m, 2 * L * kv * d * n * b),
    ),
    ("10.2 torch float32", ch10.check_gqa_attention, _gqa_torch_f32),
    (
        "10.3 torch",
        ch10.check_mean_pool,
        lambda W, h, kv: T(W).reshape(kv, h // kv, -1, W.shape[1]).mean(1).reshape(-1, W.shape[1]),
    ),
    ("11.1 list", ch11.check_cache_values, lambda h, d, dc, dr: [2 * h * d, dc + dr]),
    (
        "11.2 torch float32",
        ch11.check_absorb_query,
        lambda q, W: torch.einsum("hn,hnc->hc", T(q).float(), T(W).float()),
    ),
    (
        "11.4 numpy float32",
        ch11.check_kv_reduction,
        lambda g, m, bits: np.float32(
            1 - m[0] * (m[1] + m[2]) * bits / 8 / (4 * g[0] * g[1] * g[2])
        ),
    ),
    ("12.1 torch float32 (was: rejected)", ch12.check_merge, _merge_torch_f32),
    ("12.2 torch float32", ch12.check_streaming_softmax, _streaming_torch_f32),
    ("12.3 torch float32 loop", ch12.check_key_block_attention, _key_block_f32),
    ("13.1 list", ch13.check_topic_share, lambda w, m: [float(r @ t) for r, t in zip(w, m)]),  # noqa: B905
    ("13.2 loops, list", ch13.check_rollout, _rollout_loops),
    (
        "13.3 torch",
        ch13.check_precision_at_k,
        lambda s, m, k: T(m)[torch.topk(T(s), k).indices].double().mean(),
    ),
]


@pytest.mark.parametrize(("name", "checker", "answer"), RIGHT, ids=[r[0] for r in RIGHT])
def test_right_answers_in_other_styles_pass(name, checker, answer):
    fb = _check(checker, answer)
    assert fb.passed, str(fb)


# --- typical wrong answers, each with the hint that names it ------------------------------------


def _padding_mask_mutating(lengths, t_k):
    for i in range(len(lengths)):  # edits the caller's list: the off-by-one hides in the input
        lengths[i] += 1
    return torch.arange(t_k)[None, :] < torch.as_tensor(lengths)[:, None]


def _decoder_norms_swapped(x, memory, self_attn, cross_attn, ffn, norm1, norm2, norm3):
    x = x + self_attn(norm1(x))
    x = x + cross_attn(norm3(x), memory)
    return x + ffn(norm2(x))


def _decoder_one_norm(x, memory, self_attn, cross_attn, ffn, norm1, norm2, norm3):
    x = x + self_attn(norm1(x))
    x = x + cross_attn(norm1(x), memory)
    return x + ffn(norm1(x))


def _cross_values_from_x(x, memory, W_Q, W_K, W_V):
    q, k, v = x @ W_Q, memory @ W_K, x @ W_V
    return torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1) @ v


def _streaming_no_rescale(x, block_size):
    m, total = -np.inf, 0.0
    for s in range(0, len(x), block_size):
        part = np.asarray(x[s : s + block_size], dtype=np.float64)
        m = max(m, part.max())
        total += np.exp(part - m).sum()  # the old sum is never rescaled
    return np.exp(np.asarray(x, dtype=np.float64) - m) / total


def _key_block_o_not_rescaled(Q, K, V, block_k):
    m = np.full((Q.shape[0], 1), -np.inf)
    total = np.zeros((Q.shape[0], 1))
    o = np.zeros((Q.shape[0], V.shape[1]))
    for s in range(0, K.shape[0], block_k):
        scores = Q @ K[s : s + block_k].T / np.sqrt(Q.shape[1])
        m_new = np.maximum(m, scores.max(-1, keepdims=True))
        p = np.exp(scores - m_new)
        total = total * np.exp(m - m_new) + p.sum(-1, keepdims=True)
        o = o + p @ V[s : s + block_k]  # o is not rescaled
        m = m_new
    return o / total


def _layer_norm_over_tokens(x, gamma, beta, eps):
    mean = x.mean(0, keepdim=True)
    var = ((x - mean) ** 2).mean(0, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def _layer_norm_eps_outside(x, gamma, beta, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / (torch.sqrt(var) + eps) * gamma + beta


def _sinusoid_per_column(n, d):
    p = np.arange(n)[:, None]
    c = np.arange(d)[None, :]
    angle = p / 10000 ** (c / d)
    return np.where(c % 2 == 0, np.sin(angle), np.cos(angle))


WRONG = [
    # (name, checker, answer, key phrase of the hint); "was:" says what the old checker did
    (
        "8.3 norms swapped (was: accepted)",
        ch08.check_decoder_block,
        _decoder_norms_swapped,
        "own LayerNorm",
    ),
    (
        "8.3 one norm for all (was: accepted)",
        ch08.check_decoder_block,
        _decoder_one_norm,
        "own LayerNorm",
    ),
    (
        "8.2 edits lengths (was: accepted)",
        ch08.check_padding_mask,
        _padding_mask_mutating,
        "off by one",
    ),
    (
        "13.3 threshold keeps ties (was: accepted)",
        ch13.check_precision_at_k,
        lambda s, m, k: m[s >= np.sort(s)[-k]].mean(),
        "more than k",
    ),
    (
        "13.3 count, not fraction (was: no hint)",
        ch13.check_precision_at_k,
        lambda s, m, k: m[np.argsort(-s, kind="stable")[:k]].sum(),
        "divided by k",
    ),
    (
        "12.2 sum never rescaled (was: no hint)",
        ch12.check_streaming_softmax,
        _streaming_no_rescale,
        "never rescaled",
    ),
    (
        "12.3 o not rescaled (was: other hint)",
        ch12.check_key_block_attention,
        _key_block_o_not_rescaled,
        "old output o was not rescaled",
    ),
    (
        "12.1 only one sum rescaled",
        ch12.check_merge,
        lambda m1, l1, m2, l2: (max(m1, m2), l1 * math.exp(m1 - max(m1, m2)) + l2),
        "own maximum",
    ),
    (
        "8.1 values from x (was: crash first)",
        ch08.check_cross_attention,
        _cross_values_from_x,
        "values come from memory",
    ),
    (
        "6.1 over the tokens (was: no hint)",
        ch06.check_layer_norm,
        _layer_norm_over_tokens,
        "not over the tokens",
    ),
    (
        "6.1 eps outside the root (was: no hint)",
        ch06.check_layer_norm,
        _layer_norm_eps_outside,
        "inside the square root",
    ),
    (
        "5.1 per-column frequency (was: no hint)",
        ch05.check_sinusoidal,
        _sinusoid_per_column,
        "share one frequency",
    ),
    (
        "7.1 no cached keys (was: no hint)",
        ch07.check_cache_mask,
        lambda t_new, t_past: np.tril(np.ones((t_new, t_new), dtype=bool)),
        "t_past + t_new columns",
    ),
    # mistakes the checkers named before; kept so that they stay named
    ("5.3 positive bias", ch05.check_alibi, lambda n, t: -alibi_bias(n, t), "penalty"),
    (
        "6.3 post-LN",
        ch06.check_pre_ln_block,
        lambda x, a, f, n1, n2: n2((h := n1(x + a(x))) + f(h)),
        "post-LN",
    ),
    (
        "7.2 keys only",
        ch07.check_kv_cache_bytes,
        lambda L, h, d, n, b: L * h * d * n * b,
        "keys AND values",
    ),
    (
        "9.1 plain causal",
        ch09.check_window_mask,
        lambda t, w: np.tri(t, t, dtype=bool),
        "plain causal",
    ),
    (
        "10.2 tile order",
        ch10.check_gqa_attention,
        lambda q, k, v: _gqa_tile(q, k, v),
        "wrong order",
    ),
    (
        "11.1 rope per head",
        ch11.check_cache_values,
        lambda h, d, dc, dr: (2 * h * d, dc + h * dr),
        "SHARED",
    ),
    (
        "12.1 sums added",
        ch12.check_merge,
        lambda m1, l1, m2, l2: (max(m1, m2), l1 + l2),
        "own maximum",
    ),
    (
        "13.1 mean",
        ch13.check_topic_share,
        lambda w, m: (np.asarray(w) * m).mean(-1),
        "averaged over all",
    ),
]


def _gqa_tile(q, k, v):
    g = q.shape[0] // k.shape[0]
    k, v = np.tile(k, (g, 1, 1)), np.tile(v, (g, 1, 1))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize(("name", "checker", "answer", "hint"), WRONG, ids=[w[0] for w in WRONG])
def test_wrong_answers_get_the_hint_that_names_them(name, checker, answer, hint):
    fb = _check(checker, answer)
    assert not fb.passed, name
    assert any(hint in h for h in fb.hints), str(fb)


# --- the shared runner: time limit, sys.exit ----------------------------------------------------


def _swallows_everything(*args):
    x = 0
    while True:
        try:  # noqa: SIM105 - the learner's bare except, which used to swallow the stop
            x += 1
        except:  # noqa: E722
            pass


def _swallows_while_sleeping(*args, seconds=0.01):
    while True:
        try:  # noqa: SIM105
            time.sleep(seconds)
        except:  # noqa: E722
            pass


@pytest.fixture
def short_time_limit(monkeypatch):
    monkeypatch.setattr(_learner, "TIME_LIMIT", 0.3)


@pytest.mark.parametrize("endless", [_swallows_everything, _swallows_while_sleeping])
def test_a_bare_except_cannot_keep_the_learner_running(endless, short_time_limit):
    before = {th for th in threading.enumerate() if th.name == "course-utils-learner"}
    fb = ch13.check_rollout(endless)
    assert "did not return within 0.3 s" in str(fb), str(fb)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        running = {th for th in threading.enumerate() if th.name == "course-utils-learner"}
        if not running - before:
            break
        time.sleep(0.05)
    assert not running - before, "the learner's loop is still running after the time-out"


def test_a_stop_is_requested_once_and_never_after_the_learner_has_finished(monkeypatch):
    """The stop is raised in the worker once: a learner's bare ``except`` that swallows it turns on
    the stop tracer, which ends the loop. A second request could land after the learner's code, in
    the worker's own bookkeeping, and escape the thread (``benchmarks/learner_stop_stress.py``, the
    CPUs oversubscribed: 6 of 1,960 calls did with a request every 2 ms, 0 with one), so there is
    none; and no request is sent once the worker has said it finished."""
    sent = []
    real = _learner._request_stop
    monkeypatch.setattr(
        _learner,
        "_request_stop",
        lambda thread: sent.append(thread) or real(thread),
    )

    # Asleep in C when the stop comes, it lands 0.15 s later, when time.sleep returns; the
    # learner's except swallows it, and the tracer ends the loop at its next line. (Stopping
    # every 2 ms, as before, sent 72 requests here.)
    asleep_in_c = functools.partial(_swallows_while_sleeping, seconds=0.2)
    assert _learner._run_with_time_limit(asleep_in_c, (), 0.05) == {}
    assert len(sent) == 1

    sent.clear()
    finished, gate = threading.Event(), threading.Lock()
    finished.set()
    idle = threading.Thread(target=time.sleep, args=(0.05,))
    idle.start()
    _learner._stop(idle, finished, gate, 1.0)
    assert sent == [] and not idle.is_alive()


@pytest.mark.parametrize("exit_call", [lambda: sys.exit(), lambda: sys.exit(1), lambda: exit()])
def test_sys_exit_is_named_not_a_time_out(exit_call):
    fb = ch09.check_layers_needed(lambda t, w: exit_call())
    assert not fb.passed
    assert any("called sys.exit()" in m for m in fb.messages), str(fb)
    assert not any("did not return" in m for m in fb.messages), str(fb)


def test_every_argument_is_deep_copied():
    """Lists, dicts and tensors too, however nested: the checker keeps untouched originals."""
    args = ([3, 1], {"a": [1]}, torch.zeros(2), (np.zeros(2), [[0]]))
    copies = _learner._private_copy(args)
    copies[0].append(9)
    copies[1]["a"].append(2)
    copies[2].add_(1)
    copies[3][0][:] = 5
    copies[3][1][0].append(1)
    assert args[0] == [3, 1] and args[1] == {"a": [1]} and args[3][1] == [[0]]
    assert float(args[2].sum()) == 0.0 and float(args[3][0].sum()) == 0.0
