"""The course's sparse masks in PyTorch's FlexAttention (course_utils.sparse.flex, chapter 9.4).

Oracles we did not write: ``torch.nn.attention.flex_attention`` (eager) and
``scaled_dot_product_attention`` with the boolean mask give the same output as our
``sliding_window_attention``; ``create_block_mask`` keeps exactly the tiles our ``block_layout``
finds in the same mask."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from course_utils.sparse import (
    bigbird_mask,
    block_layout,
    block_mask_tiles,
    block_sparse_mask,
    flex_block_mask,
    flex_masked_attention,
    mask_mod_from_mask,
    sliding_window_attention,
    sliding_window_mask,
    sliding_window_mask_mod,
    strided_mask,
)

TOL = {torch.float32: 1e-5, torch.float64: 1e-10}

WINDOW_CASES = [
    # T, window, causal, block, dtype, seed
    (64, 8, True, 16, torch.float32, 0),
    (100, 7, True, 32, torch.float64, 1),  # T not a multiple of the block
    (37, 100, True, 16, torch.float64, 2),  # window longer than T
    (96, 5, False, 32, torch.float32, 3),  # two-sided
    (200, 64, True, 128, torch.float32, 4),  # FlexAttention's default block
]


def _qkv(T: int, dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(2, 3, T, 16, generator=g, dtype=dtype) for _ in range(3))


@pytest.mark.parametrize(("T", "window", "causal", "block", "dtype", "seed"), WINDOW_CASES)
def test_flex_with_our_window_equals_our_kernel_and_sdpa(T, window, causal, block, dtype, seed):
    q, k, v = _qkv(T, dtype, seed)  # (2, 3, T, 16) each
    mask = sliding_window_mask(T, window=window, causal=causal)  # (T, T)
    sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(mask))
    ours = sliding_window_attention(q, k, v, window=window, causal=causal)
    for mod in (sliding_window_mask_mod(window, causal=causal), mask_mod_from_mask(mask)):
        block_mask = flex_block_mask(mod, T, T, block=block)
        flex = flex_masked_attention(q, k, v, block_mask)
        torch.testing.assert_close(flex, sdpa, atol=TOL[dtype], rtol=0)
        torch.testing.assert_close(flex, ours, atol=TOL[dtype], rtol=0)
        # torch's own call, without our wrapper: the same numbers (torch warns once that
        # this is not the compiled kernel)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            direct = flex_attention(q, k, v, block_mask=block_mask)
        torch.testing.assert_close(direct, flex, atol=0, rtol=0)


BLOCK_CASES = [
    # name, mask, block
    ("strided", strided_mask(64, stride=8), 16),
    ("bigbird", bigbird_mask(48, window=3, n_global=2, n_random=2, seed=5), 8),
    (
        "block-sparse",
        block_sparse_mask(np.tril(np.eye(4, dtype=bool) | np.eye(4, k=-2, dtype=bool)), 16),
        16,
    ),
    ("window", sliding_window_mask(130, window=20), 32),
]


@pytest.mark.parametrize(("name", "mask", "block"), BLOCK_CASES, ids=[c[0] for c in BLOCK_CASES])
def test_flex_with_any_mask_equals_sdpa_and_keeps_our_tiles(name, mask, block):
    T = mask.shape[0]
    q, k, v = _qkv(T, torch.float64, seed=T)
    block_mask = flex_block_mask(mask_mod_from_mask(mask), T, T, block=block)
    sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(mask))
    torch.testing.assert_close(flex_masked_attention(q, k, v, block_mask), sdpa, atol=1e-10, rtol=0)
    n = -(-T // block)
    assert block_mask_tiles(block_mask) == (int(block_layout(mask, block).sum()), n * n)
    # the tiles themselves, not only their number: FlexAttention's dense layout is ours
    dense = block_mask.to_dense()[0, 0].bool().numpy()  # (n, n)
    assert np.array_equal(dense, block_layout(mask, block))


@settings(max_examples=30, deadline=None)
@given(
    T=st.integers(1, 300),
    window=st.integers(1, 80),
    causal=st.booleans(),
    block=st.sampled_from([8, 16, 32, 64, 128]),
)
def test_create_block_mask_counts_the_tiles_block_layout_counts(T, window, causal, block):
    """Property: for any length, window and tile size, the tiles ``create_block_mask`` keeps for
    the window formula are the non-empty tiles of our boolean window mask."""
    mask = sliding_window_mask(T, window=window, causal=causal)
    block_mask = create_block_mask(
        sliding_window_mask_mod(window, causal=causal),
        None,
        None,
        T,
        T,
        device="cpu",
        BLOCK_SIZE=block,
    )
    kept, total = block_mask_tiles(block_mask)
    assert kept == int(block_layout(mask, block).sum())
    assert total == (-(-T // block)) ** 2


def test_a_window_skips_more_tiles_as_T_grows():
    """The share of tiles a window of 256 lets a kernel skip (blocks of 128): what the benchmark
    reports. Causal: about 1 - 3/n of n² tiles, since each row keeps at most 3."""
    skipped = []
    for T in (1024, 2048, 4096):
        kept, total = block_mask_tiles(flex_block_mask(sliding_window_mask_mod(256), T, T))
        n = T // 128
        assert kept == 3 * n - 3  # the diagonal, and two tiles below it from row 2 on
        skipped.append(1 - kept / total)
    assert skipped == sorted(skipped) and skipped[-1] > 0.9


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: sliding_window_mask_mod(0), ValueError, "window must be >= 1; got 0"),
        (lambda: sliding_window_mask_mod(4, causal=1), TypeError, "causal"),
        (
            lambda: mask_mod_from_mask(np.ones(3, dtype=bool)),
            ValueError,
            r"mask must have shape \(t_q, t_k\)",
        ),
        (lambda: mask_mod_from_mask(np.ones((2, 2))), TypeError, "mask"),
        (
            lambda: flex_block_mask("window", 4, 4),
            TypeError,
            "mask_mod must be a function.*got str",
        ),
        (lambda: flex_block_mask(sliding_window_mask_mod(2), 0, 4), ValueError, "t_q must be >= 1"),
        (lambda: flex_block_mask(sliding_window_mask_mod(2), 4, 4, block=0), ValueError, "block"),
        (lambda: block_mask_tiles(np.ones((2, 2), dtype=bool)), TypeError, "got ndarray"),
    ],
)
def test_bad_input_is_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_flex_masked_attention_bad_input():
    q = torch.randn(1, 2, 8, 4)
    block_mask = flex_block_mask(sliding_window_mask_mod(2), 8, 8, block=4)
    with pytest.raises(ValueError, match=r"4-d \(B, h, T, d\); got q of shape \(2, 8, 4\)"):
        flex_masked_attention(q[0], q[0], q[0], block_mask)
    with pytest.raises(TypeError, match="block_mask must be a torch BlockMask; got ndarray"):
        flex_masked_attention(q, q, q, np.ones((8, 8), dtype=bool))
    with pytest.raises(ValueError, match=r"covers \(8, 8\) scores; q and k of length T = 6"):
        flex_masked_attention(q[:, :, :6], q[:, :, :6], q[:, :, :6], block_mask)
    with pytest.raises(TypeError, match="one dtype"):
        flex_masked_attention(q, q.double(), q, block_mask)
