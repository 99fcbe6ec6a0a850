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

A learner's ``try: ... except: pass`` inside a loop catches that exception too (a bare ``except``
catches everything). Catching it turns on a tracer in the worker (:func:`_trace_until_stopped`),
which raises it again at the first line no ``try`` of the learner's covers (the loop's own line),
and the loop ends. The checker raises it only once, and never after the learner's code has ended
(a lock orders the two), so a stop cannot land in the worker's own bookkeeping and escape the
thread. The checker waits at most :data:`_STOP_PATIENCE` seconds for the worker to end, so the
notebook gets its feedback on time. The exception is a ``SystemExit`` subclass, which
``except Exception`` does not catch and which a thread ends with silently.

A learner's own ``sys.exit()`` (a ``SystemExit``) is named as such, not reported as a time-out.

The one limit, on every platform (Windows included): a function stuck inside a single long C call
(``time.sleep(1e9)``, one enormous numpy product) cannot be interrupted until that call returns.
The checker still returns after ``time_limit`` seconds with the same feedback; the abandoned call
finishes (or not) in the background, and restarting the kernel ends it.
"""

from __future__ import annotations

import copy
import ctypes
import dis
import sys
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
    "not_answered",
    "run_cases",
]

#: Seconds a learner's function may take on one test case. Every checker uses this one setting.
TIME_LIMIT = 5.0

_CRASH_HINT = (
    "run your function on a small example (the one above the exercise) to see where it fails"
)
_TIMEOUT_HINT = "look for a loop that never ends (a `while` whose condition stays true)"
_EXIT_HINT = (
    "a checked function must return its result: remove sys.exit() (or exit(), quit()) and "
    "end with `return ...`"
)
STARTER_HINT = (
    "replace the `...` with your code, and end the function with `return ...` of your result"
)
_STACK_SIZE = 64 * 2**20  # macOS gives new threads 512 KiB; deep recursion needs the usual room
_STOP_PATIENCE = 1.0  # seconds the checker waits for a stopped worker to end


class _Stopped(SystemExit):
    """Raised inside the worker thread to stop a learner's function that ran out of time.

    A ``SystemExit``: ``except Exception`` in the learner's code does not catch it, and a thread
    that ends with it ends silently (no traceback printed by ``threading.excepthook``). Creating
    one in a worker that is being stopped turns on :func:`_stop_tracer` there (see
    :func:`_trace_until_stopped`), which a bare ``except`` cannot switch off.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        if threading.get_ident() in _STOPPING:
            _trace_until_stopped()


#: Idents of the worker threads being stopped (their learner's function ran out of time).
_STOPPING: set[int] = set()
_WORK_CODE: Any = None  # the code of the worker's own function, set when a worker starts
_HANDLED: dict[Any, tuple[tuple[int, int], ...]] = {}  # code object -> its protected ranges


def _protected(code: Any) -> tuple[tuple[int, int], ...]:
    """The bytecode ranges of ``code`` that a ``try`` (or ``with``) protects."""
    if code not in _HANDLED:
        try:
            entries = dis._parse_exception_table(code)  # type: ignore[attr-defined]
            _HANDLED[code] = tuple((e.start, e.end) for e in entries)
        except Exception:  # an interpreter without exception tables: treat all as protected
            _HANDLED[code] = ((0, 1 << 30),)
    return _HANDLED[code]


def _can_escape(frame: Any) -> bool:
    """Whether an exception raised now in ``frame`` leaves the learner's code uncaught."""
    while frame is not None and frame.f_code is not _WORK_CODE:
        lasti = frame.f_lasti
        if any(start <= lasti < end for start, end in _protected(frame.f_code)):
            return False
        frame = frame.f_back
    return True


def _stop_tracer(frame: Any, event: str, arg: Any) -> Any:
    """Raise :class:`_Stopped` at the first line where no ``try`` of the learner can catch it."""
    if event == "line" and _can_escape(frame):
        raise _Stopped
    return _stop_tracer


def _trace_until_stopped() -> None:
    """Trace every frame of this (worker) thread with :func:`_stop_tracer`.

    Runs in the worker, when a stop request was caught by the learner's own ``except``. From then
    on each executed line is checked, and the stop is raised again where it cannot be caught: in
    ``while True: try: ... except: pass`` that is the ``try`` line, reached at every iteration.
    """
    sys.settrace(_stop_tracer)
    frame = sys._getframe(1)
    while frame is not None and frame.f_code is not _WORK_CODE:
        frame.f_trace = _stop_tracer
        frame.f_trace_lines = True
        frame = frame.f_back


def not_answered(title: str, answer: Any) -> Feedback | None:
    """Feedback when a value to type in is still the starter ``...`` (or ``None``); else None.

    >>> print(not_answered("share", ...))
    ✗ share: not yet right
      - answer is still Ellipsis
      hint: replace the `...` with your answer
    """
    if answer is Ellipsis or answer is None:
        return Feedback(
            False,
            title,
            (t("answer is still {answer!r}", answer=answer),),
            ("replace the `...` with your answer",),
        )
    return None


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


