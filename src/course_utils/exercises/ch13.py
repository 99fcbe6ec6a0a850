"""Checkers for the exercises of chapter 13, "Attention at work: topic-word focusing".

The learner writes a function; the checker runs it on its own seeded cases and compares it with
:mod:`course_utils.topic_focus`. A checker never raises on a wrong answer.

- :func:`check_topic_share`: ``topic_share(weights, is_topic)``, the attention weight that lands on
  topic words, per sentence;
- :func:`check_rollout`: ``rollout(maps)``, attention rollout of ``(L, H, T, T)`` maps;
- :func:`check_precision_at_k`: ``precision_at_k(scores, is_topic, k)``;
- :func:`check_uniform_pool`: ``uniform_pool(x, keep)``, the sentence vector of the
  uniform-attention baseline: every real token gets the weight ``1/n``, padding none.

>>> import numpy as np
>>> bool(check_topic_share(lambda w, m: (np.asarray(w) * m).sum(axis=-1)))
True
>>> print(check_topic_share(lambda w, m: (np.asarray(w) * m).mean(axis=-1)))
... # doctest: +ELLIPSIS
✗ topic share: not yet right
  - test case: one sentence of 4 tokens
  ...
  hint: you averaged over all tokens (divided by T); the share is a sum
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..topic_focus.attribution import attention_rollout, top_k_precision
from ._checks import Mistake, check_array
from ._feedback import Feedback
from ._learner import run_cases

__all__ = [
    "check_precision_at_k",
    "check_rollout",
    "check_topic_share",
    "check_uniform_pool",
]

_SEED = 2020


def _distributions(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    w = rng.random(shape) + 0.05
    return w / w.sum(axis=-1, keepdims=True)


# --- exercise 13.1: the share of attention on topic words ----------


def _share_cases() -> list[tuple[str, tuple[np.ndarray, np.ndarray]]]:
    rng = np.random.default_rng(_SEED)
    one = np.array([[0.1, 0.6, 0.2, 0.1]])
    return [
        ("one sentence of 4 tokens", (one, np.array([[False, True, True, False]]))),
        ("3 sentences of 6 tokens", (_distributions(rng, (3, 6)), rng.random((3, 6)) < 0.4)),
        (
            "2 sentences, one without topic words",
            (
                _distributions(rng, (2, 5)),
                np.array([[True, False, False, False, True], [False] * 5]),
            ),
        ),
    ]


def check_topic_share(topic_share: Callable[[Any, Any], Any]) -> Feedback:
    """Check ``topic_share(weights, is_topic)``: ``(B, T)`` weights and bool mask -> ``(B,)``.

    The expected answer is ``Σ_t weights[b, t] · is_topic[b, t]`` for every sentence ``b``.
    """
    title = "topic share"

    def compare(result: Any, w: np.ndarray, m: np.ndarray) -> Feedback:
        expected = (w * m).sum(axis=-1)  # (B,)
        n = np.maximum(m.sum(axis=-1), 1)
        mistakes = [
            Mistake(
                "you averaged the weights on topic words; the share is their sum", expected / n
            ),
            Mistake(
                "you averaged over all tokens (divided by T); the share is a sum",
                (w * m).mean(axis=-1),
            ),
            Mistake(
                "that is the topic words' share of the *tokens*; weight each token by its "
                "attention weight instead",
                m.mean(axis=-1),
            ),
            Mistake(
                "you summed over the wrong axis: sum over the tokens (axis=-1)", (w * m).sum(0)
            ),
        ]
        return check_array(title, result, expected, rtol=1e-6, mistakes=mistakes)

    passed = "right on all {n} cases, one per sentence"
    return run_cases(title, topic_share, "topic_share", _share_cases(), compare, passed)


# --- exercise 13.2: attention rollout ----------


def _rollout_cases() -> list[tuple[str, tuple[np.ndarray]]]:
    rng = np.random.default_rng(_SEED + 1)
    hand = np.array([[[[1.0, 0.0], [0.5, 0.5]]], [[[0.0, 1.0], [0.0, 1.0]]]])  # (2, 1, 2, 2)
    return [
        ("the 2-layer, 1-head example of the chapter", (hand,)),
        ("maps of shape (3, 2, 4, 4)", (_distributions(rng, (3, 2, 4, 4)),)),
        ("maps of shape (1, 4, 5, 5)", (_distributions(rng, (1, 4, 5, 5)),)),
    ]


def check_rollout(rollout: Callable[[Any], Any]) -> Feedback:
    """Check ``rollout(maps)`` against :func:`course_utils.topic_focus.attention_rollout`.

    >>> from course_utils.topic_focus import attention_rollout
    >>> bool(check_rollout(attention_rollout))
    True
    """
    title = "rollout"

    def compare(result: Any, maps: np.ndarray) -> Feedback:
        expected = attention_rollout(maps)  # (T, T)
        mean = maps.mean(axis=1)  # (L, T, T)
        eye = np.eye(maps.shape[-1])
        wrong_order = eye
        plain = eye
        for A in mean:
            wrong_order = wrong_order @ (0.5 * eye + 0.5 * A)
            plain = A @ plain
        mistakes = [
            Mistake(
                "the layers are multiplied in the wrong order: the later layer goes on the "
                "left, R = A_1 A_0",
                wrong_order,
            ),
            Mistake(
                "no residual: use A = 0.5 I + 0.5 W (and renormalise the rows)",
                plain,
            ),
        ]
        return check_array(title, result, expected, rtol=1e-6, mistakes=mistakes)

    passed = "right on all {n} cases, including more than one head"
    return run_cases(title, rollout, "rollout", _rollout_cases(), compare, passed)


# --- exercise 13.3: top-k precision ------------------------------------------------------------


def _precision_cases() -> list[tuple[str, tuple[np.ndarray, np.ndarray, int]]]:
    rng = np.random.default_rng(_SEED + 2)
    return [
        (
            "scores [0.1, 0.5, 0.3, 0.1], topic tokens 1 and 3, k = 2",
            (np.array([0.1, 0.5, 0.3, 0.1]), np.array([False, True, False, True]), 2),
        ),
        ("8 random scores, k = 3", (rng.random(8), rng.random(8) < 0.4, 3)),
        ("6 random scores, k = 1", (rng.random(6), np.array([True, False] * 3), 1)),
        ("5 random scores, k = 4", (rng.random(5), np.array([True, True, False, False, True]), 4)),
        (
            # A tie at the k-th score: either tied token may be taken (both are non-topic), but
            # exactly k tokens are counted, not every token scoring at least the k-th score.
            "scores [0.9, 0.4, 0.4, 0.2], topic tokens 0 and 3, k = 2 (a tie at the 2nd score)",
            (np.array([0.9, 0.4, 0.4, 0.2]), np.array([True, False, False, True]), 2),
        ),
    ]


def check_precision_at_k(precision_at_k: Callable[[Any, Any, int], Any]) -> Feedback:
    """Check ``precision_at_k(scores, is_topic, k)`` against ``top_k_precision``.

    >>> def precision_at_k(scores, is_topic, k):
    ...     top = np.argsort(-np.asarray(scores), kind="stable")[:k]
    ...     return is_topic[top].mean()
    >>> bool(check_precision_at_k(precision_at_k))
    True
    """
    title = "precision at k"

    def compare(result: Any, scores: np.ndarray, m: np.ndarray, k: int) -> Feedback:
        expected = top_k_precision(scores, m, k)
        low = np.argsort(scores, kind="stable")[:k]
        mistakes = [
            Mistake("you took the k *lowest* scores: sort in descending order", m[low].mean()),
            Mistake(
                "you divided by the number of topic tokens; precision divides by k",
                m[np.argsort(-scores, kind="stable")[:k]].sum() / max(1, m.sum()),
            ),
            Mistake(
                "that is the number of topic tokens among the top k; precision is that number "
                "divided by k",
                m[np.argsort(-scores, kind="stable")[:k]].sum(),
            ),
            Mistake(
                "with a tie at the k-th score, `scores >= threshold` keeps more than k tokens: "
                "take exactly k (np.argsort(-scores)[:k])",
                m[scores >= np.sort(scores)[-k]].mean(),
            ),
        ]
        return check_array(title, result, expected, rtol=1e-9, mistakes=mistakes)

    cases = _precision_cases()
    return run_cases(
        title, precision_at_k, "precision_at_k", cases, compare, "right on all {n} cases"
    )


# --- exercise 13.5: the uniform-attention baseline ---------------------------------------------


def _pool_cases() -> list[tuple[str, tuple[np.ndarray, np.ndarray]]]:
    rng = np.random.default_rng(_SEED + 3)
    lengths = ([4], [6, 3, 5], [1, 4])
    cases = []
    for (t, d), n in zip(((4, 3), (6, 4), (4, 2)), lengths, strict=True):
        x = rng.normal(size=(len(n), t, d)).round(2)  # (B, T, d)
        keep = np.arange(t)[None, :] < np.array(n)[:, None]  # (B, T): real tokens first
        x[~keep] = rng.normal(size=(int((~keep).sum()), d)).round(2) + 5  # padding: not zero
        described = f"B = {len(n)}, n = {n}, T = {t}, d = {d}"  # n: real tokens
        cases.append((described, (x, keep)))
    return cases


def check_uniform_pool(uniform_pool: Callable[[Any, Any], Any]) -> Feedback:
    """Check ``uniform_pool(x, keep)``: ``x`` ``(B, T, d)`` token vectors, ``keep`` ``(B, T)`` bool
    (``False`` = padding) -> ``(B, d)``, the average of each sentence's real token vectors.

    It is attention pooling with every score equal: softmax gives each of the ``n`` real tokens
    the weight ``1/n`` and the padding none.

    >>> def uniform_pool(x, keep):
    ...     return (x * keep[..., None]).sum(1) / keep.sum(1, keepdims=True)
    >>> bool(check_uniform_pool(uniform_pool))
    True
    >>> print(check_uniform_pool(lambda x, keep: x.mean(axis=1)).hints[0])
    the padding was averaged in: give the padded positions weight 0 (use keep)
    """
    title = "uniform pooling"

    def compare(result: Any, x: np.ndarray, keep: np.ndarray) -> Feedback:
        n = keep.sum(axis=1, keepdims=True)  # (B, 1): real tokens per sentence
        total = (x * keep[..., None]).sum(axis=1)  # (B, d): padding left out
        expected = total / n  # (B, d)
        mistakes = [
            Mistake(
                "the padding was averaged in: give the padded positions weight 0 (use keep)",
                x.mean(axis=1),
            ),
            Mistake(
                "you divided by T, the padded length: divide by each sentence's number of real "
                "tokens",
                total / x.shape[1],
            ),
            Mistake("that is a sum: divide by the number of real tokens", total),
            Mistake(
                "you averaged over the features (axis=-1): average over the tokens (axis 1)",
                (x * keep[..., None]).sum(axis=-1) / x.shape[-1],
            ),
        ]
        return check_array(title, result, expected, rtol=1e-6, mistakes=mistakes)

    passed = "right on all {n} cases, padding left out"
    return run_cases(title, uniform_pool, "uniform_pool", _pool_cases(), compare, passed)
