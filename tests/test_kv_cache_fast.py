"""The decoding speed path (course_utils.kv_cache_fast) and PreallocatedKVCache.

Oracles: ``torch.nn.TransformerEncoderLayer`` run over the whole sequence with a causal mask
(PyTorch's own attention, not ours) for the blocks; ``torch.nn.functional.
scaled_dot_product_attention(is_causal=True)`` on q, k, v made with the layer's own ``nn.Linear``
projections and ``apply_rope`` for the attention layers; ``apply_rope`` itself for the RoPE
tables; ``KVCache`` (``torch.cat``) for the preallocated cache's bookkeeping. Cached decoding
must equal the full pass to ~1e-12 in float64, through capacity growth, in chunks of any size.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from course_utils.causal import CausalSelfAttention
from course_utils.kv_cache import KVCache, PreallocatedKVCache, cached_self_attention
from course_utils.kv_cache_fast import (
    decoding_layout,
    one_query_attention,
    rope_cos_sin,
    rotate_half,
    stacked_qkv,
)
from course_utils.positions import apply_rope
from course_utils.transformer import TransformerBlock

D64 = torch.float64


def _full_oracle(attn: CausalSelfAttention, x: torch.Tensor) -> torch.Tensor:
    """Causal self-attention over all of ``x`` by PyTorch's SDPA on the layer's own projections."""
    mha = attn.mha
    q = mha.split_heads(mha.W_Q(x))  # (B, h, T, d_k)
    k = mha.split_heads(mha.W_K(x), mha.n_kv_heads)  # (B, h_kv, T, d_k)
    v = mha.split_heads(mha.W_V(x), mha.n_kv_heads)  # (B, h_kv, T, d_k)
    if attn.rope_base is not None:
        q, k = apply_rope(q, base=attn.rope_base), apply_rope(k, base=attn.rope_base)
    group = mha.n_heads // mha.n_kv_heads
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)  # (B, h, T, d_k)
    context = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, h, T, d_k)
    return mha.W_O(context.transpose(1, 2).flatten(2))  # (B, T, d_model)


def _decode(layer, x: torch.Tensor, cache, chunks: list[int]) -> torch.Tensor:
    """Feed ``x`` ``(B, T, d)`` in pieces of ``chunks`` tokens through ``layer`` with ``cache``."""
    out, t = [], 0
    with torch.no_grad():
        for n in chunks:
            out.append(layer(x[:, t : t + n], cache=cache))  # (B, n, d)
            t += n
    return torch.cat(out, dim=1)  # (B, T, d)


# -- the RoPE tables and the stacked projection --------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, D64])
@pytest.mark.parametrize(("d", "base", "start"), [(8, 10000.0, 0), (64, 100000.0, 37)])
def test_rotate_half_with_tables_equals_apply_rope(dtype, d, base, start):
    g = torch.Generator().manual_seed(d)
    x = torch.randn(2, 3, 5, d, generator=g, dtype=dtype)  # (B, h, T, d)
    cos, sin = rope_cos_sin(start + 5, d, base, dtype)
    got = rotate_half(x, cos[start : start + 5], sin[start : start + 5])
    want = apply_rope(x, torch.arange(start, start + 5), base=base)
    assert torch.equal(got, want)


def test_stacked_qkv_follows_its_weights():
    torch.manual_seed(0)
    attn = CausalSelfAttention(8, 4, n_kv_heads=2).mha
    W, b = stacked_qkv(attn)
    assert torch.equal(W, torch.cat([attn.W_Q.weight, attn.W_K.weight, attn.W_V.weight]))
    assert torch.equal(b, torch.cat([attn.W_Q.bias, attn.W_K.bias, attn.W_V.bias]))
    with torch.no_grad():
        attn.W_V.bias.add_(1.0)  # in place: a new version
    assert torch.equal(stacked_qkv(attn)[1][-4:], attn.W_V.bias)
    attn.double()  # new tensors, new dtype
    W64, _ = stacked_qkv(attn)
    assert W64.dtype == D64 and torch.equal(W64[:8], attn.W_Q.weight)


def test_decoding_layout_keeps_values_and_outputs():
    torch.manual_seed(0)
    block = TransformerBlock(16, 4, 32).double().eval()
    x = torch.randn(2, 6, 16, dtype=D64)
    before = block(x, causal=True)
    state = {k: v.clone() for k, v in block.state_dict().items()}
    decoding_layout(block)
    assert block.ffn.linear1.weight.stride() == (1, 32)
    assert all(torch.equal(v, block.state_dict()[k]) for k, v in state.items())
    assert (block(x, causal=True) - before).abs().max() < 1e-12


# -- cached decoding equals the full pass --------------------------------------------------------


@pytest.mark.parametrize("cache_class", [KVCache, PreallocatedKVCache])
@pytest.mark.parametrize(
    ("n_heads", "n_kv_heads", "rope_base", "chunks"),
    [
        (4, 4, None, [3, 1, 1, 1, 1, 1]),  # MHA, a prompt then one token a step
        (4, 2, 10000.0, [1] * 8),  # GQA with RoPE, token by token
        (6, 1, 100000.0, [5, 2, 1, 4, 1]),  # MQA, RoPE, uneven pieces
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_cached_attention_equals_full_pass(cache_class, n_heads, n_kv_heads, rope_base, chunks,
                                           seed):  # fmt: skip
    torch.manual_seed(seed)
    attn = CausalSelfAttention(24, n_heads, n_kv_heads=n_kv_heads, rope_base=rope_base).double()
    x = torch.randn(2, sum(chunks), 24, dtype=D64)  # (B, T, d_model)
    cache = cache_class()
    got = _decode(attn, x, cache, chunks)
    with torch.no_grad():
        want = _full_oracle(attn, x)
    assert (got - want).abs().max() < 1e-12
    assert len(cache) == sum(chunks)


def test_preallocated_cache_grows_and_still_equals_the_full_pass():
    torch.manual_seed(0)
    attn = CausalSelfAttention(16, 4, n_kv_heads=2, rope_base=10000.0).double()
    x = torch.randn(1, 40, 16, dtype=D64)
    cache = PreallocatedKVCache(capacity=2)
    capacities = []
    with torch.no_grad():
        pieces = []
        for t in range(40):
            pieces.append(attn(x[:, t : t + 1], cache=cache))  # (1, 1, 16)
            capacities.append(cache.capacity)
        want = _full_oracle(attn, x)
    assert sorted(set(capacities)) == [2, 4, 8, 16, 32, 64]  # doubled whenever full
    assert (torch.cat(pieces, dim=1) - want).abs().max() < 1e-12


def test_block_stack_with_preallocated_cache_equals_torch_encoder_layers():
    torch.manual_seed(0)
    refs = [
        nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=True)
        .double()
        .eval()
        for _ in range(3)
    ]
    blocks = [decoding_layout(TransformerBlock.from_torch(r).eval()) for r in refs]
    x = torch.randn(2, 19, 32, dtype=D64)
    causal = nn.Transformer.generate_square_subsequent_mask(19, dtype=D64)  # -inf above
    want = x
    with torch.no_grad():
        for r in refs:
            want = r(want, src_mask=causal, is_causal=True)  # (B, T, d)
    caches = [PreallocatedKVCache(capacity=4) for _ in blocks]
    out, t = [], 0
    with torch.no_grad():
        for n in [7, 1, 1, 3, 1, 1, 1, 4]:
            h = x[:, t : t + n]
            for block, cache in zip(blocks, caches, strict=True):
                h = block(h, cache=cache)  # (B, n, d)
            out.append(h)
            t += n
    assert (torch.cat(out, dim=1) - want).abs().max() < 1e-12


@settings(max_examples=25, deadline=None)
@given(
    chunks=st.lists(st.integers(1, 5), min_size=1, max_size=8),
    capacity=st.one_of(st.none(), st.integers(1, 9)),
    rope=st.booleans(),
)
def test_any_chunking_and_capacity_gives_the_full_pass(chunks, capacity, rope):
    torch.manual_seed(len(chunks))
    attn = CausalSelfAttention(12, 3, n_kv_heads=1, rope_base=10000.0 if rope else None).double()
    x = torch.randn(1, sum(chunks), 12, dtype=D64)
    got = _decode(attn, x, PreallocatedKVCache(capacity), chunks)
    with torch.no_grad():
        assert (got - _full_oracle(attn, x)).abs().max() < 1e-12


# -- the preallocated cache's bookkeeping --------------------------------------------------------


def test_preallocated_cache_holds_what_kv_cache_holds():
    g = torch.Generator().manual_seed(0)
    plain, pre = KVCache(), PreallocatedKVCache()
    for n in (3, 1, 20, 1):
        k, v = torch.randn(2, 3, n, 4, generator=g), torch.randn(2, 3, n, 5, generator=g)
        got, want = pre.append(k, v), plain.append(k, v)
        assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
    assert len(pre) == len(plain) == 25 and pre.nbytes == plain.nbytes
    assert pre.capacity == 32 and pre.allocated_nbytes == 2 * 3 * 32 * (4 + 5) * 4
    index = torch.tensor([1, 1, 0])
    pre.reorder(index), plain.reorder(index)
    assert torch.equal(pre.keys, plain.keys) and torch.equal(pre.values, plain.values)
    pre.crop(10), plain.crop(10)
    assert torch.equal(pre.keys, plain.keys) and len(pre) == 10
    pre.clear()
    assert len(pre) == 0 and pre.keys is None and pre.allocated_nbytes == 0


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: PreallocatedKVCache(capacity=0), ValueError, "capacity must be >= 1; got 0"),
        (lambda: PreallocatedKVCache(capacity=2.0), TypeError, "capacity must be an int"),
        (lambda: PreallocatedKVCache().crop(1), ValueError, r"n must be an int in \[0, 0\]"),
    ],
)
def test_bad_arguments_are_named(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_preallocated_cache_rejects_a_mismatched_append_and_autograd():
    cache = PreallocatedKVCache()
    cache.append(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4))
    with pytest.raises(ValueError, match=r"the cache holds k of shape \(1, 2, 3, 4\)"):
        cache.append(torch.zeros(2, 2, 1, 4), torch.zeros(2, 2, 1, 4))
    k = torch.zeros(1, 2, 1, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"torch.no_grad\(\)"):
        cache.append(k, k)


@pytest.mark.parametrize("cache_class", [KVCache, PreallocatedKVCache])
def test_non_finite_tokens_take_the_readable_path(cache_class):
    torch.manual_seed(0)
    attn = CausalSelfAttention(8, 2).double()
    x = torch.randn(1, 6, 8, dtype=D64)
    x[0, 2, 0] = float("nan")
    fast_cache, slow_cache = cache_class(), cache_class()
    with torch.no_grad():
        for t in range(6):
            fast = attn(x[:, t : t + 1], cache=fast_cache)  # (1, 1, 8)
            slow = cached_self_attention(attn.mha, x[:, t : t + 1], slow_cache, fast=False)
            assert torch.equal(fast.isnan(), slow.isnan())
            assert torch.allclose(fast, slow, atol=1e-12, equal_nan=True)
        fast_cache.crop(2)  # the NaN token dropped: finite again, the speed path again
        clean = torch.randn(1, 1, 8, dtype=D64)
        assert torch.isfinite(attn(clean, cache=fast_cache)).all()


# -- one new token over keys stored transposed ---------------------------------------------------


@pytest.mark.parametrize(
    ("B", "h", "h_kv", "L", "d_k", "d_v"),
    [
        (1, 12, 12, 1, 64, 64),  # MHA, the first token
        (2, 4, 2, 37, 8, 8),  # GQA
        (1, 9, 3, 300, 64, 64),  # SmolLM2's heads
        (3, 6, 1, 5, 16, 4),  # MQA, d_v != d_k
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, D64])
def test_one_query_attention_equals_torch_sdpa(B, h, h_kv, L, d_k, d_v, dtype):
    g = torch.Generator().manual_seed(L)
    q = torch.randn(B, h, 1, d_k, generator=g, dtype=dtype)  # (B, h, 1, d_k)
    k = torch.randn(B, h_kv, L, d_k, generator=g, dtype=dtype)  # (B, h_kv, L, d_k)
    v = torch.randn(B, h_kv, L, d_v, generator=g, dtype=dtype)  # (B, h_kv, L, d_v)
    got = one_query_attention(q, k.transpose(-1, -2), v)  # (B, h, 1, d_v)
    want = F.scaled_dot_product_attention(q, k, v, enable_gqa=h != h_kv)
    assert got.shape == want.shape == (B, h, 1, d_v)
    assert (got - want).abs().max() < (1e-12 if dtype == D64 else 2e-6)


@settings(max_examples=40, deadline=None)
@given(
    group=st.integers(1, 4),
    h_kv=st.integers(1, 3),
    L=st.integers(1, 64),
    scale=st.sampled_from([1.0, 1e3, 1e6]),
)
def test_one_query_attention_weights_are_a_distribution_even_for_huge_logits(group, h_kv, L, scale):
    """Each output is a convex mix of the values (ones in, ones out) and stays finite when the
    logits are huge: the softmax subtracts its maximum."""
    g = torch.Generator().manual_seed(L)
    q = scale * torch.randn(1, group * h_kv, 1, 8, generator=g, dtype=D64)
    keys_t = torch.randn(1, h_kv, 8, L, generator=g, dtype=D64)  # (1, h_kv, d_k, L)
    out = one_query_attention(q, keys_t, torch.ones(1, h_kv, L, 3, dtype=D64))
    assert torch.isfinite(out).all() and (out - 1).abs().max() < 1e-12


def test_preallocated_cache_stores_keys_transposed():
    g = torch.Generator().manual_seed(0)
    cache = PreallocatedKVCache(capacity=4)
    for n in (3, 1, 1, 6):  # grows from 4 to 8 to 11 slots
        cache.append(torch.randn(2, 3, n, 5, generator=g), torch.randn(2, 3, n, 7, generator=g))
    keys_t = cache.transposed_keys
    assert keys_t.shape == (2, 3, 5, 11) and keys_t.stride(-1) == 1  # one column a token
    assert torch.equal(keys_t.transpose(-1, -2), cache.keys)
    cache.reorder(torch.tensor([1, 0]))
    cache.crop(7)
    assert torch.equal(cache.transposed_keys.transpose(-1, -2), cache.keys)
    assert cache.transposed_keys.shape == (2, 3, 5, 7)
    assert not hasattr(KVCache(), "transposed_keys")


def test_one_new_token_after_a_preallocated_cache_takes_the_transposed_key_path(monkeypatch):
    """The speed path is really taken (and only for one token after a PreallocatedKVCache)."""
    import course_utils.kv_cache_fast as fast

    calls = []
    real = fast.one_query_attention
    monkeypatch.setattr(fast, "one_query_attention", lambda *a: calls.append(1) or real(*a))
    torch.manual_seed(0)
    attn = CausalSelfAttention(16, 4, n_kv_heads=2, rope_base=10000.0).double()
    x = torch.randn(1, 6, 16, dtype=D64)
    _decode(attn, x, PreallocatedKVCache(), [3, 1, 1, 1])
    assert len(calls) == 3  # the 3-token prompt goes through SDPA
    _decode(attn, x, KVCache(), [3, 1, 1, 1])
    assert len(calls) == 3  # a plain cache keeps row-major keys: SDPA
