"""Positional information (位置信息): sinusoidal encodings, rotary embeddings (RoPE) and ALiBi.

Self-attention on its own does not know word order: permute the tokens and the outputs are
permuted the same way (permutation equivariance). This module holds the ways of telling a model
where each token is that the course teaches (chapter 5), and how they stretch to long contexts:

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
- :func:`rope_inverse_frequencies`: RoPE's frequencies for contexts longer than the trained one,
  as the ``rope_scaling`` entry of a model config sets them: position interpolation ("linear"),
  dynamic NTK ("dynamic"), YaRN ("yarn") and Llama 3.1's scaling ("llama3"); equal to what
  ``transformers`` computes when it loads such a model.
- Relative positions as table indices: :func:`shaw_relative_positions` (Shaw et al. 2018, one
  learned vector per clipped distance) and :func:`t5_relative_bucket` (T5, Raffel et al. 2020:
  one learned bias per logarithmic bucket of distances).

Learned absolute embeddings (BERT, GPT-2) are simply a trained ``(max_positions, d_model)`` table
(``torch.nn.Embedding``); the experiment in :mod:`course_utils.experiments.previous_token` uses one.

Numerics: angles are computed in float64 (``position * theta_i`` is exact enough even at position
10^6) and the rotation is applied in the input's dtype (float16/bfloat16 inputs are rotated in
float32 and cast back).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
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
    "ROPE_TYPES",
    "ScaledRoPE",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "interleaved_to_half",
    "rope_frequencies",
    "rope_inverse_frequencies",
    "rotate_by_rope",
    "rotation_matrix",
    "shaw_relative_positions",
    "sinusoid_shift_matrix",
    "sinusoidal_encoding",
    "t5_relative_bucket",
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
    check_alloc((d_model, d_model), 8, f"sinusoid_shift_matrix(d_model={d_model})")
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


def _as_int_tensor(x: Any, name: str, expected: str) -> Tensor:
    """An int64 torch tensor (numpy integer arrays, ranges and lists of ints are converted);
    ``expected`` says what the values are, in the errors. One conversion for positions and
    relative positions alike."""
    if not isinstance(x, Tensor):
        if not isinstance(x, np.ndarray | list | tuple | range | int | np.integer) or isinstance(
            x, bool
        ):
            raise TypeError(
                f"{name} must be an integer torch.Tensor {expected}; got {type(x).__name__}"
            )
        arr = np.asarray(x)
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(
                f"{name} must hold integers {expected}; got dtype {arr.dtype} "
                f"with shape {shape_str(arr.shape)}"
            )
        x = torch.from_numpy(arr.astype(np.int64))
    if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        raise TypeError(
            f"{name} must be an integer tensor {expected}; got dtype {x.dtype} with shape "
            f"{shape_str(tuple(x.shape))}; use .long() if the values are whole numbers"
        )
    return x.to(torch.int64)


def _as_positions(positions: Any, x: Tensor) -> Tensor:
    """Integer positions aligned with ``x.shape[:-1]``: ``(T,)`` or the full ``x.shape[:-1]``."""
    T = x.shape[-2]
    lead = tuple(x.shape[:-1])  # (..., T)
    want = f"(T,) = ({T},) or x.shape[:-1] = {shape_str(lead)} (dims of size 1 broadcast)"
    if positions is None:
        return torch.arange(T, device=x.device)  # (T,)
    if not isinstance(positions, Tensor | np.ndarray | list | tuple | range):
        raise TypeError(
            f"positions must be an integer torch.Tensor of shape {want}; "
            f"got {type(positions).__name__}"
        )
    positions = _as_int_tensor(positions, "positions", "(token indices)")
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


def _as_inv_freq(inv_freq: Any, d: int) -> Tensor:
    """``inv_freq`` as a float64 ``(d/2,)`` tensor of positive finite frequencies, or an error
    that names it, its shape or values, and what was expected."""
    if isinstance(inv_freq, Tensor):
        arr = inv_freq.detach().cpu().to(torch.float64)
    elif isinstance(inv_freq, np.ndarray | list | tuple):
        try:
            arr = torch.as_tensor(np.asarray(inv_freq, dtype=np.float64))
        except (TypeError, ValueError) as err:
            raise TypeError(
                f"inv_freq must hold numbers, shape (d/2,) = ({d // 2},); got {inv_freq!r}"
            ) from err
    else:
        raise TypeError(
            f"inv_freq must be a tensor of shape (d/2,) = ({d // 2},) (the frequencies of "
            f"rope_inverse_frequencies); got {type(inv_freq).__name__}"
        )
    if tuple(arr.shape) != (d // 2,):
        raise ValueError(
            f"inv_freq must have shape (d/2,) = ({d // 2},) for x with d = {d}; got shape "
            f"{shape_str(tuple(arr.shape))}"
        )
    if not bool(torch.isfinite(arr).all()) or not bool((arr > 0).all()):
        raise ValueError(
            f"inv_freq must hold positive finite frequencies; got min {float(arr.min())!r}, "
            f"max {float(arr.max())!r}"
        )
    return arr


def apply_rope(
    x: Any,
    positions: Any = None,
    *,
    base: float = 10000.0,
    interleaved: bool = False,
    inv_freq: Any = None,
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
    inv_freq:
        The ``d/2`` frequencies to use instead of ``base^(-2i/d)`` (then ``base`` is not read):
        the scaled ones of a long-context model, :func:`rope_inverse_frequencies`. Its
        ``attention_factor`` (YaRN's) multiplies cos and sin, i.e. the rotated query and key:
        ``apply_rope(q, p, inv_freq=f) * attention_factor``. Positive finite numbers,
        shape ``(d/2,)``.

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
    >>> slow, _ = rope_inverse_frequencies(2, scaling={"rope_type": "linear", "factor": 4.0})
    >>> apply_rope(q, torch.tensor([4]), inv_freq=slow).round(decimals=4)  # position 4 turns 1 rad
    tensor([[0.5403, 0.8415]])
    """
    x = _as_x(x)
    interleaved = check_bool(interleaved, "interleaved")
    d = x.shape[-1]
    pos = _as_positions(positions, x)  # (T,) or (..., T)
    if inv_freq is None:
        theta = torch.from_numpy(rope_frequencies(d, base=base)).to(x.device)  # (d/2,) float64
    else:
        theta = _as_inv_freq(inv_freq, d).to(x.device)  # (d/2,) float64
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
# RoPE for long contexts: the scaled frequencies of a model config's ``rope_scaling``
# --------------------------------------------------------------------------------------------

