"""What a pattern costs, and how far information travels through layers of it.

Cost: a kernel that skips masked pairs computes ``nnz = mask.sum()`` scores instead of
``T_q · T_k``. Per head, the two products ``Q Kᵀ`` and ``weights · V`` take ``2·d`` floating-point
operations (a multiply and an add) per computed pair each: ``FLOPs = 4 · nnz · d``; the scores held
in memory are ``nnz`` numbers. These are counts (a model of the cost), not measurements.

Receptive field (感受野): with the residual connection, the output of token ``i`` after ``L``
layers can depend on token ``j`` when a path ``i = p_L → p_{L-1} → … → p_0 = j`` exists in which
every step is allowed by the mask or stays in place. :func:`reach` computes that as a boolean
matrix power; :func:`layers_to_reach_all` finds the smallest ``L`` at which nothing new is added.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch.utils._python_dispatch import TorchDispatchMode

from .._validation import check_int, shape_str
from .patterns import _check_mask

__all__ = [
    "PatternCost",
    "dense_score_bytes",
    "largest_tensor_bytes",
    "layers_to_reach_all",
    "pattern_cost",
    "reach",
    "window_layers_needed",
]


def dense_score_bytes(t: int, *, n_heads: int = 1, batch: int = 1, bytes_per_score: int = 4) -> int:
    """Bytes of one ``(batch, n_heads, t, t)`` score matrix (float32 by default).

    >>> dense_score_bytes(1024)          # 4 MiB
    4194304
    >>> dense_score_bytes(131072) / 2**30  # 64 GiB for one head at T = 128k
    64.0
    """
    t = check_int(t, "t", low=1)
    n_heads = check_int(n_heads, "n_heads", low=1)
    batch = check_int(batch, "batch", low=1)
    bytes_per_score = check_int(bytes_per_score, "bytes_per_score", low=1)
    return batch * n_heads * t * t * bytes_per_score


@dataclass(frozen=True)
class PatternCost:
    """Counts for one head: computed pairs, FLOPs of the two products and score memory."""

    pairs: int  #: (query, key) pairs computed
    dense_pairs: int  #: T_q · T_k
    flops: int  #: 4 · pairs · d
    dense_flops: int  #: 4 · T_q · T_k · d
    score_bytes: int  #: pairs · bytes per score
    dense_score_bytes: int  #: T_q · T_k · bytes per score

    @property
    def density(self) -> float:
        """``pairs / dense_pairs``: the fraction of the dense cost."""
        return self.pairs / self.dense_pairs


def pattern_cost(mask: Any, d: int, *, bytes_per_score: int = 4) -> PatternCost:
    """Cost of one head of attention with ``mask``, for a kernel that computes only allowed pairs.

    >>> c = pattern_cost(np.tril(np.ones((4, 4), dtype=bool)), d=8)
    >>> c.pairs, c.dense_pairs, c.flops, c.dense_flops, c.density
    (10, 16, 320, 512, 0.625)
    """
    m = _check_mask(mask)
    d = check_int(d, "d", low=1)
    bytes_per_score = check_int(bytes_per_score, "bytes_per_score", low=1)
    pairs, dense = int(m.sum()), int(m.size)
    return PatternCost(
        pairs=pairs,
        dense_pairs=dense,
        flops=4 * pairs * d,
        dense_flops=4 * dense * d,
        score_bytes=pairs * bytes_per_score,
        dense_score_bytes=dense * bytes_per_score,
    )


def _square(mask: Any) -> NDArray[np.bool_]:
    m = _check_mask(mask)
    if m.shape[0] != m.shape[1]:
        raise ValueError(
            f"mask must be square (t, t) to stack layers of it (self-attention); got shape "
            f"{shape_str(m.shape)}"
        )
    return m


def reach(mask: Any, n_layers: int, *, residual: bool = True) -> NDArray[np.bool_]:
    """Which tokens each token can have heard from after 1, 2, …, ``n_layers`` layers.

    Returns ``(n_layers, t, t)`` bool: ``out[L - 1, i, j]`` is True when information from token
    ``j`` can reach token ``i`` through ``L`` layers that all use ``mask``. ``residual=True`` (a
    Transformer's residual connection) lets a token keep what it had, i.e. adds the diagonal.

    >>> from course_utils.sparse import sliding_window_mask
    >>> r = reach(sliding_window_mask(6, window=2), 3)
    >>> r.sum(axis=-1)[:, 5].tolist()  # the last token hears 2, 3, then 4 tokens
    [2, 3, 4]
    """
    m = _square(mask)
    n_layers = check_int(n_layers, "n_layers", low=1)
    step = (m | np.eye(len(m), dtype=bool)) if residual else m  # (t, t)
    step_i = step.astype(np.int64)  # (t, t)
    out = np.empty((n_layers, *m.shape), dtype=bool)  # (L, t, t)
    current = step.copy()  # (t, t): after one layer
    for layer in range(n_layers):
        out[layer] = current
        current = (current.astype(np.int64) @ step_i) > 0  # (t, t): one more layer
    return out


def layers_to_reach_all(mask: Any, *, max_layers: int | None = None) -> int:
    """Smallest number of layers after which stacking more lets no new token be heard.

    With the residual connection the reach only grows, and it stops growing at its transitive
    closure: for a causal pattern that is every earlier token (if the pattern connects them), for a
    two-sided one every token. Raises ``ValueError`` if that takes more than ``max_layers``
    (default ``t``).

    >>> from course_utils.sparse import sliding_window_mask, strided_mask
    >>> layers_to_reach_all(sliding_window_mask(64, window=8)), window_layers_needed(64, 8)
    (9, 9)
    >>> layers_to_reach_all(strided_mask(64, stride=8))
    2
    """
    m = _square(mask)
    t = len(m)
    limit = t if max_layers is None else check_int(max_layers, "max_layers", low=1)
    step = (m | np.eye(t, dtype=bool)).astype(np.int64)  # (t, t)
    current = step > 0  # (t, t)
    for layers in range(1, limit + 1):
        nxt = (current.astype(np.int64) @ step) > 0  # (t, t)
        if (nxt == current).all():
            return layers
        current = nxt
    raise ValueError(f"the reach still grows after max_layers = {limit} layers")


def window_layers_needed(t: int, window: int) -> int:
    """Layers of a sliding window (causal or not) for the last token to hear the first:
    each layer moves information ``window - 1`` positions, and ``t - 1`` must be covered, so
    ``ceil((t - 1) / (window - 1))`` (1 when ``t == 1``).

    >>> window_layers_needed(4096, 256), window_layers_needed(131072, 4096)
    (17, 33)
    """
    t = check_int(t, "t", low=1)
    window = check_int(window, "window", low=1)
    if t == 1:
        return 1
    if window == 1:
        raise ValueError("window must be >= 2 for information to move between tokens; got 1")
    return max(1, math.ceil((t - 1) / (window - 1)))


class _LargestTensor(TorchDispatchMode):
    """Records the bytes of the largest tensor any PyTorch operation returns."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        for x in out if isinstance(out, tuple | list) else [out]:
            if isinstance(x, torch.Tensor):
                self.largest = max(self.largest, x.numel() * x.element_size())
        return out


def largest_tensor_bytes(fn: Any, *args: Any, **kwargs: Any) -> int:
    """Call ``fn(*args, **kwargs)`` and return the size in bytes of the largest tensor that any
    PyTorch operation inside it created (a measurement of what the computation materialises, not
    of the process's memory; views count at their full size).

    >>> q = torch.zeros(1, 512, 8)  # (B, T, d)
    >>> largest_tensor_bytes(lambda: (q @ q.transpose(-2, -1)).softmax(-1) @ q)  # T² floats
    1048576
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable; got {type(fn).__name__}")
    with _LargestTensor() as mode:
        fn(*args, **kwargs)
    return mode.largest
