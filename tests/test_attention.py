"""scaled_dot_product_attention and attention_scores against PyTorch, properties and bad input.

Oracles (code we did not write):
- the output: ``torch.nn.functional.scaled_dot_product_attention`` with the same boolean mask;
- the weights, by two separate paths: SDPA with ``v`` = the identity (the output *is* the weights),
  and ``torch.softmax`` of torch's own ``q @ k.T * scale`` with ``masked_fill(-inf)``.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from course_utils.attention import attention_scores, scaled_dot_product_attention
from course_utils.masks import causal_mask

TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}


def _mask_fully_masked_row(shape):
    m = np.random.default_rng(7).random(shape) > 0.3
    m[..., 1, :] = False  # query 1 may attend to nothing
    return m


# (id, q shape, k shape, v shape, mask factory (or None), scale)
CASES = [
    ("square", (4, 8), (4, 8), (4, 8), None, None),
    ("T_q<T_k", (3, 5), (6, 5), (6, 7), None, None),
    ("T_q>T_k", (6, 5), (2, 5), (2, 3), None, None),
    ("one query", (1, 4), (5, 4), (5, 2), None, None),
    ("d_k=1", (3, 1), (4, 1), (4, 2), None, None),
    ("batch", (2, 3, 5), (2, 6, 5), (2, 6, 7), None, None),
    ("batch and heads", (2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 2), None, None),
    ("broadcast batch", (2, 1, 4, 8), (1, 3, 6, 8), (3, 6, 4), None, None),
    ("q without batch", (4, 8), (2, 6, 8), (2, 6, 3), None, None),
    ("custom scale", (3, 4), (5, 4), (5, 2), None, 0.3),
    ("scale 1", (2, 3, 4), (2, 5, 4), (2, 5, 2), None, 1.0),
    ("causal", (5, 4), (5, 4), (5, 3), lambda: causal_mask(5), None),
    ("causal T_q<T_k", (3, 4), (6, 4), (6, 3), lambda: causal_mask(3, 6), None),
    (
        "causal bottom-right",
        (3, 4),
        (6, 4),
        (6, 3),
        lambda: causal_mask(3, 6, align="bottom_right"),
        None,
    ),
    (
        "random mask",
        (2, 4, 4),
        (2, 5, 4),
        (2, 5, 3),
        lambda: np.random.default_rng(3).random((2, 4, 5)) > 0.4,
        None,
    ),
    (
        "fully masked row",
        (2, 4, 4),
        (2, 5, 4),
        (2, 5, 3),
        lambda: _mask_fully_masked_row((2, 4, 5)),
        None,
    ),
    ("mask broadcast over batch", (3, 4, 6), (3, 5, 6), (3, 5, 2), lambda: causal_mask(4, 5), None),
    (
        "key padding mask (1, T_k)",
        (2, 4, 6),
        (2, 5, 6),
        (2, 5, 2),
        lambda: np.array([[True, True, True, False, False]]),
        None,
    ),
    (
        "padding per batch (B, 1, T_k)",
        (2, 4, 6),
        (2, 5, 6),
        (2, 5, 2),
        lambda: np.array([[[1, 1, 1, 0, 0]], [[1, 1, 1, 1, 1]]], dtype=bool),
        None,
    ),
    (
        "mask over heads (B, 1, T_q, T_k)",
        (2, 3, 4, 6),
        (2, 3, 5, 6),
        (2, 3, 5, 2),
        lambda: np.random.default_rng(5).random((2, 1, 4, 5)) > 0.5,
        None,
    ),
    ("all masked + scale", (3, 4), (3, 4), (3, 4), lambda: np.zeros((3, 3), dtype=bool), 0.5),
]


def _torch_reference(q, k, v, mask, scale):
    """Output from SDPA; weights from SDPA with v = identity, and from torch.softmax directly."""
    tq, tk, tv = (torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v))
    tm = None if mask is None else torch.from_numpy(np.ascontiguousarray(mask))
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, scale=scale)  # (..., T_q, d_v)
    t_k = k.shape[-2]
    eye = torch.eye(t_k, dtype=tq.dtype)  # (T_k, T_k): output row = weight row
    weights_sdpa = F.scaled_dot_product_attention(tq, tk, eye, attn_mask=tm, scale=scale)
    s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = torch.matmul(tq, tk.transpose(-2, -1)) * s  # (..., T_q, T_k)
    if tm is not None:
        scores = scores.masked_fill(~tm, float("-inf"))
    weights_softmax = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # fully masked rows: nan -> 0
    return out.numpy(), weights_sdpa.numpy(), weights_softmax.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("q_shape", "k_shape", "v_shape", "make_mask", "scale"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_matches_torch(q_shape, k_shape, v_shape, make_mask, scale, dtype):
    rng = np.random.default_rng(zlib.crc32(repr((q_shape, k_shape, v_shape)).encode()))  # seeded
    q = rng.normal(size=q_shape).astype(dtype)
    k = rng.normal(size=k_shape).astype(dtype)
    v = rng.normal(size=v_shape).astype(dtype)
    mask = None if make_mask is None else make_mask()
    out, weights = scaled_dot_product_attention(q, k, v, mask, scale=scale)
    ref_out, ref_w_sdpa, ref_w_softmax = _torch_reference(q, k, v, mask, scale)
    assert out.dtype == dtype
    assert weights.dtype == dtype
    assert out.shape == ref_out.shape
    assert weights.shape == ref_w_softmax.shape
    np.testing.assert_allclose(out, ref_out, **TOL[dtype])
    np.testing.assert_allclose(weights, ref_w_sdpa, **TOL[dtype])
    np.testing.assert_allclose(weights, ref_w_softmax, **TOL[dtype])
    if mask is not None:
        full = np.broadcast_to(mask, weights.shape)
        assert (weights[~full] == 0).all()  # exactly zero, not just small


def test_fully_masked_row_gives_zero_weights_and_zero_output_like_torch():
    q = np.ones((3, 2))  # (T_q, d_k)
    k = np.array([[1.0, 0.0], [0.0, 1.0]])  # (T_k, d_k)
    v = np.array([[1.0, 2.0], [3.0, 4.0]])  # (T_k, d_v)
    mask = np.array([[True, True], [False, False], [True, False]])  # query 1 sees nothing
    out, w = scaled_dot_product_attention(q, k, v, mask)
    np.testing.assert_array_equal(w[1], [0.0, 0.0])
    np.testing.assert_array_equal(out[1], [0.0, 0.0])
    ref = F.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), attn_mask=torch.from_numpy(mask)
    )
    np.testing.assert_array_equal(ref.numpy()[1], [0.0, 0.0])  # torch agrees: a zero output
    np.testing.assert_allclose(out, ref.numpy(), atol=1e-12)


def test_mixed_dtypes_promote_like_numpy():
    q = np.ones((2, 3), dtype=np.float32)
    k = np.ones((4, 3), dtype=np.float64)
    v = np.ones((4, 1), dtype=np.float32)
    out, w = scaled_dot_product_attention(q, k, v)
    assert out.dtype == np.float64 and w.dtype == np.float64


def test_integer_and_list_inputs():
    out, w = scaled_dot_product_attention([[1, 0]], [[1, 0], [0, 1]], [[2], [4]], scale=0.0)
    np.testing.assert_allclose(w, [[0.5, 0.5]])  # scale 0: uniform weights
    np.testing.assert_allclose(out, [[3.0]])


def test_float16_inputs_work():
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=s).astype(np.float16) for s in [(3, 4), (5, 4), (5, 2)])
    out, w = scaled_dot_product_attention(q, k, v)
    assert out.dtype == np.float16 and w.dtype == np.float16
    ref = F.scaled_dot_product_attention(
        *(torch.from_numpy(a.astype(np.float32)) for a in (q, k, v))
    )
    np.testing.assert_allclose(out.astype(np.float32), ref.numpy(), atol=5e-3)


def test_inputs_are_not_modified():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    copies = [a.copy() for a in (q, k, v)]
    scaled_dot_product_attention(q, k, v, causal_mask(3, 5))
    for a, c in zip((q, k, v), copies, strict=True):
        np.testing.assert_array_equal(a, c)


# --- attention_scores ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q_shape", "k_shape", "scale"),
    [
        ((4, 8), (4, 8), None),
        ((3, 5), (6, 5), 0.5),
        ((2, 3, 4), (2, 5, 4), None),
        ((2, 1, 3, 4), (1, 2, 5, 4), 2.0),
    ],
)
def test_attention_scores_match_torch_matmul(q_shape, k_shape, scale):
    rng = np.random.default_rng(11)
    q, k = rng.normal(size=q_shape), rng.normal(size=k_shape)
    s = 1 / math.sqrt(q_shape[-1]) if scale is None else scale
    ref = (torch.matmul(torch.from_numpy(q), torch.from_numpy(k).transpose(-2, -1)) * s).numpy()
    np.testing.assert_allclose(attention_scores(q, k, scale=scale), ref, rtol=1e-12)


def test_attention_scores_default_scale_is_one_over_sqrt_d_k():
    q = np.array([[1.0, 1.0, 1.0, 1.0]])  # d_k = 4
    np.testing.assert_allclose(attention_scores(q, q), [[2.0]])  # 4 / √4


# --- bad input -----------------------------------------------------------------------------------

Q, K, V = np.ones((4, 8)), np.ones((5, 8)), np.ones((5, 3))

BAD = [
    # (id, q, k, v, mask, scale, error, regex naming the argument, shape received, shape expected)
    (
        "d_k mismatch",
        Q,
        np.ones((5, 6)),
        V,
        None,
        None,
        ValueError,
        r"k has shape \(5, 6\), expected \(\.\.\., T_k, 8\).*d_k = 8.*q \(4, 8\)",
    ),
    (
        "T_k mismatch k/v",
        Q,
        K,
        np.ones((4, 3)),
        None,
        None,
        ValueError,
        r"v has shape \(4, 3\), expected \(\.\.\., 5, d_v\).*k \(5, 8\) has T_k = 5",
    ),
    (
        "q 1-D",
        np.ones(8),
        K,
        V,
        None,
        None,
        ValueError,
        r"q must have at least 2 dimensions \(\.\.\., T_q, d_k\); got shape \(8,\)",
    ),
    (
        "k 1-D",
        Q,
        np.ones(8),
        V,
        None,
        None,
        ValueError,
        r"k must have at least 2 dimensions \(\.\.\., T_k, d_k\); got shape \(8,\)",
    ),
    (
        "v 1-D",
        Q,
        K,
        np.ones(5),
        None,
        None,
        ValueError,
        r"v must have at least 2 dimensions \(\.\.\., T_k, d_v\); got shape \(5,\)",
    ),
    (
        "q scalar",
        1.0,
        K,
        V,
        None,
        None,
        ValueError,
        r"q must have at least 2 dimensions.*got shape \(\)",
    ),
    (
        "d_k = 0",
        np.ones((4, 0)),
        np.ones((5, 0)),
        V,
        None,
        None,
        ValueError,
        r"q has shape \(4, 0\), expected \(\.\.\., T_q, d_k\) with d_k >= 1",
    ),
    (
        "T_k = 0",
        Q,
        np.ones((0, 8)),
        np.ones((0, 3)),
        None,
        None,
        ValueError,
        r"k has shape \(0, 8\), expected \(\.\.\., T_k, 8\) with T_k >= 1",
    ),
    (
        "batch mismatch",
        np.ones((2, 4, 8)),
        np.ones((3, 5, 8)),
        np.ones((3, 5, 3)),
        None,
        None,
        ValueError,
        r"batch dimensions .* must broadcast; got q \(2,\), k \(3,\), v \(3,\)",
    ),
    (
        "mask does not broadcast",
        Q,
        K,
        V,
        np.ones((4, 4), dtype=bool),
        None,
        ValueError,
        r"mask has shape \(4, 4\), expected a shape that broadcasts to \(4, 5\)",
    ),
    (
        "mask transposed",
        Q,
        K,
        V,
        np.ones((5, 4), dtype=bool),
        None,
        ValueError,
        r"mask has shape \(5, 4\), expected a shape that broadcasts to \(4, 5\)",
    ),
    (
        "mask would enlarge",
        Q,
        K,
        V,
        np.ones((2, 4, 5), dtype=bool),
        None,
        ValueError,
        r"mask has shape \(2, 4, 5\), expected .* \(4, 5\) \(\.\.\., T_q, T_k\) "
        r"without enlarging it",
    ),
    (
        "float mask",
        Q,
        K,
        V,
        np.ones((4, 5)),
        None,
        TypeError,
        r"mask must be a boolean array \(True = may attend\); "
        r"got dtype float64 with shape \(4, 5\)",
    ),
    (
        "int mask",
        Q,
        K,
        V,
        np.ones((4, 5), dtype=int),
        None,
        TypeError,
        r"mask must be a boolean array .* got dtype int64 with shape \(4, 5\)",
    ),
    (
        "string q",
        np.array([["a", "b"]]),
        K,
        V,
        None,
        None,
        TypeError,
        r"q must be a numeric array; got dtype <U1 with shape \(1, 2\)",
    ),
    (
        "object v",
        Q,
        K,
        np.array([[None] * 3] * 5),
        None,
        None,
        TypeError,
        r"v must be a numeric array; got dtype object with shape \(5, 3\)",
    ),
    (
        "ragged k",
        Q,
        [[1.0] * 8, [1.0] * 7],
        V,
        None,
        None,
        TypeError,
        r"k must be a numeric array; could not convert",
    ),
    (
        "complex q",
        Q.astype(complex),
        K,
        V,
        None,
        None,
        TypeError,
        r"q must be real; got complex dtype",
    ),
    (
        "NaN in q",
        np.full((4, 8), np.nan),
        K,
        V,
        None,
        None,
        ValueError,
        r"q contains NaN \(shape \(4, 8\)\)",
    ),
    (
        "NaN in v",
        Q,
        K,
        np.full((5, 3), np.nan),
        None,
        None,
        ValueError,
        r"v contains NaN \(shape \(5, 3\)\)",
    ),
    (
        "+inf in k",
        Q,
        np.full((5, 8), np.inf),
        V,
        None,
        None,
        ValueError,
        r"k contains \+inf \(shape \(5, 8\)\)",
    ),
    (
        "-inf in k",
        Q,
        np.full((5, 8), -np.inf),
        V,
        None,
        None,
        ValueError,
        r"k contains -inf \(shape \(5, 8\)\).*use mask",
    ),
    (
        "-inf in v",
        Q,
        K,
        np.full((5, 3), -np.inf),
        None,
        None,
        ValueError,
        r"v contains -inf \(shape \(5, 3\)\)",
    ),
    ("scale str", Q, K, V, None, "0.5", TypeError, r"scale must be a number or None; got str"),
    ("scale bool", Q, K, V, None, True, TypeError, r"scale must be a number or None; got bool"),
    ("scale nan", Q, K, V, None, float("nan"), ValueError, r"scale must be finite; got nan"),
    ("scale inf", Q, K, V, None, float("inf"), ValueError, r"scale must be finite; got inf"),
    (
        "float16 overflow",
        np.full((2, 4), 200, np.float16),
        np.full((3, 4), 200, np.float16),
        np.ones((3, 1), np.float16),
        None,
        1.0,
        ValueError,
        r"scores Q Kᵀ · scale overflowed to inf in float16 \(shape \(2, 3\)\)",
    ),
]


@pytest.mark.parametrize(
    ("q", "k", "v", "mask", "scale", "error", "match"),
    [b[1:] for b in BAD],
    ids=[b[0] for b in BAD],
)
def test_bad_input_is_named(q, k, v, mask, scale, error, match):
    with pytest.raises(error, match=match):
        scaled_dot_product_attention(q, k, v, mask, scale=scale)


@pytest.mark.parametrize(
    ("case_id"),
    [
        "d_k mismatch",
        "q 1-D",
        "k 1-D",
        "NaN in q",
        "-inf in k",
        "scale nan",
        "batch mismatch",
        "d_k = 0",
        "T_k = 0",
    ],
)
def test_attention_scores_rejects_the_same_bad_input(case_id):
    _, q, k, _, _, scale, error, match = next(b for b in BAD if b[0] == case_id)
    with pytest.raises(error, match=match):
        attention_scores(q, k, scale=scale)


# --- properties ----------------------------------------------------------------------------------

elements = st.floats(-3, 3, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def qkv(draw, with_mask=False):
    t_q = draw(st.integers(1, 5))
    t_k = draw(st.integers(1, 5))
    d_k = draw(st.integers(1, 4))
    d_v = draw(st.integers(1, 3))
    batch = draw(st.sampled_from([(), (2,), (1, 2)]))
    q = draw(hnp.arrays(np.float64, (*batch, t_q, d_k), elements=elements))
    k = draw(hnp.arrays(np.float64, (*batch, t_k, d_k), elements=elements))
    v = draw(hnp.arrays(np.float64, (*batch, t_k, d_v), elements=elements))
    mask = draw(hnp.arrays(np.bool_, (t_q, t_k))) if with_mask else None
    return q, k, v, mask


@given(qkv(with_mask=True))
def test_property_rows_sum_to_one_and_masked_weights_are_exactly_zero(args):
    q, k, v, mask = args
    out, w = scaled_dot_product_attention(q, k, v, mask)
    full = np.broadcast_to(mask, w.shape)
    assert (w[~full] == 0).all()
    fully_masked = ~full.any(axis=-1)  # (..., T_q)
    assert (out[fully_masked] == 0).all()  # a query that sees nothing outputs exactly zero
    expected_sums = full.any(axis=-1).astype(float)  # 1, or 0 for a fully masked row
    np.testing.assert_allclose(w.sum(axis=-1), expected_sums, atol=1e-12)
    assert (w >= 0).all()


@given(qkv(with_mask=True), st.randoms(use_true_random=False))
def test_property_permuting_keys_and_values_together_changes_nothing(args, random):
    q, k, v, mask = args
    perm = list(range(k.shape[-2]))
    random.shuffle(perm)
    out, w = scaled_dot_product_attention(q, k, v, mask)
    out_p, w_p = scaled_dot_product_attention(q, k[..., perm, :], v[..., perm, :], mask[:, perm])
    np.testing.assert_allclose(out_p, out, atol=1e-12)
    np.testing.assert_allclose(w_p, w[..., perm], atol=1e-12)


@given(qkv(with_mask=True), st.randoms(use_true_random=False))
def test_property_permuting_queries_permutes_outputs(args, random):
    q, k, v, mask = args
    perm = list(range(q.shape[-2]))
    random.shuffle(perm)
    out, w = scaled_dot_product_attention(q, k, v, mask)
    out_p, w_p = scaled_dot_product_attention(q[..., perm, :], k, v, mask[perm, :])
    np.testing.assert_allclose(out_p, out[..., perm, :], atol=1e-12)
    np.testing.assert_allclose(w_p, w[..., perm, :], atol=1e-12)


@given(qkv())
def test_property_output_is_a_convex_combination_of_values(args):
    q, k, v, _ = args
    out, _ = scaled_dot_product_attention(q, k, v)
    v_b = np.broadcast_to(v, (*out.shape[:-2], *v.shape[-2:]))
    assert (out <= v_b.max(axis=-2, keepdims=True) + 1e-12).all()
    assert (out >= v_b.min(axis=-2, keepdims=True) - 1e-12).all()


@given(qkv(with_mask=True))
def test_property_matches_torch(args):
    q, k, v, mask = args
    out, w = scaled_dot_product_attention(q, k, v, mask)
    ref_out, ref_w, _ = _torch_reference(q, k, v, mask, None)
    np.testing.assert_allclose(out, ref_out, atol=1e-10)
    np.testing.assert_allclose(w, ref_w, atol=1e-10)
