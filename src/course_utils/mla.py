"""Multi-head latent attention (MLA, 多头潜在注意力): DeepSeek-V2's attention (DeepSeek-AI 2024).

Each token's hidden state ``h_t`` is compressed into one latent ``c_t^KV = W^DKV h_t`` of width
``d_c`` (normalised by an RMSNorm, as in the released model). Only that latent is cached. Keys and
values of every head are up-projected from it: ``k_t^C = W^UK c_t^KV``, ``v_t^C = W^UV c_t^KV``.
Queries take a low-rank path too when ``d_latent_q`` is set: ``c_t^Q = W^DQ h_t``,
``q_t^C = W^UQ c_t^Q``.

RoPE would sit between ``W^UK`` and the query, so ``W^UK`` could not be folded into the query side
any more; the *decoupled RoPE* adds a small separate part of width ``d_h^R``: per-head rotated
queries ``q_t^R = RoPE(W^QR c_t^Q)`` and ONE rotated key ``k_t^R = RoPE(W^KR h_t)`` shared by all
heads and cached beside the latent. A head's score is ``q^C·k^C + q^R·k^R`` scaled by
``1/sqrt(d_h + d_h^R)``.

*Weight absorption* (``absorb=True``): ``q^C·k^C = (W^UK_h^T q^C)·c^KV``, so the query is moved
into latent space and attention runs straight against the cached latents; the weighted sum of
latents is mapped to the output through ``W^O_h W^UV_h`` folded together. Same numbers, no per-head
keys or values ever built (tested against the naive path and against ``transformers``).

>>> torch.manual_seed(0)  # doctest: +ELLIPSIS
<torch._C.Generator object at ...>
>>> mla = MultiHeadLatentAttention(32, 4, d_latent_kv=16, d_latent_q=24, d_head_nope=8,
...                                d_head_rope=4, d_head_v=8).double()
>>> x = torch.randn(2, 5, 32, dtype=torch.float64)              # (B, T, d_model)
>>> y = mla(x)
>>> y.shape
torch.Size([2, 5, 32])
>>> bool(torch.allclose(mla(x, absorb=True), y, atol=1e-12))
True
>>> cache = mla.new_cache()
>>> steps = [mla(x[:, t : t + 1], cache=cache) for t in range(5)]  # one token at a time
>>> bool(torch.allclose(torch.cat(steps, dim=1), y, atol=1e-12))
True
>>> cache.values_per_token, cache.nbytes                        # d_c + d_h^R per token
(20, 1600)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from ._validation import (
    check_bool,
    check_cache_extension,
    check_cache_pair,
    check_count,
    check_float_tensor,
    check_module_dtype,
    shape_str,
)
from .multihead import MultiHeadAttention
from .norms import RMSNorm
from .positions import apply_rope

__all__ = [
    "EquivalentMQA",
    "LatentCache",
    "MultiHeadLatentAttention",
    "PlainLatentAttention",
    "as_mqa",
    "decode_cost",
    "gqa_as_mla",
]


@dataclass
class LatentCache:
    """MLA's cache: per token only the latent ``c_KV`` ``(B, S, d_c)`` and the shared RoPE key
    ``k_R`` ``(B, S, d_h^R)`` (already rotated). :meth:`MultiHeadLatentAttention.forward`
    appends to it in place.

    >>> c = LatentCache()
    >>> c.length, c.nbytes
    (0, 0)
    """

    c_kv: Tensor | None = None  # (B, S, d_c)
    k_rope: Tensor | None = None  # (B, S, d_h^R)
    _extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def length(self) -> int:
        """Number of cached tokens ``S``."""
        return 0 if self.c_kv is None else int(self.c_kv.shape[1])

    @property
    def values_per_token(self) -> int:
        """``d_c + d_h^R``: numbers stored per token (and per sequence of the batch)."""
        if self.c_kv is None or self.k_rope is None:
            return 0
        return int(self.c_kv.shape[-1] + self.k_rope.shape[-1])

    @property
    def nbytes(self) -> int:
        """Bytes held by the cache (both tensors, whole batch)."""
        if self.c_kv is None or self.k_rope is None:
            return 0
        return int(
            self.c_kv.numel() * self.c_kv.element_size()
            + self.k_rope.numel() * self.k_rope.element_size()
        )

    def append(self, c_kv: Tensor, k_rope: Tensor) -> tuple[Tensor, Tensor]:
        """Add new tokens' ``c_kv`` ``(B, T, d_c)`` and ``k_rope`` ``(B, T, d_h^R)``; return all.

        The two must agree on ``(B, T)``, dtype and device, and with what the cache holds on
        batch, widths, dtype and device: a mismatch is an error, never a silently mixed cache.
        """
        c_kv = check_float_tensor(c_kv, "c_kv", "(B, T, d_c)", ndim=3)
        k_rope = check_float_tensor(k_rope, "k_rope", "(B, T, d_h^R)", ndim=3)
        check_cache_pair(c_kv, k_rope, ("c_kv", "k_rope"), 2, "(B, T)", "one per token")
        if self.c_kv is None or self.k_rope is None:
            self.c_kv, self.k_rope = c_kv, k_rope
        else:
            pairs = (("c_kv", "d_c", c_kv, self.c_kv), ("k_rope", "d_h^R", k_rope, self.k_rope))
            for name, width, new, held in pairs:
                check_cache_extension(new, held, name, time_dim=1, what=f"batch and {width}")
            self.c_kv = torch.cat([self.c_kv, c_kv], dim=1)  # (B, S + T, d_c)
            self.k_rope = torch.cat([self.k_rope, k_rope], dim=1)  # (B, S + T, d_h^R)
        return self.c_kv, self.k_rope


def _causal_softmax(scores: Tensor, start: int) -> Tensor:
    """Softmax over the last axis of ``scores`` ``(..., T, S)`` after masking every key that comes
    after its query; query ``i`` sits at position ``start + i``, key ``j`` at position ``j``."""
    T, S = scores.shape[-2:]
    q_pos = torch.arange(start, start + T, device=scores.device)[:, None]  # (T, 1)
    k_pos = torch.arange(S, device=scores.device)[None, :]  # (1, S)
    future = k_pos > q_pos  # (T, S): True where the key is after the query
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)  # (..., T, S)


class MultiHeadLatentAttention(nn.Module):
    """Causal multi-head latent attention with decoupled RoPE, as in DeepSeek-V2/V3.

    Parameters (DeepSeek-V2's symbols in brackets)
    ----------
    d_model : width of the hidden states [d].
    n_heads : number of heads [n_h].
    d_latent_kv : width of the cached latent [d_c].
    d_latent_q : width of the query latent [d_c']; ``None``: queries come straight from ``x``
        through one matrix (DeepSeek-V2-Lite does this).
    d_head_nope : per-head width of the content part of queries and keys [d_h].
    d_head_rope : per-head width of the RoPE part [d_h^R] (even; the key part is shared).
    d_head_v : per-head width of the values.
    rope_base : RoPE's base (``rope_theta``).
    rope_interleaved : pairing of the RoPE part; DeepSeek's released weights pair ``2i`` with
        ``2i+1`` (``rope_interleave=True`` in ``transformers``); ``False`` is rotate-half.
    norm_eps : epsilon of the two latent RMSNorms (1e-6 in ``transformers``' module).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        d_latent_kv: int,
        d_latent_q: int | None = None,
        d_head_nope: int,
        d_head_rope: int,
        d_head_v: int,
        rope_base: float = 10000.0,
        rope_interleaved: bool = True,
        norm_eps: float = 1e-6,
    ) -> None:
        super().__init__()
        self.d_model = check_count(d_model, "d_model")
        self.n_heads = check_count(n_heads, "n_heads")
        self.d_latent_kv = check_count(d_latent_kv, "d_latent_kv")
        self.d_latent_q = None if d_latent_q is None else check_count(d_latent_q, "d_latent_q")
        self.d_head_nope = check_count(d_head_nope, "d_head_nope")
        self.d_head_rope = check_count(d_head_rope, "d_head_rope", low=2)
        if self.d_head_rope % 2:
            raise ValueError(f"d_head_rope must be even (RoPE rotates pairs); got {d_head_rope}")
        self.d_head_v = check_count(d_head_v, "d_head_v")
        if isinstance(rope_base, bool) or not isinstance(rope_base, int | float) or rope_base <= 1:
            raise ValueError(f"rope_base must be a number > 1; got {rope_base!r}")
        if not isinstance(rope_interleaved, bool):
            raise TypeError(f"rope_interleaved must be True or False; got {rope_interleaved!r}")
        self.rope_base = float(rope_base)
        self.rope_interleaved = rope_interleaved
        self.scale = 1.0 / math.sqrt(d_head_nope + d_head_rope)  # 1/sqrt(d_h + d_h^R)
        h, dn, dr, dv = n_heads, d_head_nope, d_head_rope, d_head_v
        if d_latent_q is None:
            q_in = d_model
            self.W_DQ = None
            self.q_norm = None
        else:
            q_in = d_latent_q
            self.W_DQ = nn.Linear(d_model, d_latent_q, bias=False)  # W^DQ: down to c^Q
            self.q_norm = RMSNorm(d_latent_q, eps=norm_eps)
        self.W_UQ = nn.Linear(q_in, h * dn, bias=False)  # W^UQ: content queries, all heads
        self.W_QR = nn.Linear(q_in, h * dr, bias=False)  # W^QR: RoPE queries, all heads
        self.W_DKV = nn.Linear(d_model, d_latent_kv, bias=False)  # W^DKV: down to c^KV
        self.kv_norm = RMSNorm(d_latent_kv, eps=norm_eps)
        self.W_KR = nn.Linear(d_model, dr, bias=False)  # W^KR: ONE RoPE key for all heads
        self.W_UK = nn.Linear(d_latent_kv, h * dn, bias=False)  # W^UK: latent -> keys
        self.W_UV = nn.Linear(d_latent_kv, h * dv, bias=False)  # W^UV: latent -> values
        self.W_O = nn.Linear(h * dv, d_model, bias=False)  # W^O

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, n_heads={self.n_heads}, d_latent_kv={self.d_latent_kv}, "
            f"d_latent_q={self.d_latent_q}, d_head_nope={self.d_head_nope}, "
            f"d_head_rope={self.d_head_rope}, d_head_v={self.d_head_v}"
        )

    def new_cache(self) -> LatentCache:
        """An empty :class:`LatentCache` for incremental decoding."""
        return LatentCache()

    # ----------------------------------------------------------------------------------------
    def _check_x(self, x: Any) -> Tensor:
        if not isinstance(x, Tensor) or not x.is_floating_point():
            raise TypeError(f"x must be a floating-point torch.Tensor; got {type(x).__name__}")
        if x.dim() != 3 or x.shape[-1] != self.d_model or x.shape[1] < 1:
            raise ValueError(
                f"x must have shape (B, T, d_model={self.d_model}) with T >= 1; got shape "
                f"{shape_str(tuple(x.shape))}"
            )
        check_module_dtype(x, "x", self.W_DKV.weight.dtype, f"(B, T, d_model={self.d_model})")
        return x

    def latents(self, x: Tensor, start: int = 0) -> tuple[Tensor, Tensor]:
        """What the cache stores for tokens at positions ``start ..``: ``c_KV`` ``(B, T, d_c)`` and
        the rotated shared key ``k_R`` ``(B, T, d_h^R)``."""
        T = x.shape[1]
        pos = torch.arange(start, start + T, device=x.device)  # (T,)
        c_kv = self.kv_norm(self.W_DKV(x))  # (B, T, d_c): the only per-head-free content
        k_rope = apply_rope(
            self.W_KR(x), pos, base=self.rope_base, interleaved=self.rope_interleaved
        )  # (B, T, d_h^R): rotated once, shared by all heads
        return c_kv, k_rope

    def queries(self, x: Tensor, start: int = 0) -> tuple[Tensor, Tensor]:
        """Content queries ``(B, h, T, d_h)`` and rotated queries ``(B, h, T, d_h^R)``."""
        B, T, _ = x.shape
        c_q = x if self.W_DQ is None else self.q_norm(self.W_DQ(x))  # (B, T, d_c') or (B, T, d)
        q_c = self.W_UQ(c_q).view(B, T, self.n_heads, self.d_head_nope).transpose(1, 2)
        # q_c: (B, h, T, d_h)
        q_r = self.W_QR(c_q).view(B, T, self.n_heads, self.d_head_rope).transpose(1, 2)
        pos = torch.arange(start, start + T, device=x.device)  # (T,)
        q_r = apply_rope(q_r, pos, base=self.rope_base, interleaved=self.rope_interleaved)
        return q_c, q_r  # (B, h, T, d_h), (B, h, T, d_h^R)

    def forward(
        self, x: Tensor, *, cache: LatentCache | None = None, absorb: bool = False
    ) -> Tensor:
        """Causal self-attention over ``x`` ``(B, T, d_model)`` -> ``(B, T, d_model)``.

        With ``cache``, ``x`` holds the NEW tokens: their positions continue after the cached
        ones, their latents are appended to ``cache``, and they attend to every cached token.
        ``absorb=True`` runs the weight-absorbed path (same result, no per-head keys/values).
        """
        x = self._check_x(x)
        absorb = check_bool(absorb, "absorb")
        if cache is not None and not isinstance(cache, LatentCache):
            raise TypeError(f"cache must be a LatentCache or None; got {type(cache).__name__}")
        B, T, _ = x.shape
        start = 0 if cache is None else cache.length
        q_c, q_r = self.queries(x, start)  # (B, h, T, d_h), (B, h, T, d_h^R)
        c_new, kr_new = self.latents(x, start)  # (B, T, d_c), (B, T, d_h^R)
        if cache is None:
            c_kv, k_r = c_new, kr_new  # (B, S=T, d_c), (B, S, d_h^R)
        else:
            c_kv, k_r = cache.append(c_new, kr_new)  # (B, S, d_c), (B, S, d_h^R)
        S = c_kv.shape[1]
        h, dn, dv, dc = self.n_heads, self.d_head_nope, self.d_head_v, self.d_latent_kv
        rope_scores = q_r @ k_r[:, None].transpose(-2, -1)  # (B, h, T, S): shared key, all heads
        if absorb:
            W_UK = self.W_UK.weight.view(h, dn, dc)  # (h, d_h, d_c)
            q_lat = q_c @ W_UK  # (B, h, T, d_c): W^UK_h^T q^C, per head
            content = q_lat @ c_kv[:, None].transpose(-2, -1)  # (B, h, T, S)
        else:
            k_c = self.W_UK(c_kv).view(B, S, h, dn).transpose(1, 2)  # (B, h, S, d_h)
            content = q_c @ k_c.transpose(-2, -1)  # (B, h, T, S)
        scores = (content + rope_scores) * self.scale  # (B, h, T, S)
        weights = _causal_softmax(scores, start)  # (B, h, T, S); future keys get exactly 0
        if absorb:
            ctx_lat = weights @ c_kv[:, None]  # (B, h, T, d_c): weighted sum of latents
            W_OV = self.absorbed_output()  # (h·d_c, d): W^O_h W^UV_h stacked, folded once
            flat = ctx_lat.transpose(1, 2).reshape(B, T, h * dc)  # (B, T, h·d_c)
            return flat @ W_OV  # (B, T, d)
        v = self.W_UV(c_kv).view(B, S, h, dv).transpose(1, 2)  # (B, h, S, d_v)
        ctx = (weights @ v).transpose(1, 2).reshape(B, T, h * dv)  # (B, T, h·d_v)
        return self.W_O(ctx)  # (B, T, d)

    def absorbed_output(self) -> Tensor:
        """``(W^O_h W^UV_h)^T`` of all heads stacked, ``(h·d_c, d_model)``: the output side.

        Folded once and kept until a weight changes (deployments fold it when loading).
        """
        params = (self.W_UV.weight, self.W_O.weight)
        key = tuple((p.data_ptr(), p._version, p.dtype) for p in params)
        cached = getattr(self, "_absorbed", None)
        if cached is None or cached[0] != key or torch.is_grad_enabled():
            h, dv, dc = self.n_heads, self.d_head_v, self.d_latent_kv
            W_UV = self.W_UV.weight.view(h, dv, dc)  # (h, d_v, d_c)
            W_O = self.W_O.weight.view(self.d_model, h, dv)  # (d, h, d_v)
            W_OV = torch.einsum("dhv,hvc->hcd", W_O, W_UV)  # (h, d_c, d)
            W_OV = W_OV.reshape(h * dc, self.d_model).contiguous()  # (h·d_c, d)
            if torch.is_grad_enabled():
                return W_OV  # keep the autograd graph; do not cache
            cached = (key, W_OV)
            self._absorbed = cached
        return cached[1]

    # ----------------------------------------------------------------------------------------
    @classmethod
    def from_hf(cls, module: nn.Module) -> MultiHeadLatentAttention:
        """A copy of ``transformers``' ``DeepseekV3Attention`` (same weights, dtype, pairing).

        Only the default RoPE (no YaRN scaling) and ``attention_bias=False`` are supported, as in
        the small configurations this course builds; anything else is a clear ``ValueError``.
        """
        name = type(module).__name__
        if name != "DeepseekV3Attention":
            raise TypeError(f"module must be a transformers DeepseekV3Attention; got {name}")
        cfg = module.config
        if getattr(cfg, "attention_bias", False):
            raise ValueError("from_hf supports attention_bias=False only; got attention_bias=True")
        rope = dict(getattr(cfg, "rope_parameters", None) or {})
        if rope.get("rope_type", "default") != "default":
            raise ValueError(f"from_hf supports the default RoPE only; got {rope.get('rope_type')}")
        if cfg.num_key_value_heads != cfg.num_attention_heads:
            raise ValueError("from_hf needs num_key_value_heads == num_attention_heads")
        h, dn, dr = module.num_heads, module.qk_nope_head_dim, module.qk_rope_head_dim
        dv, dc = module.v_head_dim, module.kv_lora_rank
        base = rope.get("rope_theta", getattr(cfg, "rope_theta", 10000.0))
        ref_w = module.kv_b_proj.weight
        ours = cls(
            module.hidden_size,
            h,
            d_latent_kv=dc,
            d_latent_q=module.q_lora_rank,
            d_head_nope=dn,
            d_head_rope=dr,
            d_head_v=dv,
            rope_base=float(base),
            rope_interleaved=bool(cfg.rope_interleave),
            norm_eps=float(module.kv_a_layernorm.variance_epsilon),
        ).to(dtype=ref_w.dtype, device=ref_w.device)
        if not math.isclose(module.scaling, ours.scale, rel_tol=1e-12):
            raise ValueError(f"unsupported softmax scale {module.scaling} (expected {ours.scale})")
        with torch.no_grad():
            if module.q_lora_rank is None:
                wq = module.q_proj.weight.view(h, dn + dr, -1)  # (h, d_h + d_h^R, d)
            else:
                ours.W_DQ.weight.copy_(module.q_a_proj.weight)
                ours.q_norm.weight.copy_(module.q_a_layernorm.weight)
                ours.q_norm.eps = float(module.q_a_layernorm.variance_epsilon)
                wq = module.q_b_proj.weight.view(h, dn + dr, -1)  # (h, d_h + d_h^R, d_c')
            ours.W_UQ.weight.copy_(wq[:, :dn].reshape(h * dn, -1))
            ours.W_QR.weight.copy_(wq[:, dn:].reshape(h * dr, -1))
            wa = module.kv_a_proj_with_mqa.weight  # (d_c + d_h^R, d)
            ours.W_DKV.weight.copy_(wa[:dc])
            ours.W_KR.weight.copy_(wa[dc:])
            ours.kv_norm.weight.copy_(module.kv_a_layernorm.weight)
            wb = ref_w.view(h, dn + dv, dc)  # (h, d_h + d_v, d_c): per head [k_nope; v]
            ours.W_UK.weight.copy_(wb[:, :dn].reshape(h * dn, dc))
            ours.W_UV.weight.copy_(wb[:, dn:].reshape(h * dv, dc))
            ours.W_O.weight.copy_(module.o_proj.weight)
        return ours


# --------------------------------------------------------------------------------------------
# MLA after absorption is MQA; GQA is a special case of MLA
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EquivalentMQA:
    """An MLA layer after weight absorption, written as multi-query attention (MQA).

    Every head ``i`` has its own query ``[W^UK_i^T q^C_i ; q^R_i]`` of width ``d_c + d_h^R``;
    all heads share ONE key ``[c^KV_s ; k^R_s]`` per token (the cached latent and the RoPE key,
    concatenated) and ONE value ``c^KV_s`` of width ``d_c``. The heads' weighted sums of latents
    go through ``w_out`` (``W^O_i W^UV_i`` stacked). The scale stays MLA's
    ``1/sqrt(d_h + d_h^R)``, not ``1/sqrt(d_c + d_h^R)``: the MQA is exact, not a default one.
    Built by :func:`as_mqa`; :meth:`output` runs it (causal).
    """

    queries: Tensor  # (B, h, T, d_c + d_h^R): one query per head
    key: Tensor  # (B, 1, S, d_c + d_h^R): one key per token, shared by every head
    value: Tensor  # (B, 1, S, d_c): one value per token, shared by every head
    w_out: Tensor  # (h·d_c, d_model): W^O_h W^UV_h of all heads, stacked
    scale: float  # 1/sqrt(d_h + d_h^R), MLA's own
    start: int  # position of the first query (queries see keys at positions <= theirs)

    def output(self) -> Tensor:
        """Causal MQA with these tensors, then the absorbed output projection: ``(B, T, d)``."""
        B, _, T, _ = self.queries.shape
        scores = self.queries @ self.key.transpose(-2, -1) * self.scale  # (B, h, T, S)
        weights = _causal_softmax(scores, self.start)  # (B, h, T, S)
        ctx = weights @ self.value  # (B, h, T, d_c): every head sums the same values
        return ctx.transpose(1, 2).reshape(B, T, -1) @ self.w_out  # (B, T, d)


def as_mqa(mla: MultiHeadLatentAttention, x: Tensor) -> EquivalentMQA:
    """The MQA that ``mla`` is after absorption, for self-attention over ``x`` ``(B, T, d)``.

    With DeepSeek-V2's sizes (``d_c = 512``, ``d_h^R = 64``) the shared key is 576 wide and the
    shared value 512: MQA with ``d_k = 576``, ``d_v = 512`` (DeepSeek-V2 §2.1; the cache holds
    exactly that key, whose first 512 numbers are also the value).

    >>> _ = torch.manual_seed(0)
    >>> mla = MultiHeadLatentAttention(32, 4, d_latent_kv=16, d_head_nope=8, d_head_rope=4,
    ...                                d_head_v=8).double()
    >>> x = torch.randn(2, 5, 32, dtype=torch.float64)              # (B, T, d_model)
    >>> mqa = as_mqa(mla, x)
    >>> tuple(mqa.queries.shape), tuple(mqa.key.shape), tuple(mqa.value.shape)
    ((2, 4, 5, 20), (2, 1, 5, 20), (2, 1, 5, 16))
    >>> bool(torch.allclose(mqa.output(), mla(x), atol=1e-12))
    True
    """
    if not isinstance(mla, MultiHeadLatentAttention):
        raise TypeError(f"mla must be a MultiHeadLatentAttention; got {type(mla).__name__}")
    x = mla._check_x(x)
    h, dn, dc = mla.n_heads, mla.d_head_nope, mla.d_latent_kv
    q_c, q_r = mla.queries(x)  # (B, h, T, d_h), (B, h, T, d_h^R)
    c_kv, k_r = mla.latents(x)  # (B, T, d_c), (B, T, d_h^R)
    q_lat = q_c @ mla.W_UK.weight.view(h, dn, dc)  # (B, h, T, d_c): W^UK_h^T q^C, per head
    queries = torch.cat([q_lat, q_r], dim=-1)  # (B, h, T, d_c + d_h^R)
    key = torch.cat([c_kv, k_r], dim=-1)[:, None]  # (B, 1, T, d_c + d_h^R): one head
    return EquivalentMQA(queries, key, c_kv[:, None], mla.absorbed_output(), mla.scale, 0)


@dataclass(frozen=True)
class PlainLatentAttention:
    """MLA's equations without the RMSNorm and without RoPE (DeepSeek-V2 eqs. 9-11, 13-14):
    ``c = W^DKV h (+ b^DKV)``, head ``i``'s key ``W^UK_i c`` and value ``W^UV_i c``, then
    ``softmax(q_i k^T / sqrt(d_k)) v`` per head and ``W^O``. Built by :func:`gqa_as_mla`.

    Weights are stored as ``nn.Linear`` stores them, ``(out, in)``; biases may be ``None``.
    """

    n_heads: int
    W_Q: Tensor  # (h·d_k, d)
    bias_q: Tensor | None  # (h·d_k,)
    W_DKV: Tensor  # (d_c, d): down to the latent
    bias_dkv: Tensor | None  # (d_c,)
    W_UK: Tensor  # (h·d_k, d_c): latent -> every head's key
    W_UV: Tensor  # (h·d_k, d_c): latent -> every head's value
    W_O: Tensor  # (d, h·d_k)
    bias_o: Tensor | None  # (d,)

    @property
    def d_latent(self) -> int:
        """``d_c``: the numbers cached per token."""
        return int(self.W_DKV.shape[0])

    def forward(self, x: Tensor, *, causal: bool = True) -> Tensor:
        """Self-attention over ``x`` ``(B, T, d)`` -> ``(B, T, d)`` (causal unless told)."""
        causal = check_bool(causal, "causal")
        d = self.W_DKV.shape[1]
        if not isinstance(x, Tensor) or x.dim() != 3 or x.shape[-1] != d:
            got = shape_str(tuple(x.shape)) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"x must have shape (B, T, d_model={d}); got {got}")
        check_module_dtype(x, "x", self.W_DKV.dtype, f"(B, T, d_model={d})")
        B, T, _ = x.shape
        h = self.n_heads
        c = nn.functional.linear(x, self.W_DKV, self.bias_dkv)  # (B, T, d_c): all that is cached
        q = nn.functional.linear(x, self.W_Q, self.bias_q).view(B, T, h, -1).transpose(1, 2)
        k = (c @ self.W_UK.T).view(B, T, h, -1).transpose(1, 2)  # (B, h, T, d_k)
        v = (c @ self.W_UV.T).view(B, T, h, -1).transpose(1, 2)  # (B, h, T, d_k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, h, T, T)
        weights = _causal_softmax(scores, 0) if causal else scores.softmax(-1)  # (B, h, T, T)
        ctx = (weights @ v).transpose(1, 2).reshape(B, T, -1)  # (B, T, h·d_k)
        return nn.functional.linear(ctx, self.W_O, self.bias_o)  # (B, T, d)

    __call__ = forward


