"""Decoding is memory-bound: one cached step against the time it takes to read its bytes once.

A cached decoding step of one sequence multiplies one token's vector by every weight matrix (two
FLOPs per weight read) and reads every cached key and value once. A CPU does far more FLOPs per
second than it can read bytes, so the step's time is set by the bytes it reads. Its **memory
floor** is ``bytes read / read bandwidth``, with the bandwidth measured on the same machine, in the
same run, by the same thread count (``x.sum()`` over a tensor far larger than the caches).

:func:`measure_decode_floor` builds a stack of pre-LN :class:`~course_utils.transformer.
TransformerBlock` s with random weights, fills every block's KV cache with ``context`` tokens,
times one new token through the stack (best of ``reps``), and returns a :class:`DecodeFloor`:

>>> r = DecodeFloor(n_layers=12, d_model=768, context=1024, weight_bytes=340_217_856,
...                 cache_bytes=75_571_200, bandwidth=23.2e9, step_s=0.0325, full_pass_s=2.74)
>>> round(r.floor_s * 1e3, 1), round(r.step_over_floor, 2), round(r.full_pass_over_step)
(17.9, 1.81, 84)

(the 12-block, GPT-2-small-sized stack at 1,024 cached tokens, as ``benchmarks/
bench_decode_floor.py`` measured it on a 2-core AMD EPYC). Times depend on the machine and on its
load; the ratios are what to read. ``benchmarks/bench_decode_floor.py`` uses these functions too.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ._validation import check_alloc, check_count
from .i18n import t
from .kv_cache import KVCache, PreallocatedKVCache
from .transformer import TransformerBlock

__all__ = [
    "BANDWIDTH_BYTES",
    "BlockStack",
    "DecodeFloor",
    "fill_cache",
    "measure_decode_floor",
    "read_bandwidth",
    "time_cached_steps",
    "timings",
]

#: Bytes summed to measure the read bandwidth: 256 MiB, far beyond a CPU's last-level cache (32 MiB
#: on the machine the book was executed on), so every byte comes from main memory.
BANDWIDTH_BYTES = 256 * 2**20


def timings(
    fn: Callable[[], object], reps: int, warmup: int = 1
) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU seconds (this thread's, ``time.thread_time``) of ``reps`` calls of
    ``fn``, after ``warmup`` untimed calls.

    On a shared machine the wall clock also counts the time the thread waits for a core; its CPU
    time does not (with one torch thread every operation runs on the calling thread), so it is
    what the call would take on a quiet machine, still sharing the memory bus with the others.

    >>> wall, cpu = timings(lambda: sum(range(1000)), reps=3)
    >>> len(wall), len(cpu), all(w >= 0 for w in wall)
    (3, 3, True)
    """
    reps = check_count(reps, "reps")
    warmup = check_count(warmup, "warmup", low=0)
    for _ in range(warmup):
        fn()
    wall, cpu = [], []
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.thread_time()
        fn()
        cpu.append(time.thread_time() - c0)
        wall.append(time.perf_counter() - w0)
    return wall, cpu


