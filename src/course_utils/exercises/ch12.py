"""Checkers for the exercises of chapter 12, "Efficient exact attention: online softmax and tiling".

Each checker runs the learner's answer on its own seeded cases, compares it with ``course_utils``
and returns a :class:`Feedback`; it never raises on a wrong answer, so the notebook runs top to
bottom with the starter code (``...``).

- :func:`check_merge`: ``merge(m1, l1, m2, l2) -> (m, l)``, combining two partial softmax
  normalisers (the heart of the online softmax);
- :func:`check_streaming_softmax`: ``streaming_softmax(x, block_size)``, the softmax of a 1-D row
  read block by block;
- :func:`check_key_block_attention`: ``key_block_attention(Q, K, V, block_k)``, attention that
  visits the keys and values one block at a time, keeping the running ``(m, l, o)`` per query;
- :func:`check_hbm_reads`: ``hbm_reads(n, d, block_q)``, the numbers the query-block loop of
  section 12.3 reads from slow memory (a count derived on paper);
- :func:`check_paged_blocks`: ``paged_blocks(lengths, block_size) -> (blocks, wasted)``, the
  blocks a paged KV cache gives a batch of sequences and the slots they leave empty.

>>> def merge(m1, l1, m2, l2):
...     m = max(m1, m2)
...     return m, l1 * np.exp(m1 - m) + l2 * np.exp(m2 - m)
>>> bool(check_merge(merge))
True
>>> print(check_merge(lambda m1, l1, m2, l2: (max(m1, m2), l1 + l2)))
✗ merge: not yet right
  - on two halves with maxima 2 and 5: l is 2.37, expected 1.07
  hint: each sum was taken under its own maximum: rescale l1 by exp(m1 - m) and l2 by exp(m2 - m)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..attention import scaled_dot_product_attention
from ..flash import merge_normalisers
from ..i18n import t
from ..kv_cache import blocks_needed
from ..softmax import softmax
from ._checks import (
    Mistake,
    answer_tolerance,
    as_answer_array,
    check_array,
    check_number,
    check_softmax,
    format_pair,
    not_a_pair,
)
from ._feedback import Feedback
from ._learner import run_cases

__all__ = [
    "check_hbm_reads",
    "check_key_block_attention",
    "check_merge",
    "check_paged_blocks",
    "check_streaming_softmax",
]

_SEED = 2022


def _on_case(title: str, described: str, fb: Feedback) -> Feedback:
    """This chapter names the failing test case in its first message: "on <case>: ..."."""
    messages = (
        tuple(
            t("on {described}: {message}", described=described, message=m) for m in fb.messages[:1]
        )
        + fb.messages[1:]
    )
    return Feedback(fb.passed, title, messages, fb.hints)


def _normaliser(x: np.ndarray) -> tuple[float, float]:
    """(max, Σ exp(x - max)) of a 1-D row, computed in one go (the reference)."""
    m = float(np.max(x))
    return m, float(np.exp(x - m).sum())


def _or_hint(fb: Feedback, hint: str | None) -> Feedback:
    """``fb``, with ``hint`` if it failed and no typical mistake was recognised."""
    if fb or fb.hints or hint is None:
        return fb
    return Feedback(False, fb.title, fb.messages, (hint,))


def _has_nan(result: Any) -> bool:
    """Whether a numeric answer holds a nan (False for one that is not numeric)."""
    try:
        return bool(np.isnan(as_answer_array(result, "weights").astype(np.float64)).any())
    except (TypeError, ValueError):
        return False


def _low_precision(result: Any, name: str) -> bool:
    """Whether the answer is float32 (or float16): it gets a tolerance its precision can meet."""
    try:
        return np.finfo(as_answer_array(result, name).dtype).bits < 64
    except (TypeError, ValueError):
        return False


# --- exercise 12.1 ---------------------------------------------------------------------------


def _merge_cases() -> list[tuple[str, tuple[float, ...], tuple[float, float]]]:
    """``(described, (m1, l1, m2, l2), (m, l) of the whole row)``."""
    halves = [
        (np.array([2.0, 1.0]), np.array([5.0, 0.0]), "two halves with maxima 2 and 5"),
        (np.array([5.0, 0.0]), np.array([2.0, 1.0]), "the same halves in the other order"),
        (np.array([1e4, 0.0]), np.array([-1e4, 3.0]), "halves with scores of ±1e4"),
        (np.array([3.0]), np.array([3.0, 3.0]), "two halves with the same maximum"),
    ]
    # The expected pair is the package's merge (tested against the whole row's normaliser).
    return [
        (
            described,
            (*_normaliser(a), *_normaliser(b)),
            _float_pair(*_normaliser(a), *_normaliser(b)),
        )
        for a, b, described in halves
    ]


def _float_pair(m1: float, l1: float, m2: float, l2: float) -> tuple[float, float]:
    m, l = merge_normalisers(m1, l1, m2, l2)  # noqa: E741
    return float(m), float(l)


def check_merge(merge: Callable[..., Any]) -> Feedback:
    """Check ``merge(m1, l1, m2, l2) -> (m, l)``.

    ``(m1, l1)`` is the maximum and ``Σ exp(x - m1)`` of one part of a row, ``(m2, l2)`` of the
    other part; the answer must be the pair for the whole row: ``m = max(m1, m2)`` and
    ``l = l1·exp(m1 - m) + l2·exp(m2 - m)``.
    """
    title = "merge"

    def compare(result: Any, m1: float, l1: float, m2: float, l2: float, want: Any) -> Feedback:
        want_m, want_l = want
        wrong_type = not_a_pair(title, result, "m, l")
        if wrong_type is not None:
            return wrong_type
        try:
            arrays = [as_answer_array(r, "m or l") for r in result]
            got_m, got_l = (float(np.asarray(a).reshape(())) for a in arrays)
        except (TypeError, ValueError) as err:
            return Feedback(False, title, (str(err),))
        # float32 (numpy or torch) answers are right to float32's precision, not to 1e-9
        rtol_m, _ = answer_tolerance(arrays[0].dtype, 1e-12, 0.0)
        rtol, _ = answer_tolerance(arrays[1].dtype, 1e-9, 0.0)
        if not math.isclose(got_m, want_m, rel_tol=rtol_m, abs_tol=1e-12):
            swapped = math.isclose(got_m, want_l, rel_tol=rtol) and math.isclose(
                got_l, want_m, rel_tol=rtol_m, abs_tol=1e-12
            )
            value, target = format_pair(got_m, want_m)
            return Feedback(
                False,
                title,
                (t("m is {got}, expected {want}", got=value, want=target),),
                (
                    "return (m, l) in this order: the maximum first, then the sum"
                    if swapped
                    else "the maximum of the whole row is the larger of the two maxima",
                ),
            )
        if math.isclose(got_l, want_l, rel_tol=rtol, abs_tol=1e-12):
            return Feedback(True, title)
        value, target = format_pair(got_l, want_l)
        hints = []
        if math.isclose(got_l, l1 + l2, rel_tol=rtol):
            hints.append(
                "each sum was taken under its own maximum: rescale l1 by exp(m1 - m) and "
                "l2 by exp(m2 - m)"
            )
        elif not math.isfinite(got_l):
            hints.append("exp overflowed: the exponents m1 - m and m2 - m are never positive")
        elif abs(m1 - m2) < 700 and math.isclose(
            got_l, l1 * math.exp(want_m - m1) + l2 * math.exp(want_m - m2), rel_tol=rtol
        ):
            hints.append("the rescaling factor is exp(m_old - m_new), at most 1: not its inverse")
        return Feedback(
            False, title, (t("l is {got}, expected {want}", got=value, want=target),), tuple(hints)
        )

    passed = "right on all {n} cases, including scores of ±1e4 and equal maxima"
    return run_cases(title, merge, "merge", _merge_cases(), compare, passed, fail=_on_case)


# --- exercise 12.2 ---------------------------------------------------------------------------

_NO_SHIFT_HINT = (
    "while only -inf has been seen, the running maximum is -inf and "
    "exp(-inf - (-inf)) is nan: treat a -inf maximum as 0 when shifting"
)


def _softmax_cases() -> list[tuple[str, tuple[np.ndarray, int], str | None]]:
    """``(described, (x, block_size), the hint when no typical mistake is recognised)``."""
    rng = np.random.default_rng(_SEED)
    return [
        ("the row [1, 2, 3, 4] with block_size 2", (np.array([1.0, 2.0, 3.0, 4.0]), 2), None),
        (
            "a random row of 10 with block_size 3 (3 does not divide 10)",
            (rng.normal(scale=3.0, size=10), 3),
            None,
        ),
        (
            "a float32 row with scores of ±1e4",
            (np.array([1e4, -1e4, 0.0, 5e3], dtype=np.float32), 1),
            "subtract the running maximum before exp",
        ),
        (
            "a row whose maximum arrives in the last block but one",
            (np.array([-1.0, 0.0, 2.0, 9.0, 3.0]), 2),
            None,
        ),
        (
            "a row whose first block is all -inf",
            (np.array([-np.inf, -np.inf, 0.5, -np.inf, 1.5]), 2),
            _NO_SHIFT_HINT,
        ),
    ]


_NO_RESCALE_SUM_HINT = (
    "the running sum was never rescaled: when a block raises the maximum from m to m_new, "
    "multiply the old sum l by exp(m - m_new) before adding the new block"
)


def _streaming_variant(
    x: np.ndarray, block: int, *, rescale: bool = True, inverse: bool = False
) -> np.ndarray:
    """The streaming softmax of a 1-D row, optionally with a typical mistake in the running sum.

    ``rescale=False``: the old sum is kept as it is when the maximum grows; ``inverse=True``: it is
    multiplied by ``exp(m_new - m)`` instead of ``exp(m - m_new)``. A row whose first blocks are all
    ``-inf`` is handled as the right answer handles it.
    """
    x = x.astype(np.float64)
    m, total = -np.inf, 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        for s in range(0, x.size, block):
            part = x[s : s + block]
            m_new = max(m, float(part.max()))
            if m_new == -np.inf:
                continue
            factor = math.exp(m - m_new) if m > -np.inf else 0.0
            if inverse and m > -np.inf:
                factor = math.exp(m_new - m)
            total = (total * factor if rescale else total) + float(np.exp(part - m_new).sum())
            m = m_new
        return np.exp(x - m) / total


def _blockwise_softmax(x: np.ndarray, block: int) -> np.ndarray:
    """Each block's own softmax, side by side (a row of ``n_blocks`` distributions)."""
    with np.errstate(invalid="ignore"):
        return np.concatenate(
            [softmax(x[s : s + block].astype(np.float64)) for s in range(0, x.size, block)]
        )


