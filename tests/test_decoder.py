"""DecoderBlock against torch.nn.TransformerDecoderLayer (the oracle), masks, errors."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from course_utils.decoder import DecoderBlock
from course_utils.masks import causal_mask, key_padding_mask


def _pair(d_model, n_heads, d_ff, *, norm_first, activation, bias=True, seed=0):
    torch.manual_seed(seed)
    ref = nn.TransformerDecoderLayer(
        d_model, n_heads, d_ff, dropout=0.1, activation=activation, batch_first=True,
        norm_first=norm_first, bias=bias, dtype=torch.float64,
    ).eval()  # fmt: skip
    return ref, DecoderBlock.from_torch(ref).eval()


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize(
    ("B", "T_q", "T_k", "d_model", "n_heads", "bias"),
    [(2, 3, 5, 8, 2, True), (3, 6, 4, 12, 3, True), (1, 1, 7, 16, 4, False), (4, 5, 5, 8, 1, True)],
)
def test_equals_torch_decoder_layer_with_causal_and_padding_masks(
    norm_first, activation, B, T_q, T_k, d_model, n_heads, bias
):
    ref, ours = _pair(d_model, n_heads, 2 * d_model, norm_first=norm_first,
                      activation=activation, bias=bias, seed=T_q + T_k)  # fmt: skip
    g = torch.Generator().manual_seed(B * 10 + T_k)
    x = torch.randn(B, T_q, d_model, generator=g, dtype=torch.float64)  # (B, T_q, d_model)
    memory = torch.randn(B, T_k, d_model, generator=g, dtype=torch.float64)  # (B, T_k, d_model)
    lengths = [max(1, T_k - i) for i in range(B)]  # every source keeps at least one token
    keep = torch.from_numpy(key_padding_mask(lengths, T_k))  # (B, T_k), True = real token
    causal = torch.from_numpy(causal_mask(T_q))  # (T_q, T_q)
    with torch.no_grad():
        expected = ref(x, memory, tgt_mask=~causal, memory_key_padding_mask=~keep)
        got = ours(x, memory, self_mask=causal, memory_mask=keep[:, None, :])
        plain = ours(x, memory)
        plain_ref = ref(x, memory)
    assert (got - expected).abs().max() < 1e-10
    assert (plain - plain_ref).abs().max() < 1e-10


def test_weights_padding_gets_exactly_zero_and_rows_sum_to_one():
    torch.manual_seed(0)
    block = DecoderBlock(8, 2, 16).eval()
    x, memory = torch.randn(2, 3, 8), torch.randn(2, 6, 8)
    keep = torch.from_numpy(key_padding_mask([6, 2], 6))
    _, w = block(x, memory, self_mask=torch.from_numpy(causal_mask(3)),
                 memory_mask=keep[:, None, :], return_weights=True)  # fmt: skip
    assert w.cross.shape == (2, 2, 3, 6) and w.self_attn.shape == (2, 2, 3, 3)
    assert torch.all(w.cross[1, :, :, 2:] == 0)
    assert torch.allclose(w.cross.sum(-1), torch.ones(2, 2, 3))
    assert torch.all(w.self_attn.triu(1) == 0)


def test_output_ignores_padding_content_when_masked():
    torch.manual_seed(1)
    block = DecoderBlock(8, 2, 16).eval()
    x, memory = torch.randn(1, 3, 8), torch.randn(1, 5, 8)
    keep = torch.from_numpy(key_padding_mask([3], 5))[:, None, :]  # (1, 1, 5)
    other = memory.clone()
    other[:, 3:] = 100.0  # different padding vectors
    a = block(x, memory, memory_mask=keep)
    b = block(x, other, memory_mask=keep)
    assert torch.allclose(a, b)
    assert not torch.allclose(block(x, memory), block(x, other))


def test_dropout_is_active_only_in_training():
    torch.manual_seed(2)
    block = DecoderBlock(8, 2, 16, dropout=0.5)
    x, memory = torch.randn(1, 4, 8), torch.randn(1, 5, 8)
    assert not torch.allclose(block(x, memory), block(x, memory))
    block.eval()
    assert torch.allclose(block(x, memory), block(x, memory))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"d_model": 8, "n_heads": 3, "d_ff": 16}, ValueError, "divisible"),
        ({"d_model": 8, "n_heads": 2, "d_ff": 0}, ValueError, "d_ff"),
        ({"d_model": 8, "n_heads": 2, "d_ff": 16, "activation": "tanh"}, ValueError, "activation"),
        ({"d_model": 8, "n_heads": 2, "d_ff": 16, "norm_first": 1}, TypeError, "norm_first"),
    ],
)
def test_bad_construction(kwargs, error, match):
    with pytest.raises(error, match=match):
        DecoderBlock(**kwargs)


def test_bad_inputs():
    block = DecoderBlock(8, 2, 16)
    x, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=r"memory has shape \(2, 5, 4\)"):
        block(x, torch.randn(2, 5, 4))
    with pytest.raises(ValueError, match="same batch size"):
        block(x, torch.randn(3, 5, 8))
    with pytest.raises(TypeError, match="x must be a floating-point"):
        block(x.long(), memory)
    with pytest.raises(ValueError, match="mask has shape"):
        block(x, memory, memory_mask=torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="TransformerDecoderLayer"):
        DecoderBlock.from_torch(nn.TransformerEncoderLayer(8, 2, batch_first=True))
    with pytest.raises(ValueError, match="batch_first"):
        DecoderBlock.from_torch(nn.TransformerDecoderLayer(8, 2))


@settings(max_examples=25, deadline=None)
@given(
    t_q=st.integers(1, 6),
    t_k=st.integers(1, 6),
    n_heads=st.sampled_from([1, 2, 4]),
    norm_first=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_causal_decoder_step_ignores_later_steps_and_padding(t_q, t_k, n_heads, norm_first, seed):
    """Output step i depends on steps <= i only, and never on the padding's content."""
    torch.manual_seed(seed)
    block = DecoderBlock(8, n_heads, 16, norm_first=norm_first).double().eval()
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, t_q, 8, generator=g, dtype=torch.float64)
    memory = torch.randn(1, t_k + 2, 8, generator=g, dtype=torch.float64)  # 2 padding positions
    keep = torch.from_numpy(key_padding_mask([t_k], t_k + 2))[:, None, :]  # (1, 1, t_k + 2)
    causal = torch.from_numpy(causal_mask(t_q))
    changed_x, changed_mem = x.clone(), memory.clone()
    changed_x[:, -1] += 5.0  # change the last output step only
    changed_mem[:, t_k:] = torch.randn(1, 2, 8, generator=g, dtype=torch.float64) * 10
    with torch.no_grad():
        a = block(x, memory, self_mask=causal, memory_mask=keep)
        b = block(changed_x, changed_mem, self_mask=causal, memory_mask=keep)
    assert torch.allclose(a[:, :-1], b[:, :-1], atol=1e-12)


