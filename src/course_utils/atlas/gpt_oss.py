"""gpt-oss (OpenAI 2025): learned attention sinks, alternating windows, a clamped-SwiGLU MoE.

What gpt-oss changes in a Llama-style decoder:

- **Learned attention sinks.** Every head has one learned logit ``s_h`` that joins each row of
  its softmax as an extra column with no value: ``w_n = e^{z_n} / (e^{s_h} + sum_m e^{z_m})``.
  A head can so put weight on *nothing*, the job a StreamingLLM sink token does by accident
  (Xiao et al. 2023); with a sliding window this matters, since the window has no first token.
- **Alternating layers.** ``config.layer_types`` alternates ``sliding_attention`` (a window of
  ``sliding_window`` tokens, 128 in the release) and ``full_attention``, starting local.
- **Mixture of experts.** A linear router (with bias) scores ``num_local_experts`` experts per
  token; the top ``num_experts_per_tok`` are kept and their scores softmaxed over those ``k``.
  Each expert is a SwiGLU with biases and two clamps: ``gate`` to ``(-inf, limit]``, ``up`` to
  ``[-limit, limit]``, then ``(up + 1) · gate · sigmoid(alpha · gate)`` (``alpha`` 1.702).
- **YaRN RoPE** (Peng et al. 2023): ``rope_parameters`` of type ``yarn`` (factor 32 over 4096
  tokens), whose ``attention_factor`` multiplies cos and sin.
- Biases on the attention projections, scores scaled by ``d_head^-1/2``, RMSNorm gains ``w``.

>>> import transformers
>>> config = transformers.GptOssConfig(
...     vocab_size=32, hidden_size=16, intermediate_size=8, num_hidden_layers=2,
...     num_attention_heads=2, num_key_value_heads=1, head_dim=8, sliding_window=4,
...     num_local_experts=4, num_experts_per_tok=2)
>>> _ = torch.manual_seed(0)
>>> model = transformers.GptOssForCausalLM(config).eval()
>>> ours = build(model)
>>> ids = torch.randint(0, 32, (1, 12))
>>> cache = ours.new_cache()
>>> steps = [ours(ids[:, t : t + 1], cache=cache) for t in range(12)]   # one token at a time
>>> bool((torch.cat(steps, dim=1) - model(ids).logits).abs().max() < 1e-4)
True
>>> [len(layer_cache) for layer_cache in cache.layers]    # sliding: w - 1 + 1 keys; full: all
[4, 12]
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from ..positions import rope_inverse_frequencies
from .blocks import (
    PRE_NORM_NAMES,
    AttentionCache,
    DecoderLM,
    RMSNorm,
    SelfAttention,
    attention_names,
    checked_inv_freq,
    load_weights,
    mix_experts,
    top_k_softmax,
)

__all__ = ["ClampedSwiGLUExperts", "GptOss", "GptOssLayer", "build"]


class ClampedSwiGLUExperts(nn.Module):
    """gpt-oss's mixture of experts: a top-k router and ``E`` clamped-SwiGLU experts.

    ``x`` ``(B, T, d)`` -> ``(B, T, d)``. The router's logits ``x W_r^T + b_r`` ``(N, E)`` pick
    each token's ``k`` best experts; their weights are the softmax of those ``k`` logits. Expert
    ``e`` holds ``W_gu[e]`` ``(d, 2 d_ff)`` whose columns alternate gate, up, gate, up, ...
    """

    def __init__(self, d: int, d_ff: int, n_experts: int, k: int, alpha: float, limit: float):
        super().__init__()
        self.k, self.alpha, self.limit = k, alpha, limit
        self.router = nn.Linear(d, n_experts)  # (E, d) and (E,)
        self.gate_up = nn.Parameter(torch.zeros(n_experts, d, 2 * d_ff))  # (E, d, 2 d_ff)
        self.gate_up_bias = nn.Parameter(torch.zeros(n_experts, 2 * d_ff))  # (E, 2 d_ff)
        self.down = nn.Parameter(torch.zeros(n_experts, d_ff, d))  # (E, d_ff, d)
        self.down_bias = nn.Parameter(torch.zeros(n_experts, d))  # (E, d)

    def extra_repr(self) -> str:
        return f"top_k={self.k}, alpha={self.alpha}, limit={self.limit}"

    def expert(self, e: int, x: Tensor) -> Tensor:
        """Expert ``e`` on tokens ``x`` ``(n, d)``: the clamped SwiGLU, ``(n, d)``."""
        gate_up = x @ self.gate_up[e] + self.gate_up_bias[e]  # (n, 2 d_ff)
        gate, up = gate_up[:, 0::2], gate_up[:, 1::2]  # (n, d_ff) each: interleaved columns
        gate = gate.clamp(max=self.limit)  # (n, d_ff): capped above only
        up = up.clamp(min=-self.limit, max=self.limit)  # (n, d_ff): capped both sides
        glu = gate * torch.sigmoid(self.alpha * gate)  # (n, d_ff): Swish with gain alpha
        return ((up + 1) * glu) @ self.down[e] + self.down_bias[e]  # (n, d): "+ 1" on up

    def forward(self, x: Tensor) -> Tensor:
        B, T, d = x.shape
        tokens = x.reshape(B * T, d)  # (N, d)
        logits = self.router(tokens)  # (N, E)
        weights, indices = top_k_softmax(logits, self.k)  # (N, k), (N, k)
        return mix_experts(tokens, indices, weights, self.expert).reshape(B, T, d)  # (B, T, d)


class GptOssLayer(nn.Module):
    """One gpt-oss layer: attention with sinks (and a window if sliding), then the MoE; pre-norms.
    Called as a :class:`~course_utils.atlas.blocks.DecoderLM` calls its layers."""

    def __init__(self, config: Any, kind: str, inv_freq: Tensor, attention_factor: float) -> None:
        super().__init__()
        d, eps = config.hidden_size, config.rms_norm_eps
        self.attn = SelfAttention.from_config(
            config, kind, inv_freq, attention_factor, scale=config.head_dim**-0.5, sinks=True
        )
        self.input_norm = RMSNorm(d, eps)
        self.post_attention_norm = RMSNorm(d, eps)
        self.moe = ClampedSwiGLUExperts(
            d,
            config.intermediate_size,
            config.num_local_experts,
            config.num_experts_per_tok,
            config.swiglu_alpha,
            config.swiglu_limit,
        )

    def forward(self, x: Tensor, positions: Tensor, cache: AttentionCache | None) -> Tensor:
        x = x + self.attn(self.input_norm(x), positions, cache)  # (B, T, d)
        return x + self.moe(self.post_attention_norm(x))  # (B, T, d)


class GptOss(DecoderLM):
    """gpt-oss built from :mod:`course_utils.atlas.blocks` (see the module doc).

    Made by :func:`build` (through ``course_utils.atlas.from_hf``); ``forward(input_ids,
    cache=None)`` as in :class:`~course_utils.atlas.blocks.DecoderLM`.
    """

    def __init__(self, config: Any, inv_freq: Tensor, attention_factor: float) -> None:
        layers = (
            GptOssLayer(config, kind, inv_freq, attention_factor) for kind in config.layer_types
        )
        norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        super().__init__(config.vocab_size, config.hidden_size, layers, norm)

    def new_layer_state(self, i: int) -> AttentionCache:
        return AttentionCache(window=self.layers[i].attn.window)  # sliding: w - 1 keys


def build(model: nn.Module) -> GptOss:
    """Our :class:`GptOss` with the weights of a ``transformers`` ``GptOssForCausalLM``."""
    config = model.config
    kinds = set(config.layer_types)
    if not kinds <= {"sliding_attention", "full_attention"}:
        raise ValueError(
            f"model.config.layer_types must hold 'sliding_attention' or 'full_attention'; "
            f"got {sorted(kinds)}"
        )
    params = dict(config.rope_parameters)
    base = params.pop("rope_theta")
    inv_freq, factor = rope_inverse_frequencies(
        config.head_dim, base, params, max_position_embeddings=config.max_position_embeddings
    )
    inv_freq = checked_inv_freq(inv_freq, model.model.rotary_emb.inv_freq, "RoPE")
    names = {  # ours -> theirs, within a layer (a module: its weight and bias, where ours has one)
        **attention_names(),
        **PRE_NORM_NAMES,
        "moe.router": "mlp.router",
        "moe.gate_up": "mlp.experts.gate_up_proj",
        "moe.gate_up_bias": "mlp.experts.gate_up_proj_bias",
        "moe.down": "mlp.experts.down_proj",
        "moe.down_bias": "mlp.experts.down_proj_bias",
    }
    return load_weights(GptOss(config, inv_freq, factor), model, names)
