"""What the decoding benchmarks share: the machine's read bandwidth, timing, and the load average.

A decoding step of a small batch reads every weight once, and every cached key and value once;
it does few FLOPs per byte, so its floor is ``bytes read / read bandwidth``. The bandwidth is
measured in the same run as the step it is compared with: ``tensor.sum()`` over a 256 MiB float32
tensor (far larger than the caches), best of ``reps``, with the same torch thread count. Both are
timed by the wall clock and by the thread's CPU time (see :func:`timings`).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

BANDWIDTH_BYTES = 256 * 2**20  # 256 MiB: far beyond the 32 MiB L3 of the development machine


def timings(
    fn: Callable[[], object], reps: int, warmup: int = 1
) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU seconds (this thread's, ``time.thread_time``) of ``reps`` calls of
    ``fn``, after ``warmup`` untimed calls.

    On a shared machine the wall clock also counts the time the thread waits for a core; its CPU
    time does not (with one torch thread every operation runs on the calling thread), so it is
    what the call would take on a quiet machine, still sharing the memory bus with the others.
    """
    for _ in range(warmup):
        fn()
    wall, cpu = [], []
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.thread_time()
        fn()
        cpu.append(time.thread_time() - c0)
        wall.append(time.perf_counter() - w0)
    return wall, cpu


def read_bandwidth(reps: int = 10) -> dict[str, float]:
    """Read bandwidth in bytes/s, ``x.sum()`` of a 256 MiB float32 tensor: the best and the
    median over ``reps``, by the wall clock (``wall``, ``wall_median``) and by CPU time (``cpu``,
    ``cpu_median``)."""
    x = torch.ones(BANDWIDTH_BYTES // 4)  # (64 Mi,) float32, written once so its pages exist
    wall, cpu = timings(x.sum, reps)
    return {
        "wall": BANDWIDTH_BYTES / min(wall),
        "wall_median": BANDWIDTH_BYTES / statistics.median(wall),
        "cpu": BANDWIDTH_BYTES / min(cpu),
        "cpu_median": BANDWIDTH_BYTES / statistics.median(cpu),
    }


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
