"""One cached decoding step of a 12-block stack against its memory floor. Not a test: run by hand.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_decode_floor.py [--contexts 1024 4096]
        [--threads 1] [--reps 30] [--cache auto|plain|preallocated] [--save PATH]

The stack is 12 :class:`course_utils.transformer.TransformerBlock` s (d_model 768, 12 heads, d_ff
3072, float32, random weights, batch 1), the GPT-2-small shape of ``bench_kv_cache.py``. For each
context ``c`` every block's cache is filled with ``c`` random keys and values (prefill is not
what we time), then one step is timed: the new token through the 12 blocks, reading every weight
and the ``c + 1`` keys and values of every block. After each repetition the cache is cut back to
``c`` tokens (outside the timed region).

The floor is the bytes the step must read (the parameters, and ``2 · 12 · (c + 1) · 768`` cached
float32 numbers) divided by the read bandwidth measured in the same run (``tensor.sum()`` over
256 MiB, best of the runs before, between and after the steps, the same thread count). The goal:
the best step within 1.5x of its floor at 1k and 4k cached tokens. Both are timed by the wall
clock and by the thread's CPU time (``_floor.timings``: on a loaded machine the wall clock counts
the waits for a core too). Two weight layouts: as ``nn.Linear`` makes them (row by row), and
after :func:`course_utils.kv_cache_fast.decoding_layout` (column by column, same values).
``--full-pass`` also times a causal pass over ``c + 1`` tokens without a cache (slow at 4k).

Prints the ratios and writes them, with the machine and the load average before and after each
measurement (``os.getloadavg``), to ``benchmarks/results/decode_floor.json``. On a shared machine
the times wander with the load; the goal is stated for a quiet one.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch
from _floor import load, machine, save_results

from course_utils import kv_cache
from course_utils.memory_floor import (
    BlockStack,
    fill_cache,
    read_bandwidth,
    time_cached_steps,
    timings,
)

RESULTS = Path(__file__).resolve().parent / "results" / "decode_floor.json"
D_MODEL, N_HEADS, D_FF, N_LAYERS = 768, 12, 3072, 12
GOAL = 1.5


def measure(model: BlockStack, cache_class: type, c: int, reps: int, full_pass: bool) -> dict:
    g = torch.Generator().manual_seed(c)
    caches = fill_cache(model, c, g, cache_class)
    x = torch.randn(1, 1, D_MODEL, generator=g)  # (B, 1, d_model): the new token
    row: dict[str, object] = {"context": c, "load_before": load()}
    with torch.no_grad():
        wall, cpu = time_cached_steps(model, caches, x, reps)
        if full_pass:
            seq = torch.randn(1, c + 1, D_MODEL, generator=g)  # (B, c + 1, d_model)
            w, t = timings(lambda: model(seq), 2, warmup=0)
            row |= {"full_pass_ms_wall": 1e3 * min(w), "full_pass_ms_cpu": 1e3 * min(t)}
    row |= {
        "step_ms_wall": 1e3 * min(wall),
        "step_ms_wall_median": 1e3 * statistics.median(wall),
        "step_ms_cpu": 1e3 * min(cpu),
        "step_ms_cpu_median": 1e3 * statistics.median(cpu),
        "weight_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
        "cache_bytes": 2 * N_LAYERS * (c + 1) * D_MODEL * 4,  # keys and values, float32
        "load_after": load(),
    }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", choices=["auto", "plain", "preallocated"], default="auto")
    parser.add_argument(
        "--layouts",
        nargs="+",
        choices=["as-built", "decoding"],
        default=["as-built", "decoding"],
        help="weights as nn.Linear makes them, and/or after kv_cache_fast.decoding_layout",
    )
    parser.add_argument("--full-pass", action="store_true")
    parser.add_argument("--save", type=Path, default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    kind = "preallocated" if args.cache == "auto" else args.cache
    cache_class = {"plain": kv_cache.KVCache, "preallocated": kv_cache.PreallocatedKVCache}[kind]
    model = BlockStack(N_LAYERS, D_MODEL, N_HEADS, D_FF).eval()
    print(f"{machine()}\ncache: {kind}; load average {load()}")
    bandwidths = [read_bandwidth()]
    rows = []
    for layout in args.layouts:
        if layout == "decoding":
            from course_utils.kv_cache_fast import decoding_layout

            decoding_layout(model)
        for c in args.contexts:
            rows.append(
                {"layout": layout} | measure(model, cache_class, c, args.reps, args.full_pass)
            )
        bandwidths.append(read_bandwidth())
    bw = {clock: max(b[clock] for b in bandwidths) for clock in ("wall", "cpu")}
    print(
        f"read bandwidth (256 MiB sum), best: {bw['wall'] / 1e9:.1f} GB/s wall clock, "
        f"{bw['cpu'] / 1e9:.1f} GB/s CPU time; the runs: "
        + ", ".join(f"{b['wall'] / 1e9:.1f}/{b['cpu'] / 1e9:.1f}" for b in bandwidths)
    )
    print(
        f"{'layout':>9} {'context':>7} {'MB read':>8} | {'wall: step':>10} {'floor':>6} "
        f"{'ratio':>6} | {'CPU: step':>9} {'floor':>6} {'ratio':>6} | load before -> after"
    )
    for r in rows:
        nbytes = r["weight_bytes"] + r["cache_bytes"]
        for clock in ("wall", "cpu"):
            r[f"floor_ms_{clock}"] = 1e3 * nbytes / bw[clock]
            r[f"step_over_floor_{clock}"] = r[f"step_ms_{clock}"] / r[f"floor_ms_{clock}"]
        r["goal_met_cpu"] = r["step_over_floor_cpu"] <= GOAL
        print(
            f"{r['layout']:>9} {r['context']:>7} {nbytes / 1e6:>8.0f} | "
            f"{r['step_ms_wall']:>10.1f} {r['floor_ms_wall']:>6.1f} "
            f"{r['step_over_floor_wall']:>5.2f}x | {r['step_ms_cpu']:>9.1f} "
            f"{r['floor_ms_cpu']:>6.1f} {r['step_over_floor_cpu']:>5.2f}x | "
            f"{r['load_before'][0]} -> {r['load_after'][0]}"
            + (
                f" (full pass {r['full_pass_ms_cpu']:.0f} ms CPU)"
                if "full_pass_ms_cpu" in r
                else ""
            )
        )
    for layout in args.layouts:
        met = all(r["goal_met_cpu"] for r in rows if r["layout"] == layout)
        print(f"goal, step/floor <= {GOAL} at every context (CPU time), {layout}: {met}")
    result = {
        "what": "one cached decoding step of 12 TransformerBlocks (d_model 768, 12 heads, d_ff "
        "3072, float32, batch 1) against bytes read / read bandwidth measured in the same run; "
        "best of reps, by the wall clock and by the thread's CPU time",
        "cache": kind,
        "n_layers": N_LAYERS,
        "d_model": D_MODEL,
        "reps": args.reps,
        **machine(),
        "read_bandwidth_bytes_per_s": bandwidths,
        "goal_step_over_floor": GOAL,
        "rows": rows,
    }
    save_results(args.save, result)


if __name__ == "__main__":
    main()