#: The ``rope_type`` values :func:`rope_inverse_frequencies` understands.
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3")

#: The keys each type reads besides ``rope_type``/``type`` and ``rope_theta`` (the same required
#: and optional keys as ``transformers``' validators): required first, then optional.
_ROPE_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "default": (frozenset(), frozenset()),
    "linear": (frozenset({"factor"}), frozenset()),
    "dynamic": (frozenset({"factor"}), frozenset()),
    "yarn": (
        frozenset({"factor", "original_max_position_embeddings"}),
        frozenset(
            {"attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"}
        ),
    ),
    "llama3": (
        frozenset(
            {"factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"}
        ),
        frozenset(),
    ),
}


def _scaling_number(params: dict[str, Any], key: str, *, low: float | None = None) -> float:
    """``params[key]`` as a finite float (``> 0``, or ``>= low``); the message names the key."""
    value = params[key]
    name = f"scaling[{key!r}]"
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a number; got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value) or (value < low if low is not None else value <= 0):
        want = f">= {low:g}" if low is not None else "> 0"
        raise ValueError(f"{name} must be a finite number {want}; got {value!r}")
    return value


def _read_scaling(
    scaling: Any, base: float, max_position_embeddings: int | None
) -> tuple[str, dict[str, Any]]:
    """Check a ``rope_scaling`` dict; return its type and its parameters (``None`` = absent)."""
    if scaling is None:
        return "default", {}
    if not isinstance(scaling, dict):
        raise TypeError(
            f"scaling must be None or a dict in the rope_scaling format of model configs, e.g. "
            f"{{'rope_type': 'linear', 'factor': 4.0}}; got {type(scaling).__name__} {scaling!r}"
        )
    params = {k: v for k, v in scaling.items() if v is not None}  # a None value = key absent
    rope_type = params.pop("rope_type", None)
    old_type = params.pop("type", None)  # the older spelling of the key
    if rope_type is not None and old_type is not None and rope_type != old_type:
        raise ValueError(
            f"scaling has rope_type {rope_type!r} and type {old_type!r}; they must agree "
            f"('type' is the older name of 'rope_type')"
        )
    rope_type = rope_type if rope_type is not None else old_type
    if rope_type is None:
        raise ValueError(
            f"scaling must name its type with the key 'rope_type' (or the older 'type'), one of "
            f"{list(ROPE_TYPES)}; got the keys {sorted(scaling)}"
        )
    if rope_type not in ROPE_TYPES:
        raise ValueError(
            f"scaling['rope_type'] must be one of {list(ROPE_TYPES)}; got {rope_type!r}"
        )
    if "rope_theta" in params:  # transformers 5 keeps the base in the same dict
        theta = _scaling_number(params, "rope_theta")
        if theta != base:
            raise ValueError(
                f"scaling['rope_theta'] = {theta!r} differs from base = {base!r}; pass "
                f"base={theta!r} (the RoPE base of the model)"
            )
        del params["rope_theta"]
    required, optional = _ROPE_KEYS[rope_type]
    unknown = sorted(set(params) - required - optional)
    if unknown:
        raise ValueError(
            f"scaling has keys {unknown} that rope_type {rope_type!r} does not read; it reads "
            f"{sorted(required | optional)} (besides 'rope_type' and 'rope_theta')"
        )
    # Like transformers, a missing pretraining length falls back to max_position_embeddings.
    if "original_max_position_embeddings" in required and max_position_embeddings is not None:
        params.setdefault("original_max_position_embeddings", max_position_embeddings)
    needed = sorted(required)
    missing = [key for key in needed if key not in params]
    if missing:
        hint = (
            " (or pass max_position_embeddings, its fallback)"
            if "original_max_position_embeddings" in missing
            else ""
        )
        raise ValueError(
            f"scaling with rope_type {rope_type!r} needs the keys {needed}; missing {missing}{hint}"
        )
    if "factor" in params:
        params["factor"] = _scaling_number(params, "factor", low=1.0)  # < 1 would shrink context
    if "original_max_position_embeddings" in params:
        params["original_max_position_embeddings"] = check_int(
            params["original_max_position_embeddings"],
            "scaling['original_max_position_embeddings']",
            low=1,
        )
    return rope_type, params


