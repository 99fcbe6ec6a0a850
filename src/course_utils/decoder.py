"""The decoder block (解码器块): causal self-attention, cross-attention (交叉注意力), then the FFN.

Cross-attention is the same multi-head attention as before with its inputs from two sequences:
the queries come from the decoder's tokens ``x`` ``(B, T_q, d_model)``, the keys and values from
the encoder's output, the *memory* ``(B, T_k, d_model)`` (Vaswani et al., 2017, section 3.2.3).
Row ``i`` of its weights ``(B, n_heads, T_q, T_k)`` says where output step ``i`` looks in the
source.

Pre-LN (``norm_first=True``)::

    x = x + Dropout(SelfAttn(LN1(x), causal))
    x = x + Dropout(CrossAttn(LN2(x), memory))
    x = x + Dropout(FFN(LN3(x)))

Post-LN (the original Transformer)::

    x = LN1(x + Dropout(SelfAttn(x, causal)))
    x = LN2(x + Dropout(CrossAttn(x, memory)))
    x = LN3(x + Dropout(FFN(x)))

Decoding with a cached source (:meth:`DecoderBlock.cross_kv`, :meth:`DecoderBlock.step`): the
cross-attention's keys and values depend on the memory only, never on the output written so far,
so a block projects them once per source (:class:`CrossKV`) and every later step reuses them,
beside the usual KV cache of its self-attention (:class:`course_utils.kv_cache.KVCache`).

As in ``torch.nn.TransformerDecoderLayer``, the memory is used as it comes (the encoder's final
LayerNorm has normalised it). Masks are boolean with ``True`` = may attend; PyTorch's layer uses
the opposite polarity (``tgt_mask``, ``memory_key_padding_mask``: ``True`` = may NOT attend).
:meth:`DecoderBlock.from_torch` copies weights, not masks. The public name is importable from
:mod:`course_utils.transformer` too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ._validation import check_bool, shape_str
from .kv_cache import KVCache, cached_self_attention_checked, check_cache
from .multihead import MultiHeadAttention
from .transformer import FeedForward, _Block

__all__ = ["CrossKV", "DecoderBlock", "DecoderWeights"]

# one sublayer: its input (B, T_q, d_model) -> its output and, if asked, its weights
_Sublayer = Callable[[Tensor], tuple[Tensor, Tensor | None]]


@dataclass(frozen=True)
class DecoderWeights:
    """The attention weights of one decoder block (before dropout)."""

    self_attn: Tensor  # (B, n_heads, T_q, T_q): among the output steps (causal in a decoder)
    cross: Tensor  # (B, n_heads, T_q, T_k): from each output step to each source position


@dataclass(frozen=True)
class CrossKV:
    """One decoder block's cross-attention keys and values for a batch of sources, computed once
    by :meth:`DecoderBlock.cross_kv` and read by every :meth:`DecoderBlock.step` of the decoding.
    """

    keys: Tensor  # (B, n_kv_heads, T_k, d_k): memory @ W_K, split into heads
    values: Tensor  # (B, n_kv_heads, T_k, d_k): memory @ W_V, split into heads
    mask: Tensor | None  # (B, 1, 1, T_k), True = may attend (the key-padding mask), or None

    def __len__(self) -> int:
        return int(self.keys.size(2))  # T_k, the source's length


class DecoderBlock(_Block):
    """One Transformer decoder block: masked self-attention, cross-attention, FFN.

    Parameters are those of :class:`~course_utils.transformer.TransformerBlock`; the block has a
    second attention (``cross_attn``) and a third LayerNorm.

    >>> _ = torch.manual_seed(0)
    >>> block = DecoderBlock(d_model=8, n_heads=2, d_ff=32)
    >>> x, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)   # T_q = 3 output steps, T_k = 5
    >>> causal = torch.ones(3, 3, dtype=torch.bool).tril()         # True = may attend
    >>> out, w = block(x, memory, self_mask=causal, return_weights=True)
    >>> tuple(out.shape), tuple(w.cross.shape)        # (B, T_q, d_model), (B, n_heads, T_q, T_k)
    ((2, 3, 8), (2, 2, 3, 5))
    """

    def _build(self, activation: str, bias: bool, layer_norm_eps: float) -> None:
        d_model, n_heads, d_ff, dropout = self.d_model, self.n_heads, self.d_ff, self.p_dropout
        self.self_attn = MultiHeadAttention(d_model, n_heads, bias=bias)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, bias=bias)
        self.ffn = FeedForward(d_model, d_ff, activation=activation, dropout=dropout, bias=bias)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.self_attn_dropout = nn.Dropout(dropout)  # on the self-attention weights
        self.cross_attn_dropout = nn.Dropout(dropout)  # on the cross-attention weights
        self.dropout1 = nn.Dropout(dropout)  # on each sublayer's output
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        *,
        self_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        return_weights: bool = False,
    ) -> Tensor | tuple[Tensor, DecoderWeights]:
        """``x`` ``(B, T_q, d_model)`` reads ``memory`` ``(B, T_k, d_model)``; same shape out.

        ``self_mask`` (e.g. causal, ``(T_q, T_q)``) and ``memory_mask`` (e.g. key padding,
        ``(B, 1, T_k)``, or ``(T_q, T_k)``, ``(B, T_q, T_k)``) are boolean, ``True`` = may attend;
        ``None`` = no mask. With ``return_weights`` the result is ``(out, DecoderWeights)``.
        """
        self._check(x, "x", "(B, T_q, d_model)")
        self._check(memory, "memory", "(B, T_k, d_model)")
        return_weights = check_bool(return_weights, "return_weights")
        if memory.size(0) != x.size(0):
            raise ValueError(
                f"memory has shape {shape_str(tuple(memory.shape))}, expected ({x.size(0)}, T_k, "
                f"{self.d_model}): the same batch size B as x {shape_str(tuple(x.shape))}"
            )

        def attend(attn: MultiHeadAttention, drop: nn.Dropout, h: Tensor, source: Tensor,
                   mask: Tensor | None) -> tuple[Tensor, Tensor | None]:  # fmt: skip
            out = attn(h, source, source, mask, return_weights, dropout=drop)  # dropout on weights
            return out if return_weights else (out, None)

        def sa(h: Tensor) -> tuple[Tensor, Tensor | None]:  # masked self-attention
            return attend(self.self_attn, self.self_attn_dropout, h, h, self_mask)

        def ca(h: Tensor) -> tuple[Tensor, Tensor | None]:  # cross-attention: h reads memory
            return attend(self.cross_attn, self.cross_attn_dropout, h, memory, memory_mask)

        x, w_self, w_cross = self._sublayers(x, sa, ca)
        if return_weights:
            assert w_self is not None and w_cross is not None
            return x, DecoderWeights(w_self, w_cross)
        return x

    def _sublayers(
        self, x: Tensor, sa: _Sublayer, ca: _Sublayer
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """The wiring (pre-LN or post-LN) around the two attentions ``sa`` and ``ca``, shared by
        :meth:`forward` and :meth:`step` so that the cached path cannot drift from the full one."""
        if self.norm_first:
            a, w_self = sa(self.norm1(x))
            x = x + self.dropout1(a)  # (B, T_q, d_model): the output steps exchange information
            c, w_cross = ca(self.norm2(x))
            x = x + self.dropout2(c)  # (B, T_q, d_model): each step reads the source
            x = x + self.dropout3(self.ffn(self.norm3(x)))  # (B, T_q, d_model)
        else:
            a, w_self = sa(x)
            x = self.norm1(x + self.dropout1(a))  # (B, T_q, d_model)
            c, w_cross = ca(x)
            x = self.norm2(x + self.dropout2(c))  # (B, T_q, d_model)
            x = self.norm3(x + self.dropout3(self.ffn(x)))  # (B, T_q, d_model)
        return x, w_self, w_cross

    def cross_kv(self, memory: Tensor, memory_mask: Tensor | None = None) -> CrossKV:
        """The cross-attention keys and values of ``memory`` ``(B, T_k, d_model)``, projected once.

        They depend on the source only, so one :class:`CrossKV` serves every decoding step of
        that source (:meth:`step`). ``memory_mask`` is the key-padding mask ``(B, 1, T_k)``
        (``True`` = may attend), as :meth:`forward` takes it, or ``None``.

        >>> _ = torch.manual_seed(0)
        >>> block = DecoderBlock(d_model=8, n_heads=2, d_ff=16).eval()
        >>> cross = block.cross_kv(torch.randn(1, 5, 8))      # a source of T_k = 5 positions
        >>> tuple(cross.keys.shape), len(cross)               # (B, n_kv_heads, T_k, d_k)
        ((1, 2, 5, 4), 5)
        """
        memory = self._check(memory, "memory", "(B, T_k, d_model)")
        B, T_k = memory.size(0), memory.size(1)
        if T_k == 0:
            raise ValueError(
                f"memory has shape {shape_str(tuple(memory.shape))}, expected (B, T_k, "
                f"{self.d_model}) with T_k >= 1: there must be a source to attend to"
            )
        mask = None
        if memory_mask is not None:
            expected = shape_str((B, 1, T_k))
            if not isinstance(memory_mask, Tensor) or memory_mask.dtype != torch.bool:
                got = (
                    f"dtype {memory_mask.dtype}"
                    if isinstance(memory_mask, Tensor)
                    else type(memory_mask).__name__
                )
                raise TypeError(
                    f"memory_mask must be a boolean torch.Tensor {expected} (True = may attend); "
                    f"got {got}"
                )
            if tuple(memory_mask.shape) != (B, 1, T_k):
                raise ValueError(
                    f"memory_mask has shape {shape_str(tuple(memory_mask.shape))}, expected "
                    f"{expected}: one key-padding row per source of memory "
                    f"{shape_str(tuple(memory.shape))}"
                )
            mask = memory_mask[:, None]  # (B, 1, 1, T_k): every head, every output step
        attn = self.cross_attn
        keys = attn.split_heads(attn.W_K(memory), attn.n_kv_heads)  # (B, n_kv_heads, T_k, d_k)
        values = attn.split_heads(attn.W_V(memory), attn.n_kv_heads)  # (B, n_kv_heads, T_k, d_k)
        return CrossKV(keys, values, mask)

    def step(self, x: Tensor, cross: CrossKV, cache: KVCache) -> Tensor:
        """The block on the *new* tokens ``x`` ``(B, T_new, d_model)`` of a decoding; same shape.

        ``cache`` holds the self-attention keys and values of the earlier tokens (it gets the new
        ones appended); ``cross`` holds the source's cross-attention keys and values
        (:meth:`cross_kv`), read, never recomputed. Equal to the last ``T_new`` rows of
        :meth:`forward` on the whole sequence with a causal mask (``tests/test_decoder.py``).

        >>> _ = torch.manual_seed(0)
        >>> block = DecoderBlock(d_model=8, n_heads=2, d_ff=16).eval()
        >>> x, memory = torch.randn(1, 3, 8), torch.randn(1, 5, 8)
        >>> cross, cache = block.cross_kv(memory), KVCache()
        >>> steps = torch.cat([block.step(x[:, i : i + 1], cross, cache) for i in range(3)], 1)
        >>> full = block(x, memory, self_mask=torch.ones(3, 3, dtype=torch.bool).tril())
        >>> bool((steps - full).abs().max() < 1e-6), len(cache)
        (True, 3)
        """
        x = self._check(x, "x", "(B, T_new, d_model)")
        if not isinstance(cross, CrossKV):
            raise TypeError(
                f"cross must be the CrossKV of DecoderBlock.cross_kv(memory); got "
                f"{type(cross).__name__}"
            )
        if cross.keys.size(0) != x.size(0) or cross.keys.dtype != x.dtype:
            raise ValueError(
                f"cross holds keys {shape_str(tuple(cross.keys.shape))} of dtype "
                f"{cross.keys.dtype}, expected batch size {x.size(0)} and dtype {x.dtype} of x "
                f"{shape_str(tuple(x.shape))}"
            )
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache; got {type(cache).__name__}")
        if self.training and self.p_dropout > 0:
            raise ValueError("the caches are for inference: call .eval() first (dropout > 0)")
        check_cache(cache, x, self.self_attn)  # once here; the attention below checks nothing
        attn = self.cross_attn

        def sa(h: Tensor) -> tuple[Tensor, None]:  # the new tokens read the cached prefix
            return cached_self_attention_checked(self.self_attn, h, cache), None

        def ca(h: Tensor) -> tuple[Tensor, None]:  # only the queries are new
            q = attn.split_heads(attn.W_Q(h))  # (B, n_heads, T_new, d_k)
            return attn.attend(q, cross.keys, cross.values, cross.mask), None  # (B, T_new, d)

        return self._sublayers(x, sa, ca)[0]  # (B, T_new, d_model)

    @classmethod
    def from_torch(cls, layer: nn.TransformerDecoderLayer) -> DecoderBlock:
        """A copy, with the same weights and dtype, of a ``torch.nn.TransformerDecoderLayer``.

        The layer must be built with ``batch_first=True``, ``"relu"`` or ``"gelu"``, and one
        ``eps`` in its three LayerNorms; ``norm_first`` and ``bias`` are copied. Compare in
        ``eval()`` mode, and invert masks (``~mask``) for PyTorch.

        >>> _ = torch.manual_seed(0)
        >>> ref = nn.TransformerDecoderLayer(8, 2, 16, batch_first=True).eval()
        >>> ours = DecoderBlock.from_torch(ref).eval()
        >>> x, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
        >>> torch.allclose(ours(x, memory), ref(x, memory), atol=1e-6)
        True
        """
        if not isinstance(layer, nn.TransformerDecoderLayer):
            raise TypeError(
                f"layer must be a torch.nn.TransformerDecoderLayer; got {type(layer).__name__}"
            )
        if not layer.self_attn.batch_first:
            raise ValueError("layer must be built with batch_first=True; got batch_first=False")
        act = layer.activation
        if act is torch.nn.functional.relu or isinstance(act, nn.ReLU):
            activation = "relu"
        elif act is torch.nn.functional.gelu or isinstance(act, nn.GELU):
            if isinstance(act, nn.GELU) and act.approximate != "none":
                raise ValueError("layer's GELU must be the exact (erf) one")
            activation = "gelu"
        else:
            raise ValueError(f"layer's activation must be relu or gelu; got {act!r}")
        eps = {layer.norm1.eps, layer.norm2.eps, layer.norm3.eps}
        if len(eps) != 1:
            raise ValueError(f"norm1, norm2 and norm3 must share one eps; got {sorted(eps)}")
        weight = layer.self_attn.in_proj_weight.detach()
        ours = cls(
            layer.self_attn.embed_dim,
            layer.self_attn.num_heads,
            layer.linear1.out_features,
            dropout=layer.dropout.p,
            norm_first=bool(layer.norm_first),
            activation=activation,
            bias=layer.linear1.bias is not None,
            layer_norm_eps=layer.norm1.eps,
        ).to(dtype=weight.dtype, device=weight.device)
        ours.self_attn = MultiHeadAttention.from_torch(layer.self_attn)
        ours.cross_attn = MultiHeadAttention.from_torch(layer.multihead_attn)
        for mine, theirs in (
            (ours.ffn.linear1, layer.linear1),
            (ours.ffn.linear2, layer.linear2),
            (ours.norm1, layer.norm1),
            (ours.norm2, layer.norm2),
            (ours.norm3, layer.norm3),
        ):
            mine.load_state_dict(theirs.state_dict())
        return ours.train(layer.training)
