"""Train once per test run: an experiment called twice with the same arguments in one run of the
tests (nbval's run of a chapter, then the Run-All of the chapter's learner copy) computes once.

Off unless the environment variable :data:`SHARED_RESULTS_ENV` names a folder. The repository's
``conftest.py`` sets a fresh, empty folder for each pytest session, so a learner, ``make execute``
and the book build always compute; inside one session the first caller computes and saves the
result, and a second caller with the same arguments, in any process, loads it (waiting, under a
file lock, while the first is still computing). The first run is still checked in full: nbval
compares what it printed with the committed outputs, whichever kernel trained it.

The key holds everything the result may depend on besides the package's code (which one session
does not change): the function, its arguments, torch's version, thread count and CPU kernel set,
so that the kernels x threads matrix (``tests/test_cross_machine.py``) never reuses a result of
another setting.

>>> import os, tempfile
>>> calls = []
>>> @shared_result
... def square(x: int) -> int:
...     calls.append(x)
...     return x * x
>>> os.environ[SHARED_RESULTS_ENV] = tempfile.mkdtemp()
>>> square(3), square(3), calls
(9, 9, [3])
>>> del os.environ[SHARED_RESULTS_ENV]
>>> square(3), calls
(9, [3, 3])
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch

from ._file_lock import exclusive_lock

__all__ = ["SHARED_RESULTS_ENV", "shared_result"]

#: The folder where one test session keeps its experiments' results (unset: always compute).
SHARED_RESULTS_ENV = "COURSE_SHARED_RESULTS"

F = TypeVar("F", bound=Callable[..., Any])


class _KeyPickler(pickle.Pickler):
    """Pickles what an argument is, not how one process holds it: a tensor as its dtype, shape
    and bytes (torch's own pickling of a tensor differs from one process to the next, so two
    kernels would never find the same key), a dataclass as its type and fields (a cache that an
    earlier call kept on it, such as a vocabulary's index, is not part of it)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, torch.Tensor):
            data = obj.detach().cpu().contiguous()
            return tuple, ((str(data.dtype), tuple(data.shape), data.numpy().tobytes()),)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
            fields = tuple((f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj))
            return tuple, ((kind, fields),)
        return NotImplemented


def _key(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """A file name for one call, or None when an argument cannot be pickled (then: compute)."""
    setting = (
        torch.__version__,
        torch.get_num_threads(),
        torch.backends.cpu.get_cpu_capability(),
        os.environ.get("ATEN_CPU_CAPABILITY", ""),
    )
    buffer = io.BytesIO()
    try:
        _KeyPickler(buffer, protocol=4).dump((args, sorted(kwargs.items()), setting))
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    blob = buffer.getvalue()
    return f"{fn.__module__}.{fn.__qualname__}-{hashlib.sha256(blob).hexdigest()[:24]}"


def shared_result(fn: F) -> F:
    """Decorate an experiment so that one test session computes each call once (see the module)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        folder = os.environ.get(SHARED_RESULTS_ENV)
        name = _key(fn, args, kwargs) if folder else None
        if folder is None or name is None:
            return fn(*args, **kwargs)
        path = Path(folder) / f"{name}.pickle"
        with exclusive_lock(Path(folder) / f"{name}.lock"):  # a second caller waits here
            if path.exists():
                result, rng_after = pickle.loads(path.read_bytes())
                # The call's one side effect: it seeds torch's global generator and draws from it.
                # Leave the generator as the call would have, so later cells print the same.
                torch.set_rng_state(rng_after)
                return result
            result = fn(*args, **kwargs)
            try:
                blob = pickle.dumps((result, torch.get_rng_state()), protocol=4)
            except (pickle.PicklingError, TypeError, AttributeError):
                return result  # nothing shared: every caller computes
            partial = path.with_suffix(".partial")
            partial.write_bytes(blob)
            partial.replace(path)
            return result

    return wrapper  # type: ignore[return-value]
