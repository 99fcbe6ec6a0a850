"""The speed path of cached decoding: what :func:`course_utils.kv_cache.cached_self_attention`
runs when no attention weights are asked for, on inputs its caller has already checked.

A decoding step of batch 1 reads every weight once and every cached key and value once, and does
about one multiply-add per number read: its time is bounded below by the bytes read over the
memory bandwidth. What keeps a step from that floor is everything else: copying the cache
(:class:`~course_utils.kv_cache.PreallocatedKVCache` writes one slot instead), re-reading it to
check it for NaN (the cache remembers whether what it holds is finite; only the new token is
checked), and many small operations per layer, each with its Python and dispatch cost. So this
path

- projects ``q``, ``k`` and ``v`` with one matrix product by the stacked ``[W_Q; W_K; W_V]``
  (:func:`stacked_qkv`, rebuilt whenever a weight changes; the readable module keeps its three
  layers, which chapters show and optimizers train);
- rotates ``q`` and ``k`` (RoPE) together, with ``cos``/``sin`` tables computed once per width and
  base (:func:`rope_cos_sin`) instead of at every call, by :func:`rotate_half`;
- appends to the cache without re-checking (``_append_trusted``) and calls
  ``scaled_dot_product_attention`` directly, except for one new token after a
  :class:`~course_utils.kv_cache.PreallocatedKVCache`: its keys are stored transposed, and
  :func:`one_query_attention` reads ``Kᵀ`` and ``V`` in memory order.

The module imports nothing from :mod:`course_utils.kv_cache` (which imports it): the cache and the
attention module come in as arguments. ``tests/test_kv_cache_fast.py`` holds every piece to the
readable one (``apply_rope``, ``MultiHeadAttention``, the full causal pass).
"""

from __future__ import annotations

import weakref
from functools import lru_cache
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .positions import ScaledRoPE, rope_frequencies

__all__ = [
    "columns_contiguous",
    "decode_attention",
    "decoding_layout",
    "one_query_attention",
    "rope_cos_sin",
    "rotate_half",
    "stacked_qkv",
]

# attention module -> (what the stacked weight was made from, stacked weight, stacked bias)
_STACKED: weakref.WeakKeyDictionary[nn.Module, tuple[Any, Tensor, Tensor | None]] = (
    weakref.WeakKeyDictionary()
)


def stacked_qkv(attn: nn.Module) -> tuple[Tensor, Tensor | None]:
    """``[W_Q; W_K; W_V]`` ``((n_heads + 2 n_kv_heads) d_k, d_model)`` and the stacked biases.

    Made once and kept (one extra copy of the three weights) until one of them changes: the key
    is every source tensor's address, in-place version counter and dtype, and the sources are held
    so that no new tensor can take a freed address. One product by the stacked matrix reads the
    same bytes as the three products, in one call instead of three.

    >>> from course_utils.multihead import MultiHeadAttention
    >>> _ = torch.manual_seed(0)
    >>> attn = MultiHeadAttention(8, 4, n_kv_heads=2)
    >>> W, b = stacked_qkv(attn)
    >>> tuple(W.shape), tuple(b.shape)                 # (8 + 2 * 4, 8): q, then k, then v rows
    ((16, 8), (16,))
    >>> stacked_qkv(attn)[0] is W                        # kept while the weights are unchanged
    True
    >>> with torch.no_grad():
    ...     _ = attn.W_K.weight.zero_()                  # an in-place change...
    >>> stacked_qkv(attn)[0] is W                        # ...makes a new stacked copy
    False
    """
    layers = (attn.W_Q, attn.W_K, attn.W_V)
    sources = [t for layer in layers for t in (layer.weight, layer.bias) if t is not None]
    key = tuple((t.data_ptr(), t._version, t.dtype) for t in sources)
    held = _STACKED.get(attn)
    if held is not None and held[0][0] == key:
        return held[1], held[2]
    with torch.no_grad():
        weight = torch.cat([layer.weight for layer in layers])  # ((h + 2 h_kv) d_k, d_model)
        weight = columns_contiguous(weight)  # the layout a product by one token reads fastest
        has_bias = attn.W_Q.bias is not None
        bias = torch.cat([layer.bias for layer in layers]) if has_bias else None
    _STACKED[attn] = ((key, [t.detach() for t in sources]), weight, bias)
    return weight, bias


