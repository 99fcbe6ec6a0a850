"""Answers a learner really writes, fed to the checkers of chapters 8-14 and the appendix: each
right form passes, each mistake gets feedback that names it (never a traceback), table-driven.

The cases are the ones a fuzzing pass over every checker found wrong: a ``keepdims=True`` answer
against a 1-D result (the transpose test raised ``AxisError``), float32 work returned as float64
(rejected at rtol 1e-6), a list of ``requires_grad`` tensors, ``(l, m)`` for ``(m, l)``, the
natural "no residual" decoder block, ``None`` for a mask, a shape of 2.5 or inf, the all ``-inf``
first block of a streaming softmax, and a right intensity rounded to two decimals.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_utils.exercises import (
    appendix,
    ch01,
    ch04,
    ch05,
    ch06,
    ch07,
    ch08,
    ch09,
    ch10,
    ch12,
    ch13,
    ch14,
)
from course_utils.exercises._checks import check_array, check_softmax
from course_utils.masks import causal_mask, key_padding_mask
from course_utils.sparse.patterns import sliding_window_mask


def _sink_weights(scores, sinks):
    scores = torch.as_tensor(scores)
    sink = torch.as_tensor(sinks).view(-1, 1, 1).expand(*scores.shape[:-1], 1)
    return torch.softmax(torch.cat([scores, sink], -1), -1)[..., :-1]


def _window_in_float32(q, k, v, w):
    q, k, v = (torch.from_numpy(a).float() for a in (q, k, v))
    mask = torch.from_numpy(sliding_window_mask(len(q), window=w))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask).double()


def _key_blocks_in_float32(q, k, v, block):
    q, k, v = (torch.from_numpy(a).float() for a in (q, k, v))
    return (torch.softmax(q @ k.T / q.shape[1] ** 0.5, -1) @ v).double()


RIGHT = [
    ("window attention in float32, returned as float64", ch09.check_window_attention,
     _window_in_float32),
    ("key-block attention in float32, returned as float64", ch12.check_key_block_attention,
     _key_blocks_in_float32),
    ("sink weights as a list of requires_grad tensors", ch14.check_sink_weights,
     lambda s, k: list(_sink_weights(s, k).requires_grad_(True))),
]  # fmt: skip


@pytest.mark.parametrize(("what", "checker", "answer"), RIGHT, ids=[r[0] for r in RIGHT])
def test_a_right_answer_in_another_form_passes(what, checker, answer):
    fb = checker(answer)
    assert fb.passed, f"{what}:\n{fb}"


def _no_shift_streaming_softmax(x, block):
    m, total = -np.inf, 0.0
    for i in range(0, len(x), block):
        part = x[i : i + block]
        m_new = max(m, part.max())
        total = total * np.exp(m - m_new) + np.exp(part - m_new).sum()  # -inf - -inf: nan
        m = m_new
    return np.exp(x - m) / total


def _merge_swapped(m1, l1, m2, l2):
    m = max(m1, m2)
    return l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m), m


def _decoder_without_cross_residual(x, memory, self_attn, cross_attn, ffn, n1, n2, n3):
    x = x + self_attn(n1(x))
    x = cross_attn(n2(x), memory)  # replaces x instead of adding to it
    return x + ffn(n3(x))


def _shape_of(B, h, s, t, last):
    return ((B, h, s, s), (B, h, t, t), (B, h, t, last))


WRONG = [
    ("a keepdims=True topic share", ch13.check_topic_share,
     lambda w, m: (w * m).sum(-1, keepdims=True), "shape", None),
    ("streaming softmax without a guard for a -inf maximum", ch12.check_streaming_softmax,
     _no_shift_streaming_softmax, "", "treat a -inf maximum as 0"),
    ("merge returning (l, m)", ch12.check_merge, _merge_swapped, "", "(m, l) in this order"),
    ("decoder block whose cross-attention replaces x", ch08.check_decoder_block,
     _decoder_without_cross_residual, "", "add cross_attn's output to x"),
    ("None for two masks", ch08.check_encoder_decoder_masks,
     lambda lengths, s, t: (None, causal_mask(t), None), "None", None),
    ("a shape with 2.5 in it", ch08.check_attention_shapes,
     lambda B, h, s, t: _shape_of(B, h, s, t, 2.5), "", None),
    ("a shape with inf in it", ch08.check_attention_shapes,
     lambda B, h, s, t: _shape_of(B, h, s, t, float("inf")), "", None),

    ("a batch axis on the dot product's answer", ch01.check_dot_product,
     lambda q, k: np.outer(q, k), "shape", None),
    ("a batch axis on the next-token probabilities", ch07.check_next_token_probs,
     lambda z, temp: torch.softmax(z[None] / temp, -1), "shape", None),
    ("the cache without bytes_per_value", ch07.check_kv_cache_bytes,
     lambda L, h, d, T, b: 2 * L * h * d * T, "", "multiply by bytes_per_value"),
    ("the cache mask with True for 'blocked'", ch07.check_cache_mask,
     lambda t_new, t_past: ~np.tril(np.ones((t_new, t_past + t_new), dtype=bool), k=t_past),
     "", "the polarity is inverted"),
    ("max batch with / instead of //", ch10.check_max_batch,
     lambda m, L, h, kv, d, T, b: m / (2 * L * kv * d * T * b), "your answer is", "floor division"),
    ("one wrong number", ch09.check_layers_needed, lambda t, w: 1, "your answer is 1", None),
    ("an additive 0/-inf mask for nn.MultiheadAttention", ch04.check_torch_mask,
     lambda m: torch.zeros(m.shape).masked_fill(~m, float("-inf")), "", "works in PyTorch too"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("what", "checker", "answer", "message", "hint"), WRONG, ids=[w[0] for w in WRONG]
)
def test_a_typical_mistake_gets_its_own_feedback(what, checker, answer, message, hint):
    fb = checker(answer)
    text = str(fb)
    assert not fb.passed, what
    assert "could not check" not in text and "Error" not in text, f"{what}:\n{text}"
    assert message in "\n".join(fb.messages), f"{what}:\n{text}"
    if hint is not None:
        assert any(hint in h for h in fb.hints), f"{what}:\n{text}"


def test_an_answer_with_more_axes_than_the_expected_one_gets_a_shape_message():
    for fb in (
        check_softmax(np.array([[0.5, 0.5]]), [1.0, 1.0]),
        check_array("n", [[10]], np.array(10)),
    ):
        assert not fb.passed
        assert "shape" in "\n".join(fb.messages), str(fb)


def test_a_right_intensity_rounded_to_two_decimals_is_not_told_to_count_more_numbers():
    """At m = k = 4096, n = 1 counting the weights alone gives 1.0, 0.05 % from the answer: the
    first case is one where the two are far apart, so rounding gets no misleading hint."""

    def rounded(m, k, n, b):
        return round(2 * m * k * n / ((m * k + k * n + m * n) * b), 2)

    def weights_only(m, k, n, b):
        return 2 * m * k * n / (m * k * b)

    fb = appendix.check_intensity(rounded)
    assert not fb.passed and not fb.hints, str(fb)
    fb = appendix.check_intensity(weights_only)
    assert any("both inputs and the output" in h for h in fb.hints), str(fb)


def test_key_padding_and_causal_masks_still_pass_the_mask_checker():
    def masks(lengths, s, t):
        pad = key_padding_mask(lengths, s)[:, None, :]
        return pad, causal_mask(t), pad

    assert ch08.check_encoder_decoder_masks(masks).passed


# --- chapters 1-7 ----------------------------------------------------------------------------


def test_a_float32_interpolated_angle_returned_as_a_python_float_passes():
    """transformers computes the frequencies in float32: the angle it gives is right."""

    def float32_angle(m, i, d, base, factor):
        inv_freq = 1.0 / base ** (torch.arange(0, d, 2).float() / d)  # (d/2,), float32
        return float(m / factor * inv_freq[i])

    assert ch05.check_interpolated_angle(float32_angle).passed


@pytest.mark.parametrize(("answer", "passed"), [
    (134.5e6, True), (1.345e8, True), (134_515_008, True), (134_500_000.5, False),
    (134_515_009, False), (140e6, False),
])  # fmt: skip
def test_a_rounded_whole_count_of_smollm2s_parameters_is_accepted(answer, passed):
    assert bool(ch06.check_smollm2_parameters(answer)) is passed