def check_streaming_softmax(streaming_softmax: Callable[..., Any]) -> Feedback:
    """Check ``streaming_softmax(x, block_size)``: the softmax of a 1-D row, read block by block.

    Compared with :func:`course_utils.softmax.softmax`; the row's first block can be all ``-inf``.
    """
    title = "streaming softmax"

    def compare(result: Any, x: np.ndarray, block: int, hint: str | None) -> Feedback:
        low = _low_precision(result, "weights")
        rtol = 1e-4 if low or x.dtype != np.float64 else 1e-9
        fb = check_softmax(result, x, axis=-1, rtol=rtol)
        if fb:
            return fb
        # The mistakes of the streaming loop itself; check_softmax knows only whole-row ones.
        mistakes = [
            Mistake(_NO_RESCALE_SUM_HINT, _streaming_variant(x, block, rescale=False)),
            Mistake(
                "the rescaling factor is exp(m_old - m_new), at most 1: not its inverse",
                _streaming_variant(x, block, inverse=True),
            ),
            Mistake(
                "each block was normalised on its own: keep one running maximum and one "
                "running sum for the whole row, and divide by the final sum at the end",
                _blockwise_softmax(x, block),
            ),
        ]
        recognised = check_array(
            "weights", result, softmax(x.astype(np.float64)), mistakes=mistakes, rtol=rtol
        )
        if recognised.hints and not fb.hints:
            fb = Feedback(False, fb.title, fb.messages, recognised.hints)
        if hint == _NO_SHIFT_HINT and _has_nan(result):
            # check_softmax blames overflow for any nan; here the max was already subtracted
            return Feedback(False, fb.title, fb.messages, (hint,))
        return _or_hint(fb, hint)

    passed = "right on all {n} cases, including ±1e4 in float32 and a first block that is all -inf"
    return run_cases(
        title,
        streaming_softmax,
        "streaming_softmax",
        _softmax_cases(),
        compare,
        passed,
        fail=_on_case,
    )