def gqa_as_mla(gqa: MultiHeadAttention) -> PlainLatentAttention:
    """MLA weights that compute exactly what the GQA (or MHA, MQA) layer ``gqa`` computes.

    ``gqa`` is a :class:`course_utils.multihead.MultiHeadAttention` with ``n_kv_heads`` k/v heads
    of width ``d_k``. The latent is every k/v head's key and value side by side:
    ``W^DKV = [W_K; W_V]``, ``d_c = 2 · n_kv_heads · d_k``, the GQA cache itself. ``W^UK`` and
    ``W^UV`` are 0/1 *selection* matrices: query head ``i`` picks the key (value) block of k/v head
    ``i // (n_heads / n_kv_heads)``. ``W_Q`` and ``W_O`` are copied. So GQA is MLA whose
    up-projections are fixed, not learned.

    RoPE (not built here): a GQA layer rotates its keys after ``W_K``; the rotation acts on each
    ``d_k`` block alone, so it commutes with the selection: rotating the latent's key blocks by
    the token's position before caching gives the same keys. MLA needs its decoupled RoPE only
    because a learned ``W^UK`` mixes all latent dimensions.

    >>> _ = torch.manual_seed(0)
    >>> gqa = MultiHeadAttention(16, 4, n_kv_heads=2).double()
    >>> mla = gqa_as_mla(gqa)
    >>> mla.d_latent, tuple(mla.W_UK.shape)                    # 2 · 2 k/v heads · d_k = 4
    (16, (16, 16))
    >>> x = torch.randn(1, 6, 16, dtype=torch.float64)
    >>> causal = torch.ones(6, 6, dtype=torch.bool).tril()
    >>> bool(torch.allclose(mla(x), gqa(x, x, x, causal), atol=1e-12))
    True
    """
    if not isinstance(gqa, MultiHeadAttention):
        raise TypeError(f"gqa must be a MultiHeadAttention; got {type(gqa).__name__}")
    h, n_kv, dk = gqa.n_heads, gqa.n_kv_heads, gqa.d_k
    W_K, W_V = gqa.W_K.weight.detach(), gqa.W_V.weight.detach()  # (n_kv·d_k, d) each
    dc = 2 * n_kv * dk
    W_UK = W_K.new_zeros(h * dk, dc)  # (h·d_k, d_c)
    W_UV = W_K.new_zeros(h * dk, dc)  # (h·d_k, d_c)
    eye = torch.eye(dk, dtype=W_K.dtype, device=W_K.device)  # (d_k, d_k)
    group = h // n_kv
    for i in range(h):
        j = i // group  # the k/v head query head i reads
        rows = slice(i * dk, (i + 1) * dk)
        W_UK[rows, j * dk : (j + 1) * dk] = eye  # picks k/v head j's key from the latent
        W_UV[rows, (n_kv + j) * dk : (n_kv + j + 1) * dk] = eye  # ... and its value

    def bias(layer: nn.Linear) -> Tensor | None:
        return None if layer.bias is None else layer.bias.detach().clone()

    b_K, b_V = bias(gqa.W_K), bias(gqa.W_V)
    return PlainLatentAttention(
        n_heads=h,
        W_Q=gqa.W_Q.weight.detach().clone(),
        bias_q=bias(gqa.W_Q),
        W_DKV=torch.cat([W_K, W_V]),  # (d_c, d): the latent IS the group keys and values
        bias_dkv=None if b_K is None or b_V is None else torch.cat([b_K, b_V]),
        W_UK=W_UK,
        W_UV=W_UV,
        W_O=gqa.W_O.weight.detach().clone(),
        bias_o=bias(gqa.W_O),
    )


