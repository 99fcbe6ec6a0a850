"""Qwen3-Next rebuilt from the course's own code: gated attention + Gated DeltaNet + MoE.

A Qwen3-Next decoder (Qwen Team 2025) interleaves two token mixers, as ``config.layer_types``
says (three ``linear_attention`` layers per ``full_attention`` layer in the released model):

- **gated attention** (Qiu et al. 2025): grouped-query attention with qk-norm and partial RoPE,
  whose output is multiplied by ``sigmoid(gate)``, one gate per output channel computed from
  the token (``q_proj`` gives the query and the gate together);
- **Gated DeltaNet** (Yang et al. 2025): linear attention with a recurrent state
  ``S (d_k, d_v)`` per head instead of a KV cache. Per token, with ``q, k`` L2-normalised,
  ``alpha = exp(g) in (0, 1)`` (decay) and ``beta in (0, 1)`` (write strength)::

      S <- alpha S                                 forget a little of everything
      S <- S + beta k (v - S^T k)^T                delta rule: correct what S predicts for k
      o  = S^T q / sqrt(d_k)

  :func:`gated_delta_rule_recurrent` is this loop, the readable definition;
  :func:`gated_delta_rule_chunked` computes the same numbers chunk by chunk (the full pass);
- feed-forward: a **mixture of experts** with a **shared expert** (softmax router, top-k,
  renormalised; the shared expert's output scaled by ``sigmoid(w·x)``) or a dense SwiGLU.

All RMSNorms use a gain ``1 + weight``. The float32 islands of the reference (norms, RoPE
angles, router probabilities, the DeltaNet core) are kept: see :mod:`course_utils.atlas.blocks`.

>>> from transformers import Qwen3NextConfig, Qwen3NextForCausalLM
>>> config = Qwen3NextConfig(vocab_size=64, hidden_size=32, intermediate_size=48,
...     num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
...     linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
...     linear_value_head_dim=8, num_experts=4, num_experts_per_tok=2,
...     moe_intermediate_size=16, shared_expert_intermediate_size=16,
...     layer_types=["linear_attention", "full_attention"], experts_implementation="eager")
>>> _ = torch.manual_seed(0)
>>> hf = Qwen3NextForCausalLM(config).double().eval().requires_grad_(False)
>>> ours = build(hf)
>>> ids = torch.randint(0, 64, (1, 12))
>>> float((ours(ids) - hf(ids).logits).abs().max()) < 1e-9
True
>>> cache = ours.new_cache()
>>> _ = ours(ids, cache=cache)
>>> [type(state).__name__ for state in cache.layers]     # linear layer, then attention
['DeltaNetState', 'KVCache']
>>> tuple(cache.layers[0].state.shape), len(cache.layers[1])  # fixed (B, H_v, d_k, d_v); 12 keys
((1, 4, 8, 8), 12)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..kv_cache import KVCache
from .blocks import (
    PRE_NORM_NAMES,
    DecoderLM,
    GatedMLP,
    RMSNorm,
    SwiGLUExperts,
    attention,
    attention_names,
    causal_window_mask,
    checked_config,
    gated_mlp_names,
    load_weights,
    rope_cos_sin,
    rope_inverse_frequencies_float32,
    rotate_pairs,
)

__all__ = [
    "DeltaNetState",
    "Qwen3Next",
    "build",
    "gated_delta_rule_chunked",
    "gated_delta_rule_recurrent",
]

CHUNK = 64  # the chunk length of the reference's chunked DeltaNet (its default)


# --------------------------------------------------------------------------------------------
# The Gated DeltaNet core
# --------------------------------------------------------------------------------------------


def gated_delta_rule_recurrent(
    q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor, state: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """The gated delta rule, one token at a time: outputs ``(B, H, T, d_v)`` and the last state.

    ``q``, ``k`` ``(B, H, T, d_k)`` (already L2-normalised; ``q`` already scaled), ``v``
    ``(B, H, T, d_v)``, ``g`` ``(B, H, T)`` log-decays (<= 0), ``beta`` ``(B, H, T)`` in (0, 1),
    ``state`` ``(B, H, d_k, d_v)`` (zeros if ``None``). Computed in the inputs' dtype.

    >>> q = k = torch.tensor([1.0, 0.0]).view(1, 1, 1, 2)          # one token, d_k = 2
    >>> v = torch.tensor([[[[3.0]]]])                                # d_v = 1
    >>> o, S = gated_delta_rule_recurrent(q, k, v, torch.zeros(1, 1, 1), torch.full((1, 1, 1), 0.5))
    >>> o.flatten().tolist(), S.flatten().tolist()    # S = 0.5 k v^T: half of v written at k
    ([1.5], [1.5, 0.0])
    """
    B, H, T, d_k = k.shape
    S = q.new_zeros(B, H, d_k, v.shape[-1]) if state is None else state.to(q.dtype)
    out = torch.empty_like(v)  # (B, H, T, d_v)
    for t in range(T):
        S = S * g[:, :, t].exp()[..., None, None]  # (B, H, d_k, d_v): decay, alpha = e^g
        k_t = k[:, :, t]  # (B, H, d_k)
        predicted = (S * k_t[..., None]).sum(-2)  # (B, H, d_v): S^T k, what S holds at k
        delta = (v[:, :, t] - predicted) * beta[:, :, t, None]  # (B, H, d_v): the correction
        S = S + k_t[..., None] * delta[..., None, :]  # (B, H, d_k, d_v): rank-1 write
        out[:, :, t] = (S * q[:, :, t][..., None]).sum(-2)  # (B, H, d_v): read with q
    return out, S


def gated_delta_rule_chunked(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    g: Tensor,
    beta: Tensor,
    state: Tensor | None = None,
    chunk: int = CHUNK,
) -> tuple[Tensor, Tensor]:
    """The same outputs and state as :func:`gated_delta_rule_recurrent`, ``chunk`` tokens at once.

    Inside a chunk, the delta rule's ``chunk`` rank-1 writes are solved together: the values
    each token really writes, ``u``, satisfy a unit lower-triangular system
    ``(I + tril(beta k k^T · decay, -1)) u = beta v`` (the UT transform), so one triangular solve
    replaces the token loop; only the chunks are scanned in order. The operations follow the
    reference's torch fallback step for step, so that float32 results agree to the last bit.

    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> q, k = (F.normalize(torch.randn(1, 2, 10, 4, dtype=torch.float64), dim=-1) for _ in "qk")
    >>> v, g = torch.randn(1, 2, 10, 3, dtype=torch.float64), -torch.rand(1, 2, 10).double()
    >>> beta = torch.rand(1, 2, 10, dtype=torch.float64)
    >>> o1, s1 = gated_delta_rule_recurrent(q, k, v, g, beta)
    >>> o2, s2 = gated_delta_rule_chunked(q, k, v, g, beta, chunk=4)
    >>> bool(torch.allclose(o1, o2, atol=1e-12) and torch.allclose(s1, s2, atol=1e-12))
    True
    """
    B, H, T, d_k = k.shape
    d_v = v.shape[-1]
    pad = (chunk - T % chunk) % chunk  # zero tokens at the end: g = 0, beta = 0 write nothing
    q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))  # (B, H, T', d)
    beta, g = (F.pad(x, (0, pad)) for x in (beta, g))  # (B, H, T')
    n = (T + pad) // chunk
    v_beta = v * beta[..., None]  # (B, H, T', d_v)
    k_beta = k * beta[..., None]  # (B, H, T', d_k)
    q, k, k_beta, v_beta = (x.reshape(B, H, n, chunk, x.shape[-1]) for x in (q, k, k_beta, v_beta))
    g = g.reshape(B, H, n, chunk)  # (B, H, n, C)
    future = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).triu(1)  # (C, C)
    cum = g.cumsum(dim=-1)  # (B, H, n, C): log of the decay from the chunk's start to i
    decay = (cum[..., :, None] - cum[..., None, :]).masked_fill(future, float("-inf")).exp()
    # decay: (B, H, n, C, C), decay[i, j] = prod of alpha over (j, i]; 0 above the diagonal
    system = (k_beta @ k.transpose(-1, -2)) * decay  # (B, H, n, C, C): beta_i k_i·k_j decayed
    attn = (q @ k.transpose(-1, -2)) * decay  # (B, H, n, C, C): q_i·k_j decayed, causal
    k_decayed = k_beta * cum.exp()[..., None]  # (B, H, n, C, d_k)
    # the UT transform: system's diagonal is taken as 1 and its upper part ignored
    u = torch.linalg.solve_triangular(system, v_beta, upper=False, unitriangular=True)
    w = torch.linalg.solve_triangular(system, k_decayed, upper=False, unitriangular=True)
    # u: (B, H, n, C, d_v) values written if the chunk started from S = 0; w: what reads S
    S = q.new_zeros(B, H, d_k, d_v) if state is None else state.to(q.dtype)
    out = torch.zeros_like(u)  # (B, H, n, C, d_v)
    q = q * cum.exp()[..., None]  # (B, H, n, C, d_k): the decay since the chunk's start
    k = k * (cum[..., -1:] - cum).exp()[..., None]  # (B, H, n, C, d_k): decay to chunk's end
    chunk_decay = cum[..., -1].exp()[..., None, None]  # (B, H, n, 1, 1)
    for i in range(n):
        u_i = u[:, :, i] - w[:, :, i] @ S  # (B, H, C, d_v): minus what S already predicts
        out[:, :, i] = q[:, :, i] @ S + attn[:, :, i] @ u_i  # (B, H, C, d_v): old S + chunk
        S = S * chunk_decay[:, :, i] + k[:, :, i].transpose(-1, -2) @ u_i  # (B, H, d_k, d_v)
    out = out.reshape(B, H, n * chunk, d_v)[:, :, :T]  # (B, H, T, d_v)
    return out, S


# --------------------------------------------------------------------------------------------
# The cache
# --------------------------------------------------------------------------------------------


@dataclass
class DeltaNetState:
    """What a Gated DeltaNet layer carries from token to token, whatever the length so far:
    the last ``kernel - 1`` inputs of its causal convolution ``(B, conv_dim, kernel - 1)`` and
    the recurrent state ``(B, H_v, d_k, d_v)`` (float32, as the reference keeps it)."""

    conv: Tensor | None = None
    state: Tensor | None = None


# --------------------------------------------------------------------------------------------
# The layers
# --------------------------------------------------------------------------------------------


def _linear(d_in: int, d_out: int, bias: bool = False) -> nn.Linear:
    return nn.Linear(d_in, d_out, bias=bias)


class GatedAttention(nn.Module):
    """Grouped-query attention with qk-norm (gain ``1 + w``), partial rotate-half RoPE and a
    sigmoid output gate: ``o_proj(attention(q, k, v) * sigmoid(gate))``."""

    def __init__(self, cfg: Any, inv_freq: Tensor, attention_factor: float) -> None:
        super().__init__()
        d, h, h_kv = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads
        self.h, self.h_kv = h, h_kv
        self.d_head = getattr(cfg, "head_dim", None) or d // h
        bias = cfg.attention_bias
        self.q_proj = _linear(d, h * self.d_head * 2, bias)  # query and gate, per head
        self.k_proj = _linear(d, h_kv * self.d_head, bias)
        self.v_proj = _linear(d, h_kv * self.d_head, bias)
        self.o_proj = _linear(h * self.d_head, d, bias)
        # the reference's "eager" attention takes its softmax in float32; SDPA keeps the dtype
        eager = getattr(cfg, "_attn_implementation", None) == "eager"
        self.softmax_dtype = torch.float32 if eager else None
        self.q_norm = RMSNorm(self.d_head, cfg.rms_norm_eps, unit_offset=True)  # on each head
        self.k_norm = RMSNorm(self.d_head, cfg.rms_norm_eps, unit_offset=True)
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # (rotary / 2,) float32
        self.attention_factor = attention_factor

    def forward(self, x: Tensor, positions: Tensor, cache: KVCache | None) -> Tensor:
        B, T, _ = x.shape
        dh = self.d_head
        q, gate = self.q_proj(x).view(B, T, self.h, 2 * dh).chunk(2, dim=-1)  # (B, T, h, dh)
        gate = gate.reshape(B, T, self.h * dh)  # (B, T, h·dh): one gate per output channel
        q = self.q_norm(q).transpose(1, 2)  # (B, h, T, dh)
        k = self.k_norm(self.k_proj(x).view(B, T, self.h_kv, dh)).transpose(1, 2)  # (B,hkv,T,dh)
        v = self.v_proj(x).view(B, T, self.h_kv, dh).transpose(1, 2)  # (B, h_kv, T, dh)
        cos, sin = rope_cos_sin(self.inv_freq, positions, self.attention_factor, x.dtype)
        r = cos.shape[-1]  # rotary width: only the first r channels of a head turn
        q = torch.cat((rotate_pairs(q[..., :r], cos, sin), q[..., r:]), dim=-1)  # (B, h, T, dh)
        k = torch.cat((rotate_pairs(k[..., :r], cos, sin), k[..., r:]), dim=-1)  # (B,hkv,T,dh)
        if cache is not None:
            k, v = cache.append(k, v)  # (B, h_kv, S, dh): all tokens so far
        mask = causal_window_mask(T, k.size(2)).to(x.device)  # (T, S)
        out = attention(q, k, v, scale=dh**-0.5, mask=mask, softmax_dtype=self.softmax_dtype)
        out = out.transpose(1, 2).reshape(B, T, self.h * dh)  # (B, T, h·dh)
        return self.o_proj(out * torch.sigmoid(gate))  # (B, T, d)


class GatedDeltaNet(nn.Module):
    """A Gated DeltaNet token mixer: projections, a short causal depthwise convolution (with
    SiLU) over ``q, k, v``, the gated delta rule per value head, a gated RMSNorm, ``out_proj``.

    Key heads are shared by ``H_v / H_k`` value heads (like GQA). The checkpoint stores
    ``in_proj_qkvz`` grouped by key head: for each key head, its ``q``, its ``k``, then ``v`` and
    ``z`` (the output gate) of its value heads; ``in_proj_ba`` likewise holds ``b`` then ``a``.
    """

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.h_k, self.h_v = cfg.linear_num_key_heads, cfg.linear_num_value_heads
        self.d_k, self.d_v = cfg.linear_key_head_dim, cfg.linear_value_head_dim
        self.kernel = cfg.linear_conv_kernel_dim
        self.eps = cfg.rms_norm_eps
        d = cfg.hidden_size
        key_dim, value_dim = self.h_k * self.d_k, self.h_v * self.d_v
        self.conv_dim = 2 * key_dim + value_dim
        self.in_proj_qkvz = _linear(d, 2 * key_dim + 2 * value_dim)
        self.in_proj_ba = _linear(d, 2 * self.h_v)
        # one filter a channel, (conv_dim, 1, kernel) as the checkpoint's nn.Conv1d holds it
        self.conv = nn.Parameter(torch.zeros(self.conv_dim, 1, self.kernel))
        self.dt_bias = nn.Parameter(torch.ones(self.h_v))
        self.A_log = nn.Parameter(torch.zeros(self.h_v))  # decay rate A = e^A_log > 0
        self.norm = nn.Parameter(torch.ones(self.d_v))  # gated RMSNorm's gain (no offset)
        self.out_proj = _linear(value_dim, d)

    def _split(self, x: Tensor) -> tuple[Tensor, ...]:
        B, T, _ = x.shape
        r = self.h_v // self.h_k  # value heads per key head
        qkvz = self.in_proj_qkvz(x).view(B, T, self.h_k, 2 * self.d_k + 2 * r * self.d_v)
        q, k, v, z = qkvz.split([self.d_k, self.d_k, r * self.d_v, r * self.d_v], dim=-1)
        b, a = self.in_proj_ba(x).view(B, T, self.h_k, 2 * r).split([r, r], dim=-1)
        # q, k: (B, T, h_k, d_k); v, z: (B, T, h_v, d_v); b, a: (B, T, h_v)
        v, z = v.reshape(B, T, self.h_v, self.d_v), z.reshape(B, T, self.h_v, self.d_v)
        return q, k, v, z, b.reshape(B, T, self.h_v), a.reshape(B, T, self.h_v)

    def forward(self, x: Tensor, positions: Tensor, cache: DeltaNetState | None) -> Tensor:
        """``x`` ``(B, T, d)`` -> ``(B, T, d)``; a recurrence needs no ``positions``."""
        B, T, _ = x.shape
        q, k, v, z, b, a = self._split(x)
        mixed = torch.cat([t.reshape(B, T, -1) for t in (q, k, v)], dim=-1)  # (B, T, conv_dim)
        # causal depthwise convolution: channel c at t mixes its own last `kernel` inputs
        past = (
            mixed.new_zeros(B, self.kernel - 1, self.conv_dim)
            if cache is None or cache.conv is None
            else cache.conv
        )  # (B, kernel - 1, conv_dim): the inputs before this call (zeros at the start)
        padded = torch.cat([past, mixed], dim=1)  # (B, kernel - 1 + T, conv_dim)
        if cache is not None:
            cache.conv = padded[:, -(self.kernel - 1) :]  # (B, kernel - 1, conv_dim)
        windows = padded.unfold(1, self.kernel, 1)  # (B, T, conv_dim, kernel)
        mixed = F.silu((windows * self.conv[:, 0]).sum(-1))  # (B, T, conv_dim)
        key_dim = self.h_k * self.d_k
        q, k, v = mixed.split([key_dim, key_dim, self.h_v * self.d_v], dim=-1)
        r = self.h_v // self.h_k
        q = q.reshape(B, T, self.h_k, self.d_k).repeat_interleave(r, dim=2)  # (B, T, h_v, d_k)
        k = k.reshape(B, T, self.h_k, self.d_k).repeat_interleave(r, dim=2)  # (B, T, h_v, d_k)
        v = v.reshape(B, T, self.h_v, self.d_v)  # (B, T, h_v, d_v)
        beta = b.sigmoid()  # (B, T, h_v): how strongly each token writes
        g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)  # (B, T, h_v) <= 0
        # the core runs in float32, as the reference and its kernels do
        q, k, v, beta, g = (t.transpose(1, 2).float().contiguous() for t in (q, k, v, beta, g))
        q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + 1e-6)  # (B, h_v, T, d_k): unit
        k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + 1e-6)  # (B, h_v, T, d_k): unit
        state = None if cache is None else cache.state
        if state is not None and T == 1:  # one new token: the recurrence itself
            q = q / self.d_k**0.5  # (the reference's recurrent path divides, its chunked ...
            out, state = gated_delta_rule_recurrent(q, k, v, g, beta, state)
        else:
            q = q * self.d_k**-0.5  # ... path multiplies: the last bit of float32 differs)
            out, state = gated_delta_rule_chunked(q, k, v, g, beta, state)
        if cache is not None:
            cache.state = state  # (B, h_v, d_k, d_v)
        # one row per (token, head), laid out as the reference does (float32 sums depend on it)
        out = out.transpose(1, 2).contiguous().to(x.dtype).reshape(-1, self.d_v)  # (N, d_v)
        # gated RMSNorm: normalise each head's output, then gate it with silu(z)
        o32 = out.float()
        o32 = o32 * torch.rsqrt(o32.pow(2).mean(-1, keepdim=True) + self.eps)
        z = z.reshape(-1, self.d_v)  # (N, d_v)
        out = ((self.norm * o32.to(x.dtype)) * F.silu(z.float())).to(x.dtype)  # (N, d_v)
        return self.out_proj(out.reshape(B, T, self.h_v * self.d_v))  # (B, T, d)


class SparseMoE(nn.Module):
    """Qwen's MoE: softmax router over ``E`` experts, top-``k`` (renormalised if
    ``norm_topk_prob``), SwiGLU experts, plus a shared expert gated by ``sigmoid(w·x)``."""

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        d, E, f = cfg.hidden_size, cfg.num_experts, cfg.moe_intermediate_size
        self.top_k, self.renormalise = cfg.num_experts_per_tok, cfg.norm_topk_prob
        self.router = nn.Parameter(torch.zeros(E, d))
        self.experts = SwiGLUExperts(E, d, f)
        self.shared = GatedMLP(d, cfg.shared_expert_intermediate_size)  # SwiGLU
        self.shared_gate = _linear(d, 1)

    def forward(self, x: Tensor) -> Tensor:
        B, T, d = x.shape
        x = x.reshape(B * T, d)  # (N, d)
        logits = F.linear(x, self.router)  # (N, E)
        probs = torch.softmax(logits, dim=-1, dtype=torch.float32)  # (N, E) float32 island
        top_p, top_i = probs.topk(self.top_k, dim=-1)  # (N, k)
        if self.renormalise:
            top_p = top_p / top_p.sum(-1, keepdim=True)  # (N, k): sums to 1
        routed = self.experts(x, top_i, top_p.to(logits.dtype))  # (N, d)
        shared = torch.sigmoid(self.shared_gate(x)) * self.shared(x)  # (N, d)
        return (routed + shared).reshape(B, T, d)


class Qwen3NextLayer(nn.Module):
    """Pre-norm layer: ``x + mixer(norm(x))`` (gated attention or Gated DeltaNet, as
    ``config.layer_types[i]`` says), then ``x + ffn(norm(x))`` (MoE, or a dense SwiGLU)."""

    def __init__(self, cfg: Any, i: int, inv_freq: Tensor, attention_factor: float) -> None:
        super().__init__()
        d, eps = cfg.hidden_size, cfg.rms_norm_eps
        self.kind = cfg.layer_types[i]
        self.mixer = (
            GatedAttention(cfg, inv_freq, attention_factor)
            if self.kind == "full_attention"
            else GatedDeltaNet(cfg)
        )
        moe = (
            i not in cfg.mlp_only_layers
            and cfg.num_experts > 0
            and (i + 1) % cfg.decoder_sparse_step == 0
        )
        self.ffn = SparseMoE(cfg) if moe else GatedMLP(d, cfg.intermediate_size)
        self.input_norm = RMSNorm(d, eps, unit_offset=True)
        self.post_attention_norm = RMSNorm(d, eps, unit_offset=True)

    def forward(
        self, x: Tensor, positions: Tensor, cache: KVCache | DeltaNetState | None
    ) -> Tensor:
        x = x + self.mixer(self.input_norm(x), positions, cache)  # (B, T, d)
        return x + self.ffn(self.post_attention_norm(x))  # (B, T, d)


class Qwen3Next(DecoderLM):
    """A Qwen3-Next causal LM built from :mod:`course_utils.atlas.blocks` (see the module doc).

    Made by :func:`build` (through ``course_utils.atlas.from_hf``); ``forward(input_ids,
    cache=None)`` as in :class:`~course_utils.atlas.blocks.DecoderLM`. The cache holds a
    :class:`~course_utils.kv_cache.KVCache` per attention layer and a :class:`DeltaNetState`
    (fixed size) per linear-attention layer.
    """

    def __init__(self, cfg: Any) -> None:
        for kind in set(cfg.layer_types):
            if kind not in ("full_attention", "linear_attention"):
                raise ValueError(
                    f"config.layer_types may hold 'full_attention' and 'linear_attention'; "
                    f"got {kind!r}"
                )
        d = cfg.hidden_size
        d_head = getattr(cfg, "head_dim", None) or d // cfg.num_attention_heads
        rope = dict(cfg.rope_parameters)
        rotary = int(d_head * rope.get("partial_rotary_factor", 1.0))
        inv_freq, factor = rope_inverse_frequencies_float32(
            rotary, rope, cfg.max_position_embeddings
        )  # (rotary / 2,) float32
        layers = (Qwen3NextLayer(cfg, i, inv_freq, factor) for i in range(cfg.num_hidden_layers))
        super().__init__(cfg.vocab_size, d, layers, RMSNorm(d, cfg.rms_norm_eps, unit_offset=True))

    def new_layer_state(self, i: int) -> KVCache | DeltaNetState:
        return KVCache() if self.layers[i].kind == "full_attention" else DeltaNetState()


# --------------------------------------------------------------------------------------------
# Copying the weights
# --------------------------------------------------------------------------------------------

#: Ours -> the checkpoint's names within a layer (one map for both kinds of layer and of FFN).
LAYER_NAMES = {
    **PRE_NORM_NAMES,
    **attention_names("mixer"),
    **{f"mixer.{n}": f"linear_attn.{n}" for n in ("in_proj_qkvz", "in_proj_ba", "out_proj")},
    "mixer.conv": "linear_attn.conv1d.weight",
    "mixer.dt_bias": "linear_attn.dt_bias",
    "mixer.A_log": "linear_attn.A_log",
    "mixer.norm": "linear_attn.norm.weight",
    "ffn.router": "mlp.gate.weight",
    **SwiGLUExperts.checkpoint_names("ffn.experts", "mlp.experts"),
    **gated_mlp_names("ffn.shared", "mlp.shared_expert"),
    "ffn.shared_gate": "mlp.shared_expert_gate",
    **gated_mlp_names("ffn", "mlp"),  # a dense layer
}


def build(model: nn.Module) -> Qwen3Next:
    """Our :class:`Qwen3Next` with copies of a ``Qwen3NextForCausalLM``'s weights, frozen."""
    cfg = checked_config(model, "qwen3_next", "Qwen3NextForCausalLM")
    return load_weights(Qwen3Next(cfg), model, LAYER_NAMES).requires_grad_(False)
