"""Running a learner's function safely, for the chapter checkers.

Every chapter checker does the same thing: is the answer a function yet (not the starter ``...``)?
Call it on copies of each test input (so an in-place edit cannot corrupt the next test case), stop
it if it does not return within :data:`TIME_LIMIT` seconds, turn a crash, a ``None`` or an ``...``
into feedback instead of a traceback, compare the result, and report the first test case that
fails. :func:`run_cases` is that one loop; :func:`call_learner` is one call of it.

>>> from course_utils.exercises._learner import call_learner, not_a_function
>>> not_a_function("exercise", ..., "dot").messages
('dot is still Ellipsis',)
>>> call_learner("exercise", lambda x: x + 1, (1,), "x = 1")
2
>>> print(call_learner("exercise", lambda x: 1 / 0, (1,), "x = 1"))
✗ exercise: not yet right
  - test case: x = 1
  - your function raised ZeroDivisionError: division by zero
  hint: run your function on a small example (the one above the exercise) to see where it fails
>>> def never_returns(x):
...     while True:
...         x += 1
>>> print(call_learner("exercise", never_returns, (1,), "x = 1", time_limit=0.2))
✗ exercise: not yet right
  - test case: x = 1
  - your function did not return within 0.2 s, so the checker stopped it
  hint: look for a loop that never ends (a `while` whose condition stays true)

How a function that never returns is stopped
--------------------------------------------
The learner's function runs in a worker thread; the checker waits at most ``time_limit`` seconds
(default :data:`TIME_LIMIT`; one setting for every checker). It does not use ``signal.alarm``,
which works only in the main thread and only on Unix, and it does not fork: a forked Jupyter
kernel (ipykernel, with its own threads, and torch's) is not safe to copy. When the time is up, the
checker raises an exception *inside* the worker thread (CPython's ``PyThreadState_SetAsyncExc``),
which stops any Python loop at its next bytecode, and returns feedback that says so. This works the
same in a Jupyter kernel and in a plain script, on Linux, macOS and Windows.

The one limit, on every platform (Windows included): a function stuck inside a single long C call
(``time.sleep(1e9)``, one enormous numpy product) cannot be interrupted until that call returns.
The checker still returns after ``time_limit`` seconds with the same feedback; the abandoned call
finishes (or not) in the background, and restarting the kernel ends it.
"""

from __future__ import annotations

import ctypes
import threading
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..i18n import t
from ._feedback import Feedback

__all__ = [
    "STARTER_HINT",
    "TIME_LIMIT",
    "call_learner",
    "fail_on",
    "not_a_function",
    "run_cases",
]

#: Seconds a learner's function may take on one test case. Every checker uses this one setting.
TIME_LIMIT = 5.0

_CRASH_HINT = (
    "run your function on a small example (the one above the exercise) to see where it fails"
)
_TIMEOUT_HINT = "look for a loop that never ends (a `while` whose condition stays true)"
STARTER_HINT = (
    "replace the `...` with your code, and end the function with `return ...` of your result"
)
_STACK_SIZE = 64 * 2**20  # macOS gives new threads 512 KiB; deep recursion needs the usual room


class _Stopped(BaseException):
    """Raised inside the worker thread to stop a learner's function that ran out of time."""


def not_a_function(title: str, answer: Any, name: str) -> Feedback | None:
    """Feedback when ``answer`` is not a function yet (the starter ``...``, ``None`` or a value)."""
    if answer is Ellipsis or answer is None:
        return Feedback(
            False,
            title,
            (t("{name} is still {answer!r}", name=name, answer=answer),),
            (t("define the function `{name}` first", name=name),),
        )
    if not callable(answer):
        return Feedback(
            False,
            title,
            (
                t(
                    "expected the function {name} itself; got a {type}",
                    name=name,
                    type=type(answer).__name__,
                ),
            ),
            (t("pass the function without calling it: `{name}`, not `{name}(...)`", name=name),),
        )
    return None


def _private_copy(value: Any) -> Any:
    # numpy arrays have .copy(), torch tensors .clone(); both keep dtype and shape.
    if isinstance(value, np.ndarray):
        return value.copy()
    clone = getattr(value, "clone", None)
    return clone() if callable(clone) else value


def _stop(thread: threading.Thread) -> None:
    """Raise :class:`_Stopped` in ``thread`` at its next Python bytecode (CPython only)."""
    ident = thread.ident
    if ident is None or not thread.is_alive():
        return
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(_Stopped))


