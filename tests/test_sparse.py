"""course_utils.sparse: every mask against its defining inequalities and an independent
construction, and sliding_window_attention against torch's scaled_dot_product_attention.

Oracles:
- masks: ``torch.tril``/``torch.triu`` bands (written independently of our index arithmetic), the
  Sparse Transformer's set definition (Child et al. 2019, section 4.3) as Python sets, and
  hypothesis properties checking the inequalities that define each pattern entry by entry;
- attention: ``torch.nn.functional.scaled_dot_product_attention`` with the boolean band mask, and
  a dispatch mode that records every tensor the function creates (none may be ``T × T``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from course_utils.sparse import (
    bigbird_mask,
    block_layout,
    block_sparse_mask,
    dense_score_bytes,
    density,
    dilated_window_mask,
    global_mask,
    largest_tensor_bytes,
    layers_to_reach_all,
    pattern_cost,
    random_mask,
    reach,
    sliding_window_attention,
    sliding_window_mask,
    strided_mask,
    window_layers_needed,
)

# --------------------------------------------------------------------------------------------
# Masks: small cases written out, and independent constructions
# --------------------------------------------------------------------------------------------

TABLE = [
    (
        sliding_window_mask(4, window=2),
        [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]],
    ),
    (
        sliding_window_mask(4, window=2, causal=False),
        [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]],
    ),
    (sliding_window_mask(2, 4, window=2), [[1, 0, 0, 0], [1, 1, 0, 0]]),
    (sliding_window_mask(2, 4, window=2, align="bottom_right"), [[0, 1, 1, 0], [0, 0, 1, 1]]),
    (sliding_window_mask(3, window=9), [[1, 0, 0], [1, 1, 0], [1, 1, 1]]),
    (
        strided_mask(5, stride=2),
        [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [0, 1, 1, 1, 0], [1, 0, 1, 1, 1]],
    ),
    (
        dilated_window_mask(5, window=2, dilation=2, causal=False),
        [[1, 0, 1, 0, 0], [0, 1, 0, 1, 0], [1, 0, 1, 0, 1], [0, 1, 0, 1, 0], [0, 0, 1, 0, 1]],
    ),
    (global_mask(3, [2]), [[0, 0, 1], [0, 0, 1], [1, 1, 1]]),
    (global_mask(3, []), [[0, 0, 0], [0, 0, 0], [0, 0, 0]]),
    (block_sparse_mask(np.array(1) == [[1, 0], [1, 1]], 2, t=3), [[1, 1, 0], [1, 1, 0], [1, 1, 1]]),
]


@pytest.mark.parametrize(("mask", "expected"), TABLE)
def test_small_masks_written_out(mask, expected):
    assert mask.dtype == np.bool_
    np.testing.assert_array_equal(mask.astype(int), np.array(expected))


SIZES = [(1, 1, 1), (5, 5, 1), (5, 5, 2), (7, 7, 3), (6, 6, 10), (3, 8, 2), (8, 3, 2), (4, 9, 5)]


@pytest.mark.parametrize(("t_q", "t_k", "w"), SIZES)
@pytest.mark.parametrize("align", ["top_left", "bottom_right"])
def test_sliding_window_equals_a_torch_tril_band(t_q, t_k, w, align):
    ones = torch.ones(t_q, t_k, dtype=torch.bool)
    d = 0 if align == "top_left" else t_k - t_q  # the diagonal of query i is key i + d
    causal = ones.tril(d) & ~ones.tril(d - w)
    two_sided = ones.tril(d + w - 1) & ones.triu(d - w + 1)
    got = sliding_window_mask(t_q, t_k, window=w, align=align)
    np.testing.assert_array_equal(got, causal.numpy())
    got = sliding_window_mask(t_q, t_k, window=w, causal=False, align=align)
    np.testing.assert_array_equal(got, two_sided.numpy())


def test_bottom_right_window_is_the_last_rows_of_the_square_window():
    # 3 new queries after 5 cached tokens see what rows 5..7 of the full 8 x 8 window see.
    full = sliding_window_mask(8, window=3)
    np.testing.assert_array_equal(
        sliding_window_mask(3, 8, window=3, align="bottom_right"), full[5:]
    )


@pytest.mark.parametrize(("t", "stride"), [(1, 1), (9, 3), (16, 4), (10, 3), (7, 1), (5, 8)])
def test_strided_is_the_sparse_transformer_sets(t, stride):
    # Child et al. (2019), 4.2: A1 = {max(0, i - l), ..., i}, A2 = {j : (i - j) mod l = 0}, j <= i
    expected = np.zeros((t, t), dtype=bool)
    for i in range(t):
        a1 = set(range(max(0, i - stride), i + 1))
        a2 = {j for j in range(i + 1) if (i - j) % stride == 0}
        expected[i, sorted(a1 | a2)] = True
    np.testing.assert_array_equal(strided_mask(t, stride=stride), expected)


def test_dilation_one_is_the_sliding_window():
    for causal in (True, False):
        np.testing.assert_array_equal(
            dilated_window_mask(9, window=3, dilation=1, causal=causal),
            sliding_window_mask(9, window=3, causal=causal),
        )


# --------------------------------------------------------------------------------------------
# Masks: the defining inequalities, entry by entry (hypothesis)
# --------------------------------------------------------------------------------------------

small = st.integers(1, 24)


@given(t_q=small, t_k=small, w=small, causal=st.booleans(), bottom=st.booleans())
def test_sliding_window_inequalities(t_q, t_k, w, causal, bottom):
    align = "bottom_right" if bottom else "top_left"
    m = sliding_window_mask(t_q, t_k, window=w, causal=causal, align=align)
    assert m.shape == (t_q, t_k)
    shift = t_k - t_q if bottom else 0
    for i in range(t_q):
        for j in range(t_k):
            p = i + shift  # the query's position among the keys
            want = (p - w < j <= p) if causal else abs(p - j) < w
            assert m[i, j] == want, (i, j)


@given(t=small, s=small, causal=st.booleans())
def test_strided_inequalities(t, s, causal):
    m = strided_mask(t, stride=s, causal=causal)
    for i in range(t):
        for j in range(t):
            dist = i - j if causal else abs(i - j)
            assert m[i, j] == (dist >= 0 and (dist < s or dist % s == 0)), (i, j)


@given(t=small, w=st.integers(1, 6), dil=st.integers(1, 6), causal=st.booleans())
def test_dilated_inequalities(t, w, dil, causal):
    m = dilated_window_mask(t, window=w, dilation=dil, causal=causal)
    for i in range(t):
        for j in range(t):
            dist = i - j if causal else abs(i - j)
            assert m[i, j] == (0 <= dist < w * dil and dist % dil == 0), (i, j)


@given(t=small, data=st.data())
def test_global_rows_and_columns(t, data):
    pos = data.draw(st.lists(st.integers(0, t - 1), max_size=4))
    m = global_mask(t, pos)
    for i in range(t):
        for j in range(t):
            assert m[i, j] == (i in pos or j in pos)


@given(t=small, r=st.integers(0, 30), seed=st.integers(0, 2**31))
def test_random_mask_rows_and_seed(t, r, seed):
    m = random_mask(t, n_random=r, seed=seed)
    assert m.shape == (t, t)
    assert (m.sum(axis=1) == min(r, t)).all()
    np.testing.assert_array_equal(m, random_mask(t, n_random=r, seed=seed))


def test_random_mask_depends_on_the_seed():
    assert (random_mask(32, n_random=3, seed=0) != random_mask(32, n_random=3, seed=1)).any()


@given(t=small, w=small, g=st.integers(0, 4), r=st.integers(0, 4), seed=st.integers(0, 99))
def test_bigbird_is_window_or_global_or_random(t, w, g, r, seed):
    g = min(g, t)
    m = bigbird_mask(t, window=w, n_global=g, n_random=r, seed=seed)
    parts = (
        sliding_window_mask(t, window=w, causal=False)
        | global_mask(t, range(g))
        | random_mask(t, n_random=r, seed=seed)
    )
    np.testing.assert_array_equal(m, parts)
    assert m.diagonal().all()  # the window always holds the token itself


@given(t=small, w=small, b=st.integers(1, 8))
def test_block_layout_covers_the_mask(t, w, b):
    m = sliding_window_mask(t, window=w)
    lay = block_layout(m, b)
    assert lay.shape == (-(-t // b), -(-t // b))
    covered = block_sparse_mask(lay, b, t=t)
    assert (covered | m == covered).all()  # every allowed pair sits in a computed tile
    assert density(covered) >= density(m)


@given(t_q=small, t_k=small, w=small)
def test_density_is_the_fraction_of_true(t_q, t_k, w):
    m = sliding_window_mask(t_q, t_k, window=w)
    assert density(m) == pytest.approx(m.sum() / (t_q * t_k))
    assert 0 <= density(m) <= 1


def test_density_of_a_long_causal_window():
    # T = 4096, w = 256: (w (w + 1) / 2 + (T - w) w) / T² ~ 6%
    t, w = 4096, 256
    want = (w * (w + 1) / 2 + (t - w) * w) / t**2
    assert density(sliding_window_mask(t, window=w)) == pytest.approx(want)


BAD_MASK_CALLS = [
    (lambda: sliding_window_mask(0, window=2), ValueError, "t_q must be >= 1; got 0"),
    (lambda: sliding_window_mask(4, 0, window=2), ValueError, "t_k must be >= 1"),
    (lambda: sliding_window_mask(4, window=0), ValueError, "window must be >= 1; got 0"),
    (lambda: sliding_window_mask(4, window=2.0), TypeError, "window must be an int; got float 2.0"),
    (lambda: sliding_window_mask(4, window=True), TypeError, "window must be an int"),
    (lambda: sliding_window_mask(4, window=2, align="left"), ValueError, "align must be"),
    (lambda: strided_mask(4, stride=0), ValueError, "stride must be >= 1"),
    (lambda: dilated_window_mask(4, window=2, dilation=0), ValueError, "dilation must be"),
    (lambda: global_mask(4, [4]), ValueError, r"global_positions must be in \[0, 3\]"),
    (lambda: global_mask(4, 0), TypeError, "global_positions must be a list"),
    (lambda: global_mask(4, [0.5]), TypeError, "global_positions must be a 1-D list of int"),
    (lambda: random_mask(4, n_random=-1, seed=0), ValueError, "n_random must be >= 0"),
    (lambda: random_mask(4, n_random=1, seed=None), TypeError, "seed must be an int"),
    (lambda: bigbird_mask(4, window=1, n_global=5, n_random=0, seed=0), ValueError, "n_global"),
    (lambda: density(np.ones((2, 2))), TypeError, "mask must be a boolean array"),
    (lambda: density(np.ones(3, dtype=bool)), ValueError, r"shape \(t_q, t_k\); got shape \(3,\)"),
    (lambda: block_layout(np.ones((2, 2), bool), 0), ValueError, "block must be >= 1"),
    (lambda: block_sparse_mask(np.ones(2, bool), 2), ValueError, "layout must have shape"),
    (lambda: block_sparse_mask(np.ones((1, 1), bool), 2, t=3), ValueError, "t must be <= 2"),
]


@pytest.mark.parametrize(("call", "error", "match"), BAD_MASK_CALLS)
def test_bad_mask_arguments_get_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --------------------------------------------------------------------------------------------
# sliding_window_attention == SDPA with the band mask
# --------------------------------------------------------------------------------------------

TOL = {torch.float32: 1e-5, torch.float64: 1e-10}
CASES = [
    # (leading dims, T, d_k, d_v, window)
    ((), 1, 4, 4, 1),
    ((), 10, 4, 3, 3),  # T not a multiple of w
    ((2,), 12, 8, 8, 4),  # T a multiple of w
    ((1, 4), 37, 16, 5, 8),
    ((2, 3), 5, 6, 6, 9),  # T < w
    ((2, 3), 9, 6, 2, 9),  # T == w
    ((1, 2), 64, 8, 8, 1),  # only itself
    ((3,), 100, 4, 4, 17),
    ((1, 1), 257, 8, 8, 256),  # one over a block
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize(("batch", "t", "d_k", "d_v", "w"), CASES)
def test_equals_sdpa_with_the_band_mask(batch, t, d_k, d_v, w, causal, dtype):
    g = torch.Generator().manual_seed(t * 31 + w)
    q = torch.randn(*batch, t, d_k, generator=g, dtype=dtype)  # (..., T, d_k)
    k = torch.randn(*batch, t, d_k, generator=g, dtype=dtype)  # (..., T, d_k)
    v = torch.randn(*batch, t, d_v, generator=g, dtype=dtype)  # (..., T, d_v)
    mask = torch.from_numpy(sliding_window_mask(t, window=w, causal=causal))  # (T, T)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (..., T, d_v)
    got = sliding_window_attention(q, k, v, window=w, causal=causal)  # (..., T, d_v)
    assert got.shape == want.shape and got.dtype == dtype
    torch.testing.assert_close(got, want, rtol=0, atol=TOL[dtype])


@given(
    t=st.integers(1, 70),
    w=st.integers(1, 40),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_equals_sdpa_property(t, w, causal, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = torch.randn(3, 2, t, 4, generator=g, dtype=torch.float64)  # (2, T, 4) each
    mask = torch.from_numpy(sliding_window_mask(t, window=w, causal=causal))  # (T, T)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    got = sliding_window_attention(q, k, v, window=w, causal=causal)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-10)


@pytest.mark.parametrize("causal", [True, False])
def test_gradients_equal_sdpa(causal):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 2, 70, 6, generator=g, dtype=torch.float64)  # q, k, v: (2, 70, 6)
    mask = torch.from_numpy(sliding_window_mask(70, window=9, causal=causal))  # (70, 70)
    grads = []
    for fn in (
        lambda q, k, v: sliding_window_attention(q, k, v, window=9, causal=causal),
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
    ):
        q, k, v = (t.clone().requires_grad_() for t in x)
        (fn(q, k, v) ** 2).sum().backward()
        grads.append([t.grad for t in (q, k, v)])
    for ours, theirs in zip(*grads, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-10)


def test_large_logits_stay_finite():
    q = torch.full((1, 20, 4), 300.0)  # scores of 300² · 4 / 2 = 180,000: exp would overflow
    k = torch.linspace(-1, 1, 80).reshape(1, 20, 4) * 300
    v = torch.randn(1, 20, 3, generator=torch.Generator().manual_seed(0))
    out = sliding_window_attention(q, k, v, window=5)
    mask = torch.from_numpy(sliding_window_mask(20, window=5))
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_keys_outside_the_window_do_not_matter():
    g = torch.Generator().manual_seed(3)
    q, k, v = torch.randn(3, 30, 8, generator=g, dtype=torch.float64)
    out = sliding_window_attention(q, k, v, window=4)
    k2, v2 = k.clone(), v.clone()
    k2[:10] += 100.0  # keys 0..9 are outside the window of queries 13..29
    v2[:10] -= 100.0
    out2 = sliding_window_attention(q, k2, v2, window=4)
    assert torch.equal(out[13:], out2[13:])
    assert not torch.allclose(out[:10], out2[:10])


@pytest.mark.parametrize("causal", [True, False])
def test_no_t_by_t_tensor_is_formed(causal):
    t, w, d = 2048, 16, 8
    q, k, v = torch.randn(3, 1, t, d)  # (1, T, d) each
    largest = largest_tensor_bytes(sliding_window_attention, q, k, v, window=w, causal=causal)
    # The largest tensors are the score tiles, T · 3w floats at most; T² is about 40 times more.
    assert largest <= 4 * (t * 3 * w + 2 * w * d)
    assert largest < 4 * t * t // 40
    dense = largest_tensor_bytes(lambda: (q @ k.transpose(-2, -1)).softmax(-1) @ v)
    assert dense == 4 * t * t


def test_largest_tensor_bytes_needs_a_function():
    with pytest.raises(TypeError, match="fn must be callable; got int"):
        largest_tensor_bytes(3)


BAD_ATTENTION_CALLS = [
    (lambda q: sliding_window_attention(q.numpy(), q, q, window=2), TypeError, "q must be a torch"),
    (lambda q: sliding_window_attention(q, q.long(), q, window=2), TypeError, "k must be a float"),
    (lambda q: sliding_window_attention(q, q, q.double(), window=2), TypeError, "one dtype"),
    (lambda q: sliding_window_attention(q[0, 0], q, q, window=2), ValueError, r"q must have shape"),
    (
        lambda q: sliding_window_attention(q, q[:, :3], q, window=2),
        ValueError,
        "k must have the sh",
    ),
    (lambda q: sliding_window_attention(q, q, q[:1], window=2), ValueError, r"v must have shape"),
    (
        lambda q: sliding_window_attention(q, q, q, window=0),
        ValueError,
        "window must be >= 1; got 0",
    ),
    (lambda q: sliding_window_attention(q, q, q, window=2.5), TypeError, "window must be an int"),
]


@pytest.mark.parametrize(("call", "error", "match"), BAD_ATTENTION_CALLS)
def test_bad_attention_arguments_get_clear_errors(call, error, match):
    q = torch.randn(2, 5, 4)  # (B, T, d)
    with pytest.raises(error, match=match):
        call(q)


# --------------------------------------------------------------------------------------------
# Receptive field and cost
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("t", "w"), [(2, 2), (16, 2), (16, 4), (33, 5), (64, 8), (10, 20)])
@pytest.mark.parametrize("causal", [True, False])
def test_window_layers_closed_form_equals_matrix_powers(t, w, causal):
    m = sliding_window_mask(t, window=w, causal=causal)
    n = window_layers_needed(t, w)
    r = reach(m, n + 1)
    assert r[n - 1, t - 1, 0]  # after n layers the last token hears the first ...
    if n > 1:
        assert not r[n - 2, t - 1, 0]  # ... and not after n - 1
    assert layers_to_reach_all(m) == n  # and after n layers nothing new arrives


def test_reach_grows_by_window_minus_one_per_layer():
    r = reach(sliding_window_mask(50, window=5), 6)
    assert r[:, 49].sum(axis=-1).tolist() == [5, 9, 13, 17, 21, 25]


@pytest.mark.parametrize("stride", [2, 4, 8])
def test_two_strided_layers_connect_everything_before(stride):
    t = stride * stride
    r = reach(strided_mask(t, stride=stride), 2)
    np.testing.assert_array_equal(r[1], np.tril(np.ones((t, t), dtype=bool)))


def test_global_tokens_shorten_the_path_to_two_layers():
    t = 64
    local = sliding_window_mask(t, window=4, causal=False)
    assert layers_to_reach_all(local) > 10
    with_global = local | global_mask(t, [0])
    r = reach(with_global, 2)
    assert r[1].all()  # any token -> global token -> any token
    assert not r[0].all()
    assert layers_to_reach_all(bigbird_mask(t, window=3, n_global=2, n_random=2, seed=0)) <= 3


def test_reach_without_residual_can_forget():
    m = ~np.eye(3, dtype=bool)  # every token sees the others but not itself
    assert not reach(m, 1, residual=False)[0].diagonal().any()
    assert reach(m, 1, residual=True)[0].all()


def test_reach_errors():
    with pytest.raises(ValueError, match=r"mask must be square \(t, t\)"):
        reach(np.ones((2, 3), dtype=bool), 2)
    with pytest.raises(ValueError, match="n_layers must be >= 1"):
        reach(np.ones((2, 2), dtype=bool), 0)
    with pytest.raises(ValueError, match="reach still grows after max_layers = 2"):
        layers_to_reach_all(sliding_window_mask(20, window=2), max_layers=2)
    with pytest.raises(ValueError, match="window must be >= 2"):
        window_layers_needed(10, 1)
    assert window_layers_needed(1, 1) == 1


def test_pattern_cost_counts():
    m = sliding_window_mask(1024, window=128)
    c = pattern_cost(m, d=64)
    assert c.pairs == int(m.sum()) == 128 * 129 // 2 + (1024 - 128) * 128
    assert c.dense_pairs == 1024**2
    assert c.flops == 4 * c.pairs * 64 and c.dense_flops == 4 * 1024**2 * 64
    assert c.score_bytes == 4 * c.pairs and c.density == pytest.approx(density(m))


@pytest.mark.parametrize(
    ("t", "gib"), [(1024, 1 / 256), (8192, 0.25), (32768, 4.0), (131072, 64.0)]
)
def test_dense_score_bytes(t, gib):
    assert dense_score_bytes(t) == gib * 2**30
    assert dense_score_bytes(t, n_heads=32, bytes_per_score=2) == 16 * gib * 2**30


# --- flags must be bools, sizes that cannot fit are refused (issue 33, §4) ----------------------

_HUGE = 10**6  # a (10^6, 10^6) mask: 1 TB of bools


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: sliding_window_attention(*[torch.randn(1, 5, 4)] * 3, window=2, causal="yes"),
            TypeError,
            r"^causal must be True or False; got str 'yes'",
        ),
        (lambda: sliding_window_mask(4, window=2, causal=1), TypeError, r"^causal must be True"),
        (lambda: dilated_window_mask(4, window=2, dilation=1, causal=None), TypeError, r"^causal"),
        (lambda: strided_mask(4, stride=2, causal="no"), TypeError, r"^causal must be True"),
        (lambda: sliding_window_mask(_HUGE, window=2), ValueError, r"^sliding_window_mask\(t_q="),
        (lambda: sliding_window_mask(10, 10**9, window=2), ValueError, r"about [\d,]+ bytes"),
        (lambda: dilated_window_mask(_HUGE, window=2, dilation=2), ValueError, r"^dilated_"),
        (lambda: strided_mask(_HUGE, stride=2), ValueError, r"^strided_mask\(1000000\)"),
        (lambda: global_mask(_HUGE, [0]), ValueError, r"^global_mask\(1000000\) would build"),
        (lambda: random_mask(_HUGE, n_random=1, seed=0), ValueError, r"^random_mask\(1000000\)"),
        (
            lambda: bigbird_mask(_HUGE, window=2, n_global=1, n_random=1, seed=0),
            ValueError,
            r"^bigbird_mask\(1000000\)",
        ),
        (lambda: block_sparse_mask([[True]], _HUGE), ValueError, r"^block_sparse_mask\(layout"),
        (lambda: sliding_window_mask(0, window=2), ValueError, r"^t_q must be >= 1"),
        (lambda: sliding_window_mask(2.0, window=2), TypeError, r"^t_q must be an int"),
        (lambda: sliding_window_mask(4, window=-1), ValueError, r"^window must be >= 1"),
    ],
)
def test_bad_flags_and_huge_sizes_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()
