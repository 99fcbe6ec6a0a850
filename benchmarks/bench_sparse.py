"""Benchmark: sliding_window_attention (O(T·w)) against dense attention and torch SDPA with a mask.

Not a timed test: run it by hand, ideally on an idle machine, and read the ratios.

    .venv/bin/python benchmarks/bench_sparse.py            # B 1, 4 heads, d_k 64, w 256, causal
    .venv/bin/python benchmarks/bench_sparse.py --long 4096 --short 1024   # a quick look

float32, CPU, inference (no autograd). Three implementations of the same causal sliding window:

- ``ours``: :func:`course_utils.sparse.sliding_window_attention` (band tiles only);
- ``dense``: the textbook computation, which materialises the ``(B, h, T, T)`` scores, masks them
  with the band, takes the softmax and multiplies by V;
- ``sdpa+mask``: ``torch.nn.functional.scaled_dot_product_attention`` given the boolean band mask.

Time: one process; the variants are interleaved (the order rotates every round) and medians are
compared, so a burst of load from elsewhere hits all of them. ``ours`` is also timed at the short
length, its calls alternating one by one with those at the long length, for the growth ratio
t(long)/t(short) (linear growth gives long/short = 4).
Memory: peak RSS growth, each variant in a fresh process (``--child``): the resident set after
the inputs (and the mask, an input of the masked variants) are in memory, subtracted from the peak
resident set (``VmHWM``) after one call.

Goals (issue 15), at T = 16,384: ours >= 40x faster and >= 30x less peak memory than dense,
>= 15x faster than sdpa+mask, and t(16k)/t(4k) <= 5.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from course_utils.sparse import sliding_window_attention, sliding_window_mask

VARIANTS = ("ours", "dense", "sdpa+mask")


def inputs(t: int, args: argparse.Namespace) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    shape = (args.batch, args.heads, t, args.d_k)
    return tuple(torch.randn(shape, generator=g) for _ in range(3))  # (B, h, T, d_k) each


def band(t: int, window: int) -> torch.Tensor:
    return torch.from_numpy(sliding_window_mask(t, window=window))  # (T, T) bool


def dense(q, k, v, mask):
    scores = (q / q.shape[-1] ** 0.5) @ k.transpose(-2, -1)  # (B, h, T, T): all T² scores
    scores.masked_fill_(~mask, float("-inf"))  # (B, h, T, T), in place
    weights = torch.softmax(scores, dim=-1)  # (B, h, T, T)
    del scores
    return weights @ v  # (B, h, T, d_k)


def runner(name: str, t: int, args: argparse.Namespace):
    q, k, v = inputs(t, args)
    if name == "ours":
        return lambda: sliding_window_attention(q, k, v, window=args.window)
    mask = band(t, args.window)
    if name == "dense":
        return lambda: dense(q, k, v, mask)
    return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def peak_rss_bytes() -> int:
    """The process's peak resident set (VmHWM). Not ``ru_maxrss``: on Linux a child started by a
    process that once used 10 GB inherits that maximum through fork and exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def child(name: str, t: int, args: argparse.Namespace) -> None:
    """In a fresh process: peak RSS growth of one call of ``name`` at length ``t``."""
    with torch.inference_mode():
        runner(name, 256, args)()  # load the kernels on a tiny problem first
        fn = runner(name, t, args)
        before = peak_rss_bytes()  # inputs (and the mask) included
        fn()
        peak = peak_rss_bytes()
    print(json.dumps({"growth": peak - before}))


def memory(name: str, t: int, args: argparse.Namespace) -> int:
    cmd = [sys.executable, __file__, "--child", name, "--child-t", str(t)]
    cmd += [f"--{k.replace('_', '-')}={v}" for k, v in _shape_args(args).items()]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["growth"]


def _shape_args(args: argparse.Namespace) -> dict[str, int]:
    return {k: getattr(args, k) for k in ("batch", "heads", "d_k", "window", "threads")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d-k", type=int, default=64)
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--long", type=int, default=16384)
    parser.add_argument("--short", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds of every variant")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--inner", type=int, default=15, help="calls of ours per round")
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--child-t", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.child:
        child(args.child, args.child_t, args)
        return

    load_before = os.getloadavg()
    start_all = time.perf_counter()
    with torch.inference_mode():
        runs = {name: runner(name, args.long, args) for name in VARIANTS}
        runs["ours short"] = runner("ours", args.short, args)
        # Same numbers before timing anything (ours against SDPA with the mask, and dense).
        q, k, v = inputs(args.long, args)
        ref = runs["sdpa+mask"]()
        errs = {n: (runs[n]() - ref).abs().max().item() for n in ("ours", "dense")}
        times: dict[str, list[float]] = {n: [] for n in runs}
        # "ours" stands for the pair (ours at the long length, ours at the short length): their
        # calls alternate one by one, so the growth ratio compares calls made side by side.
        names = list(VARIANTS)
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                group = ("ours", "ours short") if name == "ours" else (name,)
                for _ in range(args.inner if name == "ours" else 1):
                    for member in group:
                        t0 = time.perf_counter()
                        runs[member]()
                        times[member].append(time.perf_counter() - t0)
        del runs, q, k, v, ref
    mem = {name: memory(name, args.long, args) for name in VARIANTS}
    load_after = os.getloadavg()

    med = {n: statistics.median(ts) for n, ts in times.items()}
    print(
        f"B={args.batch}, heads={args.heads}, d_k={args.d_k}, window={args.window}, causal, "
        f"float32, CPU, torch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"{args.rounds} interleaved rounds (ours: {args.inner} calls per round)"
    )
    print(f"load average (1, 5, 15 min): before {load_before}, after {load_after}")
    print(
        f"max |out - sdpa+mask| at T={args.long}: "
        + ", ".join(f"{n} {e:.1e}" for n, e in errs.items())
    )
    print()
    print(f"| variant (T = {args.long:,}) | median time | min | peak RSS growth |")
    print("|---|---|---|---|")
    for name in VARIANTS:
        ts = times[name]
        row = f"| {name} | {med[name] * 1e3:,.1f} ms | {min(ts) * 1e3:,.1f} ms |"
        print(f"{row} {mem[name] / 2**20:,.1f} MiB |")
    short = times["ours short"]
    row = f"| ours at T = {args.short:,} | {med['ours short'] * 1e3:,.1f} ms |"
    print(f"{row} {min(short) * 1e3:,.1f} ms | |")
    print()
    checks = [
        ("dense / ours, time", med["dense"] / med["ours"], ">=", 40),
        ("dense / ours, peak memory", mem["dense"] / max(mem["ours"], 1), ">=", 30),
        ("sdpa+mask / ours, time", med["sdpa+mask"] / med["ours"], ">=", 15),
        (f"ours t({args.long}) / t({args.short})", med["ours"] / med["ours short"], "<=", 5),
    ]
    print("| ratio | measured | goal |")
    print("|---|---|---|")
    for label, value, op, goal in checks:
        ok = value >= goal if op == ">=" else value <= goal
        print(f"| {label} | {value:.1f}x | {op} {goal}x {'(met)' if ok else '(NOT met)'} |")
    print(f"\nwall time of the benchmark: {time.perf_counter() - start_all:.0f} s")


if __name__ == "__main__":
    main()
