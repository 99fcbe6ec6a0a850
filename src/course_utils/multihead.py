"""Multi-head attention (多头注意力) in PyTorch: the seed's ``MultiHeadAttention``, made complete.

MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O
head_i = Attention(Q W_Q_i, K W_K_i, V W_V_i)

Vaswani et al. (2017), "Attention Is All You Need", section 3.2.2. The ``h`` per-head
projections ``W_Q_i`` of shape ``(d_model, d_k)`` are stored side by side as one
``(d_model, n_heads * d_k)`` linear layer, so one matrix product computes the queries of every
head; splitting the last dimension into ``(n_heads, d_k)`` then separates them.

Two paths compute the same thing and are tested equal:

- the **readable path** (``return_weights=True``, or ``fast=False``) writes out the four steps of
  chapters 1-3 (scores, scaling, softmax, weighted sum) and keeps the weights
  ``(B, n_heads, T_q, T_k)``;
- the **fast path** (default when no weights are asked for) hands the same projected tensors to
  ``torch.nn.functional.scaled_dot_product_attention``, which never materialises the weights.

Masks are boolean with ``True`` = may attend (the polarity of ``scaled_dot_product_attention``).
Grouped-query attention (GQA, Ainslie et al. 2023; 分组查询注意力): with ``n_kv_heads < n_heads``
the keys and values have only ``n_kv_heads`` heads, and each is shared by a group of
``n_heads / n_kv_heads`` consecutive query heads (query head ``i`` reads k/v head
``i // (n_heads / n_kv_heads)``, as ``scaled_dot_product_attention(enable_gqa=True)`` does).
``n_kv_heads = 1`` is multi-query attention (MQA, Shazeer 2019); ``n_kv_heads = n_heads`` (the
default) is ordinary multi-head attention.

``torch.nn.MultiheadAttention`` uses the *opposite* polarity for its boolean ``attn_mask`` and
``key_padding_mask`` (``True`` = not allowed): :meth:`MultiHeadAttention.from_torch` copies
weights, not masks, so invert a mask (``~mask``) when you hand it to PyTorch's module.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._validation import (
    check_alloc,
    check_bool,
    check_float_tensor,
    check_int,
    check_mask_shape,
    check_module_dtype,
    check_qkv_shapes,
    shape_str,
)
from .attention import default_scale

__all__ = ["MultiHeadAttention", "MultiHeadAttentionReference", "attention_weights"]


def _check_qk_mask(q: object, k: object, mask: object) -> None:
    """Validate the arguments of :func:`attention_weights` like the numpy functions do."""
    q = check_float_tensor(q, "q", "(..., T_q, d_k)", min_ndim=2)
    k = check_float_tensor(k, "k", "(..., T_k, d_k)", min_ndim=2)
    check_qkv_shapes(tuple(q.shape), tuple(k.shape))
    if q.dtype != k.dtype:
        raise TypeError(f"q and k must have the same dtype; got {q.dtype} and {k.dtype}")
    try:
        batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the batch dimensions of q {shape_str(tuple(q.shape))} and k "
            f"{shape_str(tuple(k.shape))} (all but the last two) must broadcast"
        ) from None
    if mask is None:
        return
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        got = f"dtype {mask.dtype}" if isinstance(mask, Tensor) else type(mask).__name__
        raise TypeError(f"mask must be a boolean torch.Tensor (True = may attend); got {got}")
    check_mask_shape(tuple(mask.shape), (*batch, q.size(-2), k.size(-2)))


def _choose_path(fast: bool | None, return_weights: bool, dropout: object = None) -> bool:
    """Whether to take the fast path: by default when no weights are asked for (it forms none)
    and no dropout is active (the weights it would drop are never formed)."""
    if dropout is not None and not isinstance(dropout, nn.Dropout):
        raise TypeError(f"dropout must be a torch.nn.Dropout or None; got {type(dropout).__name__}")
    dropping = dropout is not None and dropout.training and dropout.p > 0
    check_bool(return_weights, "return_weights")  # 'no' would be truthy: weights asked for
    if fast is None:
        return not (return_weights or dropping)
    check_bool(fast, "fast")
    if fast and (return_weights or dropping):
        why = "return weights" if return_weights else "apply an active dropout to the weights"
        raise ValueError(f"fast=True cannot {why} (scaled_dot_product_attention never forms them)")
    return fast


def attention_weights(q: Tensor, k: Tensor, mask: Tensor | None = None) -> Tensor:
    """Steps 1-3 for every head at once: ``softmax(q kᵀ / √d_k)`` with masked keys set to weight 0.

    ``q`` is ``(..., T_q, d_k)``, ``k`` is ``(..., T_k, d_k)``, ``mask`` (bool, ``True`` = may
    attend) broadcasts to ``(..., T_q, T_k)``. A query whose keys are all masked gets all-zero
    weights, the convention of ``torch.nn.functional.scaled_dot_product_attention`` and of
    ``course_utils.softmax``.

    >>> q = torch.tensor([[2.0, 0.0]])
    >>> k = torch.tensor([[2.0, 0.0], [0.0, 2.0]])
    >>> attention_weights(q, k).round(decimals=3)
    tensor([[0.9440, 0.0560]])

    Bad input is an error that names the argument, as in the numpy functions:

    >>> attention_weights(q, torch.ones(2, 3))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: k has shape (2, 3), expected (..., T_k, 2): its last dimension must equal ...
    """
    _check_qk_mask(q, k, mask)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    check_alloc((*batch, q.size(-2), k.size(-2)), 2 * q.element_size(), "attention_weights")
    d_k = q.size(-1)
    # Scaling q before the product gives the same scores as dividing them afterwards, and touches
    # T_q * d_k numbers instead of T_q * T_k (much fewer for long sequences).
    scores = (q * default_scale(d_k)) @ k.transpose(-2, -1)  # (..., T_q, T_k)
    if mask is None:
        return torch.softmax(scores, dim=-1)  # (..., T_q, T_k)
    scores = scores.masked_fill(~mask, float("-inf"))  # (..., T_q, T_k); masked -> -inf
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k); fully masked rows are NaN here
    return weights.masked_fill(~mask, 0.0)  # (..., T_q, T_k); masked -> exactly 0, NaN rows -> 0


# Chapter 4 shows the reference whole, in <= 60 lines of at most 79 characters
# (the notebooks' line length, chapters/ruff.toml: what fits the book's code
# column), so the formatter (line length 100 here) leaves it as written.
# fmt: off
class MultiHeadAttentionReference(nn.Module):
    """The maths of multi-head attention and nothing else: the reference.

    :class:`MultiHeadAttention` adds checks of its arguments and a fast path.
    ``mask``: boolean, ``True`` = may attend, broadcastable to the scores.
    """

    def __init__(self, d_model: int, n_heads: int,
                 n_kv_heads: int | None = None, bias: bool = True) -> None:
        super().__init__()
        self.d_model, self.n_heads = d_model, n_heads
        self.n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        self.d_k = d_model // n_heads  # width of one head
        # One layer per projection, heads side by side (W_K, W_V: n_kv_heads).
        self.W_Q = nn.Linear(d_model, d_model, bias=bias)
        self.W_K = nn.Linear(d_model, self.n_kv_heads * self.d_k, bias=bias)
        self.W_V = nn.Linear(d_model, self.n_kv_heads * self.d_k, bias=bias)
        self.W_O = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x: Tensor, n_heads: int | None = None) -> Tensor:
        """``(B, T, n * d_k)`` -> ``(B, n, T, d_k)``: d_k columns a head."""
        B, T, _ = x.shape
        n = self.n_heads if n_heads is None else n_heads  # n_kv_heads: k, v
        return x.view(B, T, n, self.d_k).transpose(1, 2)  # (B, n, T, d_k)

    def expand_kv(self, x: Tensor) -> Tensor:
        """Each k/v head repeated for the query heads of its group (GQA)."""
        group = self.n_heads // self.n_kv_heads  # 1 for MHA: x as it is
        # (B, n_heads, T, d_k)
        return x if group == 1 else x.repeat_interleave(group, dim=1)

    def merge_heads(self, x: Tensor) -> Tensor:
        """``(B, n_heads, T, d_k)`` -> ``(B, T, d_model)``: Concat(heads)."""
        B, _, T, _ = x.shape
        # (B, T, d_model)
        return x.transpose(1, 2).contiguous().view(B, T, self.d_model)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                mask: Tensor | None = None, return_weights: bool = False,
                **options: Any) -> Any:
        """``(B, T_q, d_model)`` queries attend to ``(B, T_k, d_model)``."""
        # 1. Project, then split the d_model columns into heads of d_k.
        q = self.split_heads(self.W_Q(query))  # (B, n_heads, T_q, d_k)
        # k and v: (B, n_kv_heads, T_k, d_k)
        k = self.split_heads(self.W_K(key), self.n_kv_heads)
        v = self.split_heads(self.W_V(value), self.n_kv_heads)
        return self.attend(q, k, v, mask, return_weights, **options)

    def attend(self, q: Tensor, k: Tensor, v: Tensor,
               mask: Tensor | None = None, return_weights: bool = False, *,
               dropout: nn.Module | None = None) -> Any:
        """Steps 2-4 on projected heads; ``dropout`` acts on the weights."""
        k, v = self.expand_kv(k), self.expand_kv(v)  # (B, n_heads, T_k, d_k)
        # 2. Scores, scaled by 1/√d_k, masked, softmax: every head at once.
        weights = attention_weights(q, k, mask)  # (B, n_heads, T_q, T_k)
        dropped = weights if dropout is None else dropout(weights)
        context = dropped @ v  # (B, n_heads, T_q, d_k): each head's output
        # 3. Concatenate the heads; 4. mix them with W_O.
        output = self.W_O(self.merge_heads(context))  # (B, T_q, d_model)
        return (output, weights) if return_weights else output
# fmt: on


class MultiHeadAttention(MultiHeadAttentionReference):
    """Multi-head attention with ``n_heads`` heads of width ``d_k = d_model // n_heads``.

    Parameters
    ----------
    d_model : int
        Width of the token vectors going in and out (768 in BERT-base and GPT-2).
    n_heads : int
        Number of heads ``h``; must divide ``d_model``.
    n_kv_heads : int or None
        Number of key/value heads (``None``: ``n_heads``). Must divide ``n_heads``; ``W_K`` and
        ``W_V`` then map ``d_model -> n_kv_heads * d_k``.
    bias : bool
        Whether the four projections ``W_Q, W_K, W_V, W_O`` have a bias (PyTorch's default: yes).
        Must be a bool (``bias="no"`` is an error, not a truthy string).

    The parameter count, ``4 d_model² (+ 4 d_model)``, does not depend on ``n_heads``: eight
    heads of 64 cost exactly what one head of 512 costs.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> mha = MultiHeadAttention(d_model=8, n_heads=2)
    >>> x = torch.randn(1, 3, 8)                       # (B, T, d_model)
    >>> out, w = mha(x, x, x, return_weights=True)
    >>> tuple(out.shape), tuple(w.shape)               # (B, T_q, d_model), (B, n_heads, T_q, T_k)
    ((1, 3, 8), (1, 2, 3, 3))
    >>> torch.allclose(w.sum(dim=-1), torch.ones(1, 2, 3))  # every row of every head sums to 1
    True
    """

    def __init__(
        self, d_model: int, n_heads: int, n_kv_heads: int | None = None, bias: bool = True
    ) -> None:
        d_model = check_int(d_model, "d_model", low=1)
        n_heads = check_int(n_heads, "n_heads", low=1)
        n_kv_heads = n_heads if n_kv_heads is None else check_int(n_kv_heads, "n_kv_heads", low=1)
        if not isinstance(bias, bool | np.bool_):
            raise TypeError(f"bias must be True or False; got {type(bias).__name__} {bias!r}")
        bias = bool(bias)
        if d_model % n_heads != 0:
            raise ValueError(
                f"d_model must be divisible by n_heads so that every head gets "
                f"d_k = d_model / n_heads dimensions; got d_model = {d_model}, n_heads = {n_heads} "
                f"(d_model / n_heads = {d_model / n_heads:g})"
            )
        if n_heads % n_kv_heads != 0:
            raise ValueError(
                f"n_kv_heads must divide n_heads so that every k/v head is shared by the same "
                f"number of query heads; got n_heads = {n_heads}, n_kv_heads = {n_kv_heads} "
                f"(n_heads / n_kv_heads = {n_heads / n_kv_heads:g})"
            )
        super().__init__(d_model, n_heads, n_kv_heads, bias=bias)

    def extra_repr(self) -> str:
        kv = "" if self.n_kv_heads == self.n_heads else f", n_kv_heads={self.n_kv_heads}"
        return f"d_model={self.d_model}, n_heads={self.n_heads}{kv}, d_k={self.d_k}"

    def _check_inputs(
        self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None
    ) -> Tensor | None:
        check_float_tensor(query, "query", "(B, T_q, d_model)", ndim=3)
        check_float_tensor(key, "key", "(B, T_k, d_model)", ndim=3)
        check_float_tensor(value, "value", "(B, T_k, d_model)", ndim=3)
        for name, x, expected in (
            ("query", query, "(B, T_q, d_model)"),
            ("key", key, "(B, T_k, d_model)"),
            ("value", value, "(B, T_k, d_model)"),
        ):
            check_module_dtype(x, name, self.W_Q.weight.dtype, expected)
            if x.size(-1) != self.d_model:
                raise ValueError(
                    f"{name} has shape {shape_str(tuple(x.shape))}, expected {expected} with "
                    f"d_model = {self.d_model}: its last dimension must equal d_model"
                )
        B, T_q, T_k = query.size(0), query.size(1), key.size(1)
        if T_k == 0:
            raise ValueError(
                f"key has shape {shape_str(tuple(key.shape))}, expected (B, T_k, {self.d_model}) "
                "with T_k >= 1: there must be at least one key to attend to"
            )
        if key.size(0) != B or value.size(0) != B:
            raise ValueError(
                f"query, key and value must have the same batch size B; got query "
                f"{shape_str(tuple(query.shape))}, key {shape_str(tuple(key.shape))}, "
                f"value {shape_str(tuple(value.shape))}"
            )
        if value.size(1) != T_k:
            raise ValueError(
                f"value has shape {shape_str(tuple(value.shape))}, expected ({B}, {T_k}, "
                f"{self.d_model}): value needs one row per key, and key has T_k = {T_k}"
            )
        if mask is None:
            return None
        expected = (B, self.n_heads, T_q, T_k)
        described = "(T_q, T_k), (B, T_q, T_k) or (B, n_heads, T_q, T_k), any of them may be 1"
        if not isinstance(mask, Tensor):
            raise TypeError(
                f"mask must be a boolean torch.Tensor (True = may attend) of shape {described}; "
                f"got {type(mask).__name__}"
            )
        if mask.dtype != torch.bool:
            raise TypeError(
                f"mask must be a boolean tensor (True = may attend); got dtype {mask.dtype} with "
                f"shape {shape_str(tuple(mask.shape))}"
            )
        # Rank decides the meaning: (T_q, T_k), (B, T_q, T_k) or (B, n_heads, T_q, T_k).
        by_rank = {2: expected[2:], 3: (B, T_q, T_k), 4: expected}
        want = by_rank.get(mask.dim())
        if want is None or any(m not in (1, e) for m, e in zip(mask.shape, want, strict=True)):
            raise ValueError(
                f"mask has shape {shape_str(tuple(mask.shape))}, expected {described}, here "
                f"{shape_str(expected[2:])}, {shape_str((B, T_q, T_k))} or {shape_str(expected)}"
            )
        if mask.dim() == 2:
            mask = mask[None, None]  # (1, 1, T_q, T_k)
        elif mask.dim() == 3:
            mask = mask[:, None]  # (B, 1, T_q, T_k)
        return mask  # (B or 1, n_heads or 1, T_q or 1, T_k or 1)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None,
                return_weights: bool = False, *, fast: bool | None = None,
                dropout: nn.Dropout | None = None) -> Tensor | tuple[Tensor, Tensor]:  # fmt: skip
        """Attend from ``query`` ``(B, T_q, d_model)`` to ``key``/``value`` ``(B, T_k, d_model)``.

        ``mask`` is boolean, ``True`` = may attend, of shape ``(T_q, T_k)``, ``(B, T_q, T_k)`` or
        ``(B, n_heads, T_q, T_k)`` (any of these dimensions may be 1; for a key-padding mask of
        shape ``(B, T_k)`` pass ``mask[:, None, :]``). Returns the output ``(B, T_q, d_model)``,
        or ``(output, weights)`` with weights ``(B, n_heads, T_q, T_k)`` when ``return_weights``
        is true.
        ``fast`` chooses the path: by default the fast one when no weights are asked for. Both
        paths give the same output on every input, also on NaN or inf (which propagate as in the
        four steps: a NaN query gives a NaN output row).
        ``dropout`` (an ``nn.Dropout``) is applied to the weights after the softmax, as
        ``torch.nn.MultiheadAttention`` does; while it is active (training, ``p > 0``) the readable
        path is taken, and the weights returned are those before dropout.
        """
        mask = self._check_inputs(query, key, value, mask)  # (B|1, n_heads|1, T_q|1, T_k) or None
        fast = _choose_path(fast, return_weights, dropout)
        return super().forward(query, key, value, mask, return_weights, fast=fast, dropout=dropout)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
               return_weights: bool = False, *, fast: bool | None = None,
               dropout: nn.Dropout | None = None) -> Tensor | tuple[Tensor, Tensor]:  # fmt: skip
        """Steps 2-4 on projected heads: ``q`` ``(B, n_heads, T_q, d_k)``, ``k``/``v``
        ``(B, n_kv_heads, T_k, d_k)``, ``mask`` already ``(B|1, n_heads|1, T_q|1, T_k|1)``.

        :meth:`forward` projects and then calls this; a KV cache (chapter 7) calls it with the
        cached keys and values. Returns what :meth:`forward` returns (``dropout`` as there).
        """
        fast = _choose_path(fast, return_weights, dropout)
        # 2. Scaled dot-product attention in every head at once. The fast kernel may handle NaN or
        # inf differently from the four steps (it can return a finite row where they give NaN), so
        # non-finite projections take the readable path: both paths agree on every input.
        if fast and not all(bool(torch.isfinite(t).all()) for t in (q, k, v)):
            fast = False
        if not fast:
            return super().attend(q, k, v, mask, return_weights, dropout=dropout)
        # enable_gqa lets query head i read k/v head i // group, without copying k and v.
        context = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, enable_gqa=self.n_kv_heads != self.n_heads
        )  # (B, n_heads, T_q, d_k)
        return self.W_O(self.merge_heads(context))  # (B, T_q, d_model); no weights were formed

    @classmethod
    def from_torch(cls, m: nn.MultiheadAttention) -> MultiHeadAttention:
        """A copy, with the same weights and dtype, of a ``torch.nn.MultiheadAttention``.

        PyTorch stores ``W_Q, W_K, W_V`` stacked in ``in_proj_weight`` ``(3 d_model, d_model)`` and
        ``W_O`` in ``out_proj``. Only the plain configuration is supported: ``batch_first=True``,
        ``kdim = vdim = embed_dim``, no ``bias_k``/``bias_v``, ``add_zero_attn=False``. Our layer
        has no dropout, so compare with PyTorch's in ``eval()`` mode (or with ``dropout=0``).

        >>> _ = torch.manual_seed(0)
        >>> ref = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        >>> ours = MultiHeadAttention.from_torch(ref)
        >>> x = torch.randn(1, 3, 8)
        >>> torch.allclose(ours(x, x, x), ref(x, x, x, need_weights=False)[0], atol=1e-6)
        True
        """
        if not isinstance(m, nn.MultiheadAttention):
            raise TypeError(f"m must be a torch.nn.MultiheadAttention; got {type(m).__name__}")
        if not m.batch_first:
            raise ValueError("m must be built with batch_first=True; got batch_first=False")
        if not m._qkv_same_embed_dim or m.in_proj_weight is None:
            raise ValueError("m must have kdim = vdim = embed_dim (one stacked in_proj_weight)")
        if m.bias_k is not None or m.add_zero_attn:
            raise ValueError("m must not use add_bias_kv or add_zero_attn")
        has_bias = m.in_proj_bias is not None
        if has_bias != (m.out_proj.bias is not None):
            raise ValueError("m must have biases on all projections or on none")
        weight = m.in_proj_weight.detach()
        ours = cls(m.embed_dim, m.num_heads, bias=has_bias).to(
            dtype=weight.dtype, device=weight.device
        )
        W_Q, W_K, W_V = weight.chunk(3, dim=0)  # each (d_model, d_model)
        with torch.no_grad():
            ours.W_Q.weight.copy_(W_Q)
            ours.W_K.weight.copy_(W_K)
            ours.W_V.weight.copy_(W_V)
            ours.W_O.weight.copy_(m.out_proj.weight)
            if has_bias:
                b_Q, b_K, b_V = m.in_proj_bias.detach().chunk(3)  # each (d_model,)
                ours.W_Q.bias.copy_(b_Q)
                ours.W_K.bias.copy_(b_K)
                ours.W_V.bias.copy_(b_V)
                ours.W_O.bias.copy_(m.out_proj.bias)
        return ours
