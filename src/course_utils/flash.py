"""Efficient exact attention: the online softmax and FlashAttention-style tiling (chapter 12).

Naive attention stores the ``(T_q, T_k)`` matrix of scores and the matrix of weights: for 8 heads
and ``T = 8192`` in float32 that is 2 GiB each. Nothing in the formula needs them stored:

- the softmax of a row can be computed while streaming over the row in blocks, keeping only a
  running maximum ``m`` and a running sum ``l`` of ``exp(x - m)`` and rescaling the sum whenever
  the maximum grows (the *online normaliser* of Milakov & Gimelshein, 2018);
- so attention can be computed tile by tile: for a block of queries, visit the blocks of keys and
  values one at a time, and keep per query row the running ``(m, l, o)`` where ``o`` is the
  unnormalised output. Each new tile rescales the old ``l`` and ``o`` by ``exp(m_old - m_new)``.
  At the end ``o / l`` is exactly ``softmax(Q Kᵀ · scale) V`` (Dao et al., 2022, FlashAttention).

The result is the same numbers (up to floating-point rounding), with memory that grows with
``T · block`` instead of ``T²``.

Functions
---------
- :func:`online_softmax` — numpy, equals :func:`course_utils.softmax.softmax`, streamed over blocks.
- :func:`online_softmax_steps` — the running ``(m, l)`` after each block, for teaching.
- :func:`tiled_attention_reference` — the tile loop to read (no checks, no speed paths; chapter 12
  shows it).
- :func:`tiled_attention` — PyTorch, equals ``torch.nn.functional.scaled_dot_product_attention``:
  checks its inputs, runs the reference for autograd and :mod:`course_utils.flash_fast` otherwise.
- :func:`tiled_attention_steps` — the running state after each tile (small examples, the widget).
- :func:`tile_schedule` — which ``(query block, key block)`` tiles are visited, in order.
- :func:`attention_memory_bytes` — bytes of the largest temporaries, naive against tiled.
- :func:`io_cost_naive`, :func:`io_cost_tiled` — the paper's HBM-access model (its Theorem 2).
- :func:`merge_normalisers` — two parts' ``(m, l)`` into the whole row's (Exercise 12.1's merge).
- :func:`split_k_partials`, :func:`merge_partials`, :func:`split_k_decode` — split-K
  (Flash-Decoding, Dao et al., 2023): one query against chunks of a long cache, then the combine.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch import Tensor

from ._validation import (
    as_float_array,
    check_bool,
    check_float_tensor,
    check_int,
    check_qkv_shapes,
    shape_str,
)
from .attention import resolve_scale
from .flash_fast import choose_blocks, cpu_caches, tiled_attention_fast

__all__ = [
    "Partial",
    "TileStep",
    "attention_memory_bytes",
    "io_cost_naive",
    "io_cost_tiled",
    "merge_normalisers",
    "merge_partials",
    "online_softmax",
    "online_softmax_steps",
    "split_k_decode",
    "split_k_partials",
    "tile_schedule",
    "tiled_attention",
    "tiled_attention_reference",
    "tiled_attention_steps",
]


# --------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------


def _check_block(value: Any, name: str) -> int:
    """A block size is a plain positive int (``True`` and ``2.0`` are rejected, not converted)."""
    return check_int(value, name, low=1)


def _check_axis(axis: Any, ndim: int) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise TypeError(f"axis must be an int; got {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for x with {ndim} dimensions")
    return int(axis) % ndim


def _as_numpy_scores(x: Any) -> NDArray:
    # A torch tensor is read like any array (as softmax reads it); one that requires grad is
    # detached first, since the result is a numpy array without a graph either way.
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return as_float_array(x, "x")


# --------------------------------------------------------------------------------------------
# Online softmax (numpy)
# --------------------------------------------------------------------------------------------


def _online_normaliser(work: NDArray, block_size: int) -> tuple[NDArray, NDArray]:
    """One streaming pass over the last axis: the row maximum ``m`` and ``l = Σ exp(x - m)``."""
    shape = (*work.shape[:-1], 1)
    m = np.full(shape, -np.inf, dtype=work.dtype)  # (..., 1): running maximum
    total = np.zeros(shape, dtype=work.dtype)  # (..., 1): running Σ exp(x - m)
    for start in range(0, work.shape[-1], block_size):
        block = work[..., start : start + block_size]  # (..., b)
        m_new = np.maximum(m, block.max(axis=-1, keepdims=True))  # (..., 1)
        # A row that is -inf so far has m_new = -inf: shift it by 0 (exp(-inf) = 0, no nan).
        safe = np.where(np.isfinite(m_new), m_new, 0)  # (..., 1)
        with np.errstate(over="ignore"):  # -3e38 - 3e38 may round to -inf: exp gives 0
            rescale = np.exp(np.where(np.isfinite(m), m - safe, -np.inf))  # (..., 1), <= 1
            total = total * rescale + np.exp(block - safe).sum(axis=-1, keepdims=True)
        m = m_new
    return m, total


def online_softmax(x: Any, axis: int = -1, *, block_size: int) -> NDArray:
    """Softmax of ``x`` along ``axis``, reading that axis ``block_size`` entries at a time.

    Pass 1 streams over the blocks and keeps, per row, the running maximum ``m`` and the running
    sum ``l = Σ exp(x_j - m)``; when a block raises the maximum from ``m`` to ``m'``, the old sum
    is multiplied by ``exp(m - m') <= 1`` (Milakov & Gimelshein, 2018, algorithm 3). Pass 2 writes
    ``exp(x_j - m) / l`` block by block. No exponent is ever positive, so nothing overflows.

    Accepts what :func:`course_utils.softmax.softmax` accepts (array-likes, numpy arrays, torch
    tensors, which are read as arrays) and behaves the same way: ``-inf`` entries get weight
    exactly 0, a slice that is all ``-inf`` gets all zeros, NaN and ``+inf`` are rejected, float16
    is computed in float32 and rounded back, integers become float64. Returns a numpy array of the
    shape of ``x``.

    >>> online_softmax([1.0, 2.0, 3.0, 4.0, 5.0], block_size=2).round(4)
    array([0.0117, 0.0317, 0.0861, 0.2341, 0.6364])
    >>> online_softmax([1e4, -1e4, 0.0], block_size=1)  # the chapter 3 overflow case
    array([1., 0., 0.])
    >>> online_softmax([[0.0, -np.inf], [-np.inf, -np.inf]], block_size=1)
    array([[1., 0.],
           [0., 0.]])
    """
    scores = _as_numpy_scores(x)
    block_size = _check_block(block_size, "block_size")
    if scores.ndim == 0:
        raise ValueError("x must have at least 1 dimension; got a scalar (shape ())")
    axis = _check_axis(axis, scores.ndim)
    work = np.moveaxis(scores, axis, -1)  # (..., n): the normalised axis last
    work = work.astype(np.promote_types(work.dtype, np.float32), copy=False)
    m, total = _online_normaliser(work, block_size)  # (..., 1) each
    safe_m = np.where(np.isfinite(m), m, 0)  # (..., 1)
    safe_total = np.where(total > 0, total, 1)  # (..., 1): an all -inf row stays all zeros
    out = np.empty_like(work)  # (..., n)
    with np.errstate(over="ignore"):
        for start in range(0, work.shape[-1], block_size):  # pass 2, block by block
            stop = start + block_size
            out[..., start:stop] = np.exp(work[..., start:stop] - safe_m) / safe_total
    return np.moveaxis(out, -1, axis).astype(scores.dtype, copy=False)


def online_softmax_steps(x: Any, *, block_size: int) -> tuple[NDArray, NDArray]:
    """The running maximum and sum of a 1-D row after each block: ``(m, l)``, shape ``(n_blocks,)``.

    ``l[b]`` is ``Σ exp(x_j - m[b])`` over the entries seen so far; the last pair is the final
    normaliser, so ``exp(x - m[-1]) / l[-1]`` is the softmax.

    >>> m, l = online_softmax_steps([1.0, 3.0, 2.0, 0.0], block_size=2)
    >>> m
    array([3., 3.])
    >>> l.round(4)  # exp(1-3) + exp(0), then + exp(-1) + exp(-3)
    array([1.1353, 1.553 ])
    """
    row = _as_numpy_scores(x)
    block_size = _check_block(block_size, "block_size")
    if row.ndim != 1 or row.shape[0] == 0:
        raise ValueError(f"x must be one non-empty row (n,); got shape {shape_str(row.shape)}")
    work = row.astype(np.promote_types(row.dtype, np.float32), copy=False)
    ms, ls = [], []
    for stop in range(block_size, work.shape[0] + block_size, block_size):
        # Re-running the stream on the first `stop` entries gives the state after that block.
        m, total = _online_normaliser(work[None, :stop], block_size)
        ms.append(m[0, 0])
        ls.append(total[0, 0])
    return np.array(ms), np.array(ls)


# --------------------------------------------------------------------------------------------
# Tiled attention (torch)
# --------------------------------------------------------------------------------------------

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _as_tensor(x: Any, name: str, expected: str) -> torch.Tensor:
    return check_float_tensor(x, name, expected, min_ndim=2, numpy_ok=True, dtypes=_FLOAT_DTYPES)


def _check_qkv(
    q: Any, k: Any, v: Any, scale: float | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]:
    q = _as_tensor(q, "q", "(..., T_q, d)")
    k = _as_tensor(k, "k", "(..., T_k, d)")
    v = _as_tensor(v, "v", "(..., T_k, d_v)")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(
            f"q, k and v must have the same dtype; got q {q.dtype}, k {k.dtype}, v {v.dtype}"
        )
    if not q.device == k.device == v.device:
        raise ValueError(
            f"q, k and v must be on one device; got {q.device}, {k.device}, {v.device}"
        )
    if not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        raise ValueError(
            "q, k and v must have the same leading (batch) dimensions, nothing is broadcast; "
            f"got q {shape_str(tuple(q.shape))}, k {shape_str(tuple(k.shape))}, "
            f"v {shape_str(tuple(v.shape))}"
        )
    d_k, _ = check_qkv_shapes(tuple(q.shape), tuple(k.shape), tuple(v.shape))
    return q, k, v, resolve_scale(scale, d_k)


def tile_schedule(
    t_q: int, t_k: int, *, block_q: int, block_k: int, causal: bool = False
) -> list[tuple[int, int, int, int]]:
    """The tiles ``(q_start, q_stop, k_start, k_stop)`` that tiled attention visits, in order.

    Query blocks in the outer loop, key blocks in the inner loop. With ``causal=True`` (top-left
    aligned, as ``scaled_dot_product_attention(is_causal=True)``: query ``i`` sees keys
    ``j <= i``) a tile whose first key comes after its last query is skipped: it is entirely
    masked.

    >>> tile_schedule(4, 4, block_q=2, block_k=2, causal=True)
    [(0, 2, 0, 2), (2, 4, 0, 2), (2, 4, 2, 4)]
    """
    t_q = check_int(t_q, "t_q", low=0)
    t_k = check_int(t_k, "t_k", low=0)
    block_q = _check_block(block_q, "block_q")
    block_k = _check_block(block_k, "block_k")
    causal = check_bool(causal, "causal")
    tiles = []
    for qs in range(0, t_q, block_q):
        qe = min(qs + block_q, t_q)
        for ks in range(0, t_k, block_k):
            if causal and ks > qe - 1:
                break  # this key block and every later one are above the diagonal
            tiles.append((qs, qe, ks, min(ks + block_k, t_k)))
    return tiles


# fmt: off
def tiled_attention_reference(
    q: Tensor, k: Tensor, v: Tensor, *, block_q: int = 256, block_k: int = 256,
    causal: bool = False, scale: float | None = None, stats: bool = False,
) -> Tensor | tuple[Tensor, Tensor, Tensor]:
    """The readable tile loop: ``softmax(q kᵀ · scale) v`` for ``(..., T, d)``
    tensors, one tile of ``(block_q, block_k)`` scores at a time, keeping per
    query row the running maximum ``m``, sum ``ℓ`` and unnormalised output
    ``o`` (the online softmax). ``stats=True`` also returns ``m`` and ``ℓ``,
    ``(..., T_q, 1)`` each. :func:`tiled_attention` checks its inputs first.

    Two tiles of keys per query: key 2 comes in the second one and lifts
    query 1's maximum from 1 to 2, so its old ℓ and o are rescaled by e^-1.

    >>> q = torch.tensor([[0.0], [1.0]])  # (2, 1): T_q = 2, d = 1
    >>> k = torch.tensor([[0.0], [1.0], [2.0]])  # (3, 1): T_k = 3
    >>> v = torch.tensor([[1.0], [2.0], [3.0]])  # (3, 1): d_v = 1
    >>> out, m, ell = tiled_attention_reference(
    ...     q, k, v, block_q=1, block_k=2, scale=1.0, stats=True)
    >>> torch.cat([out, m, ell], dim=-1)  # (2, 3): per query o / ℓ, m, ℓ
    tensor([[2.0000, 0.0000, 3.0000],
            [2.5752, 2.0000, 1.5032]])
    """
    t_q, t_k, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    blocks = []  # (o / ℓ, m, ℓ) of each block of queries
    for qs in range(0, t_q, block_q):
        q_blk = q[..., qs : qs + block_q, :] * scale  # (..., r, d): queries
        r, batch = q_blk.shape[-2], q.shape[:-2]
        m = q.new_full((*batch, r, 1), -math.inf)  # (..., r, 1): running max
        ell = q.new_zeros((*batch, r, 1))  # (..., r, 1): Σ exp(s - m)
        o = q.new_zeros((*batch, r, d_v))  # (..., r, d_v): Σ exp(s - m) v
        for ks in range(0, t_k, block_k):
            if causal and ks > qs + r - 1:
                break  # this key block and all later ones follow every query
            k_blk = k[..., ks : ks + block_k, :]  # (..., c, d)
            v_blk = v[..., ks : ks + block_k, :]  # (..., c, d_v)
            s = q_blk @ k_blk.transpose(-2, -1)  # (..., r, c): tile's scores
            if causal:  # query i sees key j iff j <= i (as SDPA's is_causal)
                rows = torch.arange(qs, qs + r, device=q.device)  # (r,)
                # (c,): the tile's key positions
                cols = torch.arange(ks, ks + s.shape[-1], device=q.device)
                future = cols > rows[:, None]  # (r, c): key after query
                s = s.masked_fill(future, -math.inf)  # (..., r, c)
            # The first tile holds key 0, seen by every row: m_new is finite.
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))  # (..., r, 1)
            alpha = torch.exp(m - m_new)  # (..., r, 1): rescales old sums
            p = torch.exp(s - m_new)  # (..., r, c): <= 1, and 0 where masked
            ell = alpha * ell + p.sum(-1, keepdim=True)  # (..., r, 1)
            o = alpha * o + p @ v_blk  # (..., r, d_v)
            m = m_new  # (..., r, 1)
        blocks.append((o / ell, m, ell))  # ℓ >= 1: a row's max adds exp(0)
    # (..., T_q, d_v) for the output, (..., T_q, 1) for m and ℓ
    out, m, ell = (torch.cat(p, dim=-2) for p in zip(*blocks, strict=True))
    return (out, m, ell) if stats else out
# fmt: on


def tiled_attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    block_q: int | None = None,
    block_k: int | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> torch.Tensor:
    """``softmax(q kᵀ · scale) v`` tile by tile, never forming a ``(T_q, T_k)`` tensor.

    Parameters
    ----------
    q : Tensor ``(..., T_q, d)``
    k : Tensor ``(..., T_k, d)``
    v : Tensor ``(..., T_k, d_v)``
        Same leading (batch) dimensions (nothing is broadcast), same floating dtype, one device.
        numpy arrays are accepted and converted with ``torch.from_numpy``.
    block_q, block_k : int, optional
        Rows of queries and of keys per tile. The largest temporary is one tile of scores,
        ``(batch, block_q, block_k)``, so memory grows with ``T · d + block_q · block_k`` per batch
        entry, never with ``T_q · T_k``. By default both are chosen from the cache sizes the
        machine reports (:func:`course_utils.flash_fast.choose_blocks`, from
        :func:`~course_utils.flash_fast.cpu_caches`; ``COURSE_CPU_CACHES`` overrides them): the
        largest tile whose scores and blocks of ``q``, ``k``, ``v`` and ``o`` for one head fit in
        one core's L2 cache. Every tile costs about ten PyTorch calls, so many small tiles lose,
        and a tile that spills out of L2 loses too (``benchmarks/bench_flash.py --sweep``). With
        512 KiB of L2 per core, ``d = 64`` and float32 that is 256 × 256 (256 KiB of scores per
        head), the fastest tile of the sweep on the 2-core AMD EPYC the defaults were measured
        on; with 1 MiB it is 512 × 256 and with 2 MiB (a recent Intel Xeon) 512 × 512. The tile
        changes the order of the additions, never the result beyond rounding.
    causal : bool
        Query ``i`` sees keys ``j <= i``. For ``T_q != T_k`` this is *top-left* aligned, exactly
        what ``scaled_dot_product_attention(is_causal=True)`` does (query 0 sees key 0), so every
        query sees at least one key. Tiles entirely above the diagonal are skipped, and within a
        diagonal tile the query rows that see none of its keys are left out.
    scale : float, optional
        Multiplies the scores; default ``1 / sqrt(d)``, as ``scaled_dot_product_attention``.

    Returns
    -------
    Tensor ``(..., T_q, d_v)``, in the dtype of ``q`` (float16/bfloat16 accumulate in float32).
    Equals ``torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
    scale=scale)`` up to rounding (tested: 1e-5 in float32, 1e-10 in float64).
    ``T_q = 0`` gives the empty ``(..., 0, d_v)`` result, as SDPA does. ``T_k = 0`` is a
    ``ValueError``: a softmax over no keys is undefined (SDPA returns zeros there).

    Autograd works: when an input requires grad this runs :func:`tiled_attention_reference`
    (ordinary tensor operations, storing every tile: not memory efficient). Without gradients it
    runs :func:`course_utils.flash_fast.tiled_attention_fast`, the same equations in base 2 with
    the tiles updated in place (one reused buffer of scores, ``l`` as a separate row sum); on a
    CPU the batch entries (heads) are shared among ``torch.get_num_threads()`` Python threads
    that each run single-threaded kernels, with PyTorch's thread count set to 1 during the call.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> q, k, v = torch.randn(3, 2, 10, 4, dtype=torch.float64).unbind(0)  # (2, 10, 4) each
    >>> out = tiled_attention(q, k, v, block_q=3, block_k=4, causal=True)  # (2, 10, 4)
    >>> ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    >>> bool(torch.allclose(out, ref, rtol=0, atol=1e-12))
    True
    """
    q, k, v, scale = _check_qkv(q, k, v, scale)
    if block_q is None or block_k is None:  # sized from this machine's caches (or the override)
        work = torch.promote_types(q.dtype, torch.float32)  # the dtype the tiles are computed in
        chosen = choose_blocks(q.shape[-1], v.shape[-1], work.itemsize, cpu_caches())
        block_q = chosen[0] if block_q is None else block_q
        block_k = chosen[1] if block_k is None else block_k
    blocks = {
        "block_q": _check_block(block_q, "block_q"),
        "block_k": _check_block(block_k, "block_k"),
    }
    causal = check_bool(causal, "causal")
    if q.shape[-2] == 0:  # no queries: the empty (..., 0, d_v) result, as SDPA returns
        return q @ k.transpose(-2, -1) @ v  # (..., 0, d_v), on the autograd graph if needed
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        work = torch.promote_types(q.dtype, torch.float32)  # half precision accumulates in float32
        qw, kw, vw = (t.to(work) for t in (q, k, v))
        out = tiled_attention_reference(qw, kw, vw, **blocks, causal=causal, scale=scale)
        return out.to(q.dtype)  # (..., T_q, d_v), differentiable
    return tiled_attention_fast(q, k, v, **blocks, causal=causal, scale=scale)


# --------------------------------------------------------------------------------------------
# Teaching helpers: the running state, tile by tile (small inputs)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TileStep:
    """The state after one tile: which tile, and the running statistics of every query row.

    ``m``, ``l`` are ``(T_q,)`` (``-inf`` and ``0`` for rows not reached yet), ``output`` is the
    current estimate ``o / l`` of shape ``(T_q, d_v)`` (zeros for rows not reached yet).
    """

    tile: tuple[int, int, int, int]
    m: NDArray
    l: NDArray  # noqa: E741
    output: NDArray


def tiled_attention_steps(
    q: Any, k: Any, v: Any, *, block_q: int, block_k: int, causal: bool = False
) -> Iterator[TileStep]:
    """Run :func:`tiled_attention_reference`'s loop on 2-D inputs and yield the state after every
    tile, in float64; the last step's ``output`` is the exact attention output.

    The state after the tile ``(qs, qe, ks, ke)`` is what the loop holds there: rows before ``qs``
    are finished, rows ``qs:qe`` have seen keys ``0:ke`` (so the reference run on ``q[:qe]``,
    ``k[:ke]``, ``v[:ke]`` with the same blocks gives their state), later rows nothing yet.

    >>> q = k = v = np.eye(3)
    >>> steps = list(tiled_attention_steps(q, k, v, block_q=3, block_k=2))
    >>> [s.tile for s in steps]
    [(0, 3, 0, 2), (0, 3, 2, 3)]
    >>> steps[-1].l.round(3)  # each row: e^{1/√3} + 2 e^0 under its maximum 1/√3
    array([2.123, 2.123, 2.123])
    """
    qt, kt, vt, scale = _check_qkv(
        *(torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (q, k, v)), None
    )
    if qt.dim() != 2:
        raise ValueError(f"q, k and v must be 2-D here; got q {shape_str(tuple(qt.shape))}")
    t_q, d_v = qt.shape[0], vt.shape[1]
    m = np.full(t_q, -np.inf)  # (T_q,): rows not reached yet
    l = np.zeros(t_q)  # noqa: E741  (T_q,)
    output = np.zeros((t_q, d_v))  # (T_q, d_v)
    blocks = {"block_q": block_q, "block_k": block_k, "causal": causal}
    for qs, qe, ks, ke in tile_schedule(t_q, kt.shape[0], **blocks):
        o_seen, m_seen, l_seen = tiled_attention_reference(
            qt[:qe], kt[:ke], vt[:ke], **blocks, scale=scale, stats=True
        )  # (qe, d_v), (qe, 1), (qe, 1): rows qs:qe after keys 0:ke
        m[qs:qe], l[qs:qe], output[qs:qe] = m_seen[qs:, 0], l_seen[qs:, 0], o_seen[qs:]
        yield TileStep((qs, qe, ks, ke), m.copy(), l.copy(), output.copy())


# --------------------------------------------------------------------------------------------
# Memory and IO models (computed, not measured)
# --------------------------------------------------------------------------------------------


def attention_memory_bytes(
    t: int, *, heads: int = 8, d: int = 64, batch: int = 1, block_q: int = 256,
    block_k: int = 256, itemsize: int = 4,
) -> dict[str, int]:  # fmt: skip
    """Bytes of the tensors each method holds at its peak, beyond ``q``, ``k``, ``v`` themselves.

    - naive: the scores and the weights, ``2 · B · h · T²`` numbers, plus the output;
    - tiled (:func:`tiled_attention` without autograd): the scaled copy of ``q`` and the output
      (``B · h · T · 2d`` together), the running ``(m, l, o)`` of one query block and one tile of
      scores ``B · h · block_q · block_k`` (with several worker threads, each holds the tile of
      its share of the heads).

    >>> mem = attention_memory_bytes(8192)
    >>> mem["naive"] // 2**20, mem["tiled"] // 2**20, round(mem["naive"] / mem["tiled"])  # MiB
    (4112, 34, 119)
    """
    t = check_int(t, "t", low=1)
    heads, d = check_int(heads, "heads", low=1), check_int(d, "d", low=1)
    batch, itemsize = check_int(batch, "batch", low=1), check_int(itemsize, "itemsize", low=1)
    block_q, block_k = _check_block(block_q, "block_q"), _check_block(block_k, "block_k")
    n = batch * heads
    bq, bk = min(block_q, t), min(block_k, t)
    naive = 2 * n * t * t + n * t * d
    tiled = n * t * 2 * d + n * bq * (d + 2) + n * bq * bk
    return {"naive": naive * itemsize, "tiled": tiled * itemsize}


def io_cost_naive(n: Any, d: Any) -> Any:
    """HBM accesses of standard attention, ``Θ(N d + N²)`` (Dao et al., 2022, Theorem 2).

    Counted as in the paper's algorithm 0: read Q, K (2Nd), write S (N²), read S, write P (2N²),
    read P, V (N² + Nd), write O (Nd): ``4 N d + 4 N²`` numbers.

    >>> io_cost_naive(1024, 64)
    4456448
    """
    n = np.asarray(n, dtype=np.float64) if np.ndim(n) else n
    return 4 * n * d + 4 * n * n


def io_cost_tiled(n: Any, d: Any, m: Any) -> Any:
    """HBM accesses of FlashAttention, ``Θ(N² d² / M)`` for fast memory of ``M`` numbers.

    Blocks of ``B_c = ceil(M / 4d)`` keys and ``B_r = min(B_c, d)`` queries (the paper's choice):
    K and V are read once (2Nd), Q and O are read and written once per key block
    (``T_c = N / B_c`` passes of 2Nd each, plus the statistics ``l, m``). That gives
    ``2 N d + 4 N d · N / B_c ≈ 16 N² d² / M``. Valid for ``d <= M <= N d``.

    >>> round(io_cost_tiled(1024, 64, 100_000) / io_cost_naive(1024, 64), 3)
    0.209
    """
    n = np.asarray(n, dtype=np.float64) if np.ndim(n) else n
    block_c = np.ceil(np.asarray(m, dtype=np.float64) / (4 * np.asarray(d)))
    passes = np.ceil(n / block_c)
    out = 2 * n * d + passes * (4 * n * d + 4 * n)
    return float(out) if np.ndim(out) == 0 else out


# --------------------------------------------------------------------------------------------
# Split-K (Flash-Decoding): one query against a long cache, the keys cut into chunks
# --------------------------------------------------------------------------------------------


def merge_normalisers(m1: Any, l1: Any, m2: Any, l2: Any) -> tuple[Any, Any]:
    """Merge the softmax normalisers of two parts of a row: ``(m, l)`` of the whole row.

    ``m1`` is the maximum of the first part and ``l1 = Σ exp(x - m1)`` over it; the same for the
    second. The whole row's maximum is ``m = max(m1, m2)`` and each sum is moved to it by the
    factor ``exp(m_part - m) <= 1``. This is Exercise 12.1's merge, the one step the online
    softmax repeats, and the combine of split-K (:func:`merge_partials`).

    Numbers, numpy arrays or torch tensors (all four tensors, or none), of one shape: nothing is
    broadcast. A part that saw only ``-inf`` has ``m = -inf`` and ``l = 0`` and adds nothing.

    >>> m, l = merge_normalisers(2.0, 1.5, 5.0, 1.0)  # the first sum shrinks by e^-3
    >>> float(m), round(float(l), 4)
    (5.0, 1.0747)
    """
    parts = {"m1": m1, "l1": l1, "m2": m2, "l2": l2}
    tensors = [name for name, x in parts.items() if isinstance(x, torch.Tensor)]
    if tensors and len(tensors) < 4:
        others = ", ".join(f"{n} {type(x).__name__}" for n, x in parts.items() if n not in tensors)
        raise TypeError(f"m1, l1, m2 and l2 must be all torch tensors or none; got {others}")
    if not tensors:
        parts = {name: as_float_array(x, name) for name, x in parts.items()}
    shapes = {name: tuple(x.shape) for name, x in parts.items()}
    if len(set(shapes.values())) > 1:
        got = ", ".join(f"{n} {shape_str(s)}" for n, s in shapes.items())
        raise ValueError(f"m1, l1, m2 and l2 must have one shape, nothing is broadcast; got {got}")
    m1, l1, m2, l2 = parts.values()
    lib: Any = torch if tensors else np
    m = lib.maximum(m1, m2)
    # Where both parts are empty (m = -inf) shift by 0: exp(-inf - 0) = 0, not exp(nan).
    safe = lib.where(lib.isfinite(m), m, lib.zeros_like(m))
    l = l1 * lib.exp(m1 - safe) + l2 * lib.exp(m2 - safe)  # noqa: E741
    return (m, l) if tensors or m.ndim else (m[()], l[()])


@dataclass(frozen=True)
class Partial:
    """What one chunk of keys contributes to attention, per query row.

    ``output`` ``(..., T_q, d_v)`` is attention over this chunk's keys alone (its weights sum to
    1 within the chunk); ``m`` and ``l`` ``(..., T_q, 1)`` are the chunk's maximum score and
    ``Σ exp(s - m)``. Flash-Decoding writes exactly these (the log-sum-exp ``m + log l`` in one
    number) from every chunk, then combines them.
    """

    output: Tensor
    m: Tensor
    l: Tensor  # noqa: E741


def merge_partials(a: Partial, b: Partial) -> Partial:
    """Combine two chunks' partial results into the result over both chunks.

    The normalisers merge as in :func:`merge_normalisers`; each output is weighted by its chunk's
    share of the merged sum, ``l_a · exp(m_a - m) / l``, so the weights of the two chunks together
    sum to 1 again. Associative and commutative up to rounding: any order of merges gives the
    attention over all keys.

    >>> one = Partial(torch.tensor([[1.0]]), torch.tensor([[0.0]]), torch.tensor([[1.0]]))
    >>> two = Partial(torch.tensor([[3.0]]), torch.tensor([[0.0]]), torch.tensor([[3.0]]))
    >>> merge_partials(one, two).output  # weights 1/4 and 3/4
    tensor([[2.5000]])
    """
    m, l = merge_normalisers(a.m, a.l, b.m, b.l)  # noqa: E741  (..., T_q, 1) each
    safe = torch.where(torch.isfinite(m), m, torch.zeros_like(m))  # (..., T_q, 1)
    share_a = a.l * torch.exp(a.m - safe) / l  # (..., T_q, 1): chunk a's part of the weights
    share_b = b.l * torch.exp(b.m - safe) / l  # (..., T_q, 1)
    return Partial(share_a * a.output + share_b * b.output, m, l)  # (..., T_q, d_v)


def _check_splits(n_splits: Any, t_k: int) -> int:
    n_splits = _check_block(n_splits, "n_splits")
    if n_splits > t_k:
        raise ValueError(
            f"n_splits must be at most T_k = {t_k}, so that every chunk holds a key; got {n_splits}"
        )
    return n_splits


def _split_k(
    q: Any, k: Any, v: Any, n_splits: Any, scale: float | None
) -> tuple[list[Partial], torch.dtype]:
    """The chunks' partial results (in float32 at least) and the dtype of ``q``."""
    q, k, v, scale = _check_qkv(q, k, v, scale)
    n_splits = _check_splits(n_splits, k.shape[-2])
    work = torch.promote_types(q.dtype, torch.float32)  # half precision accumulates in float32
    q_scaled = q.to(work) * scale  # (..., T_q, d)
    chunks = zip(
        torch.tensor_split(k.to(work), n_splits, dim=-2),
        torch.tensor_split(v.to(work), n_splits, dim=-2),
        strict=True,
    )
    partials = []
    for k_c, v_c in chunks:  # (..., c, d), (..., c, d_v): one chunk of the cache
        s = q_scaled @ k_c.transpose(-2, -1)  # (..., T_q, c): this chunk's scores
        m = s.amax(-1, keepdim=True)  # (..., T_q, 1)
        p = torch.exp(s - m)  # (..., T_q, c): <= 1
        l = p.sum(-1, keepdim=True)  # noqa: E741  (..., T_q, 1), >= 1
        partials.append(Partial(p @ v_c / l, m, l))  # output (..., T_q, d_v)
    return partials, q.dtype


