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
