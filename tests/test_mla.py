"""Tests of course_utils.mla (multi-head latent attention) and course_utils.kv_cache.

Oracle: ``transformers``' ``DeepseekV3Attention`` (DeepSeek-V2's MLA) with the same weights, in
float64. The reference rounds through float32 in three places even for float64 input, and each
is kept in float64 here WITHOUT touching the reference's attention maths:

1. its RMSNorm (``DeepseekV3RMSNorm.forward`` casts to float32): patched, for the test only, by
   the same formula in the input's dtype (``_rms_norm_float64``, monkeypatch);
2. its rotary tables (``DeepseekV3RotaryEmbedding`` computes cos/sin in float32): we build the
   ``(cos, sin)`` it expects ourselves, in float64, with its own formula
   ``inv_freq = 1 / base^(2i/d)``, ``emb = cat(freqs, freqs)``, and pass them in;
3. its "eager" softmax (``dtype=torch.float32``): we select ``attn_implementation="sdpa"``,
   i.e. ``torch.nn.functional.scaled_dot_product_attention``, which stays in float64, with an
   explicit float64 additive causal mask.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers.models.deepseek_v3 import modeling_deepseek_v3 as ds
from transformers.models.deepseek_v3.configuration_deepseek_v3 import DeepseekV3Config

from course_utils import kv_cache as kvc
from course_utils.mla import (
    LatentCache,
    MultiHeadLatentAttention,
    PlainLatentAttention,
    as_mqa,
    decode_cost,
    gqa_as_mla,
)
from course_utils.multihead import MultiHeadAttention

TOL = 1e-10


def _rms_norm_float64(self, hidden_states):  # DeepseekV3RMSNorm.forward without the float32 cast
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    return self.weight * (hidden_states * torch.rsqrt(variance + self.variance_epsilon))


def _reference(q_lora_rank, *, interleave=True, seed=0, d_model=48, heads=4):
    config = DeepseekV3Config(
        hidden_size=d_model,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        q_lora_rank=q_lora_rank,
        kv_lora_rank=16,
        qk_nope_head_dim=8,
        qk_rope_head_dim=6,
        v_head_dim=10,
        rope_interleave=interleave,
        attn_implementation="sdpa",
        num_hidden_layers=1,
        vocab_size=32,
        intermediate_size=32,
        moe_intermediate_size=16,
        n_routed_experts=4,
        num_experts_per_tok=2,
        n_group=1,
        topk_group=1,
    )
    torch.manual_seed(seed)
    module = ds.DeepseekV3Attention(config, layer_idx=0).double().eval()
    with torch.no_grad():  # the RMSNorm gains start at 1: make them non-trivial
        for norm in (module.kv_a_layernorm, module.q_a_layernorm):
            if norm is not None:
                norm.weight.uniform_(0.5, 1.5)
    return module, config


def _rotary_float64(config, positions):
    d = config.qk_rope_head_dim
    base = config.rope_parameters["rope_theta"]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))  # (d/2,)
    freqs = positions[..., None].double() * inv_freq  # (B, T, d/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (B, T, d): the reference's layout
    return emb.cos(), emb.sin()


def _run_reference(module, config, x, monkeypatch):
    monkeypatch.setattr(ds.DeepseekV3RMSNorm, "forward", _rms_norm_float64)
    B, T, _ = x.shape
    positions = torch.arange(T)[None].expand(B, T)  # (B, T)
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)  # (T, T) additive
    with torch.no_grad():
        out, _ = module(x, _rotary_float64(config, positions), mask[None, None].expand(B, 1, T, T))
    return out


@pytest.mark.parametrize("q_lora_rank", [None, 12])
@pytest.mark.parametrize("absorb", [False, True])
@pytest.mark.parametrize("interleave", [True, False])
def test_matches_transformers_deepseek_v3(q_lora_rank, absorb, interleave, monkeypatch):
    module, config = _reference(q_lora_rank, interleave=interleave)
    x = torch.randn(2, 7, config.hidden_size, dtype=torch.float64)  # (B, T, d)
    expected = _run_reference(module, config, x, monkeypatch)
    ours = MultiHeadLatentAttention.from_hf(module)
    with torch.no_grad():
        got = ours(x, absorb=absorb)
    err = (got - expected).abs().max().item()
    print(f"q_lora_rank={q_lora_rank} absorb={absorb} interleave={interleave} max|err|={err:.2e}")
    assert err < TOL, err


def test_reference_really_rounds_through_float32():
    """Why the test patches: unpatched, the reference's float64 output is off by ~1e-7."""
    module, config = _reference(12)
    x = torch.randn(1, 5, config.hidden_size, dtype=torch.float64)
    T = 5
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)[None, None]
    rotary = ds.DeepseekV3RotaryEmbedding(config)
    with torch.no_grad():
        cos_sin = rotary(x, torch.arange(T)[None])
        ref = module(x, cos_sin, mask)[0]
        ours = MultiHeadLatentAttention.from_hf(module)(x)
    assert 1e-10 < (ref - ours).abs().max().item() < 1e-4


