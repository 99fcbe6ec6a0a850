"""DeepSeek-V3.2 rebuilt from the course's own code: MLA + DeepSeek Sparse Attention + MoE.

DeepSeek-V3.2 (DeepSeek-AI 2025) keeps DeepSeek-V3's blocks and adds one thing to attention:

- **multi-head latent attention** (MLA, :mod:`course_utils.mla`): a token is cached as one
  normalised latent ``c_KV`` ``(d_c,)`` plus one shared rotated key ``k_R`` ``(d_h^R,)``; every
  head's keys and values are up-projected from the latent; queries take a low-rank path
  (``q_a_proj`` -> RMSNorm -> ``q_b_proj``). The RoPE part pairs channels ``(2i, 2i+1)``;
- **DeepSeek Sparse Attention** (DSA): a *lightning indexer* scores every earlier token for
  each query with a few cheap heads, ``I[t, s] = sum_j w_j(t) · relu(q_j(t)·k(s) / sqrt(D))``
  (one key per token, ``w`` from the token), and attention only sees the ``index_topk``
  highest-scoring earlier tokens. With ``t + 1 <= index_topk`` earlier tokens, all are kept
  and this is plain causal MLA;
- **DeepSeek MoE**: sigmoid router scores plus a bias choose ``n_group`` groups' best
  ``topk_group`` first, then the top-``k`` experts inside them; the chosen *scores* (without
  the bias), renormalised and times ``routed_scaling_factor``, weight the SwiGLU experts; a
  shared expert always runs. The first ``first_k_dense_replace`` layers use a dense SwiGLU.

The float32 islands of the reference (RMSNorm statistics, RoPE angles, the router, the
indexer's scores) are kept: see :mod:`course_utils.atlas.blocks`.

>>> from transformers import DeepseekV32Config, DeepseekV32ForCausalLM
>>> config = DeepseekV32Config(vocab_size=64, hidden_size=32, intermediate_size=48,
...     moe_intermediate_size=16, num_hidden_layers=2, num_attention_heads=2,
...     num_key_value_heads=2, kv_lora_rank=16, q_lora_rank=24, qk_rope_head_dim=8,
...     qk_nope_head_dim=8, v_head_dim=8, n_routed_experts=4, num_experts_per_tok=2, n_group=2,
...     topk_group=1, first_k_dense_replace=1, index_topk=4, index_head_dim=16,
...     index_n_heads=8, experts_implementation="eager")
>>> _ = torch.manual_seed(0)
>>> hf = DeepseekV32ForCausalLM(config).double().eval().requires_grad_(False)
>>> ours, ids = build(hf), torch.randint(0, 64, (1, 16))   # 16 tokens > index_topk = 4
>>> want = hf(ids).logits
>>> float((ours(ids) - want).abs().max()) < 1e-9
True
>>> for layer in ours.layers:                                 # every earlier token instead
...     layer.attn.top_k = 16
>>> float((ours(ids) - want).abs().max()) > 1e-6             # the indexer's choice mattered
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..mla import LatentCache
from ..norms import layer_norm
from .blocks import (
    PRE_NORM_NAMES,
    DecoderLM,
    GatedMLP,
    RMSNorm,
    SwiGLUExperts,
    checked_config,
    gated_mlp_names,
    load_weights,
    rope_cos_sin,
    rope_inverse_frequencies_float32,
    rotate_half,
    softmax_weights,
)

__all__ = ["DeepseekV32", "SparseMLACache", "build", "indexer_top_k"]


@dataclass
class SparseMLACache:
    """One layer's cache: MLA's :class:`~course_utils.mla.LatentCache` (``c_KV`` and the rotated
    shared key) and the indexer's keys ``(B, S, D_I)``."""

    latents: LatentCache = field(default_factory=LatentCache)
    index_keys: Tensor | None = None


