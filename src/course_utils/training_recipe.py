"""How the original Transformer was trained: the warm-up schedule and label smoothing.

Vaswani et al. (2017, §5.3) raise the learning rate linearly for ``warmup`` steps, then lower it
as ``1/√step``; and (§5.4) train towards a *smoothed* target, ``1 - ε`` on the right token and
``ε`` spread evenly over the whole vocabulary, with ``ε = 0.1``. Chapter 8 shows both.

>>> round(float(noam_learning_rate(4000, d_model=512, warmup=4000)), 7)   # the paper's peak
0.0006988
>>> smoothed_targets(torch.tensor([2]), n_classes=5, epsilon=0.1)
tensor([[0.0200, 0.0200, 0.9200, 0.0200, 0.0200]])
>>> round(best_logit_gap(n_classes=5, epsilon=0.1), 3)   # ln(0.92 / 0.02) = ln 46
3.829
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from numpy.typing import NDArray
from torch import Tensor

from ._validation import check_float_tensor, check_int, check_positive_finite, shape_str

__all__ = [
    "best_logit_gap",
    "label_smoothed_cross_entropy",
    "noam_learning_rate",
    "smoothed_targets",
]


def noam_learning_rate(
    step: Any, *, d_model: int, warmup: int, factor: float = 1.0
) -> NDArray[np.float64]:
    """The original Transformer's learning rate at ``step`` (1, 2, ...; an int or an array of them):

    ``factor · d_model^(-1/2) · min(step^(-1/2), step · warmup^(-3/2))``

    It rises linearly until ``step = warmup``, where the two terms are equal, and falls as
    ``1/√step`` after; the peak is ``factor / √(d_model · warmup)``.

    >>> noam_learning_rate([1, 2000, 4000, 16000], d_model=512, warmup=4000).round(7).tolist()
    [2e-07, 0.0003494, 0.0006988, 0.0003494]
    >>> noam_learning_rate(0, d_model=512, warmup=4000)
    Traceback (most recent call last):
    ...
    ValueError: step must be whole numbers >= 1 (the first step is 1); got 0
    """
    d_model = check_int(d_model, "d_model", low=1)
    warmup = check_int(warmup, "warmup", low=1)
    factor = check_positive_finite(factor, "factor")
    s = np.asarray(step)
    whole = np.issubdtype(s.dtype, np.integer) and s.dtype != np.bool_
    if not whole or s.size == 0 or s.min() < 1:
        got = repr(step) if s.size <= 4 else f"{s.dtype} values of shape {shape_str(s.shape)}"
        raise ValueError(f"step must be whole numbers >= 1 (the first step is 1); got {got}")
    s = s.astype(np.float64)  # (...)
    rate = np.minimum(s**-0.5, s * warmup**-1.5)  # (...): warm-up line, then 1/√step
    return factor * d_model**-0.5 * rate


def _check_classes(logits_or_n: int, target: Tensor, n_name: str) -> Tensor:
    """``target`` as a ``(N,)`` int64 tensor of class indices below ``logits_or_n``."""
    if not isinstance(target, Tensor):
        raise TypeError(f"target must be a torch tensor of class indices; got {type(target)}")
    if target.dim() != 1 or target.dtype not in (torch.int64, torch.int32, torch.int16):
        raise ValueError(
            f"target must be a (N,) tensor of integer class indices; got shape "
            f"{shape_str(tuple(target.shape))} and dtype {target.dtype}"
        )
    if target.numel() and (int(target.min()) < 0 or int(target.max()) >= logits_or_n):
        raise ValueError(
            f"target holds class indices from {int(target.min())} to {int(target.max())}; "
            f"expected 0 to {logits_or_n - 1} ({n_name} = {logits_or_n})"
        )
    return target.long()


def _check_epsilon(epsilon: float) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
        raise TypeError(f"epsilon must be a number in [0, 1); got {epsilon!r}")
    if not 0 <= epsilon < 1:
        raise ValueError(f"epsilon must be in [0, 1); got {epsilon!r}")
    return float(epsilon)


def smoothed_targets(
    target: Tensor, *, n_classes: int, epsilon: float, dtype: torch.dtype | None = None
) -> Tensor:
    """The label-smoothed target distributions ``(N, n_classes)`` for class indices ``(N,)``.

    Row ``n`` is ``(1 - ε) · one_hot(target[n]) + ε / n_classes``: the right class gets
    ``1 - ε + ε/n_classes``, every other ``ε/n_classes`` (the convention of Szegedy et al. 2016
    and of PyTorch's ``cross_entropy(label_smoothing=ε)``). Each row sums to 1. ``dtype``:
    PyTorch's default float dtype unless given.
    """
    n_classes = check_int(n_classes, "n_classes", low=2)
    epsilon = _check_epsilon(epsilon)
    target = _check_classes(n_classes, target, "n_classes")  # (N,)
    one_hot = F.one_hot(target, n_classes).to(dtype or torch.get_default_dtype())  # (N, C)
    return (1 - epsilon) * one_hot + epsilon / n_classes  # (N, C)


def label_smoothed_cross_entropy(logits: Tensor, target: Tensor, *, epsilon: float) -> Tensor:
    """Mean cross-entropy (nats) of ``logits`` ``(N, C)`` against ``target``'s smoothed targets.

    ``-Σ_c q_c · log softmax(logits)_c``, averaged over the ``N`` rows, where ``q`` is
    :func:`smoothed_targets`; ``epsilon = 0`` is the plain cross-entropy. ``log_softmax`` keeps
    large logits finite. Its least value is not 0 but the entropy of the smoothed target, reached
    at the logit gap of :func:`best_logit_gap`.

    >>> logits = torch.tensor([[0.0, 0.0, 3.829, 0.0, 0.0]])   # the best gap for C = 5, ε = 0.1
    >>> round(float(label_smoothed_cross_entropy(logits, torch.tensor([2]), epsilon=0.1)), 4)
    0.3897
    """
    logits = check_float_tensor(logits, "logits", "a (N, C) tensor of scores", ndim=2)
    n, c = logits.shape
    target = _check_classes(c, target, "the number of columns of logits")  # (N,)
    if target.shape[0] != n:
        raise ValueError(
            f"target has {target.shape[0]} entries and logits {n} rows; expected one class "
            f"index per row of logits (nothing is broadcast)"
        )
    if c < 2:
        raise ValueError(f"logits must have at least 2 columns (classes); got {c}")
    q = smoothed_targets(target, n_classes=c, epsilon=epsilon, dtype=logits.dtype)  # (N, C)
    return -(q * F.log_softmax(logits, dim=-1)).sum(dim=-1).mean()  # ()


def best_logit_gap(*, n_classes: int, epsilon: float) -> float:
    """How far the right class's logit must stand above the others' (all equal) to minimise the
    label-smoothed loss: ``ln((1 - ε + ε/C) / (ε/C))``. Without smoothing (``ε = 0``) there is no
    minimum: the loss keeps falling as the gap grows, so this returns ``inf``.

    >>> best_logit_gap(n_classes=37000, epsilon=0.1) > 12
    True
    >>> best_logit_gap(n_classes=5, epsilon=0.0)
    inf
    """
    n_classes = check_int(n_classes, "n_classes", low=2)
    epsilon = _check_epsilon(epsilon)
    if epsilon == 0:
        return math.inf
    return math.log((1 - epsilon + epsilon / n_classes) / (epsilon / n_classes))
