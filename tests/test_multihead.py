"""course_utils.multihead against torch.nn.MultiheadAttention, F.scaled_dot_product_attention and
the numpy attention of chapters 1-3."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from course_utils.attention import scaled_dot_product_attention as np_attention
from course_utils.multihead import MultiHeadAttention, attention_weights

# (B, T_q, T_k, d_model, n_heads, bias)
CASES = [
    (1, 1, 1, 4, 1, True),
    (2, 5, 5, 8, 2, True),
    (3, 4, 7, 12, 3, False),  # cross attention, T_q != T_k
    (2, 6, 3, 16, 4, True),
    (1, 9, 9, 32, 8, False),
]


def _torch_pair(d_model: int, n_heads: int, bias: bool, seed: int, dtype=torch.float64):
    torch.manual_seed(seed)
    ref = torch.nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True).to(dtype)
    # PyTorch initialises biases to 0; randomise them so that copying them is actually tested.
    with torch.no_grad():
        for p in ref.parameters():
            p.normal_(0, 0.5)
    ref.eval()
    return ref, MultiHeadAttention.from_torch(ref)


def _inputs(B, T_q, T_k, d_model, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T_q, d_model, generator=g, dtype=dtype)
    k = torch.randn(B, T_k, d_model, generator=g, dtype=dtype)
    v = torch.randn(B, T_k, d_model, generator=g, dtype=dtype)
    return q, k, v


def _random_mask(shape, seed):
    """A random boolean mask (True = may attend) with at least one True in every row."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(shape, generator=g) < 0.6
    mask[..., 0] = True
    return mask


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(("B", "T_q", "T_k", "d_model", "n_heads", "bias"), CASES)
def test_equals_torch_multihead_attention(B, T_q, T_k, d_model, n_heads, bias, seed):
    ref, ours = _torch_pair(d_model, n_heads, bias, seed)
    q, k, v = _inputs(B, T_q, T_k, d_model, seed)
    want, want_w = ref(q, k, v, need_weights=True, average_attn_weights=False)
    got, got_w = ours(q, k, v, return_weights=True)
    assert got.shape == (B, T_q, d_model) and got_w.shape == (B, n_heads, T_q, T_k)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-10)
    torch.testing.assert_close(got_w, want_w, rtol=0, atol=1e-10)
    torch.testing.assert_close(ours(q, k, v), want, rtol=0, atol=1e-10)  # fast path


@pytest.mark.parametrize("mask_kind", ["2d", "3d", "4d", "padding"])
@pytest.mark.parametrize(("B", "T_q", "T_k", "d_model", "n_heads", "bias"), CASES[1:])
def test_equals_torch_with_masks(B, T_q, T_k, d_model, n_heads, bias, mask_kind):
    ref, ours = _torch_pair(d_model, n_heads, bias, seed=3)
    q, k, v = _inputs(B, T_q, T_k, d_model, seed=4)
    if mask_kind == "padding":
        keep = _random_mask((B, T_k), seed=5)  # (B, T_k): True = real token
        ours_mask = keep[:, None, :]  # (B, 1, T_k)
        kwargs = {"key_padding_mask": ~keep}  # PyTorch: True = ignore
    else:
        shape = {"2d": (T_q, T_k), "3d": (B, T_q, T_k), "4d": (B, n_heads, T_q, T_k)}[mask_kind]
        ours_mask = _random_mask(shape, seed=5)
        torch_mask = ~ours_mask  # opposite polarity
        if mask_kind == "3d":
            torch_mask = torch_mask[:, None]  # (B, 1, T_q, T_k)
        if mask_kind != "2d":
            torch_mask = torch_mask.expand(B, n_heads, T_q, T_k).reshape(B * n_heads, T_q, T_k)
        kwargs = {"attn_mask": torch_mask}
    want, want_w = ref(q, k, v, need_weights=True, average_attn_weights=False, **kwargs)
    got, got_w = ours(q, k, v, mask=ours_mask, return_weights=True)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-10)
    torch.testing.assert_close(got_w, want_w, rtol=0, atol=1e-10)
    torch.testing.assert_close(ours(q, k, v, mask=ours_mask), want, rtol=0, atol=1e-10)
    # Masked positions get exactly zero weight.
    mask4 = ours_mask[:, None] if ours_mask.dim() == 3 else ours_mask  # (B|1, h|1, T_q|1, T_k)
    assert torch.all(got_w.masked_select(~mask4.expand_as(got_w)) == 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_from_torch_keeps_dtype(dtype):
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=True).to(dtype)
    ours = MultiHeadAttention.from_torch(ref)
    assert all(p.dtype == dtype for p in ours.parameters())
    x = torch.randn(2, 3, 8, dtype=dtype)
    assert ours(x, x, x).dtype == dtype


