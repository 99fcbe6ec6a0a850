"""Time per new token with and without the KV cache (chapter 7). Not a test: run it by hand.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_kv_cache.py [--contexts 64 256 1024] [--reps 3]

For each context length ``c``: *without* the cache a new token costs a full causal pass over
``c + 1`` tokens; *with* it, one token's pass through every block, reading ``c`` cached keys and
values. Two models: the chapter's tiny model (2 blocks, d_model 32, random weights) and a stack of
12 blocks with d_model 768 and 12 heads (GPT-2-small sized, random weights). The goal is a speed-up
of at least 20x at 1024 tokens for the 12-block stack. The machine's load average is printed:
on a shared machine the absolute times wander, the ratios much less.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
from torch import nn

from course_utils.causal import TinyCausalLM
from course_utils.kv_cache import cache_nbytes


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


def bench(name: str, model: nn.Module, make_input, contexts: list[int], reps: int) -> None:
    print(f"\n{name}")
    print(
        f"{'context':>8} {'no cache (ms)':>14} {'cache (ms)':>11} {'speed-up':>9} {'cache MB':>9}"
    )
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"load average {os.getloadavg()[0]:.1f} (1 min)")  # fmt: skip
    max_len = max(args.contexts) + 1
    tiny = TinyCausalLM(40, max_len).eval()
    bench("tiny model (2 blocks, d_model 32, 4 heads)", tiny,
          lambda T: torch.randint(0, 40, (1, T)), args.contexts, args.reps)  # fmt: skip
    stack = Stack(768, 12, 12).eval()
    bench("12 blocks, d_model 768, 12 heads", stack,
          lambda T: torch.randn(1, T, 768), args.contexts, args.reps)  # fmt: skip
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
