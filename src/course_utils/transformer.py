"""The Transformer block (Transformer 块): attention, residual connections, LayerNorm and the FFN.

Pre-LN (Xiong et al., 2020; what GPT-2 and most current models do)::

    x = x + Dropout(Attn(LN1(x)))          # tokens exchange information
    x = x + Dropout(FFN(LN2(x)))           # each token is transformed on its own

Post-LN (the original Transformer, Vaswani et al., 2017, section 3.1)::

    x = LN1(x + Dropout(Attn(x)))
    x = LN2(x + Dropout(FFN(x)))

``FFN(x) = W_2 act(W_1 x + b_1) + b_2`` is the position-wise feed-forward network, ``d_model ->
d_ff -> d_model``. The attention sublayer is :class:`course_utils.multihead.MultiHeadAttention`;
dropout on the attention *weights* (PyTorch's ``dropout`` inside ``nn.MultiheadAttention``) sits
between the softmax and the weighted sum of values, see :meth:`TransformerBlock.self_attention`.

Masks are boolean with ``True`` = may attend, any shape ``MultiHeadAttention`` accepts:
``(T, T)`` (e.g. a causal mask), ``(B, T, T)``, ``(B, n_heads, T, T)``, and ``(B, 1, T)`` for key
padding. ``torch.nn.TransformerEncoderLayer`` uses the opposite polarity (``src_mask`` and
``src_key_padding_mask``: ``True`` = may NOT attend). :meth:`TransformerBlock.from_torch` copies
weights, not masks: pass ``~mask`` to PyTorch's layer.

Costs (:mod:`course_utils.transformer_cost`) and the block's intermediate values (:meth:`trace`,
:func:`sublayer_norms`) are what chapter 6 measures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._validation import (
    check_bool,
    check_int,
    check_module_dtype,
    check_positive_finite,
    shape_str,
)
from .kv_cache import KVCache, cached_self_attention_checked, check_cache
from .multihead import MultiHeadAttention

__all__ = [
    "ACTIVATIONS",
    "BlockTrace",
    "FeedForward",
    "SwiGLU",
    "TransformerBlock",
    "TransformerSize",
    "sublayer_norms",
]

#: The activations of the FFN, by name: exactly PyTorch's ``"relu"`` and ``"gelu"`` (erf form).
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}


def _check_activation(activation: object) -> str:
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}; got {activation!r}")
    return activation


def _check_dropout(p: object) -> float:
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p < 1.0:
        raise ValueError(f"dropout must be a probability in [0, 1); got {p!r}")
    return float(p)


def _init_block_settings(
    block: nn.Module,
    d_model: object,
    n_heads: object,
    d_ff: object,
    dropout: object,
    norm_first: object,
    bias: object,
) -> bool:
    """Check an encoder or decoder block's settings and store them on ``block``; return ``bias``.

    The one place both block kinds validate their sizes, so their error messages agree.
    """
    check_int(d_model, "d_model", low=1)
    check_int(n_heads, "n_heads", low=1)
    if d_model % n_heads:  # type: ignore[operator]
        raise ValueError(
            f"d_model must be divisible by n_heads (every head gets d_model / n_heads "
            f"dimensions); got d_model = {d_model}, n_heads = {n_heads}"
        )
    block.d_model, block.n_heads, block.d_ff = d_model, n_heads, check_int(d_ff, "d_ff", low=1)
    block.norm_first = check_bool(norm_first, "norm_first")
    block.p_dropout = _check_dropout(dropout)
    return check_bool(bias, "bias")


class FeedForward(nn.Module):
    """The position-wise feed-forward network (前馈网络): ``d_model -> d_ff -> d_model``.

    The same two linear layers are applied to every token on its own; no information moves
    between tokens here.

    >>> _ = torch.manual_seed(0)
    >>> ffn = FeedForward(d_model=4, d_ff=16)
    >>> ffn(torch.randn(2, 3, 4)).shape                  # (B, T, d_model) -> (B, T, d_model)
    torch.Size([2, 3, 4])
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        *,
        activation: str = "relu",
        dropout: float = 0.0,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.activation = _check_activation(activation)
        self.linear1 = nn.Linear(
            check_int(d_model, "d_model", low=1), check_int(d_ff, "d_ff", low=1), bias
        )
        self.dropout = nn.Dropout(_check_dropout(dropout))
        self.linear2 = nn.Linear(d_ff, d_model, bias=check_bool(bias, "bias"))

    def forward(self, x: Tensor) -> Tensor:
        h = ACTIVATIONS[self.activation](self.linear1(x))  # (B, T, d_ff): widen, then bend
        h = self.dropout(h)  # (B, T, d_ff): PyTorch's encoder layer drops here too
        return self.linear2(h)  # (B, T, d_model)