@pytest.mark.parametrize(
    ("lengths", "t_k", "error", "match"),
    [
        ([], None, ValueError, "non-empty"),
        ([[1, 2]], None, ValueError, r"lengths must be a non-empty 1-d"),
        ([1.5, 2.0], None, TypeError, "ints"),
        ([0, 2], None, ValueError, ">= 1"),
        ([3, 5], 4, ValueError, "shorter than the longest"),
    ],
)
def test_key_padding_mask_errors(lengths, t_k, error, match):
    with pytest.raises(error, match=match):
        key_padding_mask(lengths, t_k)


def test_key_padding_mask_accepts_tensors_and_numpy():
    import numpy as np

    expected = key_padding_mask([2, 1], 3)
    assert np.array_equal(key_padding_mask(torch.tensor([2, 1]), 3), expected)
    assert np.array_equal(key_padding_mask(np.array([2, 1]), 3), expected)
    assert expected.dtype == np.bool_ and expected.shape == (2, 3)


# --- a float64 input to a float32 block: a clear error, as MultiHeadAttention's -------------------


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (
            lambda: (torch.randn(1, 3, 8, dtype=torch.float64), torch.randn(1, 4, 8)),
            r"^x has dtype torch.float64, expected torch.float32 .*\.double\(\)",
        ),
        (
            lambda: (torch.randn(1, 3, 8), torch.randn(1, 4, 8, dtype=torch.float64)),
            r"^memory has dtype torch.float64, expected torch.float32",
        ),
    ],
)
def test_decoder_refuses_an_input_of_another_dtype(args, match):
    with pytest.raises(TypeError, match=match):
        DecoderBlock(8, 2, 16)(*args())


def test_decoder_return_weights_must_be_a_bool():
    x = torch.randn(1, 3, 8)
    with pytest.raises(TypeError, match=r"^return_weights must be True or False"):
        DecoderBlock(8, 2, 16)(x, x, return_weights="yes")


# --- decoding with a cached source: DecoderBlock.cross_kv + DecoderBlock.step ---------------------


def _seeded_block(n_heads, norm_first, seed):
    """A float64 decoder block (d_model 8, d_ff 16) and a generator, both seeded with ``seed``."""
    torch.manual_seed(seed)
    return DecoderBlock(8, n_heads, 16, norm_first=norm_first).double().eval(), (
        torch.Generator().manual_seed(seed)
    )