def indexer_top_k(q: Tensor, k: Tensor, w: Tensor, q_pos: Tensor, top_k: int) -> Tensor:
    """The lightning indexer's choice: a boolean mask ``(B, T, S)``, True at the (at most)
    ``top_k`` earlier tokens with the highest index score for each query.

    ``q`` ``(B, T, H_I, D_I)`` indexer queries (scaled), ``k`` ``(B, S, D_I)`` one key per token,
    ``w`` ``(B, T, H_I)`` per-query head weights, ``q_pos`` ``(T,)`` the queries' positions
    (keys sit at ``0 .. S-1``). Scores are float32, as the reference computes them.

    >>> q = torch.ones(1, 1, 1, 1); k = torch.tensor([[[3.0], [-1.0], [2.0]]])  # S = 3 keys
    >>> indexer_top_k(q, k, torch.ones(1, 1, 1), torch.tensor([2]), top_k=2)
    tensor([[[ True, False,  True]]])
    """
    scores = torch.matmul(q.float(), k.float().transpose(-1, -2).unsqueeze(1))  # (B, T, H_I, S)
    scores = F.relu(scores)  # a head votes for a key only when it likes it
    index = torch.matmul(w.float().unsqueeze(-2), scores).squeeze(-2)  # (B, T, S): sum_j w_j ·
    S = k.shape[1]
    future = torch.arange(S, device=k.device)[None, :] > q_pos[:, None]  # (T, S)
    index = index.masked_fill(future, float("-inf"))  # (B, T, S): only earlier tokens compete
    chosen = index.topk(min(top_k, S), dim=-1).indices  # (B, T, k)
    keep = torch.zeros_like(index, dtype=torch.bool).scatter(-1, chosen, True)  # (B, T, S)
    return keep & ~future  # a future token picked to fill k slots is still not seen


