"""Generic checkers for the exercises: compare a learner's answer with the package's result.

Each checker returns a :class:`~course_utils.exercises.Feedback` that says what is right, or exactly
what is wrong: the shape, the first entry that differs, a row that does not sum to 1. Typical
mistakes (forgot to scale, softmax over the wrong axis, K not transposed, ...) are recognised by
computing the wrong answer they produce and comparing: if the learner's answer equals one of them,
the feedback names the mistake.

The package re-exports the public names of this module (``course_utils.exercises.__all__``).
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from .._validation import as_bool_array, as_float_array, shape_str
from ..attention import attention_scores, default_scale, scaled_dot_product_attention
from ..i18n import t
from ..masks import causal_mask
from ..softmax import softmax
from ._feedback import Feedback
from ._learner import run_cases


@dataclass(frozen=True)
class Mistake:
    """A typical wrong answer: the value it produces, and the hint to give when an answer equals it.

    >>> Mistake("did you forget to divide by √d_k?", [[4.0, 0.0]]).hint
    'did you forget to divide by √d_k?'
    """

    hint: str
    value: Any


def to_numpy(answer: Any) -> Any:
    """Torch tensors (also inside lists, also with ``requires_grad``) as numpy, without torch.

    Anything else is returned as it is. :func:`check_array` applies it to the answer, the
    expected value and every :class:`Mistake`'s value, so checkers may pass tensors.

    >>> to_numpy([1, 2.5])
    [1, 2.5]
    """
    if hasattr(answer, "detach") and hasattr(answer, "numpy"):  # a torch tensor
        return answer.detach().cpu().numpy()
    if isinstance(answer, list | tuple):
        return [to_numpy(a) for a in answer]
    return answer


def as_answer_array(answer: Any, name: str) -> NDArray:
    """Convert a learner's answer (list, numpy array, torch tensor) to a numpy array.

    Raises ``TypeError`` naming ``name`` when the answer is not numeric (``None``, strings, ragged
    lists, ...). Booleans stay boolean. Torch tensors may require grad.

    >>> as_answer_array([[1, 2]], "scores").dtype
    dtype('int64')
    >>> as_answer_array([[1, 2], [3]], "scores")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: scores could not be turned into an array: it is not rectangular ...
    """
    if answer is None or answer is Ellipsis:
        raise TypeError(
            t(
                "{name} is {answer!r}: did the cell assign or return a value?",
                name=name,
                answer=answer,
            )
        )
    if isinstance(answer, str | bytes):
        raise TypeError(
            t(
                "{name} must be a numeric array; got the text {answer!r:.40}",
                name=name,
                answer=answer,
            )
        )
    try:
        arr = np.asarray(to_numpy(answer))
    except ValueError:
        raise TypeError(
            t(
                "{name} could not be turned into an array: it is not rectangular (rows of "
                "different lengths?)",
                name=name,
            )
        ) from None
    except Exception as err:  # anything numpy cannot read: say so, never a traceback
        raise TypeError(f"{name} could not be turned into an array: {err}") from None
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        what = "text" if arr.dtype.kind in "US" else f"dtype {arr.dtype}"
        raise TypeError(
            t(
                "{name} must be a numeric array; got {type} of {what}",
                name=name,
                type=type(answer).__name__,
                what=what,
            )
        )
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real; got complex dtype {arr.dtype}")
    return arr


def answer_tolerance(
    dtype: Any, rtol: float, atol: float, scale: float = 1.0
) -> tuple[float, float]:
    """Tolerances for an answer of ``dtype``: at least what its precision can represent.

    A right answer computed in float32 (numpy or torch) differs from the float64 reference by a
    few units of float32's last place; it is accepted. ``scale`` is the size of the largest
    expected entry, so that ``atol`` grows with the numbers compared.

    >>> answer_tolerance(np.float64, 1e-9, 0.0)
    (1e-09, 0.0)
    >>> rtol, atol = answer_tolerance(np.float32, 1e-9, 0.0)
    >>> bool(rtol > 1e-6)
    True
    """
    dt = np.dtype(dtype)
    if not np.issubdtype(dt, np.floating) or dt.itemsize >= 8:
        return rtol, atol
    eps = float(np.finfo(dt).eps)
    return max(rtol, 32 * eps), max(atol, 32 * eps * max(1.0, float(scale)))


def format_index(index: Sequence[int]) -> str:
    """``(1, 2)`` -> ``'[1, 2]'``."""
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def _fmt(x: float, digits: int) -> str:
    if math.isinf(x):
        return "-inf" if x < 0 else "inf"
    if math.isnan(x):
        return "nan"
    text = f"{x:.{digits}g}"
    return "0" if text == "-0" else text


def format_pair(value: float, expected: float) -> tuple[str, str]:
    """Format two numbers with the fewest significant digits (3 to 8) that tell them apart.

    >>> format_pair(0.5234, 0.6123)
    ('0.523', '0.612')
    >>> format_pair(1.00001, 1.0)
    ('1.00001', '1')
    """
    for digits in range(3, 9):
        a, b = _fmt(float(value), digits), _fmt(float(expected), digits)
        if a != b:
            return a, b
    return a, b


def _matches(answer: NDArray, candidate: NDArray, rtol: float, atol: float) -> bool:
    if answer.shape != candidate.shape:
        return False
    return bool(np.allclose(answer, candidate, rtol=rtol, atol=atol))


def _matching_hints(
    answer: NDArray, expected: NDArray, mistakes: Iterable[Mistake], rtol: float, atol: float
) -> list[str]:
    hints = []
    for mistake in mistakes:
        try:
            candidate = np.asarray(to_numpy(mistake.value), dtype=np.float64)
        except (TypeError, ValueError):
            continue
        if _matches(candidate, expected, rtol, atol):
            continue  # this "mistake" gives the right answer here: it tells nothing
        if _matches(answer, candidate, rtol, atol):
            # Two mistakes that give the same value here cannot be told apart: the first listed
            # (the most specific) is the diagnosis.
            hints.append(mistake.hint)
            break
    return hints


def not_a_pair(title: str, result: Any, names: str) -> Feedback | None:
    """Feedback when a function that returns two things, ``names`` (``"m, l"``), did not.

    >>> not_a_pair("merge", (1.0, 2.0), "m, l") is None
    True
    >>> print(not_a_pair("merge", 1.0, "m, l"))
    ✗ merge: not yet right
      - expected a pair (m, l); got a float
      hint: end the function with `return m, l`
    """
    if isinstance(result, tuple | list) and len(result) == 2:
        return None
    return Feedback(
        False,
        title,
        (t("expected a pair ({names}); got a {type}", names=names, type=type(result).__name__),),
        (t("end the function with `return {names}`", names=names),),
    )


def check_number(
    name: str,
    result: Any,
    expected: float,
    mistakes: Sequence[tuple[float, str]],
    wrong: str | Callable[[float], str],
    *,
    atol: float = 0.0,
) -> Feedback:
    """Compare a learner's number (float, numpy or torch scalar, also float32) with ``expected``.

    Equal within ``1e-9`` relative (more for float32) or within ``atol`` (e.g. ``5e-4`` accepts a
    fraction rounded to three decimals). ``mistakes`` are ``(value, hint)``: the hint of the first
    whose value the answer equals, with the same tolerance, is given. ``wrong`` is the message for
    a wrong answer: a template of :func:`~course_utils.i18n.t` with the fields ``{value}`` (the
    answer) and ``{expected}`` (give it as a literal, so the catalogue finds it), or, for a
    message that needs more than these two, a function of the answer that returns the text.

    >>> print(check_number("share", 0.25, 0.75, [(0.25, "that is the part kept")],
    ...                    "got {value:g}, expected {expected:g}"))
    ✗ share: not yet right
      - got 0.25, expected 0.75
      hint: that is the part kept
    >>> print(check_number("share", 0.5, 0.75, [], lambda v: f"got {v:g}, {0.75 - v:g} short"))
    ✗ share: not yet right
      - got 0.5, 0.25 short
    >>> bool(check_number("share", 0.750, 0.7503, [], str, atol=5e-4))
    True
    """
    try:
        arr = as_answer_array(result, name)
    except TypeError as err:
        return Feedback(False, name, (t("expected one number; {err}", err=err),))
    if arr.size != 1:
        return Feedback(
            False,
            name,
            (t("expected one number; got an array of shape {shape}", shape=tuple(arr.shape)),),
        )
    rtol, _ = answer_tolerance(arr.dtype, 1e-9, 0.0)
    value = float(arr.reshape(()))

    def same(a: float, b: float) -> bool:
        return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)

    if same(value, expected):
        return Feedback(True, name)
    hints = [hint for candidate, hint in mistakes if same(value, candidate)]
    message = t(wrong, value=value, expected=expected) if isinstance(wrong, str) else wrong(value)
    return Feedback(False, name, (message,), tuple(hints[:1]))


def _not_numeric(name: str, answer: Any) -> Feedback | None:
    try:
        as_answer_array(answer, name)
    except TypeError as err:
        return Feedback(False, name, (str(err),))
    return None


def _nan_feedback(name: str, got: NDArray, hint: str | None) -> Feedback | None:
    """Feedback naming the first NaN of ``got`` (``hint``: where a NaN usually comes from in this
    exercise), or None when ``got`` has none: a NaN is reported before any comparison, since it
    makes every comparison false.

    >>> print(_nan_feedback("softmax", np.array([0.5, np.nan]), "exp overflowed?"))
    ✗ softmax: not yet right
      - softmax contains NaN, first at entry [1]
      hint: exp overflowed?
    >>> _nan_feedback("softmax", np.array([0.5, 0.5]), None) is None
    True
    """
    if not (np.issubdtype(got.dtype, np.floating) and np.isnan(got).any()):
        return None
    where = format_index(np.argwhere(np.isnan(got))[0])
    return Feedback(
        False,
        name,
        (t("{name} contains NaN, first at entry {where}", name=name, where=where),),
        (hint,) if hint else (),
    )


def _shape_feedback(
    name: str, got: tuple[int, ...], want: tuple[int, ...], hints: Sequence[str] = ()
) -> Feedback:
    """Feedback for an answer of shape ``got`` where ``want`` was expected (``hints``: a
    recognised reason, such as a transpose).

    >>> print(_shape_feedback("weights", (1, 2), (2, 2)))
    ✗ weights: not yet right
      - weights has shape (1, 2), expected (2, 2)
    """
    message = t(
        "{name} has shape {got}, expected {want}",
        name=name,
        got=shape_str(got),
        want=shape_str(want),
    )
    return Feedback(False, name, (message,), tuple(hints))


def check_array(
    name: str,
    answer: Any,
    expected: Any,
    *,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    mistakes: Iterable[Mistake] = (),
    nan_hint: str | None = None,
) -> Feedback:
    """Compare ``answer`` with ``expected`` entry by entry; name the first difference and mistake.

    Checks, in order: numeric, no NaN, shape, values (``np.isclose`` with ``rtol``/``atol``; equal
    infinities count as equal). ``mistakes`` are wrong answers with a hint each: if ``answer``
    equals one (and it differs from ``expected``), its hint is added. The answer, ``expected`` and
    the mistakes' values may be torch tensors (:func:`to_numpy`).

    >>> forgot = Mistake("forgot √d_k?", [[4.0, 0.0]])
    >>> print(check_array("scores", [[4.0, 0.0]], [[2.0, 0.0]], mistakes=[forgot]))
    ✗ scores: not yet right
      - entry [0, 0] is 4, expected 2
      - 1 of 2 entries differ
      hint: forgot √d_k?
    >>> print(check_array("weights", [[0.5, 0.5]], [[0.5, 0.5], [1.0, 0.0]]))
    ✗ weights: not yet right
      - weights has shape (1, 2), expected (2, 2)
    >>> check_array("weights", [[0.5, 0.5]], [[0.5, 0.5]]).passed
    True
    """
    try:
        got = as_answer_array(answer, name)
    except TypeError as err:
        return Feedback(False, name, (str(err),))
    want = np.asarray(to_numpy(expected))
    mistakes = list(mistakes)
    size = np.abs(want.astype(np.float64))
    size = size[np.isfinite(size)]
    rtol, atol = answer_tolerance(got.dtype, rtol, atol, float(size.max()) if size.size else 1.0)
    nan = _nan_feedback(name, got, nan_hint)
    if nan is not None:
        return nan
    got_f = got.astype(np.float64)
    want_f = want.astype(np.float64)
    if got.shape != want.shape:
        hints = _matching_hints(got_f, want_f, mistakes, rtol, atol)
        if (
            not hints
            and got.ndim >= 2
            and want_f.ndim >= 2
            and got.shape == np.swapaxes(want_f, -1, -2).shape
            and _matches(got_f, np.swapaxes(want_f, -1, -2), rtol, atol)
        ):
            hints.append(t("{name} is the transpose of the expected result", name=name))
        return _shape_feedback(name, got.shape, want.shape, hints)
    close = np.isclose(got_f, want_f, rtol=rtol, atol=atol) | (got_f == want_f)  # (same shape)
    n = close.size
    if close.all():
        return Feedback(
            True,
            name,
            (
                t(
                    "shape {shape} is right and all {n} entries match",
                    shape=shape_str(got.shape),
                    n=n,
                ),
            ),
        )
    bad = np.argwhere(~close)
    first = tuple(bad[0])
    value, target = format_pair(got_f[first], want_f[first])
    messages = [
        t("your answer is {answer}, expected {want}", answer=value, want=target)
        if got.ndim == 0  # one number: not "entry [] is ..."
        else t(
            "entry {index} is {got}, expected {want}",
            index=format_index(first),
            got=value,
            want=target,
        )
    ]
    if got.ndim:  # "1 of 1 entries differ" says nothing about one number
        messages.append(t("{n_bad} of {n} entries differ", n_bad=len(bad), n=n))
    hints = _matching_hints(got_f, want_f, mistakes, rtol, atol)
    if (
        not hints
        and got.ndim >= 2
        and got.shape[-1] == got.shape[-2]
        and _matches(got_f, np.swapaxes(want_f, -1, -2), rtol, atol)
    ):
        hints.append(t("{name} is the transpose of the expected result", name=name))
    return Feedback(False, name, tuple(messages), tuple(hints))


def described_cases(
    template: str, rows: Iterable[Sequence[Any]]
) -> list[tuple[str, tuple[Any, ...]]]:
    """:func:`~course_utils.exercises._learner.run_cases`'s test cases: each row of arguments with
    its description, the literal :func:`~course_utils.i18n.t` template ``template`` filled with the
    row's values, which its fields name in order (``{m}``, ``{k:g}``: one field per value).

    >>> described_cases("m = {m}, k = {k:g}", [(2, 0.5), (3, 1.0)])
    [('m = 2, k = 0.5', (2, 0.5)), ('m = 3, k = 1', (3, 1.0))]
    """
    fields = list(dict.fromkeys(f for _, f, _, _ in string.Formatter().parse(template) if f))
    return [(t(template, **dict(zip(fields, row, strict=True))), tuple(row)) for row in rows]


def run_array_cases(
    title: str,
    fn: Any,
    name: str,
    cases: Iterable[tuple[Any, ...]],
    reference: Callable[..., tuple[Any, Iterable[Mistake]]],
    passed: str,
    *,
    rtol: float = 1e-5,
    atol: float = 1e-8,
) -> Feedback:
    """:func:`~course_utils.exercises._learner.run_cases` for a function whose result is an array.

    ``reference(*args)`` returns the right result for one case and the typical wrong ones
    (``(expected, mistakes)``); :func:`check_array` compares the learner's result with them, with
    ``rtol``/``atol``. A checker then says only what is right and what is wrong, not how to compare.
    ``passed`` is :func:`run_cases`'s (a literal template with ``{n}``).

    >>> cases = [("x = 1", (1,)), ("x = 2", (2,))]
    >>> double = lambda x: ([2 * x], [Mistake("you added 1, double instead", [x + 1])])
    >>> print(run_array_cases("double", lambda x: [x + 1], "double", cases, double, "{n} right"))
    ✗ double: not yet right
      - test case: x = 2
      - entry [0] is 3, expected 4
      - 1 of 1 entries differ
      hint: you added 1, double instead
    """

    def compare(result: Any, *args: Any) -> Feedback:
        expected, mistakes = reference(*args)
        return check_array(title, result, expected, mistakes=mistakes, rtol=rtol, atol=atol)

    return run_cases(title, fn, name, cases, compare, passed)  # passed: a literal template


# --- attention-specific checkers -----------------------------------------------------------------


def _scale_text(d_k: int) -> str:
    return f"√d_k = √{d_k} ≈ {math.sqrt(d_k):.3g}"


def _as_qk(q: Any, k: Any) -> tuple[NDArray, NDArray]:
    """``q`` and ``k`` as float arrays; the error of a wrong one names it and its expected shape."""
    return (
        as_float_array(q, "q", min_ndim=2, expected="(..., T_q, d_k)"),
        as_float_array(k, "k", min_ndim=2, expected="(..., T_k, d_k)"),
    )


def _unscaled(q: NDArray, k: NDArray, scale: float | None) -> tuple[NDArray, float]:
    """The raw scores ``Q Kᵀ`` and the scale of the right answer (``1/√d_k`` unless given)."""
    right_scale = default_scale(q.shape[-1]) if scale is None else float(scale)
    return attention_scores(q, k, scale=1.0), right_scale  # (..., T_q, T_k), a float


def check_scores(
    answer: Any,
    q: Any,
    k: Any,
    *,
    scaled: bool = True,
    scale: float | None = None,
    name: str = "scores",
    rtol: float = 1e-5,
    atol: float = 1e-8,
) -> Feedback:
    """Check ``Q Kᵀ`` (``scaled=False``) or ``Q Kᵀ / √d_k`` (``scaled=True``; ``· scale`` if given).

    >>> q = [[1.0, 0.0], [0.0, 2.0]]
    >>> k = [[2.0, 0.0], [1.0, 1.0]]
    >>> check_scores([[2.0, 1.0], [0.0, 2.0]], q, k, scaled=False).passed
    True
    >>> print(check_scores([[2.0, 1.0], [0.0, 2.0]], q, k))
    ✗ scores: not yet right
      - entry [0, 0] is 2, expected 1.41
      - 3 of 4 entries differ
      hint: did you forget to divide by √d_k = √2 ≈ 1.41?
    """
    q, k = _as_qk(q, k)
    d_k = q.shape[-1]
    raw, right_scale = _unscaled(q, k, scale)  # (..., T_q, T_k)
    expected = raw * right_scale if scaled else raw  # (..., T_q, T_k)
    swapped = np.swapaxes(raw, -1, -2)  # (..., T_k, T_q): K Qᵀ
    mistakes = [
        Mistake(
            "this is K·Qᵀ (one row per key); compute Q @ K.T so that row i belongs to query i",
            swapped * right_scale if scaled else swapped,
        ),
    ]
    if scaled:
        mistakes += [
            Mistake(
                "this is K·Qᵀ (one row per key), not scaled either; compute Q @ K.T / √d_k",
                swapped,
            ),
            Mistake(t("did you forget to divide by {root}?", root=_scale_text(d_k)), raw),
            Mistake(
                t(
                    "you divided by d_k = {d_k}; divide by {root} instead",
                    d_k=d_k,
                    root=_scale_text(d_k),
                ),
                raw / d_k,
            ),
            Mistake(
                t("you multiplied by √d_k; divide by {root} instead", root=_scale_text(d_k)),
                raw * math.sqrt(d_k),
            ),
        ]
    else:
        mistakes.append(
            Mistake(
                "these scores are already divided by √d_k; this step asks for the raw Q·Kᵀ",
                raw / math.sqrt(d_k),
            )
        )
    if q.shape[-1] == k.shape[-2] and q.shape[-2] == k.shape[-1]:
        no_t = q @ k  # (..., T_q, d_k) @ (..., d_k?, ...): only when the shapes happen to allow it
        mistakes += [
            Mistake(
                "did you forget to transpose K? use Q @ K.T", no_t * right_scale if scaled else no_t
            ),
            Mistake("did you forget to transpose K? use Q @ K.T", no_t),
        ]
    return check_array(name, answer, expected, rtol=rtol, atol=atol, mistakes=mistakes)


def _mask_or_none(mask: Any) -> NDArray[np.bool_] | None:
    return None if mask is None else as_bool_array(mask, "mask")


def _weights_mistakes(
    q: NDArray, k: NDArray, mask: NDArray[np.bool_] | None, scale: float | None
) -> list[Mistake]:
    d_k = q.shape[-1]
    raw, right_scale = _unscaled(q, k, scale)  # (..., T_q, T_k)
    scores = raw * right_scale  # (..., T_q, T_k)

    def masked(s: NDArray, m: NDArray[np.bool_] | None) -> NDArray:
        return s if m is None else np.where(m, s, -np.inf)

    mistakes = [
        Mistake(
            t("did you forget to divide by {root}?", root=_scale_text(d_k)),
            softmax(masked(raw, mask)),
        ),
    ]
    if scale is None and d_k > 1:
        mistakes.append(
            Mistake(
                t(
                    "you divided by d_k = {d_k}; divide by its square root, {root}",
                    d_k=d_k,
                    root=_scale_text(d_k),
                ),
                softmax(masked(raw / d_k, mask)),
            )
        )
    mistakes += [
        Mistake(
            "the columns sum to 1, not the rows: softmax over the wrong axis (use axis=-1)",
            softmax(masked(scores, mask), axis=-2),
        ),
        Mistake(
            "the columns sum to 1 and the scores are not scaled: use axis=-1 and divide by √d_k",
            softmax(masked(raw, mask), axis=-2),
        ),
        Mistake("these are the scaled scores; apply softmax to each row", scores),
        Mistake("these are the raw scores Q·Kᵀ; divide by √d_k and apply softmax", raw),
    ]
    if mask is not None:
        mistakes += [
            Mistake(
                "the mask was not applied: set masked scores to -inf before the softmax",
                softmax(scores),
            ),
            Mistake(
                "the mask's polarity is inverted: True means 'may attend' (PyTorch's convention)",
                softmax(masked(scores, ~mask)),
            ),
            Mistake(
                "masked weights were zeroed after the softmax, so rows no longer sum to 1: "
                "set masked scores to -inf before the softmax",
                np.where(mask, softmax(scores), 0.0),
            ),
        ]
    return mistakes


def _structure_messages(
    w: NDArray, name: str, mask: NDArray[np.bool_] | None, atol: float
) -> tuple[list[str], list[str]]:
    """Row sums and signs, checkable without knowing the right answer."""
    messages: list[str] = []
    hints: list[str] = []
    negative = np.argwhere(w < 0)
    if len(negative):
        where = tuple(negative[0])
        messages.append(
            t(
                "entry {where} is {w}: weights are never negative",
                where=format_index(where),
                w=_fmt(float(w[where]), 3),
            )
        )
        hints.append("softmax gives positive numbers; did you skip the exp?")
    row_sums = w.sum(axis=-1)  # (..., T_q)
    if mask is None:
        target = np.ones_like(row_sums)
    else:
        full = np.broadcast_to(mask, w.shape) if mask.ndim <= w.ndim else mask
        target = full.any(axis=-1).astype(np.float64)  # 0 for a fully masked row
        target = np.broadcast_to(target, row_sums.shape)
    bad_rows = np.argwhere(~np.isclose(row_sums, target, rtol=0, atol=max(atol, 1e-6)))
    if len(bad_rows):
        row = tuple(bad_rows[0])
        label = (
            t("row {row}", row=row[-1])
            if len(row) == 1
            else t("row {row} of batch {batch}", row=row[-1], batch=format_index(row[:-1]))
        )
        total, want = format_pair(float(row_sums[row]), float(target[row]))
        reason = " (every key is masked for this query)" if target[row] == 0 else ""
        messages.append(
            t(
                "{label} sums to {total}, expected {want}{reason}",
                label=label,
                total=total,
                want=want,
                reason=reason,
            )
        )
        if len(bad_rows) > 1:
            messages.append(
                t(
                    "{n_bad} of {n} rows do not sum to what they should",
                    n_bad=len(bad_rows),
                    n=row_sums.size,
                )
            )
        col_sums = w.sum(axis=-2)
        if mask is None and np.allclose(col_sums, 1.0, atol=1e-6):
            hints.append(
                "the columns sum to 1, not the rows: softmax over the wrong axis (use axis=-1)"
            )
    if mask is not None:
        full = np.broadcast_to(mask, w.shape)
        leaked = np.argwhere(~full & (w != 0))
        if len(leaked):
            where = tuple(leaked[0])
            messages.append(
                t(
                    "entry {where} is {w} but that key is masked: masked weights must be exactly 0",
                    where=format_index(where),
                    w=_fmt(float(w[where]), 3),
                )
            )
    return messages, hints


def check_weights(
    answer: Any,
    q: Any = None,
    k: Any = None,
    *,
    mask: Any = None,
    scale: float | None = None,
    name: str = "weights",
    rtol: float = 1e-5,
    atol: float = 1e-8,
) -> Feedback:
    """Check attention weights ``softmax(Q Kᵀ / √d_k)`` (masked if ``mask`` is given).

    Without ``q`` and ``k`` only the structure is checked (at least 2 dimensions, no negative entry,
    each row sums to 1, masked entries are 0). With them, every entry is compared too.

    >>> q = [[1.0, 0.0], [0.0, 1.0]]
    >>> k = [[1.0, 0.0], [0.0, 1.0]]
    >>> right = [[0.67, 0.33], [0.33, 0.67]]
    >>> check_weights(right, q, k, atol=0.01).passed
    True
    >>> print(check_weights([[0.9, 0.47], [0.1, 0.53]]))
    ✗ weights: not yet right
      - row 0 sums to 1.37, expected 1
      - 2 of 2 rows do not sum to what they should
      hint: the columns sum to 1, not the rows: softmax over the wrong axis (use axis=-1)
    """
    try:
        w = as_answer_array(answer, name).astype(np.float64)
    except TypeError as err:
        return Feedback(False, name, (str(err),))
    if w.ndim < 2:
        return Feedback(
            False,
            name,
            (
                t(
                    "{name} has shape {got}, expected (..., T_q, T_k)",
                    name=name,
                    got=shape_str(w.shape),
                ),
            ),
        )
    nan = _nan_feedback(
        name, w, "a row whose scores are all -inf gives 0/0 in a naive softmax; or exp overflowed"
    )
    if nan is not None:
        return nan
    m = _mask_or_none(mask)
    if q is None and k is None:
        if m is not None:
            try:
                np.broadcast_to(m, w.shape)
            except ValueError:
                return Feedback(
                    False,
                    name,
                    (
                        t(
                            "{name} has shape {got}, but the mask has shape {mask}",
                            name=name,
                            got=shape_str(w.shape),
                            mask=shape_str(m.shape),
                        ),
                    ),
                )
        messages, hints = _structure_messages(w, name, m, atol)
        if messages:
            return Feedback(False, name, tuple(messages), tuple(hints))
        rows = int(np.prod(w.shape[:-1]))
        return Feedback(
            True, name, (t("all {rows} rows are non-negative and sum to 1", rows=rows),)
        )
    if q is None or k is None:
        raise TypeError("check_weights needs both q and k, or neither")
    qa, ka = _as_qk(q, k)
    v_dummy = np.zeros((*ka.shape[:-1], 1))  # (..., T_k, 1): only the weights are needed
    _, expected = scaled_dot_product_attention(qa, ka, v_dummy, m, scale=scale)  # (..., T_q, T_k)
    mistakes = _weights_mistakes(qa, ka, m, scale)
    result = check_array(name, w, expected, rtol=rtol, atol=atol, mistakes=mistakes)
    if result.passed or w.shape != expected.shape:
        return result
    structure, extra_hints = _structure_messages(w, name, m, atol)
    hints = list(result.hints) or extra_hints  # a recognised mistake beats a generic hint
    return Feedback(False, name, (*structure, *result.messages), tuple(hints))


def check_attention_output(
    answer: Any,
    q: Any,
    k: Any,
    v: Any,
    mask: Any = None,
    *,
    scale: float | None = None,
    name: str = "output",
    rtol: float = 1e-5,
    atol: float = 1e-8,
) -> Feedback:
    """Check ``softmax(Q Kᵀ / √d_k) V`` (masked if ``mask`` is given).

    >>> q = [[1.0, 0.0]]
    >>> k = [[1.0, 0.0], [0.0, 1.0]]
    >>> v = [[1.0, 2.0], [3.0, 4.0]]
    >>> out, w = scaled_dot_product_attention(q, k, v)
    >>> check_attention_output(out, q, k, v).passed
    True
    >>> print(check_attention_output(w, q, k, v))
    ✗ output: not yet right
      - entry [0, 0] is 0.67, expected 1.66
      - 2 of 2 entries differ
      hint: these are the attention weights; the output is weights @ V
    """
    qa, ka = _as_qk(q, k)
    va = as_float_array(v, "v", min_ndim=2, expected="(..., T_k, d_v)")
    m = _mask_or_none(mask)
    expected, weights = scaled_dot_product_attention(qa, ka, va, m, scale=scale)  # (..., T_q, d_v)
    raw, right_scale = _unscaled(qa, ka, scale)  # (..., T_q, T_k)
    mistakes = [
        Mistake(w_m.hint, np.asarray(w_m.value) @ va)
        for w_m in _weights_mistakes(qa, ka, m, scale)
        if not w_m.hint.startswith("these are")
    ]
    mistakes += [
        Mistake("these are the attention weights; the output is weights @ V", weights),
        Mistake(
            "you multiplied the scores by V; apply softmax to the scores first",
            (raw * right_scale) @ va,
        ),
        Mistake(
            "you multiplied the raw scores Q·Kᵀ by V; scale, apply softmax, then multiply", raw @ va
        ),
        Mistake(
            "this is V unchanged; the output is a weighted average of V's rows, weights @ V", va
        ),
    ]
    if weights.shape[-1] == weights.shape[-2]:
        mistakes.append(
            Mistake(
                "did you multiply the transposed weights by V? the output is weights @ V",
                np.swapaxes(weights, -1, -2) @ va,
            )
        )
    return check_array(name, answer, expected, rtol=rtol, atol=atol, mistakes=mistakes)


def check_softmax(
    answer: Any,
    x: Any,
    axis: int = -1,
    temperature: float = 1.0,
    *,
    name: str = "softmax",
    rtol: float = 1e-5,
    atol: float = 1e-8,
) -> Feedback:
    """Check ``softmax(x / temperature)`` along ``axis``.

    >>> check_softmax([0.5, 0.5], [1.0, 1.0]).passed
    True
    >>> print(check_softmax(np.exp([1.0, 2.0]), [1.0, 2.0]))
    ✗ softmax: not yet right
      - entry [0] is 2.72, expected 0.269
      - 2 of 2 entries differ
      hint: you computed exp(x) but did not divide by the sum: the entries must sum to 1
    """
    xa = as_float_array(x, "x")
    expected = softmax(xa, axis=axis, temperature=temperature)
    z = xa / temperature
    mistakes = []
    for other in range(xa.ndim):
        if other != axis % xa.ndim:
            mistakes.append(
                Mistake(
                    t(
                        "normalised over axis {other}, expected axis {axis}: softmax over the "
                        "wrong axis",
                        other=other,
                        axis=axis,
                    ),
                    softmax(xa, axis=other, temperature=temperature),
                )
            )
    if temperature != 1.0:
        mistakes += [
            Mistake(
                t(
                    "the temperature was ignored; divide the scores by τ = {temperature:g} first",
                    temperature=temperature,
                ),
                softmax(xa, axis=axis),
            ),
            Mistake(
                t(
                    "you multiplied by the temperature; divide the scores by τ = {temperature:g} "
                    "instead",
                    temperature=temperature,
                ),
                softmax(xa * temperature, axis=axis),
            ),
        ]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        exps = np.exp(z)
        mistakes.append(
            Mistake(
                "you computed exp(x) but did not divide by the sum: the entries must sum to 1", exps
            )
        )
        mistakes.append(
            Mistake(
                "you divided by the sum without exp: softmax is exp(x) / sum(exp(x))",
                z / np.sum(z, axis=axis, keepdims=True),
            )
        )
    return check_array(
        name,
        answer,
        expected,
        rtol=rtol,
        atol=atol,
        mistakes=mistakes,
        nan_hint="exp overflowed (inf / inf = nan): subtract the maximum of each row before exp",
    )


def check_causal_mask(
    answer: Any,
    t_q: int,
    t_k: int | None = None,
    *,
    align: Literal["top_left", "bottom_right"] = "top_left",
    name: str = "mask",
) -> Feedback:
    """Check a boolean causal mask: True on and below the diagonal (True = may attend).

    >>> check_causal_mask(np.tril(np.ones((3, 3), dtype=bool)), 3).passed
    True
    >>> print(check_causal_mask(np.triu(np.ones((3, 3), dtype=bool)), 3))
    ✗ mask: not yet right
      - entry [0, 1] is True, expected False
      - 6 of 9 entries differ
      hint: True above the diagonal lets a token see the future: use np.tril, not np.triu
    """
    expected = causal_mask(t_q, t_k, align=align)  # (t_q, t_k)
    try:
        got = as_answer_array(answer, name)
    except TypeError as err:
        return Feedback(False, name, (str(err),))
    messages: list[str] = []
    hints: list[str] = []
    if got.shape != expected.shape:
        return _shape_feedback(name, got.shape, expected.shape)
    if got.dtype != np.bool_:
        messages.append(
            t(
                "{name} has dtype {dtype}, expected bool (True = may attend)",
                name=name,
                dtype=got.dtype,
            )
        )
        hints.append("use a boolean mask, e.g. np.tril(np.ones((T, T), dtype=bool))")
        if not np.isin(got, (0, 1)).all():
            return Feedback(False, name, tuple(messages), tuple(hints))
        if np.array_equal(got.astype(bool), expected):
            messages.append("the pattern of 0s and 1s is right; only the dtype is wrong")
    got_b = got.astype(bool)
    t_k_ = expected.shape[1]
    other = "bottom_right" if align == "top_left" else "top_left"
    candidates = [  # the inverted mask first: on a 1 x 1 mask it is also "the diagonal is False"
        ("the polarity is inverted: True must mean 'may attend' (PyTorch's convention)", ~expected),
        (
            "True above the diagonal lets a token see the future: use np.tril, not np.triu",
            ~expected | np.eye(t_q, t_k_, dtype=bool) if t_q == t_k_ else None,
        ),
        (
            "the diagonal is False: a token must be allowed to attend to itself",
            expected
            & ~np.eye(
                t_q, t_k_, k=expected.shape[1] - t_q if align == "bottom_right" else 0, dtype=bool
            ),
        ),
        ("nothing is masked: every token can see the future", np.ones_like(expected)),
        (
            t(
                "the diagonal is anchored {got}; expected {want}",
                got=other.replace("_", "-"),
                want=align.replace("_", "-"),
            ),
            causal_mask(t_q, t_k, align=other),
        ),
    ]
    wrong = np.argwhere(got_b != expected)
    if len(wrong):
        first = tuple(wrong[0])
        messages.append(
            t(
                "entry {index} is {got}, expected {want}",
                index=format_index(first),
                got=bool(got_b[first]),
                want=bool(expected[first]),
            )
        )
        messages.append(t("{n_bad} of {n} entries differ", n_bad=len(wrong), n=expected.size))
        for hint, candidate in candidates:
            if (
                candidate is not None
                and not np.array_equal(candidate, expected)
                and np.array_equal(got_b, candidate)
            ):
                hints.append(hint)
                break
    if messages:
        return Feedback(False, name, tuple(messages), tuple(hints))
    return Feedback(
        True,
        name,
        (
            t(
                "shape {shape} is right and all {n} entries match",
                shape=shape_str(expected.shape),
                n=expected.size,
            ),
        ),
    )