def _step_through(block, x, memory, keep, chunks):
    """Run ``x`` through ``block.step`` in pieces of the given lengths; the outputs, joined."""
    from course_utils.kv_cache import KVCache

    cross, cache = block.cross_kv(memory, keep), KVCache()
    outs, start = [], 0
    for n in chunks:
        outs.append(block.step(x[:, start : start + n], cross, cache))  # (B, n, d_model)
        start += n
    assert len(cache) == x.size(1)
    return torch.cat(outs, dim=1)  # (B, T_q, d_model)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize(
    ("B", "T_q", "T_k", "d_model", "n_heads", "chunks"),
    [(2, 4, 5, 8, 2, (1, 1, 1, 1)), (3, 6, 9, 12, 3, (2, 1, 3)), (1, 5, 1, 16, 4, (5,)),
     (2, 3, 7, 8, 1, (1, 2))],
)  # fmt: skip
def test_cached_steps_equal_torch_decoder_layer_on_the_whole_sequence(
    norm_first, activation, B, T_q, T_k, d_model, n_heads, chunks
):
    """Oracle: PyTorch's TransformerDecoderLayer on the whole prefix (causal, padded source),
    against our block fed a few tokens at a time with the source's K/V projected once."""
    ref, ours = _pair(d_model, n_heads, 2 * d_model, norm_first=norm_first,
                      activation=activation, seed=T_q * T_k)  # fmt: skip
    g = torch.Generator().manual_seed(B + T_k)
    x = torch.randn(B, T_q, d_model, generator=g, dtype=torch.float64)  # (B, T_q, d_model)
    memory = torch.randn(B, T_k, d_model, generator=g, dtype=torch.float64)  # (B, T_k, d_model)
    keep = torch.from_numpy(key_padding_mask([max(1, T_k - i) for i in range(B)], T_k))  # (B, T_k)
    causal = torch.from_numpy(causal_mask(T_q))  # (T_q, T_q)
    with torch.no_grad():
        theirs = ref(x, memory, tgt_mask=~causal, memory_key_padding_mask=~keep)
        mine = _step_through(ours, x, memory, keep[:, None, :], chunks)
    assert (mine - theirs).abs().max().item() < 1e-12


@settings(max_examples=25, deadline=None)
@given(
    cuts=st.lists(st.integers(1, 3), min_size=1, max_size=5),
    t_k=st.integers(1, 7),
    n_heads=st.sampled_from([1, 2, 4]),
    norm_first=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_any_split_into_steps_equals_the_full_pass(cuts, t_k, n_heads, norm_first, seed):
    """However the output is cut into steps, the cached block gives the full causal pass."""
    block, g = _seeded_block(n_heads, norm_first, seed)
    t_q = sum(cuts)
    x = torch.randn(2, t_q, 8, generator=g, dtype=torch.float64)  # (2, t_q, 8)
    memory = torch.randn(2, t_k, 8, generator=g, dtype=torch.float64)  # (2, t_k, 8)
    keep = torch.from_numpy(key_padding_mask([t_k, max(1, t_k - 2)], t_k))[:, None, :]
    with torch.no_grad():
        full = block(x, memory, self_mask=torch.from_numpy(causal_mask(t_q)), memory_mask=keep)
        steps = _step_through(block, x, memory, keep, cuts)
    assert (steps - full).abs().max().item() < 1e-12


def test_steps_never_project_the_memory_again():
    """The cross-attention's W_K and W_V run once per source (in cross_kv), never in a step."""
    from course_utils.kv_cache import KVCache

    torch.manual_seed(0)
    block = DecoderBlock(8, 2, 16).eval()
    calls = []
    for name in ("W_K", "W_V"):
        getattr(block.cross_attn, name).register_forward_hook(
            lambda m, inp, out, name=name: calls.append((name, tuple(inp[0].shape)))
        )
    cross, cache = block.cross_kv(torch.randn(1, 6, 8)), KVCache()
    assert calls == [("W_K", (1, 6, 8)), ("W_V", (1, 6, 8))]
    with torch.no_grad():
        for _ in range(5):
            block.step(torch.randn(1, 1, 8), cross, cache)
    assert len(calls) == 2 and len(cache) == 5


def test_cached_step_bad_inputs():
    from course_utils.decoder import CrossKV
    from course_utils.kv_cache import KVCache

    block = DecoderBlock(8, 2, 16).eval()
    memory = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=r"memory_mask has shape \(2, 5\), expected \(2, 1, 5\)"):
        block.cross_kv(memory, torch.ones(2, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match=r"memory_mask must be a boolean.*got dtype torch.int64"):
        block.cross_kv(memory, torch.ones(2, 1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"memory has shape \(2, 0, 8\).*T_k >= 1"):
        block.cross_kv(torch.randn(2, 0, 8))
    with pytest.raises(ValueError, match=r"memory has shape \(2, 5, 4\)"):
        block.cross_kv(torch.randn(2, 5, 4))
    cross = block.cross_kv(memory)
    x = torch.randn(2, 1, 8)
    with pytest.raises(TypeError, match=r"cross must be the CrossKV.*got Tensor"):
        block.step(x, memory, KVCache())
    with pytest.raises(TypeError, match="cache must be a KVCache; got NoneType"):
        block.step(x, cross, None)
    with pytest.raises(ValueError, match=r"cross holds keys \(2, 2, 5, 4\).*batch size 3"):
        block.step(torch.randn(3, 1, 8), cross, KVCache())
    with pytest.raises(ValueError, match=r"x has shape \(2, 8\), expected \(B, T_new, d_model\)"):
        block.step(torch.randn(2, 8), cross, KVCache())
    with pytest.raises(ValueError, match=r"call \.eval"):
        DecoderBlock(8, 2, 16, dropout=0.1).train().step(x, cross, KVCache())
    assert isinstance(cross, CrossKV) and len(cross) == 5
