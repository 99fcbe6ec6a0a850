"""Sparse attention patterns (稀疏注意力) as boolean masks, ``True`` = may attend.

Every pattern is a numpy bool array ``(t_q, t_k)``, so patterns combine with ``|`` (a key allowed by
either pattern) and ``&``; :func:`density` is the fraction of ``True`` entries, the fraction of the
``T_q × T_k`` scores a kernel that skips the masked ones would compute.

- :func:`sliding_window_mask`: local attention (Longformer's sliding window, Mistral 7B);
- :func:`dilated_window_mask`: a window with gaps (Longformer's dilated sliding window);
- :func:`strided_mask`: the strided pattern of the Sparse Transformer (Child et al. 2019);
- :func:`global_mask`: global tokens that see, and are seen by, every position (Longformer);
- :func:`random_mask`: a few random keys per query (BigBird's random attention);
- :func:`bigbird_mask`: window + global + random (Zaheer et al. 2020), at the level of tokens;
- :func:`block_sparse_mask` / :func:`block_layout`: a pattern of ``b × b`` tiles, the unit that
  fast kernels actually skip or compute.

>>> m = sliding_window_mask(5, window=2) | global_mask(5, [0])
>>> m.astype(int)
array([[1, 1, 1, 1, 1],
       [1, 1, 0, 0, 0],
       [1, 1, 1, 0, 0],
       [1, 0, 1, 1, 0],
       [1, 0, 0, 1, 1]])
>>> float(density(m))
0.64
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from .._validation import as_bool_array, check_alloc, check_bool, check_int, shape_str
from ..masks import diagonal_offset

__all__ = [
    "bigbird_mask",
    "block_layout",
    "block_sparse_mask",
    "density",
    "dilated_window_mask",
    "global_mask",
    "random_mask",
    "sliding_window_mask",
    "strided_mask",
]

Align = Literal["top_left", "bottom_right"]


def _distances(t: int, causal: bool, pattern: str) -> NDArray[np.int64]:
    """How far back key ``j`` lies from query ``i``, for every pair ``(t, t)``: the one quantity the
    distance-based patterns (dilated, strided) test.

    Causal: ``i - j`` (negative for a future key, which the pattern then rejects with
    ``>= 0``); two-sided: ``|i - j|``. ``pattern`` (e.g. ``"strided_mask(6)"``) names the caller
    in the error of a ``t`` too large to allocate.

    >>> _distances(3, True, "example")
    array([[ 0, -1, -2],
           [ 1,  0, -1],
           [ 2,  1,  0]])
    >>> _distances(3, False, "example")[0]
    array([0, 1, 2])
    """
    check_alloc((t, t), 24, pattern)  # int64 offsets and their temporaries
    back = np.arange(t)[:, None] - np.arange(t)[None, :]  # (t, t): i - j
    return back if causal else np.abs(back)  # (t, t)


def sliding_window_mask(
    t_q: int,
    t_k: int | None = None,
    *,
    window: int,
    causal: bool = True,
    align: Align = "top_left",
) -> NDArray[np.bool_]:
    """Local attention: each query sees the ``window`` nearest keys around its own position.

    - ``causal=True``: query ``i`` sees key ``j`` when ``i - window < j <= i`` (itself and the
      ``window - 1`` keys before it; Mistral 7B's sliding window, Jiang et al. 2023);
    - ``causal=False``: when ``|i - j| < window`` (``2 * window - 1`` keys centred on ``i``).

    When ``t_k != t_q`` the query positions must be anchored among the keys, as for
    :func:`course_utils.masks.causal_mask`: ``align="top_left"`` (default) puts query 0 at key 0;
    ``align="bottom_right"`` puts the last query at the last key, which is what decoding with a
    KV cache needs (``t_q`` new tokens after ``t_k - t_q`` cached ones): then query ``i`` stands at
    position ``i + t_k - t_q``. For ``t_q == t_k`` the two agree.

    >>> sliding_window_mask(4, window=2).astype(int)
    array([[1, 0, 0, 0],
           [1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])
    >>> sliding_window_mask(1, 5, window=3, align="bottom_right").astype(int)
    array([[0, 0, 1, 1, 1]])
    """
    t_q = check_int(t_q, "t_q", low=1)
    t_k = t_q if t_k is None else check_int(t_k, "t_k", low=1)
    window = check_int(window, "window", low=1)
    causal = check_bool(causal, "causal")
    shift = diagonal_offset(t_q, t_k, align)
    # two triangles and the band: three bools an entry
    check_alloc((t_q, t_k), 3, f"sliding_window_mask(t_q={t_q}, t_k={t_k})")
    # np.tri(N, M, k)[i, j] is j <= i + k: bands from two triangles, no (t_q, t_k) integer matrix
    # (at T = 16k that would be 2 GB of int64).
    if causal:  # i + shift - window < j <= i + shift
        upper = np.tri(t_q, t_k, shift, dtype=bool)  # (t_q, t_k): j <= i + shift
        return upper & ~np.tri(t_q, t_k, shift - window, dtype=bool)  # (t_q, t_k)
    upper = np.tri(t_q, t_k, shift + window - 1, dtype=bool)  # (t_q, t_k): j < i + shift + w
    return upper & ~np.tri(t_q, t_k, shift - window, dtype=bool)  # (t_q, t_k): and j > i+s-w


def dilated_window_mask(
    t: int, *, window: int, dilation: int, causal: bool = True
) -> NDArray[np.bool_]:
    """A window of ``window`` keys spaced ``dilation`` apart (Longformer's dilated window).

    Causal: query ``i`` sees ``j = i - m * dilation`` for ``m = 0 .. window - 1``, so it reaches
    ``(window - 1) * dilation`` positions back with the same ``window`` keys.
    Non-causal: ``|i - j| = m * dilation`` with ``m < window``. ``dilation=1`` is
    :func:`sliding_window_mask`.

    >>> dilated_window_mask(5, window=2, dilation=2).astype(int)
    array([[1, 0, 0, 0, 0],
           [0, 1, 0, 0, 0],
           [1, 0, 1, 0, 0],
           [0, 1, 0, 1, 0],
           [0, 0, 1, 0, 1]])
    """
    t = check_int(t, "t", low=1)
    window = check_int(window, "window", low=1)
    dilation = check_int(dilation, "dilation", low=1)
    causal = check_bool(causal, "causal")
    dist = _distances(t, causal, f"dilated_window_mask({t})")  # (t, t)
    return (dist >= 0) & (dist % dilation == 0) & (dist < window * dilation)  # (t, t)


def strided_mask(t: int, *, stride: int, causal: bool = True) -> NDArray[np.bool_]:
    """The strided pattern of the Sparse Transformer (Child et al. 2019, section 4.3).

    Causal (the paper's, autoregressive): query ``i`` sees key ``j <= i`` when
    ``i - j < stride`` (the local band of ``stride`` keys, the paper's ``A_i^(1)``) or when
    ``(i - j) mod stride = 0`` (every ``stride``-th key before it, ``A_i^(2)``). The paper writes
    the band as ``{max(0, i - stride), ..., i}``, ``stride + 1`` keys; its extra key
    ``i - stride`` is also in ``A^(2)``, so the union is the same. Two such layers connect every
    pair (see :func:`~course_utils.sparse.reach`).

    ``causal=False`` is the two-sided version (``|i - j| < stride`` or ``|i - j|`` a multiple of
    ``stride``), a natural extension for encoders, not a pattern from the paper.

    >>> strided_mask(6, stride=3).astype(int)
    array([[1, 0, 0, 0, 0, 0],
           [1, 1, 0, 0, 0, 0],
           [1, 1, 1, 0, 0, 0],
           [1, 1, 1, 1, 0, 0],
           [0, 1, 1, 1, 1, 0],
           [0, 0, 1, 1, 1, 1]])
    >>> strided_mask(7, stride=3)[6].astype(int)  # 4 and 5 (band), 3 and 0 (stride), itself
    array([1, 0, 0, 1, 1, 1, 1])
    """
    t = check_int(t, "t", low=1)
    stride = check_int(stride, "stride", low=1)
    causal = check_bool(causal, "causal")
    dist = _distances(t, causal, f"strided_mask({t})")  # (t, t)
    return (dist >= 0) & ((dist < stride) | (dist % stride == 0))  # (t, t)


def _positions(global_positions: Iterable[int] | Any, t: int) -> NDArray[np.int64]:
    if isinstance(global_positions, int | np.integer) and not isinstance(global_positions, bool):
        raise TypeError(
            "global_positions must be a list of positions, e.g. [0]; "
            f"got the int {global_positions}"
        )
    pos = np.asarray(
        list(global_positions) if not isinstance(global_positions, np.ndarray) else global_positions
    )
    if pos.size == 0:
        return np.zeros(0, dtype=np.int64)
    if pos.ndim != 1 or not np.issubdtype(pos.dtype, np.integer) or pos.dtype == np.bool_:
        raise TypeError(
            f"global_positions must be a 1-D list of int positions; got dtype {pos.dtype} "
            f"with shape {shape_str(pos.shape)}"
        )
    bad = pos[(pos < 0) | (pos >= t)]
    if bad.size:
        raise ValueError(f"global_positions must be in [0, {t - 1}] for t = {t}; got {bad[0]}")
    return pos.astype(np.int64)


def global_mask(t: int, global_positions: Iterable[int]) -> NDArray[np.bool_]:
    """Global tokens (Longformer, Beltagy et al. 2020): each one sees every position, and every
    position sees it. Rows and columns ``global_positions`` are ``True``, the rest ``False``
    (combine with a local pattern using ``|``).

    >>> global_mask(4, [1]).astype(int)
    array([[0, 1, 0, 0],
           [1, 1, 1, 1],
           [0, 1, 0, 0],
           [0, 1, 0, 0]])
    """
    t = check_int(t, "t", low=1)
    pos = _positions(global_positions, t)
    check_alloc((t, t), 1, f"global_mask({t})")
    mask = np.zeros((t, t), dtype=bool)  # (t, t)
    mask[pos, :] = True  # global queries see everything
    mask[:, pos] = True  # everything sees the global keys
    return mask


def random_mask(t: int, *, n_random: int, seed: int) -> NDArray[np.bool_]:
    """``n_random`` distinct keys per query, drawn uniformly (BigBird's random attention).

    Every row has exactly ``min(n_random, t)`` ``True`` entries; the same ``seed`` gives the same
    mask. ``n_random=0`` is the empty mask.

    >>> m = random_mask(6, n_random=2, seed=0)
    >>> m.sum(axis=1).tolist()
    [2, 2, 2, 2, 2, 2]
    >>> bool((m == random_mask(6, n_random=2, seed=0)).all())
    True
    """
    t = check_int(t, "t", low=1)
    n_random = check_int(n_random, "n_random", low=0)
    seed = check_int(seed, "seed", low=0)
    check_alloc((t, t), 17, f"random_mask({t})")  # float64 noise, int64 argsort, bool mask
    rng = np.random.default_rng(seed)
    n = min(n_random, t)
    # argsort of uniform noise = an independent random permutation per row; keep the first n.
    order = np.argsort(rng.random((t, t)), axis=1)[:, :n]  # (t, n): chosen keys of each query
    mask = np.zeros((t, t), dtype=bool)  # (t, t)
    np.put_along_axis(mask, order, True, axis=1)
    return mask


def bigbird_mask(
    t: int, *, window: int, n_global: int, n_random: int, seed: int
) -> NDArray[np.bool_]:
    """BigBird (Zaheer et al. 2020): a two-sided window, ``n_global`` global tokens (the first
    ones, as BigBird-ITC does) and ``n_random`` random keys per query, OR-ed together.

    BigBird itself works with blocks of tokens (its window is 3 blocks wide, its random keys are
    random blocks); this is the same idea at the level of single tokens.

    >>> m = bigbird_mask(8, window=2, n_global=1, n_random=1, seed=0)
    >>> bool(m[0].all() and m[:, 0].all())  # the global token
    True
    """
    t = check_int(t, "t", low=1)
    n_global = check_int(n_global, "n_global", low=0)
    if n_global > t:
        raise ValueError(f"n_global must be <= t = {t}; got {n_global}")
    check_alloc((t, t), 20, f"bigbird_mask({t})")  # the three masks and random_mask's noise
    local = sliding_window_mask(t, window=window, causal=False)  # (t, t)
    glob = global_mask(t, range(n_global))  # (t, t)
    rand = random_mask(t, n_random=n_random, seed=seed)  # (t, t)
    return local | glob | rand


def block_layout(mask: Any, block: int) -> NDArray[np.bool_]:
    """Which ``block × block`` tiles of ``mask`` hold at least one ``True``: ``(n_bq, n_bk)``.

    A block-sparse kernel computes whole tiles, so this layout (expanded back with
    :func:`block_sparse_mask`) is what it really costs. The last tiles may be partial.

    >>> block_layout(sliding_window_mask(4, window=2), 2).astype(int)
    array([[1, 0],
           [1, 1]])
    """
    m = _check_mask(mask)
    block = check_int(block, "block", low=1)
    t_q, t_k = m.shape
    n_bq, n_bk = -(-t_q // block), -(-t_k // block)
    padded = np.zeros((n_bq * block, n_bk * block), dtype=bool)  # (n_bq * b, n_bk * b)
    padded[:t_q, :t_k] = m
    tiles = padded.reshape(n_bq, block, n_bk, block)  # (n_bq, b, n_bk, b)
    return tiles.any(axis=(1, 3))  # (n_bq, n_bk)


def block_sparse_mask(layout: Any, block: int, t: int | None = None) -> NDArray[np.bool_]:
    """Expand a block layout ``(n_bq, n_bk)`` to a token mask: tile ``(a, b)`` of ``block × block``
    tokens is ``True`` when ``layout[a, b]`` is; cut to ``(t, t)`` if ``t`` is given.

    >>> block_sparse_mask([[True, False], [True, True]], 2).astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 0, 0],
           [1, 1, 1, 1],
           [1, 1, 1, 1]])
    """
    lay = as_bool_array(layout, "layout")
    if lay.ndim != 2 or 0 in lay.shape:
        raise ValueError(
            f"layout must have shape (n_blocks_q, n_blocks_k); got shape {shape_str(lay.shape)}"
        )
    block = check_int(block, "block", low=1)
    n_q, n_k = lay.shape[0] * block, lay.shape[1] * block
    check_alloc((n_q, n_k), 2, f"block_sparse_mask(layout {shape_str(lay.shape)}, {block})")
    full = np.kron(lay, np.ones((block, block), dtype=bool)).astype(bool)  # (n_bq*b, n_bk*b)
    if t is None:
        return full
    t = check_int(t, "t", low=1)
    if t > min(full.shape):
        raise ValueError(
            f"t must be <= {min(full.shape)} (the layout covers {shape_str(full.shape)} tokens); "
            f"got {t}"
        )
    return full[:t, :t]


def _check_mask(mask: Any, name: str = "mask") -> NDArray[np.bool_]:
    m = as_bool_array(mask, name)
    if m.ndim != 2 or 0 in m.shape:
        raise ValueError(f"{name} must have shape (t_q, t_k); got shape {shape_str(m.shape)}")
    return m


def density(mask: Any) -> float:
    """Fraction of allowed (query, key) pairs: ``mask.sum() / mask.size``, in ``[0, 1]``.

    >>> density(sliding_window_mask(4, window=2))
    0.4375
    """
    m = _check_mask(mask)
    return float(m.sum() / m.size)
