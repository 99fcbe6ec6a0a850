"""Checkers for the exercises of chapter 11, "Multi-head latent attention (MLA)".

The learner writes a function; the checker runs it on its own seeded cases (sizes the chapter
never used, so a hard-coded answer fails) and compares it with :mod:`course_utils.kv_cache` or with
the naive formula of MLA (up-project the latents, then attend). Answers may be numpy arrays, torch
tensors (also with ``requires_grad``), float32 or lists. A checker never raises.

- :func:`check_cache_values`: ``cache_values(n_heads, d_head, d_latent_kv, d_head_rope)`` ->
  ``(mha, mla)``, numbers cached per token per layer;
- :func:`check_absorb_query`: ``absorb_query(q_c, W_UK)``, the query moved into latent space;
- :func:`check_latent_scores`: ``latent_scores(q_c, q_r, c_kv, k_r, W_UK)``, one token's scaled
  scores against the cached latents, for every head.

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
from ..kv_cache import values_per_token_mha, values_per_token_mla
from ._checks import Mistake, check_array
from ._feedback import Feedback
from ._learner import run_cases

__all__ = ["check_absorb_query", "check_cache_values", "check_latent_scores"]

_SEED = 2024
_ATOL = 1e-5  # float32 answers round at about 1e-7 relative; entries here are of order 1-10


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

    def compare(result: Any, h: int, d: int, dc: int, dr: int) -> Feedback:
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
        return check_array(title, result, expected, mistakes=mistakes, rtol=0, atol=0)

    cases_described = [
        (f"n_heads = {h}, d_head = {d}, d_latent_kv = {dc}, d_head_rope = {dr}", (h, d, dc, dr))
        for h, d, dc, dr in cases
    ]
    return run_cases(
        title,
        cache_values,
        "cache_values",
        cases_described,
        compare,
        "all {n} configurations counted right (DeepSeek-V2: 32,768 against 576)",
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

    def compare(result: Any, q_c: np.ndarray, w_uk: np.ndarray) -> Feedback:
        expected = np.einsum("hn,hnc->hc", q_c, w_uk)  # (h, d_c): W_UK[i]^T q_c[i]
        mistakes = [
            Mistake(
                "each head has its own W_UK[i]: do not sum over the heads",
                np.broadcast_to(expected.sum(axis=0), expected.shape),
            ),
        ]
        return check_array(title, result, expected, mistakes=mistakes, atol=_ATOL)

    return run_cases(
        title,
        absorb_query,
        "absorb_query",
        _absorb_cases(),
        compare,
        "all {n} cases equal W_UK[i]ᵀ q_c[i]: the query now lives in latent space",
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

    def compare(result: Any, q_c, q_r, c_kv, k_r, w_uk) -> Feedback:
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
        return check_array(title, result, expected, mistakes=mistakes, atol=_ATOL)

    return run_cases(
        title,
        latent_scores,
        "latent_scores",
        _score_cases(),
        compare,
        "all {n} cases equal the naive scores (keys rebuilt from the latents)",
    )
