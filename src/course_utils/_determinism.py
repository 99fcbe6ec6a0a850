"""Run torch reproducibly on any machine: one thread, deterministic algorithms, float64 training
with the weights kept on float32's grid.

One home for the context managers every seeded experiment and measurement uses.

- One thread fixes the order of every floating-point sum, and on a busy two-core machine it is
  also much faster for the course's tiny models than two threads competing for the cores.
- Which kernels torch and MKL run depends on the processor (AVX2, AVX-512, Intel or AMD code
  paths) and on the thread count, and each rounds the last bits differently. Training is chaotic:
  a difference in the last bits grows by a few per cent a step, so in float32 (about 7 digits) a
  run of a few hundred steps prints another accuracy or generates another word on another
  machine (0.989 against 0.976 in chapter 6 on an Intel Xeon). Float64 (about 16 digits) alone only
  delays this (measured here: a held-out loss of 0.0251 under AVX2 kernels, 0.0253 under the
  default ones, in chapter 8).
- So the experiments train in float64 and :func:`snap_to_float32` rounds the weights to
  float32's grid after every step. Two machines then hold the *same* weights after each step
  unless a float64 value falls within about 1e-16 of a point halfway between two float32
  numbers (odds of about 1e-9 per weight and step; one of the chapters' experiments makes 1e6 to
  3e7 such roundings), so the noise is wiped out at every step instead of amplified. Measured:
  the same weights, bit for bit, under torch's default and AVX2 kernels, 1 to 4 threads and
  MKL's other code paths (``MKL_CBWR``). The models are tiny, so float64 costs little (1.2 to 1.6
  times the float32 time).
- The initial weights are drawn in float64 and snapped too: torch's float32 random normal
  numbers themselves differ in their last bits between kernel sets (measured: up to 1.3e-6).

>>> import torch
>>> before = torch.get_num_threads()
>>> with deterministic():
...     torch.get_num_threads(), torch.are_deterministic_algorithms_enabled(), torch.ones(1).dtype
(1, True, torch.float64)
>>> torch.get_num_threads() == before, torch.get_default_dtype()
(True, torch.float32)

"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["deterministic", "one_thread", "snap_to_float32"]


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
def deterministic(dtype: torch.dtype = torch.float64) -> Iterator[None]:
    """One thread, ``torch.use_deterministic_algorithms(True)`` and ``dtype`` as torch's default
    floating dtype (float64 unless told), all restored afterwards.

    Models and tensors made inside the block are ``dtype``; a model trained inside stays so
    afterwards (feed it token ids, or tensors of its dtype).
    """
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"dtype must be a floating torch.dtype; got {dtype!r}")
    was = torch.are_deterministic_algorithms_enabled()
    was_dtype = torch.get_default_dtype()
    with one_thread():
        torch.use_deterministic_algorithms(True)
        torch.set_default_dtype(dtype)
        try:
            yield
        finally:
            torch.set_default_dtype(was_dtype)
            torch.use_deterministic_algorithms(was)


def snap_to_float32(model: torch.nn.Module) -> None:
    """Round every float64 parameter of ``model`` to the nearest float32 value, in place.

    Called after each optimiser step of a training run under :func:`deterministic`: the weights
    stay float64 (the arithmetic of the next step is float64), but they move on float32's grid,
    which absorbs the last-bit differences between machines instead of letting them grow.

    >>> layer = torch.nn.Linear(1, 1, bias=False).double()
    >>> with torch.no_grad():
    ...     _ = layer.weight.fill_(1 / 3)
    >>> snap_to_float32(layer)
    >>> layer.weight.item() == float(torch.tensor(1 / 3, dtype=torch.float32))
    True
    """
    with torch.no_grad():
        for p in model.parameters():
            if p.dtype == torch.float64:
                p.copy_(p.to(torch.float32))
