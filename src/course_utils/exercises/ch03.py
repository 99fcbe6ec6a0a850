"""Checkers for the exercises of chapter 3, "Softmax and the weighted sum".

Each checker runs the learner's answer on its own seeded cases, compares with ``course_utils`` and
returns a :class:`Feedback`; it never raises on a wrong answer, so the notebook runs top to bottom
with the starter code (``...``).

- :func:`check_stable_softmax`: ``stable_softmax(x)`` along the last axis, including rows of
  ``±1e4`` in float32 and ``-inf`` (masked) entries;
- :func:`check_temperature_limits`: the weights of a row of scores as ``τ -> 0`` and ``τ -> inf``;
- :func:`check_attention`: ``attention(Q, K, V, mask=None)``, the four steps, with a causal mask.

>>> def stable_softmax(x):
...     z = np.asarray(x, dtype=float)
...     e = np.exp(z - z.max(axis=-1, keepdims=True))
...     return e / e.sum(axis=-1, keepdims=True)
>>> bool(check_stable_softmax(stable_softmax))
True
>>> print(check_stable_softmax(lambda x: np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)))
✗ stable softmax: not yet right
  - test case: a float32 row with scores of ±1e4
  - softmax contains NaN, first at entry [0]
  hint: exp overflowed (inf / inf = nan): subtract the maximum of each row before exp
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..data import by_hand_example, reading_example
from ..i18n import t
from ..masks import causal_mask
from ..softmax import softmax
from ._checks import as_answer_array, check_array, check_attention_output, check_softmax
from ._feedback import Feedback
from ._learner import run_cases

__all__ = [
    "TEMPERATURE_SCORES",
    "check_attention",
    "check_stable_softmax",
    "check_temperature_limits",
]

_SEED = 2017
_SCORES = (2.0, 3.0, 3.0, -1.0)  # what the checker uses (the public name may be rebound)
#: The row of scores of exercise 3.2 (two tied maxima on purpose).
TEMPERATURE_SCORES = _SCORES


# --- exercise 3.1 ---------------------------------------------------------------------------------


def _softmax_cases() -> list[tuple[str, tuple[np.ndarray]]]:
    rng = np.random.default_rng(_SEED)
    return [
        ("the row [1, 2, 3]", (np.array([1.0, 2.0, 3.0]),)),
        ("a float32 row with scores of ±1e4", (np.array([1e4, -1e4, 0.0], dtype=np.float32),)),
        ("the row [1000, 1001, 1002]", (np.array([1000.0, 1001.0, 1002.0]),)),
        ("a row with two masked (-inf) entries", (np.array([0.5, -np.inf, 1.5, -np.inf]),)),
        ("a (3, 5) matrix: softmax of each row", (rng.normal(scale=3.0, size=(3, 5)),)),
    ]


def check_stable_softmax(stable_softmax: Callable[[Any], Any]) -> Feedback:
    """Check ``stable_softmax(x)``: softmax along the last axis that never overflows.

    Compared with :func:`course_utils.softmax.softmax` (tested against ``torch.softmax``).
    """
    title = "stable softmax"

    def compare(result: Any, x: np.ndarray) -> Feedback:
        fb = check_softmax(result, x, axis=-1, rtol=1e-4 if x.dtype == np.float32 else 1e-6)
        if fb or fb.hints:
            return fb
        got = as_answer_array(result, "softmax").astype(np.float64)
        sums = got.sum(axis=-1) if got.shape == x.shape else None
        if sums is not None and np.isfinite(sums).all() and not np.allclose(sums, 1, atol=1e-4):
            hint = "each row must sum to 1: divide the exponentials by their sum"
            return Feedback(False, title, fb.messages, (hint,))
        return fb

    return run_cases(
        title,
        stable_softmax,
        "stable_softmax",
        _softmax_cases(),
        compare,
        "right on all {n} cases, including ±1e4 in float32 and masked -inf entries",
    )


# --- exercise 3.2 ---------------------------------------------------------------------------------


def check_temperature_limits(t_to_zero: Any, t_to_infinity: Any) -> Feedback:
    """Check the limits of ``softmax(s / τ)`` for ``s = TEMPERATURE_SCORES`` as ``τ -> 0`` and
    ``τ -> inf``, compared with ``course_utils.softmax.softmax`` at ``τ = 1e-3`` and ``τ = 1e6``.

    >>> bool(check_temperature_limits([0, 0.5, 0.5, 0], [0.25, 0.25, 0.25, 0.25]))
    True
    >>> print(check_temperature_limits([0, 1, 0, 0], [0.25] * 4))
    ✗ temperature limits: not yet right
      - τ -> 0: entry [1] is 1, expected 0.5
      - τ -> 0: 2 of 4 entries differ
      hint: two scores tie for the maximum: as τ -> 0 they share the weight equally
    """
    title = "temperature limits"
    s = np.array(_SCORES)  # (4,)
    feedbacks = []
    for answer, temperature, label in (
        (t_to_zero, 1e-3, "τ -> 0"),
        (t_to_infinity, 1e6, "τ -> inf"),
    ):
        if answer is Ellipsis or answer is None:
            return Feedback(
                False,
                title,
                (t("{label}: the answer is still {answer!r}", label=label, answer=answer),),
                ("replace the `...` with a list of 4 weights",),
            )
        expected = softmax(s, temperature=temperature)  # (4,)
        fb = check_array(label, answer, expected, rtol=0, atol=1e-3)
        feedbacks.append(fb)
    if all(feedbacks):
        return Feedback(
            True,
            title,
            (
                "τ -> 0 gives the argmax, shared between the two tied maxima; "
                "τ -> inf gives the uniform distribution",
            ),
        )
    messages = tuple(f"{fb.title}: {m}" for fb in feedbacks if not fb for m in fb.messages)
    hints = []
    try:
        zero = as_answer_array(t_to_zero, "τ -> 0").astype(np.float64)
    except TypeError:
        zero = None
    if not feedbacks[0] and zero is not None and zero.shape == (4,) and np.isclose(zero.max(), 1):
        hints.append("two scores tie for the maximum: as τ -> 0 they share the weight equally")
    if not feedbacks[1] and not any("must be" in m or "could not" in m for m in messages):
        hints.append("as τ grows, every s_j / τ goes to 0, and softmax of zeros is uniform")
    return Feedback(False, title, messages, tuple(hints))


# --- exercise 3.3 ---------------------------------------------------------------------------------


def _attention_cases() -> list[tuple[np.ndarray, np.ndarray, np.ndarray, Any, str]]:
    rng = np.random.default_rng(_SEED + 1)
    bh = by_hand_example()
    rd = reading_example()
    return [
        (bh.Q, bh.K, bh.V, None, "'the cat sat down' (no mask)"),
        (
            rng.normal(size=(2, 4)),
            rng.normal(size=(5, 4)),
            rng.normal(size=(5, 3)),
            None,
            "random Q (2, 4), K (5, 4), V (5, 3): T_q != T_k",
        ),
        (rd.Q, rd.K, rd.V, causal_mask(rd.T), "看书真好 with causal_mask(4)"),
    ]


def check_attention(attention: Callable[..., Any]) -> Feedback:
    """Check ``attention(Q, K, V, mask=None)`` -> output ``(T_q, d_v)``, the four steps.

    Compared with :func:`course_utils.attention.scaled_dot_product_attention` (itself tested against
    ``torch.nn.functional.scaled_dot_product_attention``); typical mistakes get a hint.

    >>> from course_utils.attention import scaled_dot_product_attention as sdpa
    >>> bool(check_attention(lambda Q, K, V, mask=None: sdpa(Q, K, V, mask)[0]))
    True
    """
    title = "attention"

    def compare(result: Any, q: np.ndarray, k: np.ndarray, v: np.ndarray, *mask: Any) -> Feedback:
        if isinstance(result, tuple):
            return Feedback(
                False,
                title,
                (t("your function returned a tuple of {n} items", n=len(result)),),
                ("return only the output, weights @ V, shape (T_q, d_v)",),
            )
        m = mask[0] if mask else None
        fb = check_attention_output(result, q, k, v, m, name="output", rtol=1e-6, atol=1e-9)
        if fb or m is None or not any("contains NaN" in msg for msg in fb.messages):
            return fb
        # A NaN row: its scores were all -inf, so a hand-written softmax computed 0/0. With this
        # mask every query may attend to something, so the mask must have been flipped.
        polarity = (
            "every row of this mask lets the query attend to at least one key, so no row should "
            "be all -inf: is the mask's polarity reversed? True means 'may attend', so keep the "
            "scores where mask is True: np.where(mask, scores, -np.inf)"
        )
        return Feedback(False, fb.title, fb.messages, (*fb.hints, polarity))

    cases = [
        (described, (q, k, v) if mask is None else (q, k, v, mask))
        for q, k, v, mask, described in _attention_cases()
    ]
    return run_cases(
        title,
        attention,
        "attention",
        cases,
        compare,
        "right on all {n} cases, including T_q != T_k and a causal mask",
    )
