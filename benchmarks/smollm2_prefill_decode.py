"""Prefill against decode on SmolLM2-135M with the course's code. Not a test: run by hand.

    PYTHONPATH=src .venv/bin/python benchmarks/smollm2_prefill_decode.py [--reps 5]
        [--threads 1] [--save PATH]

Generating text has two phases (chapter 7, section 4):

* **prefill**: the prompt's ``T`` tokens go through the model in one pass, filling the KV cache.
  Every weight is read once for all ``T`` tokens, so the pass does about ``2 · params · T``
  floating-point operations per ``weight bytes`` read: it is bound by arithmetic.
* **decode**: each new token is one pass over one token. Every weight is read again for
  ``2 · params`` operations: it is bound by memory, and no pass can be faster than
  ``weight bytes / read bandwidth`` (the floor; the tied embedding counted once, as the output
  layer).

For prompts of 16, 64 and 256 tokens (the start of chapter 7's own prose, by SmolLM2's tokenizer)
this times, with our ``load_smollm2()`` and its KV cache (one torch thread, float32, best of
``--reps`` by the thread's CPU time; wall clock saved too):

* the prompt's pass (a fresh cache each time): milliseconds, and tokens per second;
* 16 decoding steps after it (greedy, one token each): milliseconds per token;

against the floor (``tensor.sum()`` over 256 MiB, measured in the same run) and the machine's
matrix-product speed (``torch.mm`` of two 1024 x 1024 float32 matrices, in GFLOP/s). Writes
``benchmarks/results/smollm2_prefill_decode.json`` with the machine and the load average.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from _floor import load, machine, save_results

from course_utils.memory_floor import read_bandwidth, timings

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "smollm2_prefill_decode.json"
PROMPT_TOKENS = (16, 64, 256)
DECODE_STEPS = 16


def chapter_text() -> str:
    """Chapter 7's Markdown, in order: a text the course ships."""
    nb = json.loads((ROOT / "chapters" / "07_causal_attention.ipynb").read_text(encoding="utf-8"))
    return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def matmul_flops_per_s(reps: int) -> dict[str, float]:
    """``torch.mm`` of two 1024 x 1024 float32 matrices: FLOP/s, best by wall and CPU time."""
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)  # (1024, 1024) each
    wall, cpu = timings(lambda: torch.mm(a, b), reps * 4)
    flops = 2 * 1024**3
    return {"wall": flops / min(wall), "cpu": flops / max(min(cpu), 1e-9)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--save", type=Path, default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from course_utils.causal import next_token
    from course_utils.pretrained import load_smollm2

    model = load_smollm2()
    text_ids = model.tokenizer.encode(chapter_text())
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    params = sum(p.numel() for p in model.parameters())
    before = load()
    bandwidths = [read_bandwidth()]
    mm = [matmul_flops_per_s(args.reps)]
    rows = []
    with torch.no_grad():
        for T in PROMPT_TOKENS:
            ids = torch.tensor([text_ids[:T]])  # (1, T)

            def prefill(ids: torch.Tensor = ids, n: int = T + DECODE_STEPS) -> None:
                model(ids, cache=model.new_cache(n))  # (1, T, vocab)

            p_wall, p_cpu = timings(prefill, args.reps)
            cache = model.new_cache(T + DECODE_STEPS)
            logits = model(ids, cache=cache)  # (1, T, vocab)
            token = next_token(logits[:, -1], 0.0, None, None, None)  # (1, 1), greedy
            d_wall, d_cpu = [], []
            for _ in range(DECODE_STEPS):  # each step: one token through every layer
                out: dict[str, torch.Tensor] = {}

                def step(token: torch.Tensor = token, out: dict = out, cache: list = cache) -> None:
                    out["logits"] = model(token, cache=cache)  # (1, 1, vocab)

                w, c = timings(step, 1, warmup=0)  # the step appends its token to the cache
                d_wall += w
                d_cpu += c
                token = next_token(out["logits"][:, -1], 0.0, None, None, None)  # (1, 1)
            rows.append(
                {
                    "prompt_tokens": T,
                    "prefill_ms_cpu": 1e3 * min(p_cpu),
                    "prefill_ms_wall": 1e3 * min(p_wall),
                    "decode_ms_per_token_cpu": 1e3 * min(d_cpu),
                    "decode_ms_per_token_wall": 1e3 * min(d_wall),
                }
            )
            print(rows[-1])
    bandwidths.append(read_bandwidth())
    mm.append(matmul_flops_per_s(args.reps))
    bw = max(b["cpu"] for b in bandwidths)
    flops = max(m["cpu"] for m in mm)
    floor_ms = 1e3 * weight_bytes / bw
    compute_ms_per_token = 1e3 * 2 * params / flops
    for r in rows:
        T = r["prompt_tokens"]
        r["prefill_tokens_per_s_cpu"] = 1e3 * T / r["prefill_ms_cpu"]
        r["decode_tokens_per_s_cpu"] = 1e3 / r["decode_ms_per_token_cpu"]
        r["prefill_over_decode_per_token"] = (
            r["prefill_tokens_per_s_cpu"] / r["decode_tokens_per_s_cpu"]
        )
        r["decode_over_floor"] = r["decode_ms_per_token_cpu"] / floor_ms
    result = {
        "what": "SmolLM2-135M-Instruct (course_utils load_smollm2, float32, batch 1, KV cache): "
        "the prompt's pass (prefill) against one-token decoding steps after it, best of reps by "
        "the thread's CPU time; floor = weight bytes / read bandwidth (256 MiB tensor.sum) and "
        "compute = 2 x parameters / torch.mm GFLOP/s, both measured in the same run",
        **machine(),
        "load_average_before": before,
        "load_average_after": load(),
        "reps": args.reps,
        "decode_steps": DECODE_STEPS,
        "text": "chapters/07_causal_attention.ipynb (markdown cells)",
        "parameters": params,
        "weight_bytes": weight_bytes,
        "read_bandwidth_bytes_per_s": bandwidths,
        "matmul_flops_per_s": mm,
        "floor_ms_per_token": floor_ms,
        "compute_ms_per_token": compute_ms_per_token,
        "rows": rows,
    }
    save_results(args.save, result)


if __name__ == "__main__":
    main()
