"""Chapter 2's results are the package's: its sweep and simulations call ``course_utils``.

The numbers its prose quotes are glued from the executed outputs (``tests/test_glue.py``; nbval
re-computes them). Here the chapter's code cells run in one namespace (the shared runner,
``tests/notebook_runner.py``) and its results are compared with the package's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from course_utils.scaling import saturation_sweep, score_variance

from .notebook_runner import run_notebook_cells

NOTEBOOK = Path(__file__).resolve().parents[1] / "chapters" / "02_scaling.ipynb"


@pytest.fixture(scope="module")
def ns() -> dict[str, Any]:
    return run_notebook_cells(NOTEBOOK)


def test_the_chapter_uses_the_package(ns: dict[str, Any]) -> None:
    seed = ns["SEED"]
    expected = score_variance(ns["d_ks"], ns["n_samples"], np.random.default_rng(seed))
    np.testing.assert_array_equal(ns["var_normal"], expected)
    sweep = saturation_sweep(ns["d_ks"], t_k=8, n_rows=1000, rng=np.random.default_rng(seed + 2))
    for key in sweep.unscaled:
        np.testing.assert_array_equal(ns["sweep"].unscaled[key], sweep.unscaled[key])
        np.testing.assert_array_equal(ns["sweep"].scaled[key], sweep.scaled[key])


def test_widget_and_temperature_identity(ns: dict[str, Any]) -> None:
    np.testing.assert_allclose(ns["scaled_weights"], ns["tempered_weights"], rtol=0, atol=1e-15)
    assert ns["explorer"].d_k == 32
    assert ns["explorer"].data_bytes() < 50_000
