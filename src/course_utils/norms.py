"""LayerNorm (层归一化) and RMSNorm (均方根归一化): two ways to rescale a token vector.

Both act on each token's vector on its own (the last axis, ``d_model``), never across tokens:

- LayerNorm (Ba et al., 2016): ``(x - mean(x)) / sqrt(var(x) + eps) * gamma + beta``, with the
  *biased* variance (divide by ``d_model``, not ``d_model - 1``). ``torch.nn.LayerNorm`` is the
  implementation the blocks use; :func:`layer_norm` writes the formula out for reading.
- RMSNorm (Zhang and Sennrich, 2019): ``x / sqrt(mean(x²) + eps) * gamma``. No mean is subtracted
  and there is no bias; Llama-family models use it (chapter 10). :class:`RMSNorm` is tested against
  ``torch.nn.RMSNorm`` and against the formula.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["RMSNorm", "layer_norm", "rms_norm"]


def _check_vectors(x: object, name: str, d_model: int | None = None) -> Tensor:
    """``x`` must be a floating-point tensor ``(..., d_model)``."""
    if not isinstance(x, Tensor) or not x.is_floating_point():
        got = f"dtype {x.dtype}" if isinstance(x, Tensor) else type(x).__name__
        raise TypeError(f"{name} must be a floating-point torch.Tensor (..., d_model); got {got}")
    if x.dim() == 0 or (d_model is not None and x.size(-1) != d_model):
        want = "d_model" if d_model is None else f"d_model = {d_model}"
        raise ValueError(f"{name} has shape {tuple(x.shape)}, expected (..., d_model) with {want}")
    return x


def _check_gain(g: Tensor | None, name: str, d_model: int) -> None:
    if g is not None and (not isinstance(g, Tensor) or tuple(g.shape) != (d_model,)):
        got = tuple(g.shape) if isinstance(g, Tensor) else type(g).__name__
        raise ValueError(f"{name} must be a tensor of shape ({d_model},) (d_model,); got {got}")


def layer_norm(
    x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
) -> Tensor:
    """LayerNorm of every vector along the last axis, the formula written out.

    >>> x = torch.tensor([[1.0, 2.0, 3.0, 6.0]])
    >>> layer_norm(x).round(decimals=3)                  # mean 0, (biased) variance 1
    tensor([[-1.0690, -0.5350,  0.0000,  1.6040]])
    >>> torch.allclose(layer_norm(x), torch.nn.functional.layer_norm(x, (4,)))
    True
    """
    d_model = _check_vectors(x, "x").size(-1)
    _check_gain(weight, "weight", d_model)
    _check_gain(bias, "bias", d_model)
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # (..., 1): biased, divide by d_model
    y = (x - mean) / torch.sqrt(var + eps)  # (..., d_model): mean 0, variance ~1
    if weight is not None:
        y = y * weight  # (..., d_model): gamma, one gain per dimension
    if bias is not None:
        y = y + bias  # (..., d_model): beta
    return y


def rms_norm(x: Tensor, weight: Tensor | None = None, eps: float = 1e-6) -> Tensor:
    """RMSNorm of every vector along the last axis: ``x / sqrt(mean(x²) + eps) * weight``.

    >>> rms_norm(torch.tensor([[3.0, 4.0]]), eps=0.0)    # rms = sqrt((9 + 16) / 2)
    tensor([[0.8485, 1.1314]])
    """
    _check_gain(weight, "weight", _check_vectors(x, "x").size(-1))
    rms = torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps)  # (..., 1): root mean square
    y = x / rms  # (..., d_model): rms ~1, direction unchanged, mean NOT removed
    return y if weight is None else y * weight  # (..., d_model)


class RMSNorm(nn.Module):
    """Root-mean-square normalisation with a learned gain, as in Llama-family models.

    Parameters
    ----------
    d_model : int
        Width of the vectors (the last axis).
    eps : float
        Added to ``mean(x²)`` before the square root (Llama uses 1e-5 or 1e-6; read it from the
        model's config). ``torch.nn.RMSNorm``'s default ``eps=None`` means the dtype's machine
        epsilon, so pass ``eps`` explicitly when you compare the two.

    >>> norm = RMSNorm(4, eps=0.0)
    >>> x = torch.tensor([[1.0, -1.0, 1.0, -1.0]])       # (B=1, d_model=4), rms = 1
    >>> norm(x)
    tensor([[ 1., -1.,  1., -1.]], grad_fn=<MulBackward0>)
    >>> sum(p.numel() for p in norm.parameters())         # one gain per dimension, no bias
    4
    """

    def __init__(self, d_model: int, eps: float = 1e-6) -> None:
        super().__init__()
        if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model < 1:
            raise ValueError(f"d_model must be an int >= 1; got {d_model!r}")
        if isinstance(eps, bool) or not isinstance(eps, int | float) or eps < 0:
            raise ValueError(f"eps must be a number >= 0; got {eps!r}")
        self.d_model = d_model
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(d_model))  # (d_model,): gamma, starts at 1

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"

    def forward(self, x: Tensor) -> Tensor:
        _check_vectors(x, "x", self.d_model)
        return rms_norm(x, self.weight, self.eps)  # (..., d_model)

    @classmethod
    def from_torch(cls, norm: nn.RMSNorm) -> RMSNorm:
        """A copy of a ``torch.nn.RMSNorm`` over one axis (its ``eps=None`` becomes the dtype's
        machine epsilon, as PyTorch uses it)."""
        if not isinstance(norm, nn.RMSNorm):
            raise TypeError(f"norm must be a torch.nn.RMSNorm; got {type(norm).__name__}")
        if len(norm.normalized_shape) != 1 or norm.weight is None:
            raise ValueError(
                f"norm must normalise one axis with a learned weight; got normalized_shape "
                f"{tuple(norm.normalized_shape)}, elementwise_affine={norm.weight is not None}"
            )
        weight = norm.weight.detach()
        eps = norm.eps if norm.eps is not None else torch.finfo(weight.dtype).eps
        ours = cls(norm.normalized_shape[0], eps=eps).to(dtype=weight.dtype, device=weight.device)
        with torch.no_grad():
            ours.weight.copy_(weight)
        return ours
