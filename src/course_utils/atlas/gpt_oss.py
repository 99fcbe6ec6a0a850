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
>>> [layer.window for layer in ours.layers]                # sliding, then full
[4, None]
>>> ids = torch.randint(0, 32, (1, 12))
>>> cache = ours.new_cache()
>>> steps = [ours(ids[:, t : t + 1], cache=cache) for t in range(12)]   # one token at a time
>>> bool((torch.cat(steps, dim=1) - model(ids).logits).abs().max() < 1e-4)
True
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from ..positions import rope_inverse_frequencies
from .blocks import (
    AttentionCache,
    DecoderLM,
    RMSNorm,
    attention,
    causal_window_mask,
    checked_inv_freq,
    copy_weight,
    mix_experts,
    rope_cos_sin,
    rotate_pairs,
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
        top, indices = torch.topk(logits, self.k, dim=-1)  # (N, k), (N, k)
        weights = torch.softmax(top, dim=-1)  # (N, k): softmax over the chosen k only
        return mix_experts(tokens, indices, weights, self.expert).reshape(B, T, d)  # (B, T, d)


class GptOssLayer(nn.Module):
    """One gpt-oss layer: attention with sinks (and a window if sliding), then the MoE; pre-norms.

    ``x`` ``(B, T, d_model)`` -> ``(B, T, d_model)``; ``positions`` ``(T,)``; ``cache`` an
    :class:`~course_utils.atlas.blocks.AttentionCache` or ``None``.
    """

    def __init__(self, config: Any, kind: str, inv_freq: Tensor, attention_factor: float) -> None:
        super().__init__()
        d, h, h_kv, d_head = (
            config.hidden_size,
            config.num_attention_heads,
            config.num_key_value_heads,
            config.head_dim,
        )
        bias, eps = bool(config.attention_bias), config.rms_norm_eps
        self.n_heads, self.n_kv_heads, self.d_head = h, h_kv, d_head
        self.window = config.sliding_window if kind == "sliding_attention" else None
        self.scale = d_head**-0.5
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # (d_head/2,) float32
        self.attention_factor = attention_factor  # YaRN's: multiplies cos and sin
        self.q_proj = nn.Linear(d, h * d_head, bias=bias)
        self.k_proj = nn.Linear(d, h_kv * d_head, bias=bias)
        self.v_proj = nn.Linear(d, h_kv * d_head, bias=bias)
        self.o_proj = nn.Linear(h * d_head, d, bias=bias)
        self.sinks = nn.Parameter(torch.zeros(h))  # (h,): one learned logit per head
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

    def extra_repr(self) -> str:
        return f"window={self.window}"

    def forward(self, x: Tensor, positions: Tensor, cache: AttentionCache | None) -> Tensor:
        B, T, _ = x.shape
        h = self.input_norm(x)  # (B, T, d)
        q = self.q_proj(h).view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # (B, h, T, dh)
        k = self.k_proj(h).view(B, T, self.n_kv_heads, self.d_head).transpose(1, 2)  # (B,hkv,T,dh)
        v = self.v_proj(h).view(B, T, self.n_kv_heads, self.d_head).transpose(1, 2)  # (B,hkv,T,dh)
        cos, sin = rope_cos_sin(self.inv_freq, positions, self.attention_factor, x.dtype)
        q, k = rotate_pairs(q, cos, sin), rotate_pairs(k, cos, sin)  # (B, h|hkv, T, dh)
        if cache is not None:  # the cache's keys first, then these: (B, hkv, T_k, dh)
            k, v, _ = cache.extend(k, v, positions)
        mask = causal_window_mask(T, k.size(2), self.window).to(x.device)  # (T, T_k)
        a = attention(q, k, v, scale=self.scale, mask=mask, sinks=self.sinks)  # (B, h, T, dh)
        a = a.transpose(1, 2).reshape(B, T, self.n_heads * self.d_head)  # (B, T, h·dh)
        x = x + self.o_proj(a)  # (B, T, d)
        return x + self.moe(self.post_attention_norm(x))  # (B, T, d)


class GptOss(DecoderLM):
    """gpt-oss built from :mod:`course_utils.atlas.blocks` (see the module doc).

    Made by :func:`build` (through ``course_utils.atlas.from_hf``); ``forward(input_ids,
    cache=None)`` as in :class:`~course_utils.atlas.blocks.DecoderLM`.
    """

    def __init__(self, config: Any, inv_freq: Tensor, attention_factor: float) -> None:
        super().__init__()
        self.vocab_size, d = config.vocab_size, config.hidden_size
        self.embed_tokens = nn.Embedding(config.vocab_size, d)
        self.layers = nn.ModuleList(
            GptOssLayer(config, kind, inv_freq, attention_factor) for kind in config.layer_types
        )
        self.norm = RMSNorm(d, config.rms_norm_eps)
        self.lm_head = nn.Linear(d, config.vocab_size, bias=False)

    def embed(self, input_ids: Tensor) -> Tensor:
        return self.embed_tokens(input_ids)  # (B, T, d)

    def head(self, x: Tensor) -> Tensor:
        return self.lm_head(self.norm(x))  # (B, T, V)

    def new_layer_state(self, i: int) -> AttentionCache:
        return AttentionCache(window=self.layers[i].window)  # a sliding layer keeps w - 1 keys


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
    weight = model.lm_head.weight
    ours = GptOss(config, inv_freq, factor).to(dtype=weight.dtype, device=weight.device)
    for layer in ours.layers:  # the frequencies stay float32 whatever the dtype
        layer.inv_freq = layer.inv_freq.float()
    theirs = model.model
    copy_weight(ours.embed_tokens.weight, theirs.embed_tokens.weight, "embed_tokens")
    copy_weight(ours.norm.weight, theirs.norm.weight, "norm")
    copy_weight(ours.lm_head.weight, model.lm_head.weight, "lm_head")
    names = {  # ours -> theirs, within a layer
        "q_proj.weight": "self_attn.q_proj.weight",
        "k_proj.weight": "self_attn.k_proj.weight",
        "v_proj.weight": "self_attn.v_proj.weight",
        "o_proj.weight": "self_attn.o_proj.weight",
        "sinks": "self_attn.sinks",
        "input_norm.weight": "input_layernorm.weight",
        "post_attention_norm.weight": "post_attention_layernorm.weight",
        "moe.router.weight": "mlp.router.weight",
        "moe.router.bias": "mlp.router.bias",
        "moe.gate_up": "mlp.experts.gate_up_proj",
        "moe.gate_up_bias": "mlp.experts.gate_up_proj_bias",
        "moe.down": "mlp.experts.down_proj",
        "moe.down_bias": "mlp.experts.down_proj_bias",
    }
    if config.attention_bias:
        for p in ("q_proj", "k_proj", "v_proj", "o_proj"):
            names[f"{p}.bias"] = f"self_attn.{p}.bias"
    for i, (layer, their_layer) in enumerate(zip(ours.layers, theirs.layers, strict=True)):
        for mine, name in names.items():
            src, dst = their_layer.get_parameter(name), layer.get_parameter(mine)
            copy_weight(dst, src, f"layers.{i}.{name}")
    return ours.eval()
