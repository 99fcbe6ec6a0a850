"""Checkers for the exercises of chapter 11, "Multi-head latent attention (MLA)".

The learner writes a function; the checker runs it on its own seeded cases (sizes the chapter
never used, so a hard-coded answer fails) and compares it with :mod:`course_utils.kv_cache` or with
the naive formula of MLA (up-project the latents, then attend). Answers may be numpy arrays, torch
tensors (also with ``requires_grad``), float32 or lists. A checker never raises.

- :func:`check_cache_values`: ``cache_values(n_heads, d_head, d_latent_kv, d_head_rope)`` ->
  ``(mha, mla)``, numbers cached per token per layer;
- :func:`check_absorb_query`: ``absorb_query(q_c, W_UK)``, the query moved into latent space;
- :func:`check_latent_scores`: ``latent_scores(q_c, q_r, c_kv, k_r, W_UK)``, one token's scaled
  scores against the cached latents, for every head;
- :func:`check_kv_reduction`: ``kv_reduction(gqa, mla, bits)``, the fraction of cache bytes per
  token an MLA model saves against a GQA model with a 16-bit cache (DeepSeek-V2's 93.3%);
- :func:`check_equivalent_mqa`: ``equivalent_mqa(n_heads, d_head, d_latent_kv, d_head_rope)`` ->
  ``(d_k, d_v, cache)``, the MQA an absorbed MLA layer is, and what it caches per token.

>>> bool(check_cache_values(lambda h, d, dc, dr: (2 * h * d, dc + dr)))
True
>>> print(check_cache_values(lambda h, d, dc, dr: (2 * h * d, dc + h * dr)))
... # doctest: +ELLIPSIS
✗ cache values: not yet right
  - test case: n_heads = 128, d_head = 128, d_latent_kv = 512, d_head_rope = 64
  ...
  hint: the RoPE key k^R is SHARED by all heads: cache it once (d_h^R numbers), not once per head
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..attention import default_scale
from ..i18n import t
from ..kv_cache import kv_cache_bytes, mla_cache_bytes, values_per_token_mha, values_per_token_mla
from ._checks import Mistake, check_number, run_array_cases
from ._feedback import Feedback
from ._learner import run_cases

__all__ = [
    "check_absorb_query",
    "check_cache_values",
    "check_equivalent_mqa",
    "check_kv_reduction",
    "check_latent_scores",
]

_SEED = 2024
_ATOL = 1e-5  # float32 answers round at about 1e-7 relative; entries here are of order 1-10


def _described(cases: list[tuple[int, int, int, int]]) -> list[tuple[str, tuple[int, ...]]]:
    """Each configuration ``(n_heads, d_head, d_latent_kv, d_head_rope)`` with its description."""
    return [
        (f"n_heads = {h}, d_head = {d}, d_latent_kv = {dc}, d_head_rope = {dr}", (h, d, dc, dr))
        for h, d, dc, dr in cases
    ]


# --- exercise 11.1: numbers cached per token ----------------------------------------------------


def check_cache_values(cache_values: Callable[[int, int, int, int], Any]) -> Feedback:
    """Check ``cache_values(n_heads, d_head, d_latent_kv, d_head_rope) -> (mha, mla)``.

    >>> print(check_cache_values(lambda h, d, dc, dr: (h * d, dc + dr)))
    ... # doctest: +ELLIPSIS
    ✗ cache values: not yet right
    ...
      hint: MHA caches a key AND a value per head: 2 · n_h · d_h
    """
    title = "cache values"
    cases = [(128, 128, 512, 64), (16, 64, 256, 32), (32, 128, 512, 64), (8, 32, 96, 16)]

    def reference(h: int, d: int, dc: int, dr: int) -> tuple[Any, list[Mistake]]:
        expected = np.array([values_per_token_mha(h, d), values_per_token_mla(dc, dr)])
        mistakes = [
            Mistake("MHA caches a key AND a value per head: 2 · n_h · d_h", [h * d, dc + dr]),
            Mistake(
                "the RoPE key k^R is SHARED by all heads: cache it once (d_h^R numbers), not "
                "once per head",
                [2 * h * d, dc + h * dr],
            ),
            Mistake(
                "MLA caches ONE latent c^KV for keys and values together, not one for each",
                [2 * h * d, 2 * dc + dr],
            ),
            Mistake("the RoPE key k^R is cached too, beside the latent", [2 * h * d, dc]),
        ]
        return expected, mistakes

    return run_array_cases(
        title,
        cache_values,
        "cache_values",
        _described(cases),
        reference,
        "all {n} configurations counted right (DeepSeek-V2: 32,768 against 576)",
        rtol=0,
        atol=0,
    )


# --- exercise 11.2: absorb W_UK into the query --------------------------------------------------


def _absorb_cases() -> list[tuple[str, tuple[np.ndarray, np.ndarray]]]:
    rng = np.random.default_rng(_SEED)
    out = []
    for h, dn, dc in [(2, 3, 5), (4, 8, 16), (3, 4, 6)]:
        q_c = rng.normal(size=(h, dn)).round(2)  # (h, d_h)
        w_uk = rng.normal(size=(h, dn, dc)).round(2)  # (h, d_h, d_c)
        out.append(
            (
                t("q_c of shape {q_c}, W_UK of shape {w_uk}", q_c=q_c.shape, w_uk=w_uk.shape),
                (q_c, w_uk),
            )
        )
    return out


def check_absorb_query(absorb_query: Callable[[Any, Any], Any]) -> Feedback:
    """Check ``absorb_query(q_c, W_UK)``: ``q_c`` ``(h, d_h)``, ``W_UK`` ``(h, d_h, d_c)`` ->
    ``(h, d_c)`` with ``q_lat[i] · c == q_c[i] · (W_UK[i] @ c)`` for every latent ``c``.

    >>> import numpy as np
    >>> bool(check_absorb_query(lambda q, W: np.einsum("hn,hnc->hc", q, W)))
    True
    """
    title = "absorbed query"

    def reference(q_c: np.ndarray, w_uk: np.ndarray) -> tuple[Any, list[Mistake]]:
        expected = np.einsum("hn,hnc->hc", q_c, w_uk)  # (h, d_c): W_UK[i]^T q_c[i]
        mistakes = [
            Mistake(
                "each head has its own W_UK[i]: do not sum over the heads",
                np.broadcast_to(expected.sum(axis=0), expected.shape),
            ),
        ]
        return expected, mistakes

    return run_array_cases(
        title,
        absorb_query,
        "absorb_query",
        _absorb_cases(),
        reference,
        "all {n} cases equal W_UK[i]ᵀ q_c[i]: the query now lives in latent space",
        atol=_ATOL,
    )


# --- exercise 11.3: scores against the cached latents -------------------------------------------


def _naive_scores(q_c, q_r, c_kv, k_r, w_uk, *, rope=True, scale=None):
    k_c = np.einsum("hnc,sc->hsn", w_uk, c_kv)  # (h, S, d_h): keys rebuilt from the latents
    s = np.einsum("hn,hsn->hs", q_c, k_c)  # (h, S)
    if rope:
        s = s + q_r @ k_r.T  # (h, S): the shared RoPE key, same for every head
    if scale is None:  # 1/√(d_h + d_h^R): the query and key have both parts
        scale = default_scale(q_c.shape[-1] + q_r.shape[-1])
    return s * scale


def _score_cases() -> list[tuple[str, tuple[np.ndarray, ...]]]:
    rng = np.random.default_rng(_SEED + 1)
    out = []
    for h, dn, dr, dc, S in [(2, 3, 2, 4, 5), (4, 8, 4, 12, 7), (3, 6, 2, 5, 1)]:
        args = (
            rng.normal(size=(h, dn)).round(2),  # q_c (h, d_h)
            rng.normal(size=(h, dr)).round(2),  # q_r (h, d_h^R), already rotated
            rng.normal(size=(S, dc)).round(2),  # c_kv (S, d_c)
            rng.normal(size=(S, dr)).round(2),  # k_r (S, d_h^R), already rotated
            rng.normal(size=(h, dn, dc)).round(2),  # W_UK (h, d_h, d_c)
        )
        described = t(
            "h = {h}, d_h = {dn}, d_h^R = {dr}, d_c = {dc}, S = {S} cached tokens",
            h=h,
            dn=dn,
            dr=dr,
            dc=dc,
            S=S,
        )
        out.append((described, args))
    return out


def check_latent_scores(latent_scores: Callable[..., Any]) -> Feedback:
    """Check ``latent_scores(q_c, q_r, c_kv, k_r, W_UK)`` -> ``(h, S)`` scaled scores.

    Expected: ``(q_c[i]·(W_UK[i] c_s) + q_r[i]·k_r[s]) / sqrt(d_h + d_h^R)``, computed naively by
    rebuilding the keys; the learner may do it the absorbed way.

    >>> import numpy as np
    >>> def latent_scores(q_c, q_r, c_kv, k_r, W_UK):
    ...     q_lat = np.einsum("hn,hnc->hc", q_c, W_UK)
    ...     return (q_lat @ c_kv.T + q_r @ k_r.T) / np.sqrt(q_c.shape[1] + q_r.shape[1])
    >>> bool(check_latent_scores(latent_scores))
    True
    """
    title = "latent scores"

    def reference(q_c, q_r, c_kv, k_r, w_uk) -> tuple[Any, list[Mistake]]:
        expected = _naive_scores(q_c, q_r, c_kv, k_r, w_uk)  # (h, S)
        d_h = q_c.shape[-1]
        mistakes = [
            Mistake(
                "scale by 1/sqrt(d_h + d_h^R): the query and key have both parts",
                _naive_scores(q_c, q_r, c_kv, k_r, w_uk, scale=1 / np.sqrt(d_h)),
            ),
            Mistake(
                "add the RoPE part q_r · k_r: it carries the position",
                _naive_scores(q_c, q_r, c_kv, k_r, w_uk, rope=False),
            ),
            Mistake(
                "the scores are scaled: divide by sqrt(d_h + d_h^R)",
                _naive_scores(q_c, q_r, c_kv, k_r, w_uk, scale=1.0),
            ),
        ]
        return expected, mistakes

    return run_array_cases(
        title,
        latent_scores,
        "latent_scores",
        _score_cases(),
        reference,
        "all {n} cases equal the naive scores (keys rebuilt from the latents)",
        atol=_ATOL,
    )


# --- exercise 11.4: what DeepSeek-V2's 93.3% measures -----------------------------------------

_GQA_BYTES = 2  # the GQA model's cache holds 16-bit numbers (DeepSeek 67B: bf16)
_REDUCTION_ATOL = 5e-4  # a fraction rounded to three decimals (0.822) is right


def _reduction_cases() -> list[tuple[str, tuple[tuple[int, int, int], tuple[int, int, int], int]]]:
    ds67, v2 = (95, 8, 128), (60, 512, 64)  # DeepSeek 67B; DeepSeek-V2 (section 3.1.1)
    cases = [(ds67, v2, 16), (ds67, v2, 6), ((32, 8, 128), (32, 256, 32), 8)]
    cases.append(((24, 16, 64), (24, 384, 64), 4))
    return [
        (
            t("DeepSeek 67B against DeepSeek-V2, bits = {bits}", bits=bits)
            if (gqa, mla) == (ds67, v2)
            else t("gqa = {gqa}, mla = {mla}, bits = {bits}", gqa=gqa, mla=mla, bits=bits),
            (gqa, mla, bits),
        )
        for gqa, mla, bits in cases
    ]


def check_kv_reduction(kv_reduction: Callable[[Any, Any, Any], Any]) -> Feedback:
    """Check ``kv_reduction(gqa, mla, bits)`` -> ``1 - bytes_MLA / bytes_GQA`` per token.

    ``gqa = (n_layers, n_kv_heads, d_head)`` of a model whose cache holds 16-bit numbers,
    ``mla = (n_layers, d_c, d_h^R)`` of a model whose cache holds ``bits``-bit numbers. The answer
    is a fraction (float, numpy or torch scalar); three decimals are enough.

    >>> def kv_reduction(gqa, mla, bits):
    ...     gqa_bytes = 2 * gqa[0] * gqa[1] * gqa[2] * 2
    ...     return 1 - mla[0] * (mla[1] + mla[2]) * bits / 8 / gqa_bytes
    >>> print(check_kv_reduction(kv_reduction))
    ✓ KV-cache reduction: correct
      - all 4 cases right: 1 - bytes_MLA / bytes_GQA, with the GQA cache at 16 bits
    >>> print(check_kv_reduction(lambda gqa, mla, bits: 1 - kv_reduction(gqa, mla, bits)))
    ... # doctest: +ELLIPSIS
    ✗ KV-cache reduction: not yet right
      - test case: DeepSeek 67B against DeepSeek-V2, bits = 16
      - kv_reduction returned 0.1776, expected 0.8224
      hint: that is the fraction KEPT (bytes_MLA / bytes_GQA); the reduction is 1 minus it
    """
    title = "KV-cache reduction"

    def compare(
        result: Any, gqa: tuple[int, int, int], mla: tuple[int, int, int], bits: int
    ) -> Feedback:
        ref = kv_cache_bytes(*gqa, 1, bytes_per_value=_GQA_BYTES)  # keys and values, 16 bits
        n_layers, d_c, d_rope = mla
        elements = mla_cache_bytes(n_layers, d_c, d_rope, 1, bytes_per_value=1)  # 1 byte each
        mla_bytes = elements * bits / 8
        expected = 1 - mla_bytes / ref
        mistakes = [
            (
                mla_bytes / ref,
                "that is the fraction KEPT (bytes_MLA / bytes_GQA); the reduction is 1 minus it",
            ),
            (100 * expected, "return a fraction (such as 0.5), not a percentage (50)"),
            (
                1 - mla_bytes / (ref / 2),
                "the GQA cache holds a key AND a value per KV head: 2 · layers · n_kv_heads · d_h"
                " numbers",
            ),
            (
                1 - n_layers * d_c * bits / 8 / ref,
                "the RoPE key k^R is cached too, beside the latent: d_c + d_h^R numbers per layer",
            ),
            (
                1 - n_layers * (2 * d_c + d_rope) * bits / 8 / ref,
                "MLA caches ONE latent c^KV for keys and values together, not one for each",
            ),
            (
                1 - elements * bits / ref,
                "`bits` is in bits: a number of `bits` bits takes bits / 8 bytes",
            ),
            (
                # the same as quantizing both caches: the ratio does not change
                1 - elements * 2 / ref,
                "`bits` is the MLA cache's only: the GQA cache stays at 16 bits (2 bytes a "
                "number), the MLA cache holds `bits`-bit numbers",
            ),
        ]

        wrong = "kv_reduction returned {value:.4g}, expected {expected:.4g}"
        return check_number(title, result, expected, mistakes, wrong, atol=_REDUCTION_ATOL)

    return run_cases(
        title,
        kv_reduction,
        "kv_reduction",
        _reduction_cases(),
        compare,
        "all {n} cases right: 1 - bytes_MLA / bytes_GQA, with the GQA cache at 16 bits",
    )


# --- exercise 11.5: MLA after absorption is MQA: its widths and its cache ---------------------


def check_equivalent_mqa(equivalent_mqa: Callable[[int, int, int, int], Any]) -> Feedback:
    """Check ``equivalent_mqa(n_heads, d_head, d_latent_kv, d_head_rope) -> (d_k, d_v, cache)``:
    the key width and value width of the MQA an absorbed MLA layer is, and the numbers it caches
    per token and layer (``d_c + d_h^R``, ``d_c``, ``d_c + d_h^R``; 576, 512, 576 for
    DeepSeek-V2).

    >>> bool(check_equivalent_mqa(lambda h, d, dc, dr: (dc + dr, dc, dc + dr)))
    True
    >>> print(check_equivalent_mqa(lambda h, d, dc, dr: (d + dr, dc, dc + dr)))
    ... # doctest: +ELLIPSIS
    ✗ equivalent MQA: not yet right
    ...
      hint: after absorption a head's query meets the latent itself: the shared key is ...
    """
    title = "equivalent MQA"
    cases = [(128, 128, 512, 64), (16, 64, 256, 32), (8, 32, 96, 16), (4, 16, 40, 8)]

    def reference(h: int, d: int, dc: int, dr: int) -> tuple[Any, list[Mistake]]:
        cache = values_per_token_mla(dc, dr)  # d_c + d_h^R
        expected = np.array([cache, dc, cache])  # the key is exactly what is cached
        mistakes = [
            Mistake(
                "after absorption a head's query meets the latent itself: the shared key is "
                "[c^KV; k^R], d_c + d_h^R wide, not a head's d_h + d_h^R",
                [d + dr, dc, cache],
            ),
            Mistake(
                "the RoPE key k^R is part of the shared key (and of the cache): d_c + d_h^R",
                [dc, dc, dc],
            ),
            Mistake(
                "the RoPE key k^R is part of the shared key: d_c + d_h^R, not d_c",
                [dc, dc, cache],
            ),
            Mistake(
                "the value is the latent c^KV itself (width d_c): W^UV went into the output "
                "projection, so there is no per-head value of width d_h",
                [cache, d, cache],
            ),
            Mistake(
                "the RoPE key k^R is SHARED by all heads: cache it once (d_h^R numbers), not "
                "once per head",
                [cache, dc, dc + h * dr],
            ),
            Mistake(
                "the value is the key's latent part: the latent c^KV is cached ONCE, for keys "
                "and values together",
                [cache, dc, 2 * dc + dr],
            ),
        ]
        return expected, mistakes

    return run_array_cases(
        title,
        equivalent_mqa,
        "equivalent_mqa",
        _described(cases),
        reference,
        "all {n} configurations right: MQA with d_k = d_c + d_h^R, d_v = d_c (576 and 512 for "
        "DeepSeek-V2)",
        rtol=0,
        atol=0,
    )