def test_from_torch_copies_not_shares():
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    ours = MultiHeadAttention.from_torch(ref)
    with torch.no_grad():
        ours.W_Q.weight.zero_()
    assert ref.in_proj_weight.abs().sum() > 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_first": False}, "batch_first=True"),
        ({"batch_first": True, "kdim": 4}, "kdim = vdim"),
        ({"batch_first": True, "add_bias_kv": True}, "add_bias_kv"),
        ({"batch_first": True, "add_zero_attn": True}, "add_zero_attn"),
    ],
)
def test_from_torch_rejects_unsupported_configurations(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention.from_torch(torch.nn.MultiheadAttention(8, 2, **kwargs))


def test_from_torch_rejects_other_modules():
    with pytest.raises(TypeError, match=r"torch\.nn\.MultiheadAttention; got Linear"):
        MultiHeadAttention.from_torch(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("B", "T_q", "T_k", "d_model", "n_heads", "bias"), CASES)
def test_fast_and_readable_paths_agree(B, T_q, T_k, d_model, n_heads, bias, seed):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_model, n_heads, bias=bias).double()
    q, k, v = _inputs(B, T_q, T_k, d_model, seed)
    mask = _random_mask((B, 1, T_q, T_k), seed)
    for m in (None, mask):
        fast = mha(q, k, v, mask=m, fast=True)
        readable = mha(q, k, v, mask=m, fast=False)
        torch.testing.assert_close(fast, readable, rtol=0, atol=1e-12)


def test_fully_masked_query_gets_zero_weights_like_sdpa():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).double()
    q, k, v = _inputs(1, 3, 4, 8, seed=0)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[1] = False  # query 1 may attend to nothing
    out, w = mha(q, k, v, mask=mask, return_weights=True)
    assert torch.all(w[:, :, 1] == 0) and not torch.isnan(w).any()
    torch.testing.assert_close(out, mha(q, k, v, mask=mask), rtol=0, atol=1e-12)
    # The output of a query that sees nothing is W_O's bias alone.
    torch.testing.assert_close(out[0, 1], mha.W_O.bias, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_each_head_equals_numpy_attention_of_chapters_1_to_3(seed):
    """head_i = Attention(Q W_Q_i, K W_K_i, V W_V_i), with the numpy function of chapter 3."""
    torch.manual_seed(seed)
    mha = MultiHeadAttention(12, 3).double()
    q, k, v = _inputs(2, 4, 5, 12, seed)
    mask = _random_mask((4, 5), seed)
    out, w = mha(q, k, v, mask=mask, return_weights=True)
    with torch.no_grad():
        Q = mha.split_heads(mha.W_Q(q)).numpy()  # (B, h, T_q, d_k)
        K = mha.split_heads(mha.W_K(k)).numpy()  # (B, h, T_k, d_k)
        V = mha.split_heads(mha.W_V(v)).numpy()  # (B, h, T_k, d_k)
        heads, np_w = np_attention(Q, K, V, mask=mask.numpy())
        concat = torch.from_numpy(heads).transpose(1, 2).reshape(2, 4, 12)  # (B, T_q, d_model)
        np.testing.assert_allclose(w.detach().numpy(), np_w, rtol=0, atol=1e-12)
        torch.testing.assert_close(out, mha.W_O(concat), rtol=0, atol=1e-12)


def test_attention_weights_against_sdpa():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, 5, 4, generator=g, dtype=torch.float64)
    k = torch.randn(2, 3, 6, 4, generator=g, dtype=torch.float64)
    v = torch.randn(2, 3, 6, 4, generator=g, dtype=torch.float64)
    mask = _random_mask((5, 6), seed=1)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(attention_weights(q, k, mask) @ v, want, rtol=0, atol=1e-12)


def test_split_and_merge_heads_are_inverse_and_slice_columns():
    mha = MultiHeadAttention(12, 3)
    x = torch.arange(2 * 4 * 12, dtype=torch.float32).reshape(2, 4, 12)
    heads = mha.split_heads(x)  # (2, 3, 4, 4)
    assert heads.shape == (2, 3, 4, 4)
    assert torch.equal(heads[:, 1], x[..., 4:8])  # head 1 owns columns 4..7
    assert torch.equal(mha.merge_heads(heads), x)


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8])
def test_parameter_count_does_not_depend_on_n_heads(n_heads):
    mha = MultiHeadAttention(64, n_heads)
    assert sum(p.numel() for p in mha.parameters()) == 4 * 64 * 64 + 4 * 64


@given(
    B=st.integers(1, 3),
    T_q=st.integers(1, 6),
    T_k=st.integers(1, 6),
    n_heads=st.sampled_from([1, 2, 4]),
    d_k=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=40, deadline=None)
