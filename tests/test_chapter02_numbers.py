"""Chapter 2 quotes numbers in its prose and alt texts; they must be what the code measures.

The chapter's code cells run in one namespace (magics dropped, Agg backend, widgets without a
kernel); the numbers the text quotes are recomputed from that namespace and checked here, so that
editing the simulation (seed, grid, sample sizes) without updating the text fails this test.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib
import nbformat
import numpy as np
import pytest

from course_utils.saturation import softmax_entropy, softmax_jacobian_norm
from course_utils.scaling import saturation_sweep, score_variance
from course_utils.softmax import softmax

NOTEBOOK = Path(__file__).resolve().parents[1] / "chapters" / "02_scaling.ipynb"


@pytest.fixture(scope="module")
def ns() -> dict[str, Any]:
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nb = nbformat.read(NOTEBOOK, as_version=4)
    namespace: dict[str, Any] = {"__name__": "chapter02"}
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        source = "\n".join(ln for ln in cell.source.splitlines() if not ln.lstrip().startswith("%"))
        exec(compile(source, f"{NOTEBOOK.name}:{cell.id}", "exec"), namespace)
    plt.close("all")
    return namespace


def test_the_chapter_uses_the_package(ns: dict[str, Any]) -> None:
    seed = ns["SEED"]
    expected = score_variance(ns["d_ks"], ns["n_samples"], np.random.default_rng(seed))
    np.testing.assert_array_equal(ns["var_normal"], expected)
    sweep = saturation_sweep(ns["d_ks"], t_k=8, n_rows=1000, rng=np.random.default_rng(seed + 2))
    for key in sweep.unscaled:
        np.testing.assert_array_equal(ns["sweep"].unscaled[key], sweep.unscaled[key])
        np.testing.assert_array_equal(ns["sweep"].scaled[key], sweep.scaled[key])


def test_first_look_numbers(ns: dict[str, Any]) -> None:
    rng = np.random.default_rng(ns["SEED"])
    q = rng.standard_normal(512)  # (512,)
    K = rng.standard_normal((6, 512))  # (6, 512)
    w = softmax(K @ q).round(3)  # (6,)
    assert w.max() == 0.992  # "puts 0.992 of its weight on one key"
    assert int(np.sum(w == 0.0)) == 4  # "four of the six keys get 0.000"


def test_variance_table_numbers(ns: dict[str, Any]) -> None:
    ratios = np.r_[ns["var_normal"], ns["var_uniform"]] / np.r_[ns["d_ks"], ns["d_ks"]]
    assert np.all(np.abs(ratios - 1) < 0.03)  # "within a few percent", "deviations of 1-3 %"
    assert round(math.sqrt(2 / ns["n_samples"]), 2) == 0.01  # "roughly 1 %"


def test_jacobian_demo_numbers(ns: dict[str, Any]) -> None:
    flat = softmax(np.array([1.0, 0.5, -0.3, 0.2]))
    sharp = softmax(np.array([6.0, 0.5, -0.3, 0.2]))
    assert round(float(sharp[0]), 3) == 0.991
    assert round(float(softmax_entropy(flat)), 2) == 1.28
    assert round(float(softmax_entropy(sharp)), 2) == 0.06
    assert round(float(softmax_jacobian_norm(flat)), 2) == 0.43
    assert round(float(softmax_jacobian_norm(sharp)), 3) == 0.013
    assert softmax_jacobian_norm(flat) / softmax_jacobian_norm(sharp) > 30  # "more than thirty"


def test_saturation_numbers_in_text_and_alt(ns: dict[str, Any]) -> None:
    un, sc, d_ks = ns["sweep"].unscaled, ns["sweep"].scaled, list(ns["sweep"].d_ks)
    assert round(un["max_weight"][0], 1) == 0.3 and round(un["max_weight"][-1], 2) == 0.97
    assert round(un["entropy"][0], 1) == 1.8 and un["entropy"][-1] < 0.1
    assert round(un["entropy"][-1], 2) == 0.07  # alt text
    assert 7.5 < un["jacobian_norm"][0] / un["jacobian_norm"][-1] < 9.5  # "about eight"
    assert round(un["jacobian_norm"][0], 2) == 0.35 and round(un["jacobian_norm"][-1], 2) == 0.04
    assert round(un["max_weight"][d_ks.index(64)], 2) == 0.88
    from_4 = slice(d_ks.index(4), None)
    assert np.all(np.abs(sc["max_weight"][from_4] - 0.36) < 0.015)
    assert np.all(np.abs(sc["entropy"][from_4] - 1.7) < 0.05)
    assert np.all(np.abs(sc["jacobian_norm"][from_4] - 0.37) < 0.015)
    for key in un:  # d_k = 1: both columns identical
        assert un[key][0] == sc[key][0]


def test_exercise_2_3_numbers(ns: dict[str, Any]) -> None:
    sw = saturation_sweep(ns["d_ks"], t_k=8, n_rows=500, rng=np.random.default_rng(0))
    i = list(sw.d_ks).index(128)
    assert round(sw.unscaled["max_weight"][i], 3) == 0.903
    assert round(sw.unscaled["max_weight"][i - 1], 3) == 0.877


def test_widget_and_temperature_identity(ns: dict[str, Any]) -> None:
    np.testing.assert_allclose(ns["scaled_weights"], ns["tempered_weights"], rtol=0, atol=1e-15)
    assert ns["explorer"].d_k == 32
    assert ns["explorer"].data_bytes() < 50_000
