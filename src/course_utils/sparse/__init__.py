"""Sparse attention (稀疏注意力): patterns as boolean masks, their cost, and a sliding-window
attention that computes only the band, in ``O(T·w)`` time and memory.

- masks (``patterns``): :func:`sliding_window_mask`, :func:`dilated_window_mask`,
  :func:`strided_mask`, :func:`global_mask`, :func:`random_mask`, :func:`bigbird_mask`,
  :func:`block_layout`, :func:`block_sparse_mask`, :func:`density`;
- computation (``window``): :func:`sliding_window_attention`;
- PyTorch's FlexAttention with these masks (``flex``): :func:`mask_mod_from_mask`,
  :func:`sliding_window_mask_mod`, :func:`flex_block_mask`, :func:`block_mask_tiles`,
  :func:`flex_masked_attention`;
- cost and receptive field (``cost``): :func:`pattern_cost`, :func:`dense_score_bytes`,
  :func:`largest_tensor_bytes`,
  :func:`reach`, :func:`layers_to_reach_all`, :func:`window_layers_needed`.

Masks are numpy bool ``(t_q, t_k)``, ``True`` = may attend (the course's polarity, the one of
``torch.nn.functional.scaled_dot_product_attention``); pass ``torch.from_numpy(mask)`` to PyTorch.
"""

from .cost import (
    PatternCost,
    dense_score_bytes,
    largest_tensor_bytes,
    layers_to_reach_all,
    pattern_cost,
    reach,
    window_layers_needed,
)
from .flex import (
    block_mask_tiles,
    flex_block_mask,
    flex_masked_attention,
    mask_mod_from_mask,
    sliding_window_mask_mod,
)
from .patterns import (
    bigbird_mask,
    block_layout,
    block_sparse_mask,
    density,
    dilated_window_mask,
    global_mask,
    random_mask,
    sliding_window_mask,
    strided_mask,
)
from .window import sliding_window_attention

__all__ = [
    "PatternCost",
    "bigbird_mask",
    "block_layout",
    "block_mask_tiles",
    "block_sparse_mask",
    "dense_score_bytes",
    "density",
    "dilated_window_mask",
    "flex_block_mask",
    "flex_masked_attention",
    "global_mask",
    "largest_tensor_bytes",
    "layers_to_reach_all",
    "mask_mod_from_mask",
    "pattern_cost",
    "random_mask",
    "reach",
    "sliding_window_attention",
    "sliding_window_mask",
    "sliding_window_mask_mod",
    "strided_mask",
    "window_layers_needed",
]
