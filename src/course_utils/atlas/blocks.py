"""The building blocks the atlas's models share: norms, gated MLPs, RoPE tables, attention with a
window and sinks, expert mixing, caches and the decoder-only skeleton.

Every model of :mod:`course_utils.atlas` is a stack of the same few pieces in a different order.
They live here once; a model module (``gemma3.py``, ``gpt_oss.py``, ...) only says how they are
wired and how a ``transformers`` checkpoint's weights map onto them.

Where the checkpoints' reference code computes in float32 whatever the weights' dtype (the
RMSNorms, RoPE's angles), so do these blocks: with float64 weights the model still rounds there,
and copying that rounding is what lets a float64 rebuild agree with ``transformers`` to 1e-9.
Elsewhere the arithmetic is the plain formula in the input's dtype.

>>> cache = AttentionCache(window=3)           # a sliding layer keeps its last window - 1 keys
>>> k = torch.zeros(1, 1, 5, 4)                # (B, n_kv_heads, T, d_head)
>>> _, _, held = cache.extend(k, k, torch.arange(5))
>>> held.tolist()
[0, 1, 2, 3, 4]
>>> _, _, held = cache.extend(k[:, :, :1], k[:, :, :1], torch.tensor([5]))
>>> held.tolist()                              # query 5's window of 3: keys 3, 4, 5
[3, 4, 5]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .._validation import check_int, shape_str
from ..kv_cache import KVCache
from ..masks import causal_mask
from ..sparse.patterns import sliding_window_mask
from ..transformer import SwiGLU

__all__ = [
    "ACTIVATIONS",
    "PRE_NORM_NAMES",
    "AttentionCache",
    "DecodeCache",
    "DecoderLM",
    "GatedMLP",
    "RMSNorm",
    "SelfAttention",
    "attention",
    "attention_names",
    "causal_window_mask",
    "check_input_ids",
    "checked_config",
    "checked_inv_freq",
    "copy_weight",
    "gated_mlp_names",
    "load_weights",
    "mix_experts",
    "rms_norm_float32",
    "rope_cos_sin",
    "rotate_half",
    "rotate_pairs",
    "softmax_weights",
    "top_k_softmax",
]


# --------------------------------------------------------------------------------------------
# Norms and feed-forward networks
# --------------------------------------------------------------------------------------------


def rms_norm_float32(x: Tensor, weight: Tensor, eps: float, *, unit_offset: bool = False) -> Tensor:
    """RMSNorm with its statistics in float32, as the checkpoints' code computes it (see
    :class:`RMSNorm`): ``weight · x / rms(x)``, or with ``unit_offset=True`` ``(1 + weight) · x /
    rms(x)`` multiplied in float32; the result has ``x``'s dtype.

    >>> x = torch.tensor([[3.0, 4.0]], dtype=torch.float64)
    >>> rms_norm_float32(x, torch.ones(2, dtype=torch.float64), 0.0)  # rms = sqrt(12.5)
    tensor([[0.8485, 1.1314]], dtype=torch.float64)
    """
    x32 = x.float()  # (..., d): the reference code normalises in float32
    y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)  # (..., d): rms ~1
    if unit_offset:
        return (y * (1.0 + weight.float())).to(x.dtype)  # (..., d): Gemma's 1 + w, in float32
    return weight * y.to(x.dtype)  # (..., d): the gain in x's dtype


class RMSNorm(nn.Module):
    """RMSNorm as the checkpoints compute it: ``x · rsqrt(mean(x²) + eps)`` in float32, then a gain.

    The maths is :func:`course_utils.norms.rms_norm`; what differs is where it rounds. The
    reference code of Gemma 3, gpt-oss, Qwen3-Next and DeepSeek casts the input to float32 first,
    whatever the model's dtype, so this block does too (and a float64 rebuild still agrees with
    ``transformers`` to 1e-9). The gain is ``w`` (Llama, gpt-oss, DeepSeek: ``w`` starts at 1) or,
    with ``unit_offset=True``, ``1 + w`` (Gemma: ``w`` starts at 0), multiplied in float32.

    >>> norm = RMSNorm(2, eps=0.0, unit_offset=True)     # Gemma's gain 1 + w, w = 0
    >>> norm(torch.tensor([[3.0, 4.0]])).detach()        # rms = sqrt(12.5)
    tensor([[0.8485, 1.1314]])
    """

    def __init__(self, d: int, eps: float = 1e-6, *, unit_offset: bool = False) -> None:
        super().__init__()
        self.d = check_int(d, "d", low=1)
        self.eps = float(eps)
        self.unit_offset = bool(unit_offset)
        start = torch.zeros(d) if unit_offset else torch.ones(d)
        self.weight = nn.Parameter(start)  # (d,): the gain is weight, or 1 + weight

    def extra_repr(self) -> str:
        return f"{self.d}, eps={self.eps}, unit_offset={self.unit_offset}"

    def forward(self, x: Tensor) -> Tensor:
        return rms_norm_float32(x, self.weight, self.eps, unit_offset=self.unit_offset)


def _gelu_tanh(x: Tensor) -> Tensor:
    """GELU's tanh approximation (Hendrycks and Gimpel 2016), Gemma's ``gelu_pytorch_tanh``."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


