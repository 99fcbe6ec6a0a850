"""Checkers for the exercises of chapter 2, "Scaling by √d_k".

Each checker takes the learner's answer (functions or a number), runs it on its own seeded cases,
compares with ``course_utils`` (or a simulation) and returns a :class:`Feedback`. A checker never
raises on a wrong answer: the starter code (``...``) and a function that crashes both give feedback.

- :func:`check_score_variance`: ``score_var(d_k, sigma_q, sigma_k)`` and
  ``unit_scale(d_k, sigma_q, sigma_k)``;
- :func:`check_jacobian`: ``jacobian(p)``, the softmax Jacobian ``diag(p) - p pᵀ``;
- :func:`check_saturation_threshold`: the smallest ``d_k`` at which the unscaled softmax's mean
  largest weight exceeds 0.9.

>>> import math
>>> bool(check_score_variance(lambda d, a, b: d * a**2 * b**2,
...                           lambda d, a, b: 1 / (a * b * math.sqrt(d))))
True
>>> print(check_jacobian(lambda p: ...))
✗ softmax Jacobian: not yet right
  - your function returned Ellipsis
  hint: replace the `...` with your code, and end the function with `return ...` of your result
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..i18n import t
from ..saturation import softmax_jacobian
from ..scaling import sample_scores, saturation_sweep
from ..softmax import softmax
from ._checks import answer_tolerance, as_answer_array, check_number
from ._feedback import Feedback
from ._learner import not_answered, run_cases

__all__ = ["check_jacobian", "check_saturation_threshold", "check_score_variance"]

_SEED = 2017
_GRID = tuple(2**i for i in range(11))  # what the checker uses (the public name may be rebound)
SATURATION_GRID = _GRID


# --- exercise 2.1 ---------------------------------------------------------------------------------

_VAR_CASES = ((1, 1.0, 1.0), (64, 1.0, 1.0), (16, 2.0, 1.0), (100, 0.5, 3.0), (512, 0.1, 0.2))


def _simulated_variance(d_k: int, sigma_q: float, sigma_k: float, n: int = 20_000) -> float:
    rng = np.random.default_rng([_SEED, d_k])
    raw = sample_scores(d_k, 1, n, rng)  # (n, 1), unit-variance entries
    return float((raw * sigma_q * sigma_k).var(ddof=1))  # scaling q and k scales each product


def check_score_variance(
    score_var: Callable[[int, float, float], Any], unit_scale: Callable[[int, float, float], Any]
) -> Feedback:
    """Check ``Var(q·k) = d_k σ_q² σ_k²`` and the unit-variance factor ``1 / (σ_q σ_k √d_k)``.

    Each answer must match the exact formula to 1e-9 relative error; a wrong ``score_var``'s
    message also shows a simulated variance (20,000 samples), the independent evidence behind
    the formula.
    """
    title = "score variance"
    cases = [(f"d_k = {d}, sigma_q = {a:g}, sigma_k = {b:g}", (d, a, b)) for d, a, b in _VAR_CASES]

    def compare_var(result: Any, d_k: int, s_q: float, s_k: float) -> Feedback:
        expected = d_k * s_q**2 * s_k**2
        mistakes = [
            (d_k * s_q * s_k, "variances are squares of standard deviations: use sigma**2"),
            (d_k, "with sigma != 1 each product q_i k_i has variance sigma_q² sigma_k²"),
            (
                math.sqrt(d_k) * s_q**2 * s_k**2,
                "the variances of the d_k terms add up: d_k, not √d_k",
            ),
        ]

        def wrong(value: float) -> str:
            simulated = _simulated_variance(d_k, s_q, s_k)  # only when it is shown: it costs
            return t(
                "score_var: got {value:.6g}, expected {expected:.6g} (a simulation of 20,000 "
                "pairs measures {simulated:.4g})",
                value=value,
                expected=expected,
                simulated=simulated,
            )

        return check_number("score_var", result, expected, mistakes, wrong)

    def compare_scale(result: Any, d_k: int, s_q: float, s_k: float) -> Feedback:
        variance = d_k * s_q**2 * s_k**2
        want = 1.0 / (s_q * s_k * math.sqrt(d_k))
        mistakes = [
            (1.0 / variance, "scaling by c scales the variance by c², so c = 1/√Var, not 1/Var"),
            (
                1.0 / math.sqrt(d_k),
                "1/√d_k is right only for unit variances; include sigma_q and sigma_k",
            ),
        ]

        def wrong(c: float) -> str:
            return t(
                "unit_scale: got {c:.6g}, expected {want:.6g}; with your factor the variance "
                "would be {variance:.4g}, not 1",
                c=c,
                want=want,
                variance=c * c * variance,
            )

        return check_number("unit_scale", result, want, mistakes, wrong)

    for fn, name, compare in (
        (score_var, "score_var", compare_var),
        (unit_scale, "unit_scale", compare_scale),
    ):
        fb = run_cases(title, fn, name, cases, compare, "")
        if not fb:
            return fb
    return Feedback(
        True,
        title,
        (t("both functions are right on all {n} cases", n=len(cases)),),
    )


# --- exercise 2.2 ---------------------------------------------------------------------------------


def _jacobian_cases() -> list[tuple[str, tuple[np.ndarray]]]:
    rng = np.random.default_rng(_SEED + 1)
    return [
        ("p = softmax([1, 2, 3])", (softmax(np.array([1.0, 2.0, 3.0])),)),
        ("a uniform row of 4", (np.array([0.25, 0.25, 0.25, 0.25]),)),
        ("a one-hot row (1, 0, 0)", (np.array([1.0, 0.0, 0.0]),)),
        ("a random row of 7 weights", (softmax(rng.normal(scale=3.0, size=7)),)),
    ]


def check_jacobian(jacobian: Callable[[Any], Any]) -> Feedback:
    """Check ``jacobian(p) = diag(p) - p pᵀ`` against ``course_utils.saturation.softmax_jacobian``
    (itself tested against ``torch.autograd``).

    >>> bool(check_jacobian(lambda p: np.diag(p) - np.outer(p, p)))
    True
    >>> print(check_jacobian(lambda p: np.diag(p) - p @ p))
    ✗ softmax Jacobian: not yet right
      - test case: p = softmax([1, 2, 3])
      - entry [0, 0] is -0.421, expected 0.0819
      hint: p @ p is a number (the sum of p_j²); the outer product p pᵀ is np.outer(p, p)
    """
    title = "softmax Jacobian"

    def compare(result: Any, p: np.ndarray) -> Feedback:
        expected = softmax_jacobian(p)  # (T_k, T_k)
        try:
            got = as_answer_array(result, "J")
        except TypeError as err:
            return Feedback(False, title, (t("expected a matrix; {err}", err=err),))
        if got.shape != expected.shape:
            return Feedback(
                False,
                title,
                (
                    t(
                        "got shape {got}, expected {want} (T_k, T_k)",
                        got=got.shape,
                        want=expected.shape,
                    ),
                ),
                ("J has one row and one column per weight",),
            )
        rtol, atol = answer_tolerance(got.dtype, 1e-7, 1e-10)
        got = got.astype(np.float64)
        if np.allclose(got, expected, rtol=rtol, atol=atol):
            return Feedback(True, title)
        i, j = np.argwhere(~np.isclose(got, expected, rtol=rtol, atol=atol))[0]
        hints = []
        if np.allclose(got, np.diag(p) - p @ p, rtol=rtol, atol=atol):
            hints.append(
                "p @ p is a number (the sum of p_j²); the outer product p pᵀ is np.outer(p, p)"
            )
        elif np.allclose(got, -expected, rtol=rtol, atol=atol):
            hints.append("the sign is flipped: J = diag(p) - p pᵀ")
        elif np.allclose(got, np.diag(p), rtol=rtol, atol=atol):
            hints.append("the off-diagonal terms -p_i p_j are missing")
        return Feedback(
            False,
            title,
            (
                t(
                    "entry [{i}, {j}] is {got:.3g}, expected {want:.3g}",
                    i=i,
                    j=j,
                    got=got[i, j],
                    want=expected[i, j],
                ),
            ),
            tuple(hints),
        )

    return run_cases(
        title,
        jacobian,
        "jacobian",
        _jacobian_cases(),
        compare,
        "J = diag(p) - p pᵀ on all {n} rows, including a one-hot row",
    )


# --- exercise 2.3 ---------------------------------------------------------------------------------


def saturation_threshold(threshold: float = 0.9) -> int:
    """The smallest ``d_k`` of ``SATURATION_GRID`` whose unscaled mean largest weight > threshold.

    Uses ``saturation_sweep(SATURATION_GRID, t_k=8, n_rows=500, rng=np.random.default_rng(0))``.
    """
    sweep = saturation_sweep(_GRID, t_k=8, n_rows=500, rng=np.random.default_rng(0))
    above = sweep.unscaled["max_weight"] > threshold  # (11,)
    if not above.any():  # pragma: no cover - the sweep always saturates at d_k = 1024
        raise RuntimeError("no d_k on the grid exceeds the threshold")
    return int(sweep.d_ks[np.argmax(above)])


def check_saturation_threshold(answer: Any) -> Feedback:
    """Check the smallest ``d_k`` (on 1, 2, 4, ..., 1024) where the raw softmax's mean largest
    weight exceeds 0.9, with ``t_k=8, n_rows=500, rng=np.random.default_rng(0)``.

    >>> print(check_saturation_threshold(1024))
    ✗ saturation threshold: not yet right
      - 1024 is on the grid and saturated, but a smaller d_k already exceeds 0.9
      hint: look for the first d_k whose value is above 0.9, e.g. with np.argmax(values > 0.9)
    """
    title = "saturation threshold"
    if (starter := not_answered(title, answer)) is not None:
        return starter
    try:
        arr = as_answer_array(answer, "answer")
    except TypeError as err:
        arr = None
        problem = str(err)
    if arr is not None and (arr.size != 1 or not np.issubdtype(arr.dtype, np.integer)):
        problem = t(
            "answer must be an int (a d_k); got {type} {answer!r:.40}",
            type=type(answer).__name__,
            answer=answer,
        )
        arr = None
    if arr is None:
        return Feedback(False, title, (problem,), ("give one whole number, e.g. int(...)",))
    answer = int(arr.reshape(()))
    expected = saturation_threshold()
    if int(answer) == expected:
        return Feedback(
            True,
            title,
            (t("d_k = {d_k}: the first d_k whose mean largest weight exceeds 0.9", d_k=expected),),
        )
    if int(answer) not in _GRID:
        return Feedback(
            False,
            title,
            (t("{answer} is not on the grid 1, 2, 4, ..., 1024", answer=answer),),
            ("use d_ks = [2**i for i in range(11)]",),
        )
    if int(answer) > expected:
        return Feedback(
            False,
            title,
            (
                t(
                    "{answer} is on the grid and saturated, but a smaller d_k already exceeds 0.9",
                    answer=answer,
                ),
            ),
            ("look for the first d_k whose value is above 0.9, e.g. with np.argmax(values > 0.9)",),
        )
    return Feedback(
        False,
        title,
        (t("at d_k = {d_k} the mean largest weight is still at most 0.9", d_k=answer),),
        ("did you read the scaled column? the exercise asks about the raw (unscaled) softmax",),
    )
