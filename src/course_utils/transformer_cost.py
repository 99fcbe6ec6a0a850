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

Decoding one token of a real model (:func:`decode_flops_per_token`, chapter 14) costs ``2`` FLOPs
per *active* weight (a mixture of experts runs only the experts it picks) plus the attention part of
each layer, which depends on the kind of layer (:class:`course_utils.kv_cache.AttentionLayer`):
the keys it reads grow with ``T`` for full attention and MLA, stop at the window or the top-k for
sliding and sparse layers, and a linear layer reads a fixed state instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._validation import check_count, check_int, check_positive_finite
from .kv_cache import AttentionLayer

__all__ = [
    "attention_decode_flops",
    "block_flops_per_token",
    "block_parameter_count",
    "check_decoder_config",
    "cross_kv_multiplies",
    "decode_flops_per_token",
    "decoder_parameter_count",
]


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


def check_decoder_config(
    vocab_size: int, d_model: int, n_layers: int, n_heads: int, n_kv_heads: int, d_ff: int
) -> tuple[int, int, int, int, int, int]:
    """The sizes of a Llama-style decoder, checked: whole numbers >= 1, ``n_heads`` dividing
    ``d_model`` and ``n_kv_heads`` dividing ``n_heads`` (each key/value head serves a group)."""
    v, d, n, h, kv, f = (
        check_int(value, name, low=1)
        for value, name in (
            (vocab_size, "vocab_size"),
            (d_model, "d_model"),
            (n_layers, "n_layers"),
            (n_heads, "n_heads"),
            (n_kv_heads, "n_kv_heads"),
            (d_ff, "d_ff"),
        )
    )
    if d % h:
        raise ValueError(f"d_model must be divisible by n_heads; got d_model = {d}, n_heads = {h}")
    if h % kv:
        raise ValueError(
            f"n_heads must be a multiple of n_kv_heads (each key/value head serves a group of "
            f"query heads); got n_heads = {h}, n_kv_heads = {kv}"
        )
    return v, d, n, h, kv, f


