"""Chapter 8 checkers: right answers in several styles pass, typical mistakes get their hint."""

from __future__ import annotations

import numpy as np
import torch

from course_utils.exercises import Feedback, ch08


def _xattn(x, memory, W_Q, W_K, W_V):
    q, k, v = x @ W_Q, memory @ W_K, memory @ W_V
    return torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1) @ v


def test_cross_attention_right_answers():
    assert ch08.check_cross_attention(_xattn)
    assert ch08.check_cross_attention(lambda *a: _xattn(*a).float())
    assert ch08.check_cross_attention(lambda *a: _xattn(*a).numpy().tolist())
    assert ch08.check_cross_attention(lambda *a: _xattn(*a).requires_grad_())


def test_cross_attention_mistakes():
    def self_attn(x, memory, W_Q, W_K, W_V):
        return _xattn(x, x, W_Q, W_K, W_V)

    def unscaled(x, memory, W_Q, W_K, W_V):
        return torch.softmax((x @ W_Q) @ (memory @ W_K).T, -1) @ (memory @ W_V)

    fb = ch08.check_cross_attention(self_attn)
    assert not fb and "self-attention" in fb.hints[0]
    fb = ch08.check_cross_attention(unscaled)
    assert not fb and "√d_k" in fb.hints[0]


def test_padding_mask():
    ok = lambda lengths, t_k: np.arange(t_k)[None] < np.asarray(lengths)[:, None]  # noqa: E731
    assert ch08.check_padding_mask(ok)
    assert ch08.check_padding_mask(lambda n, t: ok(n, t).astype(int))
    fb = ch08.check_padding_mask(lambda n, t: ~ok(n, t))
    assert not fb and "True means" in fb.hints[0]
    fb = ch08.check_padding_mask(lambda n, t: np.arange(t)[None] <= np.asarray(n)[:, None])
    assert not fb and "off by one" in fb.hints[0]


def test_decoder_block_mistakes():
    def post(x, memory, sa, ca, ffn, n1, n2, n3):
        x = n1(x + sa(x))
        x = n2(x + ca(x, memory))
        return n3(x + ffn(x))

    def normed(x, memory, sa, ca, ffn, n1, n2, n3):
        x = x + sa(n1(x))
        x = x + ca(n2(x), n2(memory))
        return x + ffn(n3(x))

    fb = ch08.check_decoder_block(post)
    assert not fb and "post-LN" in fb.hints[0]
    fb = ch08.check_decoder_block(normed)
    assert not fb and "memory" in fb.hints[0]


def test_odd_answers_get_feedback_not_tracebacks():
    for checker in (ch08.check_cross_attention, ch08.check_padding_mask, ch08.check_decoder_block):
        for answer in (None, "text", lambda *a: "text", lambda *a: 1 / 0, lambda *a: None):
            fb = checker(answer)
            assert isinstance(fb, Feedback) and not fb


def test_endless_answers_are_stopped(monkeypatch):
    from course_utils.exercises import _learner

    monkeypatch.setattr(_learner, "TIME_LIMIT", 0.3)

    def endless(*args):
        while True:
            pass

    for checker in (ch08.check_cross_attention, ch08.check_padding_mask, ch08.check_decoder_block):
        fb = checker(endless)
        assert not fb and any("did not return" in m for m in fb.messages)


# --- exercises 8.5 and 8.6: the three attentions of an encoder–decoder ----------------------------

import pytest  # noqa: E402

from course_utils.masks import causal_mask, key_padding_mask  # noqa: E402


def shapes(B, h, s, q):
    return (B, h, s, s), (B, h, q, q), (B, h, q, s)


@pytest.mark.parametrize(
    "answer",
    [
        shapes,
        lambda B, h, s, q: [list(x) for x in shapes(B, h, s, q)],
        lambda B, h, s, q: [torch.Size(x) for x in shapes(B, h, s, q)],
        lambda B, h, s, q: [np.array(x) for x in shapes(B, h, s, q)],
    ],
    ids=["tuples", "lists", "torch.Size", "numpy"],
)
def test_attention_shapes_right(answer):
    assert ch08.check_attention_shapes(answer)


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda B, h, s, q: (shapes(B, h, s, q)[0], shapes(B, h, s, q)[1], (B, h, s, q)),
         "the queries come from the decoder"),
        (lambda B, h, s, q: (shapes(B, h, s, q)[0], shapes(B, h, s, q)[1], (B, h, q, q)),
         "the last axis is t_src"),
        (lambda B, h, s, q: ((B, s, s), (B, q, q), (B, q, s)), "keep the heads axis"),
        (lambda B, h, s, q: (shapes(B, h, s, q)[0], (B, h, s, s), shapes(B, h, s, q)[2]),
         "its own output steps"),
        (lambda B, h, s, q: ((B, h, q, q), *shapes(B, h, s, q)[1:]), "over the source"),
        (lambda B, h, s, q: shapes(B, h, s, q)[:2], "in this order"),
    ],
)  # fmt: skip
def test_attention_shapes_mistakes(answer, hint):
    fb = ch08.check_attention_shapes(answer)
    assert not fb and hint in fb.hints[0]


def masks(lengths, s, q):
    pad = key_padding_mask(lengths, s)[:, None, :]  # (B, 1, s)
    return pad, causal_mask(q), pad


