"""A class of learners on a real JupyterHub on this machine: memory, latency, failures, and the
class size one machine holds, computed from them (``make classroom``; LEARNERS=30 by default).

Each learner logs in, opens the course through an nbgitpuller link, and runs chapters 1-3 and one
of chapters 7 and 10 (SmolLM2) cell by cell through the kernel's websocket, with seeded reading
pauses scaled by ``--pace``. The hub, proxy, servers and kernels are stopped at the end. What
runs and what is measured: ``_ext/course_kit/classroom.py``.

The class size is computed from the run's largest per-learner peak PSS (server + kernels), not
RSS: the kernels share torch's libraries, and PSS charges each process its share of a shared page
while RSS charges it to every process, so summed RSS overstates what the learners take together.

Usage: python benchmarks/classroom.py [--learners 30] [--pace 0.02] [--json out.json]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "_ext"), str(ROOT / "benchmarks")]

from _floor import load, machine, save_results  # noqa: E402

from course_kit.classroom import (  # noqa: E402
    DEFAULT_CHAPTERS,
    GIB,
    ClassPlan,
    class_size,
    iter_lines,
    run_class,
)

#: The machine the guide sizes a class for (this project's machines: 2 cores, 24 GiB).
MACHINE_GIB = 24
MACHINE_CORES = 2
#: Kept back from the learners: the system, the hub (~125 MiB) and the proxy (~60 MiB).
HEADROOM_GIB = 2
#: The length of a lesson, for the CPU side of the class size (the guide's 90-minute plan).
LESSON_S = 90 * 60


def cpu_class_size(cpu_s_per_learner: float, cores: int = MACHINE_CORES) -> int:
    """Learners whose measured CPU seconds (chapters 1-3 and a SmolLM2 chapter) fit in one
    lesson of :data:`LESSON_S` on ``cores`` cores, if nothing else runs.

    >>> cpu_class_size(100.0)
    108
    """
    return math.floor(cores * LESSON_S / cpu_s_per_learner)


def gib_up(mib: float) -> float:
    """``mib`` MiB in GiB, rounded up to 0.1 GiB (JupyterHub reads ``2.1G`` as 2.1 GiB).

    >>> gib_up(2027.2)
    2.0
    >>> gib_up(2050)
    2.1
    """
    return math.ceil(mib / 1024 * 10 - 1e-9) / 10


def z2jh_memory(result: dict) -> dict[str, str]:
    """Zero to JupyterHub's ``singleuser.memory`` from a run: the guarantee is the largest
    per-learner peak (PSS); the limit adds the heaviest other chapter's peak, for a learner who
    leaves that chapter's kernel running while in the heaviest one."""
    learners = result["learners"]
    peak = max(r["peak_pss_mib"] for r in learners)
    by_chapter: dict[str, float] = {}
    for r in learners:
        for chapter, mib in r["peak_pss_mib_by_chapter"].items():
            by_chapter[chapter] = max(by_chapter.get(chapter, 0.0), mib)
    heaviest = max(by_chapter, key=by_chapter.__getitem__)
    second = max((v for k, v in by_chapter.items() if k != heaviest), default=0.0)
    return {"guarantee": f"{gib_up(peak)}G", "limit": f"{gib_up(peak + second)}G"}


def sizes(result: dict) -> dict:
    """What a run says about sizing a class: learners per machine by memory and by CPU time,
    and Zero to JupyterHub's memory guarantee and limit."""
    size = class_size(result, MACHINE_GIB, HEADROOM_GIB)
    cpu = [r["cpu_s"] for r in result["learners"] if not r["failures"]]
    size["cpu_s_per_learner_max"] = max(cpu) if cpu else None
    size["learners_by_cpu_in_90_minutes"] = cpu_class_size(max(cpu)) if cpu else None
    size["cores"] = MACHINE_CORES
    size["z2jh_singleuser_memory"] = z2jh_memory(result)
    return size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=30)
    parser.add_argument("--pace", type=float, default=0.02, help="reading pauses x this")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--chapters",
        default=",".join(Path(c).stem[:2] for c in DEFAULT_CHAPTERS),
        help="the chapters every learner runs, by number (default 01,02,03)",
    )
    parser.add_argument("--no-smollm2", action="store_true", help="no chapter 7 or 10 after")
    parser.add_argument("--deadline-minutes", type=float, default=45)
    parser.add_argument("--memory-floor-gib", type=float, default=3.0)
    parser.add_argument("--proxy-cache", type=Path, default=ROOT / "_build" / "classroom")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks/results/classroom.json")
    args = parser.parse_args(argv)
    chapters = []
    for number in args.chapters.split(","):
        found = sorted((ROOT / "chapters").glob(f"{number.strip()}_*.ipynb"))
        if len(found) != 1:
            parser.error(f"--chapters: {number!r} names {len(found)} chapters, expected one")
        chapters.append(f"chapters/{found[0].name}")
    plan = ClassPlan(
        learners=args.learners,
        chapters=tuple(chapters),
        smollm2=not args.no_smollm2,
        pace=args.pace,
        seed=args.seed,
        deadline_s=args.deadline_minutes * 60,
        memory_floor=int(args.memory_floor_gib * GIB),
    )
    load_before = load()
    result = run_class(plan, ROOT, args.proxy_cache)
    result["class_size"] = size = sizes(result)
    result["machine"] = machine()
    result["load_before"] = load_before
    result["load_after"] = load()
    for line in iter_lines(result):
        print(line)
    print(
        f"class size on {MACHINE_GIB} GiB ({HEADROOM_GIB} GiB kept back): "
        f"{size['learners_by_memory']} learners at {size['per_learner_gib']} GiB each (peak PSS); "
        f"CPU: {size['cpu_s_per_learner_max']} s per learner -> "
        f"{size['learners_by_cpu_in_90_minutes']} learners in 90 min on {MACHINE_CORES} cores"
    )
    print(f"load average before {load_before}, after {result['load_after']}")
    save_results(args.json, result)
    return 0 if result["failures"] == 0 and not result["processes_left"] else 1


if __name__ == "__main__":
    sys.exit(main())
