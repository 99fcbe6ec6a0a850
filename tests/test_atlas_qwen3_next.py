"""Tests of course_utils.atlas.qwen3_next: Qwen3-Next rebuilt from our code.

Oracle: ``transformers``' ``Qwen3NextForCausalLM`` (pinned 5.24.0) with seeded random weights,
its torch fallback for the Gated DeltaNet (``torch_chunk_gated_delta_rule`` for a full pass,
``torch_recurrent_gated_delta_rule`` for a cached step) and ``experts_implementation="eager"``
(its grouped-matmul experts reject float64). Its float32 islands (norms, RoPE angles, router,
the DeltaNet core) are mirrored by our code, so float64 agrees to round-off. Cached decoding
carries the DeltaNet state in float32 (as the reference and its kernels do), so decoding agrees
with the full pass to float32 precision in both dtypes, and with the reference's own cached
decoding to round-off.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import Qwen3NextConfig, Qwen3NextForCausalLM
from transformers.models.qwen3_next import modeling_qwen3_next as ref

from course_utils.atlas import from_hf
from course_utils.atlas.qwen3_next import (
    Qwen3Next,
    gated_delta_rule_chunked,
    gated_delta_rule_recurrent,
)

from .atlas_helpers import (
    TransformersOracleTests,
    jitter_weights,
    one_torch_thread,
)

pytestmark = pytest.mark.usefixtures(one_torch_thread.__name__)

T = 40  # tokens per sequence
PROMPT = 30  # cached decoding: a 30-token prompt (chunked form), then 10 single steps

CONFIGS = {
    # three DeltaNet layers per attention layer (the released pattern), GQA, partial RoPE
    "released-pattern": dict(
        num_hidden_layers=4,
        layer_types=["linear_attention"] * 3 + ["full_attention"],
        num_attention_heads=4,
        num_key_value_heads=2,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        mlp_only_layers=[1],
        seed=0,
    ),
    # attention first, one value head per key head, every other layer MoE, no renormalising,
    # full rotary width and a different base
    "attention-first": dict(
        num_hidden_layers=3,
        layer_types=["full_attention", "linear_attention", "full_attention"],
        num_attention_heads=2,
        num_key_value_heads=1,
        linear_num_key_heads=4,
        linear_num_value_heads=4,
        decoder_sparse_step=2,
        norm_topk_prob=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 1.0},
        linear_conv_kernel_dim=3,
        seed=1,
    ),
}


def _hf(name: str) -> Qwen3NextForCausalLM:
    settings_ = dict(CONFIGS[name])
    seed = settings_.pop("seed")
    config = Qwen3NextConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=96,
        head_dim=16,
        linear_key_head_dim=8,
        linear_value_head_dim=8,
        num_experts=8,
        num_experts_per_tok=2,
        moe_intermediate_size=16,
        shared_expert_intermediate_size=24,
        experts_implementation="eager",
        **settings_,
    )
    torch.manual_seed(seed)
    return jitter_weights(Qwen3NextForCausalLM(config).eval())


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def pair(request):
    model = _hf(request.param)
    ids = torch.randint(0, 128, (2, T), generator=torch.Generator().manual_seed(7))
    return model, ids


class TestAgainstTransformers(TransformersOracleTests):
    """The oracle tests all atlas models share (``tests/atlas_helpers.py``), on this model."""

    rebuilt, make, eager_case = Qwen3Next, staticmethod(_hf), "released-pattern"
    n_tokens, prompt = T, PROMPT


def test_the_state_does_not_grow():
    model = _hf("released-pattern")
    ours = from_hf(model)
    cache = ours.new_cache()
    with torch.no_grad():
        ours(torch.zeros(1, 3, dtype=torch.long), cache=cache)
        first = [layer.state.shape for layer in cache.layers if hasattr(layer, "state")]
        ours(torch.zeros(1, 20, dtype=torch.long), cache=cache)
        later = [layer.state.shape for layer in cache.layers if hasattr(layer, "state")]
    assert first == later == [(1, 4, 8, 8)] * 3  # (B, H_v, d_k, d_v) per DeltaNet layer


# ---------------------------------------------------------------------------------- the core


def _core_inputs(seed, B, H, T_, d_k, d_v, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    q = torch.nn.functional.normalize(torch.randn(B, H, T_, d_k, generator=g, dtype=dtype), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(B, H, T_, d_k, generator=g, dtype=dtype), dim=-1)
    v = torch.randn(B, H, T_, d_v, generator=g, dtype=dtype)
    decay = -2 * torch.rand(B, H, T_, generator=g, dtype=dtype)
    beta = torch.rand(B, H, T_, generator=g, dtype=dtype)
    state = torch.randn(B, H, d_k, d_v, generator=g, dtype=dtype)
    return q, k, v, decay, beta, state


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    T_=st.integers(1, 20),
    chunk=st.sampled_from([1, 3, 4, 8, 64]),
    with_state=st.booleans(),
)
def test_chunked_form_equals_the_recurrence(seed, T_, chunk, with_state):
    q, k, v, decay, beta, state = _core_inputs(seed, 2, 3, T_, 4, 5)
    state = state if with_state else None
    o1, s1 = gated_delta_rule_recurrent(q, k, v, decay, beta, state)
    o2, s2 = gated_delta_rule_chunked(q, k, v, decay, beta, state, chunk=chunk)
    assert torch.allclose(o1, o2, atol=1e-11, rtol=0) and torch.allclose(s1, s2, atol=1e-11)


def test_delta_rule_writes_v_exactly_when_beta_is_one():
    """With beta = 1, no decay and a unit key, reading at that key gives back v (the delta rule
    replaces what the state held at k: S^T k = v afterwards)."""
    _, k, v, _, _, state = _core_inputs(3, 1, 2, 1, 4, 3)
    out, _ = gated_delta_rule_recurrent(k, k, v, torch.zeros(1, 2, 1), torch.ones(1, 2, 1), state)
    assert torch.allclose(out, v, atol=1e-12)


@pytest.mark.parametrize(("seed", "T_"), [(0, 40), (1, 70), (2, 5)])
def test_core_matches_transformers_torch_fallback_bit_for_bit(seed, T_):
    q, k, v, decay, beta, state = _core_inputs(seed, 2, 4, T_, 8, 6, torch.float32)
    to_hf = lambda x: x.transpose(1, 2)  # noqa: E731  (B, T, H, d) is the reference's layout
    expected, s_ref = ref.torch_chunk_gated_delta_rule(
        to_hf(q), to_hf(k), to_hf(v), g=to_hf(decay), beta=to_hf(beta),
        initial_state=state, output_final_state=True,
    )  # fmt: skip
    scaled = (q * 8**-0.5).contiguous()  # the reference scales q by 1/sqrt(d_k) inside
    got, s_ours = gated_delta_rule_chunked(
        scaled, k.contiguous(), v.contiguous(), decay, beta, state
    )
    assert torch.equal(got.transpose(1, 2), expected) and torch.equal(s_ours, s_ref)


# ------------------------------------------------------------------------------- bad input


def test_bad_input_is_a_clear_error():
    model = _hf("attention-first")
    ours = from_hf(model)
    with pytest.raises(TypeError, match=r"input_ids must be an integer torch\.Tensor"):
        ours(torch.zeros(1, 4))
    with pytest.raises(ValueError, match=r"input_ids must have shape \(B, T\)"):
        ours(torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"input_ids must lie in \[0, 128\) \(vocab_size\)"):
        ours(torch.tensor([[1, 128]]))
    with pytest.raises(TypeError, match="cache must be a DecodeCache"):
        ours(torch.zeros(1, 2, dtype=torch.long), cache={})


def test_from_hf_names_the_supported_types():
    model = _hf("attention-first")
    model.config.model_type = "llama"
    try:
        with pytest.raises(ValueError, match=r"gemma3_text.*gpt_oss.*qwen3_next.*deepseek_v32"):
            from_hf(model)
    finally:
        model.config.model_type = "qwen3_next"
    with pytest.raises(ValueError, match="model_type must be one of"):
        from_hf(torch.nn.Linear(2, 2))
