"""Input checks shared by the numeric modules.

Every public function of the course validates its arguments here so that a learner's mistake
produces one clear message that names the argument, the shape it received and the shape it expected,
instead of a numpy broadcasting error three calls deeper (or, worse, a silently broadcast result).
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import torch

__all__ = [
    "as_bool_array",
    "as_float_array",
    "check_alloc",
    "check_bool",
    "check_cache_extension",
    "check_count",
    "check_float_tensor",
    "check_int",
    "check_mask_shape",
    "check_module_dtype",
    "check_positive_finite",
    "check_qkv_shapes",
    "max_alloc_bytes",
    "shape_str",
]

#: The most one array built by a course function may take: 4 GiB, or a quarter of this machine's
#: memory if that is less (see :func:`max_alloc_bytes`). Far above anything a chapter needs
#: (its largest masks and tables are a few MiB), far below what would make the machine swap.
ALLOC_CAP_BYTES = 4 * 2**30


def shape_str(shape: Sequence[int | str]) -> str:
    """Format a shape the way numpy prints it: ``(4,)``, ``(2, 3)``, ``(..., T_q, 4)``."""
    parts = [str(s) for s in shape]
    if len(parts) == 1:
        return f"({parts[0]},)"
    return "(" + ", ".join(parts) + ")"


def _untorch(x: Any) -> Any:
    """A torch tensor (also one that requires grad, or on another device) as a numpy array.

    Without importing torch: the numpy functions accept tensors as they accept lists. The result
    is a copy of the values, detached from autograd (these functions are not differentiable).
    """
    if hasattr(x, "detach") and hasattr(x, "numpy") and hasattr(x, "cpu"):
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":  # numpy has no bfloat16; float32 holds it exactly
            x = x.float()
        return x.numpy()
    return x


def as_float_array(x: Any, name: str, *, min_ndim: int = 0, expected: str | None = None) -> NDArray:
    """Return ``x`` as a floating-point numpy array, or raise a clear error.

    Integer and boolean inputs are converted to float64; float16/32/64 keep their dtype, so that the
    chapters can show what happens in low precision. Torch tensors are accepted, also those that
    require grad (their values are used; the result is a numpy array, outside autograd). NaN is
    rejected, and so is +inf; -inf is allowed because it is how a masked score is written.

    >>> as_float_array([[1, 2]], "q", min_ndim=2).dtype
    dtype('float64')
    >>> as_float_array([1.0, 2.0], "q", min_ndim=2, expected="(..., T_q, d_k)")
    Traceback (most recent call last):
    ...
    ValueError: q must have at least 2 dimensions (..., T_q, d_k); got shape (2,)
    """
    try:
        arr = np.asarray(_untorch(x))
    except Exception as err:  # ragged nested lists, for instance
        raise TypeError(f"{name} must be a numeric array; could not convert it: {err}") from None
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(
            f"{name} must be a numeric array; got dtype {arr.dtype} "
            f"with shape {shape_str(arr.shape)}"
        )
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real; got complex dtype {arr.dtype}")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    if arr.ndim < min_ndim:
        what = f" {expected}" if expected else ""
        raise ValueError(
            f"{name} must have at least {min_ndim} dimensions{what}; "
            f"got shape {shape_str(arr.shape)}"
        )
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN (shape {shape_str(arr.shape)})")
    if np.isposinf(arr).any():
        raise ValueError(f"{name} contains +inf (shape {shape_str(arr.shape)}); use finite values")
    return arr


def as_bool_array(x: Any, name: str) -> NDArray[np.bool_]:
    """Return ``x`` as a boolean array; anything else is a ``TypeError``.

    Masks are boolean on purpose: a float mask of 0/1 is ambiguous (additive or multiplicative?),
    and PyTorch's float masks are *added* to the scores, which is a different contract.
    """
    try:
        arr = np.asarray(_untorch(x))
    except Exception as err:
        raise TypeError(f"{name} must be a boolean array; could not convert it: {err}") from None
    if arr.dtype != np.bool_:
        raise TypeError(
            f"{name} must be a boolean array (True = may attend); got dtype {arr.dtype} "
            f"with shape {shape_str(arr.shape)}"
        )
    return arr


def check_positive_finite(value: Any, name: str) -> float:
    """Return ``value`` as a float if it is a finite number greater than zero."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a number; got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0; got {value}")
    return value


