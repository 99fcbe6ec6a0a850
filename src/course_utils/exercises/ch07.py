"""Checkers for the exercises of chapter 7, "Causal attention, generation and the KV cache".

The learner writes a *function*; the checker calls it on its own cases and compares with the
package (:func:`course_utils.masks.causal_mask`, :func:`course_utils.kv_cache.kv_cache_bytes`,
:func:`course_utils.softmax.softmax`). A checker never raises on a wrong answer, and names the
typical mistake when it recognises one.

- :func:`check_cache_mask`: ``cache_mask(t_new, t_past)``, the mask of new tokens over cached +
  new keys;
- :func:`check_kv_cache_bytes`:
  ``cache_bytes(n_layers, n_kv_heads, d_head, seq_len, bytes_per_value)``;
- :func:`check_next_token_probs`: ``next_token_probs(logits, temperature)``, the sampling
  distribution;
- :func:`check_streaming_view`: ``streaming_view(n_appended, window, n_sink)``, what a
  :class:`~course_utils.kv_cache.StreamingKVCache` holds and where its newest query sits.

>>> import numpy as np
>>> def cache_mask(t_new, t_past):
...     return np.tril(np.ones((t_new, t_past + t_new), dtype=bool), k=t_past)
>>> bool(check_cache_mask(cache_mask))
True
>>> print(check_cache_mask(lambda t_new, t_past: np.ones((t_new, t_past + t_new), dtype=bool)))
✗ cache mask: not yet right
  - test case: t_new = 3, t_past = 0
  - entry [0, 1] is True, expected False
  - 3 of 9 entries differ
  hint: nothing is masked: every token can see the future
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from ..i18n import t
from ..kv_cache import StreamingKVCache, kv_cache_bytes
from ..softmax import softmax
from ._checks import (
    Mistake,
    check_array,
    check_causal_mask,
    check_number,
    not_a_pair,
    to_numpy,
)
from ._feedback import Feedback
from ._learner import run_cases

__all__ = ["check_cache_mask", "check_kv_cache_bytes", "check_next_token_probs"]


# --- exercise 7.1: the mask of a cached step --------------------------------------------------


def check_cache_mask(cache_mask: Callable[[int, int], Any]) -> Feedback:
    """Check ``cache_mask(t_new, t_past)``: ``(t_new, t_past + t_new)``, new token ``i`` may
    attend to every cached key and to new keys ``0..i``
    (``causal_mask(..., align="bottom_right")``).

    >>> import numpy as np
    >>> wrong = lambda t_new, t_past: np.tril(np.ones((t_new, t_past + t_new), dtype=bool))
    >>> bool(check_cache_mask(wrong))
    False
    """
    title = "cache mask"

    def compare(result: Any, t_new: int, t_past: int) -> Feedback:
        fb = check_causal_mask(result, t_new, t_past + t_new, align="bottom_right", name="mask")
        if fb or fb.hints:
            return fb
        shape = np.shape(to_numpy(result))
        if t_past and shape == (t_new, t_new):
            hint = (
                "the new tokens also attend to the t_past cached keys: the mask has "
                "t_past + t_new columns"
            )
        elif t_past and shape == (t_past + t_new, t_past + t_new):
            hint = (
                "only the t_new new tokens are queries (the cached ones were computed before): "
                "the mask has t_new rows"
            )
        else:
            return fb
        return Feedback(False, fb.title, fb.messages, (hint,))

    # not a 1 x 1 mask first: there an inverted mask and a False diagonal are the same answer
    sizes = ((3, 0), (1, 5), (1, 0), (2, 3), (4, 2))
    cases = [(f"t_new = {t_new}, t_past = {t_past}", (t_new, t_past)) for t_new, t_past in sizes]
    passed = "all {n} cases equal causal_mask(..., 'bottom_right')"
    return run_cases(title, cache_mask, "cache_mask", cases, compare, passed)


# --- exercise 7.2: the bytes of a KV cache ------------------------------------------------------


def check_kv_cache_bytes(cache_bytes: Callable[..., Any]) -> Feedback:
    """Check ``cache_bytes(n_layers, n_kv_heads, d_head, seq_len, bytes_per_value)``.

    >>> bool(check_kv_cache_bytes(lambda L, h, d, T, b: 2 * L * h * d * T * b))
    True
    >>> print(check_kv_cache_bytes(lambda L, h, d, T, b: L * h * d * T * b).hints[0])
    a cache holds keys AND values: multiply by 2
    """
    title = "KV-cache bytes"

    def compare(result: Any, L: int, h: int, d: int, T: int, b: int) -> Feedback:
        expected = kv_cache_bytes(L, h, d, T, bytes_per_value=b)
        mistakes = [
            Mistake("a cache holds keys AND values: multiply by 2", expected // 2),
            Mistake("bytes_per_value counts bytes, not bits: don't multiply by 8", expected * 8),
            Mistake(
                "multiply by bytes_per_value: the formula counts values otherwise", expected // b
            ),
            Mistake("every layer has its own cache: multiply by n_layers", expected // L),
        ]
        return check_array(title, result, np.array(expected), rtol=0, mistakes=mistakes)

    # GPT-2 small, SmolLM2-135M, Llama-2-7B-like, a tiny one
    # the tiny one first: with bytes_per_value = 4 and 3 layers, forgetting the 2, the bytes or
    # the layers gives three different numbers, so the first failing case names the right one
    sizes = ((3, 4, 8, 10, 4), (12, 12, 64, 1024, 2), (30, 3, 64, 8192, 2), (32, 32, 128, 4096, 2))
    cases = [
        (
            f"n_layers={L}, n_kv_heads={h}, d_head={d}, seq_len={T}, bytes_per_value={b}",
            (L, h, d, T, b),
        )
        for L, h, d, T, b in sizes
    ]
    passed = "all {n} cases equal 2·layers·heads·d·T·bytes"
    return run_cases(title, cache_bytes, "cache_bytes", cases, compare, passed)


# --- exercise 7.3: the next-token distribution ----------------------------------------------------


def check_next_token_probs(next_token_probs: Callable[[Any, float], Any]) -> Feedback:
    """Check ``next_token_probs(logits, temperature)`` = ``softmax(logits / temperature)``.

    ``logits`` is a 1-D float64 torch tensor; any array-like answer is accepted.

    >>> bool(check_next_token_probs(lambda z, t: torch.softmax(z / t, dim=-1)))
    True
    >>> print(check_next_token_probs(lambda z, t: torch.softmax(z * t, dim=-1)).hints[0])
    divide the logits by the temperature (a high temperature flattens the distribution)
    """
    title = "next-token probabilities"

    def compare(result: Any, logits: torch.Tensor, tau: float) -> Feedback:
        z = logits.numpy()
        mistakes = [
            Mistake(
                "divide the logits by the temperature (a high temperature flattens the "
                "distribution)",
                softmax(z * tau),
            ),
            Mistake("turn the scaled logits into probabilities with a softmax", z / tau),
            Mistake(
                "apply the temperature before the softmax, not to its output", softmax(z) / tau
            ),
        ]
        return check_array(
            title,
            result,
            softmax(z, temperature=tau),
            atol=1e-6,
            mistakes=mistakes,
            nan_hint="subtract the largest logit before exp (chapter 3's stable softmax)",
        )

    g = torch.Generator().manual_seed(7)
    inputs = [
        (torch.randn(6, generator=g, dtype=torch.float64) * 3, tau) for tau in (1.0, 0.5, 2.0)
    ]
    inputs.append((torch.tensor([1000.0, 999.0, 0.0], dtype=torch.float64), 1.0))
    cases = [
        (t("logits of length {n}, temperature = {tau}", n=logits.numel(), tau=tau), (logits, tau))
        for logits, tau in inputs
    ]
    passed = "all {n} cases equal softmax(logits / temperature)"
    return run_cases(title, next_token_probs, "next_token_probs", cases, compare, passed)


# --- exercise 7.4: token passes with and without the cache ----------------------------------------

__all__ += ["check_token_passes"]


def _passes(prompt_len: int, new_tokens: int) -> tuple[int, int]:
    """``(without, with)`` the cache, as :func:`course_utils.causal.generate` runs them."""
    without = sum(prompt_len + step for step in range(new_tokens))  # the whole sequence each step
    return without, (prompt_len + new_tokens - 1 if new_tokens else 0)


def check_token_passes(passes: Callable[[int, int], Any]) -> Feedback:
    """Check ``passes(prompt_len, new_tokens)``: the pair ``(without, with_cache)`` of token
    vectors each layer projects while :func:`course_utils.causal.generate` writes ``new_tokens``
    tokens after a prompt of ``prompt_len``, with ``use_cache=False`` and ``True``.

    >>> def passes(P, N):
    ...     return N * P + N * (N - 1) // 2, P + N - 1
    >>> bool(check_token_passes(passes))
    True
    >>> print(check_token_passes(lambda P, N: (N * P + N * (N - 1) // 2, P + N)).hints[0])
    ... # doctest: +ELLIPSIS
    the last new token is never fed back in: ...
    """
    title = "token passes"

    def compare(result: Any, P: int, N: int) -> Feedback:
        if tuple(getattr(result, "shape", ())) == (2,):  # a numpy array or tensor of two numbers
            result = list(result)
        early = not_a_pair(title, result, "without, with_cache")
        if early is not None:
            return early
        without, with_cache = _passes(P, N)
        mistakes = [
            Mistake(
                "the last new token is never fed back in: the pass that produced it was the "
                "last one, so the cache runs P + N - 1 token vectors",
                [without, P + N],
            ),
            Mistake(
                "without the cache, step t (counting from 0) runs the P + t tokens there are so "
                "far, not P + t + 1: sum over t = 0 .. N - 1",
                [without + N, with_cache],
            ),
            Mistake(
                "without the cache the sequence grows by one token a step: the sum of P + t for "
                "t = 0 .. N - 1, not N times the final length",
                [N * (P + N), with_cache],
            ),
            Mistake(
                "the first number is without the cache, the second with it", [with_cache, without]
            ),
        ]
        return check_array(title, result, [without, with_cache], rtol=0, mistakes=mistakes)

    sizes = ((400, 100), (8, 30), (1, 1), (50, 7))
    cases = [(t("prompt of {P}, {N} new tokens", P=P, N=N), (P, N)) for P, N in sizes]
    passed = "all {n} cases equal the passes generate makes"
    return run_cases(title, passes, "passes", cases, compare, passed)


# --- exercise 7.5: top-p (nucleus) filtering by hand ---------------------------------------------

__all__ += ["check_nucleus"]


def _keep_sorted(probs: NDArray, p: float, rule: str) -> NDArray:
    """Which tokens a top-p rule keeps, ``(V,)`` bools: ``"right"`` keeps a token while the
    tokens more probable than it hold less than ``p``; the others are the typical slips."""
    order = np.argsort(-probs, kind="stable")  # most probable first (ties: lower index first)
    desc = probs[order]
    before = np.cumsum(desc) - desc  # the mass of the tokens before each one
    keep_sorted = {
        "right": before < p,
        "lte": before <= p,  # one token too many when the mass before it is exactly p
        "no_crossing": np.cumsum(desc) < p,  # stops before the token that crosses p
        "no_crossing_lte": np.cumsum(desc) <= p,
    }[rule]
    keep = np.zeros(probs.size, dtype=bool)
    keep[order] = keep_sorted
    return keep


def _nucleus_mistakes(z: NDArray, tau: float, p: float) -> list[Mistake]:
    probs = softmax(z / tau)  # (V,)

    def renormalised(keep: NDArray, source: NDArray = probs) -> NDArray:
        kept = np.where(keep, source, 0.0)
        return kept / kept.sum() if kept.sum() > 0 else kept

    unsorted_keep = (np.cumsum(probs) - probs) < p  # the cumulative sum in vocabulary order
    crossing = (
        "keep the token that crosses p too: the nucleus is the smallest set of most probable "
        "tokens whose probabilities add up to AT LEAST p, so the token that makes the sum reach "
        "p belongs to it"
    )
    boundary = (
        "at the boundary: a token is removed when the tokens before it already hold exactly p "
        "(they reach p without it); compare the mass before a token with p using <, not <= "
        "(transformers removes a token when its ascending cumulative probability is <= 1 - p)"
    )
    # At an exact boundary "<=" keeps one more token; a tie with it may put any of its equals
    # first, so each of them is a version of the same mistake.
    right = _keep_sorted(probs, p, "right")
    extra = _keep_sorted(probs, p, "lte") & ~right
    tied = np.flatnonzero(~right & np.isin(probs, probs[extra]))
    lte = [renormalised(right | (np.arange(probs.size) == j)) for j in tied]
    return [
        Mistake(crossing, renormalised(_keep_sorted(probs, p, "no_crossing"))),
        Mistake(crossing, renormalised(_keep_sorted(probs, p, "no_crossing_lte"))),
        *[Mistake(boundary, value) for value in lte],
        Mistake(
            "sort the tokens by probability first (most probable first): the cumulative sum "
            "runs over the most probable tokens, not in the vocabulary's order",
            renormalised(unsorted_keep),
        ),
        Mistake(
            "apply the temperature BEFORE filtering: divide the logits by it, take the softmax, "
            "then choose the nucleus of that distribution (a temperature changes which tokens "
            "reach p)",
            renormalised(_keep_sorted(softmax(z), p, "right"), probs),
        ),
        Mistake(
            "renormalise: divide the kept probabilities by their sum, so that they add up to 1 "
            "(the removed tokens get 0)",
            np.where(_keep_sorted(probs, p, "right"), probs, 0.0),
        ),
        Mistake(
            "renormalise the kept probabilities by dividing by their sum, not with another "
            "softmax (a softmax of probabilities flattens them)",
            softmax(np.where(_keep_sorted(probs, p, "right"), probs, -np.inf)),
        ),
    ]


def nucleus_cases() -> list[tuple[str, NDArray, float, float]]:
    """The checker's cases ``(name, logits, temperature, p)``: the chapter's table, an exact
    boundary (probabilities 1/2, 1/4, 1/8, 1/8, exact in floating point), a temperature that
    changes the nucleus, a tiny ``p`` and a random vocabulary of 50."""
    table = np.log([0.05, 0.4, 0.1, 0.25, 0.15, 0.05])  # the chapter's table, unsorted
    boundary = np.log([1.0, 4.0, 1.0, 2.0])  # probabilities 1/8, 1/2, 1/8, 1/4
    g = np.random.default_rng(5)
    return [
        (t("the table, p = {p}", p=0.85), table, 1.0, 0.85),
        (t("probabilities 1/8, 1/2, 1/8, 1/4, p = {p}", p=0.75), boundary, 1.0, 0.75),
        (t("the table at temperature {tau}, p = {p}", tau=0.5, p=0.75), table, 0.5, 0.75),
        (t("the table, p = {p}", p=0.01), table, 1.0, 0.01),
        (
            t("{n} random logits at temperature {tau}, p = {p}", n=50, tau=0.7, p=0.9),
            2.0 * g.standard_normal(50),
            0.7,
            0.9,
        ),
    ]


def check_nucleus(nucleus: Callable[[Any, float, float], Any]) -> Feedback:
    """Check ``nucleus(logits, temperature, p)``: the distribution a sampler draws from with
    temperature and top-p, ``softmax(top_p_filter(logits / temperature, p))``
    (:func:`course_utils.causal.top_p_filter`, transformers' rule): the most probable tokens
    whose probabilities reach ``p``, renormalised; the others 0.

    ``logits`` is a 1-D float64 torch tensor; any array-like answer is accepted.

    >>> from course_utils.causal import top_p_filter
    >>> right = lambda z, tau, p: torch.softmax(top_p_filter(z / tau, p), dim=-1)
    >>> bool(check_nucleus(right))
    True
    >>> wrong = lambda z, tau, p: torch.softmax(top_p_filter(z, p) / tau, dim=-1)
    >>> print(check_nucleus(wrong).hints[0])  # doctest: +ELLIPSIS
    apply the temperature BEFORE filtering: ...
    """
    from ..causal import top_p_filter

    title = "top-p by hand"

    def compare(result: Any, logits: torch.Tensor, tau: float, p: float) -> Feedback:
        z = logits.numpy()
        expected = torch.softmax(top_p_filter(logits / tau, p), dim=-1).numpy()
        return check_array(
            title,
            result,
            expected,
            atol=1e-6,
            mistakes=_nucleus_mistakes(z, tau, p),
            nan_hint="subtract the largest logit before exp (chapter 3's stable softmax)",
        )

    cases = [
        (name, (torch.tensor(z, dtype=torch.float64), tau, p))
        for name, z, tau, p in nucleus_cases()
    ]
    passed = "all {n} cases equal softmax(top_p_filter(logits / temperature, p))"
    return run_cases(title, nucleus, "nucleus", cases, compare, passed)


# --- exercise 7.6: what a streaming cache holds ------------------------------------------------

__all__ += ["check_streaming_view"]


def _streaming_view(n_appended: int, window: int, n_sink: int) -> tuple[list[int], int]:
    """What :class:`course_utils.kv_cache.StreamingKVCache` holds after ``n_appended`` tokens fed
    one at a time, and the RoPE position of the newest query (the last place in the cache)."""
    cache = StreamingKVCache(window=window, n_sink=n_sink)
    kv = torch.zeros(1, 1, 1, 1)  # (B, heads, one token, d_k): only the positions matter
    for _ in range(n_appended):
        cache.append(kv, kv)
    return cache.positions, len(cache) - 1


def _streaming_mistakes(
    n: int, window: int, n_sink: int
) -> tuple[list[Mistake], list[tuple[float, str]]]:
    """Typical wrong answers ``(held, query_position)``: for the held positions, and for the
    query's position once the held positions are right."""
    held, _ = _streaming_view(n, window, n_sink)

    def last(k: int) -> list[int]:  # the sinks, then the last k tokens
        sinks = list(range(min(n_sink, n)))
        return sinks + list(range(max(len(sinks), n - k), n))

    held_mistakes = [
        Mistake(
            "the first n_sink tokens stay as well (the attention sinks): the cache holds them "
            "and the last `window` tokens",
            list(range(max(0, n - window), n)),
        ),
        Mistake(
            "the window counts the newest token itself: it holds positions n - window .. n - 1, "
            "`window` tokens, not window + 1",
            last(window + 1),
        ),
        Mistake(
            "the window includes the newest token: positions n - window .. n - 1, not only "
            "window - 1 of them",
            last(window - 1),
        ),
        Mistake("positions count from 0: the first token is position 0", [p + 1 for p in held]),
    ]
    query_mistakes = [
        (
            n - 1,
            "the cache numbers positions by place in the cache, not in the text (StreamingLLM): "
            "the newest query is at len(held) - 1, not n - 1",
        ),
        (
            len(held),
            "positions count from 0: with L tokens held the newest one is at L - 1, not L",
        ),
        (
            min(window, len(held)) - 1,
            "the sinks are in the cache too, before the window: the newest query is at "
            "n_sink + window - 1 once the cache is full",
        ),
    ]
    return held_mistakes, query_mistakes


def check_streaming_view(streaming_view: Callable[[int, int, int], Any]) -> Feedback:
    """Check ``streaming_view(n_appended, window, n_sink)``: the pair ``(held, query_position)``
    after a :class:`course_utils.kv_cache.StreamingKVCache` has been fed ``n_appended`` tokens
    one at a time: the stream positions it holds (0-based, in cache order: the first ``n_sink``,
    then the last ``window``) and the RoPE position the newest token's query uses (its place in
    the cache, ``len(held) - 1``). The expected values come from the cache itself.

    >>> def streaming_view(n, window, n_sink):
    ...     held = list(range(min(n, n_sink))) + list(range(max(n_sink, n - window), n))
    ...     return held, len(held) - 1
    >>> bool(check_streaming_view(streaming_view))
    True
    >>> def original(n, window, n_sink):
    ...     return streaming_view(n, window, n_sink)[0], n - 1
    >>> print(check_streaming_view(original).hints[0])  # doctest: +ELLIPSIS
    the cache numbers positions by place in the cache, not in the text ...
    """
    title = "what a streaming cache holds"

    def compare(result: Any, n: int, window: int, n_sink: int) -> Feedback:
        early = not_a_pair(title, result, "held, query_position")
        if early is not None:
            return early
        held, query = _streaming_view(n, window, n_sink)
        held_mistakes, query_mistakes = _streaming_mistakes(n, window, n_sink)
        fb = check_array(t("held positions"), result[0], held, rtol=0, mistakes=held_mistakes)
        if not fb:
            return fb
        return check_number(
            t("query position"),
            result[1],
            query,
            query_mistakes,
            "the newest query is at position {value:g}, expected {expected:g}",
        )

    sizes = ((1000, 124, 4), (10, 3, 2), (20, 6, 0), (5, 8, 4), (3, 2, 4), (7, 1, 1))
    cases = [
        (t("{n} tokens, window = {w}, n_sink = {s}", n=n, w=w, s=s), (n, w, s)) for n, w, s in sizes
    ]
    passed = "all {n} cases equal what StreamingKVCache holds"
    return run_cases(title, streaming_view, "streaming_view", cases, compare, passed)