def _linear_inverse_frequencies(theta: Tensor, factor: float) -> Tensor:
    """Position interpolation (Chen et al. 2023, ``chen2023extending``): ``theta_i / s``.

    The paper feeds position ``m * L / L'`` instead of ``m`` (``s = L' / L``, the new context
    over the trained one), so that every angle stays inside the trained range; since the angle is
    ``m * theta_i``, that is the same as dividing every frequency by ``s``.
    """
    return theta / factor  # (d/2,)


def _dynamic_base(
    base: float, head_dim: int, factor: float, max_position_embeddings: int, seq_len: int
) -> float:
    """The base of dynamic NTK scaling for a sequence of ``seq_len`` tokens.

    NTK-aware scaling (bloc97 2023, ``bloc97ntk2023``) keeps the frequencies' shape and raises the
    base instead: ``base' = base * s^(d / (d - 2))``, which divides the slowest frequency by ``s``
    and leaves the fastest (``theta_0 = 1``) alone. Dynamic NTK (emozilla 2023,
    ``emozilla2023dynamic``) picks ``s`` from the current length ``T`` rather than fixing it:
    ``s_T = s * T / L - (s - 1)`` for ``T > L`` (the trained length ``L``), and ``s_T = 1``
    (plain RoPE) while ``T <= L``.
    """
    seq_len = max(seq_len, max_position_embeddings)  # never shrink below the trained length
    # the expression and its order of operations are transformers', so floats agree to the bit
    return base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (
        head_dim / (head_dim - 2)
    )


