"""course_utils.scaling: Var(q·k) = d_k, and softmax saturation with and without 1/√d_k.

Oracles: the closed form Var(q·k) = d_k (Vaswani et al., 2017, footnote 4), checked with a
statistical tolerance; torch.softmax and torch.autograd for the saturation measures; the closed
forms for a uniform row.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from course_utils.scaling import (
    SaturationStats,
    sample_scores,
    saturation_stats,
    saturation_sweep,
    score_variance,
)

D_KS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


@pytest.mark.parametrize("distribution", ["normal", "uniform"])
@pytest.mark.parametrize("seed", [0, 1])
def test_score_variance_matches_d_k(distribution: str, seed: int) -> None:
    n = 20_000
    measured = score_variance(D_KS, n, np.random.default_rng(seed), distribution=distribution)
    # The sample variance of n draws has relative standard error about sqrt(2/n) (≈ 1 %) for a
    # normal sum; 6 standard errors leave no room for a wrong formula (d_k/2 or 2 d_k: off by 50 %).
    rel_error = np.abs(measured / np.array(D_KS) - 1.0)
    assert np.all(rel_error < 6 * math.sqrt(2 / n) * 1.5), rel_error.round(3)


def test_unscaled_variance_is_not_one() -> None:
    """The test above can fail: after scaling the variance is 1, not d_k."""
    rng = np.random.default_rng(0)
    scores = sample_scores(256, 8, 2_000, rng)  # (2000, 8)
    assert scores.var() > 200
    assert (scores / math.sqrt(256)).var() == pytest.approx(1.0, rel=0.1)


def test_sample_scores_is_a_dot_product_of_fresh_draws() -> None:
    """Reproduce sample_scores' draws by hand and compare (same generator, same order)."""
    d_k, t_k, n_rows = 5, 3, 4
    got = sample_scores(d_k, t_k, n_rows, np.random.default_rng(7))  # (4, 3)
    rng = np.random.default_rng(7)
    q = rng.standard_normal((n_rows, 1, d_k))  # (4, 1, 5)
    k = rng.standard_normal((n_rows, t_k, d_k))  # (4, 3, 5)
    expected = np.einsum("nd,ntd->nt", q[:, 0], k)  # (4, 3)
    np.testing.assert_allclose(got, expected)


def test_same_seed_same_result_different_seed_different_result() -> None:
    a = saturation_sweep([4, 64], n_rows=50, rng=np.random.default_rng(1))
    b = saturation_sweep([4, 64], n_rows=50, rng=np.random.default_rng(1))
    c = saturation_sweep([4, 64], n_rows=50, rng=np.random.default_rng(2))
    np.testing.assert_array_equal(a.unscaled["entropy"], b.unscaled["entropy"])
    assert not np.array_equal(a.unscaled["entropy"], c.unscaled["entropy"])


@pytest.mark.parametrize("scale", [1.0, 0.125, 3.0])
def test_saturation_stats_match_torch(scale: float) -> None:
    scores = np.random.default_rng(5).normal(scale=4.0, size=(30, 6))  # (30, 6)
    stats = saturation_stats(scores, scale=scale)
    z = torch.tensor(scores * scale)  # (30, 6)
    p = torch.softmax(z, dim=-1)  # (30, 6)
    entropy = -(p * torch.log(p)).sum(-1)  # (30,)
    norms = [
        torch.linalg.norm(torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), row))
        for row in z
    ]
    assert stats.max_weight == pytest.approx(p.max(-1).values.mean().item(), abs=1e-12)
    assert stats.entropy == pytest.approx(entropy.mean().item(), abs=1e-12)
    assert stats.jacobian_norm == pytest.approx(torch.stack(norms).mean().item(), abs=1e-12)


def test_saturation_stats_of_equal_scores_is_uniform() -> None:
    stats = saturation_stats(np.full((3, 8), 2.5))
    assert stats == SaturationStats(
        max_weight=pytest.approx(1 / 8),
        entropy=pytest.approx(math.log(8)),
        jacobian_norm=pytest.approx(math.sqrt(7) / 8),
    )


def test_sweep_shows_saturation_without_scaling_only() -> None:
    """The chapter's claim, measured: unscaled softmax saturates as d_k grows, scaled does not."""
    sweep = saturation_sweep(D_KS, t_k=8, n_rows=400, rng=np.random.default_rng(0))
    un, sc = sweep.unscaled, sweep.scaled
    for key in ("max_weight", "entropy", "jacobian_norm"):
        assert un[key].shape == sc[key].shape == (len(D_KS),)
    # d_k = 1: scaling is the identity, so both columns are equal.
    for key in un:
        assert un[key][0] == sc[key][0]
    # Without scaling: largest weight -> 1, entropy -> 0, gradient norm -> 0.
    assert un["max_weight"][-1] > 0.9 and un["entropy"][-1] < 0.2
    assert un["jacobian_norm"][-1] < 0.25 * un["jacobian_norm"][0]
    assert np.all(np.diff(un["max_weight"]) > -0.02)  # (almost) monotone up
    # With scaling: flat across three orders of magnitude of d_k.
    assert np.ptp(sc["max_weight"][2:]) < 0.05
    assert np.ptp(sc["entropy"][2:]) < 0.1
    assert np.ptp(sc["jacobian_norm"][2:]) < 0.05
    np.testing.assert_allclose(sweep.score_variance / sweep.d_ks, 1.0, atol=0.15)


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda r: sample_scores(0, 8, 10, r), ValueError, r"d_k must be >= 1; got 0"),
        (lambda r: sample_scores(4.0, 8, 10, r), TypeError, r"d_k must be an int; got float"),
        (lambda r: sample_scores(4, 8, 10, 0), TypeError, r"rng must be a numpy.random.Generator"),
        (lambda r: sample_scores(4, 8, 10, r, distribution="cauchy"), ValueError, r"'cauchy'"),
        (lambda r: score_variance([], 10, r), ValueError, r"d_ks must contain"),
        (lambda r: score_variance([4, -1], 10, r), ValueError, r"each entry of d_ks"),
        (lambda r: score_variance([4], 1, r), ValueError, r"n_samples must be >= 2"),
        (lambda r: saturation_sweep([4], t_k=1, rng=r), ValueError, r"t_k must be >= 2"),
        (lambda r: saturation_stats(np.zeros(4)), ValueError, r"\(n_rows, T_k\); got shape \(4,\)"),
    ],
)
def test_bad_input(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call(np.random.default_rng(0))


@settings(max_examples=40, deadline=None)
@given(
    arrays(
        np.float64, st.tuples(st.integers(2, 6), st.integers(2, 10)), elements=st.floats(-30, 30)
    ),
    st.floats(-100, 100),
    st.floats(0.05, 5.0),
)
def test_saturation_stats_properties(scores: np.ndarray, shift: float, scale: float) -> None:
    """Shift invariance (only score differences matter) and the bounds of each measure."""
    t_k = scores.shape[1]
    base = saturation_stats(scores, scale=scale)
    shifted = saturation_stats(scores + shift / scale, scale=scale)
    assert shifted.max_weight == pytest.approx(base.max_weight, abs=1e-9)
    assert shifted.entropy == pytest.approx(base.entropy, abs=1e-8)
    assert shifted.jacobian_norm == pytest.approx(base.jacobian_norm, abs=1e-9)
    assert 1 / t_k - 1e-12 <= base.max_weight <= 1 + 1e-12
    assert -1e-12 <= base.entropy <= math.log(t_k) + 1e-12
    assert 0 <= base.jacobian_norm < 1
