"""Checkers for the exercises of chapter 4, "Multi-head attention".

As in chapter 1, the learner writes a *function* and the checker calls it on its own seeded cases
(shapes the chapter never used, so a hard-coded answer fails). The expected answers come from
:class:`course_utils.multihead.MultiHeadAttention`. A checker never raises on a wrong answer.

- :func:`check_split_heads`: ``split_heads(x, n_heads)``: ``(B, T, d_model)`` to
  ``(B, n_heads, T, d_k)``;
- :func:`check_parameter_count`: ``count(d_model, n_heads, bias)``, the parameters of the layer;
- :func:`check_head_weights`: ``head_weights(X, W_Q, W_K, n_heads)``, every head's weights;
- :func:`check_torch_mask`: ``to_torch_mask(mask)``, our mask in the polarity of
  ``nn.MultiheadAttention``.

>>> import torch
>>> def split_heads(x, n_heads):
...     B, T, d_model = x.shape
...     return x.view(B, T, n_heads, d_model // n_heads).transpose(1, 2)
>>> bool(check_split_heads(split_heads))
True
>>> print(check_split_heads(lambda x, n_heads: ...))
✗ split heads: not yet right
  - your function returned Ellipsis
  hint: replace the `...` with your code, and end the function with `return ...` of your result
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..i18n import t
from ..multihead import MultiHeadAttention
from ._checks import Mistake, check_array
from ._feedback import Feedback
from ._learner import run_cases

__all__ = ["check_head_weights", "check_parameter_count", "check_split_heads", "check_torch_mask"]

_SEED = 2019


# --- exercise 4.1: split the heads --------------------------------------------------------------


def check_split_heads(split_heads: Callable[[torch.Tensor, int], Any]) -> Feedback:
    """Check ``split_heads(x, n_heads)`` against :meth:`MultiHeadAttention.split_heads`.

    >>> print(check_split_heads(lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1)))
    ... # doctest: +ELLIPSIS
    ✗ split heads: not yet right
      - test case: x of shape (1, 3, 4), n_heads = 2
      - entry [0, 0, 1, 0] is 2, expected 4
      - 8 of 12 entries differ
      hint: the shape is right but the numbers are scrambled: ...
    """
    title = "split heads"
    g = torch.Generator().manual_seed(_SEED)
    cases = [
        ("x of shape (1, 3, 4), n_heads = 2", (torch.arange(12.0).reshape(1, 3, 4), 2)),
        ("x of shape (2, 5, 12), n_heads = 3", (torch.randn(2, 5, 12, generator=g), 3)),
        ("x of shape (3, 2, 8), n_heads = 8", (torch.randn(3, 2, 8, generator=g), 8)),
        ("x of shape (2, 4, 6), n_heads = 1", (torch.randn(2, 4, 6, generator=g), 1)),
    ]

    def compare(result: Any, x: torch.Tensor, n_heads: int) -> Feedback:
        B, T, d_model = x.shape
        expected = MultiHeadAttention(d_model, n_heads).split_heads(x)  # (B, n_heads, T, d_k)
        mistakes = [
            Mistake(
                "the shape is right but the numbers are scrambled: reshape to (B, T, n_heads, d_k) "
                "first, then swap T and n_heads with .transpose(1, 2)",
                x.reshape(B, n_heads, T, d_model // n_heads).numpy(),
            ),
            Mistake(
                "you stopped at (B, T, n_heads, d_k); swap T and n_heads with .transpose(1, 2)",
                x.view(B, T, n_heads, d_model // n_heads).numpy(),
            ),
        ]
        return check_array(title, result, expected.numpy(), mistakes=mistakes)

    return run_cases(
        title,
        split_heads,
        "split_heads",
        cases,
        compare,
        "all {n} test cases give (B, n_heads, T, d_k)",
    )


# --- exercise 4.2: count the parameters ---------------------------------------------------------


def check_parameter_count(count: Callable[[int, int, bool], Any]) -> Feedback:
    """Check ``count(d_model, n_heads, bias)`` against the parameters of ``MultiHeadAttention``.

    >>> bool(check_parameter_count(lambda d, h, bias: 4 * d * d + (4 * d if bias else 0)))
    True
    """
    title = "parameter count"
    cases = [
        (f"d_model = {d}, n_heads = {h}, bias = {b}", (d, h, b))
        for d, h, b in [
            (512, 8, True),
            (512, 1, True),
            (768, 12, False),
            (384, 12, True),
            (6, 3, False),
        ]
    ]

    def compare(result: Any, d_model: int, n_heads: int, bias: bool) -> Feedback:
        mha = MultiHeadAttention(d_model, n_heads, bias=bias)
        expected = sum(p.numel() for p in mha.parameters())
        b = d_model if bias else 0
        d_k = d_model // n_heads
        mistakes = [
            Mistake(
                "each head does not get full d_model × d_model matrices: its W_Q_i is "
                "d_model × d_k, and the n_heads of them together are d_model × d_model",
                n_heads * 4 * (d_model * d_model + b),
            ),
            Mistake("don't forget W_O, the fourth matrix", 3 * (d_model * d_model + b)),
            Mistake(
                "W_O is d_model × d_model too (it mixes the concatenated heads)",
                3 * (d_model * d_model + b) + d_k * d_model + (b if bias else 0),
            ),
            Mistake("count the biases when bias is True: one per output", 4 * d_model * d_model),
        ]
        return check_array(title, result, np.array(expected), mistakes=mistakes, rtol=0)

    return run_cases(
        title,
        count,
        "count",
        cases,
        compare,
        "all {n} cases right: the count does not depend on n_heads",
    )


# --- exercise 4.3: every head's weights ---------------------------------------------------------


def _module_with(W_Q: np.ndarray, W_K: np.ndarray, n_heads: int) -> MultiHeadAttention:
    d_model = W_Q.shape[0]
    mha = MultiHeadAttention(d_model, n_heads, bias=False).double()
    with torch.no_grad():  # nn.Linear computes x @ weight.T, so weight = W.T
        mha.W_Q.weight.copy_(torch.from_numpy(W_Q.T))
        mha.W_K.weight.copy_(torch.from_numpy(W_K.T))
    return mha


def check_head_weights(head_weights: Callable[..., Any]) -> Feedback:
    """Check ``head_weights(X, W_Q, W_K, n_heads)`` -> ``(n_heads, T, T)``, every head's weights.

    ``X`` is ``(T, d_model)`` (one sentence, no batch), ``W_Q`` and ``W_K`` are ``(d_model,
    d_model)`` numpy arrays used as ``X @ W_Q``; head ``i`` uses columns ``i*d_k .. (i+1)*d_k``.

    >>> from course_utils.softmax import softmax
    >>> def head_weights(X, W_Q, W_K, n_heads):
    ...     d_k = X.shape[1] // n_heads
    ...     Q = (X @ W_Q).reshape(len(X), n_heads, d_k).transpose(1, 0, 2)
    ...     K = (X @ W_K).reshape(len(X), n_heads, d_k).transpose(1, 0, 2)
    ...     return softmax(Q @ K.transpose(0, 2, 1) / np.sqrt(d_k), axis=-1)
    >>> bool(check_head_weights(head_weights))
    True
    """
    title = "head weights"
    rng = np.random.default_rng(_SEED + 3)
    cases = []
    for T, d_model, n_heads in [(4, 4, 2), (5, 12, 3), (3, 8, 4), (6, 6, 1)]:
        X = rng.normal(size=(T, d_model)).round(2)
        W_Q = rng.normal(size=(d_model, d_model)).round(2)
        W_K = rng.normal(size=(d_model, d_model)).round(2)
        cases.append((f"T = {T}, d_model = {d_model}, n_heads = {n_heads}", (X, W_Q, W_K, n_heads)))

    def soft(s: np.ndarray) -> np.ndarray:
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def compare(
        result: Any, X: np.ndarray, W_Q: np.ndarray, W_K: np.ndarray, n_heads: int
    ) -> Feedback:
        mha = _module_with(W_Q, W_K, n_heads)
        x = torch.from_numpy(X)[None]  # (1, T, d_model)
        with torch.no_grad():
            _, w = mha(x, x, x, return_weights=True)  # (1, n_heads, T, T)
            q = mha.split_heads(mha.W_Q(x))[0]  # (n_heads, T, d_k)
            k = mha.split_heads(mha.W_K(x))[0]  # (n_heads, T, d_k)
            raw = (q @ k.transpose(-2, -1)).numpy()  # (n_heads, T, T)
        d_model = X.shape[1]
        d_k = d_model // n_heads
        mistakes = [
            Mistake(
                t(
                    "divide by √d_k = √{d_k}, the width of one head, not √d_model = √{d_model}",
                    d_k=d_k,
                    d_model=d_model,
                ),
                soft(raw / math.sqrt(d_model)),
            ),
            Mistake("did you forget to divide the scores by √d_k?", soft(raw)),
            Mistake(
                "softmax goes over the keys (the last axis), so that every row sums to 1",
                soft(raw.swapaxes(-1, -2) / math.sqrt(d_k)).swapaxes(-1, -2),
            ),
        ]
        return check_array(title, result, w[0].numpy(), mistakes=mistakes)

    return run_cases(
        title,
        head_weights,
        "head_weights",
        cases,
        compare,
        "all {n} test cases match MultiHeadAttention's weights",
    )


# --- exercise 4.4: the other polarity -----------------------------------------------------------


def check_torch_mask(to_torch_mask: Callable[[torch.Tensor], Any]) -> Feedback:
    """Check ``to_torch_mask(mask)``: our boolean mask (True = may attend) as the boolean
    ``attn_mask`` of ``torch.nn.MultiheadAttention`` (True = may NOT attend), checked by running
    PyTorch's module with it and comparing with ours.

    >>> bool(check_torch_mask(lambda m: ~m))
    True
    >>> print(check_torch_mask(lambda m: m))
    ✗ torch mask: not yet right
      - test case: a causal mask, T = 4
      - entry [0, 0] is 1, expected 0
      - 16 of 16 entries differ
      hint: nn.MultiheadAttention reads True as 'may NOT attend': flip every entry with ~mask
    """
    title = "torch mask"
    g = torch.Generator().manual_seed(_SEED + 4)
    random_mask = torch.rand(5, 5, generator=g) < 0.5
    random_mask[:, 0] = True
    cases = [
        ("a causal mask, T = 4", (torch.ones(4, 4, dtype=torch.bool).tril(),)),
        ("a random mask, T = 5", (random_mask,)),
    ]

    def compare(result: Any, mask: torch.Tensor) -> Feedback:
        wrong_type = _wrong_mask_type(result)
        if wrong_type is not None:
            return wrong_type
        mistakes = [
            Mistake(
                "nn.MultiheadAttention reads True as 'may NOT attend': flip every entry with ~mask",
                mask.numpy(),
            )
        ]
        fb = check_array(title, result, (~mask).numpy(), mistakes=mistakes)
        if not fb:
            return fb
        # And it really does what ours does, in PyTorch's module.
        T = mask.shape[0]
        torch.manual_seed(_SEED)
        ref = torch.nn.MultiheadAttention(4, 2, batch_first=True).double()
        ours = MultiHeadAttention.from_torch(ref)
        x = torch.randn(1, T, 4, generator=g, dtype=torch.float64)
        with torch.no_grad():
            want = ours(x, x, x, mask=mask)
            got = ref(x, x, x, attn_mask=result, need_weights=False)[0]
        if not torch.allclose(want, got, atol=1e-10):  # pragma: no cover - equal masks agree
            return Feedback(False, title, ("outputs differ",))
        return fb

    return run_cases(
        title,
        to_torch_mask,
        "to_torch_mask",
        cases,
        compare,
        "all {n} masks give nn.MultiheadAttention the same output as ours",
    )


def _wrong_mask_type(result: Any) -> Feedback | None:
    """Feedback matched to what came back when it is not a boolean torch tensor."""
    title = "torch mask"
    if isinstance(result, torch.Tensor) and result.dtype == torch.bool:
        return None
    if isinstance(result, np.ndarray):
        got = t("a numpy array of dtype {dtype}", dtype=result.dtype)
        hint = (
            "PyTorch's module needs a torch.Tensor: apply ~ to the tensor you were given "
            "(or convert with torch.from_numpy(...))"
        )
    elif isinstance(result, torch.Tensor) and result.is_floating_point():
        got = t("a float tensor ({dtype})", dtype=result.dtype)
        additive = bool(((result == 0) | (result == float("-inf"))).all())
        hint = (
            "this additive mask (0 = keep, -inf = block) works in PyTorch too, but the exercise "
            "asks for the boolean form: ~mask"
            if additive
            else "a float mask is ADDED to the scores by PyTorch (0 = keep, -inf = block), so 0/1 "
            "floats block nothing; keep it boolean: ~mask"
        )
    elif isinstance(result, torch.Tensor):
        got = t("an integer tensor ({dtype})", dtype=result.dtype)
        hint = (
            "PyTorch rejects integer masks: 1 - mask gives ints; use ~mask, which keeps the "
            "tensor boolean"
        )
    else:
        got = type(result).__name__
        hint = "return a boolean torch.Tensor of the same shape as the mask: ~mask"
    return Feedback(
        False, title, (t("expected a boolean torch.Tensor; got {got}", got=got),), (hint,)
    )
