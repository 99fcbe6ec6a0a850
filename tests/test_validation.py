"""The shared input checks: what they accept, how they convert, the message for each bad input."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils._validation import (
    as_bool_array,
    as_float_array,
    check_count,
    check_float_tensor,
    check_mask_shape,
    check_positive_finite,
    check_qkv_shapes,
    shape_str,
)


@pytest.mark.parametrize(
    ("shape", "text"),
    [((), "()"), ((4,), "(4,)"), ((2, 3), "(2, 3)"), (("...", "T_q", 4), "(..., T_q, 4)")],
)
def test_shape_str_prints_like_numpy(shape, text):
    assert shape_str(shape) == text
    if all(isinstance(s, int) for s in shape):
        assert text == str(tuple(shape))  # the same as numpy/python


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        ([[1, 2]], np.float64),
        ([[True, False]], np.float64),
        (np.ones((2, 2), dtype=np.int8), np.float64),
        (np.ones((2, 2), dtype=np.float16), np.float16),
        (np.ones((2, 2), dtype=np.float32), np.float32),
        (np.ones((2, 2), dtype=np.float64), np.float64),
    ],
)
def test_as_float_array_dtypes(value, dtype):
    arr = as_float_array(value, "x")
    assert arr.dtype == dtype
    np.testing.assert_array_equal(arr, np.asarray(value, dtype=dtype))


def test_as_float_array_accepts_minus_inf_and_torch_tensors():
    import torch

    arr = as_float_array([0.0, -np.inf], "scores")
    assert arr[1] == -np.inf
    t = as_float_array(torch.ones(2, 3), "q", min_ndim=2)
    assert t.shape == (2, 3) and t.dtype == np.float32


@pytest.mark.parametrize(
    ("value", "kwargs", "error", "match"),
    [
        (
            np.ones(3),
            {"min_ndim": 2},
            ValueError,
            r"^x must have at least 2 dimensions; got shape \(3,\)$",
        ),
        (
            np.ones(3),
            {"min_ndim": 2, "expected": "(..., T_q, d_k)"},
            ValueError,
            r"^x must have at least 2 dimensions \(\.\.\., T_q, d_k\); got shape \(3,\)$",
        ),
        ([1.0, np.nan], {}, ValueError, r"^x contains NaN \(shape \(2,\)\)$"),
        ([[np.inf]], {}, ValueError, r"^x contains \+inf \(shape \(1, 1\)\); use finite values$"),
        (
            ["1", "2"],
            {},
            TypeError,
            r"^x must be a numeric array; got dtype <U1 with shape \(2,\)$",
        ),
        ([None], {}, TypeError, r"^x must be a numeric array; got dtype object with shape \(1,\)$"),
        ([[1, 2], [3]], {}, TypeError, r"^x must be a numeric array; could not convert it"),
        ([1j], {}, TypeError, r"^x must be real; got complex dtype complex128$"),
        (
            np.array(["2024-01-01"], dtype="datetime64[D]"),
            {},
            TypeError,
            r"x must be a numeric array",
        ),
    ],
)
def test_as_float_array_errors(value, kwargs, error, match):
    with pytest.raises(error, match=match):
        as_float_array(value, "x", **kwargs)


def test_as_float_array_names_the_argument():
    with pytest.raises(ValueError, match=r"^keys contains NaN"):
        as_float_array([np.nan], "keys")


def test_as_bool_array():
    m = as_bool_array([[True, False]], "mask")
    assert m.dtype == np.bool_
    for bad, dtype in [([[1, 0]], "int64"), ([[1.0, 0.0]], "float64"), (["yes"], "<U3")]:
        with pytest.raises(
            TypeError,
            match=rf"^mask must be a boolean array \(True = may attend\); got dtype {dtype}",
        ):
            as_bool_array(bad, "mask")


@pytest.mark.parametrize("value", [1, 0.5, np.float32(2.0), np.int64(3), 1e-300])
def test_check_positive_finite_accepts(value):
    assert check_positive_finite(value, "temperature") == float(value)


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (0, ValueError, r"^temperature must be a finite number > 0; got 0.0$"),
        (-0.5, ValueError, r"^temperature must be a finite number > 0; got -0.5$"),
        (float("inf"), ValueError, r"got inf$"),
        (float("nan"), ValueError, r"got nan$"),
        ("1", TypeError, r"^temperature must be a number; got str$"),
        (True, TypeError, r"^temperature must be a number; got bool$"),
        (None, TypeError, r"^temperature must be a number; got NoneType$"),
        (np.array([1.0]), TypeError, r"^temperature must be a number; got ndarray$"),
    ],
)
def test_check_positive_finite_rejects(value, error, match):
    with pytest.raises(error, match=match):
        check_positive_finite(value, "temperature")


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (True, TypeError, "n_heads must be an int; got bool True"),
        (2.0, TypeError, "n_heads must be an int; got float 2.0"),
        (0, ValueError, "n_heads must be an int >= 1; got 0"),
    ],
)
def test_check_count_rejects(value, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        check_count(value, "n_heads")


def test_check_count_accepts_its_lower_bound():
    assert check_count(0, "seq_len", low=0) == 0
    assert check_count(7, "seq_len") == 7


def test_check_float_tensor_accepts_and_converts():
    import torch

    x = torch.zeros(2, 3, 4)
    assert check_float_tensor(x, "query", "(B, T_q, d_model)", ndim=3) is x
    arr = np.ones((2, 3), dtype=np.float32)
    t = check_float_tensor(arr, "q", "(..., T_q, d)", min_ndim=2, numpy_ok=True)
    assert isinstance(t, torch.Tensor) and np.shares_memory(t.numpy(), arr)


@pytest.mark.parametrize(
    ("make", "kwargs", "error", "message"),
    [
        (lambda t: [1.0], {}, TypeError, "q must be a torch.Tensor of shape (T, d); got list"),
        (
            lambda t: np.ones(2),
            {},
            TypeError,
            "q must be a torch.Tensor of shape (T, d); got ndarray",  # numpy only with numpy_ok
        ),
        (
            lambda t: t.zeros(2, dtype=t.int64),
            {},
            TypeError,
            "q must be a floating-point tensor of shape (T, d); got dtype torch.int64 "
            "with shape (2,)",
        ),
        (
            lambda t: t.zeros(2, dtype=t.float64),
            {"dtypes": ("float32",)},
            TypeError,
            "q must be a floating-point tensor of shape (T, d); got dtype torch.float64",
        ),
        (
            lambda t: t.zeros(2),
            {"ndim": 3},
            ValueError,
            "q must have 3 dimensions (T, d); got shape (2,)",
        ),
        (
            lambda t: t.zeros(2),
            {"min_ndim": 2},
            ValueError,
            "q must have at least 2 dimensions (T, d); got shape (2,)",
        ),
    ],
)
def test_check_float_tensor_rejects(make, kwargs, error, message):
    import torch

    if kwargs.get("dtypes") == ("float32",):
        kwargs = {"dtypes": (torch.float32,)}
    with pytest.raises(error) as info:
        check_float_tensor(make(torch), "q", "(T, d)", **kwargs)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("q", "k", "v", "d_k_t_k"),
    [
        ((3, 4), (5, 4), (5, 2), (4, 5)),
        ((2, 3, 4), (2, 1, 4), None, (4, 1)),
        ((8, 1, 1), (1, 7, 1), (8, 7, 9), (1, 7)),  # batch dimensions are the caller's rule
    ],
)
def test_check_qkv_shapes_accepts(q, k, v, d_k_t_k):
    assert check_qkv_shapes(q, k, v) == d_k_t_k


@pytest.mark.parametrize(
    ("q", "k", "v", "message"),
    [
        ((3, 0), (5, 0), None, "q has shape (3, 0), expected (..., T_q, d_k) with d_k >= 1"),
        (
            (3, 4),
            (5, 3),
            None,
            "k has shape (5, 3), expected (..., T_k, 4): its last dimension must equal d_k = 4, "
            "the last dimension of q (3, 4)",
        ),
        ((3, 4), (0, 4), None, "k has shape (0, 4), expected (..., T_k, 4) with T_k >= 1"),
        (
            (3, 4),
            (5, 4),
            (6, 2),
            "v has shape (6, 2), expected (..., 5, d_v): v needs one row per key, "
            "and k (5, 4) has T_k = 5",
        ),
    ],
)
def test_check_qkv_shapes_rejects(q, k, v, message):
    with pytest.raises(ValueError) as info:
        check_qkv_shapes(q, k, v)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("mask", "expected", "fits"),
    [
        ((3, 4), (3, 4), True),
        ((1, 4), (2, 3, 4), True),
        ((4,), (3, 4), True),
        ((2, 3, 4), (3, 4), False),  # would enlarge the scores: never a silent broadcast
        ((3, 5), (3, 4), False),
    ],
)
def test_check_mask_shape(mask, expected, fits):
    if fits:
        check_mask_shape(mask, expected)
        return
    with pytest.raises(ValueError, match=r"^mask has shape .* without enlarging it$"):
        check_mask_shape(mask, expected)


def test_one_integer_check_in_the_package() -> None:
    """Every count, length, seed and index is checked by ``_validation.check_int`` (one message
    everywhere): no module keeps a private copy of it. An ``axis`` (negative values count from
    the end) has its own check."""
    import re
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "src" / "course_utils"
    copies = [
        p.relative_to(package).as_posix()
        for p in package.rglob("*.py")
        if p.name != "_validation.py"
        and re.search(
            r"not isinstance\((?!axis\b)\w+, int \| np\.integer\)", p.read_text(encoding="utf-8")
        )
    ]
    assert not copies, f"private integer checks beside _validation.check_int: {copies}"


# --- one home for bools, allocation sizes and module dtypes (issue 33, §4) ------------------------


def test_check_bool_accepts_bools_only():
    from course_utils._validation import check_bool

    assert check_bool(True, "flag") is True
    assert check_bool(np.False_, "flag") is False
    for bad in ("yes", 1, 0, None, 1.0):
        with pytest.raises(TypeError, match=r"^flag must be True or False; got"):
            check_bool(bad, "flag")


def test_check_alloc_refuses_beyond_the_limit_and_gives_the_bytes():
    from course_utils._validation import ALLOC_CAP_BYTES, check_alloc, max_alloc_bytes

    assert 0 < max_alloc_bytes() <= ALLOC_CAP_BYTES
    check_alloc((1000, 1000), 8, "small")  # 8 MB: fine
    with pytest.raises(ValueError, match=r"^big\(\) would .* \(100000, 100000\) .*80,000,000,000"):
        check_alloc((100_000, 100_000), 8, "big()")


def test_check_module_dtype_names_both_dtypes_and_the_fix():
    import torch

    from course_utils._validation import check_module_dtype

    x = torch.zeros(1, 2, 4, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"^x has dtype torch.float64, expected torch.float32.*"
                       r"\.double\(\) or x with \.to\(torch.float32\)"):  # fmt: skip
        check_module_dtype(x, "x", torch.float32, "(B, T, d)")
    check_module_dtype(x, "x", torch.float64, "(B, T, d)")