@pytest.mark.parametrize("absorb", [False, True])
@pytest.mark.parametrize("chunks", [[1] * 9, [4, 1, 1, 3], [9]])
def test_incremental_decoding_equals_full_recomputation(absorb, chunks):
    torch.manual_seed(1)
    mla = MultiHeadLatentAttention(
        32, 4, d_latent_kv=12, d_latent_q=20, d_head_nope=6, d_head_rope=4, d_head_v=5
    ).double()
    x = torch.randn(3, sum(chunks), 32, dtype=torch.float64)
    with torch.no_grad():
        full = mla(x)
        cache = mla.new_cache()
        parts, t = [], 0
        for n in chunks:
            parts.append(mla(x[:, t : t + n], cache=cache, absorb=absorb))
            t += n
    assert (torch.cat(parts, dim=1) - full).abs().max().item() < TOL
    assert cache.length == 9
    assert set(vars(cache)) == {"c_kv", "k_rope", "_extra"}  # nothing per head is stored
    assert cache.c_kv.shape == (3, 9, 12) and cache.k_rope.shape == (3, 9, 4)
    assert cache.nbytes == 3 * 9 * (12 + 4) * 8
    assert cache.values_per_token == kvc.values_per_token_mla(12, 4)


@settings(max_examples=25, deadline=None)
@given(
    T=st.integers(1, 6),
    heads=st.integers(1, 4),
    dc=st.integers(1, 10),
    dr=st.sampled_from([2, 4]),
    seed=st.integers(0, 2**16),
)
def test_absorbed_equals_naive_property(T, heads, dc, dr, seed):
    torch.manual_seed(seed)
    mla = MultiHeadLatentAttention(
        8, heads, d_latent_kv=dc, d_head_nope=3, d_head_rope=dr, d_head_v=2
    ).double()
    x = torch.randn(2, T, 8, dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(mla(x, absorb=True), mla(x), atol=1e-12, rtol=0)


def test_causal_future_tokens_do_not_matter():
    torch.manual_seed(2)
    mla = MultiHeadLatentAttention(
        16, 2, d_latent_kv=8, d_head_nope=4, d_head_rope=2, d_head_v=4
    ).double()
    x = torch.randn(1, 6, 16, dtype=torch.float64)
    y = x.clone()
    y[:, 4:] = 100.0
    with torch.no_grad():
        assert torch.equal(mla(x)[:, :4], mla(y)[:, :4])


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"d_latent_kv": 0}, ValueError, "d_latent_kv"),
        ({"d_head_rope": 3}, ValueError, "even"),
        ({"d_head_v": 2.0}, TypeError, "d_head_v"),
        ({"rope_base": 1}, ValueError, "rope_base"),
    ],
)
def test_bad_configuration(kwargs, error, words):
    base = dict(d_latent_kv=8, d_head_nope=4, d_head_rope=2, d_head_v=4)
    base.update(kwargs)
    with pytest.raises(error, match=words):
        MultiHeadLatentAttention(16, 2, **base)


