"""Peak memory (RSS) of each chapter's kernel, for sizing a JupyterHub.

Each chapter runs top to bottom in a fresh kernel (nbclient), inside a fresh child process of this
script; when that child has shut its kernel down, ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` in the
child is the largest resident set of any process it waited for: the kernel (the driver itself is
measured separately with RUSAGE_SELF and reported alongside). Linux reports ru_maxrss in KiB.

Usage: python benchmarks/kernel_memory.py [chapters/NN_x.ipynb ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_one(path: Path) -> dict[str, float]:
    """Execute ``path`` in a fresh kernel (in this process) and report the peak RSS."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    seconds = time.perf_counter() - start
    kernel = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "kernel_peak_rss_mib": round(kernel, 1),
        "driver_rss_mib": round(driver, 1),
        "seconds": round(seconds, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one)))
        return 0
    notebooks = args.notebooks or sorted((ROOT / "chapters").glob("*.ipynb"))
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg")
    results = {}
    for nb in notebooks:
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(nb)],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        results[nb.name] = json.loads(out.stdout.strip().splitlines()[-1])
        r = results[nb.name]
        print(
            f"{nb.name:40s} kernel peak RSS {r['kernel_peak_rss_mib']:7.1f} MiB  ({r['seconds']} s)"
        )
    heaviest = max(results.items(), key=lambda kv: kv[1]["kernel_peak_rss_mib"])
    print(f"heaviest: {heaviest[0]} at {heaviest[1]['kernel_peak_rss_mib']} MiB")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