class SparseMLA(nn.Module):
    """MLA whose causal mask is narrowed to the indexer's top-k tokens (DSA)."""

    def __init__(self, cfg: Any, inv_freq: Tensor, attention_factor: float) -> None:
        super().__init__()
        d, h = cfg.hidden_size, cfg.num_attention_heads
        self.h, self.d_c, self.d_q = h, cfg.kv_lora_rank, cfg.q_lora_rank
        self.dn, self.dr, self.dv = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
        bias = cfg.attention_bias
        self.q_a_proj = nn.Linear(d, self.d_q, bias=bias)  # W^DQ: down to c^Q
        self.q_norm = RMSNorm(self.d_q, 1e-6)
        self.q_b_proj = nn.Linear(self.d_q, h * (self.dn + self.dr), bias=False)  # W^UQ, W^QR
        self.kv_a_proj = nn.Linear(d, self.d_c + self.dr, bias=bias)  # W^DKV and W^KR
        self.kv_norm = RMSNorm(self.d_c, 1e-6)
        self.kv_b_proj = nn.Linear(self.d_c, h * (self.dn + self.dv), bias=False)  # W^UK, W^UV
        self.o_proj = nn.Linear(h * self.dv, d, bias=bias)
        self.scale = (self.dn + self.dr) ** -0.5  # 1/sqrt(d_h + d_h^R) ...
        rope = dict(cfg.rope_parameters)
        factor, mscale_all_dim = rope.get("factor", 1.0), rope.get("mscale_all_dim", 0)
        if rope.get("rope_type", "default") != "default" and mscale_all_dim and factor > 1:
            self.scale *= (0.1 * mscale_all_dim * math.log(factor) + 1.0) ** 2  # ... YaRN's mscale²
        # the reference's "eager" attention takes its softmax in float32; SDPA keeps the dtype
        eager = getattr(cfg, "_attn_implementation", None) == "eager"
        self.softmax_dtype = torch.float32 if eager else None
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # (dr / 2,) float32
        self.attention_factor = attention_factor
        # the lightning indexer: a few heads of width D_I, one key per token
        self.h_i, self.d_i, self.top_k = cfg.index_n_heads, cfg.index_head_dim, cfg.index_topk
        self.wq_i = nn.Linear(self.d_q, self.h_i * self.d_i, bias=False)  # from c^Q
        self.wk_i = nn.Linear(d, self.d_i, bias=False)
        self.k_norm_i = nn.LayerNorm(self.d_i, eps=1e-6)
        self.w_i = nn.Linear(d, self.h_i, bias=False)  # per-query weight of each indexer head

    @staticmethod
    def _rope_pairs(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        """RoPE on pairs ``(2i, 2i+1)``; the result lists the rotated even channels, then the odd
        ones (the same for queries and keys, so every dot product is unchanged)."""
        cos, sin = cos[..., : cos.shape[-1] // 2], sin[..., : sin.shape[-1] // 2]  # (T, d/2)
        even, odd = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each
        return torch.cat([even * cos - odd * sin, odd * cos + even * sin], dim=-1)

    def forward(self, x: Tensor, positions: Tensor, cache: SparseMLACache | None) -> Tensor:
        B, T, _ = x.shape
        h, dn, dr, dv = self.h, self.dn, self.dr, self.dv
        cos, sin = rope_cos_sin(self.inv_freq, positions, self.attention_factor, x.dtype)
        c_q = self.q_norm(self.q_a_proj(x))  # (B, T, d_q)
        q = self.q_b_proj(c_q).view(B, T, h, dn + dr).transpose(1, 2)  # (B, h, T, dn + dr)
        q_nope, q_rope = q.split([dn, dr], dim=-1)
        c_kv, k_rope = self.kv_a_proj(x).split([self.d_c, dr], dim=-1)  # (B, T, d_c), (B, T, dr)
        c_kv = self.kv_norm(c_kv)  # (B, T, d_c): what is cached
        q_rope = self._rope_pairs(q_rope, cos, sin)  # (B, h, T, dr)
        k_rope = self._rope_pairs(k_rope, cos, sin)  # (B, T, dr): one key for all heads
        k_idx = layer_norm(self.wk_i(x), self.k_norm_i.weight, self.k_norm_i.bias, 1e-6)
        # k_idx: (B, T, D_I); the indexer rotates its first dr channels, rotate-half pairing
        k_idx = torch.cat([k_idx[..., :dr] * cos + rotate_half(k_idx[..., :dr]) * sin,
                           k_idx[..., dr:]], dim=-1)  # fmt: skip
        if cache is not None:
            c_kv, k_rope = cache.latents.append(c_kv, k_rope)  # (B, S, d_c), (B, S, dr)
            held = cache.index_keys
            k_idx = k_idx if held is None else torch.cat([held, k_idx], dim=1)  # (B, S, D_I)
            cache.index_keys = k_idx
        S = c_kv.shape[1]
        # which tokens each query may see: the indexer's top-k among the earlier ones
        q_idx = self.wq_i(c_q).view(B, T, self.h_i, self.d_i)  # (B, T, H_I, D_I)
        q_idx = torch.cat([q_idx[..., :dr] * cos[:, None] + rotate_half(q_idx[..., :dr])
                           * sin[:, None], q_idx[..., dr:]], dim=-1)  # fmt: skip
        w = self.w_i(x).float() * self.h_i**-0.5  # (B, T, H_I)
        keep = indexer_top_k(q_idx * self.d_i**-0.5, k_idx, w, positions, self.top_k)  # (B,T,S)
        # MLA, the naive way: every head's keys and values from the cached latents
        kv = self.kv_b_proj(c_kv).view(B, S, h, dn + dv).transpose(1, 2)  # (B, h, S, dn + dv)
        k_nope, v = kv.split([dn, dv], dim=-1)  # (B, h, S, dn), (B, h, S, dv)
        scores = q_nope @ k_nope.transpose(-1, -2) + q_rope @ k_rope[:, None].transpose(-1, -2)
        scores = scores * self.scale  # (B, h, T, S): content + position
        out = softmax_weights(scores, keep[:, None], self.softmax_dtype) @ v  # (B, h, T, dv)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, h * dv))  # (B, T, d)


class DeepseekMoE(nn.Module):
    """Group-limited sigmoid routing over ``E`` SwiGLU experts plus shared experts."""

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        d, f, E = cfg.hidden_size, cfg.moe_intermediate_size, cfg.n_routed_experts
        self.E, self.groups, self.top_groups = E, cfg.n_group, cfg.topk_group
        self.top_k, self.renormalise = cfg.num_experts_per_tok, cfg.norm_topk_prob
        self.routed_scale = cfg.routed_scaling_factor
        self.router = nn.Parameter(torch.zeros(E, d))
        self.register_buffer("bias", torch.zeros(E))  # load-balancing bias: choice only
        self.experts = SwiGLUExperts(E, d, f)
        self.shared = GatedMLP(d, f * cfg.n_shared_experts)  # the shared experts as one SwiGLU

    def route(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Expert ids ``(N, k)`` and their weights ``(N, k)`` (float32) for tokens ``(N, d)``."""
        scores = torch.sigmoid(F.linear(x.float(), self.router.float()))  # (N, E) float32
        choice = scores + self.bias  # (N, E): the bias steers the choice, not the weights
        G = self.groups
        by_group = choice.view(-1, G, self.E // G)  # (N, G, E/G)
        group_score = by_group.topk(2, dim=-1)[0].sum(-1)  # (N, G): a group's two best experts
        best = group_score.topk(self.top_groups, dim=-1, sorted=False)[1]  # (N, top_groups)
        allowed = torch.zeros_like(group_score).scatter(1, best, 1.0).bool()  # (N, G)
        allowed = allowed[:, :, None].expand(-1, G, self.E // G).reshape(-1, self.E)  # (N, E)
        top_i = choice.masked_fill(~allowed, float("-inf")).topk(self.top_k, -1, sorted=False)[1]
        top_w = scores.gather(1, top_i)  # (N, k): the sigmoid scores, bias left out
        if self.renormalise:
            top_w = top_w / (top_w.sum(-1, keepdim=True) + 1e-20)
        return top_i, top_w * self.routed_scale

    def forward(self, x: Tensor) -> Tensor:
        B, T, d = x.shape
        flat = x.reshape(B * T, d)  # (N, d)
        top_i, top_w = self.route(flat)
        routed = self.experts(flat, top_i, top_w)  # (N, d)
        return routed.view(B, T, d) + self.shared(x)  # (B, T, d)


class DeepseekV32Layer(nn.Module):
    """Pre-norm layer: ``x + attn(norm(x))`` (sparse MLA), then ``x + ffn(norm(x))`` (DeepSeek
    MoE, or a dense SwiGLU in the first ``first_k_dense_replace`` layers)."""

    def __init__(self, cfg: Any, kind: str, inv_freq: Tensor, attention_factor: float) -> None:
        super().__init__()
        d, eps = cfg.hidden_size, cfg.rms_norm_eps
        self.attn = SparseMLA(cfg, inv_freq, attention_factor)
        self.ffn = DeepseekMoE(cfg) if kind == "sparse" else GatedMLP(d, cfg.intermediate_size)
        self.input_norm = RMSNorm(d, eps)
        self.post_attention_norm = RMSNorm(d, eps)

    def forward(self, x: Tensor, positions: Tensor, cache: SparseMLACache | None) -> Tensor:
        x = x + self.attn(self.input_norm(x), positions, cache)  # (B, T, d)
        return x + self.ffn(self.post_attention_norm(x))  # (B, T, d)


class DeepseekV32(DecoderLM):
    """A DeepSeek-V3.2 causal LM built from :mod:`course_utils.atlas.blocks` (see the module doc).

    Made by :func:`build` (through ``course_utils.atlas.from_hf``); ``forward(input_ids,
    cache=None)`` as in :class:`~course_utils.atlas.blocks.DecoderLM`, with a
    :class:`SparseMLACache` per layer.
    """

    def __init__(self, cfg: Any) -> None:
        for kind in cfg.mlp_layer_types:
            if kind not in ("dense", "sparse"):
                raise ValueError(f"config.mlp_layer_types may hold 'dense', 'sparse'; got {kind!r}")
        inv_freq, factor = rope_inverse_frequencies_float32(
            cfg.qk_rope_head_dim, dict(cfg.rope_parameters), cfg.max_position_embeddings
        )  # (dr / 2,) float32
        layers = (DeepseekV32Layer(cfg, kind, inv_freq, factor) for kind in cfg.mlp_layer_types)
        super().__init__(
            cfg.vocab_size, cfg.hidden_size, layers, RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        )

    def new_layer_state(self, i: int) -> SparseMLACache:
        return SparseMLACache()


#: Ours -> the checkpoint's names within a layer (one map for MoE and dense layers).
LAYER_NAMES = {
    **PRE_NORM_NAMES,
    **{f"attn.{n}": f"self_attn.{n}" for n in ("q_a_proj", "q_b_proj", "kv_b_proj", "o_proj")},
    "attn.kv_a_proj": "self_attn.kv_a_proj_with_mqa",
    "attn.q_norm": "self_attn.q_a_layernorm",
    "attn.kv_norm": "self_attn.kv_a_layernorm",
    "attn.wq_i": "self_attn.indexer.wq_b",
    "attn.wk_i": "self_attn.indexer.wk",
    "attn.k_norm_i": "self_attn.indexer.k_norm",
    "attn.w_i": "self_attn.indexer.weights_proj",
    "ffn.router": "mlp.gate.weight",
    "ffn.bias": "mlp.gate.e_score_correction_bias",
    **SwiGLUExperts.checkpoint_names("ffn.experts", "mlp.experts"),
    **gated_mlp_names("ffn.shared", "mlp.shared_experts"),
    **gated_mlp_names("ffn", "mlp"),  # a dense layer
}


def build(model: nn.Module) -> DeepseekV32:
    """Our :class:`DeepseekV32` with copies of the weights (and the routing biases) of a
    ``transformers`` ``DeepseekV32ForCausalLM``, frozen: an inference copy."""
    cfg = checked_config(model, "deepseek_v32", "DeepseekV32ForCausalLM")
    return load_weights(DeepseekV32(cfg), model, LAYER_NAMES).requires_grad_(False)
