"""What the benchmarks share: the machine they ran on, its load average, and saving a result.

The read bandwidth and the timing helpers that the decoding benchmarks compare a step with are in
the package (:mod:`course_utils.memory_floor`), because chapter 7 measures with them too.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import torch


def load() -> list[float]:
    """The 1, 5 and 15 minute load averages (``os.getloadavg``), rounded."""
    return [round(v, 2) for v in os.getloadavg()]


def machine() -> dict[str, object]:
    """What the results were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return {
        "cpu": cpu,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
    }


def save_results(path: Path, result: dict[str, object]) -> None:
    """Write a benchmark's ``result`` as indented JSON to ``path`` (its folder made if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}")
