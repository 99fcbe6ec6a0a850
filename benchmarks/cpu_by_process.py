"""Where a command's CPU time goes: wall time, CPU-seconds of the whole machine, and CPU-seconds by
kind of process (pytest workers, Jupyter kernels, Chromium's renderers, node, ...).

`make test` has a wall-time budget on 2 cores. Whether a phase can get faster by running things
side by side or only by doing less depends on how busy the cores already are, and on who keeps
them busy. ``time`` cannot say: Chromium's renderers are forked by its zygote and their CPU time is
never added to the command's. This script reads ``/proc/stat`` (every process on the machine)
before and after, and samples ``/proc/<pid>/stat`` of every process while the command runs (each
process's last reading counts; a process shorter than the sampling period may be missed).

    python benchmarks/cpu_by_process.py -- make -j2 test-python test-site
    python benchmarks/cpu_by_process.py --every 0.5 -- .venv/bin/python -m pytest -n 2 tests/x.py

Run it on a quiet machine: every process counts, the command's or not. Linux only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def machine_ticks() -> tuple[int, int]:
    """(busy, idle) clock ticks of all cores since boot (``/proc/stat``'s first line)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields[:8]
    return user + nice + system + irq + softirq + steal, idle + iowait


def process_kind(pid: str) -> str:
    """A short name for what the process is: ``chromium:renderer``, ``python:kernel``, ``node``."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    # Chromium rewrites its children's command lines as one space-separated string.
    args = raw.decode(errors="replace").replace("\0", " ").split()
    if not args:
        return "kernel thread"
    exe = os.path.basename(args[0])
    if "chrom" in exe:
        kind = next((a.removeprefix("--type=") for a in args if a.startswith("--type=")), "browser")
        sub = next((a for a in args if a.startswith("--utility-sub-type=")), "")
        return f"chromium:{kind}" + (":" + sub.rsplit(".", 1)[-1] if sub else "")
    if exe.startswith("python"):
        if any("ipykernel" in a for a in args):
            return "python:kernel"
        if any("pytest" in a or "execnet" in a or "xdist" in a for a in args):
            return "python:pytest"
        return "python"
    return exe


def cpu_seconds(pid: str) -> float:
    """User + system CPU-seconds of one process so far (``/proc/<pid>/stat``, fields 14, 15)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()  # the name in parentheses may hold spaces
    return (int(fields[11]) + int(fields[12])) / TICKS


class Sampler(threading.Thread):
    """Reads every process's CPU time every ``every`` seconds until stopped."""

    def __init__(self, every: float) -> None:
        super().__init__(daemon=True)
        self.every = every
        self.start_cpu: dict[str, float] = {}
        self.last_cpu: dict[str, float] = {}
        self.kind: dict[str, str] = {}
        self.done = threading.Event()
        self._read(into=self.start_cpu)  # what ran before the command is not the command's

    def _read(self, into: dict[str, float]) -> None:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                into[pid] = cpu_seconds(pid)
            except (OSError, IndexError, ValueError):
                continue  # the process ended while being read
            if pid not in self.kind:
                self.kind[pid] = process_kind(pid)

    def run(self) -> None:
        while not self.done.wait(self.every):
            self._read(into=self.last_cpu)
        self._read(into=self.last_cpu)

    def by_kind(self) -> Counter[str]:
        totals: Counter[str] = Counter()
        for pid, cpu in self.last_cpu.items():
            totals[self.kind.get(pid, "?")] += cpu - self.start_cpu.get(pid, 0.0)
        return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--top", type=int, default=12, help="kinds of process to list")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to measure after --, e.g. -- make test")
    if args.every <= 0:
        parser.error(f"--every must be a positive number of seconds; got {args.every}")
    load_before = os.getloadavg()
    busy0, idle0 = machine_ticks()
    sampler = Sampler(args.every)
    sampler.start()
    started = time.perf_counter()
    code = subprocess.call(command)
    wall = time.perf_counter() - started
    sampler.done.set()
    sampler.join()
    busy1, idle1 = machine_ticks()
    busy, idle = (busy1 - busy0) / TICKS, (idle1 - idle0) / TICKS
    print(f"command: {' '.join(command)} (exit {code})")
    print(f"load before: {' '.join(f'{x:.2f}' for x in load_before)}; cores: {os.cpu_count()}")
    print(
        f"wall {wall:.0f} s, busy {busy:.0f} CPU-s, idle {idle:.0f} CPU-s: "
        f"the cores were busy {busy / max(busy + idle, 1e-9):.0%} of the time"
    )
    print("CPU-s by kind of process (sampled):")
    for kind, seconds in sampler.by_kind().most_common(args.top):
        print(f"  {seconds:8.1f}  {kind}")
    return code


if __name__ == "__main__":
    sys.exit(main())
