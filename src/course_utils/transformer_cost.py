"""What a Transformer block costs: parameters, and forward FLOPs per token as the length T grows.

FLOPs count the matrix products only, 2 per multiply-add (the convention of
``torch.utils.flop_counter``, against which the tests check these formulas); softmax, LayerNorm, the
activation and the residual adds cost far less and are left out. For one token of a sequence of
``T`` tokens, full (bidirectional) attention, ``d = d_model``:

=====================  =================  ============================================
part                   FLOPs per token    why
=====================  =================  ============================================
attention projections  ``8 d²``           ``W_Q, W_K, W_V, W_O``: 4 products with d × d
attention scores/mix   ``4 T d``          ``q·k`` with T keys, then T weighted values
FFN                    ``4 d d_ff``       ``W_1`` (d × d_ff) and ``W_2`` (d_ff × d)
=====================  =================  ============================================

The ``T``-dependent part ``4 T d`` overtakes the FFN when ``T > d_ff``, and all the rest of the
block when ``T > 2 d + d_ff`` (``T > 6 d`` with ``d_ff = 4 d``). The number of heads does not
appear anywhere: heads share out the same columns.
"""

from __future__ import annotations

from ._validation import check_int

__all__ = ["block_flops_per_token", "block_parameter_count"]


def block_parameter_count(
    d_model: int, n_heads: int, d_ff: int, *, bias: bool = True
) -> dict[str, int]:
    """Parameters of ``TransformerBlock(d_model, n_heads, d_ff, bias=bias)``, by part.

    Returns ``{"attention", "ffn", "norms", "total"}``. ``n_heads`` only has to divide
    ``d_model``; it does not change the count.

    >>> block_parameter_count(512, 8, 2048)           # the base Transformer's encoder layer
    {'attention': 1050624, 'ffn': 2099712, 'norms': 2048, 'total': 3152384}
    """
    d, h, f = (
        check_int(v, n, low=1)
        for v, n in ((d_model, "d_model"), (n_heads, "n_heads"), (d_ff, "d_ff"))
    )
    if d % h:
        raise ValueError(f"d_model must be divisible by n_heads; got d_model = {d}, n_heads = {h}")
    if not isinstance(bias, bool):
        raise TypeError(f"bias must be True or False; got {bias!r}")
    b = int(bias)
    attention = 4 * d * d + 4 * d * b  # W_Q, W_K, W_V, W_O and their biases
    ffn = 2 * d * f + (f + d) * b  # W_1 (d × d_ff) + b_1, W_2 (d_ff × d) + b_2
    norms = 2 * (d + d * b)  # two LayerNorms: gain gamma (+ bias beta)
    return {"attention": attention, "ffn": ffn, "norms": norms, "total": attention + ffn + norms}


def block_flops_per_token(d_model: int, d_ff: int, T: int) -> dict[str, int]:
    """Forward FLOPs of one block per token, for a sequence of ``T`` tokens, by part.

    Returns ``{"attention_projections", "attention_scores", "ffn", "total"}`` (matrix products
    only, 2 FLOPs per multiply-add; see the module docstring).

    >>> c = block_flops_per_token(d_model=512, d_ff=2048, T=2048)
    >>> c["attention_scores"] == c["ffn"]              # the crossover: T = d_ff
    True
    """
    d, f, t = (check_int(v, n, low=1) for v, n in ((d_model, "d_model"), (d_ff, "d_ff"), (T, "T")))
    projections = 8 * d * d  # 4 products (1 × d) @ (d × d), 2 FLOPs per multiply-add
    scores = 4 * t * d  # q·k_j for T keys (2 T d) and sum_j w_j v_j (2 T d)
    ffn = 4 * d * f  # (1 × d) @ (d × d_ff), then (1 × d_ff) @ (d_ff × d)
    return {
        "attention_projections": projections,
        "attention_scores": scores,
        "ffn": ffn,
        "total": projections + scores + ffn,
    }
