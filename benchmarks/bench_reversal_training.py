"""Chapter 8: training time, held-out exact match and alignment of the toy encoder–decoder.

Run: ``PYTHONPATH=src python benchmarks/reversal_training.py``.
"""

from __future__ import annotations

import time

from course_utils.experiments.reversal import train_reversal

for seed in (0, 1, 2):
    wall, cpu = time.perf_counter(), time.process_time()
    (run,) = train_reversal(seeds=(seed,))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    align = ", ".join(f"{a:.1%}" for a in run.alignment)
    print(
        f"seed {seed}: {wall:.1f} s wall, {cpu:.1f} s CPU; exact match {run.exact_match:.1%}; "
        f"final loss {run.losses[-1]:.4f}; alignment per decoder block {align}"
    )
