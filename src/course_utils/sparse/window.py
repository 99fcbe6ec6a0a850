"""Sliding-window attention that really runs in O(T·w): only the band of scores is computed.

A dense computation with a sparse mask still costs ``T²``: it computes every score, then throws
most of them away. :func:`sliding_window_attention` cuts the queries into blocks of ``s``
(``BLOCK``, at most the window ``w``). With ``causal=True`` query ``i`` needs keys ``i - w < j <=
i``, so the ``s`` queries ``b·s .. b·s + s - 1`` of block ``b`` together need the ``s + w - 1``
keys ``b·s - w + 1 .. b·s + s - 1`` (``s + 2w - 2`` keys for the two-sided window). Each block gets
one tile of scores ``(s, s + w - 1)``; the key tiles of all blocks are overlapping *views* of the
(padded) keys, so the tiles of many blocks are one batched matrix product (``torch.bmm``) with no
copy of ``K`` per block. A fixed additive bias (0 inside the band, ``-inf`` outside) keeps exactly
the band, then softmax and a second batched product with the value tiles. Scores held at once: ``s
+ w - 1`` per query instead of ``T``; work: ``O(T·w·d)``. No ``T × T`` tensor is ever formed, and
blocks are processed in chunks of at most ``CHUNK_SCORES`` scores, whatever ``T``.

The result equals ``torch.nn.functional.scaled_dot_product_attention`` given
``sliding_window_mask`` as a boolean ``attn_mask`` (tested to 1e-5 in float32, 1e-10 in float64).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from .._validation import check_bool, check_float_tensor, check_int, shape_str
from ..attention import default_scale

__all__ = ["BLOCK", "CHUNK_SCORES", "sliding_window_attention"]

#: How many scores (floats) one chunk of query blocks may hold at once (256 Ki = 1 MiB in
#: float32). Small enough that a chunk's scores stay in the CPU's cache between the two matrix
#: products, so the time per query does not grow with T (measured: benchmarks/bench_sparse.py).
CHUNK_SCORES = 1 << 18
#: Queries per block (at most the window). A tile holds ``BLOCK + w - 1`` keys for ``w`` needed
#: ones: smaller blocks waste less, larger blocks make larger (faster) matrix products.
BLOCK = 64


def _check_qkv(q: object, k: object, v: object) -> tuple[Tensor, Tensor, Tensor]:
    expected = {"q": "(..., T, d_k)", "k": "(..., T, d_k)", "v": "(..., T, d_v)"}
    for name, x in (("q", q), ("k", k), ("v", v)):
        x = check_float_tensor(x, name, expected[name])
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


def _band_bias(s: int, n_keys: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """The band of one tile as an additive bias ``(s, n_keys)``: 0 where allowed, -inf where not.

    Query ``r`` of a block sees tile keys ``r <= c <= r + n_keys - s`` (see
    :func:`sliding_window_attention`).
    """
    r = torch.arange(s, device=device)[:, None]  # (s, 1)
    c = torch.arange(n_keys, device=device)[None, :]  # (1, n_keys)
    allowed = (c >= r) & (c <= r + n_keys - s)  # (s, n_keys)
    bias = torch.zeros(s, n_keys, dtype=dtype, device=device)  # (s, n_keys)
    return bias.masked_fill_(~allowed, float("-inf"))


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
    return _sliding_window_attention(q, k, v, window=window, causal=causal, block=BLOCK)


def _sliding_window_attention(
    q: Tensor, k: Tensor, v: Tensor, *, window: int, causal: bool, block: int
) -> Tensor:
    q, k, v = _check_qkv(q, k, v)
    window = check_int(window, "window", low=1)
    causal = check_bool(causal, "causal")
    *batch, t, d_k = q.shape
    d_v = v.shape[-1]
    w = min(window, t)  # a window longer than the sequence allows exactly what w = T allows
    s = min(block, w)  # queries per block
    n_blocks = -(-t // s)  # ceil(T / s)
    n_keys = s + w - 1 if causal else s + 2 * w - 2  # keys per tile
    front = w - 1  # zero keys in front, so that tile 0 starts at key -(w - 1)
    back = (n_blocks - 1) * s + n_keys - front - t  # zero keys after the end
    n = math.prod(batch)
    # Padded copies: q scaled by 1/√d_k (the same scores as scaling them afterwards, on T·d_k
    # numbers instead of T·n_keys), zero keys and values before 0 and after T - 1.
    q_pad = F.pad(q.reshape(n, t, d_k) * default_scale(d_k), (0, 0, 0, n_blocks * s - t))
    k_pad = F.pad(k.reshape(n, t, d_k), (0, 0, front, back))  # (N, front + T + back, d_k)
    v_pad = F.pad(v.reshape(n, t, d_v), (0, 0, front, back))  # (N, front + T + back, d_v)
    # With autograd the output is assembled with cat; without, written in place (no extra copy).
    track = torch.is_grad_enabled() and any(x.requires_grad for x in (q, k, v))
    pieces: list[Tensor] = []
    key_pos = (
        torch.arange(n_blocks, device=q.device)[:, None] * s
        - front
        + torch.arange(n_keys, device=q.device)[None, :]
    )  # (n_blocks, n_keys): the sequence position of each tile key
    padded_key = (key_pos < 0) | (key_pos >= t)  # (n_blocks, n_keys)
    edge_blocks = padded_key.any(dim=1).nonzero().flatten().tolist()  # a few block indices
    out = q.new_empty(n, n_blocks * s, d_v)  # (N, n_blocks·s, d_v)
    step = min(n_blocks, max(1, CHUNK_SCORES // (s * n_keys)))  # query blocks per chunk
    # The band bias, repeated for a whole chunk: adding a tensor of the same (contiguous) shape is
    # several times faster than adding a broadcast one.
    bias = _band_bias(s, n_keys, q.dtype, q.device).expand(step, s, n_keys).contiguous()
    for b_n in range(n):  # each sequence of each head (batch · heads of them)
        # Tile b = keys b·s .. b·s + n_keys of the padded sequence: overlapping views of k and
        # v, no copies. unfold puts the window last: (n_blocks, d, n_keys) is already Kᵀ.
        k_t = k_pad[b_n].unfold(0, n_keys, s)  # (n_blocks, d_k, n_keys): view
        v_tiles = v_pad[b_n].unfold(0, n_keys, s).transpose(1, 2)  # (n_blocks, n_keys, d_v)
        q_blocks = q_pad[b_n].view(n_blocks, s, d_k)  # (n_blocks, s, d_k)
        for lo in range(0, n_blocks, step):
            hi = min(n_blocks, lo + step)
            scores = torch.bmm(q_blocks[lo:hi], k_t[lo:hi])  # (c, s, n_keys): the tiles
            scores += bias[: hi - lo]  # (c, s, n_keys): -inf outside the band
            for b in edge_blocks:
                if lo <= b < hi:  # this tile also holds padded keys: drop them
                    scores[b - lo].masked_fill_(padded_key[b], float("-inf"))  # (s, n_keys)
            weights = torch.softmax(scores, dim=-1)  # (c, s, n_keys): rows sum to 1
            if track:
                pieces.append(torch.bmm(weights, v_tiles[lo:hi]).view(-1, d_v))  # (c·s, d_v)
            else:
                target = out[b_n, lo * s : hi * s].view(hi - lo, s, d_v)  # (c, s, d_v)
                torch.bmm(weights, v_tiles[lo:hi], out=target)  # (c, s, d_v)
    if track:
        out = torch.cat(pieces).view(n, n_blocks * s, d_v)  # (N, n_blocks·s, d_v)
    return out[:, :t].reshape(*batch, t, d_v)  # (..., T, d_v)