def test_property_rows_are_distributions_and_masks_respected(B, T_q, T_k, n_heads, d_k, seed):
    torch.manual_seed(seed)
    d_model = n_heads * d_k
    mha = MultiHeadAttention(d_model, n_heads).double()
    q, k, v = _inputs(B, T_q, T_k, d_model, seed)
    mask = _random_mask((B, n_heads, T_q, T_k), seed)
    out, w = mha(q, k, v, mask=mask, return_weights=True)
    assert out.shape == (B, T_q, d_model)
    torch.testing.assert_close(w.sum(-1), torch.ones(B, n_heads, T_q, dtype=w.dtype))
    assert torch.all(w[~mask] == 0)
    torch.testing.assert_close(mha(q, k, v, mask=mask), out, rtol=0, atol=1e-12)


# -- bad input --
@pytest.mark.parametrize(
    ("d_model", "n_heads", "error", "message"),
    [
        (10, 3, ValueError, r"divisible by n_heads.*d_model = 10, n_heads = 3"),
        (0, 1, ValueError, "d_model must be >= 1"),
        (8, 0, ValueError, "n_heads must be >= 1"),
        (8.0, 2, TypeError, "d_model must be an int; got float"),
        (8, True, TypeError, "n_heads must be an int; got bool"),
    ],
)
def test_bad_constructor_arguments(d_model, n_heads, error, message):
    with pytest.raises(error, match=message):
        MultiHeadAttention(d_model, n_heads)


def _bad_inputs():
    x = torch.zeros(2, 3, 8)
    kv = torch.zeros(2, 5, 8)
    return [
        (
            (x[0], kv, kv),
            {},
            ValueError,
            r"query must have 3 dimensions \(B, T_q, d_model\); got (shape )?\(3, 8\)",
        ),
        ((x, kv[0], kv), {}, ValueError, r"key must have 3 dimensions .*got shape \(5, 8\)"),
        (
            (x, kv, kv[None]),
            {},
            ValueError,
            r"value must have 3 dimensions .*got shape \(1, 2, 5, 8\)",
        ),
        (
            (torch.zeros(2, 3, 6), kv, kv),
            {},
            ValueError,
            r"query has shape \(2, 3, 6\), expected .* d_model = 8",
        ),
        ((x, torch.zeros(2, 5, 4), kv), {}, ValueError, r"key has shape \(2, 5, 4\)"),
        (
            (x, kv, torch.zeros(2, 4, 8)),
            {},
            ValueError,
            r"value has shape \(2, 4, 8\), expected \(2, 5, 8\)",
        ),
        ((x, torch.zeros(1, 5, 8), kv), {}, ValueError, r"same batch size B.*key \(1, 5, 8\)"),
        ((x.numpy(), kv, kv), {}, TypeError, "query must be a torch.Tensor .*got ndarray"),
        ((x.long(), kv, kv), {}, TypeError, r"query must be a floating-point tensor.*torch.int64"),
        (
            (x.double(), kv, kv),
            {},
            TypeError,
            r"query has dtype torch.float64, expected torch.float32",
        ),
        (
            (x, kv, kv),
            {"mask": torch.ones(3, 5)},
            TypeError,
            r"mask must be a boolean tensor.*torch.float32 with shape \(3, 5\)",
        ),
        (
            (x, kv, kv),
            {"mask": np.ones((3, 5), bool)},
            TypeError,
            "mask must be a boolean torch.Tensor",
        ),
        (
            (x, kv, kv),
            {"mask": torch.ones(3, 4, dtype=torch.bool)},
            ValueError,
            r"mask has shape \(3, 4\), expected .*\(3, 5\)",
        ),
        (
            (x, kv, kv),
            {"mask": torch.ones(5, 3, dtype=torch.bool)},
            ValueError,
            r"mask has shape \(5, 3\)",
        ),
        (
            (x, kv, kv),
            {"mask": torch.ones(2, 5, dtype=torch.bool)},
            ValueError,
            r"mask has shape \(2, 5\)",
        ),
        (
            (x, kv, kv),
            {"mask": torch.ones(3, 3, 5, dtype=torch.bool)},
            ValueError,
            r"mask has shape \(3, 3, 5\).*\(2, 3, 5\)",
        ),
        (
            (x, kv, kv),
            {"mask": torch.ones(2, 3, 3, 5, dtype=torch.bool)},
            ValueError,
            r"mask has shape \(2, 3, 3, 5\).*\(2, 2, 3, 5\)",
        ),
        (
            (x, kv, kv),
            {"mask": torch.ones(5, dtype=torch.bool)},
            ValueError,
            r"mask has shape \(5,\)",
        ),
        (
            (x, kv, kv),
            {"return_weights": True, "fast": True},
            ValueError,
            "fast=True cannot return weights",
        ),
    ]