def read_bandwidth(reps: int = 10, nbytes: int = BANDWIDTH_BYTES) -> dict[str, float]:
    """Read bandwidth in bytes/s, ``x.sum()`` of an ``nbytes`` float32 tensor: the best and the
    median over ``reps``, by the wall clock (``wall``, ``wall_median``) and by CPU time (``cpu``,
    ``cpu_median``).

    >>> bw = read_bandwidth(reps=2, nbytes=2**20)   # 1 MiB: a cache's speed, not memory's
    >>> sorted(bw), bw["wall"] >= bw["wall_median"] > 0
    (['cpu', 'cpu_median', 'wall', 'wall_median'], True)
    """
    reps = check_count(reps, "reps")
    nbytes = check_count(nbytes, "nbytes", low=4)
    check_alloc((nbytes // 4,), 4, f"read_bandwidth(nbytes={nbytes})")
    x = torch.ones(nbytes // 4)  # (nbytes / 4,) float32, written once so its pages exist
    wall, cpu = timings(x.sum, reps)
    read = (nbytes // 4) * 4
    return {
        "wall": read / min(wall),
        "wall_median": read / statistics.median(wall),
        # thread_time ticks coarsely on some systems: never divide by zero
        "cpu": read / max(min(cpu), 1e-9),
        "cpu_median": read / max(statistics.median(cpu), 1e-9),
    }


class BlockStack(nn.Module):
    """``n_layers`` pre-LN :class:`TransformerBlock` s (random weights) with the
    ``forward(x, cache)`` protocol of :func:`course_utils.causal.generate`: no cache, a causal pass
    over all of ``x``; with one, ``x`` holds the new tokens only.

    >>> stack = BlockStack(n_layers=2, d_model=8, n_heads=2, d_ff=16)
    >>> x = torch.randn(1, 5, 8)                                  # (B, T, d_model)
    >>> cache = stack.new_cache()          # preallocated: writes in place, so inference only
    >>> with torch.no_grad():
    ...     y = torch.cat([stack(x[:, :4], cache), stack(x[:, 4:], cache)], dim=1)
    ...     same = torch.allclose(y, stack(x), atol=1e-5)          # cache = full causal pass
    >>> same
    True
    """

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        n_layers = check_count(n_layers, "n_layers")
        for name, value in (("d_model", d_model), ("n_heads", n_heads), ("d_ff", d_ff)):
            check_count(value, name)
        # 4 d² attention weights and 2 d d_ff FFN weights per block, float32: refuse a stack that
        # cannot fit before torch tries to allocate it
        check_alloc((n_layers, 4 * d_model * d_model + 2 * d_model * d_ff), 4, "BlockStack")
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_heads, d_ff) for _ in range(n_layers)
        )

    def new_cache(self, cache_class: type[KVCache] = PreallocatedKVCache) -> list[KVCache]:
        """One empty cache per block (by default a :class:`PreallocatedKVCache`: no copy of the
        whole cache per step, as ``torch.cat`` in :class:`KVCache` makes)."""
        return [cache_class() for _ in self.blocks]

    def forward(self, x: Tensor, cache: list[KVCache] | None = None) -> Tensor:
        for i, block in enumerate(self.blocks):
            x = block(x, causal=True) if cache is None else block(x, cache=cache[i])
        return x  # (B, T, d_model)


def fill_cache(
    stack: BlockStack,
    context: int,
    generator: torch.Generator,
    cache_class: type[KVCache] = PreallocatedKVCache,
) -> list[KVCache]:
    """A cache per block holding ``context`` random keys and values (what a prefill leaves; the
    values do not matter to the time of the next step, only how many there are)."""
    context = check_count(context, "context")
    first = stack.blocks[0].attn
    shape = (1, first.n_kv_heads, context, first.d_k)  # (B, n_kv_heads, context, d_k)
    check_alloc((2 * len(stack.blocks), *shape), 4, f"fill_cache(context={context})")
    caches = stack.new_cache(cache_class)
    for cache in caches:
        cache.append(
            torch.randn(shape, generator=generator), torch.randn(shape, generator=generator)
        )
    return caches


def time_cached_steps(
    stack: BlockStack, caches: list[KVCache], x: Tensor, reps: int
) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU seconds of ``reps`` cached steps of ``x`` (the new token, ``(B, 1,
    d_model)``) after two untimed warm-up steps (the first may grow the caches). After each step
    the caches are cut back to the length they had, outside the timed region, so every step sees
    the same context."""
    reps = check_count(reps, "reps")
    context = len(caches[0])
    wall, cpu = [], []
    for i in range(reps + 2):
        w, c = timings(lambda: stack(x, caches), 1, warmup=0)
        for cache in caches:
            cache.crop(context)
        if i >= 2:
            wall += w
            cpu += c
    return wall, cpu


@dataclass(frozen=True)
class DecodeFloor:
    """One measured cached step against its memory floor (times in seconds, bandwidth in bytes/s).

    ``full_pass_s`` is a causal pass over all ``context + 1`` tokens without a cache (None if not
    timed): what each new token would cost if nothing were kept.
    """

    n_layers: int
    d_model: int
    context: int
    weight_bytes: int
    cache_bytes: int
    bandwidth: float
    step_s: float
    full_pass_s: float | None = None

    @classmethod
    def from_benchmark(cls, result: dict, layout: str = "as-built") -> list[DecodeFloor]:
        """The rows of a ``benchmarks/bench_decode_floor.py`` result (its JSON, read) for one
        weight ``layout``, each against the best bandwidth of that run (wall clock)."""
        bandwidth = max(b["wall"] for b in result["read_bandwidth_bytes_per_s"])
        rows = [r for r in result["rows"] if r["layout"] == layout]
        if not rows:
            layouts = sorted({r["layout"] for r in result["rows"]})
            raise ValueError(f"layout must be one of {layouts}, got {layout!r}")
        return [
            cls(
                n_layers=result["n_layers"],
                d_model=result["d_model"],
                context=r["context"],
                weight_bytes=r["weight_bytes"],
                cache_bytes=r["cache_bytes"],
                bandwidth=bandwidth,
                step_s=r["step_ms_wall"] / 1e3,
                full_pass_s=r["full_pass_ms_wall"] / 1e3 if "full_pass_ms_wall" in r else None,
            )
            for r in rows
        ]

    @property
    def bytes_read(self) -> int:
        """Every weight once and every cached key and value once (the new token's too)."""
        return self.weight_bytes + self.cache_bytes

    @property
    def floor_s(self) -> float:
        """The time to read :attr:`bytes_read` once at the measured bandwidth."""
        return self.bytes_read / self.bandwidth

    @property
    def step_over_floor(self) -> float:
        return self.step_s / self.floor_s

    @property
    def full_pass_over_step(self) -> float | None:
        return None if self.full_pass_s is None else self.full_pass_s / self.step_s

    def __str__(self) -> str:
        lines = [
            t(
                "{n_layers} blocks, d_model {d_model}, {context:,} cached tokens: "
                "{mb:.0f} MB to read per new token",
                n_layers=self.n_layers,
                d_model=self.d_model,
                context=self.context,
                mb=self.bytes_read / 1e6,
            ),
            t("read bandwidth: {gb:.1f} GB/s", gb=self.bandwidth / 1e9),
            t(
                "memory floor {floor:.1f} ms, cached step {step:.1f} ms: "
                "{ratio:.1f} times its floor",
                floor=1e3 * self.floor_s,
                step=1e3 * self.step_s,
                ratio=self.step_over_floor,
            ),
        ]
        if self.full_pass_s is not None:
            lines.append(
                t(
                    "without the cache (a full pass): {full:.0f} ms, {ratio:.0f} times the "
                    "cached step",
                    full=1e3 * self.full_pass_s,
                    ratio=self.full_pass_over_step,
                )
            )
        return "\n".join(lines)


def measure_decode_floor(
    n_layers: int = 12,
    d_model: int = 768,
    n_heads: int = 12,
    d_ff: int = 3072,
    context: int = 1024,
    *,
    reps: int = 10,
    full_pass: bool = True,
    seed: int = 0,
    stack: BlockStack | None = None,
) -> DecodeFloor:
    """Time one cached step of a :class:`BlockStack` (best of ``reps`` by the wall clock, after
    two warm-up steps) and measure the read bandwidth before and after it (the best counts).

    Float32, batch 1, with the thread count torch has. ``stack``: reuse a built stack (its sizes
    then override ``n_layers``, ``d_model``, ``n_heads`` and ``d_ff``). After each timed step the
    cache is cut back to ``context`` tokens, outside the timed region.
    """
    reps = check_count(reps, "reps")
    generator = torch.Generator().manual_seed(seed)
    # the bandwidth's 256 MiB tensor and the stack are never held at once (a class of learners
    # running this cell together on one machine): measured before the stack is built, and after
    # it is dropped when it was built here
    bandwidths = [read_bandwidth()["wall"]]
    if stack is None:
        with torch.random.fork_rng():  # random weights without moving the caller's generator
            torch.manual_seed(seed)
            stack = BlockStack(n_layers, d_model, n_heads, d_ff).eval()
    n_layers, d_model = len(stack.blocks), stack.blocks[0].attn.d_model
    with torch.no_grad():
        caches = fill_cache(stack, context, generator)
        x = torch.randn(1, 1, d_model, generator=generator)  # (B, 1, d_model): the new token
        steps, _ = time_cached_steps(stack, caches, x, reps)
        full = None
        if full_pass:
            seq = torch.randn(1, context + 1, d_model, generator=generator)  # (B, T, d_model)
            full = min(timings(functools.partial(stack, seq), 1, warmup=0)[0])
    weight_bytes = sum(p.numel() * p.element_size() for p in stack.parameters())
    kv_values = sum(2 * c.keys[0, :, 0].numel() for c in caches)  # k and v per token, all blocks
    del stack, caches  # the caller's own stack stays alive through its reference
    bandwidths.append(read_bandwidth()["wall"])
    return DecodeFloor(
        n_layers=n_layers,
        d_model=d_model,
        context=context,
        weight_bytes=weight_bytes,
        cache_bytes=kv_values * (context + 1) * 4,  # float32, the new token's too
        bandwidth=max(bandwidths),
        step_s=min(steps),
        full_pass_s=full,
    )
