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
>>> ours = build(hf)
>>> ids = torch.randint(0, 64, (1, 12))                     # 12 tokens > index_topk = 4
>>> float((ours(ids) - hf(ids).logits).abs().max()) < 1e-9
True
>>> cache = ours.new_cache()
>>> steps = torch.cat([ours(ids[:, t : t + 1], cache=cache) for t in range(12)], dim=1)
>>> float((steps - ours(ids)).abs().max()) < 1e-6   # float32 router and norms: ~1e-7
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..mla import LatentCache
from ..norms import layer_norm
from .blocks import (
    check_input_ids,
    mix_experts,
    rms_norm_float32,
    rope_cos_sin,
    rope_inverse_frequencies_float32,
    rotate_half,
    swiglu,
)
from .qwen3_next import _softmax

__all__ = ["DeepseekV32", "DeepseekV32Cache", "build", "indexer_top_k"]


@dataclass
class DeepseekV32Cache:
    """Per layer: MLA's :class:`~course_utils.mla.LatentCache` (``c_KV`` and the rotated shared
    key) and the indexer's keys ``(B, S, D_I)``; ``length`` tokens seen so far."""

    latents: list[LatentCache] = field(default_factory=list)
    index_keys: list[Tensor | None] = field(default_factory=list)
    length: int = 0


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

    def __init__(self, cfg) -> None:
        super().__init__()
        d, h = cfg.hidden_size, cfg.num_attention_heads
        self.h, self.d_c, self.d_q = h, cfg.kv_lora_rank, cfg.q_lora_rank
        self.dn, self.dr, self.dv = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
        bias = cfg.attention_bias
        self.q_a_proj = nn.Linear(d, self.d_q, bias=bias)  # W^DQ: down to c^Q
        self.q_norm = nn.Parameter(torch.ones(self.d_q))
        self.q_b_proj = nn.Linear(self.d_q, h * (self.dn + self.dr), bias=False)  # W^UQ, W^QR
        self.kv_a_proj = nn.Linear(d, self.d_c + self.dr, bias=bias)  # W^DKV and W^KR
        self.kv_norm = nn.Parameter(torch.ones(self.d_c))
        self.kv_b_proj = nn.Linear(self.d_c, h * (self.dn + self.dv), bias=False)  # W^UK, W^UV
        self.o_proj = nn.Linear(h * self.dv, d, bias=bias)
        self.scale = (self.dn + self.dr) ** -0.5  # 1/sqrt(d_h + d_h^R) ...
        rope = dict(cfg.rope_parameters)
        factor, mscale_all_dim = rope.get("factor", 1.0), rope.get("mscale_all_dim", 0)
        if rope.get("rope_type", "default") != "default" and mscale_all_dim and factor > 1:
            self.scale *= (0.1 * mscale_all_dim * math.log(factor) + 1.0) ** 2  # ... YaRN's mscale²
        # the reference's "eager" attention takes its softmax in float32; SDPA keeps the dtype
        self.softmax_float32 = getattr(cfg, "_attn_implementation", None) == "eager"
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

    def forward(
        self,
        x: Tensor,
        cos: Tensor,
        sin: Tensor,
        start: int,
        cache: DeepseekV32Cache | None,
        layer: int,
    ) -> Tensor:
        B, T, _ = x.shape
        h, dn, dr, dv = self.h, self.dn, self.dr, self.dv
        c_q = rms_norm_float32(self.q_a_proj(x), self.q_norm, 1e-6)  # (B, T, d_q)
        q = self.q_b_proj(c_q).view(B, T, h, dn + dr).transpose(1, 2)  # (B, h, T, dn + dr)
        q_nope, q_rope = q.split([dn, dr], dim=-1)
        c_kv, k_rope = self.kv_a_proj(x).split([self.d_c, dr], dim=-1)  # (B, T, d_c), (B, T, dr)
        c_kv = rms_norm_float32(c_kv, self.kv_norm, 1e-6)  # (B, T, d_c): what is cached
        q_rope = self._rope_pairs(q_rope, cos, sin)  # (B, h, T, dr)
        k_rope = self._rope_pairs(k_rope, cos, sin)  # (B, T, dr): one key for all heads
        k_idx = layer_norm(self.wk_i(x), self.k_norm_i.weight, self.k_norm_i.bias, 1e-6)
        # k_idx: (B, T, D_I); the indexer rotates its first dr channels, rotate-half pairing
        k_idx = torch.cat([k_idx[..., :dr] * cos + rotate_half(k_idx[..., :dr]) * sin,
                           k_idx[..., dr:]], dim=-1)  # fmt: skip
        if cache is not None:
            c_kv, k_rope = cache.latents[layer].append(c_kv, k_rope)  # (B, S, d_c), (B, S, dr)
            held = cache.index_keys[layer]
            k_idx = k_idx if held is None else torch.cat([held, k_idx], dim=1)  # (B, S, D_I)
            cache.index_keys[layer] = k_idx
        S = c_kv.shape[1]
        # which tokens each query may see: the indexer's top-k among the earlier ones
        q_idx = self.wq_i(c_q).view(B, T, self.h_i, self.d_i)  # (B, T, H_I, D_I)
        q_idx = torch.cat([q_idx[..., :dr] * cos[:, None] + rotate_half(q_idx[..., :dr])
                           * sin[:, None], q_idx[..., dr:]], dim=-1)  # fmt: skip
        w = self.w_i(x).float() * self.h_i**-0.5  # (B, T, H_I)
        q_pos = torch.arange(start, start + T, device=x.device)  # (T,)
        keep = indexer_top_k(q_idx * self.d_i**-0.5, k_idx, w, q_pos, self.top_k)  # (B, T, S)
        # MLA, the naive way: every head's keys and values from the cached latents
        kv = self.kv_b_proj(c_kv).view(B, S, h, dn + dv).transpose(1, 2)  # (B, h, S, dn + dv)
        k_nope, v = kv.split([dn, dv], dim=-1)  # (B, h, S, dn), (B, h, S, dv)
        scores = q_nope @ k_nope.transpose(-1, -2) + q_rope @ k_rope[:, None].transpose(-1, -2)
        scores = scores * self.scale  # (B, h, T, S): content + position
        scores = scores.masked_fill(~keep[:, None], float("-inf"))  # only the chosen tokens
        out = _softmax(scores, self.softmax_float32) @ v  # (B, h, T, dv)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, h * dv))  # (B, T, d)