class SwiGLU(nn.Module):
    """The gated feed-forward network of Llama-family models: ``W_down (SiLU(W_gate x) * W_up x)``.

    SwiGLU (Shazeer 2020, "GLU Variants Improve Transformer") replaces ``act(W_1 x)`` by the
    elementwise product of two projections, one passed through SiLU (``x·sigmoid(x)``, also called
    Swish) as a *gate*. Three matrices instead of two, none with a bias, as in Llama: ``gate`` and
    ``up`` are ``d_model -> d_ff``, ``down`` is ``d_ff -> d_model``. To keep the parameters of a
    ReLU FFN with ``d_ff = 4 d_model``, the convention is ``d_ff = 2/3 · 4 d_model``
    (:meth:`hidden_size`); SmolLM2-135M (chapter 10) is this module with ``d_model = 576``,
    ``d_ff = 1536``. ``tests/test_transformer.py`` checks it against ``transformers``' ``LlamaMLP``.

    >>> _ = torch.manual_seed(0)
    >>> mlp = SwiGLU(d_model=6, d_ff=16)
    >>> mlp(torch.randn(2, 3, 6)).shape                  # (B, T, d_model) -> (B, T, d_model)
    torch.Size([2, 3, 6])
    >>> sum(p.numel() for p in mlp.parameters()) == 3 * 6 * 16
    True
    >>> SwiGLU.hidden_size(768)                          # 2/3 · 4 · 768
    2048
    """

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        d_model, d_ff = check_int(d_model, "d_model", low=1), check_int(d_ff, "d_ff", low=1)
        self.gate = nn.Linear(d_model, d_ff, bias=False)
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    @staticmethod
    def hidden_size(d_model: int, multiple_of: int = 1) -> int:
        """``2/3 · 4 d_model``, rounded up to a multiple of ``multiple_of`` (Llama uses 256).

        The same parameters as a two-matrix FFN of width ``4 d_model``: ``3 d_model d_ff =
        2 d_model (4 d_model)``.

        >>> SwiGLU.hidden_size(4096, multiple_of=256)    # Llama 7B's 11008
        11008
        """
        d_model = check_int(d_model, "d_model", low=1)
        multiple_of = check_int(multiple_of, "multiple_of", low=1)
        d_ff = int(2 * 4 * d_model / 3)
        return multiple_of * -(-d_ff // multiple_of)

    def forward(self, x: Tensor) -> Tensor:
        gated = F.silu(self.gate(x)) * self.up(x)  # (B, T, d_ff): the gate scales each unit
        return self.down(gated)  # (B, T, d_model)


@dataclass(frozen=True)
class BlockTrace:
    """Every intermediate of one pass through a block, all ``(B, T, d_model)`` except ``weights``.

    ``attn_out`` and ``ffn_out`` are what the two sublayers *add* to the residual stream (before
    any post-LN normalisation); ``weights`` ``(B, n_heads, T, T)`` is the attention before dropout.
    """

    x: Tensor  # the block's input (the residual stream)
    attn_in: Tensor  # what the attention reads: LN1(x) in pre-LN, x in post-LN
    weights: Tensor  # (B, n_heads, T, T)
    attn_out: Tensor  # the attention sublayer's output, added to the stream
    mid: Tensor  # the stream between the sublayers
    ffn_in: Tensor  # LN2(mid) in pre-LN, mid in post-LN
    ffn_out: Tensor  # the FFN's output, added to the stream
    out: Tensor  # the block's output


class _Block(nn.Module):
    """What the encoder block and the decoder block share: their settings (checked once, by
    :func:`_init_block_settings`), the check of their inputs and their ``repr``. A subclass makes
    its sublayers in ``_build``, given the checked settings."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        *,
        dropout: float = 0.0,
        norm_first: bool = True,
        activation: str = "relu",
        bias: bool = True,
        layer_norm_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        bias = _init_block_settings(self, d_model, n_heads, d_ff, dropout, norm_first, bias)
        self._build(activation, bias, check_positive_finite(layer_norm_eps, "layer_norm_eps"))

    def _build(self, activation: str, bias: bool, layer_norm_eps: float) -> None:
        """Make the sublayers; the checked ``d_model, n_heads, d_ff, p_dropout`` are on ``self``."""
        raise NotImplementedError

    def extra_repr(self) -> str:
        kind = "pre-LN" if self.norm_first else "post-LN"
        act = self.ffn.activation
        return f"{kind}, d_ff={self.d_ff}, activation={act!r}, dropout={self.p_dropout}"

    def _check(self, x: object, name: str, expected: str) -> Tensor:
        if not isinstance(x, Tensor) or not x.is_floating_point():
            got = f"dtype {x.dtype}" if isinstance(x, Tensor) else type(x).__name__
            raise TypeError(f"{name} must be a floating-point torch.Tensor {expected}; got {got}")
        if x.dim() != 3 or x.size(-1) != self.d_model:
            raise ValueError(
                f"{name} has shape {shape_str(tuple(x.shape))}, expected {expected} with "
                f"d_model = {self.d_model}"
            )
        # Before any sublayer: otherwise LayerNorm fails first with PyTorch's "mixed dtype".
        check_module_dtype(x, name, self.ffn.linear1.weight.dtype, expected)
        return x


class TransformerBlock(_Block):
    """One Transformer encoder block built on :class:`MultiHeadAttention`.

    Parameters
    ----------
    d_model, n_heads : int
        Width of the token vectors and number of heads (``n_heads`` must divide ``d_model``).
    d_ff : int
        Hidden width of the FFN (``4 * d_model`` in the original Transformer and in GPT-2).
    dropout : float
        Probability for every dropout: on the attention weights, after each sublayer, and inside
        the FFN (as ``torch.nn.TransformerEncoderLayer``). Active only in ``train()`` mode.
    norm_first : bool
        ``True``: pre-LN (the default here, unlike PyTorch). ``False``: post-LN.
    activation : {"relu", "gelu"}
    bias : bool
        Biases in every linear layer and in both LayerNorms.
    layer_norm_eps : float
        The ``eps`` of both LayerNorms (PyTorch's default, 1e-5).

    >>> _ = torch.manual_seed(0)
    >>> block = TransformerBlock(d_model=8, n_heads=2, d_ff=32)
    >>> x = torch.randn(1, 5, 8)                          # (B, T, d_model)
    >>> block(x).shape                                    # same shape out: blocks stack
    torch.Size([1, 5, 8])
    >>> causal = torch.ones(5, 5, dtype=torch.bool).tril()   # True = may attend
    >>> torch.allclose(block(x, causal)[:, :3], block(x[:, :3], causal[:3, :3]), atol=1e-6)
    True
    """

    def _build(self, activation: str, bias: bool, layer_norm_eps: float) -> None:
        d_model, n_heads, d_ff, dropout = self.d_model, self.n_heads, self.d_ff, self.p_dropout
        self.attn = MultiHeadAttention(d_model, n_heads, bias=bias)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.ffn = FeedForward(d_model, d_ff, activation=activation, dropout=dropout, bias=bias)
        self.attn_dropout = nn.Dropout(dropout)  # on the attention weights
        self.dropout1 = nn.Dropout(dropout)  # on the attention sublayer's output
        self.dropout2 = nn.Dropout(dropout)  # on the FFN's output

    def _check_x(self, x: object) -> Tensor:
        return self._check(x, "x", "(B, T, d_model)")

    def self_attention(
        self, h: Tensor, mask: Tensor | None = None, *, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, Tensor]:
        """The attention sublayer on ``h`` ``(B, T, d_model)``, with dropout on its weights.

        In ``eval()`` mode (or with ``dropout=0``) this is exactly ``self.attn(h, h, h, mask)``.
        In training, some weights are zeroed and the rest scaled by ``1 / (1 - p)`` after the
        softmax, so a token randomly loses some of the tokens it drew from.
        """
        return self.attn(h, h, h, mask, return_weights, dropout=self.attn_dropout)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        *,
        causal: bool = False,
        cache: KVCache | None = None,
    ) -> Tensor:
        """``x`` ``(B, T, d_model)`` -> ``(B, T, d_model)``; ``mask``: True = may attend.

        ``causal=True`` masks the future (a decoder block, chapter 7). ``cache`` (a
        :class:`course_utils.kv_cache.KVCache`) makes ``x`` the *new* tokens of a sequence whose
        earlier keys and values are cached: the block is then causal and only ``x`` is computed.
        """
        self._check_x(x)
        causal = check_bool(causal, "causal")
        if (causal or cache is not None) and mask is not None:
            raise ValueError("pass either mask or causal=True/cache, not both")
        if cache is not None:
            if self.training and self.p_dropout > 0:
                raise ValueError("the KV cache is for inference: call .eval() first (dropout > 0)")

            check_cache(cache, x, self.attn)  # once here; the attention below checks nothing

            def attend(h: Tensor) -> Tensor:
                return cached_self_attention_checked(self.attn, h, cache)  # (B, T, d_model)
        else:
            if causal:
                T = x.size(1)
                mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()  # (T, T)

            def attend(h: Tensor) -> Tensor:
                return self.self_attention(h, mask)  # (B, T, d_model)

        if self.norm_first:
            x = x + self.dropout1(attend(self.norm1(x)))  # (B, T, d_model)
            return x + self.dropout2(self.ffn(self.norm2(x)))  # (B, T, d_model)
        x = self.norm1(x + self.dropout1(attend(x)))  # (B, T, d_model)
        return self.norm2(x + self.dropout2(self.ffn(x)))  # (B, T, d_model)

    def trace(self, x: Tensor, mask: Tensor | None = None) -> BlockTrace:
        """The pass of :meth:`forward`, keeping every intermediate (see :class:`BlockTrace`)."""
        self._check_x(x)
        attn_in = self.norm1(x) if self.norm_first else x  # (B, T, d_model)
        attn_out, weights = self.self_attention(attn_in, mask, return_weights=True)
        attn_out = self.dropout1(attn_out)  # (B, T, d_model)
        mid = x + attn_out if self.norm_first else self.norm1(x + attn_out)  # (B, T, d_model)
        ffn_in = self.norm2(mid) if self.norm_first else mid  # (B, T, d_model)
        ffn_out = self.dropout2(self.ffn(ffn_in))  # (B, T, d_model)
        out = mid + ffn_out if self.norm_first else self.norm2(mid + ffn_out)  # (B, T, d_model)
        return BlockTrace(x, attn_in, weights, attn_out, mid, ffn_in, ffn_out, out)

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> TransformerBlock:
        """A copy, with the same weights and dtype, of a ``torch.nn.TransformerEncoderLayer``.

        The layer must be built with ``batch_first=True``, the ``"relu"`` or ``"gelu"``
        activation, and the same ``eps`` in both LayerNorms; ``norm_first`` and ``bias`` are
        copied. Compare in ``eval()`` mode (dropout draws different random numbers).

        >>> _ = torch.manual_seed(0)
        >>> ref = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True).eval()
        >>> ours = TransformerBlock.from_torch(ref).eval()
        >>> x = torch.randn(2, 5, 8)
        >>> torch.allclose(ours(x), ref(x), atol=1e-6)
        True
        """
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise TypeError(
                f"layer must be a torch.nn.TransformerEncoderLayer; got {type(layer).__name__}"
            )
        sa = layer.self_attn
        if not sa.batch_first:
            raise ValueError("layer must be built with batch_first=True; got batch_first=False")
        names = {1: "relu", 2: "gelu"}
        if layer.activation_relu_or_gelu not in names:
            raise ValueError(f"layer's activation must be relu or gelu; got {layer.activation!r}")
        if layer.norm1.eps != layer.norm2.eps:
            raise ValueError(
                f"norm1.eps and norm2.eps differ: {layer.norm1.eps}, {layer.norm2.eps}"
            )
        weight = sa.in_proj_weight.detach()
        ours = cls(
            sa.embed_dim,
            sa.num_heads,
            layer.linear1.out_features,
            dropout=layer.dropout.p,
            norm_first=bool(layer.norm_first),
            activation=names[layer.activation_relu_or_gelu],
            bias=layer.linear1.bias is not None,
            layer_norm_eps=layer.norm1.eps,
        ).to(dtype=weight.dtype, device=weight.device)
        ours.attn = MultiHeadAttention.from_torch(sa)
        for mine, theirs in (
            (ours.ffn.linear1, layer.linear1),
            (ours.ffn.linear2, layer.linear2),
            (ours.norm1, layer.norm1),
            (ours.norm2, layer.norm2),
        ):
            mine.load_state_dict(theirs.state_dict())
        return ours.train(layer.training)


def sublayer_norms(
    blocks: Sequence[TransformerBlock], x: Tensor, mask: Tensor | None = None
) -> list[dict[str, float]]:
    """How big is each sublayer's contribution next to the residual stream it is added to?

    Runs ``x`` ``(B, T, d_model)`` through ``blocks`` in order and returns, per block, the mean
    over tokens of the Euclidean norms ``"stream"`` (of the block's input), ``"attn"`` (of what
    the attention adds), ``"ffn"`` (of what the FFN adds) and ``"out"`` (of the block's output).

    >>> _ = torch.manual_seed(0)
    >>> blocks = [TransformerBlock(8, 2, 32).eval() for _ in range(2)]
    >>> rows = sublayer_norms(blocks, torch.randn(1, 4, 8))
    >>> len(rows), sorted(rows[0])
    (2, ['attn', 'ffn', 'out', 'stream'])
    """
    rows = []
    with torch.no_grad():
        for block in blocks:
            t = block.trace(x, mask)
            norm = lambda v: float(v.norm(dim=-1).mean())  # noqa: E731 - mean over (B, T)
            rows.append(
                {
                    "stream": norm(t.x),
                    "attn": norm(t.attn_out),
                    "ffn": norm(t.ffn_out),
                    "out": norm(t.out),
                }
            )
            x = t.out  # (B, T, d_model)
    return rows


@dataclass(frozen=True)
class TransformerSize:
    """The size of a stack of blocks: width ``d_model``, ``n_heads`` heads, FFN width ``d_ff``,
    ``n_layers`` blocks (the ``size`` of an experiment's config); the blocks check the values when
    they are built.

    >>> size = TransformerSize(d_model=32, n_heads=2, d_ff=64, n_layers=2)
    >>> size.d_model // size.n_heads   # d_k of every head
    16
    """

    d_model: int
    n_heads: int
    d_ff: int
    n_layers: int

    @classmethod
    def of(cls, config: Any) -> TransformerSize:
        """The size held by an experiment's flat config (its four fields of the same names)."""
        return cls(config.d_model, config.n_heads, config.d_ff, config.n_layers)
