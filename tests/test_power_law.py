"""``course_utils.power_law``: log–log slopes, checked against exact power laws and scipy."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from course_utils.power_law import PowerLaw, doubling_ratio, fit_power_law


@pytest.mark.parametrize("k, c", [(2.0, 3.0), (1.0, 0.5), (0.5, 7.0), (-1.0, 2.0)])
def test_exact_power_laws_are_recovered(k: float, c: float) -> None:
    x = np.array([16.0, 64.0, 256.0, 1024.0])  # (4,)
    fit = fit_power_law(x, c * x**k)
    assert fit == PowerLaw(pytest.approx(k), pytest.approx(c))


def test_noisy_fit_equals_linear_regression_of_the_logs() -> None:
    rng = np.random.default_rng(0)
    x = np.geomspace(64, 4096, 7)  # (7,)
    y = 2e-9 * x**2 * np.exp(rng.normal(0, 0.1, 7))  # (7,)
    oracle = stats.linregress(np.log10(x), np.log10(y))  # another base, another library
    fit = fit_power_law(x, y)
    assert fit.exponent == pytest.approx(oracle.slope, rel=1e-9)
    assert fit.coefficient == pytest.approx(10**oracle.intercept, rel=1e-9)


def test_accepts_lists_ints_and_tensors() -> None:
    a = fit_power_law([1, 2, 4], [1, 4, 16])
    b = fit_power_law(torch.tensor([1.0, 2.0, 4.0]), np.array([1, 4, 16]))
    assert a == b == PowerLaw(2.0, 1.0)


@pytest.mark.parametrize(
    "x, y, match",
    [
        ([1.0], [1.0], "same length >= 2"),
        ([1.0, 2.0], [1.0, 2.0, 3.0], "same length"),
        ([1.0, -2.0], [1.0, 2.0], "positive"),
        ([1.0, 2.0], [0.0, 2.0], "positive"),
        ([3.0, 3.0], [1.0, 2.0], "two different"),
    ],
)
def test_bad_input_is_rejected_clearly(x, y, match) -> None:
    with pytest.raises(ValueError, match=match):
        fit_power_law(x, y)


def test_doubling_ratio() -> None:
    assert doubling_ratio(2) == 4.0 and doubling_ratio(1) == 2.0 and doubling_ratio(0) == 1.0
    with pytest.raises(ValueError, match="finite"):
        doubling_ratio(float("inf"))
