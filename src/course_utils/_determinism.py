"""Run torch reproducibly: one thread, and (for training runs) deterministic algorithms.

One home for the context managers every seeded experiment and measurement uses. One thread fixes
the order of every floating-point sum, so the same call gives the same numbers on the same
machine and PyTorch version; on a busy two-core machine it is also much faster for the course's
tiny models than two threads competing for the cores.

>>> import torch
>>> before = torch.get_num_threads()
>>> with deterministic():
...     torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
(1, True)
>>> torch.get_num_threads() == before
True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["deterministic", "one_thread"]


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread inside the block, then restore the previous setting."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@contextmanager
def deterministic() -> Iterator[None]:
    """One thread and ``torch.use_deterministic_algorithms(True)``, both restored afterwards."""
    was = torch.are_deterministic_algorithms_enabled()
    with one_thread():
        torch.use_deterministic_algorithms(True)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(was)
