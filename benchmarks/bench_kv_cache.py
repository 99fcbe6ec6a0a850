"""Time per new token with and without the KV cache (chapter 7). Not a test: run it by hand.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_kv_cache.py [--contexts 64 256 1024] [--reps 3]

For each context length ``c``: *without* the cache a new token costs a full causal pass over
``c + 1`` tokens; *with* it, one token's pass through every block, reading ``c`` cached keys and
values. Two models: the chapter's tiny model (2 blocks, d_model 32, random weights) and a stack of
12 blocks with d_model 768 and 12 heads (GPT-2-small sized, random weights). The goal is a speed-up
of at least 20x at 1024 tokens for the 12-block stack. The machine's load average is printed:
on a shared machine the absolute times wander, the ratios much less.

Writes ``benchmarks/results/kv_cache.json`` (chapter 7 prints and plots it; it never times anything
itself, so its printed numbers are the same at every run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch
from torch import nn

from course_utils.causal import TinyCausalLM
from course_utils.kv_cache import cache_nbytes

RESULTS = Path(__file__).resolve().parent / "results" / "kv_cache.json"


class Stack(nn.Module):
    """``n_layers`` causal blocks of width ``d_model`` with the ``forward(x, cache)`` protocol."""

    def __init__(self, d_model: int, n_heads: int, n_layers: int) -> None:
        super().__init__()
        from course_utils.transformer import TransformerBlock

        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_heads, 4 * d_model) for _ in range(n_layers)
        )

    def new_cache(self):
        from course_utils.kv_cache import KVCache

        return [KVCache() for _ in self.blocks]

    def forward(self, x: torch.Tensor, cache=None) -> torch.Tensor:
        for i, block in enumerate(self.blocks):
            x = block(x, causal=True) if cache is None else block(x, cache=cache[i])
        return x


def _best(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench(
    name: str, model: nn.Module, make_input, contexts: list[int], reps: int
) -> list[dict[str, float]]:
    """Time one new token with and without the cache at each context; the rows that were printed."""
    print(f"\n{name}")
    print(
        f"{'context':>8} {'no cache (ms)':>14} {'cache (ms)':>11} {'speed-up':>9} {'cache MB':>9}"
    )
    rows = []
    with torch.no_grad():
        for c in contexts:
            full = make_input(c + 1)  # the context plus the new token
            no_cache = _best(lambda full=full: model(full), reps)
            cache = model.new_cache()
            model(full[:, :c], cache=cache)  # prefill: the context's keys and values
            mb = cache_nbytes(cache) / 2**20
            new = full[:, c : c + 1]

            def step(cache=cache, new=new, c=c) -> None:
                model(new, cache=cache)
                for layer in cache:  # drop the token again so every rep sees c cached tokens
                    layer.keys, layer.values = layer.keys[:, :, :c], layer.values[:, :, :c]

            with_cache = _best(step, max(reps, 5))
            ratio = no_cache / with_cache
            print(
                f"{c:>8} {1e3 * no_cache:>14.2f} {1e3 * with_cache:>11.2f} {ratio:>8.1f}x {mb:>9.2f}"  # noqa: E501
            )
            rows.append(
                {
                    "model": name,
                    "context": c,
                    "ms_no_cache": 1e3 * no_cache,
                    "ms_cache": 1e3 * with_cache,
                    "cache_mib": mb,
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one thread: the numbers compare with chapter 10's
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"load average {os.getloadavg()[0]:.1f} (1 min)")  # fmt: skip
    load_before = [round(x, 2) for x in os.getloadavg()]
    max_len = max(args.contexts) + 1
    tiny = TinyCausalLM(40, max_len).eval()
    rows = bench("tiny model (2 blocks, d_model 32, 4 heads)", tiny,
                 lambda T: torch.randint(0, 40, (1, T)), args.contexts, args.reps)  # fmt: skip
    stack = Stack(768, 12, 12).eval()
    rows += bench("12 blocks, d_model 768, 12 heads", stack,
                  lambda T: torch.randn(1, T, 768), args.contexts, args.reps)  # fmt: skip
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    result = {
        "what": "time for one new token with and without the KV cache, random weights, float32, "
        "batch 1, one thread, best of reps",
        "reps": args.reps,
        "torch": torch.__version__,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "rows": rows,
    }
    RESULTS.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
