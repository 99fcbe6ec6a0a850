"""Gemma 3's text model: five local (sliding-window) layers for every global one.

What Gemma 3 (Gemma Team 2025) changes in a Llama-style decoder:

- **Local/global interleave.** Layers follow ``config.layer_types``: by default five
  ``sliding_attention`` layers (each query sees its last ``sliding_window`` tokens) then one
  ``full_attention`` layer. Only the global layers' KV cache grows with the context.
- **Two RoPE bases.** Local layers rotate with base 10 000, global ones with 1 000 000 (each kind
  has its own ``rope_parameters``, scaling included).
- **QK-norm.** Queries and keys are RMS-normalised per head before RoPE (this replaced Gemma 2's
  attention logit soft-cap, so ``attn_logit_softcapping`` is not used).
- **Pre- and post-norms.** Each sub-layer's input *and* output is normalised before the
  residual sum; every RMSNorm gain is ``1 + w``.
- **Scaled embedding** by ``√d_model``, scores scaled by ``query_pre_attn_scalar^-1/2``, a GeGLU
  MLP, tied input and output embeddings, and a final logit soft-cap
  ``cap · tanh(logits / cap)`` when ``final_logit_softcapping`` is set.

>>> import transformers
>>> config = transformers.Gemma3TextConfig(
...     vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
...     num_attention_heads=2, num_key_value_heads=1, head_dim=8, sliding_window=4,
...     query_pre_attn_scalar=8, layer_types=["sliding_attention", "full_attention"])
>>> _ = torch.manual_seed(0)
>>> model = transformers.Gemma3ForCausalLM(config).eval()
>>> ours = build(model)
>>> [layer.attn.window for layer in ours.layers]           # local, then global
[4, None]
>>> ids = torch.randint(0, 32, (1, 12))
>>> bool((ours(ids) - model(ids).logits).abs().max() < 1e-4)
True
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
    GatedMLP,
    RMSNorm,
    SelfAttention,
    attention_names,
    checked_inv_freq,
    gated_mlp_names,
    load_weights,
)

__all__ = ["Gemma3Layer", "Gemma3Text", "build"]

LAYER_KINDS = ("sliding_attention", "full_attention")


class Gemma3Layer(nn.Module):
    """One Gemma 3 decoder layer: attention (QK-norm, RoPE, a window if local), then a GeGLU MLP,
    each wrapped in a pre-norm and a post-norm (its ``forward`` as in
    :class:`~course_utils.atlas.blocks.DecoderLM`; the state an ``AttentionCache``)."""

    def __init__(self, config: Any, kind: str, inv_freq: Tensor, attention_factor: float) -> None:
        super().__init__()
        d, eps = config.hidden_size, config.rms_norm_eps
        self.attn = SelfAttention.from_config(
            config,
            kind,
            inv_freq,
            attention_factor,
            scale=config.query_pre_attn_scalar**-0.5,  # not d_head^-1/2: a config number
            qk_norm_eps=eps,
        )
        self.input_norm = RMSNorm(d, eps, unit_offset=True)
        self.post_attention_norm = RMSNorm(d, eps, unit_offset=True)
        self.pre_mlp_norm = RMSNorm(d, eps, unit_offset=True)
        self.post_mlp_norm = RMSNorm(d, eps, unit_offset=True)
        self.mlp = GatedMLP(d, config.intermediate_size, config.hidden_activation)

    def forward(self, x: Tensor, positions: Tensor, cache: AttentionCache | None) -> Tensor:
        a = self.attn(self.input_norm(x), positions, cache)  # (B, T, d)
        x = x + self.post_attention_norm(a)  # (B, T, d): post-norm, then residual
        return x + self.post_mlp_norm(self.mlp(self.pre_mlp_norm(x)))  # (B, T, d)


class Gemma3Text(DecoderLM):
    """Gemma 3's text decoder built from :mod:`course_utils.atlas.blocks` (see the module doc).

    Made by :func:`build` (through ``course_utils.atlas.from_hf``); ``forward(input_ids,
    cache=None)`` as in :class:`~course_utils.atlas.blocks.DecoderLM`.
    """

    def __init__(self, config: Any, rope: dict[str, tuple[Tensor, float]]) -> None:
        d = config.hidden_size
        layers = (Gemma3Layer(config, kind, *rope[kind]) for kind in config.layer_types)
        norm = RMSNorm(d, config.rms_norm_eps, unit_offset=True)
        super().__init__(config.vocab_size, d, layers, norm)
        # √d_model, rounded to float32 as the checkpoint stores it
        self.embed_scale = float(torch.tensor(d**0.5, dtype=torch.float32))
        self.final_softcap = config.final_logit_softcapping

    def embed(self, input_ids: Tensor) -> Tensor:
        return self.embed_tokens(input_ids) * self.embed_scale  # (B, T, d): scaled by √d

    def head(self, x: Tensor) -> Tensor:
        logits = self.lm_head(self.norm(x))  # (B, T, V)
        if self.final_softcap is not None:  # a smooth clamp to (-cap, cap)
            logits = self.final_softcap * torch.tanh(logits / self.final_softcap)  # (B, T, V)
        return logits

    def new_layer_state(self, i: int) -> AttentionCache:
        return AttentionCache(window=self.layers[i].attn.window)  # a local layer: w - 1 keys


def _rope(model: nn.Module, kind: str) -> tuple[Tensor, float]:
    """The float32 frequencies and attention factor of one layer kind, checked against ours."""
    config = model.config
    params = dict(config.rope_parameters[kind])
    base = params.pop("rope_theta")
    inv_freq, factor = rope_inverse_frequencies(
        config.head_dim, base, params, max_position_embeddings=config.max_position_embeddings
    )
    theirs = getattr(model.model.rotary_emb, f"{kind}_inv_freq")
    return checked_inv_freq(inv_freq, theirs, f"{kind} RoPE"), factor


def build(model: nn.Module) -> Gemma3Text:
    """Our :class:`Gemma3Text` with the weights of a ``transformers`` ``Gemma3ForCausalLM``."""
    config = model.config
    if getattr(config, "use_bidirectional_attention", False):
        raise ValueError(
            "model.config.use_bidirectional_attention must be False (a causal LM); got True"
        )
    kinds = sorted(set(config.layer_types))
    if not set(kinds) <= set(LAYER_KINDS):
        raise ValueError(f"model.config.layer_types must hold {LAYER_KINDS}; got {kinds}")
    ours = Gemma3Text(config, {kind: _rope(model, kind) for kind in kinds})
    if config._attn_implementation == "eager":  # its softmax is float32 whatever the dtype
        for layer in ours.layers:
            layer.attn.softmax_dtype = torch.float32
    names = {  # ours -> theirs, within a layer
        **attention_names(),
        **PRE_NORM_NAMES,
        "pre_mlp_norm": "pre_feedforward_layernorm",
        "post_mlp_norm": "post_feedforward_layernorm",
        **gated_mlp_names("mlp", "mlp"),
    }
    return load_weights(ours, model, names)
