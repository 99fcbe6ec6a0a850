"""Benchmark: how long chapter 6's training cell takes (three tiny Transformers learn to count).

Not a timed test: run it by hand and read the numbers.

    .venv/bin/python benchmarks/bench_counting_training.py            # the chapter's call, 3 seeds
    .venv/bin/python benchmarks/bench_counting_training.py --seeds 0  # one seed

Prints the wall-clock time and the process CPU time (user + system). On a shared machine the wall
time depends on the load; the CPU time is what the run itself costs. Goal from issue 12: under 60 s
on 2 cores for the notebook's training run.
"""

from __future__ import annotations

import argparse
import os
import time

from course_utils.experiments.counting import train_counting


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    wall, cpu = time.perf_counter(), time.process_time()
    runs = train_counting(seeds=tuple(args.seeds))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    load = os.getloadavg()[0]
    print(f"seeds {args.seeds}: wall {wall:.1f} s, CPU {cpu:.1f} s (load average {load:.1f})")
    for r in runs:
        print(f"  seed {r.seed}: final test loss {r.losses[-1]:.3f}, accuracy {r.accuracy:.3f}")


if __name__ == "__main__":
    main()
