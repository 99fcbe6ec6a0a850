"""The speed paths of :func:`course_utils.flash.tiled_attention` (chapter 12): the same equations as
:func:`course_utils.flash.tiled_attention_reference`, made fast on a CPU without changing the maths.

What the reference does in a few readable lines costs about ten PyTorch calls per tile here, and
each detail below was measured (``benchmarks/bench_flash.py``):

- base-2 scores: ``q`` is multiplied once by ``scale · log2(e)``, so ``exp2`` replaces ``exp``
  (the same numbers up to rounding, about half the cost on a CPU; FlashAttention-2's CUDA kernels
  do the same, ``exp2f`` in ``csrc/flash_attn/src/softmax.h`` of its repository, a detail of its
  code that its paper does not describe);
- in place: one reused buffer of scores per call, the first key block *sets* the running
  ``(m, l, o)`` and later ones rescale and accumulate (``baddbmm_``); in a diagonal tile of a
  causal mask only the query rows that see some key are updated;
- threads: on a CPU the batch entries (heads) are shared among ``torch.get_num_threads()`` Python
  threads from a pool that is made once, each running single-threaded kernels;
- tiles sized from the machine's caches (:func:`cpu_caches`, :func:`choose_blocks`): the largest
  tile whose scores and blocks of ``q``, ``k``, ``v``, ``o`` fit in one core's L2 cache, so that a
  CPU with a larger L2 gets larger tiles and fewer PyTorch calls.

The tile update below is the reference's, written in place and in base 2 rather than called (a
call would allocate every temporary that the in-place loop reuses): ``tests/test_flash_core.py``
holds it to the reference after every tile, within 1e-12 in float64, serial and threaded.

Inputs are assumed checked (:func:`course_utils.flash.tiled_attention` checks them); nothing here
builds a graph for autograd (the public function runs the reference when gradients are needed).
"""

from __future__ import annotations

import functools
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

__all__ = ["CpuCaches", "choose_blocks", "cpu_caches", "tiled_attention_fast"]


#: The environment variable that overrides the cache sizes the machine reports, e.g.
#: ``COURSE_CPU_CACHES="l1d=48K,l2=2M,l3=1408K"`` (``l3`` per core; K = KiB, M = MiB).
CACHES_ENV = "COURSE_CPU_CACHES"
_SYS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


@dataclass(frozen=True)
class CpuCaches:
    """Data cache sizes of one core, in bytes: L1d, L2, and its share of the L3 (0 if none).

    >>> CpuCaches.parse("l1d=48K,l2=2M,l3=1408K").l2 // 1024
    2048
    """

    l1d: int
    l2: int
    l3_per_core: int
    source: str = "given"

    @classmethod
    def parse(cls, text: str, source: str = "given") -> CpuCaches:
        """Read ``"l1d=48K,l2=2M,l3=1408K"`` (the format of ``COURSE_CPU_CACHES``)."""
        sizes: dict[str, int] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, _, value = item.partition("=")
            name, value = name.strip().lower(), value.strip().upper().removesuffix("IB")
            value = value.removesuffix("B")
            unit = value[-1:] if value[-1:] in _UNITS else ""
            number = value.removesuffix(unit) if unit else value
            if name not in ("l1d", "l2", "l3") or not number.replace(".", "", 1).isdigit():
                raise ValueError(
                    f"{CACHES_ENV} must look like 'l1d=48K,l2=2M,l3=1408K'; got {text!r}"
                )
            sizes[name] = round(float(number) * _UNITS[unit])
        if sizes.get("l2", 0) <= 0:
            raise ValueError(f"{CACHES_ENV} must give a positive l2 size; got {text!r}")
        return cls(sizes.get("l1d", 32 * 1024), sizes["l2"], sizes.get("l3", 0), source)


#: What :func:`cpu_caches` assumes when the machine says nothing: a small, common core (32 KiB L1d,
#: 512 KiB L2, 2 MiB of L3), so the tiles chosen are never too large for it.
FALLBACK_CACHES = CpuCaches(32 * 1024, 512 * 1024, 2 * 1024**2, "fallback")


