"""Causal self-attention, the KV cache and generation (chapter 7), and GQA in MultiHeadAttention."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.causal import CausalSelfAttention, TinyCausalLM, generate, train_tiny_lm
from course_utils.kv_cache import KVCache, cache_nbytes, kv_cache_bytes
from course_utils.multihead import MultiHeadAttention

D64 = torch.float64


def _attn(d_model: int, n_heads: int, n_kv_heads: int | None = None, seed: int = 0):
    torch.manual_seed(seed)
    return CausalSelfAttention(d_model, n_heads, n_kv_heads=n_kv_heads).double().eval()


@pytest.fixture(scope="module")
def tiny_run():
    return train_tiny_lm(steps=40)


# -- no peeking --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("d_model", "n_heads", "n_kv_heads"), [(8, 2, None), (12, 3, 1), (16, 4, 2)]
)
@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("t", [0, 3, 6])
def test_perturbing_the_future_leaves_the_past_bit_identical(d_model, n_heads, n_kv_heads, fast, t):
    attn = _attn(d_model, n_heads, n_kv_heads)
    g = torch.Generator().manual_seed(t)
    x = torch.randn(2, 7, d_model, dtype=D64, generator=g)  # (B, T, d_model)
    y = x.clone()
    y[:, t + 1 :] += 100 * torch.randn(2, 7 - t - 1, d_model, dtype=D64, generator=g)
    out_x, out_y = attn(x, fast=fast), attn(y, fast=fast)
    assert torch.equal(out_x[:, : t + 1], out_y[:, : t + 1])
    if t < 6:
        assert not torch.allclose(out_x[:, t + 1 :], out_y[:, t + 1 :])


@settings(max_examples=25, deadline=None)
@given(T=st.integers(2, 9), t=st.integers(0, 8), seed=st.integers(0, 10_000))
def test_no_leak_property(T, t, seed):
    t = t % (T - 1)
    attn = _attn(8, 2)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, T, 8, dtype=D64, generator=g)
    y = x.clone()
    y[:, t + 1 :] = torch.randn(1, T - t - 1, 8, dtype=D64, generator=g)
    assert torch.equal(attn(x)[:, : t + 1], attn(y)[:, : t + 1])


def test_weights_are_zero_above_the_diagonal():
    attn = _attn(8, 2)
    _, w = attn(torch.randn(1, 5, 8, dtype=D64), return_weights=True)  # (1, 2, 5, 5)
    assert torch.equal(w.triu(1), torch.zeros_like(w))
    assert torch.allclose(w.sum(-1), torch.ones(1, 2, 5, dtype=D64))


def test_trained_tiny_model_does_not_peek(tiny_run):
    model, tok = tiny_run.model, tiny_run.tokenizer
    ids = torch.tensor([tok.encode("the cat sat on the mat.")])  # (1, T)
    other = ids.clone()
    other[0, 10:] = torch.tensor(tok.encode("a dog is on a"))
    with torch.no_grad():
        a, b = model(ids), model(other)
    assert torch.equal(a[:, :10], b[:, :10])
    assert not torch.allclose(a[:, 10:], b[:, 10:])


# -- the cache equals full recomputation -------------------------------------------------------


@pytest.mark.parametrize(
    ("d_model", "n_heads", "n_kv_heads"), [(8, 2, None), (12, 3, 1), (24, 6, 2), (24, 6, 3)]
)
@pytest.mark.parametrize("chunks", [[1] * 7, [3, 4], [2, 1, 4], [7]])
@pytest.mark.parametrize("fast", [True, False])
def test_cache_equals_full(d_model, n_heads, n_kv_heads, chunks, fast):
    attn = _attn(d_model, n_heads, n_kv_heads)
    x = torch.randn(2, 7, d_model, dtype=D64)
    full = attn(x, fast=fast)  # (2, 7, d_model)
    cache, start, pieces = KVCache(), 0, []
    for n in chunks:
        pieces.append(attn(x[:, start : start + n], cache=cache, fast=fast))
        start += n
    assert len(cache) == 7
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-10, rtol=0)


def test_cache_with_rope_equals_full():
    torch.manual_seed(0)
    attn = CausalSelfAttention(16, 4, n_kv_heads=2, rope_base=100000.0).double()
    x = torch.randn(1, 6, 16, dtype=D64)
    cache = KVCache()
    steps = torch.cat([attn(x[:, i : i + 1], cache=cache) for i in range(6)], dim=1)
    torch.testing.assert_close(steps, attn(x), atol=1e-10, rtol=0)


def test_cache_reports_length_and_bytes():
    attn = _attn(12, 3, 1)
    cache = KVCache()
    assert (len(cache), cache.nbytes) == (0, 0)
    attn(torch.randn(2, 5, 12, dtype=D64), cache=cache)
    # keys + values, (B=2, n_kv_heads=1, T=5, d_k=4) float64
    assert len(cache) == 5
    assert cache.nbytes == 2 * 2 * 1 * 5 * 4 * 8
    cache.clear()
    assert len(cache) == 0


def test_kv_cache_bytes_formula_matches_a_real_cache(tiny_run):
    model = tiny_run.model
    cache = model.new_cache()
    model(torch.zeros(1, 10, dtype=torch.long), cache=cache)
    block = model.blocks[0].attn
    size = next(model.parameters()).element_size()  # 8: the tiny model is trained in float64
    n_layers = len(model.blocks)
    expected = kv_cache_bytes(n_layers, block.n_kv_heads, block.d_k, 10, bytes_per_value=size)
    assert size == 8 and cache_nbytes(cache) == expected


def test_model_cache_equals_full_in_float64(tiny_run):
    model = TinyCausalLM(len(tiny_run.tokenizer), 64).double().eval()
    model.load_state_dict({k: v.double() for k, v in tiny_run.model.state_dict().items()})
    ids = torch.tensor([tiny_run.tokenizer.encode("the dog saw the cat.")])  # (1, 20)
    with torch.no_grad():
        full = model(ids)
        cache = model.new_cache()
        parts = [model(ids[:, :5], cache=cache)]
        parts += [model(ids[:, i : i + 1], cache=cache) for i in range(5, 20)]
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=1e-10, rtol=0)


# -- generation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [0.0, 0.8, 1.5])
def test_cache_off_equals_cache_on_generation(tiny_run, temperature):
    ids = tiny_run.tokenizer.encode("the cat ")
    outs = [
        generate(
            tiny_run.model,
            ids,
            20,
            use_cache=use_cache,
            temperature=temperature,
            generator=torch.Generator().manual_seed(3),
        )
        for use_cache in (True, False)
    ]
    assert outs[0].shape == (1, 28)
    assert torch.equal(outs[0], outs[1])


def test_greedy_generation_is_the_argmax_of_the_full_pass(tiny_run):
    out = generate(tiny_run.model, tiny_run.tokenizer.encode("the "), 5)
    with torch.no_grad():
        logits = tiny_run.model(out[:, :-1])  # (1, 8, vocab)
    assert torch.equal(logits[0, 3:].argmax(-1), out[0, 4:])


# -- GQA in MultiHeadAttention --------------------------------------------------------------------


@pytest.mark.parametrize(("n_heads", "n_kv_heads"), [(6, 6), (6, 3), (6, 2), (6, 1), (9, 3)])
@pytest.mark.parametrize("masked", [False, True])
def test_gqa_matches_sdpa_enable_gqa(n_heads, n_kv_heads, masked):
    torch.manual_seed(n_heads * 10 + n_kv_heads)
    d_model = 4 * n_heads
    mha = MultiHeadAttention(d_model, n_heads, n_kv_heads).double()
    assert mha.W_K.weight.shape == (n_kv_heads * 4, d_model)
    x = torch.randn(2, 5, d_model, dtype=D64)
    mask = torch.ones(5, 5, dtype=torch.bool).tril() if masked else None
    q = mha.W_Q(x).view(2, 5, n_heads, 4).transpose(1, 2)
    k = mha.W_K(x).view(2, 5, n_kv_heads, 4).transpose(1, 2)
    v = mha.W_V(x).view(2, 5, n_kv_heads, 4).transpose(1, 2)
    ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    ref = mha.W_O(ctx.transpose(1, 2).reshape(2, 5, d_model))
    for fast in (True, False):
        torch.testing.assert_close(mha(x, x, x, mask, fast=fast), ref, atol=1e-10, rtol=0)
    _, w = mha(x, x, x, mask, return_weights=True)
    assert w.shape == (2, n_heads, 5, 5)


@pytest.mark.parametrize(("n_heads", "n_kv_heads"), [(6, 4), (4, 3), (2, 5)])
def test_gqa_rejects_n_kv_heads_that_do_not_divide(n_heads, n_kv_heads):
    with pytest.raises(ValueError, match="n_kv_heads must divide n_heads"):
        MultiHeadAttention(4 * n_heads, n_heads, n_kv_heads)


def test_gqa_default_is_plain_mha():
    mha = MultiHeadAttention(8, 2)
    assert mha.n_kv_heads == 2
    assert sum(p.numel() for p in mha.parameters()) == 4 * 8 * 8 + 4 * 8
    assert (
        sum(p.numel() for p in MultiHeadAttention(8, 2, 1).parameters())
        == 2 * 64 + 2 * 32 + 8 + 8 + 4 + 4
    )


# -- bad input -----------------------------------------------------------------------------------


def test_cache_from_another_batch_size_is_an_error():
    attn = _attn(8, 2)
    cache = KVCache()
    attn(torch.randn(2, 3, 8, dtype=D64), cache=cache)
    with pytest.raises(ValueError, match=r"cache holds 2 sequence\(s\).*x has shape \(3, 1, 8\)"):
        attn(torch.randn(3, 1, 8, dtype=D64), cache=cache)


def test_cache_from_another_layer_is_an_error():
    cache = KVCache()
    _attn(8, 2)(torch.randn(1, 3, 8, dtype=D64), cache=cache)
    with pytest.raises(ValueError, match="filled by another layer"):
        _attn(12, 3, 1)(torch.randn(1, 1, 12, dtype=D64), cache=cache)


@pytest.mark.parametrize(
    ("x", "error", "match"),
    [
        (
            torch.randn(1, 3, 6, dtype=D64),
            ValueError,
            r"x has shape \(1, 3, 6\), expected \(B, T, d_model\) with d_model = 8",
        ),
        (torch.randn(3, 8, dtype=D64), ValueError, r"x has shape \(3, 8\)"),
        (torch.randn(1, 0, 8, dtype=D64), ValueError, "T >= 1"),
        (torch.ones(1, 3, 8, dtype=torch.long), TypeError, "floating-point"),
        (torch.randn(1, 3, 8), TypeError, "dtype torch.float32, expected torch.float64"),
        ([[1.0] * 8], TypeError, "got list"),
    ],
)
def test_bad_x(x, error, match):
    with pytest.raises(error, match=match):
        _attn(8, 2)(x)


def test_bad_cache_and_generate_arguments(tiny_run):
    with pytest.raises(TypeError, match="cache must be a KVCache"):
        _attn(8, 2)(torch.randn(1, 2, 8, dtype=D64), cache=[])
    with pytest.raises(ValueError, match="n_new"):
        generate(tiny_run.model, [1, 2], -1)
    with pytest.raises(ValueError, match="max_new_tokens"):  # the other name of n_new
        generate(tiny_run.model, [1, 2], max_new_tokens=-1)
    with pytest.raises(ValueError, match="temperature"):
        generate(tiny_run.model, [1, 2], 3, temperature=-1.0)
    with pytest.raises(ValueError, match="max_len = 64"):
        generate(tiny_run.model, [1] * 60, 10)


# -- bad input to generate() and KVCache.append (issue 33, §4) ----------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"ids": [1, 999]}, ValueError, r"^ids must lie in \[0, vocab_size = \d+\); got ids from"),
        ({"ids": [-1, 2]}, ValueError, r"^ids must lie in \[0, vocab_size"),
        ({"ids": torch.tensor([[1, 2]], dtype=torch.bool)}, TypeError, r"^ids must be integer"),
        ({"ids": torch.tensor([[1.0, 2.0]])}, TypeError, r"^ids must be integer.*float32"),
        ({"ids": [1.0, 2.0]}, TypeError, r"^ids must be a list of ints"),
        ({"ids": 5}, TypeError, r"^ids must be a \(B, T\) integer tensor or a list of ints"),
        ({"ids": torch.tensor([1, 2])}, ValueError, r"^ids must be integer token ids \(B, T\)"),
        ({"temperature": float("nan")}, ValueError, r"^temperature must be a finite number"),
        ({"temperature": float("inf")}, ValueError, r"^temperature must be a finite number"),
        ({"temperature": "1"}, ValueError, r"^temperature must be a finite number"),
        ({"max_new_tokens": 2.0}, TypeError, r"^n_new must be an int"),
        ({"max_new_tokens": True}, TypeError, r"^n_new must be an int"),
        ({"use_cache": "yes"}, TypeError, r"^use_cache must be True or False"),
        ({"generator": 0}, TypeError, r"^generator must be a torch.Generator"),
    ],
)
def test_generate_validates_its_arguments(tiny_run, kwargs, error, match):
    args = {"ids": [1, 2], "max_new_tokens": 2} | kwargs
    ids, n = args.pop("ids"), args.pop("max_new_tokens")
    with pytest.raises(error, match=match):
        generate(tiny_run.model, ids, n, **args)


def test_tiny_lm_refuses_out_of_vocabulary_ids(tiny_run):
    with pytest.raises(ValueError, match=r"^ids must lie in \[0, vocab_size"):
        tiny_run.model(torch.tensor([[0, len(tiny_run.tokenizer)]]))


def _kv(b=1, h=2, t=3, d=4, dtype=torch.float32):
    return torch.zeros(b, h, t, d, dtype=dtype)


@pytest.mark.parametrize(
    ("held", "k", "v", "error", "match"),
    [
        (None, _kv(t=3), _kv(t=5), ValueError, r"^k has shape \(1, 2, 3, 4\) and v \(1, 2, 5, 4\)"),
        (None, _kv(b=2), _kv(b=1), ValueError, r"must agree on \(B, n_kv_heads, T_new\)"),
        (None, _kv(h=2), _kv(h=1), ValueError, r"must agree on \(B, n_kv_heads, T_new\)"),
        (None, _kv(), _kv(dtype=D64), TypeError, r"^k and v must have one dtype"),
        (None, _kv()[0], _kv()[0], ValueError, r"^k must have 4 dimensions"),
        (None, [[1.0]], _kv(), TypeError, r"^k must be a torch.Tensor"),
        (None, _kv().long(), _kv(), TypeError, r"^k must be a floating-point tensor"),
        (_kv(), _kv(b=2), _kv(b=2), ValueError, r"^the cache holds k of shape \(1, 2, 3, 4\)"),
        (_kv(), _kv(h=1), _kv(h=1), ValueError, r"expected \(1, 2, T_new, 4\)"),
        (_kv(), _kv(d=8), _kv(d=8), ValueError, r"^the cache holds k"),
        (_kv(), _kv(), _kv(d=8), ValueError, r"^the cache holds v"),
        (_kv(), _kv(dtype=D64), _kv(dtype=D64), TypeError, r"holds k of dtype torch.float32"),
    ],
)
def test_kv_cache_append_refuses_mismatches(held, k, v, error, match):
    cache = KVCache()
    if held is not None:
        cache.append(held, held)
    with pytest.raises(error, match=match):
        cache.append(k, v)
    assert len(cache) == (0 if held is None else 3)  # nothing was appended


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: CausalSelfAttention(8, 2, rope_base=float("nan")), ValueError, r"^rope_base"),
        (lambda: CausalSelfAttention(8, 2, rope_base="1e4"), TypeError, r"^rope_base must be"),
        (lambda: TinyCausalLM(-5, 16), ValueError, r"^vocab_size must be >= 1"),
        (lambda: TinyCausalLM(5, 16.0), TypeError, r"^max_len must be an int"),
    ],
)
def test_constructors_check_their_sizes(make, error, match):
    with pytest.raises(error, match=match):
        make()