#: The activations a config's ``hidden_act`` / ``hidden_activation`` may name.
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "silu": F.silu,  # SiLU = Swish: x·σ(x), torch's kernel as transformers' nn.SiLU
    "swish": F.silu,
    "gelu_pytorch_tanh": _gelu_tanh,
    "gelu_tanh": _gelu_tanh,
    "gelu": lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0))),  # exact GELU
}


def activation(name: str) -> Callable[[Tensor], Tensor]:
    """The activation called ``name`` in a config; an unknown name lists the known ones."""
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}; got {name!r}")
    return ACTIVATIONS[name]


class GatedMLP(SwiGLU):
    """:class:`~course_utils.transformer.SwiGLU` with any activation: ``down(act(gate x) * up x)``.

    With ``"silu"`` it *is* SwiGLU (Llama; Qwen's and DeepSeek's dense layers and shared
    experts); Gemma uses GELU's tanh approximation (GeGLU, Shazeer 2020).

    >>> _ = torch.manual_seed(0)
    >>> mlp = GatedMLP(4, 8, "gelu_pytorch_tanh")
    >>> mlp(torch.randn(1, 3, 4)).shape                  # (B, T, d_model) -> (B, T, d_model)
    torch.Size([1, 3, 4])
    """

    def __init__(self, d_model: int, d_ff: int, act: str = "silu") -> None:
        super().__init__(d_model, d_ff)
        self.act_name = act
        self.act = activation(act)

    def extra_repr(self) -> str:
        return f"act={self.act_name!r}"

    def forward(self, x: Tensor) -> Tensor:
        gated = self.act(self.gate(x)) * self.up(x)  # (B, T, d_ff): the gate scales each unit
        return self.down(gated)  # (B, T, d_model)


def mix_experts(
    x: Tensor, indices: Tensor, weights: Tensor, expert: Callable[[int, Tensor], Tensor]
) -> Tensor:
    """A mixture of experts' output: token ``t`` gets ``sum_j weights[t, j] · expert(indices[t, j],
    x[t])``.

    ``x`` is ``(N, d)`` (tokens flattened), ``indices`` and ``weights`` ``(N, k)``: the ``k``
    experts a router chose for each token and their weights. Each expert runs once, on the tokens
    routed to it (a token's other experts never see it: that is the saving of a sparse MoE).

    >>> x = torch.ones(3, 2)                               # (N=3, d=2)
    >>> idx = torch.tensor([[0, 1], [1, 0], [1, 1]])       # (N, k=2)
    >>> w = torch.full((3, 2), 0.5)
    >>> mix_experts(x, idx, w, lambda e, xs: xs * (e + 1))  # expert e multiplies by e + 1
    tensor([[1.5000, 1.5000],
            [1.5000, 1.5000],
            [2.0000, 2.0000]])
    """
    out = torch.zeros_like(x)  # (N, d)
    for e in torch.unique(indices).tolist():  # only the experts some token chose
        token, slot = torch.where(indices == e)  # (n_e,), (n_e,): who chose e, in which slot
        y = expert(e, x[token])  # (n_e, d)
        out.index_add_(0, token, y * weights[token, slot, None])  # (N, d)
    return out


def top_k_softmax(logits: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """A router's choice: each token's ``k`` highest logits and their softmax, ``(N, k)`` weights
    (summing to 1) and ``(N, k)`` expert ids, from ``logits`` ``(N, E)``.

    gpt-oss routes this way. Qwen3-Next takes the softmax over all ``E`` experts first, keeps the
    top ``k`` and renormalises them: the same weights, since ``e^{x_i} / sum_{top-k} e^{x_j}``
    does not depend on the experts left out.

    >>> weights, ids = top_k_softmax(torch.tensor([[0.0, 2.0, 1.0, 2.0 - math.log(3)]]), k=2)
    >>> ids.tolist(), [round(w, 3) for w in weights[0].tolist()]
    ([[1, 2]], [0.731, 0.269])
    """
    top, indices = torch.topk(logits, k, dim=-1)  # (N, k), (N, k): the k best experts
    return torch.softmax(top, dim=-1), indices  # (N, k): softmax over the chosen k only


# --------------------------------------------------------------------------------------------
# RoPE tables and attention
# --------------------------------------------------------------------------------------------


def rope_cos_sin(
    inv_freq: Tensor,
    positions: Tensor,
    attention_factor: float = 1.0,
    dtype: torch.dtype | None = None,
) -> tuple[Tensor, Tensor]:
    """``cos`` and ``sin`` of RoPE's angles ``positions[m] · inv_freq[i]``, each ``(T, d)``.

    Column ``i`` and column ``i + d/2`` hold the same angle (the rotate-half pairing). The angles
    are computed in float32 and multiplied by ``attention_factor`` (YaRN's, 1 for plain RoPE)
    before the cast to ``dtype`` (default: ``inv_freq``'s), as the checkpoints' code does.
    ``inv_freq`` is what :func:`course_utils.positions.rope_inverse_frequencies` returns, rounded
    to float32.

    >>> cos, sin = rope_cos_sin(torch.tensor([1.0, 0.5]), torch.arange(3), 1.0, torch.float64)
    >>> cos.shape, sin[1]                                  # (T, d); position 1: sin 1, sin 0.5
    (torch.Size([3, 4]), tensor([0.8415, 0.4794, 0.8415, 0.4794], dtype=torch.float64))
    """
    angles = positions.float()[:, None] * inv_freq.float()[None, :]  # (T, d/2), float32
    angles = torch.cat((angles, angles), dim=-1)  # (T, d): pair i is (i, i + d/2)
    dtype = dtype or inv_freq.dtype
    cos = (angles.cos() * attention_factor).to(dtype)  # (T, d)
    sin = (angles.sin() * attention_factor).to(dtype)  # (T, d)
    return cos, sin


def rotate_half(x: Tensor) -> Tensor:
    """``(x1, x2) -> (-x2, x1)`` on the two halves of the last axis (RoPE's rotate-half pairing).

    >>> rotate_half(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    tensor([-3., -4.,  1.,  2.])
    """
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)  # (..., d)


