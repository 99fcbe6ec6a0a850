"""Weight absorption in MLA, measured on this CPU: time and transient memory per new token.

Counts (package functions, exact): :func:`course_utils.mla.decode_cost` per token per layer for
the naive path (rebuild keys/values from the latents), the absorbed path and a full K/V cache.
Measured: one MLA layer of DeepSeek-V2's attention shape scaled down (so that it runs on a laptop
CPU) decoding ONE token against a latent cache of growing length, naive vs absorbed, median of a
few runs. A CPU cannot show the GPU memory-bandwidth effect the paper's throughput numbers come
from; it does show the work the naive path wastes rebuilding keys and values.

Run: ``PYTHONPATH=src python benchmarks/bench_mla.py`` (about a minute on 2 cores).
"""

from __future__ import annotations

import statistics
import time

import torch

from course_utils.kv_cache import DEEPSEEK_V2
from course_utils.mla import MultiHeadLatentAttention, decode_cost

H, DN, DR, DV, DC, D = 16, 64, 32, 64, 256, 1024  # DeepSeek-V2's ratios at 1/8 of the heads
CONTEXTS = (256, 1024, 4096)


def time_one_token(mla: MultiHeadLatentAttention, context: int, absorb: bool) -> float:
    torch.manual_seed(0)
    cache = mla.new_cache()
    with torch.no_grad():
        mla(torch.randn(1, context, D), cache=cache)
        x = torch.randn(1, 1, D)
        times = []
        for _ in range(7):
            c = mla.new_cache()
            c.c_kv, c.k_rope = cache.c_kv, cache.k_rope
            t0 = time.perf_counter()
            mla(x, cache=c, absorb=absorb)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    torch.set_num_threads(1)
    print("Counts per token per layer, DeepSeek-V2's shape (decode_cost):")
    c = DEEPSEEK_V2
    shape = (c["n_heads"], c["d_latent_kv"], c["d_head"], c["d_head_rope"], c["d_head"])
    print(
        f"{'context':>8} {'naive MACs':>14} {'absorbed MACs':>14} {'ratio':>6} "
        f"{'naive work':>12} {'absorbed work':>13}"
    )
    for S in (1024, 4096, 32768, 131072):
        n = decode_cost(S, *shape, mode="naive")
        a = decode_cost(S, *shape, mode="absorbed")
        print(
            f"{S:>8} {n['macs']:>14.3e} {a['macs']:>14.3e} {n['macs'] / a['macs']:>6.0f} "
            f"{n['work_values']:>12.3e} {a['work_values']:>13.3e}"
        )
    print(f"\nMeasured on this CPU, one layer (h={H}, d_h={DN}, d_h^R={DR}, d_c={DC}), 1 thread:")
    mla = MultiHeadLatentAttention(
        D, H, d_latent_kv=DC, d_latent_q=384, d_head_nope=DN, d_head_rope=DR, d_head_v=DV
    ).eval()
    for S in CONTEXTS:
        tn = time_one_token(mla, S, absorb=False)
        ta = time_one_token(mla, S, absorb=True)
        print(
            f"context {S:>5}: naive {tn * 1e3:7.2f} ms, absorbed {ta * 1e3:7.2f} ms, "
            f"speed-up {tn / ta:5.1f}x"
        )


if __name__ == "__main__":
    main()
