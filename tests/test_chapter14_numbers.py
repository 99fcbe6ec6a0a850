"""Chapter 14's numbers are the package's.

The numbers the chapter's prose quotes are glued from its executed outputs (``tests/test_glue.py``;
nbval re-computes them). Here the same quantities are computed from ``course_utils`` alone (the
atlas's blocks, ``kv_cache``, ``mla.decode_cost``, ``transformers``' released configurations) and
compared with what the chapter glued: if a cell of the chapter stops computing what the package
computes (a from-scratch sink softmax, a hand-written cache count), this test says which value
moved. The from-scratch cells themselves print their comparison with the package, which nbval
re-runs.
"""

from __future__ import annotations

import json

import pytest
import torch
import transformers

from course_kit.myst import glued_values
from course_utils import kv_cache
from course_utils.atlas.blocks import attention, top_k_softmax
from course_utils.mla import decode_cost

from .notebook_runner import CHAPTERS

NOTEBOOK = CHAPTERS / "14_attention_atlas.ipynb"


@pytest.fixture(scope="module")
def glued() -> dict[str, float]:
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    return {name: float(value) for name, value in glued_values(nb).items()}


def test_gemma_interleave_ratio_is_kv_cache_bytes(glued):
    # five sliding layers (window 1024) and one global layer against six global layers
    for T, name in ((32 * 1024, "32k"), (128 * 1024, "128k")):
        full = kv_cache.kv_cache_bytes(6, 1, 1, T)
        mixed = kv_cache.kv_cache_bytes(1, 1, 1, T) + kv_cache.kv_cache_bytes(5, 1, 1, 1024)
        assert glued[f"gemma_ratio_{name}"] == round(full / mixed, 2)
    assert glued["gemma_kept_128k"] == round(100 * mixed / full, 1)


def test_the_sink_share_is_the_packages_attention_with_sinks(glued):
    scores = torch.tensor([1.0, 0.5, -0.5, 0.2])  # the chapter's query
    eye = torch.eye(4)[None, None]
    weights = attention(
        scores.view(1, 1, 1, 4),
        eye,
        eye,
        scale=1.0,
        mask=torch.ones(1, 4, dtype=torch.bool),
        sinks=torch.tensor([2.0]),
    )[0, 0, 0]  # (4,)
    assert glued["sink_kept"] == round(float(weights.sum()), 2)
    assert glued["sink_share"] == round(1 - float(weights.sum()), 2)
    assert glued["sink_tokens_numbers"] == kv_cache.kv_cache_bytes(36, 8, 64, 4, bytes_per_value=1)
    assert glued["sink_params"] == 36 * 64


def test_qwen3_next_counts_come_from_its_released_configuration(glued):
    cfg = transformers.Qwen3NextConfig()
    n_full = cfg.layer_types.count("full_attention")
    assert (glued["qwen_full_layers"], glued["qwen_layers"]) == (n_full, cfg.num_hidden_layers)
    gates = n_full * cfg.hidden_size * cfg.num_attention_heads * cfg.head_dim
    assert glued["gate_params_m"] == round(gates / 1e6, 1)
    state = cfg.linear_num_value_heads * cfg.linear_key_head_dim * cfg.linear_value_head_dim
    conv = (cfg.linear_conv_kernel_dim - 1) * (
        2 * cfg.linear_num_key_heads * cfg.linear_key_head_dim
        + cfg.linear_num_value_heads * cfg.linear_value_head_dim
    )
    assert glued["deltanet_state"] == state + conv
    per_token = kv_cache.values_per_token_gqa(cfg.num_key_value_heads, cfg.head_dim)
    assert glued["deltanet_breakeven"] == round((state + conv) / per_token)
    # a full-attention layer's cache at 128k tokens against the whole state (conv included)
    assert glued["deltanet_ratio_128k"] == round(128 * 1024 * per_token / (state + conv)) == 245


def test_dsa_counts_are_decode_costs(glued):
    shape = (128, 512, 128, 64, 128)  # DeepSeek-V3.2-Exp's MLA
    S = 128 * 1024
    dense = decode_cost(S, *shape, mode="absorbed")["macs"]
    sparse = decode_cost(2048, *shape, mode="absorbed")["macs"] + S * 64 * 128
    assert glued["dsa_ratio_128k"] == round(dense / sparse, 1)
    assert glued["mla_values"] == kv_cache.values_per_token_mla(512, 64)
    assert glued["dsa_values"] == glued["mla_values"] + 128


def test_moe_counts_and_the_two_router_orders(glued):
    cfg = transformers.Qwen3NextConfig()
    d, E, k = cfg.hidden_size, cfg.num_experts, cfg.num_experts_per_tok
    expert, shared = 3 * d * cfg.moe_intermediate_size, 3 * d * cfg.shared_expert_intermediate_size
    stored, used = E * expert + shared + E * d, k * expert + shared + E * d
    assert glued["moe_ratio"] == round(stored / used)
    assert glued["moe_stored_b"] == round(stored / 1e9, 2)
    # the chapter's claim: softmax-then-top-k-renormalised equals top-k-then-softmax
    logits = torch.randn(50, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    top_p, top_i = torch.softmax(logits, -1).topk(4, -1)
    weights, ids = top_k_softmax(logits, 4)
    assert torch.equal(ids, top_i)
    torch.testing.assert_close(weights, top_p / top_p.sum(-1, keepdim=True))
