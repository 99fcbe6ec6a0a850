"""course_utils.flash's split-K (Flash-Decoding) and its merge, against torch SDPA.

Oracle: ``torch.nn.functional.scaled_dot_product_attention`` (written independently of this
course), also with ``enable_gqa=True`` for grouped key/value heads. Seeded table-driven cases
(uneven chunks, batch and heads, T_q > 1, float64 and float16), a hypothesis property (the result
does not depend on ``n_splits``), the merge against the normaliser of the whole row, and every
bad input.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.flash import (
    merge_normalisers,
    merge_partials,
    split_k_decode,
    split_k_partials,
)

# (leading dims, T_q, T_k, d, d_v, n_splits, dtype, tolerance)
CASES = [
    ((), 1, 10, 4, 4, 3, torch.float32, 1e-6),  # chunks of 4, 3, 3
    ((), 1, 1000, 64, 64, 7, torch.float32, 1e-6),
    ((2,), 1, 33, 8, 5, 33, torch.float32, 1e-6),  # one key per chunk
    ((2, 4), 1, 257, 16, 16, 16, torch.float64, 1e-12),
    ((1, 8), 3, 100, 32, 32, 5, torch.float64, 1e-12),  # T_q > 1: any query rows
    ((3, 2), 1, 4096, 64, 64, 1, torch.float32, 1e-6),  # one chunk: plain attention
    ((1, 2), 1, 513, 64, 64, 8, torch.float16, 2e-3),
]


@pytest.mark.parametrize(("lead", "t_q", "t_k", "d", "d_v", "n_splits", "dtype", "tol"), CASES)
def test_split_k_equals_sdpa(lead, t_q, t_k, d, d_v, n_splits, dtype, tol):
    g = torch.Generator().manual_seed(t_k * 31 + n_splits)
    q = torch.randn(*lead, t_q, d, generator=g).to(dtype)
    k = (torch.randn(*lead, t_k, d, generator=g) * 2).to(dtype)  # larger scores: real maxima
    v = torch.randn(*lead, t_k, d_v, generator=g).to(dtype)
    got = split_k_decode(q, k, v, n_splits)
    want = F.scaled_dot_product_attention(q.double(), k.double(), v.double())
    assert got.dtype == dtype and got.shape == want.shape
    assert (got.double() - want).abs().max().item() < tol


@pytest.mark.parametrize(("h", "h_kv", "t_k", "n_splits"), [(8, 2, 300, 6), (4, 1, 77, 5)])
def test_split_k_on_gqa_expanded_heads_equals_sdpa_enable_gqa(h, h_kv, t_k, n_splits):
    g = torch.Generator().manual_seed(h * 100 + t_k)
    q = torch.randn(2, h, 1, 16, generator=g, dtype=torch.float64)
    k = torch.randn(2, h_kv, t_k, 16, generator=g, dtype=torch.float64)
    v = torch.randn(2, h_kv, t_k, 16, generator=g, dtype=torch.float64)
    # Each key/value head repeated for the query heads of its group, as GQA reads it.
    k_rep, v_rep = (x.repeat_interleave(h // h_kv, dim=1) for x in (k, v))
    got = split_k_decode(q, k_rep, v_rep, n_splits)
    want = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    assert (got - want).abs().max().item() < 1e-12


def test_chunks_are_uneven_and_cover_every_key_once():
    q, k, v = torch.zeros(1, 2), torch.zeros(10, 2), torch.arange(10.0)[:, None]
    parts = split_k_partials(q, k, v, 3)
    # equal scores: each chunk's output is the mean of its values, l its number of keys
    assert [p.l.item() for p in parts] == [4.0, 3.0, 3.0]
    assert [p.output.item() for p in parts] == [1.5, 5.0, 8.0]


def test_large_scores_do_not_overflow():
    q = torch.tensor([[100.0, 0.0]])  # (1, 2)
    k = torch.tensor([[100.0, 0.0], [-100.0, 0.0], [0.0, 100.0], [99.0, 0.0]])  # scores ±1e4
    v = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
    for n in (1, 2, 4):
        got = split_k_decode(q, k, v, n, scale=1.0)
        want = F.scaled_dot_product_attention(q, k, v, scale=1.0)
        assert torch.isfinite(got).all() and torch.allclose(got, want, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(
    t_k=st.integers(1, 200),
    a=st.integers(1, 200),
    b=st.integers(1, 200),
    seed=st.integers(0, 2**16),
    spread=st.sampled_from([0.1, 1.0, 30.0]),
)
def test_result_does_not_depend_on_n_splits(t_k, a, b, seed, spread):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 1, 8, generator=g, dtype=torch.float64) * spread
    k = torch.randn(2, t_k, 8, generator=g, dtype=torch.float64)
    v = torch.randn(2, t_k, 3, generator=g, dtype=torch.float64)
    first = split_k_decode(q, k, v, min(a, t_k))
    second = split_k_decode(q, k, v, min(b, t_k))
    assert (first - second).abs().max().item() < 1e-12


@settings(max_examples=60, deadline=None)
@given(
    row=st.lists(st.floats(-1e4, 1e4), min_size=2, max_size=30),
    cut=st.integers(1, 29),
)
def test_merge_normalisers_equals_the_whole_rows_normaliser(row, cut):
    x = np.array(row)
    cut = min(cut, x.size - 1)
    first, second = x[:cut], x[cut:]
    m1, m2 = first.max(), second.max()
    m, l = merge_normalisers(m1, np.exp(first - m1).sum(), m2, np.exp(second - m2).sum())  # noqa: E741
    assert m == x.max()
    assert math.isclose(l, np.exp(x - x.max()).sum(), rel_tol=1e-12)


def test_merge_normalisers_on_tensors_and_empty_parts():
    m, l = merge_normalisers(  # noqa: E741
        torch.tensor([2.0, -math.inf]),
        torch.tensor([1.5, 0.0]),
        torch.tensor([5.0, -math.inf]),
        torch.tensor([1.0, 0.0]),
    )
    assert m.tolist() == [5.0, -math.inf]
    assert l[0].item() == pytest.approx(1.5 * math.exp(-3) + 1.0) and l[1].item() == 0.0


def test_merge_partials_is_commutative():
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(3, n, 4, generator=g, dtype=torch.float64) for n in (1, 9, 9))
    a, b = split_k_partials(q, k, v, 2)
    ab, ba = merge_partials(a, b), merge_partials(b, a)
    assert torch.allclose(ab.output, ba.output, atol=1e-14) and torch.equal(ab.m, ba.m)


@pytest.mark.parametrize(
    ("n_splits", "error", "message"),
    [
        (0, ValueError, "n_splits must be >= 1; got 0"),
        (
            11,
            ValueError,
            "n_splits must be at most T_k = 10, so that every chunk holds a key; got 11",
        ),
        (2.0, TypeError, "n_splits must be an int; got float 2.0"),
        (True, TypeError, "n_splits must be an int; got bool True"),
    ],
)
def test_bad_n_splits_is_named(n_splits, error, message):
    q, k, v = torch.zeros(1, 4), torch.zeros(10, 4), torch.zeros(10, 2)
    with pytest.raises(error) as info:
        split_k_decode(q, k, v, n_splits)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        (((1, 4), (10, 3), (10, 2)), "its last dimension must equal d_k = 4"),
        (((1, 4), (10, 4), (9, 2)), "v needs one row per key"),
        (((2, 1, 4), (1, 10, 4), (1, 10, 2)), "nothing is broadcast"),
        (((1, 4), (0, 4), (0, 2)), "at least one key"),
    ],
)
def test_bad_shapes_are_named(shapes, message):
    q, k, v = (torch.zeros(s) for s in shapes)
    with pytest.raises(ValueError, match=message):
        split_k_decode(q, k, v, 1)


def test_merge_normalisers_rejects_mixed_and_broadcast_inputs():
    with pytest.raises(TypeError, match="all torch tensors or none; got m2 float"):
        merge_normalisers(torch.tensor(1.0), torch.tensor(1.0), 2.0, torch.tensor(1.0))
    with pytest.raises(
        ValueError, match=r"nothing is broadcast; got m1 \(2,\), l1 \(2,\), m2 \(\)"
    ):
        merge_normalisers(np.zeros(2), np.ones(2), 0.0, 1.0)
