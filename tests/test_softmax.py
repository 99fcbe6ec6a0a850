"""course_utils.softmax against torch.softmax, plus properties and every bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from course_utils.softmax import softmax

TOL = {np.float16: 2e-3, np.float32: 1e-6, np.float64: 1e-12}

CASES = [
    # (shape, axis, temperature, dtype)
    ((5,), -1, 1.0, np.float64),
    ((5,), 0, 0.5, np.float32),
    ((3, 4), -1, 1.0, np.float64),
    ((3, 4), 0, 2.0, np.float64),
    ((3, 4), 1, 0.1, np.float32),
    ((2, 3, 4), -2, 1.0, np.float32),
    ((2, 3, 4), 0, 3.0, np.float64),
    ((2, 3, 4), -3, 1.0, np.float16),
    ((2, 2, 3, 5), -1, 0.7, np.float64),
    ((1, 1), -1, 1.0, np.float64),
]


@pytest.mark.parametrize(("shape", "axis", "temperature", "dtype"), CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_torch_softmax(shape, axis, temperature, dtype, seed):
    x = (np.random.default_rng(seed).normal(size=shape) * 3).astype(dtype)
    ours = softmax(x, axis=axis, temperature=temperature)
    x64 = torch.from_numpy(x.astype(np.float64))
    oracle = torch.softmax(x64 / temperature, dim=axis).numpy()  # computed in float64
    assert ours.dtype == dtype
    assert ours.shape == shape
    np.testing.assert_allclose(ours.astype(np.float64), oracle, rtol=0, atol=TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_torch_in_the_same_dtype(rng, dtype):
    x = rng.normal(size=(4, 6)).astype(dtype) * 10  # (4, 6)
    ours = softmax(x)
    oracle = torch.softmax(torch.from_numpy(x), dim=-1).numpy()
    np.testing.assert_allclose(ours, oracle, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("big", [1e4, -1e4, 3e38])
def test_huge_float32_logits_stay_finite(big):
    x = np.array([[big, big - 1.0, big - 2.0], [0.0, big, -big]], dtype=np.float32)  # (2, 3)
    w = softmax(x)
    assert w.dtype == np.float32
    assert np.isfinite(w).all()
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-6)
    oracle = torch.softmax(torch.from_numpy(x), dim=-1).numpy()
    np.testing.assert_allclose(w, oracle, atol=1e-6)


def test_naive_softmax_would_overflow():
    """The reason for max subtraction: the naive formula really fails on these logits."""
    x = np.array([1e4, 1e4 - 1.0], dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(x) / np.exp(x).sum()
    assert np.isnan(naive).all()
    np.testing.assert_allclose(softmax(x), [0.7310586, 0.2689414], rtol=1e-6)


def test_float16_works():
    x = np.array([[1.0, 2.0, 3.0], [60000.0, 0.0, -60000.0]], dtype=np.float16)  # (2, 3)
    w = softmax(x)
    assert w.dtype == np.float16
    assert np.isfinite(w).all()
    oracle = torch.softmax(torch.from_numpy(x).float(), dim=-1).numpy()
    np.testing.assert_allclose(w.astype(np.float32), oracle, atol=2e-3)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_fully_minus_inf_row_gives_zeros(dtype):
    x = np.array([[0.0, 1.0, -np.inf], [-np.inf, -np.inf, -np.inf]], dtype=dtype)  # (2, 3)
    w = softmax(x)
    np.testing.assert_array_equal(w[1], [0.0, 0.0, 0.0])
    assert w[0, 2] == 0.0  # a single -inf is exactly 0
    np.testing.assert_allclose(w[0].sum(), 1.0, rtol=1e-3)


def test_fully_minus_inf_column_along_axis_0():
    x = np.array([[-np.inf, 1.0], [-np.inf, 2.0]])  # (2, 2)
    w = softmax(x, axis=0)
    np.testing.assert_array_equal(w[:, 0], [0.0, 0.0])
    np.testing.assert_allclose(w[:, 1].sum(), 1.0)


def test_integers_become_float64_and_lists_work():
    w = softmax([[1, 2], [3, 3]])
    assert w.dtype == np.float64
    np.testing.assert_allclose(w[1], [0.5, 0.5])


def test_input_is_not_modified(rng):
    x = rng.normal(size=(3, 3))
    before = x.copy()
    softmax(x, temperature=2.0)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize(
    ("x", "kwargs", "error", "match"),
    [
        ([1.0, np.nan], {}, ValueError, r"x contains NaN \(shape \(2,\)\)"),
        ([1.0, np.inf], {}, ValueError, r"x contains \+inf \(shape \(2,\)\)"),
        (["a", "b"], {}, TypeError, r"x must be a numeric array; got dtype <U1 with shape \(2,\)"),
        ([[1.0], [1.0, 2.0]], {}, TypeError, r"x must be a numeric array; could not convert"),
        ([1 + 2j], {}, TypeError, r"x must be real; got complex dtype complex128"),
        (3.0, {}, ValueError, r"x must have at least 1 dimension; got a scalar \(shape \(\)\)"),
        ([1.0, 2.0], {"axis": 1}, ValueError, r"axis 1 is out of range for x with 1 dimensions"),
        ([[1.0]], {"axis": -3}, ValueError, r"axis -3 is out of range for x with 2 dimensions"),
        (
            [1.0],
            {"temperature": 0.0},
            ValueError,
            r"temperature must be a finite number > 0; got 0",
        ),
        (
            [1.0],
            {"temperature": -1},
            ValueError,
            r"temperature must be a finite number > 0; got -1",
        ),
        ([1.0], {"temperature": np.inf}, ValueError, r"temperature must be a finite number > 0"),
        ([1.0], {"temperature": np.nan}, ValueError, r"temperature must be a finite number > 0"),
        ([1.0], {"temperature": "hot"}, TypeError, r"temperature must be a number; got str"),
        ([1.0], {"temperature": True}, TypeError, r"temperature must be a number; got bool"),
        ([1.0], {"temperature": None}, TypeError, r"temperature must be a number; got NoneType"),
    ],
)
def test_bad_input(x, kwargs, error, match):
    with pytest.raises(error, match=match):
        softmax(x, **kwargs)


# --- properties ----------------------------------------------------------------------------------

finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False, width=64)
matrices = hnp.arrays(
    np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5), elements=finite
)


@given(matrices, st.floats(0.05, 20))
def test_rows_sum_to_one_and_are_in_unit_interval(x, temperature):
    w = softmax(x, temperature=temperature)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12, atol=1e-12)
    assert (w >= 0).all()
    assert (w <= 1).all()


@given(matrices, st.floats(-1e3, 1e3))
def test_shift_invariance(x, c):
    np.testing.assert_allclose(softmax(x + c), softmax(x), atol=1e-12)


@given(matrices, st.data())
def test_minus_inf_entries_get_exactly_zero(x, data):
    blocked = data.draw(hnp.arrays(np.bool_, x.shape))
    z = np.where(blocked, -np.inf, x)
    w = softmax(z)
    assert (w[blocked] == 0).all()
    row_has_any = (~blocked).any(axis=-1)
    np.testing.assert_allclose(w.sum(axis=-1), row_has_any.astype(float), atol=1e-12)


@given(hnp.arrays(np.float64, (4,), elements=finite))
def test_order_is_preserved(x):
    w = softmax(x)
    for i in range(4):
        for j in range(4):
            if x[i] > x[j]:
                assert w[i] >= w[j]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("temperature", [1e-3, 1e-30, 1e-300, 1e30])
def test_extreme_temperatures_stay_finite(dtype, temperature):
    """x / T would overflow for a small T; the max is subtracted first, so nothing does."""
    x = np.array([[1.0, 2.0, 3.0], [5.0, 5.0, -1.0]], dtype=dtype)  # (2, 3)
    w = softmax(x, temperature=temperature)
    assert w.dtype == dtype
    assert np.isfinite(w).all()
    np.testing.assert_allclose(w.sum(axis=-1).astype(np.float64), 1.0, rtol=1e-3)
    if temperature < 1:  # close to argmax (ties share the weight)
        np.testing.assert_allclose(w.astype(np.float64), [[0, 0, 1], [0.5, 0.5, 0]], atol=1e-3)
    else:  # close to uniform
        np.testing.assert_allclose(w.astype(np.float64), np.full((2, 3), 1 / 3), atol=1e-3)
