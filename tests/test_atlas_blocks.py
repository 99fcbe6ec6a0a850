"""course_utils.atlas.blocks against independent oracles, and from_hf's dispatch and its errors."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import course_utils.atlas as atlas
from course_utils.atlas import blocks
from course_utils.norms import rms_norm
from course_utils.positions import apply_rope, rope_frequencies
from course_utils.transformer import SwiGLU


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("unit_offset", [False, True])
def test_rmsnorm_is_the_course_formula_rounded_in_float32(seed, unit_offset) -> None:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 5, 16, generator=g, dtype=torch.float64)
    norm = blocks.RMSNorm(16, 1e-6, unit_offset=unit_offset).double()
    with torch.no_grad():
        norm.weight.normal_(0.0, 0.5, generator=g)
        gain = norm.weight + 1.0 if unit_offset else norm.weight
        want = rms_norm(x, gain, eps=1e-6)
        got = norm(x)
    assert got.dtype == torch.float64
    assert (got - want).abs().max() < 1e-5  # float32 rounding, not float64's
    assert (got - want).abs().max() > 0.0  # it does round in float32


def test_gated_mlp_with_silu_is_swiglu() -> None:
    torch.manual_seed(0)
    ours, theirs = blocks.GatedMLP(8, 16, "silu"), SwiGLU(8, 16)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(2, 3, 8)
    assert torch.allclose(ours(x), theirs(x), atol=1e-6)


@pytest.mark.parametrize(("name", "oracle"), [("gelu_pytorch_tanh", "tanh"), ("gelu", "none")])
def test_gelu_activations_equal_torch(name, oracle) -> None:
    x = torch.linspace(-6, 6, 101, dtype=torch.float64)
    assert torch.allclose(blocks.activation(name)(x), F.gelu(x, approximate=oracle), atol=1e-12)


def test_an_unknown_activation_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"activation must be one of \[.*'silu'.*\]; got 'relu6'"):
        blocks.GatedMLP(4, 8, "relu6")


@pytest.mark.parametrize("base", [10_000.0, 1e6])
def test_rope_tables_rotate_as_apply_rope(base) -> None:
    x = torch.randn(1, 2, 9, 16, dtype=torch.float64)
    positions = torch.arange(3, 12)
    inv_freq = torch.from_numpy(rope_frequencies(16, base=base))  # (8,)
    cos, sin = blocks.rope_cos_sin(inv_freq, positions, dtype=torch.float64)
    got = blocks.rotate_pairs(x, cos, sin)
    assert (got - apply_rope(x, positions, base=base)).abs().max() < 1e-5  # float32 angles


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(("h", "h_kv", "window"), [(4, 4, None), (4, 2, 3), (6, 1, 1)])
def test_attention_equals_sdpa_with_the_window_mask(seed, h, h_kv, window) -> None:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, h, 7, 8, generator=g, dtype=torch.float64)
    k = torch.randn(2, h_kv, 10, 8, generator=g, dtype=torch.float64)
    v = torch.randn(2, h_kv, 10, 8, generator=g, dtype=torch.float64)
    mask = blocks.causal_window_mask(7, 10, window)  # (7, 10): the last 7 of 10 keys
    got = blocks.attention(q, k, v, scale=0.3, mask=mask)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3, enable_gqa=True)
    assert (got - want).abs().max() < 1e-12


def test_window_mask_counts_the_window_as_transformers_does() -> None:
    """Query m sees keys m - w < n <= m: w keys (transformers' sliding_window_overlay)."""
    mask = blocks.causal_window_mask(6, 6, window=3)
    for m in range(6):
        assert mask[m].nonzero().flatten().tolist() == list(range(max(0, m - 2), m + 1))


@settings(max_examples=30, deadline=None)
@given(
    sink=st.floats(-5.0, 5.0),
    scores=st.lists(st.floats(-5.0, 5.0), min_size=1, max_size=6),
)
def test_a_sink_is_one_more_softmax_column_with_no_value(sink, scores) -> None:
    """Weights = e^{z_n} / (e^{s} + sum e^{z_m}): the formula of gpt-oss's sinks."""
    T = len(scores)
    q = torch.ones(1, 1, 1, 1, dtype=torch.float64)
    k = torch.tensor(scores, dtype=torch.float64).view(1, 1, T, 1)  # q·k_n = z_n
    v = torch.eye(T, dtype=torch.float64)[None, None]  # (1, 1, T, T): the output is the weights
    mask = torch.ones(1, T, dtype=torch.bool)
    got = blocks.attention(q, k, v, scale=1.0, mask=mask, sinks=torch.tensor([sink]))[0, 0, 0]
    z = torch.tensor(scores, dtype=torch.float64)
    want = z.exp() / (math.exp(sink) + z.exp().sum())
    assert torch.allclose(got, want, atol=1e-12)
    assert float(got.sum()) < 1.0  # the sink keeps its share


def test_mix_experts_equals_a_dense_sum() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(10, 4, generator=g, dtype=torch.float64)
    W = torch.randn(5, 4, 4, generator=g, dtype=torch.float64)  # 5 linear experts
    indices = torch.stack([torch.randperm(5, generator=g)[:2] for _ in range(10)])  # (10, 2)
    weights = torch.rand(10, 2, generator=g, dtype=torch.float64)
    got = blocks.mix_experts(x, indices, weights, lambda e, xs: xs @ W[e])
    every = torch.einsum("nd,edf->nef", x, W)  # (10, 5, 4): every expert on every token
    want = (every.gather(1, indices[..., None].expand(10, 2, 4)) * weights[..., None]).sum(1)
    assert torch.allclose(got, want, atol=1e-12)


def test_a_sliding_cache_keeps_what_the_next_query_can_see() -> None:
    cache = blocks.AttentionCache(window=4)
    k = torch.zeros(1, 1, 6, 2)
    _, _, held = cache.extend(k, k, torch.arange(6))
    assert held.tolist() == list(range(6))  # a prompt is kept whole for its own queries
    for p in range(6, 9):
        keys, _, held = cache.extend(k[:, :, :1], k[:, :, :1], torch.tensor([p]))
        assert held.tolist() == list(range(p - 3, p + 1)) and keys.size(2) == 4
    with pytest.raises(ValueError, match="window must be"):
        blocks.AttentionCache(window=0)


def test_from_hf_names_the_supported_types() -> None:
    class Config:
        model_type = "llama"

    model = torch.nn.Linear(2, 2)
    model.config = Config()
    with pytest.raises(ValueError, match=r"one of \['gemma3_text', 'gpt_oss', 'qwen3_next', "):
        atlas.from_hf(model)
    with pytest.raises(TypeError, match="model must be a transformers causal LM"):
        atlas.from_hf("gpt_oss")


def _one_layer_gpt_oss_config():
    """The smallest gpt-oss: one layer, one head of width 8, two experts."""
    import transformers

    return transformers.GptOssConfig(
        vocab_size=16, hidden_size=8, intermediate_size=8, num_hidden_layers=1,
        num_attention_heads=1, num_key_value_heads=1, head_dim=8, num_local_experts=2,
        num_experts_per_tok=1,
    )  # fmt: skip


def test_a_base_model_without_its_head_is_refused() -> None:
    import transformers

    with pytest.raises(TypeError, match=r"causal LM with an lm_head.*got GptOssModel"):
        atlas.from_hf(transformers.GptOssModel(_one_layer_gpt_oss_config()))


def test_a_missing_builder_module_is_not_implemented(monkeypatch) -> None:
    class Config:
        model_type = "gpt_oss"

    model = torch.nn.Linear(2, 2)
    model.config, model.lm_head = Config(), torch.nn.Linear(2, 2)
    monkeypatch.setitem(atlas._MODULES, "gpt_oss", "no_such_module")
    monkeypatch.delitem(atlas._BUILDERS, "gpt_oss", raising=False)
    with pytest.raises(NotImplementedError, match="model_type 'gpt_oss' is not built yet"):
        atlas.from_hf(model)


@settings(max_examples=30, deadline=None)
@given(
    scores=st.lists(st.floats(-20.0, 20.0), min_size=2, max_size=6),
    seen=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_softmax_weights_is_the_formula_on_the_seen_keys(scores, seen) -> None:
    """w_n = e^{z_n} / sum over seen m of e^{z_m}; an unseen key weighs exactly 0."""
    T = len(scores)
    mask = torch.tensor(seen[:T])
    mask[0] = True  # a row sees at least one key
    z = torch.tensor(scores, dtype=torch.float64)
    got = blocks.softmax_weights(z[None], mask[None])[0]
    want = [math.exp(s) if m else 0.0 for s, m in zip(scores, mask.tolist(), strict=True)]
    assert torch.allclose(got, torch.tensor(want, dtype=torch.float64) / sum(want), atol=1e-12)
    assert (got[~mask] == 0.0).all()


def test_softmax_weights_rounds_in_the_dtype_asked_and_returns_the_scores_dtype() -> None:
    z = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(3, 5, dtype=torch.bool)
    rounded = blocks.softmax_weights(z, mask, torch.float32)
    assert rounded.dtype == torch.float64
    assert torch.equal(rounded, torch.softmax(z, -1, dtype=torch.float32).double())


@pytest.mark.parametrize("seed", [0, 1])
def test_swiglu_experts_are_course_swiglus(seed) -> None:
    """Expert e of the stacked tensors is course_utils.transformer.SwiGLU with e's slices."""
    g = torch.Generator().manual_seed(seed)
    experts = blocks.SwiGLUExperts(3, d=4, d_ff=6).double()
    with torch.no_grad():
        experts.gate_up.normal_(generator=g)
        experts.down.normal_(generator=g)
    x = torch.randn(5, 4, generator=g, dtype=torch.float64)
    for e in range(3):
        oracle = SwiGLU(4, 6).double()
        gate, up = experts.gate_up[e].detach().chunk(2, dim=0)
        oracle.load_state_dict(
            {"gate.weight": gate, "up.weight": up, "down.weight": experts.down[e]}
        )
        assert torch.allclose(experts.expert(e, x), oracle(x), atol=1e-12)


@pytest.mark.parametrize(("h", "h_kv", "window"), [(4, 2, None), (2, 1, 3)])
def test_self_attention_equals_sdpa_on_its_projections(h, h_kv, window) -> None:
    """Without QK-norm, sinks or RoPE angles (inv_freq 0: cos 1, sin 0) the block is
    o_proj(SDPA(q_proj x, k_proj x, v_proj x)) with the window's mask."""
    torch.manual_seed(0)
    d, dh, T = 8, 4, 6
    attn = blocks.SelfAttention(
        d, h, h_kv, dh, scale=0.5, inv_freq=torch.zeros(dh // 2), window=window
    ).double()
    x = torch.randn(2, T, d, dtype=torch.float64)
    q = attn.q_proj(x).view(2, T, h, dh).transpose(1, 2)
    k = attn.k_proj(x).view(2, T, h_kv, dh).transpose(1, 2)
    v = attn.v_proj(x).view(2, T, h_kv, dh).transpose(1, 2)
    mask = blocks.causal_window_mask(T, T, window)
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.5, enable_gqa=True)
    want = attn.o_proj(a.transpose(1, 2).reshape(2, T, h * dh))
    assert (attn(x, torch.arange(T), None) - want).abs().max() < 1e-12


def test_load_weights_names_a_shape_or_a_tensor_it_cannot_copy() -> None:
    import transformers

    from course_utils.atlas.gpt_oss import GptOss

    config = _one_layer_gpt_oss_config()
    model = transformers.GptOssForCausalLM(config)

    cases = [  # a layer's names -> the error
        (
            {"input_norm": "self_attn.q_proj"},
            r"model\.layers\.0\.self_attn\.q_proj\.weight: .*shape",
        ),
        ({"input_norm": "no_such"}, r"no tensor model\.layers\.0\.no_such\.weight for ours"),
        ({"input_norm": "input_layernorm"}, r"no weights of the model were copied into \[.*sinks"),
    ]
    for names, match in cases:
        with pytest.raises(ValueError, match=match):
            blocks.load_weights(GptOss(config, torch.ones(4), 1.0), model, names)
