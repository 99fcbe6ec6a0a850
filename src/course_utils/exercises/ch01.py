"""Checkers for the exercises of chapter 1, "Queries, keys and values".

The learner writes a *function*; the checker calls it on its own seeded test cases (including
shapes the chapter never used, so a hard-coded answer fails), compares each result with the package
through the generic checkers of :mod:`course_utils.exercises._checks`, and returns one ``Feedback``.
A checker never raises on a wrong answer: the starter code (a body of ``...``, which returns
``None``) and a function that crashes both produce feedback, so the chapter notebook runs from top
to bottom.

- :func:`check_dot_product`: ``dot(q, k)``, the dot product of two vectors, with a loop;
- :func:`check_all_scores`: ``all_scores(Q, K)``, all the raw scores ``Q Kᵀ``;
- :func:`check_attend_one`: ``attend_one(q, K, V)``, the four steps for one query;
- :func:`check_shapes`: a dict with the shapes of ``Q, K, V, scores, weights, output``.

>>> def dot(q, k):
...     return sum(q[m] * k[m] for m in range(len(q)))
>>> bool(check_dot_product(dot))
True
>>> def dot(q, k):
...     ...  # your code here
>>> print(check_dot_product(dot))
✗ dot product: not yet right
  - your function returned None
  hint: replace the `...` with your code, and end the function with `return ...` of your result
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..attention import attention_scores, scaled_dot_product_attention
from ..data import by_hand_example
from ..i18n import t
from ..softmax import softmax
from ._checks import Mistake, as_answer_array, check_array, check_scores, not_a_pair
from ._feedback import Feedback
from ._learner import run_cases

__all__ = [
    "SHAPES_SCENARIO",
    "check_all_scores",
    "check_attend_one",
    "check_dot_product",
    "check_shapes",
]

_SEED = 2017  # the checkers' own test data, independent of the notebook's rng

Case = tuple[str, tuple[NDArray, ...]]  # (description, arguments)


# --- exercise 1: one dot product ------------------------------------------------------------------


def _dot_cases() -> list[Case]:
    rng = np.random.default_rng(_SEED)
    ex = by_hand_example()
    return [
        ("q_sat = (2, 0, 0), k_cat = (2, 0, 0)", (np.array(ex.Q[2]), np.array(ex.K[1]))),
        ("q = (1, 2, 3), k = (4, -5, 6)", (np.array([1.0, 2.0, 3.0]), np.array([4.0, -5.0, 6.0]))),
        ("vectors of length 1, q = (3,), k = (-2,)", (np.array([3.0]), np.array([-2.0]))),
        (
            "two random vectors of length 7",
            (rng.normal(size=7).round(2), rng.normal(size=7).round(2)),
        ),
    ]


def check_dot_product(dot: Callable[[Any, Any], Any]) -> Feedback:
    """Check ``dot(q, k)``: the dot product ``sum_m q[m] * k[m]`` of two 1-D arrays of equal length.

    The expected numbers come from ``numpy.dot``; the checker looks at the results only, not at how
    they were computed.

    >>> bool(check_dot_product(lambda q, k: float(np.dot(q, k))))
    True
    >>> print(check_dot_product(lambda q, k: q * k))
    ✗ dot product: not yet right
      - test case: q_sat = (2, 0, 0), k_cat = (2, 0, 0)
      - dot product has shape (3,), expected ()
      hint: you returned the products q[m] * k[m]; add them up to get one number
    """
    title = "dot product"

    def compare(result: Any, q: NDArray, k: NDArray) -> Feedback:
        mistakes = [
            Mistake("you returned the products q[m] * k[m]; add them up to get one number", q * k),
            Mistake("multiply entry by entry first (q[m] * k[m]), then add up", q.sum() * k.sum()),
            Mistake("the entries are multiplied, not added: q[m] * k[m]", np.sum(q + k)),
        ]
        return check_array(title, result, np.dot(q, k), mistakes=mistakes)

    return run_cases(
        title, dot, "dot", _dot_cases(), compare, "all {n} test cases give the right dot product"
    )


# --- exercise 2: all the scores at once -----------------------------------------------------------


def _scores_cases() -> list[Case]:
    rng = np.random.default_rng(_SEED + 1)
    ex = by_hand_example()
    return [
        (
            "Q and K of 'the cat sat down' (T_q = T_k = 4, d_k = 3)",
            (np.array(ex.Q), np.array(ex.K)),
        ),
        (
            "a random Q of shape (2, 3) and K of shape (5, 3)",
            (rng.normal(size=(2, 3)).round(2), rng.normal(size=(5, 3)).round(2)),
        ),
    ]


def check_all_scores(all_scores: Callable[[Any, Any], Any]) -> Feedback:
    """Check ``all_scores(Q, K)``: the raw score matrix ``Q Kᵀ``, shape ``(T_q, T_k)``, not scaled.

    >>> bool(check_all_scores(lambda Q, K: Q @ K.T))
    True
    >>> print(check_all_scores(lambda Q, K: K @ Q.T))  # doctest: +ELLIPSIS
    ✗ all scores: not yet right
      - test case: Q and K of 'the cat sat down' (T_q = T_k = 4, d_k = 3)
      - entry [0, 1] is 0, expected 4
      - 6 of 16 entries differ
      hint: this is K·Qᵀ (one row per key); compute Q @ K.T so that row i belongs to query i
    """
    title = "all scores"
    return run_cases(
        title,
        all_scores,
        "all_scores",
        _scores_cases(),
        lambda result, Q, K: check_scores(result, Q, K, scaled=False, name="scores"),
        "all {n} test cases match Q Kᵀ, including one with T_q ≠ T_k",
    )


# --- exercise 3: the four steps for one query -----------------------------------------------------


def _attend_cases() -> list[Case]:
    rng = np.random.default_rng(_SEED + 2)
    ex = by_hand_example()
    return [
        (
            "the query of 'sat' with K and V of 'the cat sat down'",
            (np.array(ex.Q[2]), np.array(ex.K), np.array(ex.V)),
        ),
        (
            "a random q of shape (4,), K of shape (6, 4) and V of shape (6, 2)",
            (
                rng.normal(size=4).round(2),
                rng.normal(size=(6, 4)).round(2),
                rng.normal(size=(6, 2)).round(2),
            ),
        ),
    ]


def check_attend_one(attend_one: Callable[[Any, Any, Any], Any]) -> Feedback:
    """Check ``attend_one(q, K, V) -> (weights, output)`` for one query ``q`` of shape ``(d_k,)``.

    ``weights = softmax(K q / √d_k)`` has shape ``(T_k,)`` and ``output = weights @ V`` shape
    ``(d_v,)``: the four steps of scaled dot-product attention for a single query. The expected
    answer is :func:`course_utils.scaled_dot_product_attention` applied to ``q`` as a one-row ``Q``.

    >>> def attend_one(q, K, V):
    ...     weights = softmax(K @ q / np.sqrt(len(q)))
    ...     return weights, weights @ V
    >>> bool(check_attend_one(attend_one))
    True
    >>> def unscaled(q, K, V):
    ...     weights = softmax(K @ q)
    ...     return weights, weights @ V
    >>> print(check_attend_one(unscaled))  # doctest: +ELLIPSIS
    ✗ attend one query: not yet right
      - test case: the query of 'sat' with K and V of 'the cat sat down'
      - entry [0] is 0.0174, expected 0.0765
      - 4 of 4 entries differ
      hint: step 2: divide the scores by √d_k = √3 before the softmax
    """
    title = "attend one query"

    def compare(result: Any, q: NDArray, K: NDArray, V: NDArray) -> Feedback:
        wrong_type = not_a_pair(title, result, "weights, output")
        if wrong_type is not None:
            return wrong_type
        output, weights = scaled_dot_product_attention(q[None, :], K, V)  # (1, d_v), (1, T_k)
        d_k = q.shape[0]
        raw = attention_scores(q[None, :], K, scale=1.0)[0]  # (T_k,)
        scaled = attention_scores(q[None, :], K)[0]  # (T_k,): · 1/√d_k
        weight_mistakes = [
            Mistake(
                t("step 2: divide the scores by √d_k = √{d_k} before the softmax", d_k=d_k),
                softmax(raw),
            ),
            Mistake("step 3: turn the scaled scores into weights with softmax", scaled),
            Mistake(
                "these are the raw scores: scale them (step 2) and apply softmax (step 3)", raw
            ),
            Mistake(t("divide by √d_k = √{d_k}, not by d_k = {d_k}", d_k=d_k), softmax(raw / d_k)),
        ]
        fb_w = check_array("weights", result[0], weights[0], mistakes=weight_mistakes)
        if fb_w:
            output_mistakes = [
                Mistake("step 4 mixes the values V, not the keys K", weights[0] @ K),
                Mistake(
                    "add up over the keys: weights @ V gives one vector of length d_v",
                    weights[0][:, None] * V,
                ),
                Mistake("step 4 multiplies the weights by V: output = weights @ V", V.T),
            ]
            return check_array("output", result[1], output[0], mistakes=output_mistakes)
        swapped = [check_array("", result[0], output[0]), check_array("", result[1], weights[0])]
        if all(swapped):
            return Feedback(
                False,
                title,
                ("the pair is in the wrong order: the first item is the output",),
                ("return the weights first, then the output: `return weights, output`",),
            )
        try:
            first = as_answer_array(result[0], "weights")
        except TypeError:
            return fb_w
        if first.shape == output[0].shape != weights[0].shape:
            return Feedback(
                False,
                title,
                (t("the first item has the shape of the output, {shape}", shape=first.shape),),
                ("return the weights first, then the output: `return weights, output`",),
            )
        return fb_w

    return run_cases(
        title,
        attend_one,
        "attend_one",
        _attend_cases(),
        compare,
        "weights and output match scaled_dot_product_attention on all {n} test cases",
    )


# --- exercise 4: predict the shapes ---------------------------------------------------------------

_SCENARIO = (("T", 6), ("d", 8), ("d_k", 4), ("d_v", 5))  # what the checker uses: immutable
SHAPES_SCENARIO: Mapping[str, int] = MappingProxyType(dict(_SCENARIO))
"""The sentence of the shapes exercise (read-only; the checker keeps its own copy, so changing or
replacing this in a notebook cannot change the right answer): ``T`` tokens, embeddings of size
``d``, ``W_Q`` and ``W_K`` of shape ``(d, d_k)``, ``W_V`` of shape ``(d, d_v)``."""

_SHAPE_WHY = {
    "Q": "Q = X W_Q is (T, d) @ (d, d_k)",
    "K": "K = X W_K is (T, d) @ (d, d_k)",
    "V": "V = X W_V is (T, d) @ (d, d_v)",
    "scores": "Q Kᵀ is (T, d_k) @ (d_k, T): one score per query-key pair",
    "weights": "softmax keeps the shape of the scores",
    "output": "weights V is (T, T) @ (T, d_v)",
}


def _expected_shapes() -> dict[str, tuple[int, int]]:
    scenario = dict(_SCENARIO)
    T, d, d_k, d_v = scenario["T"], scenario["d"], scenario["d_k"], scenario["d_v"]
    X = np.zeros((T, d))  # (T, d): the shapes come from the real computation
    W_QK = np.zeros((d, d_k))  # (d, d_k)
    W_V = np.zeros((d, d_v))  # (d, d_v)
    Q, K, V = X @ W_QK, X @ W_QK, X @ W_V  # (T, d_k), (T, d_k), (T, d_v)
    output, weights = scaled_dot_product_attention(Q, K, V)  # (T, d_v), (T, T)
    return {
        "Q": Q.shape,
        "K": K.shape,
        "V": V.shape,
        "scores": attention_scores(Q, K).shape,
        "weights": weights.shape,
        "output": output.shape,
    }


def _as_shape(answer: Any) -> tuple[int, ...] | None:
    """``answer`` as a tuple of ints, or None (for ``(6.7, 4.2)`` or ``"(6, 4)"``)."""
    if isinstance(answer, str | bytes) or not hasattr(answer, "__iter__"):
        return None
    items = list(answer)
    if not all(isinstance(n, int | np.integer) and not isinstance(n, bool) for n in items):
        return None
    return tuple(int(n) for n in items)


def check_shapes(shapes: Mapping[str, Any]) -> Feedback:
    """Check predicted shapes for :data:`SHAPES_SCENARIO` (6 tokens, d = 8, d_k = 4, d_v = 5).

    ``shapes`` maps each of ``"Q", "K", "V", "scores", "weights", "output"`` to a tuple of ints.

    >>> right = {"Q": (6, 4), "K": (6, 4), "V": (6, 5), "scores": (6, 6), "weights": (6, 6),
    ...          "output": (6, 5)}
    >>> bool(check_shapes(right))
    True
    >>> print(check_shapes({**right, "output": (6, 4), "V": ...}))
    ✗ shapes: not yet right
      - 4 of 6 right
      - V: not filled in yet
      - output: expected (6, 5), got (6, 4)
      hint: output: weights V is (T, T) @ (T, d_v)
    """
    title = "shapes"
    if not isinstance(shapes, Mapping):
        return Feedback(
            False,
            title,
            (
                t(
                    "expected a dict such as {{'Q': (6, 4), ...}}; got a {type}",
                    type=type(shapes).__name__,
                ),
            ),
        )
    expected = _expected_shapes()
    messages: list[str] = []
    hints: list[str] = []
    right = 0
    for name, shape in expected.items():
        answer = shapes.get(name, None)
        if answer is Ellipsis or answer is None:
            messages.append(t("{name}: not filled in yet", name=name))
            continue
        got = _as_shape(answer)
        if got is None:
            messages.append(
                t(
                    "{name}: expected a tuple of ints such as (6, 4); got {answer!r:.40}",
                    name=name,
                    answer=answer,
                )
            )
            hints.append(
                t("{name}: a shape is a tuple of whole numbers, one per dimension", name=name)
            )
            continue
        if got == shape:
            right += 1
        else:
            messages.append(
                t("{name}: expected {shape}, got {got}", name=name, shape=shape, got=got)
            )
            hints.append(f"{name}: {_SHAPE_WHY[name]}")
    unknown = sorted(str(k) for k in shapes if k not in expected)
    if unknown:
        messages.append(t("unexpected names (ignored): {unknown}", unknown=", ".join(unknown)))
    if right == len(expected):
        return Feedback(True, title, (t("all {n} shapes are right", n=len(expected)), *messages))
    return Feedback(
        False,
        title,
        (t("{right} of {n} right", right=right, n=len(expected)), *messages),
        tuple(hints),
    )
