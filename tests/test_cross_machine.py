"""Another machine, simulated: every notebook (nbval, strict) and the prose-number tests pass under
each of torch's CPU kernel sets and several thread counts.

The committed outputs were executed on one machine. A learner's laptop, a school server or a
Binder node has another processor, so torch (and MKL) run other kernels there, and a different
thread count splits sums differently: both change the last bits of floats. Nothing the notebooks
print may depend on those bits (the seeded experiments train in float64,
:func:`course_utils._determinism.deterministic`; errors are printed as bounds). This test runs
the whole notebook suite in a child process per setting:

- ``ATEN_CPU_CAPABILITY`` in ``default`` (no vector kernels), ``avx2``, and ``avx512`` where the
  processor has it (on another one torch would silently fall back, which would prove nothing);
- torch's intra-op threads in 1, 2 and 4: ``OMP_NUM_THREADS``/``MKL_NUM_THREADS``, and, since torch
  caps those at the number of cores (4 would silently be 2 on a 2-core machine), an explicit
  ``torch.set_num_threads`` in every notebook kernel (an IPython startup file of a profile made for
  the run, ``IPYTHONDIR``) and in the pytest processes (a plugin loaded with ``-p``).

Slow (each setting re-runs every notebook): ``make test-machines`` runs it, and ``.ci/run`` after
``make test``. One setting: ``pytest -m cross_machine tests/test_cross_machine.py -k 'default-1'``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = ["chapters", "appendix"]
#: The tests that compare numbers in the chapters' prose with what the package computes.
PROSE_NUMBER_TESTS = sorted(
    str(p.relative_to(REPO)) for p in (REPO / "tests").glob("test_chapter*_*.py")
)
THREADS = (1, 2, 4)

pytestmark = pytest.mark.cross_machine


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _kernel_sets() -> list[object]:
    """``default`` everywhere; ``avx2`` and ``avx512`` where the processor has them (on another
    one torch would silently fall back to a lower set, which would prove nothing)."""
    flags = _cpu_flags()
    needs = {
        "avx2": {"avx2", "fma"},
        "avx512": {"avx512f", "avx512bw", "avx512vl", "avx512dq"},
    }
    sets: list[object] = ["default"]
    for name, required in needs.items():
        if required <= flags:
            sets.append(name)
        else:
            reason = f"this processor has no {name.upper()} kernels to run"
            sets.append(pytest.param(name, marks=pytest.mark.skip(reason=reason)))
    return sets


SET_THREADS = "import torch\n\ntorch.set_num_threads({threads})\n"
#: The module name of the pytest plugin that sets the threads in each pytest process.
THREADS_PLUGIN = "cross_machine_threads"


def _environment(kernels: str, threads: int, work: Path) -> dict[str, str]:
    """The environment of one setting; ``work`` receives the IPython profile and pytest plugin
    that set torch's thread count where the environment variables alone would be capped."""
    startup = work / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-threads.py").write_text(SET_THREADS.format(threads=threads))
    plugins = work / "plugins"
    plugins.mkdir()
    (plugins / f"{THREADS_PLUGIN}.py").write_text(SET_THREADS.format(threads=threads))
    env = dict(os.environ)
    env.update(
        ATEN_CPU_CAPABILITY=kernels,
        OMP_NUM_THREADS=str(threads),
        MKL_NUM_THREADS=str(threads),
        PYTHONHASHSEED="0",
        IPYTHONDIR=str(work / "ipython"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(plugins), env.get("PYTHONPATH")])),
    )
    return env


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("kernels", _kernel_sets())
def test_every_notebook_and_prose_number_under(kernels: str, threads: int, tmp_path: Path) -> None:
    env = _environment(kernels, threads, tmp_path)
    # A kernel of this profile, as nbval starts it (IPython runs the profile's startup files).
    probe = subprocess.run(
        [
            sys.executable,
            "-m",
            "IPython",
            "--no-banner",
            "--HistoryManager.enabled=False",
            "-c",
            "import json, torch; print(json.dumps([torch.backends.cpu.get_cpu_capability(),"
            " torch.get_num_threads()]))",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    capability, got_threads = json.loads(probe.stdout.strip().splitlines()[-1])
    # The setting really reached torch (a kernel nbval starts inherits the same environment).
    assert (capability, got_threads) == (
        {"default": "DEFAULT"}.get(kernels, kernels.upper()),
        threads,
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            THREADS_PLUGIN,
            "-n",
            "2",
            "--dist",
            "loadfile",
            "--nbval",
            *NOTEBOOKS,
            *PROSE_NUMBER_TESTS,
        ],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    tail = "\n".join(run.stdout.splitlines()[-60:])
    assert run.returncode == 0, f"ATEN_CPU_CAPABILITY={kernels}, {threads} threads:\n{tail}"
    assert " passed" in tail and " failed" not in tail, tail
