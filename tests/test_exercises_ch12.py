"""Exercises of chapter 12: worked solutions pass; starter code and typical mistakes get specific
feedback; nothing raises on a wrong answer."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from course_utils.exercises import Feedback, ch12


def _merge(m1, l1, m2, l2):
    m = max(m1, m2)
    return m, l1 * np.exp(m1 - m) + l2 * np.exp(m2 - m)


def _streaming_softmax(x, block_size):
    x = np.asarray(x)
    m, total = -np.inf, 0.0
    for s in range(0, len(x), block_size):
        block = x[s : s + block_size]
        m_new = max(m, block.max())
        shift = m_new if np.isfinite(m_new) else 0.0
        total = total * np.exp(m - shift) + np.exp(block - shift).sum()
        m = m_new
    return np.exp(x - m) / total


def _key_block_attention(Q, K, V, block_k):
    Q = np.asarray(Q) / math.sqrt(Q.shape[-1])
    m = np.full((Q.shape[0], 1), -np.inf)
    l = np.zeros((Q.shape[0], 1))  # noqa: E741
    o = np.zeros((Q.shape[0], V.shape[-1]))
    for s in range(0, K.shape[0], block_k):
        scores = Q @ K[s : s + block_k].T
        m_new = np.maximum(m, scores.max(axis=-1, keepdims=True))
        p = np.exp(scores - m_new)
        alpha = np.exp(m - m_new)
        l = l * alpha + p.sum(axis=-1, keepdims=True)  # noqa: E741
        o = o * alpha + p @ V[s : s + block_k]
        m = m_new
    return o / l


def _starter(*args, **kwargs): ...


def test_solutions_pass():
    for fb in (
        ch12.check_merge(_merge),
        ch12.check_streaming_softmax(_streaming_softmax),
        ch12.check_key_block_attention(_key_block_attention),
    ):
        assert isinstance(fb, Feedback) and fb.passed, str(fb)


def test_torch_answers_are_accepted():
    def torch_attention(Q, K, V, block_k):
        return torch.tensor(_key_block_attention(Q, K, V, block_k), requires_grad=True)

    assert ch12.check_key_block_attention(torch_attention).passed
    assert ch12.check_merge(lambda *a: tuple(torch.tensor(x) for x in _merge(*a))).passed
    assert ch12.check_streaming_softmax(
        lambda x, b: _streaming_softmax(x, b).astype(np.float32)
    ).passed


@pytest.mark.parametrize(
    "checker", [ch12.check_merge, ch12.check_streaming_softmax, ch12.check_key_block_attention]
)
@pytest.mark.parametrize("answer", [..., None, _starter, 3, lambda *a: 1 / 0])
def test_starters_and_crashes_give_feedback(checker, answer):
    fb = checker(answer)
    assert isinstance(fb, Feedback) and not fb.passed
    assert fb.messages


def test_merge_mistakes_are_named():
    no_rescale = ch12.check_merge(lambda m1, l1, m2, l2: (max(m1, m2), l1 + l2))
    assert "rescale l1" in " ".join(no_rescale.hints)
    inverse = ch12.check_merge(
        lambda m1, l1, m2, l2: (
            max(m1, m2),
            l1 * math.exp(max(m1, m2) - m1) + l2 * math.exp(max(m1, m2) - m2),
        )
    )
    assert "not its inverse" in " ".join(inverse.hints)
    wrong_max = ch12.check_merge(lambda m1, l1, m2, l2: (min(m1, m2), l1 + l2))
    assert "larger of the two maxima" in " ".join(wrong_max.hints)
    not_a_pair = ch12.check_merge(lambda m1, l1, m2, l2: m1)
    assert "expected a pair" in not_a_pair.messages[0]


def test_streaming_softmax_mistakes():
    def nan_on_all_inf_block(x, block_size):
        x = np.asarray(x)
        m, total = -np.inf, 0.0
        for s in range(0, len(x), block_size):
            block = x[s : s + block_size]
            m_new = max(m, block.max())
            total = total * np.exp(m - m_new) + np.exp(block - m_new).sum()
            m = m_new
        return np.exp(x - m) / total

    fb = ch12.check_streaming_softmax(nan_on_all_inf_block)
    assert not fb.passed and "-inf" in fb.messages[0]
    naive = ch12.check_streaming_softmax(lambda x, b: np.exp(x) / np.exp(x).sum())
    assert not naive.passed and naive.hints


def test_key_block_attention_mistakes():
    def no_rescale(Q, K, V, block_k):
        Q = Q / math.sqrt(Q.shape[-1])
        l = np.zeros((Q.shape[0], 1))  # noqa: E741
        o = np.zeros((Q.shape[0], V.shape[-1]))
        m = (Q @ K[:block_k].T).max(axis=-1, keepdims=True)  # first block's max, never updated
        for s in range(0, K.shape[0], block_k):
            p = np.exp(Q @ K[s : s + block_k].T - m)
            l = l + p.sum(axis=-1, keepdims=True)  # noqa: E741
            o = o + p @ V[s : s + block_k]
        return o / l

    fb = ch12.check_key_block_attention(no_rescale)
    assert not fb.passed and fb.hints
    unnormalised = ch12.check_key_block_attention(
        lambda Q, K, V, b: _key_block_attention(Q, K, V, b) * 2.0
    )
    assert not unnormalised.passed
    wrong_shape = ch12.check_key_block_attention(lambda Q, K, V, b: np.zeros((2, 2)))
    assert "shape" in wrong_shape.messages[0]


# --- exercise 12.4: slow-memory reads for a block size (a count derived on paper) ---------------


def _hbm_reads(n, d, block_q):
    return n * d + math.ceil(n / block_q) * 2 * n * d


@pytest.mark.parametrize(
    "answer",
    [
        _hbm_reads,
        lambda n, d, b: float(_hbm_reads(n, d, b)),
        lambda n, d, b: np.int64(n * d + -(-n // b) * 2 * n * d),  # ceil by floor division
        lambda n, d, b: torch.tensor(_hbm_reads(n, d, b), dtype=torch.float64),
    ],
)
def test_hbm_reads_accepts_every_right_form(answer):
    fb = ch12.check_hbm_reads(answer)
    assert fb, str(fb)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda n, d, b: n * d + n / b * 2 * n * d, "round n / block_q up"),
        (lambda n, d, b: n * d + math.ceil(n / b) * n * d, "keys AND the values"),
        (lambda n, d, b: math.ceil(n / b) * 2 * n * d, "queries are read too"),
        (lambda n, d, b: 2 * n * d + math.ceil(n / b) * 2 * n * d, "only reads are counted"),
        (lambda n, d, b: 3 * n * d, "once per query block"),
    ],
)
def test_hbm_reads_names_the_mistake(wrong, hint):
    fb = ch12.check_hbm_reads(wrong)
    assert not fb
    assert hint in str(fb), str(fb)


@pytest.mark.parametrize("answer", [..., None, _starter, 3, lambda *a: 1 / 0])
def test_hbm_reads_broken_answers_get_feedback(answer):
    fb = ch12.check_hbm_reads(answer)
    assert isinstance(fb, Feedback) and not fb.passed and fb.messages


# --- exercise 12.5: blocks and wasted slots of a paged KV cache (predicted, then counted) -------


def _paged_blocks(lengths, block_size):
    blocks = sum(math.ceil(n / block_size) for n in lengths)
    return blocks, blocks * block_size - sum(lengths)


@pytest.mark.parametrize(
    "answer",
    [
        _paged_blocks,
        lambda ls, b: tuple(float(x) for x in _paged_blocks(ls, b)),
        lambda ls, b: list(_paged_blocks(ls, b)),
        lambda ls, b: (
            int(np.ceil(np.array(ls) / b).sum()),
            int((np.ceil(np.array(ls) / b) * b - np.array(ls)).sum()),
        ),
        lambda ls, b: tuple(torch.tensor(x) for x in _paged_blocks(ls, b)),
    ],
)
def test_paged_blocks_accepts_every_right_form(answer):
    fb = ch12.check_paged_blocks(answer)
    assert fb, str(fb)


def _floor(ls, b):
    blocks = sum(n // b for n in ls)
    return blocks, blocks * b - sum(ls)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (_floor, "forgot the last, partial block"),
        (lambda ls, b: (sum(round(n / b) for n in ls), 0), "rounded to the nearest block"),
        (lambda ls, b: (math.ceil(sum(ls) / b), 0), "sequences do not share blocks"),
        (
            lambda ls, b: (_paged_blocks(ls, b)[0], sum(b - n % b for n in ls)),
            "wastes 0 slots, not block_size",
        ),
        (
            lambda ls, b: (_paged_blocks(ls, b)[0], sum(n % b for n in ls)),
            "the tokens in each last, partial block",
        ),
        (
            lambda ls, b: (_paged_blocks(ls, b)[0], _paged_blocks(ls, b)[1] / sum(ls)),
            "counted the waste per token",
        ),
        (
            lambda ls, b: (_paged_blocks(ls, b)[0], len(ls) * max(ls) - sum(ls)),
            "the waste of a contiguous cache",
        ),
        (
            lambda ls, b: (
                _paged_blocks(ls, b)[0],
                [math.ceil(n / b) * b - n for n in ls],
            ),
            "add up the empty slots of all the sequences",
        ),
    ],
)
def test_paged_blocks_names_the_mistake(wrong, hint):
    fb = ch12.check_paged_blocks(wrong)
    assert not fb
    assert hint in str(fb), str(fb)


@pytest.mark.parametrize(
    "answer", [..., None, _starter, 3, lambda *a: 1 / 0, lambda ls, b: ("a", "b")]
)
def test_paged_blocks_broken_answers_get_feedback(answer):
    fb = ch12.check_paged_blocks(answer)
    assert isinstance(fb, Feedback) and not fb.passed and fb.messages
