"""Running a learner's function safely, for the chapter checkers.

Every chapter checker starts the same way: is the answer a function yet (not the starter
``...``)? Call it on copies of the test inputs (so an in-place edit cannot corrupt the next test
case), and turn a crash, a ``None`` or an ``...`` into feedback instead of a traceback. This module
is that one shared step.

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
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ._feedback import Feedback

__all__ = ["STARTER_HINT", "call_learner", "not_a_function"]

_CRASH_HINT = (
    "run your function on a small example (the one above the exercise) to see where it fails"
)

STARTER_HINT = (
    "replace the `...` with your code, and end the function with `return ...` of your result"
)


def not_a_function(title: str, answer: Any, name: str) -> Feedback | None:
    """Feedback when ``answer`` is not a function yet (the starter ``...``, ``None`` or a value)."""
    if answer is Ellipsis or answer is None:
        return Feedback(
            False, title, (f"{name} is still {answer!r}",), (f"define the function `{name}` first",)
        )
    if not callable(answer):
        return Feedback(
            False,
            title,
            (f"expected the function {name} itself; got a {type(answer).__name__}",),
            (f"pass the function without calling it: `{name}`, not `{name}(...)`",),
        )
    return None


def _private_copy(value: Any) -> Any:
    # numpy arrays have .copy(), torch tensors .clone(); both keep dtype and shape.
    if isinstance(value, np.ndarray):
        return value.copy()
    clone = getattr(value, "clone", None)
    return clone() if callable(clone) else value


def call_learner(title: str, fn: Callable[..., Any], args: tuple[Any, ...], described: str) -> Any:
    """Call ``fn`` on copies of ``args``; return its result, or a :class:`Feedback` if it failed.

    ``described`` says which test case this is, in the learner's terms ("q = (1, 2, 3)"). Overflow
    warnings are silenced while the learner's code runs: the checkers report NaN/inf in the result
    themselves, with a better explanation than a RuntimeWarning.
    """
    copies = tuple(_private_copy(a) for a in args)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            with np.errstate(all="ignore"):
                result = fn(*copies)
    except Exception as err:  # the learner's code may raise anything
        return Feedback(
            False,
            title,
            (f"test case: {described}", f"your function raised {type(err).__name__}: {err}"),
            (_CRASH_HINT,),
        )
    if result is None or result is Ellipsis:
        return Feedback(False, title, (f"your function returned {result!r}",), (STARTER_HINT,))
    return result
