"""Tiny random ``transformers`` models of the four atlas types, to compare with their rebuilds.

Chapter 14 builds one of each (a few thousand parameters, random weights, no download), rebuilds
it with :func:`course_utils.atlas.from_hf` and prints how far apart the two models' logits are. The
sizes are the smallest that still exercise what each model adds: Gemma 3 has more tokens than its
window and five local layers before a global one, gpt-oss alternates sliding and full layers with
learned sinks and a mixture of experts, Qwen3-Next has a Gated DeltaNet layer before a gated
attention layer, DeepSeek-V3.2's indexer keeps fewer tokens than there are. Every weight is drawn
from ``N(0, std²)`` with a seed (the models' own initialisation leaves the sinks, norms and biases
at constants, which would hide a mistake in how they are used).

>>> model = tiny_model("gemma3_text")
>>> model.config.layer_types[:6]                          # doctest: +NORMALIZE_WHITESPACE
['sliding_attention', 'sliding_attention', 'sliding_attention', 'sliding_attention',
 'sliding_attention', 'full_attention']
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .._validation import check_int
from . import SUPPORTED_MODEL_TYPES

__all__ = ["TINY_CONFIGS", "TINY_TOKENS", "tiny_model"]

#: The number of tokens the chapter feeds them: more than every window and every top-k below.
TINY_TOKENS = 16

#: ``model_type`` -> (config class, model class, settings): names in ``transformers``.
TINY_CONFIGS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "gemma3_text": (
        "Gemma3TextConfig",
        "Gemma3ForCausalLM",
        {
            "vocab_size": 64,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 6,  # five local layers, then a global one
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 8,
            "sliding_window": 4,
            "query_pre_attn_scalar": 8,
        },
    ),
    "gpt_oss": (
        "GptOssConfig",
        "GptOssForCausalLM",
        {
            "vocab_size": 64,
            "hidden_size": 32,
            "intermediate_size": 16,
            "num_hidden_layers": 2,  # sliding, then full
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 8,
            "sliding_window": 4,
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
            "experts_implementation": "eager",
        },
    ),
    "qwen3_next": (
        "Qwen3NextConfig",
        "Qwen3NextForCausalLM",
        {
            "vocab_size": 64,
            "hidden_size": 32,
            "intermediate_size": 48,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "head_dim": 16,
            "linear_num_key_heads": 2,
            "linear_num_value_heads": 4,
            "linear_key_head_dim": 8,
            "linear_value_head_dim": 8,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 16,
            "shared_expert_intermediate_size": 16,
            "layer_types": ["linear_attention", "full_attention"],
            "experts_implementation": "eager",
        },
    ),
    "deepseek_v32": (
        "DeepseekV32Config",
        "DeepseekV32ForCausalLM",
        {
            "vocab_size": 64,
            "hidden_size": 32,
            "intermediate_size": 48,
            "moe_intermediate_size": 16,
            "num_hidden_layers": 2,  # a dense layer, then an MoE layer
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "kv_lora_rank": 16,
            "q_lora_rank": 24,
            "qk_rope_head_dim": 8,
            "qk_nope_head_dim": 8,
            "v_head_dim": 8,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "n_group": 2,
            "topk_group": 1,
            "first_k_dense_replace": 1,
            "index_topk": 4,  # fewer than the 16 tokens: the indexer's choice matters
            "index_head_dim": 16,
            "index_n_heads": 8,
            "experts_implementation": "eager",
        },
    ),
}


def tiny_model(
    model_type: str, *, seed: int = 0, std: float = 0.2, dtype: torch.dtype = torch.float64
) -> nn.Module:
    """A tiny ``transformers`` causal LM of ``model_type`` (one of
    :data:`~course_utils.atlas.SUPPORTED_MODEL_TYPES`), every weight drawn from ``N(0, std²)``
    with ``seed``, in ``dtype``, in eval mode and without gradients."""
    if model_type not in TINY_CONFIGS:
        raise ValueError(
            f"model_type must be one of {list(SUPPORTED_MODEL_TYPES)}; got {model_type!r}"
        )
    check_int(seed, "seed", low=0)
    if not std > 0:
        raise ValueError(f"std is {std}, expected a positive number")
    import transformers

    config_name, model_name, settings = TINY_CONFIGS[model_type]
    config = getattr(transformers, config_name)(**settings)
    generator = torch.Generator().manual_seed(seed)
    model = getattr(transformers, model_name)(config).to(dtype).eval().requires_grad_(False)
    for p in model.parameters():  # (in the module's order: the same seed gives the same model)
        p.copy_(torch.randn(p.shape, generator=generator, dtype=dtype) * std)
    return model
