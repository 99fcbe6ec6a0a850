"""Checkers for the exercises of chapter 14, "The attention atlas of 2026 models".

The learner writes a function; the checker runs it on its own cases (sizes and numbers the chapter
never printed, so a hard-coded answer fails) and compares it with the package: the KV cache sizes
of :mod:`course_utils.kv_cache`, the attention with learned sinks of
:func:`course_utils.atlas.blocks.attention` and the router of
:func:`course_utils.atlas.blocks.top_k_softmax`. Answers may be numbers, numpy arrays, torch
tensors (also with ``requires_grad``), float32 or lists. A checker never raises.

- :func:`check_cache_ratio`: ``cache_ratio(n_local, n_global, window, T)``, how many times
  smaller the KV cache of a local/global interleave is than with every layer global;
- :func:`check_sink_weights`: ``sink_weights(scores, sinks)``, attention weights with one learned
  sink logit per head (gpt-oss);
- :func:`check_route`: ``route(logits, k)``, a router's top-``k`` weights, renormalised, as a dense
  ``(N, E)`` matrix.

>>> print(check_cache_ratio(lambda n_l, n_g, w, T: (n_l + n_g) / n_g))  # doctest: +ELLIPSIS
✗ KV-cache ratio: not yet right
  - test case: 5 local : 1 global (Gemma 3's pattern), window 1024, T = 131,072
  ...
  hint: the local layers hold a cache too: min(T, window) tokens each, not nothing
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..atlas.blocks import attention, top_k_softmax
from ..i18n import t
from ..kv_cache import kv_cache_bytes
from ._checks import Mistake, check_array, check_number, run_array_cases, to_numpy
from ._feedback import Feedback
from ._learner import run_cases

__all__ = ["check_cache_ratio", "check_route", "check_sink_weights"]

_SEED = 2026
_ATOL = 1e-5  # float32 answers round at about 1e-7 relative; weights here are at most 1


# --- exercise 14.1: the KV cache of a local/global interleave ---------------------------------

#: (n_local, n_global, window, T): the ratio depends only on these (every layer's keys and values
#: have the same width, which cancels).
_RATIO_CASES = [
    (5, 1, 1024, 131_072),  # Gemma 3's pattern and window at 128k
    (5, 1, 1024, 512),  # shorter than the window: nothing is saved
    (1, 1, 128, 131_072),  # gpt-oss: alternating, window 128
    (3, 1, 4096, 32_768),
]


def _held(n_layers: int, tokens: int) -> int:
    # one KV head of width 1, one byte a number: the cache counts tokens held, layer by layer
    return kv_cache_bytes(n_layers, 1, 1, tokens, bytes_per_value=1) if n_layers else 0


def check_cache_ratio(cache_ratio: Callable[[int, int, int, int], Any]) -> Feedback:
    """Check ``cache_ratio(n_local, n_global, window, T)``: the KV cache of a model whose
    ``n_global`` layers see every token and whose ``n_local`` layers see their last ``window``,
    at context ``T``, compared with all its layers global: ``(all global) / (interleaved)``.

    >>> def cache_ratio(n_local, n_global, window, T):
    ...     return (n_local + n_global) * T / (n_global * T + n_local * min(T, window))
    >>> print(check_cache_ratio(cache_ratio))
    ✓ KV-cache ratio: correct
      - all 4 cases right: (n_local + n_global) T / (n_global T + n_local min(T, window))
    """
    title = "KV-cache ratio"

    def compare(result: Any, n_local: int, n_global: int, window: int, T: int) -> Feedback:
        full = _held(n_local + n_global, T)  # every layer global
        mixed = _held(n_global, T) + _held(n_local, min(T, window))
        expected = full / mixed
        mistakes = [
            (
                mixed / full,
                "that is the interleaved cache as a fraction of the global one; the question asks "
                "how many times SMALLER it is: (all global) / (interleaved)",
            ),
            (
                (n_local + n_global) / n_global,
                "the local layers hold a cache too: min(T, window) tokens each, not nothing",
            ),
            (
                T / min(T, window),
                "the global layers still keep every token: only the local ones stop at the window",
            ),
            (
                full / (_held(n_global, T) + _held(n_local, window)),
                "before the window fills, a local layer holds only the T tokens there are: "
                "min(T, window), not window",
            ),
            (
                100 * (1 - mixed / full),
                "return the ratio (such as 5.77), not a percentage saved",
            ),
        ]
        wrong = "cache_ratio returned {value:.4g}, expected {expected:.4g}"
        return check_number(title, result, expected, mistakes, wrong, atol=5e-3)

    cases = [
        (
            t(
                "5 local : 1 global (Gemma 3's pattern), window 1024, T = {T:,}",
                T=T,
            )
            if (n_l, n_g, w) == (5, 1, 1024)
            else t(
                "n_local = {n_local}, n_global = {n_global}, window = {window}, T = {T:,}",
                n_local=n_l,
                n_global=n_g,
                window=w,
                T=T,
            ),
            (n_l, n_g, w, T),
        )
        for n_l, n_g, w, T in _RATIO_CASES
    ]
    return run_cases(
        title,
        cache_ratio,
        "cache_ratio",
        cases,
        compare,
        "all {n} cases right: (n_local + n_global) T / (n_global T + n_local min(T, window))",
    )


# --- exercise 14.2: attention weights with a learned sink -------------------------------------


def _sink_cases() -> list[tuple[str, tuple[np.ndarray, np.ndarray]]]:
    rng = np.random.default_rng(_SEED)
    out = []
    for h, t_q, t_k, causal in [(2, 3, 3, True), (4, 1, 6, False), (3, 5, 5, True)]:
        scores = rng.normal(0.0, 1.5, size=(h, t_q, t_k)).round(2)  # (h, T_q, T_k)
        if causal:  # a masked score is -inf, as the chapter writes it
            scores[:, np.triu(np.ones((t_q, t_k), dtype=bool), k=1)] = -np.inf
        sinks = rng.normal(0.0, 1.5, size=h).round(2)  # (h,): one logit per head
        label = t(
            "scores of shape {shape}{causal}, sinks {sinks}",
            shape=scores.shape,
            causal=t(" (causal: -inf above the diagonal)") if causal else "",
            sinks=sinks.tolist(),
        )
        out.append((label, (scores, sinks)))
    return out


def _weights_with_sinks(scores: np.ndarray, sinks: np.ndarray) -> np.ndarray:
    """The package's attention with learned sinks, made to return its weights: values = identity."""
    h, _, t_k = scores.shape
    s = torch.from_numpy(scores)[None]  # (1, h, T_q, T_k)
    # q = scores and k = identity give q kᵀ = scores, so the package sees exactly these scores
    eye = torch.eye(t_k, dtype=torch.float64).expand(1, h, t_k, t_k)  # (1, h, T_k, T_k)
    finite = torch.nan_to_num(s, neginf=0.0)  # -inf entries are masked below instead
    mask = torch.from_numpy(np.isfinite(scores))[None]  # (1, h, T_q, T_k)
    out = attention(finite, eye, eye, scale=1.0, mask=mask, sinks=torch.from_numpy(sinks))
    return out[0].numpy()  # (h, T_q, T_k): weights @ I


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def check_sink_weights(sink_weights: Callable[[Any, Any], Any]) -> Feedback:
    """Check ``sink_weights(scores, sinks)``: ``scores`` ``(h, T_q, T_k)`` (``-inf`` where a key is
    masked), ``sinks`` ``(h,)``; the weights ``(h, T_q, T_k)`` of a softmax over each row plus its
    head's sink logit, with the sink's column dropped (so each row sums to less than 1).

    >>> import numpy as np
    >>> def sink_weights(scores, sinks):
    ...     e = np.exp(scores)
    ...     return e / (e.sum(-1, keepdims=True) + np.exp(sinks)[:, None, None])
    >>> bool(check_sink_weights(sink_weights))
    True
    """
    title = "sink weights"

    def compare(result: Any, scores: np.ndarray, sinks: np.ndarray) -> Feedback:
        expected = _weights_with_sinks(scores, sinks)
        e = np.exp(scores)  # (h, T_q, T_k): masked keys give 0
        mistakes = [
            Mistake(
                "these rows sum to 1: the sink's logit joins each row's softmax, then its column "
                "is dropped WITHOUT renormalising (the sink takes weight and returns no value)",
                _softmax(scores),
            ),
            Mistake(
                "the sink is a logit: it enters the denominator as exp(sink), not as sink",
                e / (e.sum(-1, keepdims=True) + sinks[:, None, None]),
            ),
            Mistake(
                "each head has its own sink: use sinks[i] for head i",
                e / (e.sum(-1, keepdims=True) + np.exp(sinks[0])),
            ),
        ]
        try:
            shape = np.shape(to_numpy(result))
        except (TypeError, ValueError):  # a ragged list: check_array names the problem
            shape = None
        if shape == (*scores.shape[:-1], scores.shape[-1] + 1):
            return Feedback(
                False,
                title,
                (
                    t(
                        "sink_weights returned shape {shape}, expected {want}",
                        shape=tuple(shape),
                        want=scores.shape,
                    ),
                ),
                (t("drop the sink's column: it has no value, so it has no place in the output"),),
            )
        return check_array(title, result, expected, mistakes=mistakes, atol=_ATOL)

    return run_cases(
        title,
        sink_weights,
        "sink_weights",
        _sink_cases(),
        compare,
        "all {n} cases equal the package's attention with learned sinks",
    )