# --- exercise 12.3 ---------------------------------------------------------------------------

_RESCALE_HINT = (
    "when a block raises the maximum from m to m_new, multiply the old l and "
    "the old o by exp(m - m_new) before adding the new block"
)


_OVERFLOW_HINT = (
    "exp overflowed: update the running maximum m at every block, subtract it before exp, "
    "and rescale the old l and o by exp(m - m_new) when it grows"
)


def _attention_cases() -> list[tuple[str, tuple[np.ndarray, np.ndarray, np.ndarray, int]]]:
    rng = np.random.default_rng(_SEED + 1)
    big = rng.normal(size=(3, 4))
    cases = [
        (rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 2)), 2,
         "Q (4, 3), K (6, 3), V (6, 2), block_k 2"),
        (rng.normal(size=(5, 4)), rng.normal(size=(7, 4)), rng.normal(size=(7, 3)), 3,
         "Q (5, 4), K (7, 4), V (7, 3), block_k 3 (3 does not divide 7)"),
        (big * 30, big[[2, 0, 1, 2, 0]] * 30, rng.normal(size=(5, 2)), 2,
         "large scores (about ±1e3)"),
    ]  # fmt: skip
    return [(described, (q, k, v, block)) for q, k, v, block, described in cases]


def check_key_block_attention(key_block_attention: Callable[..., Any]) -> Feedback:
    """Check ``key_block_attention(Q, K, V, block_k)`` -> output ``(T_q, d_v)``.

    Compared with :func:`course_utils.attention.scaled_dot_product_attention` (itself tested
    against PyTorch's). The typical mistake, forgetting to rescale the old output and sum when the
    maximum grows (both, or one of them), is recognised by its value and gets its own hint.
    """
    title = "attention by key blocks"

    def compare(result: Any, q: np.ndarray, k: np.ndarray, v: np.ndarray, block: int) -> Feedback:
        expected, _ = scaled_dot_product_attention(q, k, v)  # (T_q, d_v)
        mistakes = [
            Mistake(
                "this is the average of the blocks' own outputs: the blocks must be weighted by "
                "their sums l, rescaled to the common maximum",
                np.mean(
                    [
                        scaled_dot_product_attention(q, k[s : s + block], v[s : s + block])[0]
                        for s in range(0, k.shape[0], block)
                    ],
                    axis=0,
                ),
            ),
            Mistake(
                "the scores were not divided by √d_k",
                softmax(q @ k.T) @ v,
            ),
            Mistake(
                "o is Σ exp(s - m) v, not yet divided by l: divide by l at the end",
                _unnormalised(q, k, v),
            ),
        ]
        mistakes[:0] = [  # the central mistake first: it is the one this exercise is about
            Mistake(
                _RESCALE_HINT, _key_block_variant(q, k, v, block, rescale_l=False, rescale_o=False)
            ),
            Mistake(
                "the old output o was not rescaled: multiply it by exp(m - m_new) too, like l",
                _key_block_variant(q, k, v, block, rescale_l=True, rescale_o=False),
            ),
            Mistake(
                "the old sum l was not rescaled: multiply it by exp(m - m_new) too, like o",
                _key_block_variant(q, k, v, block, rescale_l=False, rescale_o=True),
            ),
        ]
        # float32's tolerance for every answer: float32 work returned as float64 is right too
        # (scores of about ±1e3 leave it 1e-4 off), and every mistake named above is off by more
        return check_array(
            "output", result, expected, mistakes=mistakes, nan_hint=_OVERFLOW_HINT,
            rtol=1e-4, atol=1e-6,
        )  # fmt: skip

    passed = "right on all {n} cases, including a block size that does not divide T_k"
    return run_cases(
        title,
        key_block_attention,
        "key_block_attention",
        _attention_cases(),
        compare,
        passed,
        fail=_on_case,
    )


