"""The course's sparse masks as PyTorch FlexAttention inputs (Dong et al. 2024,
``torch.nn.attention.flex_attention``).

FlexAttention takes the mask as a function, ``mask_mod(b, h, q_idx, kv_idx) -> bool``, and
compiles it into a kernel. ``create_block_mask`` evaluates that function once on every
``block × block`` tile of the score matrix and keeps, per row of tiles, the tiles with at least
one allowed pair: a compiled kernel visits only those, so a sparse mask *can* skip work, unlike a
boolean ``attn_mask`` given to ``scaled_dot_product_attention``. Its tiles are the ones
:func:`course_utils.sparse.block_layout` finds in the same mask.

- :func:`mask_mod_from_mask`: any boolean mask of :mod:`course_utils.sparse.patterns` as a
  ``mask_mod``; :func:`sliding_window_mask_mod`: the sliding window as a formula;
- :func:`flex_block_mask`: ``create_block_mask`` on the CPU for one sequence (batch and heads
  broadcast); :func:`block_mask_tiles`: the tiles it keeps and all the tiles;
- :func:`flex_masked_attention`: ``flex_attention`` run eagerly. Eager FlexAttention is a
  reference path that computes every score (PyTorch says so in a warning); it skips nothing.
  Only ``torch.compile(flex_attention)`` generates the kernel that skips tiles (see
  ``benchmarks/bench_flex_attention.py``).

>>> from course_utils.sparse import block_layout, sliding_window_mask
>>> mask = sliding_window_mask(256, window=40)                       # (256, 256) bool
>>> block_mask = flex_block_mask(sliding_window_mask_mod(40), 256, 256, block=64)
>>> block_mask_tiles(block_mask), int(block_layout(mask, 64).sum())  # 7 of 16 tiles kept
((7, 16), 7)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor
from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention

from .._validation import check_bool, check_int, shape_str
from .patterns import _check_mask
from .window import _check_qkv

__all__ = [
    "block_mask_tiles",
    "flex_block_mask",
    "flex_masked_attention",
    "mask_mod_from_mask",
    "sliding_window_mask_mod",
]

#: ``mask_mod(b, h, q_idx, kv_idx)``: index tensors in, a bool tensor of the same shape out.
MaskMod = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]


def mask_mod_from_mask(mask: Any) -> MaskMod:
    """A FlexAttention ``mask_mod`` that looks a boolean mask ``(t_q, t_k)`` up (``True`` = may
    attend, the course's polarity and FlexAttention's).

    >>> from course_utils.sparse import strided_mask
    >>> mod = mask_mod_from_mask(strided_mask(8, stride=3))
    >>> i = torch.tensor([7, 7, 7])
    >>> mod(0, 0, i, torch.tensor([1, 2, 3])).tolist()        # 7 - 1 = 6 is a multiple of 3
    [True, False, False]
    """
    table = torch.from_numpy(_check_mask(mask).copy())  # (t_q, t_k) bool

    def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return table[q_idx, kv_idx]

    return mask_mod


def sliding_window_mask_mod(window: int, *, causal: bool = True) -> MaskMod:
    """The sliding window of :func:`course_utils.sparse.sliding_window_mask` as a formula:
    ``i - window < j <= i`` (``causal``) or ``|i - j| < window``. Unlike a looked-up table it
    works for any length.

    >>> mod = sliding_window_mask_mod(2)
    >>> mod(0, 0, torch.tensor(3), torch.arange(5)).tolist()
    [False, False, True, True, False]
    >>> sliding_window_mask_mod(0)
    Traceback (most recent call last):
    ...
    ValueError: window must be >= 1; got 0
    """
    w = check_int(window, "window", low=1)
    if check_bool(causal, "causal"):

        def causal_window(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
            return (kv_idx <= q_idx) & (q_idx - kv_idx < w)

        return causal_window

    def two_sided_window(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return (q_idx - kv_idx).abs() < w

    return two_sided_window


def flex_block_mask(mask_mod: MaskMod, t_q: int, t_k: int, *, block: int = 128) -> BlockMask:
    """``create_block_mask`` for one sequence on the CPU: ``mask_mod`` evaluated on every
    ``block × block`` tile of a ``(t_q, t_k)`` score matrix (128 is FlexAttention's default; the
    mask is the same for every batch entry and head, which broadcast)."""
    if not callable(mask_mod):
        raise TypeError(
            f"mask_mod must be a function (b, h, q_idx, kv_idx) -> bool tensor; got "
            f"{type(mask_mod).__name__}"
        )
    t_q = check_int(t_q, "t_q", low=1)
    t_k = check_int(t_k, "t_k", low=1)
    block = check_int(block, "block", low=1)
    return create_block_mask(mask_mod, None, None, t_q, t_k, device="cpu", BLOCK_SIZE=block)


def block_mask_tiles(block_mask: BlockMask) -> tuple[int, int]:
    """``(kept, total)``: the tiles a FlexAttention kernel visits (partly or fully allowed, for
    one batch entry and head) and all the tiles of the score matrix. ``1 - kept / total`` is the
    share of the work a kernel that skips empty tiles saves."""
    if not isinstance(block_mask, BlockMask):
        raise TypeError(
            f"block_mask must be a torch BlockMask (create_block_mask); got "
            f"{type(block_mask).__name__}"
        )
    *_, t_q, t_k = block_mask.shape
    b_q, b_k = block_mask.BLOCK_SIZE
    kept = block_mask.kv_num_blocks[0, 0].sum()  # tiles partly allowed
    if block_mask.full_kv_num_blocks is not None:
        kept = kept + block_mask.full_kv_num_blocks[0, 0].sum()  # and tiles fully allowed
    return int(kept), -(-t_q // b_q) * -(-t_k // b_k)


def flex_masked_attention(q: Tensor, k: Tensor, v: Tensor, block_mask: BlockMask) -> Tensor:
    """``flex_attention(q, k, v, block_mask=block_mask)`` run eagerly, for checking results:
    self-attention, ``q``, ``k`` ``(B, h, T, d_k)`` and ``v`` ``(B, h, T, d_v)`` (the same batch,
    heads and ``T``; nothing broadcasts), scale ``1/√d_k``. Returns ``(B, h, T, d_v)``.

    Eager FlexAttention computes every score and masks them, like SDPA with a boolean mask: it
    is the reference path, and PyTorch warns that it is not the fused kernel. That warning is
    silenced here because the course uses this path on purpose, never to time it.
    """
    q, k, v = _check_qkv(q, k, v)
    if q.dim() != 4:
        raise ValueError(
            f"q, k, v must be 4-d (B, h, T, d); got q of shape {shape_str(tuple(q.shape))}"
        )
    if not isinstance(block_mask, BlockMask):
        raise TypeError(f"block_mask must be a torch BlockMask; got {type(block_mask).__name__}")
    want = (int(q.shape[2]), int(k.shape[2]))
    if tuple(block_mask.shape[-2:]) != want:
        raise ValueError(
            f"block_mask covers {shape_str(tuple(block_mask.shape[-2:]))} scores; q and k of "
            f"length T = {want[0]} need {shape_str(want)}"
        )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        return flex_attention(q, k, v, block_mask=block_mask)  # (B, h, T, d_v)