def test_bad_input_names_shape():
    mla = MultiHeadLatentAttention(16, 2, d_latent_kv=8, d_head_nope=4, d_head_rope=2, d_head_v=4)
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, d_model=16\).*\(2, 3, 15\)"):
        mla(torch.randn(2, 3, 15))
    with pytest.raises(TypeError, match="absorb"):
        mla(torch.randn(1, 2, 16), absorb=1)
    with pytest.raises(TypeError, match="cache"):
        mla(torch.randn(1, 2, 16), cache={})
    with pytest.raises(TypeError, match="DeepseekV3Attention"):
        MultiHeadLatentAttention.from_hf(torch.nn.Linear(2, 2))
    cache = LatentCache()
    mla(torch.randn(2, 2, 16), cache=cache)
    with pytest.raises(ValueError, match="batch and d_c"):
        mla(torch.randn(3, 1, 16), cache=cache)


# --- KV-cache counts: DeepSeek-V2's Table 1 -------------------------------------------------


def test_table1_deepseek_v2_from_configuration():
    c = kvc.DEEPSEEK_V2
    d_h = c["d_head"]
    # the configuration's relations the paper states: d_c = 4 d_h, d_h^R = d_h / 2
    assert c["d_latent_kv"] == 4 * d_h and c["d_head_rope"] * 2 == d_h
    mla = kvc.values_per_token_mla(c["d_latent_kv"], c["d_head_rope"])
    mha = kvc.values_per_token_mha(c["n_heads"], d_h)
    assert mla == 9 * d_h / 2  # Table 1: (d_c + d_h^R) l ≈ 9/2 d_h l
    assert mha == 2 * c["n_heads"] * d_h
    assert (mla, mha) == (576, 32768)  # the numbers, now derived
    assert kvc.values_per_token_mqa(d_h) == 2 * d_h
    assert mla / kvc.values_per_token_mqa(d_h) == 2.25  # "equivalent to GQA with 2.25 groups"
    assert kvc.values_per_token_gqa(8, d_h) == 2 * 8 * d_h
    # the module's own cache agrees with the count
    m = MultiHeadLatentAttention(
        16, 2, d_latent_kv=c["d_latent_kv"] // 32, d_head_nope=4, d_head_rope=2, d_head_v=4
    )
    cache = m.new_cache()
    with torch.no_grad():
        m(torch.randn(1, 3, 16), cache=cache)
    assert cache.values_per_token == kvc.values_per_token_mla(c["d_latent_kv"] // 32, 2)


@pytest.mark.parametrize(
    ("args", "kw", "expected"),
    [
        ((32, 32, 128, 4096), {}, 2 * 32 * 32 * 128 * 4096 * 2),
        ((30, 3, 64, 8192), {"batch": 2, "bytes_per_value": 4}, 2 * 30 * 3 * 64 * 8192 * 2 * 4),
        ((1, 1, 1, 0), {}, 0),
    ],
)
def test_kv_cache_bytes(args, kw, expected):
    assert kvc.kv_cache_bytes(*args, **kw) == expected


def test_mla_cache_bytes_and_errors():
    assert kvc.mla_cache_bytes(60, 512, 64, 1000) == 60 * 576 * 1000 * 2
    with pytest.raises(ValueError, match="n_kv_heads"):
        kvc.kv_cache_bytes(2, 0, 64, 10)
    with pytest.raises(TypeError, match="seq_len"):
        kvc.kv_cache_bytes(2, 2, 64, 10.5)
    with pytest.raises(TypeError, match="bytes_per_value"):
        kvc.kv_cache_bytes(2, 2, 64, 10, bytes_per_value=True)
    with pytest.raises(ValueError, match="d_head_rope"):
        kvc.values_per_token_mla(512, -1)


def test_decode_cost_grows_with_context_and_absorption_saves():
    args = (128, 512, 128, 64, 128)
    for S in (1, 100, 10_000):
        naive = decode_cost(S, *args, mode="naive")
        absorbed = decode_cost(S, *args, mode="absorbed")
        full = decode_cost(S, *args, mode="full_kv")
        assert absorbed["cache_values"] == naive["cache_values"] == S * 576
        assert full["cache_values"] == S * 128 * (192 + 128)
        if S >= 100:
            assert naive["macs"] > 50 * absorbed["macs"]
            assert naive["work_values"] >= 25 * absorbed["work_values"]
    with pytest.raises(ValueError, match="mode"):
        decode_cost(1, *args, mode="fast")
    assert math.isclose(
        decode_cost(10, *args, mode="naive")["macs"] / 10, 128 * 256 * 512 + 128 * 320
    )


# --- bad input: dtypes, cache mismatches, flags (issue 33, §4) ------------------------------------


def _small_mla() -> MultiHeadLatentAttention:
    torch.manual_seed(0)
    return MultiHeadLatentAttention(8, 2, d_latent_kv=4, d_head_nope=4, d_head_rope=2, d_head_v=4)


def test_mla_refuses_an_input_of_another_dtype():
    with pytest.raises(TypeError, match=r"^x has dtype torch.float64, expected torch.float32 .*"
                       r"\.double\(\)"):  # fmt: skip
        _small_mla()(torch.randn(1, 3, 8, dtype=torch.float64))
    out = _small_mla().double()(torch.randn(1, 3, 8, dtype=torch.float64))  # the named fix
    assert out.dtype == torch.float64


@pytest.mark.parametrize(
    ("first", "second", "error", "match"),
    [
        (None, ((1, 3, 4), (1, 5, 2)), ValueError, r"^c_kv has shape \(1, 3, 4\) and k_rope"),
        (None, ((2, 3, 4), (1, 3, 2)), ValueError, r"must agree on \(B, T\)"),
        (None, ((1, 3), (1, 3, 2)), ValueError, r"^c_kv must have 3 dimensions"),
        (None, ([[1.0]], (1, 3, 2)), TypeError, r"^c_kv must be a torch.Tensor"),
        (((1, 3, 4), (1, 3, 2)), ((2, 1, 4), (2, 1, 2)), ValueError, r"^the cache holds c_kv"),
        (((1, 3, 4), (1, 3, 2)), ((1, 1, 5), (1, 1, 2)), ValueError, r"^the cache holds c_kv"),
        (((1, 3, 4), (1, 3, 2)), ((1, 1, 4), (1, 1, 4)), ValueError, r"^the cache holds k_rope"),
        (((1, 3, 4), (1, 3, 2)), ("f64", "f64"), TypeError, r"holds c_kv of dtype torch.float32"),
    ],
)
def test_latent_cache_append_refuses_mismatches(first, second, error, match):
    def make(shape):
        if shape == "f64":
            return torch.zeros(1, 1, 4 if make.n == 0 else 2, dtype=torch.float64)
        return torch.zeros(*shape) if isinstance(shape, tuple) else shape

    cache = LatentCache()
    if first is not None:
        cache.append(*(torch.zeros(*s) for s in first))
    make.n = 0
    c_kv = make(second[0])
    make.n = 1
    k_rope = make(second[1])
    with pytest.raises(error, match=match):
        cache.append(c_kv, k_rope)


@pytest.mark.parametrize("absorb", ["yes", 1, None])
def test_mla_absorb_must_be_a_bool(absorb):
    with pytest.raises(TypeError, match=r"^absorb must be True or False"):
        _small_mla()(torch.randn(1, 3, 8), absorb=absorb)


# -- MLA after absorption is MQA; GQA is a special case of MLA ---------------------------------
# Oracle: torch.nn.functional.scaled_dot_product_attention, with MQA's / GQA's shapes
# (enable_gqa=True, and with K/V expanded to every head), and our GQA module.

# (d_model, heads, d_c, d_c', d_h, d_h^R, d_v, T, seed); the first two use DeepSeek-V2's latent
# sizes d_c = 512, d_h^R = 64 (a 576-wide shared key), with fewer heads so the test stays small.
MQA_CASES = [
    (128, 4, 512, None, 128, 64, 128, 7, 0),
    (96, 2, 512, 48, 32, 64, 16, 5, 1),
    (32, 4, 16, 24, 8, 4, 8, 9, 2),
    (48, 6, 20, None, 4, 2, 12, 3, 3),
]


def _mla(d, h, dc, dq, dn, dr, dv, seed, dtype):
    torch.manual_seed(seed)
    mla = MultiHeadLatentAttention(
        d, h, d_latent_kv=dc, d_latent_q=dq, d_head_nope=dn, d_head_rope=dr, d_head_v=dv
    ).to(dtype)
    with torch.no_grad():  # RMSNorm gains start at 1: make them non-trivial
        mla.kv_norm.weight.uniform_(0.5, 1.5)
    return mla


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize(("d", "h", "dc", "dq", "dn", "dr", "dv", "T", "seed"), MQA_CASES)
def test_as_mqa_equals_mla_and_sdpa(d, h, dc, dq, dn, dr, dv, T, seed, dtype, tol):
    mla = _mla(d, h, dc, dq, dn, dr, dv, seed, dtype)
    x = torch.randn(2, T, d, dtype=dtype)
    with torch.no_grad():
        mqa = as_mqa(mla, x)
        want = mla(x)  # the naive path: per-head keys and values rebuilt
        assert mqa.queries.shape == (2, h, T, dc + dr)
        assert mqa.key.shape == (2, 1, T, dc + dr)  # ONE key per token for all heads
        assert mqa.value.shape == (2, 1, T, dc)
        assert torch.equal(mqa.value, mqa.key[..., :dc])  # the value is the key's latent part
        assert (mqa.output() - want).abs().max().item() < tol
        for expand in (False, True):  # the oracle with MQA's shapes, or K/V copied per head
            k = mqa.key.expand(-1, h, -1, -1) if expand else mqa.key
            v = mqa.value.expand(-1, h, -1, -1) if expand else mqa.value
            ctx = F.scaled_dot_product_attention(
                mqa.queries, k, v, is_causal=True, scale=mla.scale, enable_gqa=not expand
            )  # (B, h, T, d_c)
            got = ctx.transpose(1, 2).reshape(2, T, h * dc) @ mqa.w_out  # (B, T, d)
            assert (got - want).abs().max().item() < tol


def test_as_mqa_scale_is_mlas_not_the_default():
    mla = _mla(32, 4, 16, None, 8, 4, 8, 0, torch.float64)
    x = torch.randn(1, 6, 32, dtype=torch.float64)
    with torch.no_grad():
        mqa = as_mqa(mla, x)
        assert mqa.scale == pytest.approx(1 / math.sqrt(8 + 4))
        default = F.scaled_dot_product_attention(
            mqa.queries, mqa.key, mqa.value, is_causal=True, enable_gqa=True
        )  # 1/sqrt(d_c + d_h^R)
        got = default.transpose(1, 2).reshape(1, 6, -1) @ mqa.w_out
        assert (got - mla(x)).abs().max().item() > 1e-3  # the wrong scale is detectably wrong


@settings(max_examples=25, deadline=None)
@given(
    T=st.integers(1, 6),
    heads=st.integers(1, 4),
    dc=st.integers(1, 12),
    half_dr=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_as_mqa_property(T, heads, dc, half_dr, seed):
    mla = _mla(16, heads, dc, None, 4, 2 * half_dr, 3, seed, torch.float64)
    x = torch.randn(1, T, 16, dtype=torch.float64)
    with torch.no_grad():
        mqa = as_mqa(mla, x)
        assert mqa.key.shape[1] == 1 and mqa.key.shape[-1] == dc + 2 * half_dr
        assert torch.allclose(mqa.output(), mla(x), atol=1e-12)


# (d_model, n_heads, n_kv_heads, bias, T, seed)
GQA_CASES = [
    (16, 4, 4, True, 5, 0),  # MHA
    (16, 4, 2, False, 6, 1),  # GQA, 2 groups
    (16, 4, 1, True, 4, 2),  # MQA
    (24, 6, 3, True, 7, 3),
    (64, 8, 2, False, 9, 4),
]


def _sdpa_gqa(gqa, x, causal):
    """The oracle: our GQA layer's weights through PyTorch's SDPA with enable_gqa."""
    B, T, _ = x.shape
    q = F.linear(x, gqa.W_Q.weight, gqa.W_Q.bias).view(B, T, gqa.n_heads, -1).transpose(1, 2)
    k = F.linear(x, gqa.W_K.weight, gqa.W_K.bias).view(B, T, gqa.n_kv_heads, -1).transpose(1, 2)
    v = F.linear(x, gqa.W_V.weight, gqa.W_V.bias).view(B, T, gqa.n_kv_heads, -1).transpose(1, 2)
    ctx = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    return F.linear(ctx.transpose(1, 2).reshape(B, T, -1), gqa.W_O.weight, gqa.W_O.bias)


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize(("d", "h", "n_kv", "bias", "T", "seed"), GQA_CASES)
def test_gqa_as_mla_equals_gqa_and_sdpa(d, h, n_kv, bias, T, seed, dtype, tol):
    torch.manual_seed(seed)
    gqa = MultiHeadAttention(d, h, n_kv_heads=n_kv, bias=bias).to(dtype)
    mla = gqa_as_mla(gqa)
    assert isinstance(mla, PlainLatentAttention)
    assert mla.d_latent == kvc.values_per_token_gqa(n_kv, d // h)  # the GQA cache, no more
    x = torch.randn(2, T, d, dtype=dtype)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    with torch.no_grad():
        for is_causal, mask in ((True, causal), (False, None)):
            got = mla(x, causal=is_causal)
            assert (got - gqa(x, x, x, mask)).abs().max().item() < tol
            assert (got - _sdpa_gqa(gqa, x, is_causal)).abs().max().item() < tol


def test_gqa_as_mla_up_projections_are_selections():
    gqa = MultiHeadAttention(16, 4, n_kv_heads=2, bias=False)
    mla = gqa_as_mla(gqa)
    for W in (mla.W_UK, mla.W_UV):
        assert set(W.unique().tolist()) == {0.0, 1.0}
        assert torch.equal(W.sum(1), torch.ones(16))  # each key/value number picks ONE latent
    # heads 0, 1 read k/v head 0 (latent 0..3), heads 2, 3 read k/v head 1 (latent 4..7)
    assert mla.W_UK[0:8, 0:4].sum() == 8 and mla.W_UK[8:16, 4:8].sum() == 8
    assert mla.W_UV[0:8, 8:12].sum() == 8 and mla.W_UV[8:16, 12:16].sum() == 8


def test_mqa_and_gqa_conversions_refuse_bad_input():
    mla = _mla(16, 2, 8, None, 4, 2, 4, 0, torch.float64)
    with pytest.raises(TypeError, match="mla must be a MultiHeadLatentAttention; got Linear"):
        as_mqa(torch.nn.Linear(2, 2), torch.zeros(1, 2, 16))
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, d_model=16\).*\(1, 2, 8\)"):
        as_mqa(mla, torch.zeros(1, 2, 8, dtype=torch.float64))
    with pytest.raises(TypeError, match="gqa must be a MultiHeadAttention; got"):
        gqa_as_mla(mla)
    plain = gqa_as_mla(MultiHeadAttention(8, 2, bias=False))
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, d_model=8\); got \(3, 8\)"):
        plain(torch.zeros(3, 8))
    with pytest.raises(TypeError, match="causal"):
        plain(torch.zeros(1, 3, 8), causal="yes")
    with pytest.raises((TypeError, ValueError), match="x"):
        plain(torch.zeros(1, 3, 8, dtype=torch.float64))  # float32 weights, float64 x
