"""SmolLM2 past its trained context: the loss per position with plain and scaled RoPE, measured.

    PYTHONPATH=src .venv/bin/python benchmarks/smollm2_long_context.py [--tokens 10240 --threads 2]

SmolLM2-135M-Instruct was trained on sequences of up to 8192 tokens (the GGUF's
``context_length``; RoPE base 100000). What happens on a longer text? Four runs of the model
(:func:`course_utils.pretrained.load_smollm2`, float32, ``torch.no_grad()``) over the same text,
each predicting every next token, differ only in RoPE's frequencies
(:func:`course_utils.pretrained.smollm2.scaled_rope`, the ``rope_scaling`` formats of model
configs, :func:`course_utils.positions.rope_inverse_frequencies`), with factor 2 (8192 -> 16384):

(1) **plain RoPE**, as shipped;
(2) **linear** position interpolation (Chen et al. 2023): every frequency divided by 2;
(3) **dynamic NTK** (bloc97 2023; emozilla 2023): a larger base, chosen for the text's length;
(4) **YaRN** (Peng et al. 2023): fast pairs kept, slow ones interpolated, attention factor 1.069.

None of the three was trained for: they are what a config change alone gives, without the
fine-tuning the papers add. The text ships with Python: the help topics of ``pydoc_data.topics``
(the text ``help()`` shows), in sorted order, joined by blank lines, first ``--tokens`` tokens
(no BOS token). The attention runs ``--chunk`` queries at a time through the KV cache
(:func:`~course_utils.pretrained.smollm2.nll_in_chunks`): a whole pass would hold
9 × N² float32 scores per layer. The mean negative log-likelihood (NLL) is saved per block of
``--block`` tokens, and before and after position 8192.

Writes ``benchmarks/results/smollm2_long_context.json`` (after each run, so a stopped run keeps
what it measured), with the machine and its load average. The recorded run took the seconds
saved per run (CPU seconds beside them) on 2 shared cores.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import torch

from course_utils.pretrained import load_smollm2
from course_utils.pretrained.smollm2 import nll_in_chunks, scaled_rope

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "smollm2_long_context.json"
TRAINED = 8192  # SmolLM2's context_length
RUNS: list[tuple[str, dict | None]] = [
    ("plain RoPE", None),
    ("linear interpolation", {"rope_type": "linear", "factor": 2.0}),
    ("dynamic NTK", {"rope_type": "dynamic", "factor": 2.0}),
    ("YaRN", {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": TRAINED}),
]


def pydoc_text() -> str:
    """Python's help topics (``pydoc_data.topics``), sorted by name, joined by blank lines."""
    import pydoc_data.topics

    topics = pydoc_data.topics.topics
    return "\n\n".join(topics[name] for name in sorted(topics))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=10240)
    parser.add_argument("--chunk", type=int, default=512, help="queries per attention pass")
    parser.add_argument("--block", type=int, default=512, help="tokens per point of the curve")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.tokens <= TRAINED:
        raise SystemExit(f"--tokens must exceed {TRAINED} (the trained context); got {args.tokens}")
    torch.set_num_threads(args.threads)
    model = load_smollm2()
    all_ids = model.tokenizer.encode(pydoc_text())
    if len(all_ids) < args.tokens:
        raise SystemExit(f"the text has {len(all_ids)} tokens, fewer than --tokens {args.tokens}")
    ids = torch.tensor(all_ids[: args.tokens])  # (N,)
    result = {
        "what": "SmolLM2-135M-Instruct (trained to 8192 tokens) on a longer text: mean negative "
        "log-likelihood of the next token per block of positions, with plain RoPE and with "
        "RoPE scaled by factor 2 (linear, dynamic NTK, YaRN), no fine-tuning",
        "text": f"pydoc_data.topics of Python {platform.python_version()} (sorted, joined by "
        "blank lines), first tokens",
        "tokens": args.tokens,
        "trained_context": TRAINED,
        "block": args.block,
        "chunk": args.chunk,
        "torch": torch.__version__,
        "torch_threads": args.threads,
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "rows": [],
    }
    for name, scaling in RUNS:
        load_before = [round(x, 2) for x in os.getloadavg()]
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.no_grad(), scaled_rope(model, scaling, seq_len=args.tokens):
            nll = nll_in_chunks(model, ids, chunk=args.chunk)  # (N - 1,)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        inside, beyond = nll[: TRAINED - 1], nll[TRAINED - 1 :]  # predicted positions 1..8191
        row = {
            "config": name,
            "rope_scaling": scaling,
            "mean_nll_within_trained": float(inside.mean()),
            "mean_nll_beyond_trained": float(beyond.mean()),
            "predictions_beyond_trained": len(beyond),
            "perplexity_beyond_trained": math.exp(float(beyond.mean())),
            f"mean_nll_per_{args.block}_tokens": [float(b.mean()) for b in nll.split(args.block)],
            "seconds": round(seconds, 1),
            "cpu_seconds": round(cpu, 1),
            "load_average_before": load_before,
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        }
        result["rows"].append(row)
        result["date"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        print(
            f"{name:>22}: NLL {row['mean_nll_within_trained']:.3f} within 8192, "
            f"{row['mean_nll_beyond_trained']:.3f} beyond ({row['seconds']} s, "
            f"{row['cpu_seconds']} s CPU)",
            flush=True,
        )
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print("wrote", RESULTS)


if __name__ == "__main__":
    main()