def _sysfs_caches(root: Path) -> CpuCaches | None:
    """cpu0's data caches from Linux's ``cache/index*/{level,type,size,shared_cpu_list}``."""
    found: dict[int, int] = {}
    for index in sorted(root.glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = CpuCaches.parse(f"l2={(index / 'size').read_text().strip()}").l2
            shared = (index / "shared_cpu_list").read_text().strip()
        except (OSError, ValueError):
            continue
        if kind == "Instruction":
            continue
        cpus = 0  # "0-7,16-23": how many cores share this cache
        for span in shared.split(","):
            first, _, last = span.partition("-")
            cpus += int(last or first) - int(first) + 1 if first.strip() else 0
        found[level] = size // max(cpus, 1) if level == 3 else size
    if found.get(2, 0) <= 0:
        return None
    return CpuCaches(found.get(1, FALLBACK_CACHES.l1d), found[2], found.get(3, 0), "sysfs")


def cpu_caches(sysfs: Path = _SYS_CACHE) -> CpuCaches:
    """This machine's per-core data caches: ``COURSE_CPU_CACHES`` if set (to simulate another CPU),
    else what Linux reports for cpu0 in ``sysfs``, else :data:`FALLBACK_CACHES`.

    >>> import os; os.environ[CACHES_ENV] = "l1d=48K,l2=2M,l3=1408K"  # a typical Xeon core
    >>> cpu_caches().l2 // 1024, cpu_caches().source
    (2048, 'given')
    >>> del os.environ[CACHES_ENV]
    """
    text = os.environ.get(CACHES_ENV, "").strip()
    if text:
        return CpuCaches.parse(text)
    return _cached_sysfs_caches(sysfs) or FALLBACK_CACHES


@functools.cache
def _cached_sysfs_caches(root: Path) -> CpuCaches | None:
    return _sysfs_caches(root)  # the hardware does not change while we run: read it once


#: Tile sides tried by :func:`choose_blocks`: under 64 rows the ten or so PyTorch calls of a tile
#: cost more than its arithmetic; over 1024 a tile no longer fits any L2 cache.
_SIDES = (64, 128, 256, 512, 1024)


def choose_blocks(d: int, d_v: int, itemsize: int, caches: CpuCaches) -> tuple[int, int]:
    """``(block_q, block_k)``: the largest tile whose working set for one head, the tile of scores
    (``block_q · block_k``) and the blocks of ``q`` and ``o`` (``block_q · d``, ``block_q · d_v``)
    and of ``k`` and ``v`` (``block_k · (d + d_v)``), fits in one core's L2 cache (as
    FlashAttention sizes its blocks to fill the fast memory), with sides from 64 to 1024, neither
    more than twice the other. Among tiles of the same area, the one with more query rows: ``k``
    and ``v`` are then read from memory fewer times (``T / block_q``).

    Measured with ``benchmarks/bench_flash.py --sweep`` (T = 4096, d = 64, float32): on the AMD
    EPYC of the recorded run (512 KiB of L2 per core) 256 × 256 was the fastest tile of the sweep,
    and this is the tile chosen there. A core with 1 MiB of L2 (a newer EPYC) gets 512 × 256, and
    one with 2 MiB (a recent Intel Xeon) 512 × 512: fewer tiles, so fewer PyTorch calls, which
    matter more where SDPA's kernel is faster.

    >>> epyc = CpuCaches.parse("l1d=32K,l2=512K,l3=16M")
    >>> xeon = CpuCaches.parse("l1d=48K,l2=2M,l3=1408K")
    >>> choose_blocks(64, 64, 4, epyc), choose_blocks(64, 64, 4, xeon)
    ((256, 256), (512, 512))
    >>> choose_blocks(64, 64, 8, epyc), choose_blocks(128, 128, 4, epyc)  # float64; larger heads
    ((128, 128), (256, 128))
    """
    budget = caches.l2 // itemsize  # numbers that fit in L2

    def working_set(bq: int, bk: int) -> int:
        return bq * bk + bq * (d + d_v) + bk * (d + d_v)

    fits = [
        (bq * bk, bq, bk)
        for bq in _SIDES
        for bk in _SIDES
        if working_set(bq, bk) <= budget and max(bq, bk) <= 2 * min(bq, bk)  # no thin tiles
    ]
    if not fits:
        return _SIDES[0], _SIDES[0]
    _, block_q, block_k = max(fits)  # the largest area, then the most query rows
    return block_q, block_k


def _causal_tile_mask(qs: int, qe: int, ks: int, ke: int, device: torch.device) -> torch.Tensor:
    rows = torch.arange(qs, qe, device=device)[:, None]  # (r, 1): query positions
    cols = torch.arange(ks, ke, device=device)[None, :]  # (1, c): key positions
    return cols <= rows  # (r, c): top-left aligned, key j visible to query i iff j <= i


def _first_visible_row(qs: int, qe: int, ks: int, ke: int, causal: bool) -> int:
    """The first query row of block ``qs:qe`` that sees any key of ``ks:ke``."""
    return max(qs, ks) if causal and ke - 1 > qs else qs


def _tiled_forward_inplace(
    qf: torch.Tensor,
    kf: torch.Tensor,
    vf: torch.Tensor,
    out: torch.Tensor,
    *,
    block_q: int,
    block_k: int,
    causal: bool,
) -> None:
    """The tile loop without autograd, writing ``out (N, T_q, d_v)``: the equations of
    :func:`course_utils.flash.tiled_attention_reference` in base 2, with as few passes over a
    tile as PyTorch calls allow. ``qf (N, T_q, d)`` is already multiplied by ``scale · log2(e)``.

    - One buffer holds the scores of every tile; ``exp2`` overwrites them in place.
    - The first key block of a query block *sets* ``(m, l, o)`` (``o = p @ v``, nothing to
      rescale); only the later ones rescale by ``alpha`` and accumulate (``baddbmm_``).
    - ``p @ v`` has the ``d_v`` columns of ``v`` (64: a multiple of the matrix kernels' width),
      and ``l`` is a separate row sum: that is cheaper than appending a column of ones to ``v``
      to get the sum from the same product (65 columns), measured.
    """
    n, t_q, _ = qf.shape
    t_k, d_v = vf.shape[-2:]
    buffer = qf.new_empty(n * min(block_q, t_q) * min(block_k, t_k))  # one tile of scores
    kt = kf.transpose(-2, -1)  # (N, d, T_k): a view, no copy
    for qs in range(0, t_q, block_q):
        qe = min(qs + block_q, t_q)
        r = qe - qs
        m = qf.new_empty((n, r, 1))  # (N, r, 1): running max per query row (base-2 units)
        l = qf.new_empty((n, r, 1))  # noqa: E741  (N, r, 1): running Σ 2^(s - m)
        o = qf.new_empty((n, r, d_v))  # (N, r, d_v): running Σ 2^(s - m) v
        for ks in range(0, t_k, block_k):
            ke = min(ks + block_k, t_k)
            if causal and ks > qe - 1:
                break  # tiles above the diagonal: every key after every query of this block
            r0 = _first_visible_row(qs, qe, ks, ke, causal)  # ks = 0 always gives r0 = qs
            rows = slice(r0 - qs, r)
            shape = (n, qe - r0, ke - ks)
            s = torch.matmul(
                qf[:, r0:qe], kt[:, :, ks:ke], out=buffer[: math.prod(shape)].view(shape)
            )  # (N, r', c): this tile's scores
            if causal and ke - 1 > qs:  # the tile crosses the diagonal: mask the keys after i
                s.masked_fill_(~_causal_tile_mask(r0, qe, ks, ke, qf.device), -math.inf)
            v_blk = vf[:, ks:ke]  # (N, c, d_v)
            if ks == 0:  # the first tile of this query block: every row, nothing to rescale
                torch.amax(s, dim=-1, keepdim=True, out=m)  # (N, r, 1), finite: key 0 is seen
                p = s.sub_(m).exp2_()  # (N, r, c): 2^(s - m) <= 1, in the scores' buffer
                torch.sum(p, dim=-1, keepdim=True, out=l)  # (N, r, 1)
                torch.matmul(p, v_blk, out=o)  # (N, r, d_v)
                continue
            m_r, l_r, o_r = m[:, rows], l[:, rows], o[:, rows]  # views of the rows that see keys
            m_new = torch.maximum(m_r, s.amax(dim=-1, keepdim=True))  # (N, r', 1)
            alpha = m_r.sub(m_new).exp2_()  # (N, r', 1): 2^(m_old - m_new) <= 1
            m_r.copy_(m_new)
            p = s.sub_(m_new).exp2_()  # (N, r', c)
            l_r.mul_(alpha).add_(p.sum(dim=-1, keepdim=True))  # (N, r', 1)
            o_r.mul_(alpha).baddbmm_(p, v_blk)  # (N, r', d_v): alpha·o + p @ v
        # l >= 1 for every row (its own maximum contributes 2^0 = 1), so o / l is safe.
        torch.div(o, l, out=out[:, qs:qe])  # (N, r, d_v)


#: log2(e): scores times this are in base-2 units, for exp2.
_LOG2_E = 1.0 / math.log(2.0)

#: Serialises the calls that change PyTorch's (process-wide) intra-op thread count.
_THREADS_LOCK = threading.Lock()

#: The worker pools of :func:`_parallel_over_batch`, by size (threads are reused across calls).
_POOLS: dict[int, ThreadPoolExecutor] = {}


def _parallel_over_batch(
    qf: torch.Tensor,
    kf: torch.Tensor,
    vf: torch.Tensor,
    out: torch.Tensor,
    workers: int,
    blocks: dict[str, Any],
) -> None:
    """Split the batch entries (heads) into ``workers`` contiguous slabs and run
    :func:`_tiled_forward_inplace` on each slab in its own thread, writing its rows of ``out``.

    Every tile is about ten PyTorch calls, and with intra-op parallelism each call makes
    PyTorch's threads meet at a barrier; on a busy machine most of the time goes into waiting
    there (measured: 4x SDPA's time at T = 1024 under a load of 11 on 2 cores). Independent heads
    need no meeting at all: PyTorch releases the GIL inside its kernels, so ``workers`` Python
    threads, each running single-threaded kernels, use the cores with no synchronisation until
    the end. Each thread takes its heads as one batch (4 of 8 heads with 2 threads), not one
    head at a time: 4 times fewer calls, so 4 times fewer hand-overs of the GIL, which is what
    costs on a busy machine (measured: 1.37x SDPA's time against 1.69x for one head at a time,
    T = 1024, same load). The intra-op thread count is set to 1 for the duration of the call and
    restored afterwards.
    """
    inference = torch.is_inference_mode_enabled()
    n = qf.shape[0]
    bounds = [n * w // workers for w in range(workers + 1)]  # as even as possible, in order

    def run(w: int) -> None:
        # Grad and inference modes are thread-local: give the worker the caller's.
        with torch.inference_mode(inference), torch.no_grad():
            heads = slice(bounds[w], bounds[w + 1])
            _tiled_forward_inplace(qf[heads], kf[heads], vf[heads], out[heads], **blocks)

    with _THREADS_LOCK:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            list(_worker_pool(workers).map(run, range(workers)))  # list(): re-raise an exception
        finally:
            torch.set_num_threads(threads)


def _worker_pool(workers: int) -> ThreadPoolExecutor:
    """The pool of ``workers`` threads, made once and kept (call with ``_THREADS_LOCK`` held).

    A thread's first PyTorch call sets up its per-thread state, about 1.8 ms here: a fresh pool
    on every call cost 3.6 ms of a 25 ms attention at T = 1024 (measured, quiet machine).
    """
    pool = _POOLS.get(workers)
    if pool is None:
        pool = _POOLS[workers] = ThreadPoolExecutor(workers, thread_name_prefix="tiled_attention")
    return pool


def tiled_attention_fast(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    block_q: int,
    block_k: int,
    causal: bool,
    scale: float,
) -> torch.Tensor:
    """``softmax(q kᵀ · scale) v`` on checked inputs ``(..., T_q, d)``, ``(..., T_k, d)``,
    ``(..., T_k, d_v)``, without autograd: in place, in base 2, shared among threads on a CPU.

    Returns ``(..., T_q, d_v)`` in the dtype of ``q`` (float16/bfloat16 accumulate in float32).
    """
    batch = q.shape[:-2]
    t_q, d = q.shape[-2:]
    t_k, d_v = v.shape[-2:]
    work = torch.promote_types(q.dtype, torch.float32)  # half precision accumulates in float32
    # Fold the batch dimensions into one: (N, T, d). Scaling q once costs T·d, not T_q·T_k.
    # log2(e) too: the tiles use exp2.
    qf = (q.reshape(-1, t_q, d).to(work) * (scale * _LOG2_E)).contiguous()  # (N, T_q, d)
    kf = k.reshape(-1, t_k, d).to(work)  # (N, T_k, d)
    vf = v.reshape(-1, t_k, d_v).to(work)  # (N, T_k, d_v)
    n = qf.shape[0]
    blocks = {"block_q": block_q, "block_k": block_k, "causal": causal}
    out = qf.new_empty((n, t_q, d_v))  # (N, T_q, d_v)
    workers = min(torch.get_num_threads(), n) if qf.device.type == "cpu" else 1
    with torch.no_grad():
        if workers > 1:
            _parallel_over_batch(qf, kf, vf, out, workers, blocks)
        else:
            _tiled_forward_inplace(qf, kf, vf, out, **blocks)
    return out.reshape(*batch, t_q, d_v).to(q.dtype)
