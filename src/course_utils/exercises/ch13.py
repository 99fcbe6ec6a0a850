"""Checkers for the exercises of chapter 13, "Attention at work: topic-word focusing".

The learner writes a function; the checker runs it on its own seeded cases and compares it with
:mod:`course_utils.topic_focus`. A checker never raises on a wrong answer.

- :func:`check_topic_share`: ``topic_share(weights, is_topic)``, the attention weight that lands on
  topic words, per sentence;
- :func:`check_rollout`: ``rollout(maps)``, attention rollout of ``(L, H, T, T)`` maps;
- :func:`check_precision_at_k`: ``precision_at_k(scores, is_topic, k)``;
- :func:`check_uniform_pool`: ``uniform_pool(x, keep)``, the sentence vector of the
  uniform-attention baseline: every real token gets the weight ``1/n``, padding none;
- :func:`check_eraser_by_hand`: ``(comprehensiveness, sufficiency)`` computed by hand from
  :data:`ERASER_TABLE`, one prediction removed and kept at three sizes (ERASER's AOPC).

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

from ..i18n import t
from ..topic_focus.attribution import attention_rollout, eraser_faithfulness, top_k_precision
from ._checks import Mistake, as_answer_array, check_array
from ._feedback import Feedback
from ._learner import not_answered, run_cases

__all__ = [
    "ERASER_TABLE",
    "check_eraser_by_hand",
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
    for (width, d), n in zip(((4, 3), (6, 4), (4, 2)), lengths, strict=True):
        x = rng.normal(size=(len(n), width, d)).round(2)  # (B, T, d)
        keep = np.arange(width)[None, :] < np.array(n)[:, None]  # (B, T): real tokens first
        x[~keep] = rng.normal(size=(int((~keep).sum()), d)).round(2) + 5  # padding: not zero
        described = f"B = {len(n)}, n = {n}, T = {width}, d = {d}"  # n: real tokens
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


# --- exercise 13.6: comprehensiveness and sufficiency by hand ----------------------------------

#: The prediction table of exercise 13.6: a sentence predicted *sport* with p = 0.90, and its
#: top 1, 2 and 3 words by attention removed (``p_without``) or kept alone (``p_only``). The
#: attention weight on those words is there because a learner may be tempted to use it.
ERASER_TABLE = {
    "p_full": 0.90,
    "words": ("striker", "striker, team", "striker, team, match"),
    "attention": (0.45, 0.70, 0.85),
    "p_without": (0.60, 0.35, 0.20),
    "p_only": (0.70, 0.85, 0.88),
}


def _eraser_expected() -> tuple[float, float]:
    """The answer, by :func:`~course_utils.topic_focus.eraser_faithfulness` on two classes."""
    p = ERASER_TABLE["p_full"]
    rows = {k: [[q, 1 - q] for q in ERASER_TABLE[k]] for k in ("p_without", "p_only")}
    return eraser_faithfulness([p, 1 - p], rows["p_without"], rows["p_only"])


_ERASER_ATOL = 0.006  # a hand computation rounded to two decimals is right


def _eraser_mistakes() -> list[tuple[tuple[float, float], str]]:
    comp, suff = _eraser_expected()
    p = ERASER_TABLE["p_full"]
    without, only = np.array(ERASER_TABLE["p_without"]), np.array(ERASER_TABLE["p_only"])
    att = np.array(ERASER_TABLE["attention"])
    return [
        (
            (suff, comp),
            "the two are swapped: comprehensiveness removes the words, p(x) − p(x without "
            "them); sufficiency keeps only them, p(x) − p(only them)",
        ),
        (
            (-comp, -suff),
            "the signs are reversed: subtract the probability after the change from the "
            "original p = 0.90",
        ),
        (
            (float(p - without[-1]), float(p - only[-1])),
            "you used only the last bin: AOPC averages over all three bins",
        ),
        (
            (float(p - without[0]), float(p - only[0])),
            "you used only the first bin: AOPC averages over all three bins",
        ),
        (
            (float((p - without).sum()), float((p - only).sum())),
            "you summed over the bins: AOPC is their mean (divide by 3)",
        ),
        (
            (float(without.mean()), float(only.mean())),
            "those are the probabilities after the change: subtract each from the original "
            "p = 0.90",
        ),
        (
            (float(att.mean()), float((1 - att).mean())),
            "you used the attention weights: ERASER measures the model's probability of its "
            "prediction, not how much attention the words had",
        ),
        (
            (float((p - att).mean()), float((p - (1 - att)).mean())),
            "you used the attention weights: ERASER measures the model's probability of its "
            "prediction, not how much attention the words had",
        ),
    ]


def _as_eraser_pair(answer: Any) -> tuple[float, float] | str:
    """The learner's two numbers, or the problem with the answer (a message to show)."""
    if isinstance(answer, dict):
        keys = {str(k).lower(): v for k, v in answer.items()}
        if {"comprehensiveness", "sufficiency"} <= set(keys):
            answer = (keys["comprehensiveness"], keys["sufficiency"])
        else:
            return t(
                "a dict needs the keys 'comprehensiveness' and 'sufficiency'; got {keys}",
                keys=sorted(map(str, answer)),
            )
    try:
        arr = as_answer_array(answer, "answer")
    except TypeError as err:
        return str(err)
    if arr.size != 2 or not np.issubdtype(arr.dtype, np.number):
        return t(
            "expected two numbers (comprehensiveness, sufficiency); got {answer!r:.60}",
            answer=answer,
        )
    a, b = (float(v) for v in arr.reshape(-1))
    if not (np.isfinite(a) and np.isfinite(b)):
        return t("both numbers must be finite; got {a} and {b}", a=a, b=b)
    return a, b