class DeepseekMoE(nn.Module):
    """Group-limited sigmoid routing over ``E`` SwiGLU experts plus shared experts."""

    def __init__(self, cfg) -> None:
        super().__init__()
        d, f, E = cfg.hidden_size, cfg.moe_intermediate_size, cfg.n_routed_experts
        self.E, self.groups, self.top_groups = E, cfg.n_group, cfg.topk_group
        self.top_k, self.renormalise = cfg.num_experts_per_tok, cfg.norm_topk_prob
        self.routed_scale = cfg.routed_scaling_factor
        self.router = nn.Parameter(torch.zeros(E, d))
        self.register_buffer("bias", torch.zeros(E))  # load-balancing bias: choice only
        self.gate_up = nn.Parameter(torch.zeros(E, 2 * f, d))
        self.down = nn.Parameter(torch.zeros(E, d, f))
        fs = f * cfg.n_shared_experts
        self.shared = nn.ModuleList([nn.Linear(d, fs, bias=False), nn.Linear(d, fs, bias=False),
                                     nn.Linear(fs, d, bias=False)])  # fmt: skip

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

    def _expert(self, e: int, x: Tensor) -> Tensor:
        gate, up = self.gate_up[e].chunk(2, dim=0)  # (d_ff, d) each: gate rows, then up rows
        return swiglu(x, gate, up, self.down[e])  # (n_e, d)

    def forward(self, x: Tensor) -> Tensor:
        B, T, d = x.shape
        flat = x.reshape(B * T, d)  # (N, d)
        top_i, top_w = self.route(flat)
        routed = mix_experts(flat, top_i, top_w, self._expert)  # (N, d)
        gate, up, down = (m.weight for m in self.shared)
        return routed.view(B, T, d) + swiglu(x, gate, up, down)  # (B, T, d)


