"""The erasure test asked of all-MiniLM-L6-v2: delete the tokens a measure ranks first, re-run.

    PYTHONPATH=src .venv/bin/python benchmarks/minilm_ablation.py

Chapter 13 removes the top-``k`` words of its own classifier by attention, by gradient × input
and at random; this script does the same to the real model of chapter 4 on the chapter's 32
English hand-written sentences (:func:`course_utils.topic_focus.measures.minilm_ablation`):
for ``k`` = 1, 2, 3 it deletes the ``k`` WordPiece tokens ranked first by the last layer's raw
attention (``[CLS]`` row, mean row), attention rollout, attention flow (``[CLS]`` row),
saliency, or ``k`` random tokens (10 seeded draws), and records the fall of the zero-shot margin
(cosine similarity with "This sentence is about <topic>." for the true topic minus the mean of
the others) and whether the zero-shot topic changed. Every forward pass is deterministic
(float32, one thread); the numbers do not depend on the machine beyond float rounding, which
the chapter's printed rounding hides. The intervals are 95 % bootstrap intervals over
sentences (:func:`course_utils.topic_focus.bootstrap_ci`, seeded).

Writes ``benchmarks/results/minilm_ablation.json``, which chapter 13 reads and plots (running it
there would add about a minute to a chapter that must execute in 30 s). The recorded run's time,
machine and load average are in the file.
"""

from __future__ import annotations

import datetime
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _floor import load, machine, save_results

from course_utils.topic_focus import bootstrap_ci, real_sentences
from course_utils.topic_focus.measures import ABLATION_MEASURES, minilm_ablation

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "minilm_ablation.json"


def main() -> None:
    english = [s for s in real_sentences() if s.lang == "en"]
    load_before = load()
    wall, cpu = time.perf_counter(), time.process_time()
    studies = minilm_ablation(english, (1, 2, 3), n_random=10, seed=0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    rows = []
    for study in studies:
        for name in (*ABLATION_MEASURES, "random"):
            mean, low, high = bootstrap_ci(study.drop[name])
            rows.append(
                {
                    "k": study.k,
                    "removed_by": name,
                    "n_sentences": len(study.drop[name]),
                    "drop_mean": mean,
                    "drop_low": low,
                    "drop_high": high,
                    "flip_rate": float(np.mean(study.flip[name])),
                }
            )
            print(
                f"k={study.k} {name:12s} drop {mean:+.4f} [{low:+.4f}, {high:+.4f}]  "
                f"flips {rows[-1]['flip_rate']:.2f}"
            )
    save_results(
        RESULTS,
        {
            "what": "drop of all-MiniLM-L6-v2's zero-shot margin after deleting the top-k tokens",
            "sentences": "chapter 13's hand-written English sentences",
            "measures": [*ABLATION_MEASURES, "random"],
            "rows": rows,
            "seconds_wall": round(wall, 1),
            "seconds_cpu": round(cpu, 1),
            "load_average_before": load_before,
            "load_average_after": load(),
            "machine": machine(),
            "date": datetime.date.today().isoformat(),
        },
    )


if __name__ == "__main__":
    main()