def columns_contiguous(w: Tensor) -> Tensor:
    """``w`` ``(out, in)`` with the same values, stored column by column (``w.t()`` contiguous)."""
    return w.t().contiguous().t()  # (out, in), strides (1, out)


def decoding_layout(module: nn.Module) -> nn.Module:
    """Store every ``nn.Linear`` weight (and ``nn.Embedding`` table) of ``module`` column by
    column, in place; same values, same shapes, same parameters; returns ``module``.

    A decoding step multiplies one token's vector by every weight matrix. ``F.linear(x, W)``
    computes ``x Wᵀ``; with ``W`` ``(out, in)`` stored row by row (PyTorch's layout) the BLAS
    reads it as dot products of rows, with ``W`` stored column by column it runs ``x`` times a
    row-major ``Wᵀ``, a sum of rows scaled by the entries of ``x``, which streams memory in
    order. Measured on the 2-core development machine (AMD EPYC, MKL, one thread): 3-4 GB/s
    the first way, 6-10 GB/s the second, against 9-12 GB/s for ``tensor.sum()``
    (``benchmarks/bench_decode_floor.py``). Products of many tokens (prefill, training) run at
    the same speed either way. An embedding table stored so is gathered row by row all the same;
    it matters where the table is also the output layer (tied embeddings, as SmolLM2's).

    Opt-in, because the product then sums in another order: float32 results move by a few
    units in the last place per layer. On SmolLM2 (30 layers, float32 logits) the largest gap
    between cached decoding and the full pass grew from 9.2e-5 to 1.3e-4 with every matrix so
    stored, past the 1e-4 that ``tests/test_smollm2.py`` allows, so
    :func:`~course_utils.pretrained.load_smollm2` stores only three so (its
    ``COLUMN_MAJOR_WEIGHTS``: 7.8e-5); ``benchmarks/bench_decode_floor.py`` measures both.

    >>> lin = nn.Linear(3, 2)
    >>> w = lin.weight.detach().clone()
    >>> decoding_layout(lin) is lin, torch.equal(lin.weight, w), lin.weight.stride()
    (True, True, (1, 2))
    """
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear | nn.Embedding) and m.weight.stride(-1) == 1:
                m.weight.data = columns_contiguous(m.weight.data)  # same Parameter object
    return module


@lru_cache(maxsize=32)
def _rope_table(
    n: int, d: int, base: float | ScaledRoPE, dtype: torch.dtype, device: str
) -> tuple[Tensor, ...]:
    if isinstance(base, ScaledRoPE) and base.scaling:
        inv_freq, factor = base.frequencies(d)  # (d/2,) float64; YaRN's factor, else 1
        theta = inv_freq.to(device)  # (d/2,) float64
    else:
        plain = base.base if isinstance(base, ScaledRoPE) else base
        theta, factor = torch.from_numpy(rope_frequencies(d, base=plain)).to(device), 1.0
    angles = torch.arange(n, device=device).to(torch.float64)[:, None] * theta  # (n, d/2)
    if factor != 1.0:  # YaRN: cos and sin scaled, as the rotated q and k are by apply()
        return (angles.cos() * factor).to(dtype), (angles.sin() * factor).to(dtype)
    return angles.cos().to(dtype), angles.sin().to(dtype)  # (n, d/2) each