def _run_with_time_limit(fn: Callable[..., Any], args: tuple[Any, ...], limit: float) -> dict:
    """Run ``fn(*args)`` in a worker thread; ``{"result": ...}``, ``{"error": ...}`` or ``{}``."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            with np.errstate(all="ignore"):  # numpy's error state is per thread
                outcome["result"] = fn(*args)
        except _Stopped:
            pass
        except Exception as err:  # the learner's code may raise anything
            outcome["error"] = err

    previous = threading.stack_size()
    try:
        threading.stack_size(_STACK_SIZE)
    except (ValueError, RuntimeError):  # pragma: no cover - platform without settable stacks
        previous = None
    try:
        worker = threading.Thread(target=work, name="course-utils-learner", daemon=True)
        worker.start()
    finally:
        if previous is not None:
            threading.stack_size(previous)
    try:
        worker.join(limit)
    finally:  # also on KeyboardInterrupt (the kernel's stop button): stop the worker too
        if worker.is_alive():
            _stop(worker)
            worker.join(0.5)
    return outcome


def call_learner(
    title: str,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    described: str,
    *,
    time_limit: float | None = None,
) -> Any:
    """Call ``fn`` on copies of ``args``; return its result, or a :class:`Feedback` if it failed.

    ``described`` says which test case this is, in the learner's terms ("q = (1, 2, 3)"). The call
    is stopped after ``time_limit`` seconds (default :data:`TIME_LIMIT`; see the module docstring).
    Overflow warnings are silenced while the learner's code runs: the checkers report NaN/inf in
    the result themselves, with a better explanation than a RuntimeWarning.
    """
    limit = TIME_LIMIT if time_limit is None else float(time_limit)
    copies = tuple(_private_copy(a) for a in args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        outcome = _run_with_time_limit(fn, copies, limit)
    if "error" in outcome:
        err = outcome["error"]
        return Feedback(
            False,
            title,
            (
                t("test case: {described}", described=described),
                t("your function raised {type}: {err}", type=type(err).__name__, err=err),
            ),
            (_CRASH_HINT,),
        )
    if "result" not in outcome:
        return Feedback(
            False,
            title,
            (
                t("test case: {described}", described=described),
                t(
                    "your function did not return within {limit:g} s, so the checker stopped it",
                    limit=limit,
                ),
            ),
            (_TIMEOUT_HINT,),
        )
    result = outcome["result"]
    if result is None or result is Ellipsis:
        return Feedback(
            False, title, (t("your function returned {result!r}", result=result),), (STARTER_HINT,)
        )
    return result


def fail_on(title: str, described: str, fb: Feedback) -> Feedback:
    """``fb`` as the failure of the test case ``described``: its title, the case first."""
    return Feedback(
        False, title, (t("test case: {described}", described=described), *fb.messages), fb.hints
    )


def run_cases(
    title: str,
    fn: Any,
    name: str,
    cases: Iterable[tuple[Any, ...]],
    compare: Callable[..., Feedback],
    passed: str,
    *,
    fail: Callable[[str, str, Feedback], Feedback] = fail_on,
    time_limit: float | None = None,
) -> Feedback:
    """Run a learner's function ``fn`` on every test case; feedback on the first that fails.

    ``cases`` are ``(described, args)`` pairs, or ``(described, args, *extra)``: ``extra`` goes to
    ``compare`` only (a reference module, a hint for this case), never to the learner.
    ``compare(result, *args, *extra)`` returns a :class:`Feedback` for one result (it gets the
    original arguments, never the copies the learner's function saw). ``passed`` is the message
    when every case passes, a literal :func:`course_utils.i18n.t` template with the field ``{n}``
    (the number of cases); ``tests/test_i18n.py`` collects it as a key. A crash inside
    ``compare`` on a strange result (a learner can return anything) becomes feedback too.
    ``fail(title, described, feedback)`` says which case failed (default :func:`fail_on`).

    >>> cases = [("x = 1", (1,)), ("x = 2", (2,))]
    >>> same = lambda r, x: Feedback(r == 2 * x, "double", (f"got {r}, expected {2 * x}",))
    >>> print(run_cases("double", lambda x: x + x, "double", cases, same, "all {n} cases right"))
    ✓ double: correct
      - all 2 cases right
    >>> print(run_cases("double", lambda x: x + 1, "double", cases, same, "all {n} cases right"))
    ✗ double: not yet right
      - test case: x = 2
      - got 3, expected 4
    >>> print(run_cases("double", lambda x: ..., "double", cases, same, "all {n} cases right"))
    ✗ double: not yet right
      - your function returned Ellipsis
      hint: replace the `...` with your code, and end the function with `return ...` of your result
    """
    early = not_a_function(title, fn, name)
    if early is not None:
        return early
    cases = list(cases)
    for described, args, *extra in cases:
        result = call_learner(title, fn, args, described, time_limit=time_limit)
        if isinstance(result, Feedback):
            return result
        try:
            fb = compare(result, *args, *extra)
        except Exception as err:  # a result so strange that comparing it failed: still feedback
            return Feedback(
                False,
                title,
                (
                    t("test case: {described}", described=described),
                    t(
                        "could not check your result ({type}): {err}",
                        type=type(result).__name__,
                        err=err,
                    ),
                ),
            )
        if not fb:
            return fail(title, described, fb)
    return Feedback(True, title, (t(passed, n=len(cases)),))  # passed: a literal template
