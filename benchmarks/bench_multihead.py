"""Benchmark: our MultiHeadAttention (fast and readable paths) vs torch.nn.MultiheadAttention.

Not a timed test: run it by hand, ideally on an idle machine, and read the ratios.

    .venv/bin/python benchmarks/bench_multihead.py   # B 8, T 1024, d_model 768, 12 heads
    .venv/bin/python benchmarks/bench_multihead.py --repeats 5 --tokens 256   # a quick look

Self-attention, float32, CPU, inference (eval mode, no autograd). The three variants run in one
process, interleaved (the order rotates every round, so a burst of load from elsewhere hits all of
them), and the medians are compared. Goals from the issue: fast path <= 1.10x and readable path
<= 1.6x PyTorch's nn.MultiheadAttention(need_weights=False).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from course_utils.multihead import MultiHeadAttention


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--d-model", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's)"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    torch.manual_seed(0)
    ref = torch.nn.MultiheadAttention(args.d_model, args.heads, batch_first=True).eval()
    ours = MultiHeadAttention.from_torch(ref).eval()
    x = torch.randn(args.batch, args.tokens, args.d_model)  # (B, T, d_model)

    variants = {
        "torch nn.MultiheadAttention": lambda: ref(x, x, x, need_weights=False)[0],
        "ours, fast (SDPA)": lambda: ours(x, x, x, fast=True),
        "ours, readable (weights)": lambda: ours(x, x, x, fast=False),
    }
    names = list(variants)
    times: dict[str, list[float]] = {n: [] for n in names}
    load_before = os.getloadavg()
    with torch.inference_mode():
        want = variants[names[0]]()
        for name in names[1:]:  # same numbers before timing anything
            err = (variants[name]() - want).abs().max().item()
            print(f"max |{name} - torch| = {err:.2e}")
        for r in range(args.warmup + args.repeats):
            order = names[r % 3 :] + names[: r % 3]  # rotate the order every round
            for name in order:
                start = time.perf_counter()
                variants[name]()
                elapsed = time.perf_counter() - start
                if r >= args.warmup:
                    times[name].append(elapsed)
    load_after = os.getloadavg()

    print(
        f"\nB={args.batch}, T={args.tokens}, d_model={args.d_model}, heads={args.heads}, float32, "
        f"CPU, torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{args.repeats} interleaved repeats after {args.warmup} warm-up rounds"
    )
    print(f"load average (1, 5, 15 min): before {load_before}, after {load_after}")
    base = statistics.median(times[names[0]])
    base_min = min(times[names[0]])
    for name in names:
        med = statistics.median(times[name])
        lo, hi = min(times[name]), max(times[name])
        print(
            f"{name:28s} median {med * 1e3:7.1f} ms (min {lo * 1e3:.1f}, max {hi * 1e3:.1f})"
            f"  ratio of medians {med / base:.2f}x, of minimums {lo / base_min:.2f}x"
        )


if __name__ == "__main__":
    main()