def _unnormalised(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ k.T / math.sqrt(q.shape[-1])  # (T_q, T_k)
    return np.exp(s - s.max(axis=-1, keepdims=True)) @ v  # (T_q, d_v)


def _key_block_variant(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, block: int, *, rescale_l: bool, rescale_o: bool
) -> np.ndarray:
    """Attention by key blocks with the running ``(m, l, o)``, optionally not rescaling ``l``/``o``.

    With both ``True`` it is the right answer; the learner's typical mistake skips one or both.
    """
    scale = 1 / math.sqrt(q.shape[-1])
    m = np.full((q.shape[0], 1), -np.inf)  # (T_q, 1)
    total = np.zeros((q.shape[0], 1))  # (T_q, 1)
    o = np.zeros((q.shape[0], v.shape[1]))  # (T_q, d_v)
    for s in range(0, k.shape[0], block):
        scores = q @ k[s : s + block].T * scale  # (T_q, b)
        m_new = np.maximum(m, scores.max(axis=-1, keepdims=True))  # (T_q, 1)
        factor = np.exp(m - m_new)  # (T_q, 1); 0 on the first block
        p = np.exp(scores - m_new)  # (T_q, b)
        total = (total * factor if rescale_l else total) + p.sum(axis=-1, keepdims=True)  # (T_q, 1)
        o = (o * factor if rescale_o else o) + p @ v[s : s + block]  # (T_q, d_v)
        m = m_new
    return o / total  # (T_q, d_v)


# --- exercise 12.4: the numbers read from slow memory, for a block size --------------------------


def check_hbm_reads(hbm_reads: Callable[[int, int, int], Any]) -> Feedback:
    """Check ``hbm_reads(n, d, block_q)``: the numbers the loop of section 12.3 (query blocks
    outside, key blocks inside, no mask) reads from slow memory, for ``n`` queries and keys of
    width ``d``. Each block of ``block_q`` queries is read once, and every key and value is read
    once per query block: ``n·d + ceil(n / block_q) · 2·n·d`` (the output's writes not counted).

    >>> bool(check_hbm_reads(lambda n, d, b: n * d + math.ceil(n / b) * 2 * n * d))
    True
    >>> print(check_hbm_reads(lambda n, d, b: n * d + n / b * 2 * n * d).hints[0])
    a last, partial block of queries still reads all the keys and values: round n / block_q up
    """
    title = "slow-memory reads"

    def compare(result: Any, n: int, d: int, block_q: int) -> Feedback:
        passes = math.ceil(n / block_q)  # query blocks: each reads every key and value once
        expected = n * d + passes * 2 * n * d
        mistakes = [
            Mistake(
                "a last, partial block of queries still reads all the keys and values: round "
                "n / block_q up",
                n * d + n / block_q * 2 * n * d,
            ),
            Mistake(
                "each query block reads the keys AND the values: 2·n·d numbers per pass",
                n * d + passes * n * d,
            ),
            Mistake("the queries are read too: n·d numbers, once", passes * 2 * n * d),
            Mistake(
                "only reads are counted: leave out writing the output (n·d numbers)",
                2 * n * d + passes * 2 * n * d,
            ),
            Mistake(
                "the keys and values are read once per query block, not once in all: that is "
                "the whole point of the block size",
                3 * n * d,
            ),
        ]
        return check_array(title, result, np.array(float(expected)), mistakes=mistakes, rtol=1e-9)

    sizes = ((1024, 64, 128), (1000, 64, 128), (4096, 128, 64), (100, 16, 100), (300, 32, 512))
    cases = [(f"n = {n}, d = {d}, block_q = {b}", (n, d, b)) for n, d, b in sizes]
    passed = "all {n} counts right, including a block size that does not divide n"
    return run_cases(title, hbm_reads, "hbm_reads", cases, compare, passed, fail=_on_case)


# --- exercise 12.5: blocks and wasted slots of a paged KV cache ------------------------------


def check_paged_blocks(paged_blocks: Callable[..., Any]) -> Feedback:
    """Check ``paged_blocks(lengths, block_size) -> (blocks, wasted)``: the blocks a paged KV cache
    gives sequences of these lengths (each sequence its own blocks, its last one maybe partial)
    and the slots of those blocks that hold no token, both summed over the sequences.

    >>> def paged_blocks(lengths, block_size):
    ...     blocks = sum(-(-n // block_size) for n in lengths)
    ...     return blocks, blocks * block_size - sum(lengths)
    >>> bool(check_paged_blocks(paged_blocks))
    True
    >>> floor = check_paged_blocks(lambda lengths, b: (sum(n // b for n in lengths), 0))
    >>> floor.hints[0].split(":")[0]
    'forgot the last, partial block'
    """
    title = "paged blocks"

    def compare(result: Any, lengths: list[int], block: int) -> Feedback:
        wrong_type = not_a_pair(title, result, "blocks, wasted")
        if wrong_type is not None:
            return wrong_type
        per_seq = [blocks_needed(n, block) for n in lengths]
        blocks, total = sum(per_seq), sum(lengths)
        wasted = blocks * block - total
        got_blocks, got_wasted = result
        fb = check_number(
            "blocks",
            got_blocks,
            blocks,
            [
                (
                    sum(n // block for n in lengths),
                    "forgot the last, partial block: a sequence of 27 tokens needs "
                    "ceil(27 / 16) = 2 blocks, so round up (ceil), not down (floor)",
                ),
                (
                    sum(round(n / block) for n in lengths),
                    "rounded to the nearest block: a partial block, even of one token, is a "
                    "whole block, so round up (ceil)",
                ),
                (
                    -(-total // block),
                    "sequences do not share blocks: count ceil(length / block_size) for each "
                    "sequence, then add them up",
                ),
            ],
            "{value:g} blocks, expected {expected:g}",
        )
        if not fb:
            return Feedback(False, title, fb.messages, fb.hints)
        per_seq_waste = [b * block - n for b, n in zip(per_seq, lengths, strict=True)]
        try:
            arr = as_answer_array(got_wasted, "wasted")
        except TypeError:
            arr = None
        if arr is not None and arr.shape == (len(lengths),) and np.allclose(arr, per_seq_waste):
            return Feedback(
                False,
                title,
                (t("expected one number for wasted; got one per sequence"),),
                ("add up the empty slots of all the sequences",),
            )
        fb = check_number(
            "wasted",
            got_wasted,
            wasted,
            [
                (
                    sum(block - n % block for n in lengths),
                    "a sequence that fills its last block exactly wastes 0 slots, not block_size",
                ),
                (
                    sum(n % block for n in lengths),
                    "that is the tokens in each last, partial block; the waste is the empty "
                    "slots: blocks · block_size - length",
                ),
                (
                    wasted / total,
                    "counted the waste per token: give the number of empty slots in all, "
                    "not a fraction",
                ),
                (
                    len(lengths) * max(lengths) - total,
                    "that is the waste of a contiguous cache as long as the longest sequence; "
                    "a paged cache wastes only what its last blocks leave empty",
                ),
            ],
            "{value:g} wasted slots, expected {expected:g}",
        )
        return Feedback(bool(fb), title, fb.messages, fb.hints)

    cases = [
        (f"lengths {lengths} with block_size {block}", (lengths, block))
        for lengths, block in (
            ([5, 16, 27, 70], 16),
            ([1, 2, 3], 4),
            ([64, 128], 16),
            ([100, 1, 31], 32),
        )
    ]
    passed = "right on all {n} cases, including lengths that fill their last block"
    return run_cases(title, paged_blocks, "paged_blocks", cases, compare, passed, fail=_on_case)
