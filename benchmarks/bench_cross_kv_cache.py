"""Greedy decoding of chapter 8's encoder–decoder with and without a cached source, timed.

(a) naive: every step runs the decoder on the whole prefix, so each block projects the memory
through the cross-attention's ``W_K`` and ``W_V`` again and recomputes the self-attention of every
earlier token; (b) cached: each block projects the memory once per source
(:meth:`course_utils.decoder.DecoderBlock.cross_kv`) and a step runs the new token only, its
self-attention reading a KV cache (:meth:`course_utils.experiments.reversal.ReversalModel
.greedy_decode`); and, to tell the two savings apart, (c) the self-attention's KV cache alone,
the memory projected again at every step (``self_cache_only_ms_per_token``). Two sizes of the
same model: chapter 8's (``ReversalConfig``: d_model 32, 2 heads, d_ff 64, 2 + 2 blocks) and
the base Transformer's (d_model 512, 8 heads, d_ff 2048, 6 + 6 blocks; Vaswani et al. 2017,
Table 3), with room for long sources (``max_len`` = the longest
source), untrained and seeded: the time of a step does not depend on what the weights learned.
One source (B = 1), float32, one thread, ``N_STEPS`` generated tokens; time per generated token
= the whole decoding (encoder excluded) divided by ``N_STEPS``, best of ``--reps`` (on a shared
machine other work only ever adds time), as CPU time of the thread (``*_ms_per_token``, what the
chapter plots) and as wall time (``*_wall_ms_per_token``). The multiplies of the
cross-attention's K/V projections are counted exactly by
:func:`course_utils.transformer_cost.cross_kv_multiplies`.

Writes ``benchmarks/results/cross_kv_cache.json`` with the machine and its load average; chapter 8
plots it (:func:`course_utils.plotting.plot_decoding_times`) and never times anything itself.

Run: ``PYTHONPATH=src python benchmarks/bench_cross_kv_cache.py`` (about five minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict
from pathlib import Path

import torch
from _floor import load, machine, save_results

from course_utils.experiments.reversal import LETTERS, ReversalConfig, ReversalModel, encode
from course_utils.transformer import TransformerSize
from course_utils.transformer_cost import cross_kv_multiplies

SOURCE_LENGTHS = (16, 64, 256)
SIZES = {
    "chapter 8": TransformerSize.of(ReversalConfig()),
    "base Transformer": TransformerSize(d_model=512, n_heads=8, d_ff=2048, n_layers=6),
}
N_STEPS = 32
RESULTS = Path(__file__).resolve().parent / "results" / "cross_kv_cache.json"


def time_decoding(
    model: ReversalModel, t_src: int, cached: bool, reps: int, *, cross_once: bool = True
) -> tuple[float, float]:
    """Best wall time and best CPU time (s) per generated token of greedy decoding one seeded
    source of ``t_src`` letters. The CPU time (``time.thread_time``: torch runs on this one thread)
    leaves out the time other processes held the core, which on a shared machine is most of the
    spread of the wall time."""
    g = torch.Generator().manual_seed(t_src)
    word = "".join(LETTERS[int(i)] for i in torch.randint(len(LETTERS), (t_src,), generator=g))
    src, lengths = encode([word])
    wall = cpu = float("inf")
    with torch.no_grad():
        memory, keep = model.encode(src, lengths)
        for _ in range(reps + 1):  # the first run warms up
            w0, c0 = time.perf_counter(), time.thread_time()
            model._greedy(memory, keep, N_STEPS, cached=cached, cross_once=cross_once)
            cpu = min(cpu, time.thread_time() - c0)
            wall = min(wall, time.perf_counter() - w0)
    return wall / N_STEPS, cpu / N_STEPS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before = load()
    rows = []
    for name, size in SIZES.items():
        torch.manual_seed(0)
        model = ReversalModel(max_len=max(SOURCE_LENGTHS), **asdict(size)).eval()
        for t_src in SOURCE_LENGTHS:
            naive, naive_cpu = time_decoding(model, t_src, cached=False, reps=args.reps)
            cached, cached_cpu = time_decoding(model, t_src, cached=True, reps=args.reps)
            _, self_only_cpu = time_decoding(
                model, t_src, cached=True, reps=args.reps, cross_once=False
            )
            counts = {
                c: cross_kv_multiplies(size.d_model, t_src, N_STEPS, size.n_layers, cached=c)
                for c in (False, True)
            }
            rows.append(
                {
                    "size": name,
                    "t_src": t_src,
                    "naive_ms_per_token": round(naive_cpu * 1e3, 4),
                    "cached_ms_per_token": round(cached_cpu * 1e3, 4),
                    "self_cache_only_ms_per_token": round(self_only_cpu * 1e3, 4),
                    "speed_up": round(naive_cpu / cached_cpu, 2),
                    "naive_wall_ms_per_token": round(naive * 1e3, 4),
                    "cached_wall_ms_per_token": round(cached * 1e3, 4),
                    "cross_kv_multiplies_naive": counts[False],
                    "cross_kv_multiplies_cached": counts[True],
                    "load": load(),
                }
            )
            print(
                f"{name:>16}, t_src {t_src:>4}: CPU naive {naive_cpu * 1e3:8.3f} ms/token, "
                f"cached {cached_cpu * 1e3:8.3f} ms/token (self-attention cache only "
                f"{self_only_cpu * 1e3:8.3f}), speed-up "
                f"{naive_cpu / cached_cpu:5.2f}x (wall {naive * 1e3:.3f} / {cached * 1e3:.3f})"
            )
    result = {
        "what": "greedy decoding of chapter 8's encoder-decoder (untrained, seeded) at two "
        "sizes, one source, float32, one thread: time per generated token, naive (whole "
        "prefix every step, cross-attention K/V projected again) vs cached (cross K/V once "
        "per source + self-attention KV cache), best of reps; *_ms_per_token is the thread's "
        "CPU time, *_wall_ms_per_token the wall time; self_cache_only: the self-attention's KV "
        "cache but the cross-attention's K/V projected again at every step",
        "sizes": {name: asdict(size) for name, size in SIZES.items()},
        "n_steps": N_STEPS,
        "reps": args.reps,
        **machine(),
        "load_before": load_before,
        "load_after": load(),
        "rows": rows,
    }
    save_results(RESULTS, result)


if __name__ == "__main__":
    main()