def check_int(value: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """Validate a whole number (an ``int`` or numpy integer, never a ``bool``) in ``[low, high]``.

    The one check behind every count, length and index argument of the course (mask lengths,
    ``d_k``, head counts, a widget's slider position), so a learner meets the same message
    everywhere. With both bounds the message names the range; with ``low`` only, the minimum.

    >>> check_int(3, "t_q", low=1)
    3
    >>> check_int(2.0, "t_q", low=1)
    Traceback (most recent call last):
    ...
    TypeError: t_q must be an int; got float 2.0
    >>> check_int(4, "layer", low=0, high=3)
    Traceback (most recent call last):
    ...
    ValueError: layer must be an int in [0, 3]; got 4
    """
    bounded = low is not None and high is not None
    what = f"an int in [{low}, {high}]" if bounded else "an int"
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be {what}; got {type(value).__name__} {value!r}")
    if bounded and not low <= value <= high:  # type: ignore[operator]
        raise ValueError(f"{name} must be {what}; got {value!r}")
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}; got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}; got {value}")
    return int(value)


def check_count(value: Any, name: str, *, low: int = 1) -> int:
    """Validate a size or count given as a Python ``int`` (never a ``bool``), at least ``low``.

    The check of the cache-size and MLA dimension arguments: the message names the value received.

    >>> check_count(4, "n_heads")
    4
    >>> check_count(0, "n_heads")
    Traceback (most recent call last):
    ...
    ValueError: n_heads must be an int >= 1; got 0
    """
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int; got {type(value).__name__} {value!r}")
    if value < low:
        raise ValueError(f"{name} must be an int >= {low}; got {value}")
    return int(value)  # a numpy integer (np.int64(8), a shape entry) as a Python int


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (a numpy bool too); anything else, even a
    truthy ``"yes"`` or ``1``, is a ``TypeError`` naming ``name``.

    >>> check_bool(True, "causal")
    True
    >>> check_bool("yes", "causal")
    Traceback (most recent call last):
    ...
    TypeError: causal must be True or False; got str 'yes'
    """
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False; got {type(value).__name__} {value!r}")
    return bool(value)


def max_alloc_bytes() -> int:
    """The largest array (in bytes) a course function agrees to build: :data:`ALLOC_CAP_BYTES`,
    or a quarter of the physical memory if the machine reports less."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX: the fixed cap alone
        return ALLOC_CAP_BYTES
    return min(ALLOC_CAP_BYTES, physical // 4) if physical > 0 else ALLOC_CAP_BYTES


def check_alloc(shape: Sequence[int], itemsize: int, what: str) -> None:
    """Refuse to build a result of ``shape`` that needs ``itemsize`` bytes per entry (the result
    and the temporaries made on the way) beyond :func:`max_alloc_bytes`: the message says how
    many bytes ``what`` would take.

    Sizes are validated first (ints >= 1), so the product is exact (Python ints never overflow):
    a typo such as ``causal_mask(10**6)`` is refused at once instead of freezing the machine.

    >>> check_alloc((4, 4), 1, "causal_mask(4)")
    >>> check_alloc((10**6, 10**6), 1, "causal_mask(t_q=1000000)")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: causal_mask(t_q=1000000) would build a result of shape (1000000, 1000000) and ...
    """
    n_bytes = math.prod(int(s) for s in shape) * int(itemsize)
    limit = max_alloc_bytes()
    if n_bytes > limit:
        raise ValueError(
            f"{what} would build a result of shape {shape_str(shape)} and need about "
            f"{n_bytes:,} bytes ({n_bytes / 2**30:.1f} GiB) of memory; the limit is {limit:,} "
            f"bytes ({limit / 2**30:.1f} GiB): use smaller sizes"
        )


def check_module_dtype(x: Any, name: str, module_dtype: torch.dtype, expected: str) -> None:
    """``x`` must have the dtype of the module's weights (PyTorch never mixes them silently).

    The message names both dtypes and the two ways out: convert the module (``.double()``,
    ``.float()``, ``.to(x.dtype)``) or the input (``x.to(module_dtype)``).

    >>> import torch
    >>> check_module_dtype(torch.zeros(1, 2, 4), "x", torch.float32, "(B, T, d_model)")
    >>> check_module_dtype(
    ...     torch.zeros(1, 2, 4, dtype=torch.float64), "x", torch.float32, "(B, T, d_model)"
    ... )  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: x has dtype torch.float64, expected torch.float32 (the dtype of the module's ...
    """
    if x.dtype != module_dtype:
        fix = {"torch.float64": ".double()", "torch.float32": ".float()"}.get(
            str(x.dtype), f".to({x.dtype})"
        )
        raise TypeError(
            f"{name} has dtype {x.dtype}, expected {module_dtype} (the dtype of the module's "
            f"weights); convert the module with {fix} or {name} with .to({module_dtype}); "
            f"{name} has shape {shape_str(tuple(x.shape))} {expected}"
        )


def check_cache_pair(
    first: torch.Tensor,
    second: torch.Tensor,
    names: tuple[str, str],
    lead: int,
    label: str,
    why: str,
) -> None:
    """Two tensors a cache appends together (keys and values; MLA's latents and RoPE keys) agree
    on their first ``lead`` dimensions (``label`` names them), their dtype and their device.

    >>> import torch
    >>> check_cache_pair(torch.zeros(1, 2, 3), torch.zeros(1, 2, 5), ("a", "b"), 2, "(B, T)", "")
    >>> check_cache_pair(torch.zeros(1, 2, 3), torch.zeros(1, 4, 3), ("a", "b"), 2, "(B, T)",
    ...                  "one per token")
    Traceback (most recent call last):
    ...
    ValueError: a has shape (1, 2, 3) and b (1, 4, 3); they must agree on (B, T): one per token
    """
    a, b = names
    if first.shape[:lead] != second.shape[:lead]:
        raise ValueError(
            f"{a} has shape {shape_str(tuple(first.shape))} and {b} "
            f"{shape_str(tuple(second.shape))}; they must agree on {label}: {why}"
        )
    if first.dtype != second.dtype or first.device != second.device:
        raise TypeError(
            f"{a} and {b} must have one dtype and device; got {a} {first.dtype} on "
            f"{first.device}, {b} {second.dtype} on {second.device}"
        )


def check_cache_extension(
    new: torch.Tensor, held: torch.Tensor, name: str, *, time_dim: int, what: str
) -> None:
    """New tokens' ``new`` may extend a cache's ``held`` along ``time_dim`` only if every other
    dimension, the dtype and the device match (``torch.cat`` would otherwise fail later, or
    silently promote the dtype). ``what`` names the dimensions that must match.

    >>> import torch
    >>> check_cache_extension(torch.zeros(1, 2, 4), torch.zeros(1, 5, 4), "c_kv", time_dim=1,
    ...                       what="batch and d_c")
    >>> check_cache_extension(torch.zeros(2, 2, 4), torch.zeros(1, 5, 4), "c_kv", time_dim=1,
    ...                       what="batch and d_c")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the cache holds c_kv of shape (1, 5, 4); the new c_kv has shape (2, 2, 4), ...
    """
    want = list(held.shape)
    want[time_dim] = "T_new"
    if new.dim() != held.dim() or any(
        a != b for i, (a, b) in enumerate(zip(new.shape, held.shape, strict=True)) if i != time_dim
    ):
        raise ValueError(
            f"the cache holds {name} of shape {shape_str(tuple(held.shape))}; the new {name} has "
            f"shape {shape_str(tuple(new.shape))}, expected {shape_str(want)} ({what} must match)"
        )
    if new.dtype != held.dtype or new.device != held.device:
        raise TypeError(
            f"the cache holds {name} of dtype {held.dtype} on {held.device}; the new {name} has "
            f"dtype {new.dtype} on {new.device}"
        )


def check_float_tensor(
    x: Any,
    name: str,
    expected: str,
    *,
    ndim: int | None = None,
    min_ndim: int | None = None,
    numpy_ok: bool = False,
    dtypes: Collection[torch.dtype] | None = None,
) -> torch.Tensor:
    """Return ``x`` if it is a floating-point torch tensor (of ``ndim``, or at least ``min_ndim``
    dimensions), or raise a clear error naming ``name``, what was received and ``expected``.

    The one check behind the torch modules' tensor arguments. With ``numpy_ok`` a numpy array is
    accepted and returned as a tensor sharing its memory (``torch.from_numpy``); ``dtypes``
    narrows the accepted floating-point dtypes (default: any for which ``is_floating_point()``).
    torch is imported only when this is called (the numpy modules never need it).

    >>> import torch
    >>> check_float_tensor(torch.zeros(2, 3), "q", "(..., T_q, d_k)", min_ndim=2).shape
    torch.Size([2, 3])
    >>> check_float_tensor([[1.0]], "q", "(T, d)", numpy_ok=True)
    Traceback (most recent call last):
    ...
    TypeError: q must be a torch.Tensor (or numpy array) of shape (T, d); got list
    >>> check_float_tensor(torch.zeros(2, 3), "query", "(B, T_q, d_model)", ndim=3)
    Traceback (most recent call last):
    ...
    ValueError: query must have 3 dimensions (B, T_q, d_model); got shape (2, 3)
    """
    import torch

    if numpy_ok and isinstance(x, np.ndarray):
        x = torch.from_numpy(x)
    if not isinstance(x, torch.Tensor):
        accepted = "torch.Tensor (or numpy array)" if numpy_ok else "torch.Tensor"
        raise TypeError(f"{name} must be a {accepted} of shape {expected}; got {type(x).__name__}")
    if not x.is_floating_point() or (dtypes is not None and x.dtype not in dtypes):
        raise TypeError(
            f"{name} must be a floating-point tensor of shape {expected}; "
            f"got dtype {x.dtype} with shape {shape_str(tuple(x.shape))}"
        )
    if ndim is not None and x.dim() != ndim:
        raise ValueError(
            f"{name} must have {ndim} dimensions {expected}; got shape {shape_str(tuple(x.shape))}"
        )
    if min_ndim is not None and x.dim() < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimensions {expected}; "
            f"got shape {shape_str(tuple(x.shape))}"
        )
    return x


