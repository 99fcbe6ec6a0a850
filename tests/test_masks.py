"""causal_mask against PyTorch's causal attention, for t_k == t_q and t_k != t_q both ways.

Oracles: which keys get a nonzero weight in ``F.scaled_dot_product_attention`` with equal scores
(q = k = 0, v = identity, so the output row *is* the weight row):
- ``is_causal=True`` and ``causal_upper_left`` for ``align="top_left"``;
- ``causal_lower_right`` for ``align="bottom_right"``, and ``tril(diagonal=t_k - t_q)``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right, causal_upper_left

from course_utils.attention import scaled_dot_product_attention
from course_utils.masks import causal_mask

SIZES = [(1, 1), (4, 4), (7, 7), (2, 5), (5, 2), (1, 6), (6, 1), (3, 4), (4, 3)]


def _allowed_by_sdpa(t_q: int, t_k: int, bias=None, is_causal: bool = False) -> np.ndarray:
    q = torch.zeros(t_q, 2, dtype=torch.float64)
    k = torch.zeros(t_k, 2, dtype=torch.float64)
    v = torch.eye(t_k, dtype=torch.float64)  # (T_k, T_k)
    with warnings.catch_warnings():
        # causal_lower_right warns that rows with no key give NaN when t_q > t_k: those queries
        # may attend to nothing, which nan_to_num turns into "no key allowed".
        warnings.filterwarnings("ignore", "Lower right causal bias", UserWarning)
        mask = None if bias is None else bias(t_q, t_k)
        w = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
    w = w.numpy()  # (T_q, T_k)
    return np.nan_to_num(w, nan=0.0) > 0


@pytest.mark.parametrize(("t_q", "t_k"), SIZES)
def test_top_left_matches_torch_is_causal(t_q, t_k):
    ours = causal_mask(t_q, t_k)
    np.testing.assert_array_equal(ours, _allowed_by_sdpa(t_q, t_k, is_causal=True))
    np.testing.assert_array_equal(ours, _allowed_by_sdpa(t_q, t_k, bias=causal_upper_left))


@pytest.mark.parametrize(("t_q", "t_k"), SIZES)
def test_bottom_right_matches_torch_causal_lower_right(t_q, t_k):
    ours = causal_mask(t_q, t_k, align="bottom_right")
    np.testing.assert_array_equal(ours, _allowed_by_sdpa(t_q, t_k, bias=causal_lower_right))
    tril = torch.ones(t_q, t_k, dtype=torch.bool).tril(diagonal=t_k - t_q).numpy()
    np.testing.assert_array_equal(ours, tril)


@pytest.mark.parametrize("t", [1, 2, 4, 9])
def test_square_alignments_agree_and_are_np_tril(t):
    expected = np.tril(np.ones((t, t), dtype=bool))
    np.testing.assert_array_equal(causal_mask(t), expected)
    np.testing.assert_array_equal(causal_mask(t, t, align="bottom_right"), expected)


def test_seed_table_kan_shu_zhen_hao():
    """The seed's ✓/✗ table for 看书真好, row by row."""
    table = ["✓✗✗✗", "✓✓✗✗", "✓✓✓✗", "✓✓✓✓"]
    expected = np.array([[c == "✓" for c in row] for row in table])
    np.testing.assert_array_equal(causal_mask(4), expected)


def test_kv_cache_example_from_the_docstring():
    """3 cached tokens + 2 new queries: the first new query sees 4 keys, the second all 5."""
    m = causal_mask(2, 5, align="bottom_right")
    assert m.sum(axis=1).tolist() == [4, 5]
    assert causal_mask(2, 5).sum(axis=1).tolist() == [1, 2]  # top-left would hide the cache


def test_dtype_and_shape():
    m = causal_mask(3, 5)
    assert m.dtype == np.bool_
    assert m.shape == (3, 5)
    assert causal_mask(np.int64(3)).shape == (3, 3)


def test_top_left_with_more_queries_than_keys_has_no_empty_row():
    assert causal_mask(5, 2).any(axis=1).all()


def test_bottom_right_with_more_queries_than_keys_has_fully_masked_rows_that_attend_to_nothing():
    m = causal_mask(4, 2, align="bottom_right")  # (4, 2)
    assert m.any(axis=1).tolist() == [False, False, True, True]
    rng = np.random.default_rng(0)
    out, w = scaled_dot_product_attention(
        rng.normal(size=(4, 3)), rng.normal(size=(2, 3)), np.ones((2, 2)), m
    )
    np.testing.assert_array_equal(w[:2], 0.0)
    np.testing.assert_array_equal(out[:2], 0.0)


def test_causality_future_keys_never_change_earlier_outputs():
    """Changing token j's key and value changes no output at positions < j."""
    rng = np.random.default_rng(1)
    t, d = 6, 4
    q, k, v = (rng.normal(size=(t, d)) for _ in range(3))
    out, _ = scaled_dot_product_attention(q, k, v, causal_mask(t))
    for j in range(t):
        k2, v2 = k.copy(), v.copy()
        k2[j] += 5.0
        v2[j] -= 3.0
        out2, _ = scaled_dot_product_attention(q, k2, v2, causal_mask(t))
        np.testing.assert_array_equal(out2[:j], out[:j])
        assert not np.allclose(out2[j:], out[j:])  # and the later ones do change


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((0,), {}, ValueError, r"t_q must be >= 1; got 0"),
        ((-2,), {}, ValueError, r"t_q must be >= 1; got -2"),
        ((3, 0), {}, ValueError, r"t_k must be >= 1; got 0"),
        ((2.0,), {}, TypeError, r"t_q must be an int; got float"),
        ((3, "4"), {}, TypeError, r"t_k must be an int; got str"),
        ((True,), {}, TypeError, r"t_q must be an int; got bool"),
        (
            (3,),
            {"align": "bottom-right"},
            ValueError,
            r"align must be 'top_left' or 'bottom_right'",
        ),
    ],
)
def test_bad_input(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        causal_mask(*args, **kwargs)


# --- sizes that cannot fit are refused, bad sizes named (issue 33, §4) ----------------------------


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: causal_mask(10**6),
            ValueError,
            r"^causal_mask\(t_q=1000000, t_k=1000000\) would build a result of shape "
            r"\(1000000, 1000000\) and need about 1,000,000,000,000 bytes \(931\.3 GiB\)",
        ),
        (lambda: causal_mask(2, 10**12), ValueError, r"^causal_mask\(t_q=2, t_k=1000000000000\)"),
        (lambda: causal_mask(0), ValueError, r"^t_q must be >= 1; got 0"),
        (lambda: causal_mask(-4), ValueError, r"^t_q must be >= 1; got -4"),
        (lambda: causal_mask(3.0), TypeError, r"^t_q must be an int; got float"),
        (lambda: causal_mask(True), TypeError, r"^t_q must be an int; got bool"),
        (lambda: causal_mask(3, "4"), TypeError, r"^t_k must be an int; got str"),
    ],
)
def test_bad_and_huge_sizes_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_key_padding_mask_refuses_a_huge_length():
    from course_utils.masks import key_padding_mask

    with pytest.raises(ValueError, match=r"^key_padding_mask\(lengths, t_k=1000000000000\)"):
        key_padding_mask([10**12])