# --- exercise 14.3: a router's top-k, renormalised ---------------------------------------------


def _route_cases() -> list[tuple[str, tuple[np.ndarray, int]]]:
    rng = np.random.default_rng(_SEED + 1)
    out = []
    for n, e, k in [(3, 8, 2), (5, 16, 4), (2, 4, 1), (4, 6, 6)]:
        logits = rng.normal(0.0, 2.0, size=(n, e)).round(3)  # (N, E), no ties
        out.append((t("logits of shape {shape}, k = {k}", shape=logits.shape, k=k), (logits, k)))
    return out


def _dense(weights: torch.Tensor, ids: torch.Tensor, n_experts: int) -> np.ndarray:
    out = torch.zeros(weights.shape[0], n_experts, dtype=weights.dtype)  # (N, E)
    return out.scatter(1, ids, weights).numpy()  # (N, E): zero outside the top-k


def check_route(route: Callable[[Any, int], Any]) -> Feedback:
    """Check ``route(logits, k)``: ``logits`` ``(N, E)`` -> ``(N, E)`` weights, zero except each
    token's ``k`` highest-scoring experts, whose weights are their softmax probabilities
    renormalised to sum to 1 (Qwen3-Next's order; gpt-oss's softmax over the top ``k`` logits
    gives the same numbers).

    >>> import numpy as np
    >>> def route(logits, k):
    ...     p = np.exp(logits - logits.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True)
    ...     keep = np.argsort(-p, axis=-1)[:, :k]
    ...     out = np.zeros_like(p)
    ...     np.put_along_axis(out, keep, np.take_along_axis(p, keep, -1), -1)
    ...     return out / out.sum(-1, keepdims=True)
    >>> bool(check_route(route))
    True
    """
    title = "router weights"

    def reference(logits: np.ndarray, k: int) -> tuple[Any, list[Mistake]]:
        x = torch.from_numpy(logits)  # (N, E) float64
        e = logits.shape[1]
        expected = _dense(*top_k_softmax(x, k), e)
        probs = torch.softmax(x, dim=-1)  # (N, E)
        top_p, top_i = probs.topk(k, dim=-1)  # (N, k)
        _, low_i = top_k_softmax(-x, k)  # the k LOWEST logits
        mistakes = [
            Mistake(
                "renormalise the k kept probabilities so that each row sums to 1",
                _dense(top_p, top_i, e),
            ),
            Mistake(
                "keep only the k highest probabilities: the other experts are not run, weight 0",
                probs.numpy(),
            ),
            Mistake(
                "those are the k LOWEST logits: keep the k highest",
                _dense(torch.softmax(x.gather(1, low_i), dim=-1), low_i, e),
            ),
            Mistake(
                "the weights are probabilities (a softmax), not the raw logits",
                _dense(x.gather(1, top_i), top_i, e),
            ),
        ]
        return expected, mistakes

    return run_array_cases(
        title,
        route,
        "route",
        _route_cases(),
        reference,
        "all {n} cases right: the top-k probabilities, renormalised, zero elsewhere",
        atol=_ATOL,
    )