def check_qkv_shapes(
    q: Sequence[int], k: Sequence[int], v: Sequence[int] | None = None
) -> tuple[int, int]:
    """The shape contract of attention, for numpy arrays and torch tensors alike: ``(d_k, T_k)``.

    ``q`` is ``(..., T_q, d_k)``, ``k`` is ``(..., T_k, d_k)`` and ``v`` (if given) is
    ``(..., T_k, d_v)``, with ``d_k >= 1`` and ``T_k >= 1`` (a query needs a key to attend to).
    The leading (batch) dimensions are the caller's rule: some broadcast them, some do not.

    >>> check_qkv_shapes((3, 4), (5, 4), (5, 2))
    (4, 5)
    >>> check_qkv_shapes((3, 4), (5, 3))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: k has shape (5, 3), expected (..., T_k, 4): its last dimension must equal d_k = 4...
    """
    d_k = q[-1]
    if d_k == 0:
        raise ValueError(f"q has shape {shape_str(q)}, expected (..., T_q, d_k) with d_k >= 1")
    if k[-1] != d_k:
        raise ValueError(
            f"k has shape {shape_str(k)}, expected (..., T_k, {d_k}): its last dimension must "
            f"equal d_k = {d_k}, the last dimension of q {shape_str(q)}"
        )
    t_k = k[-2]
    if t_k == 0:
        raise ValueError(
            f"k has shape {shape_str(k)}, expected (..., T_k, {d_k}) with T_k >= 1: "
            "there must be at least one key to attend to"
        )
    if v is not None and v[-2] != t_k:
        raise ValueError(
            f"v has shape {shape_str(v)}, expected (..., {t_k}, d_v): "
            f"v needs one row per key, and k {shape_str(k)} has T_k = {t_k}"
        )
    return d_k, t_k


def check_mask_shape(mask: Sequence[int], expected: Sequence[int]) -> None:
    """A mask may broadcast to the scores' shape ``expected`` but never enlarge it.

    >>> check_mask_shape((1, 4), (3, 4))
    >>> check_mask_shape((2, 3, 4), (3, 4))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: mask has shape (2, 3, 4), expected a shape that broadcasts to (3, 4) ...
    """
    try:
        fits = np.broadcast_shapes(tuple(mask), tuple(expected)) == tuple(expected)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"mask has shape {shape_str(mask)}, expected a shape that broadcasts to "
            f"{shape_str(expected)} (..., T_q, T_k) without enlarging it"
        )
