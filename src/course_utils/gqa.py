"""Grouped-query attention (GQA, 分组查询注意力): which heads share, and converting MHA to GQA.

The attention itself is :class:`course_utils.multihead.MultiHeadAttention` with its ``n_kv_heads``
knob: ``n_kv_heads == n_heads`` is multi-head attention (MHA), ``1`` is multi-query attention
(MQA, Shazeer 2019), anything in between GQA (Ainslie et al. 2023). Query head ``i`` reads k/v head
``i // (n_heads / n_kv_heads)``: consecutive query heads form a group, the convention of
``torch.nn.functional.scaled_dot_product_attention(enable_gqa=True)`` and of Llama checkpoints.

Ainslie et al. (2023, §2.1) turn a trained MHA checkpoint into GQA by **mean-pooling** the key and
value projection matrices of the heads in each group, then continue training ("uptraining") for a
small fraction of the original steps. :func:`mean_pool_kv` is the conversion step alone (no
uptraining), and :func:`relative_output_change` measures what it costs before any training.

>>> head_groups(8, 2)
[[0, 1, 2, 3], [4, 5, 6, 7]]
>>> kv_head_of(5, n_heads=8, n_kv_heads=2)
1
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._validation import check_int
from .multihead import MultiHeadAttention

__all__ = [
    "group_similarity",
    "head_groups",
    "kv_head_of",
    "mean_pool_kv",
    "relative_output_change",
]


def _check_heads(n_heads: int, n_kv_heads: int) -> tuple[int, int]:
    n_heads = check_int(n_heads, "n_heads", low=1)
    n_kv_heads = check_int(n_kv_heads, "n_kv_heads", low=1)
    if n_heads % n_kv_heads:
        raise ValueError(
            f"n_kv_heads must divide n_heads so that every k/v head serves the same number of "
            f"query heads; got n_heads = {n_heads}, n_kv_heads = {n_kv_heads}"
        )
    return n_heads, n_kv_heads


def kv_head_of(query_head: int, n_heads: int, n_kv_heads: int) -> int:
    """The k/v head that query head ``query_head`` reads: ``query_head // (n_heads / n_kv_heads)``.

    >>> [kv_head_of(i, 9, 3) for i in range(9)]      # SmolLM2-135M: 9 query heads, 3 k/v heads
    [0, 0, 0, 1, 1, 1, 2, 2, 2]
    """
    n_heads, n_kv_heads = _check_heads(n_heads, n_kv_heads)
    query_head = check_int(query_head, "query_head", low=0, high=n_heads - 1)
    return query_head // (n_heads // n_kv_heads)


def head_groups(n_heads: int, n_kv_heads: int) -> list[list[int]]:
    """For each k/v head, the query heads that share it (consecutive runs of ``n_heads/n_kv``).

    >>> head_groups(4, 4)        # MHA: every query head has its own k/v head
    [[0], [1], [2], [3]]
    >>> head_groups(4, 1)        # MQA: one k/v head for all
    [[0, 1, 2, 3]]
    """
    n_heads, n_kv_heads = _check_heads(n_heads, n_kv_heads)
    g = n_heads // n_kv_heads
    return [list(range(j * g, (j + 1) * g)) for j in range(n_kv_heads)]


def mean_pool_kv(mha: MultiHeadAttention, n_kv_heads: int) -> MultiHeadAttention:
    """A GQA copy of ``mha`` with ``n_kv_heads`` k/v heads, each the mean of its group's heads.

    ``W_Q`` and ``W_O`` are copied unchanged. The rows of ``W_K`` (and its bias) that belong to the
    heads of one group are averaged into that group's single k/v head, and likewise ``W_V``
    (Ainslie et al. 2023, §2.1, Figure 1). ``mha`` may itself be GQA: its k/v heads are pooled
    further (``n_kv_heads`` must divide ``mha.n_kv_heads``). ``mha`` is not changed.

    >>> _ = torch.manual_seed(0)
    >>> mha = MultiHeadAttention(8, 4).double()
    >>> gqa = mean_pool_kv(mha, 2)
    >>> gqa.n_kv_heads, tuple(gqa.W_K.weight.shape)
    (2, (4, 8))
    >>> torch.equal(gqa.W_K.weight[:2], (mha.W_K.weight[:2] + mha.W_K.weight[2:4]) / 2)
    True
    """
    if not isinstance(mha, MultiHeadAttention):
        raise TypeError(f"mha must be a MultiHeadAttention; got {type(mha).__name__}")
    n_kv_heads = check_int(n_kv_heads, "n_kv_heads", low=1)
    if mha.n_kv_heads % n_kv_heads:
        raise ValueError(
            f"n_kv_heads must divide the module's n_kv_heads = {mha.n_kv_heads} (groups are "
            f"pooled, never split); got n_kv_heads = {n_kv_heads}"
        )
    has_bias = mha.W_K.bias is not None
    weight = mha.W_Q.weight
    out = MultiHeadAttention(mha.d_model, mha.n_heads, n_kv_heads, bias=has_bias).to(
        dtype=weight.dtype, device=weight.device
    )
    pool = mha.n_kv_heads // n_kv_heads  # old k/v heads per new one
    d_k = mha.d_k

    def pooled(t: Tensor) -> Tensor:
        # Rows (n_old * d_k, ...) -> (n_new, pool, d_k, ...) -> mean over the pool axis.
        grouped = t.reshape(n_kv_heads, pool, d_k, *t.shape[1:])  # (n_new, pool, d_k, ...)
        return grouped.mean(dim=1).reshape(n_kv_heads * d_k, *t.shape[1:])  # (n_new * d_k, ...)

    with torch.no_grad():
        for name in ("W_Q", "W_O"):
            getattr(out, name).load_state_dict(getattr(mha, name).state_dict())
        for name in ("W_K", "W_V"):
            src, dst = getattr(mha, name), getattr(out, name)
            dst.weight.copy_(pooled(src.weight))  # (n_kv_heads * d_k, d_model)
            if has_bias:
                dst.bias.copy_(pooled(src.bias))  # (n_kv_heads * d_k,)
    return out.train(mha.training)


def relative_output_change(
    mha: MultiHeadAttention, x: Tensor, n_kv_heads: int, mask: Tensor | None = None
) -> float:
    """``‖y_GQA − y‖ / ‖y‖`` for self-attention on ``x`` ``(B, T, d_model)``, where ``y_GQA``
    comes from :func:`mean_pool_kv` ``(mha, n_kv_heads)`` (Frobenius norms over the batch).

    >>> _ = torch.manual_seed(0)
    >>> mha = MultiHeadAttention(8, 4).double()
    >>> x = torch.randn(1, 5, 8, dtype=torch.float64)
    >>> relative_output_change(mha, x, 4)             # no pooling: no change
    0.0
    """
    gqa = mean_pool_kv(mha, n_kv_heads)
    with torch.no_grad():
        y = mha(x, x, x, mask)  # (B, T, d_model)
        y_gqa = gqa(x, x, x, mask)  # (B, T, d_model)
    return float(torch.linalg.vector_norm(y_gqa - y) / torch.linalg.vector_norm(y))


def group_similarity(weights: Tensor, n_kv_heads: int) -> tuple[float, float]:
    """Mean correlation between the attention maps of two query heads that share a k/v head
    (``within``) and of two that do not (``across``): ``(within, across)``.

    ``weights`` is ``(n_heads, T, T)`` causal attention weights of one layer (one sequence). Only
    the entries on and below the diagonal are compared (above it every head has exactly 0, which
    would make any two maps look alike). Pearson correlation over those entries, averaged over
    all pairs of heads of each kind. With one k/v head (MQA) there is no "across" pair: NaN.

    >>> w = torch.softmax(torch.randn(4, 5, 5), -1).tril()
    >>> within, across = group_similarity(w, 2)
    >>> -1 <= within <= 1 and -1 <= across <= 1
    True
    """
    if not isinstance(weights, Tensor) or weights.dim() != 3 or weights.size(1) != weights.size(2):
        got = tuple(weights.shape) if isinstance(weights, Tensor) else type(weights).__name__
        raise ValueError(f"weights must be a tensor of shape (n_heads, T, T); got {got}")
    if not weights.is_floating_point() or bool(weights.isnan().any()):
        raise ValueError(
            f"weights must be floating-point attention weights without NaN; got dtype "
            f"{weights.dtype} with shape {tuple(weights.shape)}"
        )
    n_heads = weights.size(0)
    _check_heads(n_heads, n_kv_heads)
    T = weights.size(1)
    if T < 2:
        raise ValueError(f"weights must cover T >= 2 tokens to correlate maps; got T = {T}")
    rows, cols = torch.tril_indices(T, T)  # the causal entries, i >= j
    flat = weights[:, rows, cols].double()  # (n_heads, T (T + 1) / 2)
    corr = torch.corrcoef(flat)  # (n_heads, n_heads)
    g = n_heads // n_kv_heads
    within, across = [], []
    for i in range(n_heads):
        for j in range(i + 1, n_heads):
            (within if i // g == j // g else across).append(float(corr[i, j]))
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
    return mean(within), mean(across)
