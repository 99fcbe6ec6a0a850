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