class DenseMLP(nn.Module):
    """The dense SwiGLU FFN of the first layers."""

    def __init__(self, cfg) -> None:
        super().__init__()
        d, f = cfg.hidden_size, cfg.intermediate_size
        self.gate, self.up = nn.Linear(d, f, bias=False), nn.Linear(d, f, bias=False)
        self.down = nn.Linear(f, d, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return swiglu(x, self.gate.weight, self.up.weight, self.down.weight)  # (B, T, d)


class DeepseekV32(nn.Module):
    """A DeepSeek-V3.2 causal LM built from this package's pieces (see the module docstring).

    ``forward(input_ids, cache=None)``: ``input_ids`` ``(B, T)`` -> logits ``(B, T, vocab)``.
    With ``cache`` (from :meth:`new_cache`), ``input_ids`` are the NEW tokens: they continue
    after the ``cache.length`` tokens already seen, the cache is updated in place, and the
    logits of the new positions are returned.
    """

    def __init__(self, cfg) -> None:
        super().__init__()
        for kind in cfg.mlp_layer_types:
            if kind not in ("dense", "sparse"):
                raise ValueError(f"config.mlp_layer_types may hold 'dense', 'sparse'; got {kind!r}")
        self.vocab, self.eps = cfg.vocab_size, cfg.rms_norm_eps
        d = cfg.hidden_size
        self.embed = nn.Embedding(cfg.vocab_size, d)
        self.attn = nn.ModuleList(SparseMLA(cfg) for _ in range(cfg.num_hidden_layers))
        self.ffn = nn.ModuleList(
            DeepseekMoE(cfg) if kind == "sparse" else DenseMLP(cfg) for kind in cfg.mlp_layer_types
        )
        self.norms = nn.Parameter(torch.ones(cfg.num_hidden_layers, 2, d))  # pre-attn, pre-FFN
        self.norm = nn.Parameter(torch.ones(d))
        self.lm_head = nn.Linear(d, cfg.vocab_size, bias=False)
        inv_freq, self.attention_factor = rope_inverse_frequencies_float32(
            cfg.qk_rope_head_dim, dict(cfg.rope_parameters), cfg.max_position_embeddings
        )
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # (dr / 2,) float32

    def new_cache(self) -> DeepseekV32Cache:
        """An empty cache: a LatentCache and an indexer-key slot per layer."""
        n = len(self.attn)
        return DeepseekV32Cache(latents=[LatentCache() for _ in range(n)], index_keys=[None] * n)

    def forward(self, input_ids: Tensor, cache: DeepseekV32Cache | None = None) -> Tensor:
        ids = check_input_ids(input_ids, self.vocab).long()
        if cache is not None and not isinstance(cache, DeepseekV32Cache):
            raise TypeError(
                f"cache must be a DeepseekV32Cache from new_cache() or None; got "
                f"{type(cache).__name__}"
            )
        start = 0 if cache is None else cache.length
        x = self.embed(ids)  # (B, T, d)
        positions = torch.arange(start, start + ids.shape[1], device=ids.device)  # (T,)
        cos, sin = rope_cos_sin(self.inv_freq, positions, self.attention_factor, x.dtype)
        for i, (attn, ffn) in enumerate(zip(self.attn, self.ffn, strict=True)):
            x = x + attn(rms_norm_float32(x, self.norms[i, 0], self.eps), cos, sin, start, cache, i)
            x = x + ffn(rms_norm_float32(x, self.norms[i, 1], self.eps))  # (B, T, d)
        if cache is not None:
            cache.length += ids.shape[1]
        return self.lm_head(rms_norm_float32(x, self.norm, self.eps))  # (B, T, vocab)


def build(model: nn.Module) -> DeepseekV32:
    """Our :class:`DeepseekV32` with the weights (copies) of ``transformers``'
    ``DeepseekV32ForCausalLM`` ``model``, in its dtype and device,
    in eval mode, its parameters frozen (an inference copy)."""
    cfg = getattr(model, "config", None)
    if getattr(cfg, "model_type", None) != "deepseek_v32" or not hasattr(model, "lm_head"):
        raise TypeError(
            f"model must be a transformers DeepseekV32ForCausalLM (model_type 'deepseek_v32'); "
            f"got {type(model).__name__} with model_type {getattr(cfg, 'model_type', None)!r}"
        )
    p = {name: t.detach() for name, t in model.state_dict().items()}
    p.update({name: t.detach() for name, t in model.named_buffers()})
    emb = p["model.embed_tokens.weight"]
    ours = DeepseekV32(cfg).to(dtype=emb.dtype, device=emb.device)
    ours.inv_freq = ours.inv_freq.float()  # float32, whatever the model's dtype
    pre = [p[f"model.layers.{i}.input_layernorm.weight"] for i in range(cfg.num_hidden_layers)]
    post = [
        p[f"model.layers.{i}.post_attention_layernorm.weight"] for i in range(cfg.num_hidden_layers)
    ]
    new: dict[str, Tensor] = {
        "embed.weight": emb,
        "norm": p["model.norm.weight"],
        "lm_head.weight": p.get("lm_head.weight", emb),
        "norms": torch.stack([torch.stack(pair) for pair in zip(pre, post, strict=True)]),
    }
    names = {
        "q_a_proj": "q_a_proj", "q_b_proj": "q_b_proj", "kv_a_proj": "kv_a_proj_with_mqa",
        "kv_b_proj": "kv_b_proj", "o_proj": "o_proj", "wq_i": "indexer.wq_b",
        "wk_i": "indexer.wk", "k_norm_i": "indexer.k_norm", "w_i": "indexer.weights_proj",
    }  # fmt: skip
    for i in range(cfg.num_hidden_layers):
        a = f"model.layers.{i}.self_attn."
        for mine, theirs in names.items():
            for part in ("weight", "bias"):
                if a + f"{theirs}.{part}" in p:
                    new[f"attn.{i}.{mine}.{part}"] = p[a + f"{theirs}.{part}"]
        new[f"attn.{i}.q_norm"] = p[a + "q_a_layernorm.weight"]
        new[f"attn.{i}.kv_norm"] = p[a + "kv_a_layernorm.weight"]
        m = f"model.layers.{i}.mlp."
        if isinstance(ours.ffn[i], DeepseekMoE):
            new[f"ffn.{i}.router"] = p[m + "gate.weight"]
            new[f"ffn.{i}.bias"] = p[m + "gate.e_score_correction_bias"]
            new[f"ffn.{i}.gate_up"] = p[m + "experts.gate_up_proj"]
            new[f"ffn.{i}.down"] = p[m + "experts.down_proj"]
            for j, name in enumerate(("gate_proj", "up_proj", "down_proj")):
                new[f"ffn.{i}.shared.{j}.weight"] = p[m + f"shared_experts.{name}.weight"]
        else:
            for mine, theirs in (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")):
                new[f"ffn.{i}.{mine}.weight"] = p[m + f"{theirs}.weight"]
    ours.load_state_dict({k: v.clone() for k, v in new.items()}, strict=True)
    return ours.eval().requires_grad_(False)
