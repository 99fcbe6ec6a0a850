"""Benchmark: does a sliding-window mask save work? FlexAttention beside chapter 9's kernel.

Not a timed test: run it by hand, ideally on a quiet machine, and read the ratios.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_flex_attention.py        # T = 1k, 2k, 4k
    PYTHONPATH=src .venv/bin/python benchmarks/bench_flex_attention.py --tokens 1024 --rounds 3

B 1, 4 heads, d_k 64, causal window w = 256, float32, CPU, one torch thread. The same causal
sliding-window attention six ways:

- ``sdpa causal``: ``scaled_dot_product_attention(is_causal=True)``, no window (the work a window
  could save: every causal pair);
- ``sdpa + mask``: SDPA given the boolean band mask (computes every score, then masks);
- ``ours``: :func:`course_utils.sparse.sliding_window_attention` (chapter 9: the band's tiles only);
- ``flex eager``: ``flex_attention`` with a block mask, not compiled (PyTorch's reference path,
  which materialises every score);
- ``flex compiled``: ``torch.compile(flex_attention)`` with the window's block mask (blocks of 128),
  the kernel that visits only the tiles the block mask keeps;
- ``flex compiled, causal``: the same compiled kernel with a causal block mask (no window): the
  control. If skipping tiles saves work, the window's version is faster by about the share of
  tiles it skips.

Time: the variants are interleaved (the order rotates every round) and the median over rounds is
kept, both by the wall clock and by the thread's CPU time (``course_utils.memory_floor.timings``;
with one torch thread the CPU time is what the call costs without waiting for a core, on a shared
machine the better number). The first call of each compiled shape is timed apart (the compile).
Output: ``benchmarks/results/flex_attention.json`` with the machine and its load average before
and after; chapter 9 plots it (``course_utils.plotting.plot_flex_benchmark``). If ``torch.compile``
fails (no C++ compiler, say), the error is saved and the compiled variants are left out.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from _floor import load, machine, save_results
from torch.nn.attention.flex_attention import flex_attention

from course_utils import sparse
from course_utils.memory_floor import timings

RESULTS = Path(__file__).resolve().parent / "results" / "flex_attention.json"
HEADS, D, WINDOW, BLOCK = 4, 64, 256, 128


def causal_mask_mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor):
    return kv_idx <= q_idx


def variants(t: int, compiled: Callable | None) -> tuple[dict[str, Callable], dict[str, object]]:
    """The calls to time at length ``t`` (each takes q, k, v) and the tile counts."""
    band = torch.from_numpy(sparse.sliding_window_mask(t, window=WINDOW))  # (T, T) bool
    window_blocks = sparse.flex_block_mask(
        sparse.sliding_window_mask_mod(WINDOW), t, t, block=BLOCK
    )
    causal_blocks = sparse.flex_block_mask(causal_mask_mod, t, t, block=BLOCK)
    calls: dict[str, Callable] = {
        "sdpa causal": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "sdpa + mask": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=band),
        "ours": lambda q, k, v: sparse.sliding_window_attention(q, k, v, window=WINDOW),
        "flex eager": lambda q, k, v: sparse.flex_masked_attention(q, k, v, window_blocks),
    }
    if compiled is not None:
        calls["flex compiled"] = lambda q, k, v: compiled(q, k, v, block_mask=window_blocks)
        calls["flex compiled, causal"] = lambda q, k, v: compiled(q, k, v, block_mask=causal_blocks)
    kept, total = sparse.block_mask_tiles(window_blocks)
    kept_causal, _ = sparse.block_mask_tiles(causal_blocks)
    tiles = {"block": BLOCK, "total": total, "window": kept, "causal": kept_causal}
    return calls, tiles


def measure(t: int, rounds: int, compiled: Callable | None) -> dict[str, object]:
    g = torch.Generator().manual_seed(t)
    q, k, v = (torch.randn(1, HEADS, t, D, generator=g) for _ in range(3))  # (1, h, T, d) each
    calls, tiles = variants(t, compiled)
    row: dict[str, object] = {"T": t, "tiles": tiles, "compile_s": None}
    with torch.inference_mode():
        reference = calls["sdpa + mask"](q, k, v)  # (1, h, T, d)
        if compiled is not None:  # the first call compiles this shape: timed apart
            start = time.perf_counter()
            calls["flex compiled"](q, k, v)
            row["compile_s"] = round(time.perf_counter() - start, 1)
        row["max_abs_diff"] = {
            n: float((c(q, k, v) - reference).abs().max()) for n, c in calls.items()
        }
        wall: dict[str, list[float]] = {n: [] for n in calls}
        cpu: dict[str, list[float]] = {n: [] for n in calls}
        names = list(calls)
        for r in range(rounds):
            for n in names[r % len(names) :] + names[: r % len(names)]:  # rotate the order
                w, c = timings(lambda n=n: calls[n](q, k, v), reps=1, warmup=0)
                wall[n] += w
                cpu[n] += c
    row["wall_ms"] = {n: round(1000 * statistics.median(ts), 2) for n, ts in wall.items()}
    row["cpu_ms"] = {n: round(1000 * statistics.median(ts), 2) for n, ts in cpu.items()}
    row["cpu_ms_min"] = {n: round(1000 * min(ts), 2) for n, ts in cpu.items()}
    return row


def compiled_flex() -> tuple[Callable | None, str | None]:
    """``torch.compile(flex_attention)`` and a first tiny call, or ``None`` and the error."""
    try:
        fn = torch.compile(flex_attention, dynamic=False)
        q = torch.randn(1, 1, 128, 16)  # (1, 1, 128, 16): a smoke test of the C++ toolchain
        fn(
            q,
            q,
            q,
            block_mask=sparse.flex_block_mask(
                sparse.sliding_window_mask_mod(8), 128, 128, block=BLOCK
            ),
        )
        return fn, None
    except Exception as err:  # any failure means: measure eager only, and say why
        return None, f"{type(err).__name__}: {str(err)[:400]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(1)  # one thread: CPU time is what a call costs, whatever the load
    warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
    result: dict[str, object] = {
        "what": "causal sliding window w = 256: does a mask save work? (B 1, 4 heads, d_k 64, "
        "float32, CPU, 1 thread)",
        "machine": machine(),
        "load_before": load(),
        "config": {"heads": HEADS, "d_k": D, "window": WINDOW, "block": BLOCK, "dtype": "float32"},
    }
    start = time.perf_counter()
    compiled, error = compiled_flex()
    result["compile_ok"], result["compile_error"] = compiled is not None, error
    result["first_compile_s"] = round(time.perf_counter() - start, 1)
    print(f"torch.compile(flex_attention): {'ok' if compiled else error}")
    rows = []
    for t in args.tokens:
        row = measure(t, args.rounds, compiled)
        print(f"T = {t}: cpu ms {row['cpu_ms']}, tiles {row['tiles']}")
        rows.append(row)
    result["rows"] = rows
    result["rounds"] = args.rounds
    result["load_after"] = load()
    result["wall_s"] = round(time.perf_counter() - start, 1)
    save_results(args.out, result)


if __name__ == "__main__":
    main()
