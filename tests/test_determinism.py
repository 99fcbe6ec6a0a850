"""The seeded experiments give the same numbers on every machine: float64 arithmetic, weights on
float32's grid (``course_utils._determinism``), whatever torch's kernel set and thread count.

The slow, complete check is ``tests/test_cross_machine.py`` (every notebook under every setting);
these are the fast ones: the helpers themselves, and one short training run repeated in child
processes under other kernels and thread counts, compared to the last bit.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from course_utils._determinism import deterministic, snap_to_float32


@given(st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_snap_is_float32_rounding_and_idempotent(value):
    layer = torch.nn.Linear(1, 1, bias=False).double()
    with torch.no_grad():
        layer.weight.fill_(value)
    snap_to_float32(layer)
    once = layer.weight.item()
    with np.errstate(over="ignore"):
        assert once == float(np.float32(value)) or (abs(value) > 3.4e38 and np.isinf(once))
    snap_to_float32(layer)
    assert layer.weight.item() == once or np.isnan(once)


def test_deterministic_restores_threads_dtype_and_algorithms():
    threads, algos = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    with pytest.raises(RuntimeError, match="inside"), deterministic():
        assert torch.get_default_dtype() == torch.float64 and torch.get_num_threads() == 1
        raise RuntimeError("inside")
    assert torch.get_default_dtype() == torch.float32
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == (
        threads,
        algos,
    )


@pytest.mark.parametrize("bad", [torch.int64, "float64", None])
def test_deterministic_names_a_bad_dtype(bad):
    with (
        pytest.raises(TypeError, match=r"dtype must be a floating torch\.dtype"),
        deterministic(bad),
    ):
        pass


RUN = """
import hashlib
from course_utils.experiments.counting import train_counting
from course_utils.experiments.neighbours import run_heads_experiment
(r,) = train_counting(seeds=(1,), steps=30, eval_every=10, batch=32)
h = run_heads_experiment((2,), seeds=(0,), steps=30, eval_every=10, batch=16)
weights = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in r.model.parameters()))
print(weights.hexdigest(), [f"{v:.12g}" for v in r.losses + h[0].losses], r.accuracy)
"""


def _run(kernels: str, threads: int) -> str:
    env = dict(os.environ, ATEN_CPU_CAPABILITY=kernels, OMP_NUM_THREADS=str(threads))
    done = subprocess.run(
        [sys.executable, "-c", RUN], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_training_run_is_bit_identical_under_other_kernels_and_threads():
    """The trained weights to the last bit (they live on float32's grid), and the losses measured
    with them (float64 arithmetic, whose last bits do vary) to 12 digits, far beyond the 2 to 4
    that a chapter prints."""
    assert _run("default", 4) == _run("avx2", 1)