def rotate_pairs(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Turn each pair ``(x_i, x_{i + d/2})`` of ``x`` ``(B, h, T, d)`` by its angle: RoPE with
    the tables of :func:`rope_cos_sin` (as :func:`course_utils.positions.apply_rope` with
    ``interleaved=False``).

    >>> x = torch.tensor([[[[1.0, 0.0]]]])                 # (B=1, h=1, T=1, d=2)
    >>> rotate_pairs(x, torch.tensor([[0.0, 0.0]]), torch.tensor([[1.0, 1.0]]))  # a quarter turn
    tensor([[[[0., 1.]]]])
    """
    return x * cos + rotate_half(x) * sin  # (B, h, T, d): (a cos - b sin, b cos + a sin)


def causal_window_mask(t_q: int, t_k: int, window: int | None = None) -> Tensor:
    """``True`` where a query may see a key, ``(t_q, t_k)``: the ``t_q`` queries are the last
    ``t_q`` of ``t_k`` consecutive keys (a cache's keys, then the new tokens').

    Causal (:func:`course_utils.masks.causal_mask`), and with a ``window`` of ``w`` the query's
    own key and the ``w - 1`` before it (:func:`course_utils.sparse.sliding_window_mask`, as
    ``transformers``' sliding-window masks count it); both aligned bottom-right.

    >>> causal_window_mask(4, 4, window=2).int()
    tensor([[1, 0, 0, 0],
            [1, 1, 0, 0],
            [0, 1, 1, 0],
            [0, 0, 1, 1]], dtype=torch.int32)
    >>> causal_window_mask(1, 5, window=3).int()           # decoding: the newest of 5 keys
    tensor([[0, 0, 1, 1, 1]], dtype=torch.int32)
    """
    if window is None:
        allowed = causal_mask(t_q, t_k, align="bottom_right")  # (t_q, t_k)
    else:
        allowed = sliding_window_mask(t_q, t_k, window=window, align="bottom_right")
    return torch.from_numpy(allowed)  # (t_q, t_k) bool


def softmax_weights(
    scores: Tensor, mask: Tensor, softmax_dtype: torch.dtype | None = None
) -> Tensor:
    """Attention weights: the softmax over the last axis of ``scores`` where ``mask`` is ``True``,
    exactly 0 elsewhere, in ``scores``' dtype.

    ``mask`` broadcasts against ``scores`` (``(T_q, T_k)``, or ``(B, 1, T_q, T_k)`` for a choice
    per sequence). ``softmax_dtype`` rounds the softmax there first (``transformers``' "eager"
    attention takes it in float32 whatever the model's dtype; SDPA keeps the dtype).

    >>> softmax_weights(torch.zeros(1, 3), torch.tensor([[True, True, False]]))
    tensor([[0.5000, 0.5000, 0.0000]])
    """
    scores = scores.masked_fill(~mask, float("-inf"))  # unseen keys weigh 0
    # F.softmax subtracts each row's maximum before exp (stable; the -inf entries give 0)
    return F.softmax(scores, dim=-1, dtype=softmax_dtype).to(scores.dtype)  # rows sum to 1


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    scale: float,
    mask: Tensor,
    sinks: Tensor | None = None,
    softmax_dtype: torch.dtype | None = None,
) -> Tensor:
    """Masked softmax attention with grouped keys and, optionally, learned sinks.

    ``q`` is ``(B, h, T_q, d)``, ``k`` and ``v`` ``(B, h_kv, T_k, d)`` with ``h`` a multiple of
    ``h_kv`` (GQA: query head ``j`` reads key head ``j // (h / h_kv)``); ``mask`` ``(T_q, T_k)``
    is ``True`` where a key may be seen. ``sinks`` ``(h,)`` are gpt-oss's learned per-head logits
    (Xiao et al. 2023's attention sinks, learned): one extra column in every row's softmax that
    takes weight and gives back no value, so a head may attend to *nothing* (its weights then sum
    to less than 1). ``softmax_dtype`` rounds the softmax to that dtype (``transformers``' eager
    Gemma attention takes it in float32).

    >>> q = k = v = torch.ones(1, 1, 1, 2)                 # (B, h, T, d): one key
    >>> mask = torch.ones(1, 1, dtype=torch.bool)
    >>> attention(q, k, v, scale=1.0, mask=mask)           # all weight on the one key
    tensor([[[[1., 1.]]]])
    >>> attention(q, k, v, scale=1.0, mask=mask, sinks=torch.tensor([2.0]))  # e² / (e² + e²)
    tensor([[[[0.5000, 0.5000]]]])
    """
    n_rep = q.size(1) // k.size(1)
    k = k.repeat_interleave(n_rep, dim=1)  # (B, h, T_k, d): each key head serves n_rep queries
    v = v.repeat_interleave(n_rep, dim=1)  # (B, h, T_k, d)
    scores = q @ k.transpose(-2, -1) * scale  # (B, h, T_q, T_k)
    if sinks is not None:
        B, h, T_q, _ = scores.shape
        sink = sinks.to(scores.dtype).view(1, h, 1, 1).expand(B, h, T_q, 1)  # (B, h, T_q, 1)
        scores = torch.cat([scores, sink], dim=-1)  # (B, h, T_q, T_k + 1): one more "key"
        mask = torch.cat([mask, mask.new_ones(*mask.shape[:-1], 1)], dim=-1)  # always seen
    weights = softmax_weights(scores, mask, softmax_dtype)  # (B, h, T_q, T_k [+ 1])
    if sinks is not None:
        weights = weights[..., :-1]  # (B, h, T_q, T_k): the sink's share goes nowhere
    return weights @ v  # (B, h, T_q, d)


def checked_inv_freq(ours: Tensor, theirs: Tensor, name: str) -> Tensor:
    """RoPE's frequencies as the model holds them, once checked equal to ours (``(d/2,)``).

    ``ours`` comes from :func:`course_utils.positions.rope_inverse_frequencies` (float64);
    ``theirs`` is the model's float32 buffer. They must agree to float32's precision (else the
    config holds a RoPE kind we misread, and we say so); the model's own float32 numbers are then
    used, because one unit in the last place of a frequency moves a float64 logit by ~1e-7.
    """
    theirs = theirs.detach().double().cpu()
    if ours.shape != theirs.shape or not torch.allclose(ours, theirs, rtol=1e-6, atol=0.0):
        raise ValueError(
            f"{name}: the model's RoPE frequencies {theirs[:4].tolist()}... differ from "
            f"rope_inverse_frequencies' {ours[:4].tolist()}... (shapes "
            f"{shape_str(tuple(theirs.shape))}, {shape_str(tuple(ours.shape))})"
        )
    return theirs.float()


class SelfAttention(nn.Module):
    """Grouped-query self-attention with RoPE and, as a model asks, a window, QK-norm and learned
    sinks: Gemma 3's and gpt-oss's token mixer.

    ``x`` ``(B, T, d_model)`` -> ``(B, T, d_model)``; ``positions`` ``(T,)``; ``cache`` an
    :class:`AttentionCache` or ``None``. ``q_proj``, ``k_proj``, ``v_proj`` make ``n_heads``
    queries and ``n_kv_heads`` keys and values of width ``d_head``; with ``qk_norm_eps`` each
    head's query and key is RMS-normalised (gain ``1 + w``, Gemma) before RoPE, which turns pairs
    ``(i, i + d_head/2)`` by ``positions · inv_freq`` (cos and sin times ``attention_factor``);
    :func:`attention` mixes the values (a ``window`` of keys if set, ``sinks`` if asked) and
    ``o_proj`` maps the heads back. ``softmax_dtype`` as in :func:`softmax_weights`.

    >>> _ = torch.manual_seed(0)
    >>> attn = SelfAttention(8, 2, 1, 4, scale=0.5, inv_freq=torch.tensor([1.0, 0.1]), window=3)
    >>> cache = AttentionCache(window=attn.window)
    >>> x = torch.randn(1, 5, 8)                           # (B, T, d_model)
    >>> full = attn(x, torch.arange(5), None)              # the whole sequence at once
    >>> steps = torch.cat([attn(x[:, t : t + 1], torch.tensor([t]), cache) for t in range(5)], 1)
    >>> bool((steps - full).abs().max() < 1e-6), len(cache)   # token by token: w - 1 + 1 keys
    (True, 3)
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_kv_heads: int,
        d_head: int,
        *,
        scale: float,
        inv_freq: Tensor,
        attention_factor: float = 1.0,
        window: int | None = None,
        bias: bool = False,
        qk_norm_eps: float | None = None,
        sinks: bool = False,
    ) -> None:
        super().__init__()
        d, h, h_kv = d_model, n_heads, n_kv_heads
        self.n_heads, self.n_kv_heads, self.d_head = h, h_kv, d_head
        self.window, self.scale = window, scale
        self.softmax_dtype: torch.dtype | None = None  # float32 to mirror transformers' eager
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # (d_head/2,) float32
        self.attention_factor = attention_factor  # YaRN's: multiplies cos and sin
        self.q_proj = nn.Linear(d, h * d_head, bias=bias)
        self.k_proj = nn.Linear(d, h_kv * d_head, bias=bias)
        self.v_proj = nn.Linear(d, h_kv * d_head, bias=bias)
        self.o_proj = nn.Linear(h * d_head, d, bias=bias)
        self.q_norm = self.k_norm = None
        if qk_norm_eps is not None:
            self.q_norm = RMSNorm(d_head, qk_norm_eps, unit_offset=True)
            self.k_norm = RMSNorm(d_head, qk_norm_eps, unit_offset=True)
        self.sinks = nn.Parameter(torch.zeros(h)) if sinks else None  # (h,): a logit per head

    @classmethod
    def from_config(
        cls, config: Any, kind: str, inv_freq: Tensor, attention_factor: float, **kwargs: Any
    ) -> SelfAttention:
        """The attention of a layer of ``kind`` (``"sliding_attention"`` has the config's
        ``sliding_window``) with the config's widths and ``attention_bias``."""
        window = config.sliding_window if kind == "sliding_attention" else None
        return cls(
            config.hidden_size,
            config.num_attention_heads,
            config.num_key_value_heads,
            config.head_dim,
            inv_freq=inv_freq,
            attention_factor=attention_factor,
            window=window,
            bias=bool(config.attention_bias),
            **kwargs,
        )

    def extra_repr(self) -> str:
        return f"window={self.window}, scale={self.scale:.4g}"

    def forward(self, x: Tensor, positions: Tensor, cache: AttentionCache | None) -> Tensor:
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # (B, h, T, dh)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.d_head).transpose(1, 2)  # (B,hkv,T,dh)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.d_head).transpose(1, 2)  # (B,hkv,T,dh)
        if self.q_norm is not None and self.k_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)  # QK-norm: each head's vector has rms ~1 (x gain)
        cos, sin = rope_cos_sin(self.inv_freq, positions, self.attention_factor, x.dtype)
        q, k = rotate_pairs(q, cos, sin), rotate_pairs(k, cos, sin)  # (B, h|hkv, T, dh)
        if cache is not None:  # the cache's keys first, then these: (B, hkv, T_k, dh)
            k, v, _ = cache.extend(k, v, positions)
        mask = causal_window_mask(T, k.size(2), self.window).to(x.device)  # (T, T_k)
        a = attention(
            q, k, v, scale=self.scale, mask=mask, sinks=self.sinks, softmax_dtype=self.softmax_dtype
        )  # (B, h, T, dh)
        a = a.transpose(1, 2).reshape(B, T, self.n_heads * self.d_head)  # (B, T, h·dh)
        return self.o_proj(a)  # (B, T, d)


# --------------------------------------------------------------------------------------------
# Caches
# --------------------------------------------------------------------------------------------


class AttentionCache(KVCache):
    """:class:`~course_utils.kv_cache.KVCache` that also holds its keys' positions, and with a
    ``window`` forgets the keys no future query can see.

    Keys are cached *after* RoPE (their positions are final). Before new tokens are appended, a
    sliding layer (``window = w``) drops all but its last ``w - 1`` keys: the first new query,
    at position ``p``, sees keys ``> p - w``, and so does every later one. A full layer keeps all.
    """

    def __init__(self, window: int | None = None) -> None:
        super().__init__()
        self.window = None if window is None else check_int(window, "window", low=1)
        self.positions: Tensor | None = None  # (T,): the positions of the held keys

    def clear(self) -> None:
        super().clear()
        self.positions = None

    def extend(self, k: Tensor, v: Tensor, positions: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Append ``k``, ``v`` ``(B, h_kv, T_new, d)`` at ``positions`` ``(T_new,)``; return every
        held key, value and position (``(B, h_kv, T, d)``, ``(B, h_kv, T, d)``, ``(T,)``)."""
        if self.window is not None and self.keys is not None and self.values is not None:
            drop = len(self) - (self.window - 1)  # keep what the next query can still see
            if drop > 0:
                self.keys = self.keys[:, :, drop:]  # (B, h_kv, w - 1, d)
                self.values = self.values[:, :, drop:]  # (B, h_kv, w - 1, d)
                self.positions = self.positions[drop:]  # (w - 1,)
        keys, values = self.append(k, v)  # (B, h_kv, T, d) each
        held = positions if self.positions is None else torch.cat([self.positions, positions])
        self.positions = held  # (T,)
        return keys, values, held


@dataclass
class DecodeCache:
    """What a model remembers between calls: one entry per layer, and the tokens seen so far.

    ``layers[i]`` is layer ``i``'s own state (an :class:`AttentionCache`, or another model's
    recurrent state); ``seen`` is the position of the next token. Made by a model's
    ``new_cache()``; pass it to ``forward(input_ids, cache=cache)`` again and again.
    """

    layers: list[Any]
    seen: int = 0
    batch: int | None = field(default=None)


# --------------------------------------------------------------------------------------------
# Inputs, weights, the decoder-only skeleton
# --------------------------------------------------------------------------------------------


def check_input_ids(input_ids: Any, vocab_size: int) -> Tensor:
    """``input_ids`` must be an integer tensor ``(B, T)`` with ``T >= 1`` and ids in ``[0, V)``."""
    if not isinstance(input_ids, Tensor):
        raise TypeError(
            f"input_ids must be an integer torch.Tensor of shape (B, T); "
            f"got {type(input_ids).__name__}"
        )
    if input_ids.is_floating_point() or input_ids.is_complex() or input_ids.dtype == torch.bool:
        raise TypeError(
            f"input_ids must be an integer torch.Tensor of shape (B, T); got dtype "
            f"{input_ids.dtype} with shape {shape_str(tuple(input_ids.shape))}"
        )
    if input_ids.dim() != 2 or input_ids.size(0) < 1 or input_ids.size(1) < 1:
        raise ValueError(
            f"input_ids must have shape (B, T) with B, T >= 1; got shape "
            f"{shape_str(tuple(input_ids.shape))} (add a batch axis with input_ids[None])"
        )
    low, high = int(input_ids.min()), int(input_ids.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(
            f"input_ids must lie in [0, {vocab_size}) (vocab_size); got values from {low} to {high}"
        )
    return input_ids


def checked_config(model: Any, model_type: str, class_name: str) -> Any:
    """``model.config``, once ``model`` is a ``transformers`` ``class_name``: its ``model_type``
    and an ``lm_head`` (else a ``TypeError`` naming what it got).

    >>> checked_config(nn.Linear(2, 2), "gpt_oss", "GptOssForCausalLM")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    TypeError: model must be a transformers GptOssForCausalLM (model_type 'gpt_oss'); got Linear...
    """
    config = getattr(model, "config", None)
    if getattr(config, "model_type", None) != model_type or not hasattr(model, "lm_head"):
        raise TypeError(
            f"model must be a transformers {class_name} (model_type {model_type!r}); got "
            f"{type(model).__name__} with model_type {getattr(config, 'model_type', None)!r}"
        )
    return config


def copy_weight(ours: Tensor, theirs: Tensor, name: str) -> None:
    """Copy a checkpoint tensor into one of ours (same shape, or a clear error naming it)."""
    if tuple(ours.shape) != tuple(theirs.shape):
        raise ValueError(
            f"{name}: the model's tensor has shape {shape_str(tuple(theirs.shape))}, expected "
            f"{shape_str(tuple(ours.shape))}"
        )
    with torch.no_grad():
        ours.copy_(theirs.detach())


class DecoderLM(nn.Module):
    """The skeleton every atlas model shares: embed, a stack of layers, a final norm, the logits.

    A subclass passes its layers and final norm to ``__init__`` (which adds ``embed_tokens`` and
    a bias-free ``lm_head``), and writes :meth:`new_layer_state` (and :meth:`embed` or
    :meth:`head` where its model differs from ``embed_tokens(ids)`` and ``lm_head(norm(x))``).
    Each layer is called
    ``layer(x, positions, state)``: ``x`` ``(B, T, d_model)`` -> ``(B, T, d_model)``,
    ``positions`` ``(T,)``, ``state`` its entry of the cache (made by :meth:`new_layer_state`) or
    ``None``.

    ``forward(input_ids)`` returns the logits ``(B, T, vocab_size)`` of a whole sequence.
    ``forward(input_ids, cache=cache)`` with ``cache = model.new_cache()`` continues from what
    the cache holds: ``input_ids`` ``(B, T_new)`` are the next tokens (a prompt, then one token
    at a time), the logits are those of these new positions, and the cache is updated in place.
    """

    def __init__(
        self, vocab_size: int, d_model: int, layers: Iterable[nn.Module], norm: nn.Module
    ) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.embed_tokens = nn.Embedding(vocab_size, d_model)  # (V, d_model)
        self.layers = nn.ModuleList(layers)
        self.norm = norm
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)  # (V, d_model)

    def embed(self, input_ids: Tensor) -> Tensor:
        return self.embed_tokens(input_ids)  # (B, T, d_model)

    def head(self, x: Tensor) -> Tensor:
        return self.lm_head(self.norm(x))  # (B, T, vocab_size)

    def new_layer_state(self, i: int) -> Any:
        raise NotImplementedError

    def new_cache(self) -> DecodeCache:
        """An empty cache: one state per layer (see the class docstring for how to use it)."""
        return DecodeCache([self.new_layer_state(i) for i in range(len(self.layers))])

    def forward(self, input_ids: Tensor, cache: DecodeCache | None = None) -> Tensor:
        input_ids = check_input_ids(input_ids, self.vocab_size).long()
        B, T = input_ids.shape
        start = 0
        if cache is not None:
            if not isinstance(cache, DecodeCache) or len(cache.layers) != len(self.layers):
                raise TypeError(
                    f"cache must be a DecodeCache from this model's new_cache() "
                    f"({len(self.layers)} layers); got {type(cache).__name__}"
                )
            if cache.batch is not None and cache.batch != B:
                raise ValueError(
                    f"the cache holds {cache.batch} sequence(s) but input_ids has shape "
                    f"{shape_str((B, T))}; use a new cache for a different batch"
                )
            start = cache.seen
        positions = torch.arange(start, start + T, device=input_ids.device)  # (T,)
        x = self.embed(input_ids)  # (B, T, d_model)
        for i, layer in enumerate(self.layers):
            x = layer(x, positions, None if cache is None else cache.layers[i])  # (B, T, d_model)
        if cache is not None:
            cache.seen, cache.batch = start + T, B
        return self.head(x)  # (B, T, vocab_size)


def _tensor(module: nn.Module, name: str) -> Tensor | None:
    """The parameter or buffer ``name`` (dotted) of ``module``; ``None`` where it has none."""
    owner, _, leaf = name.rpartition(".")
    try:
        return getattr(module.get_submodule(owner), leaf, None)
    except AttributeError:  # no such submodule
        return None


def load_weights(ours: DecoderLM, model: nn.Module, layer_names: dict[str, str]) -> DecoderLM:
    """``ours`` with the weights of ``model``, a ``transformers`` ``...ForCausalLM``, in its dtype
    and device (RoPE's ``inv_freq`` buffers stay float32, as the model keeps them), in eval mode.

    ``ours.embed_tokens``, ``ours.norm`` and ``ours.lm_head`` take ``model.model.embed_tokens``,
    ``model.model.norm`` and ``model.lm_head``; ``layer_names`` maps the names inside one of our
    ``layers`` to the names inside one of the model's (``"attn.q_proj": "self_attn.q_proj"``). A
    module's name stands for its ``weight`` and ``bias``; a name that a layer of ours does not have
    is passed over (one map serves layers of several kinds), but every parameter and buffer of
    ours must be copied, and each tensor must have our shape (else a ``ValueError`` naming it).
    """
    weight = model.lm_head.weight
    ours = ours.to(dtype=weight.dtype, device=weight.device)
    for module in ours.modules():  # the frequencies stay float32 whatever the dtype
        if isinstance(getattr(module, "inv_freq", None), Tensor):
            module.inv_freq = module.inv_freq.float()
    names = {"embed_tokens": "model.embed_tokens", "norm": "model.norm", "lm_head": "lm_head"}
    for i in range(len(ours.layers)):
        names |= {f"layers.{i}.{mine}": f"model.layers.{i}.{n}" for mine, n in layer_names.items()}
    copied: set[str] = set()
    for mine, theirs in names.items():
        for part in ("", ".weight", ".bias"):  # a tensor's own name, or a module's two
            dst = _tensor(ours, mine + part)
            if isinstance(dst, Tensor):
                src = _tensor(model, theirs + part)
                if src is None:
                    raise ValueError(
                        f"the model has no tensor {theirs + part} for ours {mine + part}"
                    )
                copy_weight(dst, src, theirs + part)
                copied.add(mine + part)
    missing = sorted(set(ours.state_dict()) - copied)
    if missing:
        raise ValueError(f"no weights of the model were copied into {missing}")
    return ours.eval()


#: Where the checkpoints keep a pre-norm layer's two norms (for :func:`load_weights`).
PRE_NORM_NAMES = {
    "input_norm": "input_layernorm",
    "post_attention_norm": "post_attention_layernorm",
}


def attention_names(ours: str = "attn", theirs: str = "self_attn") -> dict[str, str]:
    """Our attention's projections, QK-norms and sinks -> the same names in a checkpoint's
    ``self_attn`` (for :func:`load_weights`, which passes over the ones a model lacks).

    >>> attention_names("mixer")["mixer.q_proj"]
    'self_attn.q_proj'
    """
    parts = ("q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm", "sinks")
    return {f"{ours}.{n}": f"{theirs}.{n}" for n in parts}


def gated_mlp_names(ours: str, theirs: str) -> dict[str, str]:
    """A :class:`GatedMLP`'s ``gate``, ``up``, ``down`` -> Llama's ``gate_proj``, ``up_proj``,
    ``down_proj`` (for :func:`load_weights`).

    >>> gated_mlp_names("ffn.shared", "mlp.shared_expert")["ffn.shared.up"]
    'mlp.shared_expert.up_proj'
    """
    return {f"{ours}.{n}": f"{theirs}.{n}_proj" for n in ("gate", "up", "down")}


# --------------------------------------------------------------------------------------------
# Added for qwen3_next and deepseek_v32
# --------------------------------------------------------------------------------------------


def rope_inverse_frequencies_float32(
    rotary_dim: int, rope_parameters: dict[str, Any], max_position_embeddings: int | None = None
) -> tuple[Tensor, float]:
    """RoPE's ``inv_freq`` ``(rotary_dim // 2,)`` in float32, bit for bit as a model loads it,
    and its ``attention_factor``.

    ``rope_parameters`` is the config's dict (``rope_theta``, ``rope_type``, ...). The default
    RoPE is computed in float32, as the reference computes it (the float64 values of
    :func:`course_utils.positions.rope_inverse_frequencies`, which it is checked against, differ
    in the last float32 bit for some pairs, enough to move float64 logits by ~1e-7); other types
    (YaRN, linear, ...) are :func:`~course_utils.positions.rope_inverse_frequencies` rounded.

    >>> inv, factor = rope_inverse_frequencies_float32(4, {"rope_theta": 100.0})
    >>> inv, factor
    (tensor([1.0000, 0.1000]), 1.0)
    """
    from ..positions import rope_inverse_frequencies

    params = dict(rope_parameters)
    base = float(params.get("rope_theta", 10000.0))
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type == "default":
        exponents = torch.arange(0, rotary_dim, 2, dtype=torch.float32) / rotary_dim  # (d/2,)
        inv_freq = 1.0 / (base**exponents)  # (d/2,) float32, as the reference computes it
        reference, _ = rope_inverse_frequencies(rotary_dim, base)  # float64, our formula
        if not torch.allclose(inv_freq.double(), reference, rtol=1e-6, atol=0.0):
            raise AssertionError("float32 RoPE frequencies drifted from rope_inverse_frequencies")
        return inv_freq, 1.0
    params.pop("partial_rotary_factor", None)
    inv_freq, factor = rope_inverse_frequencies(
        rotary_dim, base, params, max_position_embeddings=max_position_embeddings
    )
    return inv_freq.float(), float(factor)


def swiglu(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    """The gated FFN ``W_down (silu(W_gate x) * W_up x)`` with ``nn.Linear``-layout weights
    (an expert's slices of a stacked tensor, or a shared expert's matrices).

    >>> x, w = torch.ones(1, 2), torch.ones(3, 2)
    >>> swiglu(x, w, w, torch.ones(2, 3))                  # 3 · silu(2) · 2
    tensor([[10.5696, 10.5696]])
    """
    return F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)  # (..., d)


class SwiGLUExperts(nn.Module):
    """``E`` SwiGLU experts stacked as Qwen's and DeepSeek's checkpoints store them: ``gate_up``
    ``(E, 2 d_ff, d)`` (expert ``e``'s gate rows, then its up rows) and ``down`` ``(E, d, d_ff)``.

    ``experts(x, indices, weights)`` is :func:`mix_experts` with :meth:`expert`: ``x`` ``(N, d)``,
    the router's choice ``indices`` and ``weights`` ``(N, k)``.

    >>> experts = SwiGLUExperts(2, d=2, d_ff=3)
    >>> with torch.no_grad():
    ...     _ = experts.gate_up.fill_(1.0), experts.down.fill_(1.0)
    >>> out = experts(torch.ones(1, 2), torch.tensor([[1]]), torch.tensor([[0.5]]))  # (N, d)
    >>> out.detach()                                       # 0.5 · (3 · silu(2) · 2)
    tensor([[5.2848, 5.2848]])
    """

    def __init__(self, n_experts: int, d: int, d_ff: int) -> None:
        super().__init__()
        self.gate_up = nn.Parameter(torch.zeros(n_experts, 2 * d_ff, d))  # (E, 2 d_ff, d)
        self.down = nn.Parameter(torch.zeros(n_experts, d, d_ff))  # (E, d, d_ff)

    def expert(self, e: int, x: Tensor) -> Tensor:
        """Expert ``e`` on its tokens ``x`` ``(n_e, d)`` -> ``(n_e, d)``."""
        gate, up = self.gate_up[e].chunk(2, dim=0)  # (d_ff, d) each: gate rows, then up rows
        return swiglu(x, gate, up, self.down[e])  # (n_e, d)

    def forward(self, x: Tensor, indices: Tensor, weights: Tensor) -> Tensor:
        return mix_experts(x, indices, weights, self.expert)  # (N, d)

    @staticmethod
    def checkpoint_names(ours: str, theirs: str) -> dict[str, str]:
        """Our ``gate_up`` and ``down`` -> the checkpoints' ``gate_up_proj`` and ``down_proj``."""
        return {f"{ours}.gate_up": f"{theirs}.gate_up_proj", f"{ours}.down": f"{theirs}.down_proj"}


__all__ += ["SwiGLUExperts", "rope_inverse_frequencies_float32", "swiglu"]
