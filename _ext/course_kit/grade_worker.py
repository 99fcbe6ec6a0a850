"""The grader's worker: grades one submission's exercises in this process (see
:mod:`course_kit.grading`).

Reads a job (JSON) on standard input: ``cwd`` (the chapter's folder), ``units`` (the chapter's
code, in pieces), ``added`` (cells the learner added to the Exercises section) and ``exercises``
(each: ``id``, the ``units`` it needs, the learner's ``code`` and the checker ``call``). Writes one
JSON line ``{"event": "start", "id": ...}`` before each exercise and one with its ``points`` and
``feedback`` after it, on a private copy of standard output: whatever the learner's code prints
goes to ``/dev/null``. All the learner's code shares one namespace, as in a kernel.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import math
import os
import resource
import signal
import sys
import time
import types
from typing import Any


def _private_output() -> Any:
    """Our own copy of standard output; file descriptor 1 (``print``) then goes nowhere."""
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 (lives to the end)
    return out


def _run(code: str, namespace: dict[str, Any], name: str) -> BaseException | None:
    try:
        exec(compile(code, name, "exec"), namespace)
    except BaseException as err:  # the learner's code may raise anything, SystemExit included
        return err
    return None


def _preload() -> None:
    """Import what every submission needs once, before the first fork: torch, numpy, matplotlib
    and the chapters' checkers (about 3 s of CPU time that each submission then skips), and call
    every checker once on a wrong answer: the first torch operations of a process are slow
    (``ch04.check_head_weights`` took 1.6 s the first time, 0.07 s the third), and a forked child
    inherits the warm state. Torch runs one thread (``OMP_NUM_THREADS=1``), so forking stays
    safe."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot
    import torch  # noqa: F401

    import course_utils.exercises as exercises

    for path in sorted(os.listdir(os.path.dirname(exercises.__file__))):
        if path.startswith("ch") and path.endswith(".py"):
            module = importlib.import_module(f"course_utils.exercises.{path[:-3]}")
            for name in getattr(module, "__all__", ()):
                if name.startswith("check_"):
                    _warm_up(getattr(module, name))


def _warm_up(checker: Any) -> None:
    """Call ``checker`` with an always-wrong function for each of its answers."""
    params = inspect.signature(checker).parameters.values()
    answers = [_wrong for p in params if p.default is p.empty and p.kind <= p.POSITIONAL_OR_KEYWORD]
    # a checker never raises; warming up must not stop the grader if one did
    with contextlib.suppress(Exception):
        checker(*answers)


def _wrong(*args: Any) -> int:
    """An answer that is always wrong (for warming the checkers up)."""
    return 0


def _limit_cpu(ex_id: str, seconds: float, out: Any) -> None:
    """Stop this child once the exercise ``ex_id`` has used ``seconds`` more CPU time: the kernel
    sends SIGXCPU, and the handler reports it and ends the child. CPU time, unlike the parent's
    clock, does not grow when other work shares the machine; a cell that sleeps forever is the
    parent's to stop."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + seconds)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.getrlimit(resource.RLIMIT_CPU)[1]))

    def stop(signum: int, frame: Any) -> None:
        print(json.dumps({"event": "timeout", "id": ex_id}), file=out, flush=True)
        os._exit(3)

    signal.signal(signal.SIGXCPU, stop)


def grade(job: dict[str, Any], out: Any) -> None:
    """Grade the exercises of one job, writing an event line before and after each."""
    import matplotlib.pyplot as plt

    from course_utils.exercises import Feedback

    os.chdir(job["cwd"])
    namespace: dict[str, Any] = {"__name__": "__main__"}
    done: set[int] = set()
    # The checkers, held before any learner code runs: reassigning ch01.check_x in a cell does
    # not change what grades it.
    checkers: dict[str, types.SimpleNamespace] = {}
    added_done = False
    for ex in job["exercises"]:
        print(json.dumps({"event": "start", "id": ex["id"]}), file=out)
        started = time.perf_counter()
        _limit_cpu(ex["id"], job["cpu_seconds"], out)
        module = ex["call"].split(".", 1)[0]
        if module not in checkers:
            mod = importlib.import_module(f"course_utils.exercises.{module}")
            checkers[module] = types.SimpleNamespace(**vars(mod))
        for k in ex["units"]:
            if k not in done:
                done.add(k)
                _run(job["units"][k], namespace, f"<chapter code {k}>")
        if not added_done:
            added_done = True
            for i, code in enumerate(job["added"]):
                _run(code, namespace, f"<your added cell {i + 1}>")
        error = _run(ex["code"], namespace, "<your exercise cell>")
        plt.close("all")
        try:
            fb = eval(ex["call"], {**namespace, module: checkers[module]})
        except BaseException as err:  # e.g. a NameError: the cell never defined the answer
            fb = err
        if isinstance(fb, Feedback):
            text, points = str(fb), 1 if fb.passed else 0
        else:
            what = f"{type(fb).__name__}: {fb}" if isinstance(fb, BaseException) else repr(fb)
            text, points = f"✗ {ex['id']}: not yet right\n  - the check could not run ({what})", 0
        if error is not None:
            text += f"\n  - your exercise cell raised {type(error).__name__}: {error}"
        event = {
            "event": "done",
            "id": ex["id"],
            "points": points,
            "feedback": text,
            "seconds": round(time.perf_counter() - started, 3),
        }
        print(json.dumps(event), file=out)


def main() -> int:
    """Serve jobs, one JSON line each on standard input, each in a forked child process (a fresh
    namespace per submission; the parent kills the child, by the pid it announces, when an
    exercise takes too long). After each child has ended: ``{"event": "exit"}``."""
    out = _private_output()
    _preload()
    print(json.dumps({"event": "ready"}), file=out)
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the child: grade, then end without running the parent's cleanup
            code = 0
            try:
                # the jobs come on standard input: a learner's input() must not read them
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
                print(json.dumps({"event": "child", "pid": os.getpid()}), file=out)
                grade(job, out)
            except BaseException:  # reported to the parent: the exercise had no result
                code = 1
            finally:
                out.flush()
                os._exit(code)
        os.waitpid(pid, 0)
        print(json.dumps({"event": "exit"}), file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
