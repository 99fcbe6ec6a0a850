"""Positional information (位置信息): sinusoidal encodings, rotary embeddings (RoPE) and ALiBi.

Self-attention on its own does not know word order: permute the tokens and the outputs are
permuted the same way (permutation equivariance). This module holds the three ways of telling a
model where each token is that the course teaches (chapter 5):

- :func:`sinusoidal_encoding`: the fixed vectors *added* to the token embeddings in "Attention
  Is All You Need" (Vaswani et al. 2017, section 3.5),
  ``PE(p, 2i) = sin(p / base^(2i/d))`` and ``PE(p, 2i+1) = cos(p / base^(2i/d))``;
  :func:`sinusoid_shift_matrix` is the fixed linear map with ``PE(p + k) = M_k PE(p)``.
- :func:`apply_rope`: rotary position embedding (旋转位置编码; Su et al. 2021). Each 2-D pair of
  dimensions of a query or key is rotated by ``position * theta_i`` with
  ``theta_i = base^(-2i/d)`` (:func:`rope_frequencies`), so ``q_m · k_n`` depends only on
  ``m - n``. Two pairings exist: *rotate-half* (dimension ``i`` with ``i + d/2``, what GPT-NeoX and
  Hugging Face ``transformers`` use; the default) and *interleaved* (``2i`` with ``2i + 1``, the
  RoFormer paper's and Meta's reference Llama code's). They are the same up to the fixed
  permutation :func:`interleaved_to_half`, which Hugging Face's Llama converter applies once to the
  rows of ``W_Q`` and ``W_K`` so that Meta's checkpoints run with rotate-half.
- :func:`alibi_bias`: ALiBi (Press et al. 2022) adds ``-m_h * distance`` to the scores of head
  ``h`` instead of adding anything to the tokens; :func:`alibi_slopes` gives the paper's ``m_h``.

Learned absolute embeddings (BERT, GPT-2) are simply a trained ``(max_positions, d_model)`` table
(``torch.nn.Embedding``); the experiment in :mod:`course_utils.experiments.previous_token` uses one.

Numerics: angles are computed in float64 (``position * theta_i`` is exact enough even at position
10^6) and the rotation is applied in the input's dtype (float16/bfloat16 inputs are rotated in
float32 and cast back).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import torch
from numpy.typing import NDArray
from torch import Tensor

from ._validation import (
    check_alloc,
    check_bool,
    check_float_tensor,
    check_int,
    check_positive_finite,
    shape_str,
)
from .masks import diagonal_offset

__all__ = [
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "interleaved_to_half",
    "rope_frequencies",
    "rotation_matrix",
    "sinusoid_shift_matrix",
    "sinusoidal_encoding",
]


# --------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------


def _check_even(value: Any, name: str) -> int:
    value = check_int(value, name, low=2)
    if value % 2:
        raise ValueError(
            f"{name} must be even (the dimensions are used in pairs, one pair per frequency); "
            f"got {name} = {value}"
        )
    return value


def _check_base(base: Any) -> float:
    return check_positive_finite(base, "base")


# --------------------------------------------------------------------------------------------
# Sinusoidal encodings (Vaswani et al. 2017, section 3.5)
# --------------------------------------------------------------------------------------------


def rotation_matrix(angle: float) -> NDArray[np.float64]:
    """The 2-D rotation by ``angle`` radians (counter-clockwise), a float64 ``(2, 2)`` array.

    ``R(a) = [[cos a, -sin a], [sin a, cos a]]``. RoPE applies exactly this to every pair of
    dimensions (:func:`apply_rope`, with ``angle = position * theta_i``), so the facts it relies on
    are facts about ``R``: ``R(a) @ R(b) = R(a + b)``, ``R(a)`` keeps lengths, and
    ``(R(a) q) · (R(b) k) = q · R(b - a) k`` depends on ``b - a`` only.

    >>> rotation_matrix(math.pi / 2).round(12) + 0.0        # a quarter turn: x-axis to y-axis
    array([[ 0., -1.],
           [ 1.,  0.]])
    >>> bool(np.allclose(rotation_matrix(0.3) @ rotation_matrix(0.5), rotation_matrix(0.8)))
    True
    """
    a = float(angle)
    if not math.isfinite(a):
        raise ValueError(f"angle must be a finite number of radians; got {angle!r}")
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s], [s, c]])  # (2, 2)


def rope_frequencies(d: int, *, base: float = 10000.0) -> NDArray[np.float64]:
    """The ``d/2`` angular frequencies ``theta_i = base^(-2i/d)``, ``i = 0 .. d/2 - 1``.

    They are shared by the sinusoidal encoding (pair ``i`` oscillates as ``sin/cos(p * theta_i)``)
    and by RoPE (pair ``i`` turns by ``p * theta_i`` radians at position ``p``). The wavelength of
    pair ``i`` is ``2 pi / theta_i``: from ``2 pi`` (fastest) up to nearly ``2 pi * base``.

    >>> rope_frequencies(4, base=100.0)
    array([1. , 0.1])
    """
    d = _check_even(d, "d")
    base = _check_base(base)
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # (d/2,)


def sinusoidal_encoding(
    n_positions: int, d_model: int, *, base: float = 10000.0
) -> NDArray[np.float64]:
    """The sinusoidal position encodings, shape ``(n_positions, d_model)``, float64.

    ``PE[p, 2i] = sin(p / base^(2i/d_model))`` and ``PE[p, 2i+1] = cos(p / base^(2i/d_model))``
    (Vaswani et al. 2017, section 3.5): even columns hold sines, odd columns cosines, and columns
    ``2i`` and ``2i + 1`` share one frequency. Row ``p`` is added to the embedding of the token at
    position ``p``. An odd ``d_model`` is a ``ValueError``.

    >>> sinusoidal_encoding(2, 4).round(3)
    array([[0.   , 1.   , 0.   , 1.   ],
           [0.841, 0.54 , 0.01 , 1.   ]])
    """
    n_positions = check_int(n_positions, "n_positions", low=1)
    d_model = _check_even(d_model, "d_model")
    # float64 result, plus the angles and their sines and cosines: about 16 bytes an entry
    check_alloc(
        (n_positions, d_model), 16, f"sinusoidal_encoding({n_positions}, d_model={d_model})"
    )
    theta = rope_frequencies(d_model, base=base)  # (d_model/2,)
    angles = np.arange(n_positions, dtype=np.float64)[:, None] * theta[None, :]  # (P, d_model/2)
    pe = np.empty((n_positions, d_model), dtype=np.float64)  # (P, d_model)
    pe[:, 0::2] = np.sin(angles)  # (P, d_model/2): even columns
    pe[:, 1::2] = np.cos(angles)  # (P, d_model/2): odd columns
    return pe


def sinusoid_shift_matrix(k: int, d_model: int, *, base: float = 10000.0) -> NDArray[np.float64]:
    """The fixed matrix ``M_k`` of shape ``(d_model, d_model)`` with ``PE[p + k] = M_k @ PE[p]``.

    It is block diagonal: for each pair ``(sin, cos)`` of frequency ``theta_i`` the block is
    ``[[cos(k theta_i), sin(k theta_i)], [-sin(k theta_i), cos(k theta_i)]]`` (the angle-addition
    formulas). It depends on the offset ``k`` but not on the position ``p``: this is why a linear
    layer can learn to "look ``k`` tokens back" from these encodings. ``k`` may be negative.

    >>> pe = sinusoidal_encoding(10, 6)
    >>> bool(np.allclose(sinusoid_shift_matrix(3, 6) @ pe[2], pe[5]))
    True
    """
    k = check_int(k, "k")  # an offset in positions, of either sign
    d_model = _check_even(d_model, "d_model")
    angle = int(k) * rope_frequencies(d_model, base=base)  # (d_model/2,)
    c, s = np.cos(angle), np.sin(angle)  # (d_model/2,) each
    m = np.zeros((d_model, d_model), dtype=np.float64)  # (d_model, d_model)
    m[0::2, 0::2] = np.diag(c)  # sin row from sin: cos(k theta)
    m[0::2, 1::2] = np.diag(s)  # sin row from cos: + sin(k theta)
    m[1::2, 0::2] = np.diag(-s)  # cos row from sin: - sin(k theta)
    m[1::2, 1::2] = np.diag(c)  # cos row from cos: cos(k theta)
    return m


# --------------------------------------------------------------------------------------------
# Rotary position embedding (Su et al. 2021)
# --------------------------------------------------------------------------------------------


def interleaved_to_half(d: int) -> Tensor:
    """The permutation ``perm`` (a ``(d,)`` long tensor) that turns interleaved pairs into halves.

    ``x[..., perm]`` puts the even dimensions ``0, 2, 4, ...`` first and the odd ones after, so the
    interleaved pair ``(2i, 2i + 1)`` becomes the rotate-half pair ``(i, i + d/2)``. Hence
    ``apply_rope(x, interleaved=True)[..., perm] == apply_rope(x[..., perm])``. Permuting the
    dimensions of both q and k leaves every dot product unchanged, so the two pairings give the
    same scores when the projection weights are permuted accordingly (this is how Hugging Face
    converts Meta's Llama checkpoints).

    >>> interleaved_to_half(6)
    tensor([0, 2, 4, 1, 3, 5])
    """
    d = _check_even(d, "d")
    return torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])  # (d,)


def _as_x(x: Any) -> Tensor:
    if isinstance(x, np.ndarray):
        if not np.issubdtype(x.dtype, np.floating):
            raise TypeError(
                f"x must be a floating-point tensor (..., T, d); got a numpy array of dtype "
                f"{x.dtype} with shape {shape_str(x.shape)}"
            )
        x = torch.from_numpy(np.ascontiguousarray(x))  # numpy in -> torch out (documented)
    x = check_float_tensor(x, "x", "(..., T, d)", min_ndim=2, numpy_ok=True)
    if x.shape[-1] % 2:
        raise ValueError(
            f"x must have an even last dimension d (RoPE rotates pairs of dimensions); "
            f"got shape {shape_str(tuple(x.shape))} with d = {x.shape[-1]}"
        )
    return x


def _as_positions(positions: Any, x: Tensor) -> Tensor:
    """Integer positions aligned with ``x.shape[:-1]``: ``(T,)`` or the full ``x.shape[:-1]``."""
    T = x.shape[-2]
    lead = tuple(x.shape[:-1])  # (..., T)
    want = f"(T,) = ({T},) or x.shape[:-1] = {shape_str(lead)} (dims of size 1 broadcast)"
    if positions is None:
        return torch.arange(T, device=x.device)  # (T,)
    if isinstance(positions, np.ndarray | list | tuple | range):
        arr = np.asarray(positions)
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(
                f"positions must hold integers (token indices); got dtype {arr.dtype} "
                f"with shape {shape_str(arr.shape)}"
            )
        positions = torch.from_numpy(arr.astype(np.int64))
    if not isinstance(positions, Tensor):
        raise TypeError(
            f"positions must be an integer torch.Tensor of shape {want}; "
            f"got {type(positions).__name__}"
        )
    if positions.is_floating_point() or positions.is_complex() or positions.dtype == torch.bool:
        raise TypeError(
            f"positions must be an integer tensor (token indices); got dtype {positions.dtype} "
            f"with shape {shape_str(tuple(positions.shape))}; use .long() if they are whole numbers"
        )
    shape = tuple(positions.shape)
    ok = shape == (T,) or (
        len(shape) == len(lead)
        and shape[-1] == T
        and all(p in (1, s) for p, s in zip(shape, lead, strict=True))
    )
    if not ok:
        hint = ""
        if len(shape) == 2 and len(lead) == 3 and shape[0] == lead[0] and shape[1] == T:
            hint = (
                "; for (B, T) position ids and x of shape (B, h, T, d) pass positions[:, None, :]"
            )
        raise ValueError(f"positions must have shape {want}; got shape {shape_str(shape)}{hint}")
    return positions.to(x.device)


def apply_rope(
    x: Any,
    positions: Any = None,
    *,
    base: float = 10000.0,
    interleaved: bool = False,
) -> Tensor:
    """Rotate every 2-D pair of dimensions of ``x`` by ``position * theta_i`` (RoPE, 旋转位置编码).

    Parameters
    ----------
    x:
        Queries or keys, ``(..., T, d)`` with an even ``d`` (e.g. ``(B, n_heads, T, d_k)``); a
        floating-point ``torch.Tensor``. A float numpy array is accepted and converted with
        ``torch.from_numpy``; the result is always a ``torch.Tensor`` of ``x``'s dtype.
    positions:
        Integer positions (a torch integer tensor, or an int numpy array/list): ``(T,)``, shared by
        every leading index, or the full ``x.shape[:-1]`` (dims of size 1 broadcast), e.g.
        ``(B, 1, T)`` for per-sequence positions with heads. ``None`` means ``0 .. T-1``. Negative
        positions are allowed (a rotation backwards). Float or bool positions are a ``TypeError``.
    base:
        ``theta_i = base^(-2i/d)``. 10000 in the RoFormer paper and Llama 2; SmolLM2-135M uses
        100000; long-context models raise it further.
    interleaved:
        ``False`` (default): rotate-half pairing, dimension ``i`` with ``i + d/2``, as in GPT-NeoX
        and ``transformers``' ``apply_rotary_pos_emb`` (its Llama models included). ``True``: the
        pairing of ``2i`` with ``2i + 1`` of the RoFormer paper and Meta's reference Llama code.

    Each pair ``(a, b)`` becomes ``(a cos(p theta_i) - b sin(p theta_i),
    a sin(p theta_i) + b cos(p theta_i))``: a rotation, so norms are preserved and
    ``apply_rope(q, m) · apply_rope(k, n)`` depends only on ``m - n``.

    >>> q = torch.tensor([[1.0, 0.0]])          # (T=1, d=2): one pair, theta_0 = 1
    >>> apply_rope(q, torch.tensor([1])).round(decimals=4)   # turned by 1 radian
    tensor([[0.5403, 0.8415]])
    >>> x = torch.randn(3, 8)
    >>> perm = interleaved_to_half(8)
    >>> torch.allclose(apply_rope(x, interleaved=True)[..., perm], apply_rope(x[..., perm]))
    True
    """
    x = _as_x(x)
    interleaved = check_bool(interleaved, "interleaved")
    d = x.shape[-1]
    pos = _as_positions(positions, x)  # (T,) or (..., T)
    theta = torch.from_numpy(rope_frequencies(d, base=base)).to(x.device)  # (d/2,) float64
    angles = pos.to(torch.float64)[..., None] * theta  # (..., T, d/2)
    work = x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float32
    cos = angles.cos().to(work)  # (..., T, d/2)
    sin = angles.sin().to(work)  # (..., T, d/2)
    xw = x.to(work)  # (..., T, d)
    if interleaved:
        a, b = xw[..., 0::2], xw[..., 1::2]  # (..., T, d/2) each: pairs (2i, 2i+1)
    else:
        a, b = xw[..., : d // 2], xw[..., d // 2 :]  # (..., T, d/2) each: pairs (i, i+d/2)
    ra = a * cos - b * sin  # (..., T, d/2): first member of each rotated pair
    rb = a * sin + b * cos  # (..., T, d/2): second member
    if interleaved:  # back to the order 2i, 2i+1
        return torch.stack([ra, rb], dim=-1).flatten(-2).to(x.dtype)  # (..., T, d)
    return torch.cat([ra, rb], dim=-1).to(x.dtype)  # (..., T, d)


# --------------------------------------------------------------------------------------------
# ALiBi (Press et al. 2022)
# --------------------------------------------------------------------------------------------


def alibi_slopes(n_heads: int) -> Tensor:
    """The per-head slopes ``m_h`` of ALiBi, a float64 tensor of shape ``(n_heads,)``.

    For ``n`` a power of two the slopes are the geometric sequence that starts at
    ``2^(-8/n)`` with ratio ``2^(-8/n)``: ``1/2, 1/4, ..., 1/256`` for 8 heads (Press et al.
    2022, section 3). For other ``n`` the reference code takes the slopes of the closest smaller
    power of two ``c`` and adds every other slope of ``2c`` heads, the first ``n - c`` of them.

    >>> alibi_slopes(8).tolist()
    [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625]
    """
    n_heads = check_int(n_heads, "n_heads", low=1)

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)  # = 2^(-2^-(log2(n) - 3)) in the reference code
        return [start ** (i + 1) for i in range(n)]

    def slopes(n: int) -> list[float]:
        if n & (n - 1) == 0:  # a power of two
            return power_of_two(n)
        closest = 2 ** math.floor(math.log2(n))
        return power_of_two(closest) + slopes(2 * closest)[0::2][: n - closest]

    return torch.tensor(slopes(n_heads), dtype=torch.float64)  # (n_heads,)


def alibi_bias(
    n_heads: int,
    t_q: int,
    t_k: int | None = None,
    *,
    align: Literal["top_left", "bottom_right"] = "top_left",
) -> Tensor:
    """The ALiBi bias ``-m_h * |i - j|`` to add to the scores: ``(n_heads, t_q, t_k)``, float32.

    Press et al. (2022) add ``-m_h * (i - j)`` to the score of query ``i`` and key ``j <= i`` of
    head ``h`` in a causal model, with the slopes :func:`alibi_slopes`. Here the bias is defined for
    every pair as the distance penalty ``-m_h * |i - j|``: where a causal mask lets a query see a
    key (``j <= i``) this is exactly the paper's value, and the other half is what a bidirectional
    model would use. Add it to the scores *before* the softmax (and before any mask).

    ``t_k`` defaults to ``t_q``. ``align`` places the queries when ``t_k != t_q``, as in
    :func:`course_utils.masks.causal_mask`: ``"top_left"`` puts query ``i`` at position ``i``,
    ``"bottom_right"`` puts the last query at the last key (a KV cache).

    >>> alibi_bias(2, 3)[0]
    tensor([[ 0.0000, -0.0625, -0.1250],
            [-0.0625,  0.0000, -0.0625],
            [-0.1250, -0.0625,  0.0000]])
    """
    slopes = alibi_slopes(n_heads)  # (n_heads,)
    t_q = check_int(t_q, "t_q", low=1)
    t_k = t_q if t_k is None else check_int(t_k, "t_k", low=1)
    offset = diagonal_offset(t_q, t_k, align)
    # float64 bias and its + 0.0 copy, float32 result: about 24 bytes an entry (and one distance)
    check_alloc((n_heads, t_q, t_k), 24, f"alibi_bias({n_heads}, t_q={t_q}, t_k={t_k})")
    query_pos = torch.arange(t_q, dtype=torch.float64)[:, None] + offset  # (t_q, 1)
    key_pos = torch.arange(t_k, dtype=torch.float64)[None, :]  # (1, t_k)
    distance = (query_pos - key_pos).abs()  # (t_q, t_k)
    bias = -slopes[:, None, None] * distance  # (n_heads, t_q, t_k)
    return (bias + 0.0).to(torch.float32)  # + 0.0 turns -0.0 on the diagonal into 0.0
