"""course_utils.kv_cache's PagedKVCache and paged_attention, against torch SDPA.

Oracle: ``torch.nn.functional.scaled_dot_product_attention`` (with ``enable_gqa=True`` for grouped
heads) over each sequence's keys and values kept apart, in order, while the cache receives them
interleaved. Also: the block tables, the waste bound (at most ``block_size - 1`` empty slots a
sequence; a hypothesis property), freeing and reusing blocks, the "pool exhausted" error, and
every bad input.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.kv_cache import PagedKVCache, blocks_needed, paged_attention

H, H_KV, D = 4, 2, 8


def _interleaved(cache, lengths, seed):
    """Append tokens to every sequence in a seeded, interleaved order; return each one's k and v."""
    g = torch.Generator().manual_seed(seed)
    held = {s: ([], []) for s in range(len(lengths))}
    left = dict(enumerate(lengths))
    while any(left.values()):
        for s in [s for s, n in left.items() if n]:
            n = min(left[s], int(torch.randint(1, 6, (), generator=g)))
            k, v = (torch.randn(H_KV, n, D, generator=g) for _ in range(2))
            cache.append(s, k, v)
            held[s][0].append(k)
            held[s][1].append(v)
            left[s] -= n
    return {s: (torch.cat(ks, 1), torch.cat(vs, 1)) for s, (ks, vs) in held.items()}


@pytest.mark.parametrize(
    ("block_size", "lengths", "seed"),
    [(16, [1, 17, 40, 16], 0), (4, [3, 9, 12, 30, 1], 1), (1, [5, 2], 2), (32, [100, 7], 3)],
)
def test_paged_attention_equals_sdpa_over_each_sequence(block_size, lengths, seed):
    cache = PagedKVCache(block_size, 64, H_KV, D)
    held = _interleaved(cache, lengths, seed)
    g = torch.Generator().manual_seed(100 + seed)
    for s, (k, v) in held.items():
        got_k, got_v = cache.gather(s)
        assert torch.equal(got_k, k) and torch.equal(got_v, v)
        q = torch.randn(H, 1, D, generator=g)
        want = F.scaled_dot_product_attention(q[None], k[None], v[None], enable_gqa=True)[0]
        assert (paged_attention(q, cache, s) - want).abs().max().item() < 1e-6
        assert (
            cache.wasted_slots(s)
            == blocks_needed(lengths[s], block_size) * block_size - (lengths[s])
        )


def test_interleaving_scatters_a_sequences_blocks_in_the_pool():
    cache = PagedKVCache(2, 8, 1, 1)
    for s in (0, 1, 0, 1, 0):
        cache.append(s, torch.ones(1, 2, 1), torch.ones(1, 2, 1))
    assert cache.block_tables == {0: [0, 2, 4], 1: [1, 3]}


@settings(max_examples=50, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 200), min_size=1, max_size=8),
    block_size=st.sampled_from([1, 4, 16, 32]),
)
def test_waste_is_below_one_block_per_sequence(lengths, block_size):
    cache = PagedKVCache(block_size, sum(blocks_needed(n, block_size) for n in lengths), 1, 2)
    for s, n in enumerate(lengths):
        cache.append(s, torch.zeros(1, n, 2), torch.zeros(1, n, 2))
    waste = [cache.wasted_slots(s) for s in range(len(lengths))]
    assert all(0 <= w <= block_size - 1 for w in waste)
    assert cache.n_free == 0  # exactly the blocks the formula counts were taken


def test_freed_blocks_are_reused():
    cache = PagedKVCache(4, 3, 1, 1)
    cache.append("a", torch.ones(1, 8, 1), torch.ones(1, 8, 1))  # blocks 0, 1
    cache.free("a")
    cache.append("b", torch.full((1, 12, 1), 2.0), torch.full((1, 12, 1), 2.0))
    assert cache.block_tables == {"b": [2, 0, 1]} and cache.n_free == 0
    assert torch.equal(cache.gather("b")[0], torch.full((1, 12, 1), 2.0))


def test_an_empty_append_starts_an_empty_sequence():
    cache = PagedKVCache(4, 2, 1, 3)
    cache.append("a", torch.zeros(1, 0, 3), torch.zeros(1, 0, 3))
    assert cache.block_tables == {"a": []} and cache.wasted_slots("a") == 0
    assert cache.gather("a")[0].shape == (1, 0, 3)
    with pytest.raises(ValueError, match="seq_id 'a' holds 0 tokens: append the new token's key"):
        paged_attention(torch.zeros(1, 1, 3), cache, "a")


def test_pool_exhausted_names_the_blocks_and_changes_nothing():
    cache = PagedKVCache(16, 3, 1, 2)
    cache.append("a", torch.zeros(1, 20, 2), torch.zeros(1, 20, 2))  # 2 blocks
    with pytest.raises(RuntimeError, match="pool exhausted: needs 2 blocks, 1 free"):
        cache.append("b", torch.zeros(1, 17, 2), torch.zeros(1, 17, 2))
    assert cache.n_free == 1 and "b" not in cache.block_tables
    assert cache.lengths == {"a": 20}


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((0, 4, 1, 2), ValueError, "block_size must be an int >= 1; got 0"),
        ((16, 2.0, 1, 2), TypeError, "n_blocks must be an int; got float 2.0"),
        ((16, 4, True, 2), TypeError, "n_kv_heads must be an int; got bool True"),
    ],
)
def test_bad_pool_sizes_are_named(args, error, message):
    with pytest.raises(error, match=message):
        PagedKVCache(*args)


def test_bad_appends_and_queries_are_named():
    cache = PagedKVCache(4, 4, 2, 8)
    with pytest.raises(ValueError, match=r"k must have shape \(2, T_new, 8\).*got \(3, 1, 8\)"):
        cache.append(0, torch.zeros(3, 1, 8), torch.zeros(3, 1, 8))
    with pytest.raises(ValueError, match=r"one value per key.*v \(2, 2, 8\)"):
        cache.append(0, torch.zeros(2, 1, 8), torch.zeros(2, 2, 8))
    with pytest.raises(TypeError, match=r"k must have dtype torch\.float32; got torch\.float64"):
        cache.append(0, torch.zeros(2, 1, 8, dtype=torch.float64), torch.zeros(2, 1, 8))
    with pytest.raises(KeyError, match="seq_id 7 holds no tokens"):
        paged_attention(torch.zeros(2, 1, 8), cache, 7)
    cache.append(0, torch.zeros(2, 1, 8), torch.zeros(2, 1, 8))
    with pytest.raises(ValueError, match=r"n_heads a multiple of n_kv_heads = 2; got \(3, 1, 8\)"):
        paged_attention(torch.zeros(3, 1, 8), cache, 0)
    with pytest.raises(TypeError, match="cache must be a PagedKVCache; got dict"):
        paged_attention(torch.zeros(2, 1, 8), {}, 0)
    with pytest.raises(ValueError, match="length must be >= 0; got -1"):
        blocks_needed(-1, 16)
