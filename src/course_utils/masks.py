"""Boolean attention masks. ``True`` means "may attend", the polarity PyTorch's
``scaled_dot_product_attention`` uses for boolean masks.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ._validation import check_alloc, check_int

__all__ = ["causal_mask", "diagonal_offset", "key_padding_mask"]


def diagonal_offset(t_q: int, t_k: int, align: str) -> int:
    """Where query ``i`` stands among ``t_k`` keys, minus ``i``: ``0`` for ``"top_left"``, and
    ``t_k - t_q`` for ``"bottom_right"`` (the last query at the last key, as with a KV cache).

    One home for the alignment that :func:`causal_mask` and ``positions.alibi_bias`` share.

    >>> diagonal_offset(2, 5, "bottom_right"), diagonal_offset(2, 5, "top_left")
    (3, 0)
    """
    t_q, t_k = check_int(t_q, "t_q", low=1), check_int(t_k, "t_k", low=1)
    if align == "top_left":
        return 0
    if align == "bottom_right":
        return t_k - t_q
    raise ValueError(f"align must be 'top_left' or 'bottom_right'; got {align!r}")


def causal_mask(
    t_q: int, t_k: int | None = None, *, align: Literal["top_left", "bottom_right"] = "top_left"
) -> NDArray[np.bool_]:
    """Lower-triangular mask ``(t_q, t_k)``: query ``i`` may attend to key ``j`` iff ``j <= i``.

    The seed's 看书真好 table is ``causal_mask(4)``: each token sees itself and the tokens before
    it.

    When ``t_k != t_q`` the diagonal has to be anchored somewhere:

    - ``align="top_left"`` (default, what
      ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)`` does): query ``i`` sees
      keys ``0..i``. Query 0 is aligned with key 0.
    - ``align="bottom_right"`` (what a KV cache needs, and PyTorch's ``causal_lower_right``): the
      *last* query is aligned with the *last* key, so query ``i`` sees keys ``0..i + (t_k - t_q)``.
      With 3 cached tokens and 2 new queries, the first new query sees 4 keys.

    Examples
    --------
    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    >>> causal_mask(2, 4, align="bottom_right").astype(int)
    array([[1, 1, 1, 0],
           [1, 1, 1, 1]])
    """
    t_q = check_int(t_q, "t_q", low=1)
    t_k = t_q if t_k is None else check_int(t_k, "t_k", low=1)
    offset = diagonal_offset(t_q, t_k, align)
    check_alloc((t_q, t_k), 1, f"causal_mask(t_q={t_q}, t_k={t_k})")  # one bool per entry
    query_pos = np.arange(t_q)[:, None]  # (t_q, 1)
    key_pos = np.arange(t_k)[None, :]  # (1, t_k)
    return key_pos <= query_pos + offset  # (t_q, t_k)


def key_padding_mask(lengths: object, t_k: int | None = None) -> NDArray[np.bool_]:
    """Key-padding mask ``(B, t_k)``: ``True`` where source ``b`` has a real token (``j < len``).

    A batch of sentences of different lengths is padded on the right to one length ``t_k``
    (default: the longest); the padding positions must get zero weight, or every query spends
    part of its attention on filler. Pass it to attention as ``mask[:, None, :]`` ``(B, 1, t_k)``
    so that it broadcasts over the queries. PyTorch's ``key_padding_mask`` arguments use the
    opposite polarity: hand them ``~mask``.

    >>> key_padding_mask([3, 1, 2]).astype(int)
    array([[1, 1, 1],
           [1, 0, 0],
           [1, 1, 0]])
    """
    if hasattr(lengths, "detach"):
        lengths = lengths.detach().cpu().numpy()  # type: ignore[union-attr]
    arr = np.asarray(lengths)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"lengths must be a non-empty 1-d sequence of ints (B,); got shape {arr.shape}"
        )
    if not np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_:
        raise TypeError(f"lengths must hold ints; got dtype {arr.dtype}")
    if (arr < 1).any():
        raise ValueError(
            f"every length must be >= 1 (a source needs one real token); got {arr.tolist()}"
        )
    longest = int(arr.max())
    t_k = longest if t_k is None else check_int(t_k, "t_k", low=1)
    if t_k < longest:
        raise ValueError(f"t_k = {t_k} is shorter than the longest source (length {longest})")
    check_alloc((arr.size, t_k), 1, f"key_padding_mask(lengths, t_k={t_k})")
    return np.arange(t_k)[None, :] < arr[:, None]  # (B, t_k)