def decoder_parameter_count(
    vocab_size: int,
    d_model: int,
    n_layers: int,
    n_heads: int,
    n_kv_heads: int,
    d_ff: int,
    *,
    tied: bool = True,
) -> dict[str, int]:
    """Parameters of a Llama-style decoder (SmolLM2, Llama), by part: no biases, grouped-query
    attention, a SwiGLU FFN, two RMSNorm gains per block and one after the last block.

    Returns ``{"embedding", "attention", "ffn", "norms", "lm_head", "total"}`` (summed over the
    ``n_layers`` blocks). With ``d_head = d_model / n_heads``:

    - attention: ``W_Q`` and ``W_O`` are ``d_model x d_model``; ``W_K`` and ``W_V`` only
      ``d_model x (n_kv_heads · d_head)``: the query heads of a group share one key/value head;
    - FFN: SwiGLU's three matrices ``W_gate``, ``W_up`` (``d_model x d_ff``) and ``W_down``;
    - ``lm_head`` is 0 when the output layer is the embedding matrix (``tied``, SmolLM2),
      ``vocab_size · d_model`` when it has weights of its own.

    >>> c = decoder_parameter_count(49152, 576, 30, 9, 3, 1536)     # SmolLM2-135M
    >>> c["total"], c["embedding"], c["lm_head"]
    (134515008, 28311552, 0)
    """
    v, d, n, h, kv, f = check_decoder_config(
        vocab_size, d_model, n_layers, n_heads, n_kv_heads, d_ff
    )
    if not isinstance(tied, bool):
        raise TypeError(f"tied must be True or False; got {tied!r}")
    d_kv = kv * (d // h)  # the width of W_K and W_V: n_kv_heads heads of d_head
    embedding = v * d
    attention = n * (2 * d * d + 2 * d * d_kv)  # W_Q, W_O; W_K, W_V
    ffn = n * 3 * d * f  # W_gate, W_up, W_down
    norms = n * 2 * d + d  # two RMSNorm gains per block, and the final RMSNorm
    lm_head = 0 if tied else v * d
    total = embedding + attention + ffn + norms + lm_head
    return {
        "embedding": embedding,
        "attention": attention,
        "ffn": ffn,
        "norms": norms,
        "lm_head": lm_head,
        "total": total,
    }


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


def attention_decode_flops(layer: AttentionLayer, seq_len: int) -> int:
    """FLOPs of one layer's attention for the token at position ``seq_len - 1`` (its scores and
    weighted sum, or its state update; the projections are weights, counted apart).

    With ``R`` = the keys it reads (:meth:`AttentionLayer.reads`), ``h`` query heads:

    - ``full``, ``sliding``: ``4 h d_head R`` (``q·k`` over ``R`` keys, then ``R`` weighted
      values; the same ``4 T d`` as :func:`block_flops_per_token`);
    - ``mla``: ``2 h (d_c + d_h^R) R + 2 h d_c R``, the absorbed form decoding uses: every head
      scores the cached latent and RoPE key, then mixes latents (its up-projections are weights);
    - ``dsa``: MLA over ``R = min(T, top_k)`` tokens plus the indexer scoring all ``T``:
      ``2 H_I D_I T``;
    - ``linear``: ``4 h d_k d_v`` (write ``k vᵀ`` into the state, read ``Sᵀ q``), whatever ``T``;
    - ``deltanet``: ``6 h d_k d_v`` (also ``Sᵀ k``, what the state predicts for ``k``).

    Element-wise work (softmax, decays, gates, a sink's one extra logit) is left out, as in the
    rest of this module.

    >>> gqa = AttentionLayer("full", n_heads=32, n_kv_heads=8, d_head=128)
    >>> attention_decode_flops(gqa, 1024)                    # 4 · 32 · 128 · 1024
    16777216
    >>> local = AttentionLayer("sliding", n_heads=32, n_kv_heads=8, d_head=128, window=128)
    >>> attention_decode_flops(local, 10**6) == attention_decode_flops(local, 128)
    True
    """
    if not isinstance(layer, AttentionLayer):
        raise TypeError(f"layer must be an AttentionLayer; got {type(layer).__name__}")
    T = check_count(seq_len, "seq_len")
    h, R = layer.n_heads, layer.reads(T)
    if layer.kind in ("full", "sliding"):
        return 4 * h * layer.d_head * R
    if layer.kind in ("mla", "dsa"):
        d_c, d_r = layer.d_latent_kv, layer.d_head_rope
        flops = 2 * h * (d_c + d_r) * R + 2 * h * d_c * R  # scores on latents, then latent mix
        if layer.kind == "dsa":
            flops += 2 * layer.index_n_heads * layer.index_head_dim * T  # the indexer reads all
        return flops
    per_head = layer.d_key * layer.d_value
    return (6 if layer.kind == "deltanet" else 4) * h * per_head


def decode_flops_per_token(
    active_params: float, layers: Sequence[AttentionLayer], seq_len: int
) -> float:
    """FLOPs to decode the token at position ``seq_len - 1``: ``2 · active_params`` (one
    multiply-add per weight the token goes through) plus every layer's
    :func:`attention_decode_flops`.

    ``active_params`` is the count a model card gives (embeddings included, as they usually are,
    although an embedding lookup is not a product: a small overestimate).

    >>> gqa = AttentionLayer("full", n_heads=32, n_kv_heads=8, d_head=128)
    >>> decode_flops_per_token(8e9, [gqa] * 32, 1024) / 1e9  # Llama-3-8B-like, at 1k tokens
    16.536870912
    """
    weights = 2.0 * check_positive_finite(active_params, "active_params")
    if not layers or not all(isinstance(layer, AttentionLayer) for layer in layers):
        raise TypeError("layers must be a non-empty sequence of AttentionLayer")
    check_count(seq_len, "seq_len")
    return weights + sum(attention_decode_flops(layer, seq_len) for layer in layers)


def cross_kv_multiplies(
    d_model: int, t_src: int, n_steps: int, n_layers: int, *, cached: bool
) -> int:
    """Multiplies spent projecting the memory through the cross-attention's ``W_K`` and ``W_V``
    while an encoder–decoder writes ``n_steps`` tokens (matrix products only, no biases).

    Each decoder block projects every one of the ``t_src`` source rows through two ``d_model ×
    d_model`` matrices: ``2 · t_src · d_model²`` multiplies per block. Without a cache every step
    does it again (``n_steps`` times); with one it is done once per source
    (:meth:`course_utils.decoder.DecoderBlock.cross_kv`). Checked against
    ``torch.utils.flop_counter`` on chapter 8's model (``tests/test_reversal.py``).

    >>> cross_kv_multiplies(32, 8, 9, 2, cached=False)    # chapter 8's model, an 8-letter word
    294912
    >>> cross_kv_multiplies(32, 8, 9, 2, cached=True)     # 9 times fewer: once instead of 9 times
    32768
    """
    sizes = {"d_model": d_model, "t_src": t_src, "n_steps": n_steps, "n_layers": n_layers}
    d, t, n, layers = (check_int(value, name, low=1) for name, value in sizes.items())
    if not isinstance(cached, bool):
        raise TypeError(f"cached must be True or False; got {type(cached).__name__} {cached!r}")
    per_pass = layers * 2 * t * d * d  # every block: t rows through W_K and through W_V
    return per_pass if cached else n * per_pass