def _yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """YaRN's attention temperature ``sqrt(1/t) = 0.1 * mscale * ln(s) + 1`` (1 when ``s <= 1``)."""
    if factor <= 1:
        return 1.0
    return 0.1 * mscale * math.log(factor) + 1.0


def _yarn_pair_index(turns: float, head_dim: int, base: float, original_max: int) -> float:
    """The (fractional) pair index ``i`` whose wavelength fits ``turns`` times in ``L`` tokens.

    Pair ``i`` has wavelength ``2 pi base^(2i/d)``; solving ``L / (2 pi base^(2i/d)) = turns``
    gives ``i = d ln(L / (2 pi turns)) / (2 ln base)``.
    """
    return (head_dim * math.log(original_max / (turns * 2 * math.pi))) / (2 * math.log(base))


def _yarn_inverse_frequencies(
    theta: Tensor, head_dim: int, base: float, params: dict[str, Any]
) -> tuple[Tensor, float]:
    """YaRN (Peng et al. 2023, ``peng2023yarn``): interpolate slow pairs only, and cool attention.

    With ``r_i = L / lambda_i`` the number of turns pair ``i`` makes in the trained length ``L``
    (``lambda_i = 2 pi / theta_i``), the paper's "NTK-by-parts" frequencies are
    ``h(theta_i) = (1 - gamma_i) theta_i / s + gamma_i theta_i``: pairs that turn more than
    ``beta`` times (``beta_fast``, 32) keep their frequency (``gamma = 1``), pairs that turn less
    than ``alpha`` times (``beta_slow``, 1) are interpolated like position interpolation
    (``gamma = 0``), and ``gamma`` ramps linearly in between. As in the authors' code and in
    ``transformers``, the ramp is linear in the pair index ``i`` (between the pairs making
    ``beta_fast`` and ``beta_slow`` turns, rounded outwards when ``truncate``), not in ``r``.
    The softmax temperature ``sqrt(1/t) = 0.1 ln(s) + 1`` multiplies cos and sin (the returned
    ``attention_factor``); DeepSeek's variant divides two of them
    (``mscale(s, mscale) / mscale(s, mscale_all_dim)``), and an explicit ``attention_factor``
    wins over both.
    """
    factor = params["factor"]
    original_max = params["original_max_position_embeddings"]
    if "attention_factor" in params:
        attention_factor = _scaling_number(params, "attention_factor")
    else:
        mscale = _scaling_number(params, "mscale", low=0.0) if "mscale" in params else 0.0
        mscale_all = (
            _scaling_number(params, "mscale_all_dim", low=0.0)
            if "mscale_all_dim" in params
            else 0.0
        )
        if mscale and mscale_all:  # both given and non-zero, as transformers reads them
            attention_factor = _yarn_mscale(factor, mscale) / _yarn_mscale(factor, mscale_all)
        else:
            attention_factor = _yarn_mscale(factor)
    beta_fast = _scaling_number(params, "beta_fast") if "beta_fast" in params else 32.0
    beta_slow = _scaling_number(params, "beta_slow") if "beta_slow" in params else 1.0
    if beta_fast < beta_slow:
        raise ValueError(
            f"scaling['beta_fast'] must be >= scaling['beta_slow'] (fast pairs turn more often); "
            f"got beta_fast = {beta_fast!r} and beta_slow = {beta_slow!r}"
        )
    truncate = check_bool(params.get("truncate", True), "scaling['truncate']")

    low = _yarn_pair_index(beta_fast, head_dim, base, original_max)  # last pair kept as is
    high = _yarn_pair_index(beta_slow, head_dim, base, original_max)  # first pair fully scaled
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    if low == high:
        high += 0.001  # transformers' guard against a zero-width ramp
    pair = torch.arange(head_dim // 2, dtype=torch.float64)  # (d/2,)
    ramp = torch.clamp((pair - low) / (high - low), 0, 1)  # (d/2,): 0 = keep, 1 = interpolate
    keep = 1 - ramp  # (d/2,): gamma_i, the share of the original frequency
    inv_freq = (theta / factor) * (1 - keep) + theta * keep  # (d/2,)
    return inv_freq, float(attention_factor)


def _llama3_inverse_frequencies(theta: Tensor, params: dict[str, Any]) -> Tensor:
    """Llama 3.1's frequency scaling (``llamateam2024llama3``; Meta's ``apply_scaling``).

    With ``lambda_i = 2 pi / theta_i`` and the trained length ``L``: pairs with
    ``lambda_i < L / high_freq_factor`` (fast, local) keep ``theta_i``; pairs with
    ``lambda_i > L / low_freq_factor`` (slow) become ``theta_i / s``; in between,
    ``(1 - g) theta_i / s + g theta_i`` with
    ``g = (L / lambda_i - low_freq_factor) / (high_freq_factor - low_freq_factor)``, which is
    continuous at both ends. (The report gives the factors, 8, 1 and 4 with ``L = 8192``; the
    formula is that of Meta's reference code, which ``transformers`` copies.)
    """
    factor = params["factor"]
    low_freq_factor = _scaling_number(params, "low_freq_factor")
    high_freq_factor = _scaling_number(params, "high_freq_factor")
    if high_freq_factor <= low_freq_factor:
        raise ValueError(
            f"scaling['high_freq_factor'] must be > scaling['low_freq_factor']; got "
            f"high_freq_factor = {high_freq_factor!r} and low_freq_factor = {low_freq_factor!r}"
        )
    original_max = params["original_max_position_embeddings"]
    low_freq_wavelen = original_max / low_freq_factor  # longer than this: divide by s
    high_freq_wavelen = original_max / high_freq_factor  # shorter than this: keep
    wavelen = 2 * math.pi / theta  # (d/2,)
    smooth = (original_max / wavelen - low_freq_factor) / (
        high_freq_factor - low_freq_factor
    )  # (d/2,): 0 at low_freq_wavelen, 1 at high_freq_wavelen
    smoothed = (1 - smooth) * theta / factor + smooth * theta  # (d/2,)
    inv_freq = torch.where(wavelen > low_freq_wavelen, theta / factor, smoothed)  # (d/2,)
    return torch.where(wavelen < high_freq_wavelen, theta, inv_freq)  # (d/2,)


def rope_inverse_frequencies(
    head_dim: int,
    base: float = 10000.0,
    scaling: dict[str, Any] | None = None,
    *,
    max_position_embeddings: int | None = None,
    seq_len: int | None = None,
) -> tuple[Tensor, float]:
    """RoPE's frequencies for a long context: ``(inv_freq, attention_factor)``, as models load them.

    A model trained on ``L`` tokens meets angles ``m * theta_i`` it never saw once ``m > L``. The
    ``rope_scaling`` entry of a model config (``scaling`` here, same format) says how its
    frequencies were changed to reach a context ``s`` times longer (``s`` = ``factor``):

    - ``None`` or ``"default"``: plain RoPE, ``theta_i = base^(-2i/d)`` (:func:`rope_frequencies`).
    - ``"linear"``: position interpolation, every ``theta_i / s`` (Chen et al. 2023).
    - ``"dynamic"``: dynamic NTK, a larger base chosen from the current length ``seq_len``
      (bloc97 2023; emozilla 2023); needs ``max_position_embeddings`` (the trained ``L``);
      ``seq_len=None`` means ``L``, i.e. plain RoPE, as ``transformers`` computes at load time.
    - ``"yarn"``: YaRN (Peng et al. 2023): fast pairs kept, slow pairs interpolated, a ramp in
      between, and an ``attention_factor`` > 1 that multiplies cos and sin. Reads ``factor``,
      ``original_max_position_embeddings``, and optionally ``beta_fast`` (32), ``beta_slow`` (1),
      ``mscale``, ``mscale_all_dim``, ``truncate`` (True) and ``attention_factor``.
    - ``"llama3"``: Llama 3.1's scaling: fast pairs kept, slow ones divided by ``s``, a smooth
      blend in between; reads ``factor``, ``low_freq_factor``, ``high_freq_factor`` and
      ``original_max_position_embeddings``.

    The older key ``"type"`` is accepted for ``"rope_type"``; a ``"rope_theta"`` key must equal
    ``base``. Where ``original_max_position_embeddings`` is missing, ``max_position_embeddings``
    stands in (as in ``transformers``). The result equals ``transformers``'
    ``ROPE_INIT_FUNCTIONS[rope_type]`` computed in float64 (``inv_freq`` is float64 here, shape
    ``(head_dim // 2,)``; ``attention_factor`` is 1.0 except for YaRN). Pass ``inv_freq`` where
    RoPE's ``theta`` goes: pair ``i`` turns by ``position * inv_freq[i]``.

    >>> inv_freq, attention = rope_inverse_frequencies(8, 100.0, {"rope_type": "linear",
    ...                                                           "factor": 4.0})
    >>> inv_freq
    tensor([0.2500, 0.0791, 0.0250, 0.0079], dtype=torch.float64)
    >>> yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}
    >>> inv_freq, attention = rope_inverse_frequencies(128, 10000.0, yarn)
    >>> round(attention, 4)                    # 0.1 ln 4 + 1
    1.1386
    >>> float(inv_freq[0]), bool(inv_freq[-1] == rope_frequencies(128)[-1] / 4)  # kept; / s
    (1.0, True)
    """
    head_dim = _check_even(head_dim, "head_dim")
    base = _check_base(base)
    if max_position_embeddings is not None:
        max_position_embeddings = check_int(
            max_position_embeddings, "max_position_embeddings", low=1
        )
    if seq_len is not None:
        seq_len = check_int(seq_len, "seq_len", low=1)
    rope_type, params = _read_scaling(scaling, base, max_position_embeddings)
    theta = torch.from_numpy(rope_frequencies(head_dim, base=base))  # (d/2,) float64

    if rope_type == "default":
        return theta, 1.0
    if rope_type == "linear":
        return _linear_inverse_frequencies(theta, params["factor"]), 1.0
    if rope_type == "dynamic":
        if max_position_embeddings is None and seq_len is None:
            # No length yet: the base grows only past the trained length, so this is plain RoPE,
            # what transformers computes when it loads such a model.
            return theta, 1.0
        if max_position_embeddings is None:
            raise ValueError(
                "rope_type 'dynamic' needs max_position_embeddings (the context length the model "
                "was trained with, L): the base grows once seq_len exceeds it; got None"
            )
        if head_dim < 4:
            raise ValueError(
                f"rope_type 'dynamic' needs head_dim >= 4 (its exponent is d / (d - 2)); "
                f"got head_dim = {head_dim}"
            )
        length = max_position_embeddings if seq_len is None else seq_len
        new_base = _dynamic_base(base, head_dim, params["factor"], max_position_embeddings, length)
        return torch.from_numpy(rope_frequencies(head_dim, base=new_base)), 1.0  # (d/2,)
    if rope_type == "yarn":
        return _yarn_inverse_frequencies(theta, head_dim, base, params)
    return _llama3_inverse_frequencies(theta, params), 1.0


@dataclass(frozen=True)
class ScaledRoPE:
    """RoPE with a config's ``rope_scaling``, as a value a model's attention can carry in place of
    its ``rope_base`` (:class:`course_utils.causal.CausalSelfAttention`, and so every layer of
    :class:`~course_utils.pretrained.smollm2.SmolLM2`): the frequencies and YaRN's attention
    factor of :func:`rope_inverse_frequencies` for ``base``, ``scaling``,
    ``max_position_embeddings`` and ``seq_len``. Hashable, so the decoding path's ``cos``/``sin``
    tables are made once per setting. Build one with :meth:`of`, which checks the arguments
    (the dict becomes a sorted tuple of its items).

    ``ScaledRoPE.of(base)`` (no scaling) rotates exactly as the plain ``rope_base = base``.
    ``"dynamic"`` depends on the length: ``seq_len`` is the length the whole text will reach,
    as ``transformers`` computes it for one forward pass over that text.

    >>> plain = ScaledRoPE.of(100.0)
    >>> x = torch.randn(1, 5, 8, dtype=torch.float64)              # (h, T, d)
    >>> torch.equal(plain.apply(x, torch.arange(5)), apply_rope(x, base=100.0))
    True
    >>> yarn = ScaledRoPE.of(1e4, {"rope_type": "yarn", "factor": 2.0,
    ...                            "original_max_position_embeddings": 8192})
    >>> inv_freq, factor = yarn.frequencies(64)
    >>> inv_freq.shape, round(factor, 4)                           # 0.1 ln 2 + 1
    (torch.Size([32]), 1.0693)
    """

    base: float
    scaling: tuple[tuple[str, Any], ...] = ()
    max_position_embeddings: int | None = None
    seq_len: int | None = None

    @classmethod
    def of(
        cls,
        base: float,
        scaling: dict[str, Any] | None = None,
        *,
        max_position_embeddings: int | None = None,
        seq_len: int | None = None,
    ) -> ScaledRoPE:
        """Check the arguments as :func:`rope_inverse_frequencies` does (a head width of 4
        stands in for the model's), and keep them."""
        rope_inverse_frequencies(
            4, base, scaling, max_position_embeddings=max_position_embeddings, seq_len=seq_len
        )
        items = () if scaling is None else tuple(sorted(scaling.items()))
        return cls(_check_base(base), items, max_position_embeddings, seq_len)

    def frequencies(self, head_dim: int) -> tuple[Tensor, float]:
        """``(inv_freq, attention_factor)`` for heads of width ``head_dim``: inv_freq float64
        ``(head_dim // 2,)``."""
        return rope_inverse_frequencies(
            head_dim,
            self.base,
            dict(self.scaling) if self.scaling else None,
            max_position_embeddings=self.max_position_embeddings,
            seq_len=self.seq_len,
        )

    def apply(self, x: Tensor, positions: Any = None) -> Tensor:
        """:func:`apply_rope` of ``x`` ``(..., T, d)`` with these frequencies, times the attention
        factor (YaRN's; 1 otherwise). Exactly ``apply_rope(x, positions, base=base)`` without
        scaling."""
        if not self.scaling:
            return apply_rope(x, positions, base=self.base)  # (..., T, d)
        inv_freq, factor = self.frequencies(x.shape[-1])
        rotated = apply_rope(x, positions, inv_freq=inv_freq)  # (..., T, d)
        return rotated if factor == 1.0 else rotated * factor


def rotate_by_rope(x: Tensor, positions: Any, rope: float | ScaledRoPE) -> Tensor:
    """RoPE of ``x`` ``(..., T, d)`` at ``positions`` with ``rope`` either a plain base (a float,
    as models carry ``rope_base``) or a :class:`ScaledRoPE`: the one dispatch of the attention
    paths that accept both.

    >>> x = torch.randn(3, 4)
    >>> torch.equal(rotate_by_rope(x, torch.arange(3), 10.0), apply_rope(x, base=10.0))
    True
    """
    if isinstance(rope, ScaledRoPE):
        return rope.apply(x, positions)  # (..., T, d)
    return apply_rope(x, positions, base=rope)  # (..., T, d)


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


# --------------------------------------------------------------------------------------------
# Relative positions as embedding indices (Shaw et al. 2018; T5, Raffel et al. 2020)
# --------------------------------------------------------------------------------------------


def shaw_relative_positions(t_q: int, t_k: int, max_relative: int) -> Tensor:
    """The embedding index of each (query, key) pair in Shaw et al. (2018): ``(t_q, t_k)`` int64.

    Shaw et al. (``shaw2018self``, section 3.2) learn one vector per clipped distance,
    ``a_ij = w_clip(j - i, k)`` with ``clip(x, k) = max(-k, min(k, x))``: ``2k + 1`` vectors cover
    every distance, and keys more than ``k`` tokens away share the two edge vectors. Shifted by
    ``k``, the clipped distance is a row of a ``(2k + 1, d)`` table (a ``torch.nn.Embedding``):
    entry ``[i, j]`` is ``clip(j - i, -k, k) + k``, in ``[0, 2k]``, with query ``i`` at position
    ``i`` and key ``j`` at position ``j`` (``k`` = ``max_relative``; ``k = 0`` gives one shared
    vector, i.e. no position information).

    >>> shaw_relative_positions(3, 4, 1)        # 0 = a key before, 1 = itself, 2 = a key after
    tensor([[1, 2, 2, 2],
            [0, 1, 2, 2],
            [0, 0, 1, 2]])
    """
    t_q = check_int(t_q, "t_q", low=1)
    t_k = check_int(t_k, "t_k", low=1)
    max_relative = check_int(max_relative, "max_relative", low=0)
    # the int64 distances and their clipped copy: 16 bytes an entry
    check_alloc((t_q, t_k), 16, f"shaw_relative_positions(t_q={t_q}, t_k={t_k})")
    query_pos = torch.arange(t_q)[:, None]  # (t_q, 1)
    key_pos = torch.arange(t_k)[None, :]  # (1, t_k)
    distance = key_pos - query_pos  # (t_q, t_k): j - i, negative = a key in the past
    return distance.clamp(-max_relative, max_relative) + max_relative  # (t_q, t_k) in [0, 2k]


def t5_relative_bucket(
    relative_position: Any,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> Tensor:
    """T5's bucket (``0 .. num_buckets - 1``) of each relative position ``j - i``, same shape.

    T5 (Raffel et al. 2020, ``raffel2020exploring``, section 2.1) adds to each score a learned
    scalar per head and *bucket* of the distance ``j - i`` (key ``j``, query ``i``): 32 buckets
    whose ranges grow logarithmically up to a distance of 128, beyond which all distances share
    one bucket. The exact rule is that of the Mesh TensorFlow code the paper
    used, which ``transformers``' ``T5Attention._relative_position_bucket`` copies (the result
    is int64, on the input's device):

    - ``bidirectional`` (the encoder): ``B = num_buckets // 2`` buckets for keys at or before the
      query and ``B`` more (shifted by ``B``) for keys after it; ``n = |j - i|``.
      Otherwise (the causal decoder): ``B = num_buckets`` and ``n = max(i - j, 0)`` (keys in the
      future all get bucket 0; the causal mask hides them anyway).
    - ``n < B // 2`` (``max_exact``): bucket ``n``, one per distance.
    - otherwise ``max_exact + int(ln(n / max_exact) / ln(max_distance / max_exact)
      * (B - max_exact))``, at most ``B - 1``.

    The logarithm is computed in float32 with the same operations as that code, so a distance on a
    bucket boundary lands where it did when the model was trained (by construction, not by luck;
    for the sizes the tests try, float64 would give the same buckets).

    >>> t5_relative_bucket(torch.tensor([-200, -20, -3, 0, 3, 20, 200]))
    tensor([15, 10,  3,  0, 19, 26, 31])
    >>> t5_relative_bucket(torch.tensor([-200, -20, -3, 0, 3]), bidirectional=False)
    tensor([31, 17,  3,  0,  0])
    """
    position = _as_int_tensor(relative_position, "relative_position", "(any shape) of j - i")
    bidirectional = check_bool(bidirectional, "bidirectional")
    num_buckets = check_int(num_buckets, "num_buckets", low=4 if bidirectional else 2)
    per_side = num_buckets // 2 if bidirectional else num_buckets  # B
    max_exact = per_side // 2  # distances below this get a bucket each
    max_distance = check_int(max_distance, "max_distance")
    if max_distance <= max_exact:
        raise ValueError(
            f"max_distance must be > {max_exact} (num_buckets = {num_buckets} leaves {max_exact} "
            f"exact buckets, and the logarithmic ones must reach further); got {max_distance}"
        )
    if bidirectional:
        offset = (position > 0).to(torch.int64) * per_side  # (...): keys after the query
        distance = position.abs()  # (...)
    else:
        offset = torch.zeros_like(position)  # (...)
        distance = (-position).clamp(min=0)  # (...): i - j for keys in the past, 0 otherwise
    # clamp: the log is used only where distance >= max_exact (and log(0) would be -inf)
    log_ratio = torch.log(distance.clamp(min=max_exact).float() / max_exact)  # (...) float32
    log_bucket = max_exact + (
        log_ratio / math.log(max_distance / max_exact) * (per_side - max_exact)
    ).to(torch.int64)  # (...): truncated towards zero, as in the original code
    log_bucket = log_bucket.clamp(max=per_side - 1)  # (...): the last bucket takes the rest
    return offset + torch.where(distance < max_exact, distance, log_bucket)  # (...) int64
