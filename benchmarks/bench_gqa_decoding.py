"""Time per new token against the context for MHA, GQA and MQA of equal d_model (chapter 10).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_gqa_decoding.py [--contexts 512 2048]

Each configuration is a stack of ``--layers`` causal self-attention layers
(:class:`course_utils.causal.CausalSelfAttention`, d_model 1024, 16 query heads of 64) with 16
(MHA), 4 (GQA) or 1 (MQA) key/value heads, float32, batch 1, one thread. For each context ``S``
every layer's :class:`~course_utils.kv_cache.KVCache` is filled with ``S`` random keys and values
(prefill is not what we time), then one decoding step is timed: project the new token, append
its key and value to the cache (our cache concatenates, so this copies the cache), and attend to
all ``S + 1`` keys (``scaled_dot_product_attention`` with ``enable_gqa``). Best of ``--reps``;
the cache is reset to ``S`` tokens between repetitions.

Writes ``benchmarks/results/gqa_decoding.json`` (the chapter plots it; it never times anything
itself). On a shared machine absolute times wander; read the ratios between configurations.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from _floor import load, machine, save_results

from course_utils._determinism import one_thread
from course_utils.causal import CausalSelfAttention
from course_utils.kv_cache import KVCache, cache_nbytes

RESULTS = Path(__file__).resolve().parent / "results" / "gqa_decoding.json"
CONFIGS = {"MHA": 16, "GQA": 4, "MQA": 1}  # name -> n_kv_heads, all with 16 query heads


def step_time(layers: list[CausalSelfAttention], S: int, reps: int) -> tuple[float, float, int]:
    """Best times (s) of one decoding step at context ``S`` and of its attention alone (the new
    query against the ``S`` cached keys and values, no projection, no append), and the cache
    bytes at ``S``."""
    d_model = layers[0].d_model
    g = torch.Generator().manual_seed(S)
    caches = []
    for layer in layers:
        shape = (1, layer.n_kv_heads, S, layer.mha.d_k)  # (B, n_kv_heads, S, d_k)
        cache = KVCache()
        cache.append(torch.randn(shape, generator=g), torch.randn(shape, generator=g))
        caches.append(cache)
    full = [(c.keys, c.values) for c in caches]
    nbytes = cache_nbytes(caches)
    x = torch.randn(1, 1, d_model, generator=g)  # (B, 1, d_model): the new token
    best = float("inf")
    with torch.no_grad():
        for _ in range(reps + 1):  # the first run warms up
            for c, (k, v) in zip(caches, full, strict=True):
                c.keys, c.values = k, v  # back to S tokens (views, nothing copied)
            t0 = time.perf_counter()
            h = x
            for layer, c in zip(layers, caches, strict=True):
                h = layer(h, cache=c)  # (1, 1, d_model)
            best = min(best, time.perf_counter() - t0)
        q = torch.randn(1, layers[0].n_heads, 1, layers[0].mha.d_k, generator=g)  # (1, h, 1, d_k)
        attend = float("inf")
        for _ in range(reps + 1):
            t0 = time.perf_counter()
            for layer, (k, v) in zip(layers, full, strict=True):
                layer.mha.attend(q, k, v)  # (1, 1, d_model): SDPA with enable_gqa
            attend = min(attend, time.perf_counter() - t0)
    return best, attend, nbytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", type=int, nargs="+", default=[512, 2048, 8192, 16384])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    torch.manual_seed(0)
    rows = []
    with one_thread():
        for name, n_kv in CONFIGS.items():
            layers = [
                CausalSelfAttention(1024, 16, n_kv_heads=n_kv).eval() for _ in range(args.layers)
            ]
            for S in args.contexts:
                t, t_attend, nbytes = step_time(layers, S, args.reps)
                rows.append(
                    {
                        "config": name,
                        "n_kv_heads": n_kv,
                        "context": S,
                        "ms_per_token": t * 1e3,
                        "attend_ms": t_attend * 1e3,
                        "cache_mib": nbytes / 2**20,
                    }
                )
                print(
                    f"{name} (n_kv_heads={n_kv:2d}) S={S:6d}: {t * 1e3:7.3f} ms/token, "
                    f"attention alone {t_attend * 1e3:7.3f} ms, cache {nbytes / 2**20:8.1f} MiB"
                )
    result = {
        "what": "one decoding step through a stack of causal self-attention layers, d_model 1024, "
        "16 query heads of 64, float32, batch 1, one thread, best of reps",
        "layers": args.layers,
        "reps": args.reps,
        **machine(),
        "load_average": load(),
        "rows": rows,
    }
    save_results(RESULTS, result)


if __name__ == "__main__":
    main()
