"""StreamingKVCache (StreamingLLM, Xiao et al. 2023): what it keeps, and that attention through it
equals an explicit full computation restricted to the kept positions.

The oracle builds q, k, v for the whole sequence with the layer's own ``nn.Linear`` projections,
then for every query ``t`` takes the keys the StreamingLLM rule says it sees (``j < n_sink`` or
``t - window < j <= t``), numbers them 0, 1, ... in that order for RoPE (positions in the cache,
the query last), and computes softmax attention by hand. Nothing of the cache's bookkeeping or of
``cached_self_attention`` is reused.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from course_utils.causal import CausalSelfAttention
from course_utils.kv_cache import KVCache, StreamingKVCache
from course_utils.positions import apply_rope

D64 = torch.float64


def _feed(cache: StreamingKVCache, steps: list[int]) -> None:
    """Append ``steps[i]`` tokens at a time; each key/value holds its stream position."""
    t = cache.seen
    for n in steps:
        pos = torch.arange(t, t + n, dtype=D64)  # (n,)
        kv = pos[None, None, :, None].expand(1, 2, n, 3)  # (1, 2, n, 3): the position everywhere
        cache.append(kv, kv + 0.5)
        t += n


# -- what it keeps ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "n_sink", "steps", "kept"),
    [
        (3, 2, [1] * 8, [0, 1, 5, 6, 7]),
        (3, 0, [1] * 8, [5, 6, 7]),  # n_sink = 0: a plain rolling window
        (5, 4, [1] * 20, [0, 1, 2, 3, 15, 16, 17, 18, 19]),  # the paper's 4 sinks
        (1, 0, [1] * 5, [4]),
        (2, 4, [1] * 3, [0, 1, 2]),  # shorter than the sinks: everything
        (2, 4, [6], [0, 1, 2, 3, 4, 5]),  # exactly n_sink + window at once
        (4, 1, [3, 3], [0, 2, 3, 4, 5]),  # room for 3 new: 1 sink + 1 old + 3 new
        (1, 1, [2, 1, 1], [0, 3]),
        (6, 2, [8, 1, 1, 6], [0, 1, 10, 11, 12, 13, 14, 15]),  # a prompt, then pieces
    ],
)
def test_what_it_keeps(window, n_sink, steps, kept):
    cache = StreamingKVCache(window=window, n_sink=n_sink)
    _feed(cache, steps)
    assert cache.positions == kept
    assert len(cache) == len(kept) <= cache.capacity == n_sink + window
    assert cache.seen == sum(steps)
    assert cache.keys[0, 0, :, 0].tolist() == kept  # the tensors hold those tokens, in order
    assert cache.values[0, 1, :, 2].tolist() == [p + 0.5 for p in kept]


@given(
    window=st.integers(1, 6),
    n_sink=st.integers(0, 4),
    n_tokens=st.integers(1, 40),
)
def test_one_token_at_a_time_keeps_the_sinks_and_the_last_window(window, n_sink, n_tokens):
    cache = StreamingKVCache(window=window, n_sink=n_sink)
    _feed(cache, [1] * n_tokens)
    t = n_tokens - 1
    assert cache.positions == [j for j in range(n_tokens) if j < n_sink or j > t - window]


@given(
    window=st.integers(1, 6),
    n_sink=st.integers(0, 4),
    steps=st.lists(st.integers(1, 6), min_size=1, max_size=10),
)
def test_any_pieces_keep_sinks_then_a_recent_run_ending_now(window, n_sink, steps):
    """Whatever the pieces: the first min(seen, n_sink) positions, then consecutive positions
    ending at the newest token, never more than n_sink + window; too big a piece is refused."""
    cache = StreamingKVCache(window=window, n_sink=n_sink)
    for n in steps:
        sinks = min(len(cache), n_sink)
        if sinks + n > cache.capacity:
            with pytest.raises(ValueError, match="do not fit in this StreamingKVCache"):
                _feed(cache, [n])
            continue
        _feed(cache, [n])
        held, s = cache.positions, min(cache.seen, n_sink)
        assert held[:s] == list(range(s))
        recent = held[s:]
        assert recent == list(range(cache.seen - len(recent), cache.seen))
        assert len(held) <= cache.capacity
        assert len(recent) >= min(n, cache.seen - s)  # the new piece is always held whole


# -- attention through it equals the explicit oracle -------------------------------------------


def _oracle(attn: CausalSelfAttention, x: torch.Tensor, window: int, n_sink: int) -> torch.Tensor:
    """Full explicit attention, query ``t`` restricted to ``j < n_sink or t - window < j <= t``,
    RoPE positions 0, 1, ... over those keys in order (StreamingLLM's positions in the cache)."""
    mha = attn.mha
    B, T, _ = x.shape
    h, h_kv, d = mha.n_heads, mha.n_kv_heads, mha.d_k
    q = mha.W_Q(x).view(B, T, h, d).transpose(1, 2)  # (B, h, T, d)
    k = mha.W_K(x).view(B, T, h_kv, d).transpose(1, 2)  # (B, h_kv, T, d)
    v = mha.W_V(x).view(B, T, h_kv, d).transpose(1, 2)  # (B, h_kv, T, d)
    k, v = k.repeat_interleave(h // h_kv, 1), v.repeat_interleave(h // h_kv, 1)  # (B, h, T, d)
    rows = []
    for t in range(T):
        seen = [j for j in range(t + 1) if j < n_sink or j > t - window]
        ks, vs, qt = k[:, :, seen], v[:, :, seen], q[:, :, t : t + 1]  # (B, h, S, d) / (B, h, 1, d)
        if attn.rope_base is not None:
            pos = torch.arange(len(seen))  # (S,) positions in the cache, the query last
            ks = apply_rope(ks, pos, base=attn.rope_base)  # (B, h, S, d)
            qt = apply_rope(qt, pos[-1:], base=attn.rope_base)  # (B, h, 1, d)
        w = torch.softmax(qt @ ks.transpose(-2, -1) / math.sqrt(d), dim=-1)  # (B, h, 1, S)
        rows.append((w @ vs).transpose(1, 2).reshape(B, 1, h * d))  # (B, 1, h * d)
    return mha.W_O(torch.cat(rows, dim=1))  # (B, T, d_model)


@pytest.mark.parametrize(
    ("window", "n_sink", "rope_base", "n_kv_heads", "prompt"),
    [
        (4, 2, None, None, 1),
        (4, 0, None, None, 1),
        (3, 4, 10000.0, None, 1),
        (5, 1, 10000.0, 1, 1),
        (4, 2, 100.0, 2, 6),  # a 6-token prompt at once (fits n_sink + window), then one by one
        (1, 0, 10000.0, None, 1),  # window 1: each token sees only itself
        (2, 3, 10000.0, None, 5),
    ],
)
def test_cached_attention_equals_full_attention_on_the_kept_positions(
    window, n_sink, rope_base, n_kv_heads, prompt
):
    torch.manual_seed(window * 10 + n_sink)
    attn = CausalSelfAttention(8, 4, n_kv_heads=n_kv_heads, rope_base=rope_base).double().eval()
    x = torch.randn(2, 15, 8, dtype=D64)  # (B, T, d_model)
    cache = StreamingKVCache(window=window, n_sink=n_sink)
    with torch.no_grad():
        parts = [attn(x[:, :prompt], cache=cache)]  # (B, prompt, d_model)
        parts += [attn(x[:, t : t + 1], cache=cache) for t in range(prompt, 15)]  # (B, 1, d) each
        expected = _oracle(attn, x, window, n_sink)  # (B, T, d_model)
    got = torch.cat(parts, dim=1)  # (B, T, d_model)
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)
    assert len(cache) == min(15, n_sink + window)


def test_a_cache_that_never_fills_is_the_plain_kv_cache():
    torch.manual_seed(1)
    attn = CausalSelfAttention(8, 2, rope_base=10000.0).double().eval()
    x = torch.randn(1, 9, 8, dtype=D64)  # (B, T, d_model)
    plain, streaming = KVCache(), StreamingKVCache(window=9, n_sink=0)
    with torch.no_grad():
        a = [attn(x[:, :4], cache=plain)] + [
            attn(x[:, t : t + 1], cache=plain) for t in range(4, 9)
        ]
        b = [attn(x[:, :4], cache=streaming)]
        b += [attn(x[:, t : t + 1], cache=streaming) for t in range(4, 9)]
    torch.testing.assert_close(torch.cat(b, 1), torch.cat(a, 1), atol=1e-12, rtol=0)
    torch.testing.assert_close(torch.cat(a, 1), attn(x), atol=1e-12, rtol=0)


def test_reorder_clear_and_repr():
    cache = StreamingKVCache(window=2, n_sink=1)
    k = torch.arange(2.0).reshape(2, 1, 1, 1).expand(2, 1, 3, 1)  # (B=2, 1, T=3, 1)
    cache.append(k, k)
    cache.reorder(torch.tensor([1, 1, 0]))  # beam search keeps working: positions are shared
    assert cache.keys[:, 0, 0, 0].tolist() == [1.0, 1.0, 0.0] and cache.positions == [0, 1, 2]
    assert repr(cache).startswith("StreamingKVCache(window=2, n_sink=1, 3 of 3 tokens held, 3 seen")
    cache.clear()
    assert (len(cache), cache.positions, cache.seen, cache.nbytes) == (0, [], 0, 0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"window": 0}, ValueError, r"^window must be >= 1; got 0"),
        ({"window": 2.0}, TypeError, r"^window must be an int"),
        ({"window": 3, "n_sink": -1}, ValueError, r"^n_sink must be >= 0; got -1"),
        ({"window": 3, "n_sink": True}, TypeError, r"^n_sink must be an int"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        StreamingKVCache(**kwargs)


def test_an_append_that_cannot_fit_is_refused_and_changes_nothing():
    cache = StreamingKVCache(window=3, n_sink=2)
    _feed(cache, [4])
    msg = r"^4 new tokens do not fit .*window = 3, n_sink = 2: at most 5 tokens, 2 of them sinks"
    with pytest.raises(ValueError, match=msg):
        _feed(cache, [4])
    assert cache.positions == [0, 1, 2, 3] and cache.seen == 4
    with pytest.raises(ValueError, match=r"^k has shape .* and v"):  # KVCache's own checks
        cache.append(torch.zeros(1, 2, 1, 3), torch.zeros(1, 2, 2, 3))
    assert cache.positions == [0, 1, 2, 3]


# -- SmolLM2 runs with it -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.xdist_group("smollm2")
def test_smollm2_streams_with_a_bounded_cache(smollm2_ours):
    """One StreamingKVCache per layer: until the cache is full the logits are the full forward
    pass's; after that every layer holds n_sink + window tokens and the logits stay finite."""
    model = smollm2_ours
    ids = torch.tensor([model.tokenizer.encode("The cat sat on the mat. The dog sat on the log.")])
    T = ids.size(1)
    caches = [StreamingKVCache(window=6, n_sink=2) for _ in model.layers]
    with torch.no_grad():
        full = model(ids)  # (1, T, vocab)
        steps = torch.cat([model(ids[:, t : t + 1], cache=caches) for t in range(T)], 1)
    assert T > 8
    torch.testing.assert_close(steps[:, :8], full[:, :8], atol=1e-3, rtol=0)  # float32 logits ~10
    assert torch.isfinite(steps).all()
    assert {len(c) for c in caches} == {8} and caches[0].positions == [0, 1, *range(T - 6, T)]