def rope_cos_sin(
    n: int,
    d: int,
    base: float | ScaledRoPE,
    dtype: torch.dtype,
    device: torch.device | str = "cpu",
) -> tuple[Tensor, Tensor]:
    """``cos`` and ``sin`` ``(N, d/2)`` of RoPE's angles ``p · theta_i`` for positions
    ``p = 0 .. N-1``, ``N >= n`` (a power of two: the table is made once per size class and kept).

    The angles are those of :func:`course_utils.positions.apply_rope`, computed in float64 and
    then rounded to ``dtype`` (float32 for 16-bit inputs, as ``apply_rope`` works). ``base`` may
    be a :class:`~course_utils.positions.ScaledRoPE` (a long-context model's scaled frequencies;
    YaRN's attention factor multiplies both tables).

    >>> cos, sin = rope_cos_sin(3, 4, 100.0, torch.float64)
    >>> cos.shape[0] >= 3, cos.shape[1]
    (True, 2)
    >>> angle = torch.tensor(0.1, dtype=torch.float64)  # position 1, theta_1 = 100^(-2/4)
    >>> float(sin[1, 0]), float(sin[1, 1]) == float(angle.sin())
    (0.8414709848078965, True)
    """
    size = 1 << max(n - 1, 15).bit_length()  # >= n; 32768 positions at least (one table, 2 MiB)
    work = dtype if dtype in (torch.float32, torch.float64) else torch.float32
    key = base if isinstance(base, ScaledRoPE) else float(base)
    cos, sin = _rope_table(size, d, key, work, str(device))
    return cos, sin


def rotate_half(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """RoPE with the rotate-half pairing (dimension ``i`` with ``i + d/2``), given the tables.

    ``x`` ``(..., d)``; ``cos``/``sin`` broadcast against ``(..., d/2)`` (e.g. ``(T, 1, d/2)`` for
    ``x`` ``(B, T, n_heads, d)``). The arithmetic of :func:`course_utils.positions.apply_rope`,
    step for step, so the two agree to the last bit on the same angles.

    >>> from course_utils.positions import apply_rope
    >>> x = torch.randn(2, 3, 5, 8)                      # (B, n_heads, T, d)
    >>> cos, sin = rope_cos_sin(5, 8, 10000.0, x.dtype)
    >>> torch.equal(rotate_half(x, cos[:5], sin[:5]), apply_rope(x))
    True
    """
    work = cos.dtype
    xw = x.to(work)  # (..., d)
    half = x.size(-1) // 2
    a, b = xw[..., :half], xw[..., half:]  # (..., d/2) each: pairs (i, i + d/2)
    ra = a * cos - b * sin  # (..., d/2): first member of each rotated pair
    rb = a * sin + b * cos  # (..., d/2): second member
    return torch.cat([ra, rb], dim=-1).to(x.dtype)  # (..., d)


def decode_attention(
    attn: nn.Module, x: Tensor, cache: Any, rope_base: float | ScaledRoPE | None
) -> Tensor | tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """Causal self-attention of ``attn`` on new tokens ``x`` ``(B, T, d_model)`` after ``cache``
    (a plain or preallocated KV cache, or ``None``), inputs already checked by the caller.

    Returns the output ``(B, T, d_model)`` when everything is finite (the common case); otherwise
    the tuple ``(q, k, v, mask)`` the caller hands to the readable path (``attend(fast=False)``),
    whose output differs from the fused kernel's on NaN and inf, with the cache already extended.
    """
    B, T, _ = x.shape
    h, h_kv, d_k = attn.n_heads, attn.n_kv_heads, attn.d_k
    if torch.is_grad_enabled() and attn.W_Q.weight.requires_grad:
        # autograd must reach the three layers' own weights: project with them
        qkv = torch.cat([attn.W_Q(x), attn.W_K(x), attn.W_V(x)], dim=-1)  # (B, T, (h+2h_kv) d_k)
    else:
        W, bias = stacked_qkv(attn)
        qkv = F.linear(x, W, bias)  # (B, T, (h + 2 h_kv) d_k): one product for q, k and v
    qkv = qkv.view(B, T, h + 2 * h_kv, d_k)  # (B, T, h + 2 h_kv, d_k)
    past = 0 if cache is None else len(cache)
    if rope_base is None:
        qk, v = qkv[:, :, : h + h_kv], qkv[:, :, h + h_kv :]  # (B, T, h + h_kv | h_kv, d_k)
        finite = bool(torch.isfinite(qkv).all())
    else:
        cos, sin = rope_cos_sin(past + T, d_k, rope_base, x.dtype, x.device)  # (N, d_k/2) each
        # q and k heads rotated together, by their absolute positions past .. past + T - 1
        qk = rotate_half(
            qkv[:, :, : h + h_kv], cos[past : past + T, None], sin[past : past + T, None]
        )
        v = qkv[:, :, h + h_kv :]  # (B, T, h_kv, d_k)
        finite = bool(torch.isfinite(qk).all()) and bool(torch.isfinite(v).all())
    q = qk[:, :, :h].transpose(1, 2)  # (B, h, T, d_k)
    k = qk[:, :, h:].transpose(1, 2)  # (B, h_kv, T, d_k)
    v = v.transpose(1, 2)  # (B, h_kv, T, d_k)
    k_new = k  # (B, h_kv, T, d_k)
    if cache is not None:
        finite = cache._held_finite() and finite  # the held keys and values were checked once
        k, v = cache._append_trusted(k, v, finite)  # (B, h_kv, L, d_k) each, L = past + T
    mask = None
    if T > 1:  # new token i sees every cached key and new tokens 0 .. i (bottom-right causal)
        L = k.size(2)
        mask = torch.ones(T, L, dtype=torch.bool, device=x.device).tril(L - T)  # (T, L)
    if not finite:
        return q, k, v, None if mask is None else mask[None, None]  # mask (1, 1, T, L)
    keys_t = getattr(cache, "transposed_keys", None)  # (B, h_kv, d_k, L): PreallocatedKVCache
    if T == 1 and keys_t is not None:
        context = one_query_attention(q, keys_t, v)  # (B, h, 1, d_k)
    else:
        if keys_t is not None:
            # SDPA's fused kernel reads each key's d_k numbers side by side: on the transposed
            # storage's view it falls back to a path 20x slower, so it gets them so stored (the
            # new keys themselves when the cache held none; a copy after a past)
            k = k_new if past == 0 else k.contiguous()  # (B, h_kv, L, d_k)
        context = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, enable_gqa=h_kv != h
        )  # (B, h, T, d_k)
    return attn.W_O(context.transpose(1, 2).reshape(B, T, h * d_k))  # (B, T, d_model)