@pytest.mark.parametrize(("args", "kwargs", "error", "message"), _bad_inputs())
def test_bad_inputs_raise_clear_errors(args, kwargs, error, message):
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(error, match=message):
        mha(*args, **kwargs)


@given(
    B=st.integers(1, 3),
    T_q=st.integers(1, 6),
    T_k=st.integers(1, 6),
    n_heads=st.sampled_from([1, 2, 3]),
    d_k=st.integers(1, 4),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=40, deadline=None)
def test_property_equals_torch_for_random_shapes(B, T_q, T_k, n_heads, d_k, bias, seed):
    ref, ours = _torch_pair(n_heads * d_k, n_heads, bias, seed)
    q, k, v = _inputs(B, T_q, T_k, n_heads * d_k, seed)
    mask = _random_mask((T_q, T_k), seed)
    want, want_w = ref(q, k, v, attn_mask=~mask, average_attn_weights=False)
    got, got_w = ours(q, k, v, mask=mask, return_weights=True)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-10)
    torch.testing.assert_close(got_w, want_w, rtol=0, atol=1e-10)


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_on_the_weights_equals_pytorch_multihead_attention_in_training(p):
    """``dropout=`` drops attention weights after the softmax exactly where PyTorch's module does:
    same seed, same draw, same output (oracle: ``torch.nn.MultiheadAttention`` in ``train()``)."""
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(8, 2, dropout=p, batch_first=True).double().train()
    ours = MultiHeadAttention.from_torch(ref).train()
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    torch.manual_seed(7)
    want, _ = ref(x, x, x, need_weights=True)
    torch.manual_seed(7)
    got = ours(x, x, x, dropout=nn.Dropout(p))
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    assert not torch.allclose(got, ours(x, x, x))  # something was dropped
    # eval(): the dropout is the identity and the fast path is allowed again
    assert torch.equal(ours(x, x, x, dropout=nn.Dropout(p).eval()), ours(x, x, x))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"dropout": 0.1}, TypeError, "dropout must be a torch.nn.Dropout or None; got float"),
        ({"dropout": nn.Dropout(0.1), "fast": True}, ValueError, "fast=True cannot apply"),
    ],
)
def test_bad_dropout_is_an_error(kwargs, error, match):
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8)
    with pytest.raises(error, match=match):
        mha(x, x, x, **kwargs)


def test_the_chapter_shows_the_readable_reference_in_at_most_60_lines():
    """Chapter 4 includes the class that holds the maths only: at most 60 lines, no argument
    checks, no fast path (those are MultiHeadAttention's, which inherits the maths)."""
    import inspect

    from course_utils import multihead

    from .notebook_runner import included_pyobjects

    shown = included_pyobjects("04_multi_head_attention", "multihead.py")
    assert shown == {"en": ["MultiHeadAttentionReference"], "zh": ["MultiHeadAttentionReference"]}
    source = inspect.getsource(multihead.MultiHeadAttentionReference)
    assert len(source.rstrip().splitlines()) <= 60
    assert "raise" not in source and "scaled_dot_product_attention(" not in source
    assert issubclass(MultiHeadAttention, multihead.MultiHeadAttentionReference)


@pytest.mark.parametrize(("n_heads", "t_q", "t_k", "masked"), [(1, 3, 3, False), (2, 4, 6, True)])
def test_the_readable_reference_equals_pytorch_multihead_attention(n_heads, t_q, t_k, masked):
    """The class the chapter shows, alone (no checks, no fast path), against
    ``torch.nn.MultiheadAttention`` with the same weights: outputs and per-head weights."""
    from course_utils.multihead import MultiHeadAttentionReference

    torch.manual_seed(n_heads)
    ref = nn.MultiheadAttention(8, n_heads, batch_first=True).double().eval()
    ours = MultiHeadAttentionReference(8, n_heads).double()
    ours.load_state_dict(MultiHeadAttention.from_torch(ref).state_dict())
    q = torch.randn(2, t_q, 8, dtype=torch.float64)
    kv = torch.randn(2, t_k, 8, dtype=torch.float64)
    mask = torch.rand(t_q, t_k) > 0.3 if masked else None
    if mask is not None:
        mask[:, 0] = True  # every query may attend to at least one key
    want, want_w = ref(q, kv, kv, attn_mask=None if mask is None else ~mask,
                       need_weights=True, average_attn_weights=False)  # fmt: skip
    got, got_w = ours(q, kv, kv, mask, return_weights=True)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    torch.testing.assert_close(got_w, want_w, rtol=0, atol=1e-12)
