"""Checkers for the exercises of chapter 10, "MHA, MQA and GQA".

The learner writes a *function*; the checker calls it on its own cases (shapes and sizes the
chapter never printed, so a hard-coded answer fails) and compares with the package
(:mod:`course_utils.kv_cache`, :mod:`course_utils.gqa`, and PyTorch's
``scaled_dot_product_attention(enable_gqa=True)``). A checker never raises on a wrong answer.

- :func:`check_max_batch`: ``max_batch(memory_bytes, n_layers, n_heads, n_kv_heads, d_head,
  seq_len, bytes_per_value)``, the largest batch whose KV cache fits;
- :func:`check_gqa_attention`: ``gqa_attention(q, k, v)`` with ``q`` ``(n_heads, T, d)`` and
  ``k``, ``v`` ``(n_kv_heads, T, d)``, each query head reading the k/v head of its group;
- :func:`check_mean_pool`: ``mean_pool(W, n_heads, n_kv_heads)``, the GQA conversion of a key
  (or value) projection ``(n_heads * d_k, d_model)`` by averaging the heads of each group;
- :func:`check_local_global_cache`: ``local_global_cache(n_layers, n_heads, n_kv_heads, d_head,
  window, seq_len, bytes_per_value)``, the cache bytes of a model of 5 sliding-window layers per
  full one (Gemma 3) and of the same model with every layer full.

>>> def max_batch(memory_bytes, n_layers, n_heads, n_kv_heads, d_head, seq_len, bytes_per_value):
...     per_sequence = 2 * n_layers * n_kv_heads * d_head * seq_len * bytes_per_value
...     return memory_bytes // per_sequence
>>> bool(check_max_batch(max_batch))
True
>>> print(check_max_batch(lambda m, L, h, kv, d, T, b: m // (L * kv * d * T * b)).hints[0])
the cache holds keys AND values: a factor 2
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..gqa import mean_pool_kv
from ..kv_cache import AttentionLayer, layers_cache_bytes
from ..kv_cache import max_batch as _max_batch
from ..multihead import MultiHeadAttention
from ._checks import Mistake, check_array, run_array_cases, to_numpy
from ._feedback import Feedback
from ._learner import run_cases

__all__ = [
    "check_gqa_attention",
    "check_local_global_cache",
    "check_max_batch",
    "check_mean_pool",
]

_SEED = 2023


def _scalar(x: Any) -> Any:
    x = to_numpy(x)
    return np.asarray(x).reshape(()) if np.size(x) == 1 else x


# --- exercise 10.1: the largest batch that fits ---------------------------------------------------


def check_max_batch(max_batch: Callable[..., Any]) -> Feedback:
    """Check ``max_batch(memory_bytes, n_layers, n_heads, n_kv_heads, d_head, seq_len,
    bytes_per_value)``: the largest whole number of sequences whose KV cache fits in
    ``memory_bytes`` (:func:`course_utils.kv_cache.max_batch`).

    >>> print(check_max_batch(lambda m, L, h, kv, d, T, b: m // (2 * L * h * d * T * b)))
    ✗ max batch: not yet right
      - test case: 80 GiB; Llama 2 70B: 80 layers, 64 heads, 8 k/v heads, d_head 128; T = 4096; 4 B
      - your answer is 4, expected 32
      hint: only the n_kv_heads key/value heads are cached, not one per query head
    """
    title = "max batch"
    cases = [
        (
            "80 GiB; Llama 2 70B: 80 layers, 64 heads, 8 k/v heads, d_head 128; T = 4096; 4 B",
            (80 * 2**30, 80, 64, 8, 128, 4096, 4),
        ),
        (
            "24 GiB; Mistral 7B: 32 layers, 32 heads, 8 k/v heads, d_head 128; T = 32768; 1 B",
            (24 * 2**30, 32, 32, 8, 128, 32768, 1),
        ),
        (
            "10**9 bytes, 30 layers, 9 heads, 3 k/v heads, d_head 64, 8192 tokens, 4 bytes",
            (10**9, 30, 9, 3, 64, 8192, 4),
        ),
        (
            "16 GiB, 32 layers, 71 heads, 1 k/v head, d_head 64, 2048 tokens, 2 bytes",
            (16 * 2**30, 32, 71, 1, 64, 2048, 2),
        ),
        (
            "1 GiB, 32 layers, 32 heads, 32 k/v heads, d_head 128, 32768 tokens, 2 bytes",
            (2**30, 32, 32, 32, 128, 32768, 2),
        ),
    ]

    def compare(result: Any, m: int, L: int, h: int, kv: int, d: int, T: int, b: int) -> Feedback:
        expected = _max_batch(m, L, kv, d, T, bytes_per_value=b)
        per = 2 * L * kv * d * T * b
        mistakes = [
            Mistake(
                "only the n_kv_heads key/value heads are cached, not one per query head",
                m // (2 * L * h * d * T * b),
            ),
            Mistake("the cache holds keys AND values: a factor 2", m // (per // 2)),
            Mistake("multiply by bytes_per_value: the memory is in bytes", m // (per // b)),
            Mistake("every layer has its own cache: multiply by n_layers", m // (per // L)),
            Mistake(
                "a batch is a whole number of sequences: round down (//), never up",
                math.ceil(m / per),
            ),
        ]
        answer = _scalar(result)
        fb = check_array(title, answer, np.array(expected), mistakes=mistakes, rtol=0, atol=0)
        numeric = np.shape(answer) == () and np.issubdtype(np.asarray(answer).dtype, np.number)
        if (
            numeric
            and not fb.hints
            and not float(answer).is_integer()
            and math.floor(float(answer)) == expected
        ):  # a true division (/) where // gives the answer
            return Feedback(
                False,
                title,
                fb.messages,
                ("a batch is a whole number of sequences: use // (floor division)",),
            )
        return fb

    return run_cases(
        title, max_batch, "max_batch", cases, compare, "all {n} cases match kv_cache.max_batch"
    )


# --- exercise 10.2: grouped-query attention ------------------------------------------------


def _gqa_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, interleave: bool) -> np.ndarray:
    tq, tk, tv = (torch.from_numpy(a)[None] for a in (q, k, v))  # (1, h, T, d)
    if interleave:
        return F.scaled_dot_product_attention(tq, tk, tv, enable_gqa=True)[0].numpy()
    g = q.shape[0] // k.shape[0]
    tk, tv = tk.repeat(1, g, 1, 1), tv.repeat(1, g, 1, 1)  # heads 0, 1, .., 0, 1, ..: wrong
    return F.scaled_dot_product_attention(tq, tk, tv)[0].numpy()


def _gqa_cases() -> list[tuple[str, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    rng = np.random.default_rng(_SEED)
    cases = []
    for h, kv, n, d in [(4, 2, 5, 3), (6, 3, 4, 2), (8, 1, 3, 4), (6, 2, 7, 5), (4, 4, 3, 2)]:
        q = rng.normal(size=(h, n, d)).round(2)
        k, v = rng.normal(size=(2, kv, n, d)).round(2)
        cases.append((f"n_heads = {h}, n_kv_heads = {kv}, T = {n}, d = {d}", (q, k, v)))
    return cases


def check_gqa_attention(gqa_attention: Callable[..., Any]) -> Feedback:
    """Check ``gqa_attention(q, k, v)``: ``q`` ``(n_heads, T, d)``, ``k`` and ``v``
    ``(n_kv_heads, T, d)`` float64 numpy arrays; query head ``i`` attends with k/v head
    ``i // (n_heads / n_kv_heads)`` (no mask, scale ``1/√d``); returns ``(n_heads, T, d)``.
    The reference is ``scaled_dot_product_attention(..., enable_gqa=True)``.

    >>> def gqa_attention(q, k, v):
    ...     g = q.shape[0] // k.shape[0]
    ...     k, v = np.repeat(k, g, axis=0), np.repeat(v, g, axis=0)
    ...     s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    ...     w = np.exp(s - s.max(-1, keepdims=True))
    ...     return (w / w.sum(-1, keepdims=True)) @ v
    >>> bool(check_gqa_attention(gqa_attention))
    True
    """
    title = "GQA attention"

    def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[Any, list[Mistake]]:
        expected = _gqa_reference(q, k, v, interleave=True)  # (h, T, d)
        kv = k.shape[0]
        mistakes = []
        if 1 < kv < q.shape[0]:
            mistakes.append(
                Mistake(
                    "the k/v heads are repeated in the wrong order: query heads 0..g-1 share "
                    "k/v head 0 (np.repeat / repeat_interleave), not heads 0, n_kv, 2·n_kv, ... "
                    "(np.tile / .repeat)",
                    _gqa_reference(q, k, v, interleave=False),
                )
            )
        mistakes.append(
            Mistake(
                "scale the scores by 1/√d before the softmax",
                _gqa_reference(q * math.sqrt(q.shape[-1]), k, v, interleave=True),
            )
        )
        return expected, mistakes

    return run_array_cases(
        title,
        gqa_attention,
        "gqa_attention",
        _gqa_cases(),
        reference,
        "all {n} cases match scaled_dot_product_attention(enable_gqa=True)",
        rtol=1e-5,
        atol=1e-7,
    )


# --- exercise 10.3: MHA -> GQA by mean-pooling ---------------------------------------------


def _pool(W: np.ndarray, n_heads: int, n_kv: int, how: str) -> np.ndarray:
    d_k = W.shape[0] // n_heads
    heads = W.reshape(n_heads, d_k, -1)  # (n_heads, d_k, d_model)
    if how == "strided":  # groups {j, j + n_kv, ...}: the tile order
        return heads.reshape(n_heads // n_kv, n_kv, d_k, -1).mean(0).reshape(n_kv * d_k, -1)
    if how == "sum":
        return heads.reshape(n_kv, n_heads // n_kv, d_k, -1).sum(1).reshape(n_kv * d_k, -1)
    raise ValueError(how)  # pragma: no cover


def _mean_pool_cases() -> list[tuple[str, tuple[np.ndarray, int, int]]]:
    rng = np.random.default_rng(_SEED + 10)
    cases = []
    for h, kv, d_k in [(4, 2, 2), (6, 3, 1), (8, 1, 1), (6, 2, 2)]:
        W = rng.normal(size=(h * d_k, h * d_k)).round(2)  # (n_heads * d_k, d_model)
        cases.append((f"W {W.shape}, n_heads = {h}, n_kv_heads = {kv}", (W, h, kv)))
    return cases


def check_mean_pool(mean_pool: Callable[..., Any]) -> Feedback:
    """Check ``mean_pool(W, n_heads, n_kv_heads)``: ``W`` ``(n_heads * d_k, d_model)`` holds one
    block of ``d_k`` rows per head (as ``nn.Linear.weight``); return ``(n_kv_heads * d_k,
    d_model)`` where block ``j`` is the mean of the blocks of the query heads of group ``j``
    (heads ``j·g .. j·g + g - 1``, ``g = n_heads / n_kv_heads``), as
    :func:`course_utils.gqa.mean_pool_kv` does.

    >>> def mean_pool(W, n_heads, n_kv_heads):
    ...     d_k = W.shape[0] // n_heads
    ...     blocks = W.reshape(n_kv_heads, n_heads // n_kv_heads, d_k, W.shape[1])
    ...     return blocks.mean(axis=1).reshape(n_kv_heads * d_k, W.shape[1])
    >>> bool(check_mean_pool(mean_pool))
    True
    """
    title = "mean pool"

    def reference(W: np.ndarray, h: int, kv: int) -> tuple[Any, list[Mistake]]:
        mha = MultiHeadAttention(W.shape[1], h, bias=False).double()
        with torch.no_grad():
            mha.W_K.weight.copy_(torch.from_numpy(W))
        expected = mean_pool_kv(mha, kv).W_K.weight.detach().numpy()  # (kv * d_k, d_model)
        mistakes = [
            Mistake(
                "average the blocks (divide by the group size), don't sum them",
                _pool(W, h, kv, "sum"),
            )
        ]
        if 1 < kv < h:
            mistakes.append(
                Mistake(
                    "a group is consecutive heads (0..g-1 for k/v head 0), not every n_kv-th",
                    _pool(W, h, kv, "strided"),
                )
            )
        return expected, mistakes

    return run_array_cases(
        title,
        mean_pool,
        "mean_pool",
        _mean_pool_cases(),
        reference,
        "all {n} cases match gqa.mean_pool_kv",
        rtol=1e-6,
        atol=1e-9,
    )


# --- exercise 10.4: the cache of a 5:1 local/global model ------------------------------------


def _local_global_stack(
    n_layers: int, n_kv: int, d_head: int, window: int, n_full: int | None = None
) -> list[AttentionLayer]:
    """Gemma 3's pattern: 5 sliding layers then 1 full, repeated and cut at ``n_layers`` (so
    ``n_layers // 6`` full ones). ``n_full`` forces another count (a mistake's)."""
    local = AttentionLayer("sliding", n_heads=n_kv, n_kv_heads=n_kv, d_head=d_head, window=window)
    full = AttentionLayer("full", n_heads=n_kv, n_kv_heads=n_kv, d_head=d_head)
    if n_full is None:
        return [full if i % 6 == 5 else local for i in range(n_layers)]
    return [full] * n_full + [local] * (n_layers - n_full)


def check_local_global_cache(local_global_cache: Callable[..., Any]) -> Feedback:
    """Check ``local_global_cache(n_layers, n_heads, n_kv_heads, d_head, window, seq_len,
    bytes_per_value)``: a pair ``(local_global, all_global)``, the bytes of one sequence's cache
    after ``seq_len`` tokens in a model whose layers go 5 sliding-window then 1 full, repeated
    from the first layer and cut at ``n_layers`` (Gemma 3), and in the same model with every layer
    full (:func:`course_utils.kv_cache.layers_cache_bytes`).

    >>> def local_global_cache(n_layers, n_heads, n_kv_heads, d_head, window, seq_len,
    ...                        bytes_per_value):
    ...     per = 2 * n_kv_heads * d_head * bytes_per_value      # one token, one layer
    ...     n_full = n_layers // 6
    ...     local = (n_layers - n_full) * min(seq_len, window) + n_full * seq_len
    ...     return per * local, per * n_layers * seq_len
    >>> bool(check_local_global_cache(local_global_cache))
    True
    >>> every_layer_windowed = lambda L, h, kv, d, w, T, b: (
    ...     2 * kv * d * b * L * min(T, w), 2 * kv * d * b * L * T)
    >>> print(check_local_global_cache(every_layer_windowed).hints[0])
    only the sliding layers stop at the window: every sixth layer is full and keeps all T tokens
    """
    title = "local/global cache"
    cases = [
        ("Gemma 3 1B: 26 layers, 4 heads, 1 k/v head, d_head 256, window 512; T = 32768; 2 B",
         (26, 4, 1, 256, 512, 32768, 2)),
        ("Gemma 3 12B: 48 layers, 16 heads, 8 k/v heads, d_head 256, window 1024; T = 32768; 2 B",
         (48, 16, 8, 256, 1024, 32768, 2)),
        ("13 layers, 12 heads, 3 k/v heads, d_head 64, window 4096; T = 1000 (< window); 4 B",
         (13, 12, 3, 64, 4096, 1000, 4)),
        ("Gemma 3 27B: 62 layers, 32 heads, 16 k/v heads, d_head 128, window 1024; T = 131072; 1 B",
         (62, 32, 16, 128, 1024, 131072, 1)),
    ]  # fmt: skip

    def compare(result: Any, L: int, h: int, kv: int, d: int, w: int, T: int, b: int) -> Feedback:
        stack = _local_global_stack(L, kv, d, w)
        everything = _local_global_stack(L, kv, d, T, n_full=L)  # every layer full
        expected = np.array(
            [
                layers_cache_bytes(stack, T, bytes_per_value=b),
                layers_cache_bytes(everything, T, bytes_per_value=b),
            ],
            dtype=float,
        )
        per = 2 * kv * d * b  # one token, one layer
        n_full = L // 6
        windowed_all = per * L * min(T, w)
        mistakes = [
            Mistake(
                "only the sliding layers stop at the window: every sixth layer is full and "
                "keeps all T tokens",
                [windowed_all, expected[1]],
            ),
            Mistake("the cache holds keys AND values: a factor 2", expected / 2),
            Mistake(
                "only the n_kv_heads key/value heads are cached, not one per query head",
                expected * h / kv,
            ),
            Mistake(
                "a sliding layer holds min(T, window) tokens: the window, or all T tokens "
                "while T is still shorter",
                [per * ((L - n_full) * w + n_full * T), expected[1]],
            ),
            Mistake(
                "a sliding layer holds min(T, window) tokens, not all T: only the full layers "
                "keep every token",
                [expected[1], expected[1]],
            ),
            Mistake(
                "the pattern starts with 5 sliding layers and is cut at n_layers: "
                "n_layers // 6 full layers",
                [
                    layers_cache_bytes(
                        _local_global_stack(L, kv, d, w, n_full=-(-L // 6)), T, bytes_per_value=b
                    ),
                    expected[1],
                ],
            ),
        ]
        answer = to_numpy(result)
        if isinstance(answer, dict):
            answer = list(answer.values())
        return check_array(title, answer, expected, mistakes=mistakes, rtol=1e-9, atol=0.5)

    return run_cases(
        title,
        local_global_cache,
        "local_global_cache",
        cases,
        compare,
        "all {n} cases match kv_cache.layers_cache_bytes",
    )