# --------------------------------------------------------------------------------------------
# Cost per generated token, as the context grows
# --------------------------------------------------------------------------------------------


def decode_cost(
    context: int,
    n_heads: int,
    d_latent_kv: int,
    d_head_nope: int,
    d_head_rope: int,
    d_head_v: int,
    *,
    mode: str,
) -> dict[str, int]:
    """What ONE new token costs against a context of ``context`` cached tokens, per layer.

    Returns ``{"macs": ..., "cache_values": ..., "work_values": ...}``: multiply-adds that grow
    with the context (projections of the new token itself are the same in every mode except the
    fixed ``h·d_h·d_c`` absorbed query map, which is counted), numbers read from the cache, and
    numbers built on the fly (transient memory). ``mode``:

    - ``"full_kv"``: cache every head's key and value (what MLA would be without its latent);
    - ``"naive"``: cache the latent, rebuild every head's keys and values from it at each step;
    - ``"absorbed"``: cache the latent, attend against it directly (weight absorption).

    >>> n = decode_cost(1000, 128, 512, 128, 64, 128, mode="naive")
    >>> a = decode_cost(1000, 128, 512, 128, 64, 128, mode="absorbed")
    >>> n["macs"] // a["macs"], n["work_values"] // a["work_values"]
    (113, 250)
    """
    S, h = check_count(context, "context"), check_count(n_heads, "n_heads")
    dc, dn = check_count(d_latent_kv, "d_latent_kv"), check_count(d_head_nope, "d_head_nope")
    dr, dv = check_count(d_head_rope, "d_head_rope"), check_count(d_head_v, "d_head_v")
    attend = h * S * (dn + dr) + h * S * dv  # scores against per-head keys + weighted sum of values
    if mode == "full_kv":
        return {"macs": attend, "cache_values": S * (h * (dn + dr) + h * dv), "work_values": 0}
    if mode == "naive":
        rebuild = S * h * (dn + dv) * dc  # W^UK and W^UV applied to every cached latent
        return {
            "macs": rebuild + attend,
            "cache_values": S * (dc + dr),
            "work_values": S * h * (dn + dv),
        }
    if mode == "absorbed":
        macs = h * dn * dc + h * S * (dc + dr) + h * S * dc  # query to latent space, scores, sum
        return {"macs": macs, "cache_values": S * (dc + dr), "work_values": 2 * h * dc}
    raise ValueError(f"mode must be 'full_kv', 'naive' or 'absorbed'; got {mode!r}")
