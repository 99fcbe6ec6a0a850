"""Building blocks shared by the atlas models (norms, RoPE tables, SwiGLU, routed experts).

The blocks are written to give the same numbers as ``transformers`` down to float64 round-off,
so they copy its *float32 islands*: a few steps that the reference code runs in float32 whatever
the model's dtype (RMSNorm statistics, RoPE angles, router probabilities). Checkpoints are stored
in bfloat16, where those casts are an *up*-cast for accuracy; in a float64 model the same cast
rounds to float32, and a rebuild that skipped it would differ by ~1e-7 instead of ~1e-15.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..positions import rope_inverse_frequencies

__all__ = [
    "experts_swiglu",
    "rms_norm_float32",
    "rope_cos_sin",
    "rope_inverse_frequencies_float32",
    "rotate_half",
    "swiglu",
]


def rms_norm_float32(x: Tensor, weight: Tensor, eps: float, *, unit_offset: bool = False) -> Tensor:
    """RMSNorm with its statistics in float32, as ``transformers``' RMSNorm modules compute it.

    ``unit_offset=False`` (Llama, DeepSeek): ``weight * (x / rms(x))``, the gain applied in
    ``x``'s dtype. ``unit_offset=True`` (Qwen3-Next, Gemma): the gain is ``1 + weight`` (a weight
    of zeros is the identity) and is applied in float32 before casting back.

    >>> x = torch.tensor([[3.0, 4.0]], dtype=torch.float64)
    >>> rms_norm_float32(x, torch.ones(2, dtype=torch.float64), 0.0)  # rms = sqrt(12.5)
    tensor([[0.8485, 1.1314]], dtype=torch.float64)
    >>> rms_norm_float32(x, torch.zeros(2), 0.0, unit_offset=True).dtype  # back in x's dtype
    torch.float64
    """
    x32 = x.to(torch.float32)  # (..., d): the reference's float32 island
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)  # (..., d): rms 1
    if unit_offset:
        return (x32 * (1.0 + weight.float())).to(x.dtype)  # (..., d)
    return weight * x32.to(x.dtype)  # (..., d)


def rope_inverse_frequencies_float32(
    rotary_dim: int, rope_parameters: dict[str, Any], max_position_embeddings: int | None = None
) -> tuple[Tensor, float]:
    """RoPE's ``inv_freq`` ``(rotary_dim // 2,)`` in float32, bit for bit as a model loads it.

    ``rope_parameters`` is the config's dict (``rope_theta``, ``rope_type``, ...). The default
    RoPE is computed in float32, as the reference computes it (its float64 values,
    :func:`course_utils.positions.rope_inverse_frequencies`, differ in the last bit of some
    pairs); other types (YaRN, linear, ...) are :func:`rope_inverse_frequencies` rounded to float32.

    >>> inv, factor = rope_inverse_frequencies_float32(4, {"rope_theta": 100.0})
    >>> inv, factor
    (tensor([1.0000, 0.1000]), 1.0)
    """
    params = dict(rope_parameters)
    base = float(params.get("rope_theta", 10000.0))
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type == "default":
        exponents = torch.arange(0, rotary_dim, 2, dtype=torch.float32) / rotary_dim  # (d/2,)
        inv_freq = 1.0 / (base**exponents)  # (d/2,) float32, as transformers computes it
        reference, _ = rope_inverse_frequencies(rotary_dim, base)  # float64, our formula
        assert torch.allclose(inv_freq.double(), reference, rtol=1e-6, atol=0.0)
        return inv_freq, 1.0
    params.pop("partial_rotary_factor", None)
    inv_freq, factor = rope_inverse_frequencies(
        rotary_dim, base, params, max_position_embeddings=max_position_embeddings
    )
    return inv_freq.float(), float(factor)


def rope_cos_sin(
    inv_freq: Tensor, positions: Tensor, attention_factor: float, dtype: torch.dtype
) -> tuple[Tensor, Tensor]:
    """``cos`` and ``sin`` tables ``(T, rotary_dim)`` for rotate-half RoPE at ``positions``.

    The angles ``position * inv_freq`` are float32 (the reference's float32 island), duplicated
    for the two halves, scaled by ``attention_factor`` (YaRN) and cast to ``dtype``.

    >>> cos, sin = rope_cos_sin(torch.tensor([1.0, 0.5]), torch.arange(3), 1.0, torch.float64)
    >>> cos.shape, sin[1]                                   # (T, rotary_dim)
    (torch.Size([3, 4]), tensor([0.8415, 0.4794, 0.8415, 0.4794], dtype=torch.float64))
    """
    angles = positions.float()[:, None] * inv_freq.float()[None, :]  # (T, d/2) float32
    angles = torch.cat((angles, angles), dim=-1)  # (T, d): pair i is (i, i + d/2)
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


def swiglu(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    """The gated FFN ``W_down (silu(W_gate x) * W_up x)`` with ``nn.Linear``-layout weights.

    >>> x, w = torch.ones(1, 2), torch.ones(3, 2)
    >>> swiglu(x, w, w, torch.ones(2, 3))                  # 3 · silu(2) · 2
    tensor([[10.5696, 10.5696]])
    """
    return F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)  # (..., d)


def experts_swiglu(
    x: Tensor, gate_up: Tensor, down: Tensor, top_index: Tensor, top_weight: Tensor
) -> Tensor:
    """Routed SwiGLU experts: each token's ``k`` chosen experts, weighted and summed.

    ``x`` ``(N, d)``; ``gate_up`` ``(E, 2·d_ff, d)`` (gate rows then up rows); ``down``
    ``(E, d, d_ff)``; ``top_index`` ``(N, k)`` expert ids; ``top_weight`` ``(N, k)``. Expert ``e``
    runs only on the tokens that chose it (the loop is over experts, as sparse MoE runs).

    >>> x = torch.ones(2, 2)
    >>> gate_up, down = torch.ones(3, 4, 2), torch.ones(3, 2, 2)
    >>> y = experts_swiglu(x, gate_up, down, torch.tensor([[0, 2], [1, 2]]),
    ...                    torch.tensor([[0.5, 0.5], [1.0, 0.0]]))
    >>> torch.allclose(y, swiglu(x, gate_up[0, :2], gate_up[0, 2:], down[0]))
    True
    """
    out = torch.zeros_like(x)  # (N, d)
    for e in torch.unique(top_index).tolist():
        token, slot = torch.where(top_index == e)  # tokens that chose e, and in which slot
        gate, up = F.linear(x[token], gate_up[e]).chunk(2, dim=-1)  # (n_e, d_ff) each
        y = F.linear(F.silu(gate) * up, down[e])  # (n_e, d)
        out.index_add_(0, token, y * top_weight[token, slot, None])  # (N, d)
    return out
