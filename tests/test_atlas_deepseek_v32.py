"""Tests of course_utils.atlas.deepseek_v32: DeepSeek-V3.2 rebuilt from our code.

Oracle: ``transformers``' ``DeepseekV32ForCausalLM`` (pinned 5.24.0, SDPA attention) with
seeded random weights and ``experts_implementation="eager"`` (its grouped-matmul experts reject
float64). Sequences of 40 tokens with ``index_topk = 8``, so the lightning indexer's choice
really narrows attention for most queries. The reference's float32 islands (norms, RoPE
angles, the router, the indexer scores) are mirrored, so float64 agrees to round-off.

Cached decoding gives the full pass's logits (to the float32 islands' ~1e-7, both dtypes) as
long as no two index scores tie at the
``top_k`` boundary: a ReLU'd score is exactly 0 when all indexer heads dislike a key, and the
reference's ``topk`` then breaks the tie by the row's layout, which differs between a full pass
and a cached step (the reference itself then decodes differently from its full pass). The
configurations below have enough indexer heads that no such tie occurs; decoding also equals
the reference's own cached decoding whatever the ties.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import DeepseekV32Config, DeepseekV32ForCausalLM

from course_utils.atlas import from_hf
from course_utils.atlas.deepseek_v32 import DeepseekV32, indexer_top_k

from .atlas_helpers import (
    TransformersOracleTests,
    jitter_weights,
    one_torch_thread,
)

pytestmark = pytest.mark.usefixtures(one_torch_thread.__name__)

T = 40  # tokens per sequence: 5 times index_topk
PROMPT = 30  # cached decoding: a 30-token prompt, then 10 single steps

CONFIGS = {
    # one dense layer then MoE, 4 groups of 2 experts choose 2 groups, renormalised
    "grouped-moe": dict(
        num_hidden_layers=3,
        first_k_dense_replace=1,
        n_routed_experts=8,
        n_group=4,
        topk_group=2,
        index_n_heads=16,
        seed=0,
    ),
    # every layer MoE, one group, two shared experts, not renormalised, wider RoPE and base
    "all-moe": dict(
        num_hidden_layers=2,
        first_k_dense_replace=0,
        n_routed_experts=6,
        n_group=1,
        topk_group=1,
        n_shared_experts=2,
        norm_topk_prob=False,
        routed_scaling_factor=1.5,
        qk_rope_head_dim=16,
        rope_parameters={"rope_type": "default", "rope_theta": 50000.0},
        index_n_heads=16,
        seed=3,
    ),
}


def _hf(name: str) -> DeepseekV32ForCausalLM:
    settings_ = dict(CONFIGS[name])
    seed = settings_.pop("seed")
    base = dict(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=96,
        moe_intermediate_size=16,
        num_attention_heads=4,
        num_key_value_heads=4,
        kv_lora_rank=16,
        q_lora_rank=24,
        qk_rope_head_dim=8,
        qk_nope_head_dim=8,
        v_head_dim=8,
        num_experts_per_tok=2,
        index_topk=8,
        index_head_dim=16,
        experts_implementation="eager",
    )
    base.update(settings_)
    torch.manual_seed(seed)
    model = DeepseekV32ForCausalLM(DeepseekV32Config(**base)).eval()
    return jitter_weights(model, buffers="e_score_correction_bias")  # the routing bias too


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def pair(request):
    model = _hf(request.param)
    ids = torch.randint(0, 128, (2, T), generator=torch.Generator().manual_seed(11))
    return model, ids


class TestAgainstTransformers(TransformersOracleTests):
    """The oracle tests all atlas models share (``tests/atlas_helpers.py``), on this model."""

    rebuilt, make, eager_case = DeepseekV32, staticmethod(_hf), "grouped-moe"
    n_tokens, prompt = T, PROMPT

    def check_cache(self, cache) -> None:
        assert cache.seen == T and cache.layers[0].latents.length == T


def test_the_indexer_really_narrows_attention(pair):
    """Most queries of the 40 keep only 8 keys: without the indexer the logits would differ."""
    model, ids = pair
    ours = from_hf(model.double())
    with torch.no_grad():
        sparse = ours(ids)
        for layer in ours.layers:
            layer.attn.top_k = T  # every earlier token: plain causal MLA
        dense = ours(ids)
    assert (sparse - dense).abs().max().item() > 1e-3


# ------------------------------------------------------------------------------ the indexer


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**16), T_=st.integers(1, 12), top_k=st.integers(1, 6))
def test_indexer_keeps_the_top_k_earlier_tokens(seed, T_, top_k):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, T_, 3, 4, generator=g, dtype=torch.float64)
    k = torch.randn(2, T_, 4, generator=g, dtype=torch.float64)
    w = torch.randn(2, T_, 3, generator=g, dtype=torch.float64)
    keep = indexer_top_k(q, k, w, torch.arange(T_), top_k)  # (B, T, S)
    # oracle: the formula, one query and one key at a time
    for b in range(2):
        for t in range(T_):
            score = [sum(float(w[b, t, j]) * max(float(q[b, t, j] @ k[b, s]), 0.0)
                         for j in range(3)) for s in range(t + 1)]  # fmt: skip
            chosen = keep[b, t].nonzero().flatten().tolist()
            assert len(chosen) == min(top_k, t + 1) and max(chosen) <= t  # never the future
            worst_kept = min(score[s] for s in chosen)
            best_dropped = max((score[s] for s in range(t + 1) if s not in chosen), default=-1e9)
            assert worst_kept >= best_dropped - 1e-6  # float32 scores


# ------------------------------------------------------------------------------- bad input


def test_bad_input_is_a_clear_error():
    ours = from_hf(_hf("all-moe"))
    with pytest.raises(TypeError, match=r"input_ids must be an integer torch\.Tensor"):
        ours(torch.zeros(1, 4))
    with pytest.raises(ValueError, match=r"input_ids must lie in \[0, 128\) \(vocab_size\)"):
        ours(torch.tensor([[-1, 3]]))
    with pytest.raises(TypeError, match="cache must be a DecodeCache"):
        ours(torch.zeros(1, 2, dtype=torch.long), cache=[])
    from course_utils.atlas import deepseek_v32

    with pytest.raises(TypeError, match="model must be a transformers DeepseekV32ForCausalLM"):
        deepseek_v32.build(torch.nn.Linear(2, 2))
