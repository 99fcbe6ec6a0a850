"""Checkers for the exercises of chapter 12, "Efficient exact attention: online softmax and tiling".

Each checker runs the learner's answer on its own seeded cases, compares it with ``course_utils``
and returns a :class:`Feedback`; it never raises on a wrong answer, so the notebook runs top to
bottom with the starter code (``...``).

- :func:`check_merge`: ``merge(m1, l1, m2, l2) -> (m, l)``, combining two partial softmax
  normalisers (the heart of the online softmax);
- :func:`check_streaming_softmax`: ``streaming_softmax(x, block_size)``, the softmax of a 1-D row
  read block by block;
- :func:`check_key_block_attention`: ``key_block_attention(Q, K, V, block_k)``, attention that
  visits the keys and values one block at a time, keeping the running ``(m, l, o)`` per query.

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
from ..softmax import softmax
from ._checks import Mistake, as_answer_array, check_array, check_softmax, format_pair
from ._feedback import Feedback
from ._learner import call_learner, not_a_function

__all__ = ["check_key_block_attention", "check_merge", "check_streaming_softmax"]

_SEED = 2022


def _with_context(fb: Feedback, title: str, described: str) -> Feedback:
    messages = tuple(f"on {described}: {m}" for m in fb.messages[:1]) + fb.messages[1:]
    return Feedback(fb.passed, title, messages, fb.hints)


def _normaliser(x: np.ndarray) -> tuple[float, float]:
    """(max, Σ exp(x - max)) of a 1-D row, computed in one go (the reference)."""
    m = float(np.max(x))
    return m, float(np.exp(x - m).sum())


# --- exercise 12.1 ---------------------------------------------------------------------------


def _merge_cases() -> list[tuple[np.ndarray, np.ndarray, str]]:
    return [
        (np.array([2.0, 1.0]), np.array([5.0, 0.0]), "two halves with maxima 2 and 5"),
        (np.array([5.0, 0.0]), np.array([2.0, 1.0]), "the same halves in the other order"),
        (np.array([1e4, 0.0]), np.array([-1e4, 3.0]), "halves with scores of ±1e4"),
        (np.array([3.0]), np.array([3.0, 3.0]), "two halves with the same maximum"),
    ]


def check_merge(merge: Callable[..., Any]) -> Feedback:
    """Check ``merge(m1, l1, m2, l2) -> (m, l)``.

    ``(m1, l1)`` is the maximum and ``Σ exp(x - m1)`` of one part of a row, ``(m2, l2)`` of the
    other part; the answer must be the pair for the whole row: ``m = max(m1, m2)`` and
    ``l = l1·exp(m1 - m) + l2·exp(m2 - m)``.
    """
    title = "merge"
    early = not_a_function(title, merge, "merge")
    if early is not None:
        return early
    cases = _merge_cases()
    for a, b, described in cases:
        (m1, l1), (m2, l2) = _normaliser(a), _normaliser(b)
        want_m, want_l = _normaliser(np.concatenate([a, b]))
        result = call_learner(title, merge, (m1, l1, m2, l2), described)
        if isinstance(result, Feedback):
            return result
        if not isinstance(result, tuple | list) or len(result) != 2:
            return Feedback(
                False,
                title,
                (f"on {described}: expected a pair (m, l); got {type(result).__name__}",),
                ("end with `return m, l`",),
            )
        try:
            got_m, got_l = (float(np.asarray(as_answer_array(r, "m or l"))) for r in result)
        except (TypeError, ValueError) as err:
            return Feedback(False, title, (f"on {described}: {err}",))
        if not math.isclose(got_m, want_m, rel_tol=1e-12, abs_tol=1e-12):
            value, target = format_pair(got_m, want_m)
            return Feedback(
                False,
                title,
                (f"on {described}: m is {value}, expected {target}",),
                ("the maximum of the whole row is the larger of the two maxima",),
            )
        if not math.isclose(got_l, want_l, rel_tol=1e-9, abs_tol=1e-12):
            value, target = format_pair(got_l, want_l)
            hints = []
            if math.isclose(got_l, l1 + l2, rel_tol=1e-9):
                hints.append(
                    "each sum was taken under its own maximum: rescale l1 by exp(m1 - m) and "
                    "l2 by exp(m2 - m)"
                )
            elif not math.isfinite(got_l):
                hints.append("exp overflowed: the exponents m1 - m and m2 - m are never positive")
            elif abs(m1 - m2) < 700 and math.isclose(
                got_l, l1 * math.exp(want_m - m1) + l2 * math.exp(want_m - m2), rel_tol=1e-9
            ):
                hints.append(
                    "the rescaling factor is exp(m_old - m_new), at most 1: not its inverse"
                )
            return Feedback(
                False, title, (f"on {described}: l is {value}, expected {target}",), tuple(hints)
            )
    return Feedback(
        True,
        title,
        (f"right on all {len(cases)} cases, including scores of ±1e4 and equal maxima",),
    )


# --- exercise 12.2 ---------------------------------------------------------------------------


def _softmax_cases() -> list[tuple[np.ndarray, int, str]]:
    rng = np.random.default_rng(_SEED)
    return [
        (np.array([1.0, 2.0, 3.0, 4.0]), 2, "the row [1, 2, 3, 4] with block_size 2"),
        (
            rng.normal(scale=3.0, size=10),
            3,
            "a random row of 10 with block_size 3 (3 does not divide 10)",
        ),
        (np.array([1e4, -1e4, 0.0, 5e3], dtype=np.float32), 1, "a float32 row with scores of ±1e4"),
        (
            np.array([-1.0, 0.0, 2.0, 9.0, 3.0]),
            2,
            "a row whose maximum arrives in the last block but one",
        ),
        (np.array([-np.inf, -np.inf, 0.5, -np.inf, 1.5]), 2, "a row whose first block is all -inf"),
    ]


def check_streaming_softmax(streaming_softmax: Callable[..., Any]) -> Feedback:
    """Check ``streaming_softmax(x, block_size)``: the softmax of a 1-D row, read block by block.

    Compared with :func:`course_utils.softmax.softmax`; the row's first block can be all ``-inf``.
    """
    title = "streaming softmax"
    early = not_a_function(title, streaming_softmax, "streaming_softmax")
    if early is not None:
        return early
    cases = _softmax_cases()
    for x, block, described in cases:
        result = call_learner(title, streaming_softmax, (x.copy(), block), described)
        if isinstance(result, Feedback):
            return result
        try:  # a float32 (or float16) answer gets a tolerance its precision can meet
            low = np.finfo(as_answer_array(result, "weights").dtype).bits < 64
        except (TypeError, ValueError):
            low = False
        rtol = 1e-4 if low or x.dtype != np.float64 else 1e-9
        fb = check_softmax(result, x, axis=-1, rtol=rtol)
        if not fb:
            fb = _with_context(fb, title, described)
            if not fb.hints and "-inf" in described:
                hint = (
                    "while only -inf has been seen, the running maximum is -inf and "
                    "exp(-inf - (-inf)) is nan: treat a -inf maximum as 0 when shifting"
                )
                fb = Feedback(False, title, fb.messages, (hint,))
            elif not fb.hints and "±1e4" in described:
                fb = Feedback(
                    False, title, fb.messages, ("subtract the running maximum before exp",)
                )
            return fb
    return Feedback(
        True,
        title,
        (
            f"right on all {len(cases)} cases, including ±1e4 in float32 and a first block "
            "that is all -inf",
        ),
    )


# --- exercise 12.3 ---------------------------------------------------------------------------


def _attention_cases() -> list[tuple[np.ndarray, np.ndarray, np.ndarray, int, str]]:
    rng = np.random.default_rng(_SEED + 1)
    big = rng.normal(size=(3, 4))
    return [
        (rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 2)), 2,
         "Q (4, 3), K (6, 3), V (6, 2), block_k 2"),
        (rng.normal(size=(5, 4)), rng.normal(size=(7, 4)), rng.normal(size=(7, 3)), 3,
         "Q (5, 4), K (7, 4), V (7, 3), block_k 3 (3 does not divide 7)"),
        (big * 30, big[[2, 0, 1, 2, 0]] * 30, rng.normal(size=(5, 2)), 2,
         "large scores (about ±1e3)"),
    ]  # fmt: skip


def check_key_block_attention(key_block_attention: Callable[..., Any]) -> Feedback:
    """Check ``key_block_attention(Q, K, V, block_k)`` -> output ``(T_q, d_v)``.

    Compared with :func:`course_utils.attention.scaled_dot_product_attention` (itself tested
    against PyTorch's). The typical mistake, forgetting to rescale the old output and sum when the
    maximum grows, gets a hint.
    """
    title = "attention by key blocks"
    early = not_a_function(title, key_block_attention, "key_block_attention")
    if early is not None:
        return early
    cases = _attention_cases()
    for q, k, v, block, described in cases:
        result = call_learner(
            title, key_block_attention, (q.copy(), k.copy(), v.copy(), block), described
        )
        if isinstance(result, Feedback):
            return result
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
        try:
            low = np.finfo(as_answer_array(result, "output").dtype).bits < 64
        except (TypeError, ValueError):
            low = False
        tol = {"rtol": 1e-4, "atol": 1e-6} if low else {"rtol": 1e-6, "atol": 1e-9}
        fb = check_array("output", result, expected, mistakes=mistakes, **tol)
        if not fb:
            fb = _with_context(fb, title, described)
            if not fb.hints:
                fb = Feedback(
                    False,
                    title,
                    fb.messages,
                    (
                        "when a block raises the maximum from m to m_new, multiply the old l and "
                        "the old o by exp(m - m_new) before adding the new block",
                    ),
                )
            return fb
    return Feedback(
        True,
        title,
        (f"right on all {len(cases)} cases, including a block size that does not divide T_k",),
    )


def _unnormalised(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ k.T / math.sqrt(q.shape[-1])  # (T_q, T_k)
    return np.exp(s - s.max(axis=-1, keepdims=True)) @ v  # (T_q, d_v)
