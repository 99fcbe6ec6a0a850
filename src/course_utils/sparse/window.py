"""Sliding-window attention that really runs in O(T·w): only the band of scores is computed.

A dense computation with a sparse mask still costs ``T²``: it computes every score, then throws
most of them away. :func:`sliding_window_attention` cuts the sequence into blocks of ``w`` queries
(``w`` = the window). With ``causal=True`` query ``i`` needs keys ``i - w < j <= i``, which for a
block of queries ``b·w .. b·w + w - 1`` all lie in key blocks ``b - 1`` and ``b``. So each query
block gets one ``(w, 2w)`` tile of scores (``(w, 3w)`` for the two-sided window), the tiles of
all blocks are batched matrix products over a strided view of the keys (no copy of ``K`` per
block), and a fixed ``(w, 2w)`` mask keeps exactly the band. Scores held at once: ``2w`` per
query instead of ``T``; work: ``O(T·w·d)``. No ``T × T`` tensor is ever formed. Blocks are
processed in chunks so that the live tiles stay near ``CHUNK_SCORES`` numbers, whatever ``T``.

The result equals ``torch.nn.functional.scaled_dot_product_attention`` given
``sliding_window_mask`` as a boolean ``attn_mask`` (tested to 1e-5 in float32, 1e-10 in float64).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from .._validation import shape_str
from .patterns import _check_int

__all__ = ["CHUNK_SCORES", "sliding_window_attention"]

#: How many scores (floats) one chunk of query blocks may hold at once (4 Mi = 16 MB in float32).
CHUNK_SCORES = 1 << 22


def _check_qkv(q: object, k: object, v: object) -> tuple[Tensor, Tensor, Tensor]:
    expected = {"q": "(..., T, d_k)", "k": "(..., T, d_k)", "v": "(..., T, d_v)"}
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, Tensor):
            raise TypeError(
                f"{name} must be a torch.Tensor of shape {expected[name]}; got {type(x).__name__}"
            )
        if not x.is_floating_point():
            raise TypeError(
                f"{name} must be a floating-point tensor of shape {expected[name]}; got dtype "
                f"{x.dtype} with shape {shape_str(tuple(x.shape))}"
            )
        if x.dim() < 2 or x.shape[-2] < 1 or x.shape[-1] < 1:
            raise ValueError(
                f"{name} must have shape {expected[name]} with T >= 1 and d >= 1; got shape "
                f"{shape_str(tuple(x.shape))}"
            )
    assert isinstance(q, Tensor) and isinstance(k, Tensor) and isinstance(v, Tensor)
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k and v must have one dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    if k.shape[:-1] != q.shape[:-1] or k.shape[-1] != q.shape[-1]:
        raise ValueError(
            f"k must have the shape of q {shape_str(tuple(q.shape))} (self-attention: same "
            f"batch dims, same T, same d_k); got shape {shape_str(tuple(k.shape))}"
        )
    if v.shape[:-1] != q.shape[:-1]:
        want = shape_str((*q.shape[:-1], "d_v"))
        raise ValueError(f"v must have shape {want}; got shape {shape_str(tuple(v.shape))}")
    return q, k, v


def _band(w: int, causal: bool, device: torch.device) -> Tensor:
    """The fixed band of one tile: ``(w, n_tile * w)`` bool, query ``r`` against tile key ``c``.

    Tile key ``c`` is key ``(b - 1)·w + c`` of the sequence and query ``r`` is ``b·w + r``, so
    ``i - j = r + w - c``: causal keeps ``0 <= i - j < w``, two-sided keeps ``|i - j| < w``.
    """
    n_tile = 2 if causal else 3
    r = torch.arange(w, device=device)[:, None]  # (w, 1)
    c = torch.arange(n_tile * w, device=device)[None, :]  # (1, n_tile * w)
    back = r + w - c  # (w, n_tile * w): i - j
    return (back >= 0) & (back < w) if causal else back.abs() < w


def sliding_window_attention(
    q: Tensor, k: Tensor, v: Tensor, *, window: int, causal: bool = True
) -> Tensor:
    """Attention of every query to the ``window`` keys around it, in ``O(T·window·d)``.

    ``q``, ``k``: ``(..., T, d_k)``; ``v``: ``(..., T, d_v)``, the same leading dimensions (nothing
    broadcasts). Returns ``(..., T, d_v)``. ``causal=True``: query ``i`` attends to keys
    ``i - window < j <= i``; ``causal=False``: ``|i - j| < window``. The scale is ``1/√d_k``.
    Every query sees at least itself, so no row is empty. ``T`` need not be a multiple of the
    window, and may be smaller than it (then the window covers everything it can).

    >>> torch.manual_seed(0) and None
    >>> q, k, v = torch.randn(3, 2, 10, 4, dtype=torch.float64)  # (B=2, T=10, d=4) each
    >>> out = sliding_window_attention(q, k, v, window=3)  # (2, 10, 4)
    >>> from course_utils.sparse import sliding_window_mask
    >>> mask = torch.from_numpy(sliding_window_mask(10, window=3))  # (10, 10) bool
    >>> dense = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    >>> bool(torch.allclose(out, dense, atol=1e-12))
    True
    """
    q, k, v = _check_qkv(q, k, v)
    window = _check_int(window, "window")
    *batch, t, d_k = q.shape
    d_v = v.shape[-1]
    w = min(window, t)  # a window longer than the sequence allows exactly what w = T allows
    n_blocks = -(-t // w)  # ceil(T / w)
    n_tile = 2 if causal else 3  # key blocks per query block: (b-1, b) or (b-1, b, b+1)
    pad_end = n_blocks * w - t + (0 if causal else w)
    q = q.reshape(-1, t, d_k) * (1.0 / math.sqrt(d_k))  # (N, T, d_k), N = prod(batch)
    k = k.reshape(-1, t, d_k)  # (N, T, d_k)
    v = v.reshape(-1, t, d_v)  # (N, T, d_v)
    n = q.shape[0]
    # One block of zero keys in front (block -1) and zeros to finish the last tile.
    q = F.pad(q, (0, 0, 0, n_blocks * w - t))  # (N, n_blocks * w, d_k)
    k = F.pad(k, (0, 0, w, pad_end))  # (N, (n_blocks + n_tile - 1) * w, d_k)
    v = F.pad(v, (0, 0, w, pad_end))  # (N, (n_blocks + n_tile - 1) * w, d_v)
    # The key tile of block b is rows b*w .. b*w + n_tile*w of the padded keys: a strided view.
    k_tiles = k.unfold(1, n_tile * w, w)  # (N, n_blocks, d_k, n_tile * w): view, no copy
    v_tiles = v.unfold(1, n_tile * w, w).transpose(-1, -2)  # (N, n_blocks, n_tile * w, d_v)
    q_blocks = q.view(n, n_blocks, w, d_k)  # (N, n_blocks, w, d_k)
    # The band as an additive bias: 0 where allowed, -inf where not. It is the same for every
    # block except those that touch the padding (the first, and the last one or two), which also
    # drop the padded keys (positions before 0 and from T on).
    bias = torch.zeros(w, n_tile * w, dtype=q.dtype, device=q.device)  # (w, n_tile * w)
    bias.masked_fill_(~_band(w, causal, q.device), float("-inf"))
    key_pos = (
        torch.arange(n_blocks, device=q.device)[:, None] * w
        - w
        + torch.arange(n_tile * w, device=q.device)[None, :]
    )  # (n_blocks, n_tile * w): the sequence position of each tile key
    padded_key = (key_pos < 0) | (key_pos >= t)  # (n_blocks, n_tile * w)
    edge_blocks = padded_key.any(dim=1).nonzero().flatten().tolist()  # a few block indices
    out = q.new_empty(n, n_blocks, w, d_v)  # (N, n_blocks, w, d_v)
    step = max(1, CHUNK_SCORES // (n * w * n_tile * w))  # query blocks per chunk
    for s in range(0, n_blocks, step):
        e = min(n_blocks, s + step)
        c = e - s
        qc = q_blocks[:, s:e].reshape(n * c, w, d_k)  # (N·c, w, d_k)
        kc = k_tiles[:, s:e].reshape(n * c, d_k, n_tile * w)  # (N·c, d_k, n_tile·w): a copy
        scores = torch.baddbmm(bias, qc, kc).view(n, c, w, n_tile * w)  # (N, c, w, n_tile·w)
        for b in edge_blocks:
            if s <= b < e:  # this block's tile also holds padded keys: drop them
                scores[:, b - s].masked_fill_(padded_key[b], float("-inf"))  # (N, w, n_tile·w)
        weights = torch.softmax(scores, dim=-1)  # (N, c, w, n_tile·w): rows sum to 1
        out[:, s:e] = weights @ v_tiles[:, s:e]  # (N, c, w, d_v)
    return out.view(n, n_blocks * w, d_v)[:, :t].reshape(*batch, t, d_v)  # (..., T, d_v)
