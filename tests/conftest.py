"""Shared pytest configuration: a seeded RNG fixture, hypothesis profiles and matplotlib hygiene.

Hypothesis profiles (choose with ``HYPOTHESIS_PROFILE=thorough``):

- ``default``: 50 examples per property, no deadline (the machine is shared by several processes, so
  wall-clock deadlines would make tests flaky), derandomized so that a run is reproducible;
- ``thorough``: 500 examples, for an occasional deeper run.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

os.environ.setdefault("MPLBACKEND", "Agg")

if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
    # One torch thread per xdist worker (make test-unit runs 2 workers on 2 cores, beside the book
    # build): more only fight over the cores, and torch's OpenMP threads spin while they wait
    # (measured on 2 cores with one other busy process: the torch-heavy tests took 22 % less CPU
    # time, 70 s instead of 84 s). Outputs do not depend on it: tests/test_cross_machine.py runs the
    # notebooks and the prose-number tests with 1, 2 and 4 threads. Notebook kernels the tests
    # start inherit the variable. A thread count set by the caller is left alone.
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh generator with a fixed seed, so every test sees the same numbers on every run."""
    return np.random.default_rng(20240601)


@pytest.fixture
def close_figures():
    """Close every pyplot figure a test opened (else 'more than 20 figures' warns, an error)."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")