def one_query_attention(q: Tensor, keys_t: Tensor, v: Tensor) -> Tensor:
    """Softmax attention of one new token ``q`` ``(B, h, 1, d_k)`` over keys given transposed,
    ``keys_t`` ``(B, h_kv, d_k, L)``, and values ``v`` ``(B, h_kv, L, d_v)``; ``h`` a multiple of
    ``h_kv`` (query head ``i`` reads key/value head ``i // (h / h_kv)``, as grouped-query attention
    and ``scaled_dot_product_attention(enable_gqa=True)`` pair them). Returns ``(B, h, 1, d_v)``.

    A decoding step's attention: two products of a few rows by a row-major matrix (``q Kᵀ``, then
    the weights times ``V``), each of which reads its matrix once, in memory order. The queries of
    one group share their key head, so each group's keys are read once for all its heads.

    >>> _ = torch.manual_seed(0)
    >>> q, k, v = torch.randn(1, 4, 1, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)
    >>> out = one_query_attention(q, k.transpose(-1, -2), v)
    >>> ref = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    >>> tuple(out.shape), bool((out - ref).abs().max() < 1e-6)
    ((1, 4, 1, 8), True)
    """
    B, h, _, d_k = q.shape
    h_kv = keys_t.size(1)
    grouped = q.reshape(B, h_kv, h // h_kv, d_k)  # (B, h_kv, g, d_k): the heads of one key head
    scores = torch.matmul(grouped * d_k**-0.5, keys_t)  # (B, h_kv, g, L)
    weights = torch.softmax(scores, dim=-1)  # (B, h_kv, g, L): max subtracted inside, stable
    return torch.matmul(weights, v).reshape(B, h, 1, v.size(-1))  # (B, h, 1, d_v)