def _private_copy(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """A deep copy of ``args``: lists, dicts, arrays and tensors, however nested.

    The learner's function gets the copy, the checker keeps the original to compute the expected
    value: an answer that edits its input in place (``lengths.append(...)``, ``x += 1``) cannot
    change what it is compared with, nor the next test case. Objects that cannot be deep-copied
    (a tensor in the middle of an autograd graph) are copied one by one where possible.

    >>> lengths = [3, 1]
    >>> copied = _private_copy((lengths, np.zeros(2)))
    >>> copied[0].append(9)
    >>> copied[1][:] += 1
    >>> lengths, copied[1].tolist()
    ([3, 1], [1.0, 1.0])
    """
    try:
        return copy.deepcopy(args)
    except Exception:  # e.g. a non-leaf tensor: fall back to a shallow copy of each argument
        return tuple(_shallow_copy(a) for a in args)


def _shallow_copy(value: Any) -> Any:
    # numpy arrays have .copy(), torch tensors .clone(); both keep dtype and shape.
    if isinstance(value, np.ndarray):
        return value.copy()
    clone = getattr(value, "clone", None)
    if callable(clone):
        return clone()
    try:
        return copy.deepcopy(value)
    except Exception:  # not copyable at all: the learner gets it as it is
        return value


def _request_stop(thread: threading.Thread) -> None:
    """Raise :class:`_Stopped` in ``thread`` at its next Python bytecode (CPython only)."""
    ident = thread.ident
    if ident is None or not thread.is_alive():
        return
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(_Stopped))


def _stop(
    thread: threading.Thread, finished: threading.Event, gate: threading.Lock, patience: float
) -> None:
    """Stop ``thread``: raise :class:`_Stopped` in it once, unless its learner's code has ended.

    One request is enough: if the learner's code swallows it, the stop tracer turned on by
    :class:`_Stopped` raises it again where it cannot be caught. A second request could land after
    the learner's code has ended, in the worker's own code, and escape the thread; so there is
    none, and ``gate`` (which the worker holds to say it has finished) makes "not finished yet,
    so send" one step. Waits at most ``patience`` seconds for the thread to end.
    """
    if thread.ident is not None:
        _STOPPING.add(thread.ident)
    with gate:
        if not finished.is_set():
            _request_stop(thread)
    thread.join(patience)
    if not thread.is_alive():
        _STOPPING.discard(thread.ident)
        return
    # Still inside one long C call (time.sleep(1e9)): the stop lands when it returns.
    threading.Thread(
        target=_forget_when_ended, args=(thread,), daemon=True, name="course-utils-stopper"
    ).start()


def _forget_when_ended(thread: threading.Thread) -> None:
    thread.join()
    _STOPPING.discard(thread.ident)


def _run_with_time_limit(fn: Callable[..., Any], args: tuple[Any, ...], limit: float) -> dict:
    """Run ``fn(*args)`` in a worker thread.

    Returns ``{"result": ...}``, ``{"error": ...}``, ``{"exit": SystemExit}`` or ``{}`` (it did not
    return within ``limit`` seconds and was stopped).
    """
    outcome: dict[str, Any] = {}
    finished = threading.Event()
    gate = threading.Lock()  # the stopper's check-and-send against the worker's "finished"

    def work() -> None:
        global _WORK_CODE
        _WORK_CODE = sys._getframe().f_code  # the learner's frames are the ones above it
        try:
            try:
                with np.errstate(all="ignore"):  # numpy's error state is per thread
                    result = fn(*args)
                outcome["result"] = result
            except _Stopped:
                pass
            except SystemExit as err:  # sys.exit(), exit(), quit() in the learner's code
                outcome["exit"] = err
            except BaseException as err:  # the learner's code may raise anything, even Ctrl-C
                outcome["error"] = err
            sys.settrace(None)  # the stop tracer, if a swallowed stop turned it on
            with gate:  # from here on no stop is sent (see _stop)
                finished.set()
        except _Stopped:
            # The one stop, sent just as the learner's function returned, landed here, after
            # the learner's code: absorbed, so that the thread still ends quietly.
            sys.settrace(None)
            finished.set()

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
    timed_out = True
    try:
        timed_out = not finished.wait(limit)
    finally:  # also on KeyboardInterrupt (the kernel's stop button): stop the worker too
        if timed_out:
            _stop(worker, finished, gate, _STOP_PATIENCE)
    return {} if timed_out else outcome


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
    copies = _private_copy(args)
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
    if "exit" in outcome:
        return Feedback(
            False,
            title,
            (
                t("test case: {described}", described=described),
                t("your function called sys.exit()"),
            ),
            (_EXIT_HINT,),
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
