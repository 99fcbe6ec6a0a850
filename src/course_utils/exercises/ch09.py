"""Checkers for the exercises of chapter 9, "Sparse attention".

The learner writes a *function*; the checker calls it on its own cases (sizes the chapter never
printed, so a hard-coded answer fails) and compares with :mod:`course_utils.sparse`. A checker
never raises on a wrong answer.

- :func:`check_window_mask`: ``window_mask(t, window)``, the causal sliding-window mask;
- :func:`check_layers_needed`: ``layers_needed(t, window)``, layers of a sliding window for the
  last token to hear the first;
- :func:`check_window_attention`: ``window_attention(q, k, v, window)``, causal sliding-window
  attention for one sequence ``(T, d)``, by any method;
- :func:`check_strided_keys`: ``strided_keys(i, stride)``, how many keys query ``i`` sees in the
  causal strided pattern of the Sparse Transformer (a count derived on paper).

>>> import numpy as np
>>> def window_mask(t, window):
...     i, j = np.arange(t)[:, None], np.arange(t)[None, :]
...     return (j <= i) & (j > i - window)
>>> bool(check_window_mask(window_mask))
True
>>> print(check_layers_needed(lambda t, window: math.ceil((t - 1) / window)).hints[0])
a layer moves information window - 1 positions, not window (the window includes the token itself)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..attention import default_scale
from ..i18n import t
from ..sparse import (
    sliding_window_attention,
    sliding_window_mask,
    strided_mask,
    window_layers_needed,
)
from ._checks import Mistake, as_answer_array, check_array
from ._feedback import Feedback
from ._learner import run_cases

__all__ = [
    "check_layers_needed",
    "check_strided_keys",
    "check_window_attention",
    "check_window_mask",
]

_SEED = 2019


# --- exercise 9.1: the causal sliding-window mask ----------------------------------------------


def check_window_mask(window_mask: Callable[[int, int], Any]) -> Feedback:
    """Check ``window_mask(t, window)`` -> ``(t, t)`` bool, ``True`` where ``i - window < j <= i``.

    >>> print(check_window_mask(lambda t, window: np.tri(t, t, dtype=bool)))
    ✗ window mask: not yet right
      - test case: t = 6, window = 3
      - entry [3, 0] is 1, expected 0
      - 6 of 36 entries differ
      hint: this is the plain causal mask: also drop the keys with j <= i - window
    """
    title = "window mask"

    def compare(result: Any, n: int, w: int) -> Feedback:
        expected = sliding_window_mask(n, window=w)  # (n, n)
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        mistakes = [
            Mistake(
                "the course's masks are True where a query MAY attend: flip it with ~mask",
                ~expected,
            ),
            Mistake(
                "one key too many: query i sees `window` keys, itself included, so keep "
                "j > i - window (not j >= i - window)",
                (j <= i) & (j >= i - w),
            ),
            Mistake(
                "one key too few: keep the query itself (j <= i), and j > i - window",
                (j < i) & (j >= i - w),
            ),
            Mistake(
                "this is the plain causal mask: also drop the keys with j <= i - window",
                j <= i,
            ),
            Mistake(
                "this window is two-sided (|i - j| < window); the causal window never looks ahead",
                np.abs(i - j) < w,
            ),
        ]
        fb = check_array(title, result, expected, mistakes=mistakes)  # a ragged list: feedback
        if fb and (dtype := as_answer_array(result, title).dtype) != np.bool_:
            return Feedback(
                False,
                title,
                (
                    t(
                        "the values are right but the dtype is {dtype}; masks are boolean",
                        dtype=dtype,
                    ),
                ),
                ("return the comparison itself (a bool array), not .astype(int)",),
            )
        return fb

    sizes = ((6, 3), (5, 1), (9, 4), (4, 7), (12, 5))
    cases = [(f"t = {n}, window = {w}", (n, w)) for n, w in sizes]
    passed = "all {n} masks match sliding_window_mask"
    return run_cases(title, window_mask, "window_mask", cases, compare, passed)


# --- exercise 9.2: layers to hear the whole sequence --------------------------------------------


def check_layers_needed(layers_needed: Callable[[int, int], Any]) -> Feedback:
    """Check ``layers_needed(t, window)``: the smallest number of sliding-window layers after
    which the last of ``t`` tokens has heard the first (``window >= 2``).

    >>> bool(check_layers_needed(lambda t, w: max(1, math.ceil((t - 1) / (w - 1)))))
    True
    """
    title = "layers needed"

    def compare(result: Any, t: int, w: int) -> Feedback:
        expected = window_layers_needed(t, w)
        mistakes = [
            Mistake(
                "a layer moves information window - 1 positions, not window (the window "
                "includes the token itself)",
                math.ceil((t - 1) / w),
            ),
            Mistake(
                "the first and last tokens are t - 1 positions apart, not t",
                math.ceil(t / (w - 1)),
            ),
            Mistake(
                "round up: a part of a step still needs a whole layer",
                (t - 1) // (w - 1),
            ),
            Mistake("t / window is the count of windows, not of layers", math.ceil(t / w)),
        ]
        return check_array(title, result, np.array(expected), mistakes=mistakes, rtol=0)

    sizes = ((30, 4), (4096, 256), (100, 10), (11, 2), (32768, 4096), (5, 8), (64, 8), (2, 2))
    cases = [(f"t = {t}, window = {w}", (t, w)) for t, w in sizes]
    return run_cases(title, layers_needed, "layers_needed", cases, compare, "all {n} cases right")


# --- exercise 9.3: sliding-window attention, any method -----------------------------------------


def _masked_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray, scale: float
) -> np.ndarray:
    """Dense masked attention in numpy, for the outputs of typical mistakes."""
    s = np.where(mask, q @ k.T * scale, -np.inf)  # (T, T)
    e = np.exp(s - s.max(-1, keepdims=True))  # (T, T)
    return (e / e.sum(-1, keepdims=True)) @ v  # (T, d_v)


def _window_attention_cases() -> list[tuple[str, tuple[np.ndarray, np.ndarray, np.ndarray, int]]]:
    rng = np.random.default_rng(_SEED + 9)
    cases = []
    for n, d_k, d_v, w in [(6, 4, 4, 2), (10, 3, 5, 4), (7, 2, 2, 9), (16, 8, 3, 5)]:
        q, k = rng.normal(size=(2, n, d_k)).round(2)
        v = rng.normal(size=(n, d_v)).round(2)
        cases.append((f"T = {n}, d_k = {d_k}, d_v = {d_v}, window = {w}", (q, k, v, w)))
    return cases


def check_window_attention(window_attention: Callable[..., Any]) -> Feedback:
    """Check ``window_attention(q, k, v, window)`` for one sequence: ``q``, ``k`` ``(T, d_k)``,
    ``v`` ``(T, d_v)`` float64 numpy arrays; returns ``(T, d_v)``, causal, scaled by ``1/√d_k``.

    >>> from course_utils.softmax import softmax
    >>> def window_attention(q, k, v, window):
    ...     out = np.zeros((len(q), v.shape[1]))
    ...     for i in range(len(q)):
    ...         lo = max(0, i - window + 1)
    ...         w = softmax(k[lo : i + 1] @ q[i] / np.sqrt(q.shape[1]))
    ...         out[i] = w @ v[lo : i + 1]
    ...     return out
    >>> bool(check_window_attention(window_attention))
    True
    """
    title = "window attention"

    def compare(result: Any, q: np.ndarray, k: np.ndarray, v: np.ndarray, w: int) -> Feedback:
        tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
        expected = sliding_window_attention(tq, tk, tv, window=w).numpy()  # (T, d_v)

        t, d_k = q.shape
        scale = default_scale(d_k)
        masked = functools.partial(_masked_attention, q, k, v)
        mistakes = [
            Mistake(
                "scale the scores by 1/√d_k before the softmax",
                masked(sliding_window_mask(t, window=w), 1.0),
            ),
            Mistake(
                "every key is used: keep only the window (i - window < j <= i)",
                masked(np.ones((t, t), dtype=bool), scale),
            ),
            Mistake(
                "this is causal attention over all earlier keys; drop those with j <= i - window",
                masked(np.tri(t, dtype=bool), scale),
            ),
            Mistake(
                "one key too many: query i sees j = i - window + 1 .. i",
                masked(sliding_window_mask(t, window=w + 1), scale),
            ),
            Mistake(
                "the window must be causal (keys j <= i only)",
                masked(sliding_window_mask(t, window=w, causal=False), scale),
            ),
        ]
        # rtol 1e-5: float32 work returned as float64 is right (the mistakes differ by ~1e-2)
        return check_array(title, result, expected, mistakes=mistakes, rtol=1e-5, atol=1e-7)

    passed = "all {n} cases match sliding_window_attention (and so SDPA with the mask)"
    return run_cases(
        title, window_attention, "window_attention", _window_attention_cases(), compare, passed
    )


# --- exercise 9.4: how many keys a strided pattern gives a query --------------------------------


def check_strided_keys(strided_keys: Callable[[int, int], Any]) -> Feedback:
    """Check ``strided_keys(i, stride)``: the number of keys ``j <= i`` with ``i - j < stride`` or
    ``(i - j) % stride == 0`` (one row of :func:`course_utils.sparse.strided_mask`).

    The count is ``min(i + 1, stride) + i // stride``: the band, plus the stride keys behind it.

    >>> bool(check_strided_keys(lambda i, s: min(i + 1, s) + i // s))
    True
    >>> print(check_strided_keys(lambda i, s: min(i + 1, s) + i // s + 1).hints[0])
    ... # doctest: +NORMALIZE_WHITESPACE
    a key is counted twice: one in the band and on the stride counts once (the query itself,
    i - j = 0; with the paper's band of stride + 1 keys, also i - stride)
    """
    title = "strided keys"

    def compare(result: Any, i: int, stride: int) -> Feedback:
        expected = int(strided_mask(i + 1, stride=stride)[i].sum())  # the last row of the mask
        band = min(i + 1, stride)
        mistakes = [
            Mistake(
                "a key is counted twice: one in the band and on the stride counts once (the "
                "query itself, i - j = 0; with the paper's band of stride + 1 keys, also "
                "i - stride)",
                band + i // stride + 1,
            ),
            Mistake(
                "near the start the band holds only the i + 1 keys that exist: min(i + 1, stride)",
                stride + i // stride,
            ),
            Mistake("that is only the band: add the stride keys further back", band),
            Mistake(
                "that is only the stride keys (i, i - stride, ...): add the band", i // stride + 1
            ),
        ]
        return check_array(title, result, np.array(expected), mistakes=mistakes, rtol=0)

    sizes = ((10, 4), (0, 4), (2, 8), (63, 8), (100, 10), (1000, 32), (16, 4), (4095, 64))
    cases = [(f"i = {i}, stride = {s}", (i, s)) for i, s in sizes]
    passed = "all {n} counts match a row of strided_mask"
    return run_cases(title, strided_keys, "strided_keys", cases, compare, passed)