@pytest.mark.parametrize(
    "answer",
    [
        masks,
        lambda lengths, s, q: tuple(torch.from_numpy(np.array(m)) for m in masks(lengths, s, q)),
        lambda lengths, s, q: (
            np.broadcast_to(masks(lengths, s, q)[0], (len(lengths), s, s)),
            np.broadcast_to(causal_mask(q), (len(lengths), q, q)).astype(int),
            np.broadcast_to(masks(lengths, s, q)[2], (len(lengths), q, s)),
        ),
        lambda lengths, s, q: (
            masks(lengths, s, q)[0][:, None],  # (B, 1, 1, s): a heads axis
            causal_mask(q),
            masks(lengths, s, q)[2][:, None],
        ),
    ],
    ids=["compact", "torch", "full-int", "heads-axis"],
)
def test_encoder_decoder_masks_right(answer):
    assert ch08.check_encoder_decoder_masks(answer)


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda L, s, q: (np.ones((s, s), bool), *masks(L, s, q)[1:]), "padding either"),
        (lambda L, s, q: (masks(L, s, q)[0] & causal_mask(s), *masks(L, s, q)[1:]),
         "no causal mask, only padding"),
        (lambda L, s, q: (key_padding_mask(L, s)[:, :, None], *masks(L, s, q)[1:]),
         "not the queries"),
        (lambda L, s, q: (masks(L, s, q)[0], np.ones((q, q), bool), masks(L, s, q)[2]),
         "is causal"),
        (lambda L, s, q: (masks(L, s, q)[0], ~causal_mask(q), masks(L, s, q)[2]),
         "keeps the past"),
        (lambda L, s, q: (*masks(L, s, q)[:2], causal_mask(q, s)), "not causal"),
        (lambda L, s, q: (*masks(L, s, q)[:2], np.ones((q, s), bool)), "padding keys too"),
        (lambda L, s, q: (*masks(L, s, q)[:2], np.ones((q, q), bool)), "broadcast"),
    ],
)  # fmt: skip
def test_encoder_decoder_masks_mistakes(answer, hint):
    fb = ch08.check_encoder_decoder_masks(answer)
    assert not fb and hint in (fb.hints[0] if fb.hints else "") + " ".join(fb.messages)


@pytest.mark.parametrize("checker", [ch08.check_attention_shapes, ch08.check_encoder_decoder_masks])
@pytest.mark.parametrize("answer", [..., None, "abc", lambda *a: 1 / 0, lambda *a: (1, 2, 3)])
def test_new_checkers_never_raise(checker, answer):
    assert not checker(answer)


# --- exercise 8.7: the cross-attention K/V multiplies, with and without a cached source ----------


def kv_multiplies(d, s, n, layers):
    once = layers * 2 * s * d * d  # every block: s rows through W_K and W_V
    return n * once, once


@pytest.mark.parametrize(
    "answer",
    [
        kv_multiplies,
        lambda d, s, n, layers: [float(v) for v in kv_multiplies(d, s, n, layers)],
        lambda d, s, n, layers: tuple(np.int64(v) for v in kv_multiplies(d, s, n, layers)),
        lambda d, s, n, layers: tuple(torch.tensor(v) for v in kv_multiplies(d, s, n, layers)),
    ],
    ids=["ints", "floats", "numpy", "torch"],
)
def test_cross_kv_multiplies_right(answer):
    assert ch08.check_cross_kv_multiplies(answer)


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda d, s, n, L: (n * L * s * d * d, L * s * d * d), "count K and V both"),
        (lambda d, s, n, L: (n * L * 2 * s * s * d, L * 2 * s * s * d), "not t_src²"),
        (lambda d, s, n, L: (n * 2 * s * d * d, 2 * s * d * d), "multiply by n_layers"),
        (lambda d, s, n, L: (n * L * 2 * s * d * d, 2 * s * d * d), "multiply by n_layers"),
        (lambda d, s, n, L: (n * L * 2 * s * d, L * 2 * s * d), "not d_model"),
        (lambda d, s, n, L: (L * 2 * s * d * d,) * 2, "again at every step"),
        (lambda d, s, n, L: (n * L * 2 * s * d * d,) * 2, "once per source"),
        (lambda d, s, n, L: kv_multiplies(d, s, n, L)[::-1], "in this order"),
    ],
)  # fmt: skip
def test_cross_kv_multiplies_mistakes(answer, hint):
    fb = ch08.check_cross_kv_multiplies(answer)
    assert not fb and hint in fb.hints[0]


def test_cross_kv_multiplies_mistakes_are_told_apart_in_every_case():
    """No two named mistakes give the same number in a case, so each gets its own hint."""
    for d, s, n, L in ((32, 8, 9, 3), (512, 64, 20, 6), (16, 5, 3, 4)):
        once = L * 2 * s * d * d
        without = n * once
        candidates = [without, once, without / 2, once / 2, n * L * 2 * s * s * d,
                      L * 2 * s * s * d, n * 2 * s * d * d, 2 * s * d * d, n * L * 2 * s * d,
                      L * 2 * s * d]  # fmt: skip
        assert len(set(candidates)) == len(candidates)


@pytest.mark.parametrize(
    "answer", [..., None, "abc", lambda *a: 1 / 0, lambda *a: 5, lambda *a: ("x", "y"),
               lambda *a: (1, 2, 3), lambda *a: (float("nan"), 1.0)]
)  # fmt: skip
def test_cross_kv_multiplies_never_raises(answer):
    assert not ch08.check_cross_kv_multiplies(answer)