def split_k_partials(
    q: Any, k: Any, v: Any, n_splits: int, *, scale: float | None = None
) -> list[Partial]:
    """The keys and values cut into ``n_splits`` chunks along ``T_k``, each attended on its own.

    Chunks are as even as possible (``torch.tensor_split``: 10 keys in 3 chunks are 4, 3 and 3).
    On a GPU each chunk is a separate thread block, so one query token keeps the whole GPU busy
    (Flash-Decoding); here they run one after another. Shapes and checks as
    :func:`tiled_attention`; ``1 <= n_splits <= T_k``. The partials are float32 for half-precision
    inputs (as the combine needs them), else in the dtype of ``q``.

    >>> q, k, v = torch.zeros(1, 2), torch.zeros(5, 2), torch.arange(5.0)[:, None]
    >>> [p.output.item() for p in split_k_partials(q, k, v, 2)]  # equal scores: chunk means
    [1.0, 3.5]
    """
    return _split_k(q, k, v, n_splits, scale)[0]


def split_k_decode(
    q: Any, k: Any, v: Any, n_splits: int, *, scale: float | None = None
) -> torch.Tensor:
    """Attention by split-K (Flash-Decoding): ``n_splits`` chunk results, then their combine.

    The chunks' :class:`Partial` results are merged one after another by :func:`merge_partials`
    (Flash-Decoding reduces them in one step, with the same weights). Equals
    ``torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)`` up to rounding,
    for any ``n_splits`` in ``[1, T_k]`` (tested, also against SDPA's ``enable_gqa`` with the
    key/value heads repeated). Returns ``(..., T_q, d_v)`` in the dtype of ``q``.

    >>> _ = torch.manual_seed(0)
    >>> q, k, v = torch.randn(1, 8), torch.randn(100, 8), torch.randn(100, 4)
    >>> out = split_k_decode(q, k, v, n_splits=7)  # chunks of 15 and 14 keys
    >>> ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    >>> bool((out - ref).abs().max() < 1e-6)
    True
    """
    partials, dtype = _split_k(q, k, v, n_splits, scale)
    merged = partials[0]
    for part in partials[1:]:
        merged = merge_partials(merged, part)
    return merged.output.to(dtype)  # (..., T_q, d_v)
