"""Every public function: bad input gets a clear error, and the two paths agree (issue 8, §2).

- the numpy functions accept torch tensors, also ones that require grad (never a raw RuntimeError);
- errors name the argument (``softmax``'s empty input and ``axis=None``; ``saturation_stats``'s
  ``scores``);
- ``MultiHeadAttention``: ``T_k = 0`` is an error, numpy integers are accepted, ``bias`` must be a
  bool, and the fast and readable paths agree on every input, NaN and inf included;
- ``attention_weights`` validates its input like the rest.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from course_utils.attention import attention_scores, scaled_dot_product_attention
from course_utils.masks import causal_mask
from course_utils.multihead import MultiHeadAttention, attention_weights
from course_utils.saturation import softmax_entropy, softmax_jacobian, softmax_jacobian_norm
from course_utils.scaling import saturation_stats
from course_utils.softmax import softmax


def _grad(x) -> torch.Tensor:
    return torch.tensor(np.asarray(x, dtype=np.float64), requires_grad=True)


# --- torch tensors in the numpy functions ---------------------------------------------------------

Q = [[1.0, 0.0], [0.0, 2.0]]
K = [[2.0, 0.0], [1.0, 1.0], [0.0, 1.0]]
V = [[1.0], [2.0], [3.0]]


@pytest.mark.parametrize("make", [torch.tensor, _grad], ids=["tensor", "requires_grad"])
@pytest.mark.parametrize(
    "call",
    [
        lambda t: softmax(t(Q)),
        lambda t: attention_scores(t(Q), t(K)),
        lambda t: scaled_dot_product_attention(t(Q), t(K), t(V))[0],
        lambda t: scaled_dot_product_attention(
            t(Q), t(K), t(V), torch.ones(2, 3, dtype=torch.bool)
        )[0],
        lambda t: softmax_entropy(t([0.25, 0.75])),
        lambda t: softmax_jacobian(t([0.25, 0.75])),
        lambda t: softmax_jacobian_norm(t([0.25, 0.75])),
        lambda t: saturation_stats(t(Q)).max_weight,
    ],
    ids=["softmax", "scores", "sdpa", "sdpa-mask", "entropy", "jacobian", "jac-norm", "stats"],
)
def test_numpy_functions_accept_torch_tensors(call, make):
    got = np.asarray(call(make))
    want = np.asarray(call(lambda x: np.asarray(x, dtype=np.float64)))
    np.testing.assert_allclose(got, want, rtol=1e-6)


# --- errors that name the argument ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: softmax(np.zeros(0)), ValueError, r"^x has shape \(0,\).*at least one entry"),
        (lambda: softmax(np.zeros((2, 0))), ValueError, r"^x has shape \(2, 0\)"),
        (lambda: softmax([1.0, 2.0], axis=None), TypeError, r"^axis must be an int.*None"),
        (lambda: softmax([1.0, 2.0], axis=1.0), TypeError, r"^axis must be an int"),
        (lambda: saturation_stats(np.array([[np.nan, 1.0]])), ValueError, r"^scores contains NaN"),
        (lambda: saturation_stats([["a", "b"]]), TypeError, r"^scores must be a numeric"),
        (lambda: saturation_stats(np.zeros((2, 0))), ValueError, r"^scores must have shape"),
        (lambda: saturation_stats(np.zeros((2, 2)), scale="1"), TypeError, r"^scale must be"),
        (lambda: softmax([[1.0], [2.0, 3.0]]), TypeError, r"^x must be a numeric array"),
    ],
)
def test_errors_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- MultiHeadAttention ---------------------------------------------------------------------------


def test_mha_rejects_zero_keys():
    mha = MultiHeadAttention(4, 2)
    x = torch.randn(1, 3, 4)
    empty = torch.zeros(1, 0, 4)
    for fast in (True, False):
        with pytest.raises(ValueError, match=r"^key has shape \(1, 0, 4\).*T_k >= 1"):
            mha(x, empty, empty, fast=fast)


def test_mha_accepts_numpy_integers():
    mha = MultiHeadAttention(np.int64(8), np.int32(2))
    assert (mha.d_model, mha.n_heads, mha.d_k) == (8, 2, 4)
    assert type(mha.d_model) is int and type(mha.n_heads) is int
    out = mha(torch.randn(1, 3, 8), torch.randn(1, 3, 8), torch.randn(1, 3, 8))
    assert out.shape == (1, 3, 8)


@pytest.mark.parametrize("bias", ["no", "False", 0, 1, None])
def test_mha_bias_must_be_a_bool(bias):
    with pytest.raises(TypeError, match=r"^bias must be True or False"):
        MultiHeadAttention(4, 2, bias=bias)


def test_mha_numpy_bool_bias_is_fine():
    assert MultiHeadAttention(4, 2, bias=np.bool_(False)).W_Q.bias is None


def test_mha_nan_input_gives_nan_on_both_paths():
    """The issue's case: the fast path returned the bias (finite) where the four steps give NaN."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(4, 2).double()
    x = torch.randn(1, 3, 4, dtype=torch.float64)
    query = x.clone()
    query[0, 1, 2] = float("nan")  # one query is NaN; keys and values are finite
    with torch.no_grad():
        fast = mha(query, x, x, fast=True)
        slow = mha(query, x, x, fast=False)
    torch.testing.assert_close(fast, slow, equal_nan=True, rtol=0, atol=1e-12)
    assert torch.isnan(fast).any()


