"""Chapter 1's exercise checkers: worked solutions pass, each typical mistake gets its own hint.

The solutions below are written independently of ``course_utils`` (plain loops and numpy), so a bug
in the package the checkers compare against would show up here as a failing "solution passes" case.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_utils.data import by_hand_example
from course_utils.exercises import Feedback
from course_utils.exercises.ch01 import (
    SHAPES_SCENARIO,
    check_all_scores,
    check_attend_one,
    check_dot_product,
    check_shapes,
)


def _np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())  # (n,)
    return e / e.sum()


def _starter(*args):  # what a learner's function with a body of `...` returns
    return None


def _crashes(*args):
    raise IndexError("index 3 is out of bounds")


# --- exercise 1: dot product ----------------------------------------------------------------------

DOT_CASES = [
    # (name, function, passed, text that must appear in the feedback)
    ("loop", lambda q, k: sum(q[m] * k[m] for m in range(len(q))), True, "all 4 test cases"),
    ("numpy", lambda q, k: np.dot(q, k), True, "all 4 test cases"),
    ("products, not summed", lambda q, k: q * k, False, "add them up"),
    ("sum times sum", lambda q, k: np.sum(q) * np.sum(k), False, "multiply entry by entry first"),
    ("added, not multiplied", lambda q, k: np.sum(q + k), False, "multiplied, not added"),
    ("off by one", lambda q, k: sum(q[m] * k[m] for m in range(len(q) - 1)), False, "expected"),
    ("hard-coded 4", lambda q, k: 4.0, False, "q = (1, 2, 3), k = (4, -5, 6)"),
    ("starter", _starter, False, "returned None"),
    ("crashes", _crashes, False, "raised IndexError: index 3 is out of bounds"),
]


@pytest.mark.parametrize(("name", "fn", "passed", "text"), DOT_CASES, ids=[c[0] for c in DOT_CASES])
def test_check_dot_product(name, fn, passed, text):
    fb = check_dot_product(fn)
    assert isinstance(fb, Feedback)
    assert fb.passed is passed, str(fb)
    assert text in str(fb)


# --- exercise 2: all scores -----------------------------------------------------------------------


def _loop_scores(Q, K):
    T_q, T_k = Q.shape[0], K.shape[0]
    S = np.zeros((T_q, T_k))  # (T_q, T_k)
    for i in range(T_q):
        for j in range(T_k):
            S[i, j] = sum(Q[i, m] * K[j, m] for m in range(Q.shape[1]))
    return S


def _hard_coded_scores(Q, K):
    ex = by_hand_example()
    return ex.Q @ ex.K.T  # (4, 4), whatever Q and K are


SCORES_CASES = [
    ("loop", _loop_scores, True, "T_q ≠ T_k"),
    ("matmul", lambda Q, K: Q @ K.T, True, "all 2 test cases"),
    ("K Q^T", lambda Q, K: K @ Q.T, False, "this is K·Qᵀ"),
    ("scaled", lambda Q, K: Q @ K.T / math.sqrt(Q.shape[1]), False, "already divided by √d_k"),
    ("hard-coded", _hard_coded_scores, False, "has shape (4, 4), expected (2, 5)"),
    ("Q^T K", lambda Q, K: Q.T @ K, False, "expected (4, 4)"),
    ("starter", _starter, False, "returned None"),
    ("not a function", ..., False, "all_scores is still Ellipsis"),
    ("called instead of passed", np.zeros((4, 4)), False, "pass the function without calling it"),
]


@pytest.mark.parametrize(
    ("name", "fn", "passed", "text"), SCORES_CASES, ids=[c[0] for c in SCORES_CASES]
)
def test_check_all_scores(name, fn, passed, text):
    fb = check_all_scores(fn)
    assert fb.passed is passed, str(fb)
    assert text in str(fb)


# --- exercise 3: attend one query -----------------------------------------------------------------


def _attend_right(q, K, V):
    weights = _np_softmax(K @ q / math.sqrt(len(q)))  # (T_k,)
    return weights, weights @ V  # (T_k,), (d_v,)


ATTEND_CASES = [
    ("right", _attend_right, True, "match scaled_dot_product_attention"),
    ("as a list", lambda q, K, V: list(_attend_right(q, K, V)), True, "all 2 test cases"),
    (
        "unscaled",
        lambda q, K, V: (_np_softmax(K @ q), _np_softmax(K @ q) @ V),
        False,
        "divide the scores by √d_k = √3",
    ),
    (
        "divided by d_k",
        lambda q, K, V: (_np_softmax(K @ q / len(q)), _np_softmax(K @ q / len(q)) @ V),
        False,
        "not by d_k = 3",
    ),
    (
        "no softmax",
        lambda q, K, V: (K @ q / math.sqrt(len(q)), K @ q / math.sqrt(len(q)) @ V),
        False,
        "turn the scaled scores into weights with softmax",
    ),
    (
        "mixes K",
        lambda q, K, V: (_attend_right(q, K, V)[0], _attend_right(q, K, V)[0] @ K),
        False,
        "mixes the values V, not the keys K",
    ),
    (
        "not summed",
        lambda q, K, V: (_attend_right(q, K, V)[0], _attend_right(q, K, V)[0][:, None] * V),
        False,
        "add up over the keys",
    ),
    ("swapped", lambda q, K, V: _attend_right(q, K, V)[::-1], False, "return the weights first"),
    ("only weights", lambda q, K, V: _attend_right(q, K, V)[0], False, "expected a pair"),
    ("starter", _starter, False, "returned None"),
    ("crashes", _crashes, False, "raised IndexError"),
]


@pytest.mark.parametrize(
    ("name", "fn", "passed", "text"), ATTEND_CASES, ids=[c[0] for c in ATTEND_CASES]
)
def test_check_attend_one(name, fn, passed, text):
    fb = check_attend_one(fn)
    assert fb.passed is passed, str(fb)
    assert text in str(fb)


# --- exercise 4: shapes ---------------------------------------------------------------------------


def _right_shapes() -> dict[str, tuple[int, int]]:
    T, d_k, d_v = SHAPES_SCENARIO["T"], SHAPES_SCENARIO["d_k"], SHAPES_SCENARIO["d_v"]
    return {"Q": (T, d_k), "K": (T, d_k), "V": (T, d_v), "scores": (T, T), "weights": (T, T),
            "output": (T, d_v)}  # fmt: skip


SHAPES_CASES = [
    ("right", _right_shapes(), True, "all 6 shapes are right"),
    ("lists are fine", {k: list(v) for k, v in _right_shapes().items()}, True, "all 6"),
    ("starter", dict.fromkeys(_right_shapes(), ...), False, "0 of 6 right"),
    ("V with d_k", {**_right_shapes(), "V": (6, 4)}, False, "V: expected (6, 5), got (6, 4)"),
    ("scores (d_k, d_k)", {**_right_shapes(), "scores": (4, 4)}, False, "one score per query-key"),
    ("missing", {"Q": (6, 4)}, False, "K: not filled in yet"),
    ("extra name", {**_right_shapes(), "W_Q": (8, 4)}, True, "unexpected names (ignored): W_Q"),
    ("not ints", {**_right_shapes(), "Q": "6 by 4"}, False, "expected a tuple of ints"),
    ("not a dict", [(6, 4)], False, "expected a dict"),
]


@pytest.mark.parametrize(
    ("name", "answer", "passed", "text"), SHAPES_CASES, ids=[c[0] for c in SHAPES_CASES]
)
def test_check_shapes(name, answer, passed, text):
    fb = check_shapes(answer)
    assert fb.passed is passed, str(fb)
    assert text in str(fb)


def test_shapes_scenario_is_what_the_exercise_says():
    assert SHAPES_SCENARIO == {"T": 6, "d": 8, "d_k": 4, "d_v": 5}


def test_feedback_is_deterministic():
    """The notebook shows the starter's feedback and nbval compares it: it must not vary."""
    first = [
        str(check(_starter)) for check in (check_dot_product, check_all_scores, check_attend_one)
    ]
    second = [
        str(check(_starter)) for check in (check_dot_product, check_all_scores, check_attend_one)
    ]
    assert first == second
    assert "0x" not in "".join(first)  # no memory addresses