def check_eraser_by_hand(answer: Any) -> Feedback:
    """Check ``(comprehensiveness, sufficiency)`` for :data:`ERASER_TABLE`, each the mean over the
    three bins (AOPC); within 0.006, so numbers rounded to two decimals pass. A pair, a list, an
    array or a dict with those two keys is accepted.

    >>> bool(check_eraser_by_hand((0.52, 0.09)))
    True
    >>> print(check_eraser_by_hand((0.09, 0.52)).hints[0])  # doctest: +ELLIPSIS
    the two are swapped: ...
    """
    title = "comprehensiveness and sufficiency"
    if (starter := not_answered(title, answer)) is not None:
        return starter
    pair = _as_eraser_pair(answer)
    if isinstance(pair, str):
        return Feedback(
            False, title, (pair,), ("give two numbers: (comprehensiveness, sufficiency)",)
        )
    comp, suff = _eraser_expected()

    def near(x: tuple[float, float], y: tuple[float, float]) -> bool:
        return abs(x[0] - y[0]) <= _ERASER_ATOL and abs(x[1] - y[1]) <= _ERASER_ATOL

    if near(pair, (comp, suff)):
        return Feedback(
            True,
            title,
            (
                t(
                    "comprehensiveness {comp:.3f}: removing the words costs the prediction a lot; "
                    "sufficiency {suff:.3f}: the words alone nearly keep it",
                    comp=comp,
                    suff=suff,
                ),
            ),
        )
    mistakes = _eraser_mistakes()
    hints = [hint for value, hint in mistakes if near(pair, value)]
    if not hints:  # one of the two right: name the mistake in the other
        for i, want in enumerate((comp, suff)):
            if abs(pair[i] - want) <= _ERASER_ATOL:
                other = 1 - i
                hints = [h for v, h in mistakes[1:] if abs(pair[other] - v[other]) <= _ERASER_ATOL]
    messages = []
    for name, got, want in (("comprehensiveness", pair[0], comp), ("sufficiency", pair[1], suff)):
        if abs(got - want) > _ERASER_ATOL:
            messages.append(t("{name} = {got:.3f} is not right", name=name, got=got))
    return Feedback(False, title, tuple(messages), tuple(hints[:1]))