_special = st.sampled_from([float("nan"), float("inf"), float("-inf")])


@given(
    seed=st.integers(0, 2**16),
    T_q=st.integers(1, 4),
    T_k=st.integers(1, 4),
    n_heads=st.sampled_from([1, 2]),
    specials=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 63), _special), max_size=3),
    with_mask=st.booleans(),
)
def test_mha_fast_and_readable_paths_agree_on_any_input(
    seed, T_q, T_k, n_heads, specials, with_mask
):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    mha = MultiHeadAttention(4, n_heads).double()
    q = torch.randn(2, T_q, 4, generator=g, dtype=torch.float64)
    k = torch.randn(2, T_k, 4, generator=g, dtype=torch.float64)
    v = torch.randn(2, T_k, 4, generator=g, dtype=torch.float64)
    for which, index, value in specials:  # put NaN / inf at a random place of q, k or v
        t = (q, k, v)[which]
        t.view(-1)[index % t.numel()] = value
    mask = torch.rand(T_q, T_k, generator=g) < 0.7 if with_mask else None
    with torch.no_grad():
        fast = mha(q, k, v, mask, fast=True)
        slow = mha(q, k, v, mask, fast=False)
    torch.testing.assert_close(fast, slow, equal_nan=True, rtol=1e-10, atol=1e-10)


# --- attention_weights ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: attention_weights(torch.ones(2, 3), torch.ones(2, 4)),
            ValueError,
            r"^k has shape",
        ),
        (lambda: attention_weights(torch.ones(2, 3), torch.ones(0, 3)), ValueError, r"T_k >= 1"),
        (
            lambda: attention_weights(torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 2)),
            TypeError,
            r"^mask must be a boolean",
        ),
        (
            lambda: attention_weights(
                torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 2, dtype=torch.int64)
            ),
            TypeError,
            r"^mask must be a boolean",
        ),
        (
            lambda: attention_weights(
                torch.ones(2, 3), torch.ones(2, 3), torch.ones(3, 3, dtype=torch.bool)
            ),
            ValueError,
            r"^mask has shape \(3, 3\)",
        ),
        (lambda: attention_weights(np.ones((2, 3)), torch.ones(2, 3)), TypeError, r"^q must be"),
        (
            lambda: attention_weights(torch.ones(2, 3, dtype=torch.int64), torch.ones(2, 3)),
            TypeError,
            r"^q must be a floating-point",
        ),
        (lambda: attention_weights(torch.ones(3), torch.ones(2, 3)), ValueError, r"^q must have"),
    ],
)
def test_attention_weights_validates_its_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_attention_weights_still_matches_the_numpy_function():
    q, k = torch.randn(3, 4, dtype=torch.float64), torch.randn(5, 4, dtype=torch.float64)
    mask = torch.from_numpy(causal_mask(3, 5))
    _, want = scaled_dot_product_attention(q.numpy(), k.numpy(), np.zeros((5, 1)), mask.numpy())
    torch.testing.assert_close(attention_weights(q, k, mask), torch.from_numpy(want))
