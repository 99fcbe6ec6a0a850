"""The KV cache (KV 缓存): the cache itself, attention that uses it, and how many numbers and bytes
it holds for MHA, GQA, MQA and MLA.

:class:`KVCache` keeps one layer's keys and values; :func:`cached_self_attention` runs causal
self-attention for new tokens only, appending their keys and values (chapter 7; the decoder's
blocks, :class:`course_utils.transformer.TransformerBlock`, and SmolLM2 use it).
:class:`PreallocatedKVCache` is the same cache writing each token into a slot set aside (no copy
of the cache per step; SmolLM2's ``new_cache()``), and the speed path of decoding lives in
:mod:`course_utils.kv_cache_fast`.

During generation every layer keeps, for every past token, what later queries need. Multi-head
attention (MHA) keeps a key and a value per head; grouped-query attention (GQA) keeps them per
k/v group; multi-query attention (MQA) keeps one key and one value shared by all heads;
multi-head latent attention (MLA, DeepSeek-AI 2024) keeps one latent ``c_KV`` of width ``d_c``
and one shared RoPE key of width ``d_h^R``. Per token and per layer (DeepSeek-V2, Table 1):

======  =====================
MHA     ``2 n_h d_h``
GQA     ``2 n_g d_h``
MQA     ``2 d_h``
MLA     ``d_c + d_h^R``
======  =====================

>>> values_per_token_mha(n_heads=128, d_head=128)   # DeepSeek-V2's shape, as plain MHA
32768
>>> values_per_token_mla(d_latent_kv=512, d_head_rope=64)
576
>>> kv_cache_bytes(n_layers=32, n_kv_heads=32, d_head=128, seq_len=4096)   # Llama 2 7B, fp16
2147483648
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ._validation import (
    check_bool,
    check_cache_extension,
    check_cache_pair,
    check_count,
    check_float_tensor,
    check_int,
    check_module_dtype,
    check_positive_finite,
    shape_str,
)
from .kv_cache_fast import decode_attention, one_query_attention
from .masks import causal_mask
from .multihead import MultiHeadAttention
from .positions import ScaledRoPE, rotate_by_rope

__all__ = [
    "DEEPSEEK_V2",
    "LAYER_KINDS",
    "AttentionLayer",
    "KVCache",
    "PagedKVCache",
    "PreallocatedKVCache",
    "StreamingKVCache",
    "blocks_needed",
    "cache_nbytes",
    "cached_self_attention",
    "cached_self_attention_checked",
    "check_cache",
    "kv_cache_bytes",
    "layer_caches",
    "layers_cache_bytes",
    "max_batch",
    "mla_cache_bytes",
    "paged_attention",
    "values_per_token_gqa",
    "values_per_token_mha",
    "values_per_token_mla",
    "values_per_token_mqa",
]

#: DeepSeek-V2's attention configuration (DeepSeek-AI 2024, §3.1.1 "Model Hyper-Parameters"; the
#: same numbers are in its ``config.json``: ``num_hidden_layers``, ``num_attention_heads``,
#: ``qk_nope_head_dim``, ``kv_lora_rank``, ``q_lora_rank``, ``qk_rope_head_dim``, ``v_head_dim``).
DEEPSEEK_V2: dict[str, int] = {
    "n_layers": 60,
    "d_model": 5120,
    "n_heads": 128,  # n_h
    "d_head": 128,  # d_h (also d_head_nope and d_head_v)
    "d_latent_kv": 512,  # d_c = 4 d_h
    "d_latent_q": 1536,  # d_c'
    "d_head_rope": 64,  # d_h^R = d_h / 2
}


def _cache_bytes(
    n_layers: int, per_token: int, seq_len: int, batch: int, bytes_per_value: int
) -> int:
    """``layers · per_token · T · batch · bytes``: any cache of ``per_token`` values per layer."""
    return (
        check_count(n_layers, "n_layers")
        * per_token
        * check_count(seq_len, "seq_len", low=0)
        * check_count(batch, "batch")
        * check_count(bytes_per_value, "bytes_per_value")
    )


def values_per_token_mha(n_heads: int, d_head: int) -> int:
    """Numbers cached per token per layer by multi-head attention: a key and a value per head.

    >>> values_per_token_mha(12, 64)    # BERT-base / GPT-2 small
    1536
    """
    return 2 * check_count(n_heads, "n_heads") * check_count(d_head, "d_head")


def values_per_token_gqa(n_groups: int, d_head: int) -> int:
    """Numbers cached per token per layer by GQA with ``n_groups`` k/v heads: ``2 n_g d_h``.

    >>> values_per_token_gqa(8, 128)    # Llama 3 8B: 8 k/v heads
    2048
    """
    return 2 * check_count(n_groups, "n_groups") * check_count(d_head, "d_head")


def values_per_token_mqa(d_head: int) -> int:
    """Numbers cached per token per layer by MQA: one key and one value, ``2 d_h``.

    >>> values_per_token_mqa(64)
    128
    """
    return 2 * check_count(d_head, "d_head")


def values_per_token_mla(d_latent_kv: int, d_head_rope: int) -> int:
    """Numbers cached per token per layer by MLA: the latent ``c_KV`` and the shared RoPE key.

    ``d_head_rope`` may be 0 (MLA without decoupled RoPE, as in the chapter's first step).

    >>> values_per_token_mla(512, 64)   # DeepSeek-V2
    576
    """
    return check_count(d_latent_kv, "d_latent_kv") + check_count(d_head_rope, "d_head_rope", low=0)


def kv_cache_bytes(
    n_layers: int,
    n_kv_heads: int,
    d_head: int,
    seq_len: int,
    *,
    batch: int = 1,
    bytes_per_value: int = 2,
) -> int:
    """Bytes of an MHA/GQA/MQA KV cache: ``2 · layers · n_kv_heads · d_head · T · batch · bytes``.

    ``n_kv_heads`` is ``n_heads`` for MHA, the number of groups for GQA and 1 for MQA;
    ``bytes_per_value`` is 2 for float16/bfloat16, 4 for float32, 1 for 8-bit caches.

    >>> kv_cache_bytes(30, 3, 64, 8192)             # SmolLM2-135M at 8k tokens, bf16
    188743680
    >>> kv_cache_bytes(30, 3, 64, 8192, batch=4, bytes_per_value=4)
    1509949440
    """
    per_token = values_per_token_gqa(check_count(n_kv_heads, "n_kv_heads"), d_head)
    return _cache_bytes(n_layers, per_token, seq_len, batch, bytes_per_value)


def max_batch(
    memory_bytes: int,
    n_layers: int,
    n_kv_heads: int,
    d_head: int,
    seq_len: int,
    *,
    bytes_per_value: int = 2,
) -> int:
    """The largest batch whose KV cache of ``seq_len`` tokens fits in ``memory_bytes``.

    ``memory_bytes`` is the memory left for the cache (after the weights and activations); the
    answer is ``memory_bytes // kv_cache_bytes(..., batch=1)`` and may be 0 (not even one sequence
    fits).

    >>> max_batch(80 * 2**30, 32, 32, 128, 4096)     # Llama 2 7B, fp16, 80 GiB for the cache
    40
    >>> max_batch(80 * 2**30, 32, 8, 128, 4096)      # the same shape with 8 k/v heads (GQA)
    160
    """
    memory = check_count(memory_bytes, "memory_bytes", low=0)
    per_sequence = kv_cache_bytes(
        n_layers,
        n_kv_heads,
        d_head,
        check_count(seq_len, "seq_len"),
        bytes_per_value=bytes_per_value,
    )
    return memory // per_sequence


def mla_cache_bytes(
    n_layers: int,
    d_latent_kv: int,
    d_head_rope: int,
    seq_len: int,
    *,
    batch: int = 1,
    bytes_per_value: int = 2,
) -> int:
    """Bytes of an MLA latent cache: ``layers · (d_c + d_h^R) · T · batch · bytes``.

    >>> mla_cache_bytes(60, 512, 64, 128 * 1024) / 2**30    # DeepSeek-V2 at 128k tokens, bf16
    8.4375
    """
    per_token = values_per_token_mla(d_latent_kv, d_head_rope)
    return _cache_bytes(n_layers, per_token, seq_len, batch, bytes_per_value)


#: What one layer of a model can be, by what it keeps for past tokens (chapter 14's atlas):
#: ``full`` (MHA/GQA/MQA, every key and value), ``sliding`` (the last ``window`` of them), ``mla``
#: (one latent and one shared RoPE key per token), ``dsa`` (MLA's cache plus the lightning indexer's
#: key per token), ``linear`` (a fixed state per head, e.g. lightning attention) and ``deltanet``
#: (the same fixed state, updated by the gated delta rule, plus a short convolution's inputs).
LAYER_KINDS = ("full", "sliding", "mla", "dsa", "linear", "deltanet")

#: The sizes each kind needs beyond ``kind`` and ``n_heads`` (and where a bad one is caught).
_KIND_FIELDS = {
    "full": ("n_kv_heads", "d_head"),
    "sliding": ("n_kv_heads", "d_head", "window"),
    "mla": ("d_latent_kv", "d_head_rope"),
    "dsa": ("d_latent_kv", "d_head_rope", "index_n_heads", "index_head_dim", "index_topk"),
    "linear": ("d_key", "d_value"),
    "deltanet": ("n_key_heads", "d_key", "d_value"),
}


@dataclass(frozen=True)
class AttentionLayer:
    """The shape of one attention layer, by kind: what its cache holds and what a decoded token
    reads. Sizes only, no tensors; a size the kind does not use stays 0 (``window`` ``None``).

    ``n_heads`` is the number of query heads (for ``linear`` and ``deltanet``: value heads, one
    state each). ``d_head_rope`` may be 0 (MLA without decoupled RoPE); ``conv_kernel`` 0 means
    no convolution state (``deltanet`` only).

    >>> local = AttentionLayer("sliding", n_heads=8, n_kv_heads=4, d_head=256, window=1024)
    >>> local.held_values(4096)                   # 2 · 4 · 256 values a token, 1024 tokens
    2097152
    >>> AttentionLayer("mla", n_heads=128, d_latent_kv=512, d_head_rope=64).held_values(1)
    576
    >>> AttentionLayer("dsa", n_heads=2)
    Traceback (most recent call last):
    ...
    ValueError: a 'dsa' layer needs d_latent_kv (an int >= 1); got 0
    """

    kind: str
    n_heads: int
    n_kv_heads: int = 0
    d_head: int = 0
    window: int | None = None
    d_latent_kv: int = 0
    d_head_rope: int = 0
    index_n_heads: int = 0
    index_head_dim: int = 0
    index_topk: int = 0
    n_key_heads: int = 0
    d_key: int = 0
    d_value: int = 0
    conv_kernel: int = 0

    def __post_init__(self) -> None:
        if self.kind not in LAYER_KINDS:
            raise ValueError(f"kind must be one of {list(LAYER_KINDS)}; got {self.kind!r}")
        check_count(self.n_heads, "n_heads")
        for name in _KIND_FIELDS[self.kind]:
            value = getattr(self, name)
            optional = name == "d_head_rope"  # MLA without decoupled RoPE caches c_KV only
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or value < (0 if optional else 1)
            ):
                low = 0 if optional else 1
                raise ValueError(
                    f"a {self.kind!r} layer needs {name} (an int >= {low}); got {value!r}"
                )
        if self.kind == "deltanet":
            check_count(self.conv_kernel, "conv_kernel", low=0)
            if self.n_heads % self.n_key_heads:
                raise ValueError(
                    f"n_key_heads = {self.n_key_heads} must divide the value heads "
                    f"n_heads = {self.n_heads}"
                )

    def reads(self, seq_len: int) -> int:
        """How many past tokens a query at position ``seq_len - 1`` attends to (itself included):
        ``min(T, window)`` for a sliding layer, ``min(T, top_k)`` for DSA, ``T`` for full and MLA,
        0 for a recurrent layer (it reads its state, not the tokens)."""
        T = check_count(seq_len, "seq_len")
        if self.kind == "sliding":
            return min(T, self.window or T)
        if self.kind == "dsa":
            return min(T, self.index_topk)
        return 0 if self.kind in ("linear", "deltanet") else T

    def held_values(self, seq_len: int) -> int:
        """Numbers this layer keeps for one sequence once ``seq_len`` tokens are decoded.

        ``full``: ``2 n_kv d_head T``; ``sliding``: the same over ``min(T, window)`` tokens;
        ``mla``: ``(d_c + d_h^R) T`` (DeepSeek-V2, Table 1); ``dsa``: ``(d_c + d_h^R + D_I) T``
        (the indexer keeps one key of width ``D_I`` per token); ``linear``: ``n_heads d_k d_v``,
        whatever ``T``; ``deltanet``: that state plus the convolution's last ``kernel - 1`` inputs
        of ``2 n_key_heads d_k + n_heads d_v`` channels.
        """
        T = check_count(seq_len, "seq_len")
        if self.kind in ("full", "sliding"):
            return values_per_token_gqa(self.n_kv_heads, self.d_head) * self.reads(T)
        if self.kind in ("mla", "dsa"):
            per_token = values_per_token_mla(self.d_latent_kv, self.d_head_rope)
            return (per_token + (self.index_head_dim if self.kind == "dsa" else 0)) * T
        state = self.n_heads * self.d_key * self.d_value  # one (d_k, d_v) matrix per head
        if self.kind == "linear" or not self.conv_kernel:
            return state
        conv_dim = 2 * self.n_key_heads * self.d_key + self.n_heads * self.d_value  # q, k, v
        return state + (self.conv_kernel - 1) * conv_dim


def layers_cache_bytes(
    layers: Sequence[AttentionLayer], seq_len: int, *, batch: int = 1, bytes_per_value: int = 2
) -> int:
    """Bytes a model's cache holds after ``seq_len`` tokens: each layer's
    :meth:`AttentionLayer.held_values`, summed, times ``batch`` and ``bytes_per_value``.

    A model of full-attention layers only gives :func:`kv_cache_bytes`; five sliding layers per
    full one (Gemma 3) stop most of the cache growing past the window:

    >>> full = AttentionLayer("full", n_heads=8, n_kv_heads=4, d_head=256)
    >>> local = AttentionLayer("sliding", n_heads=8, n_kv_heads=4, d_head=256, window=1024)
    >>> layers_cache_bytes([full] * 6, 8192) == kv_cache_bytes(6, 4, 256, 8192)
    True
    >>> layers_cache_bytes([local] * 5 + [full], 8192) / layers_cache_bytes([full] * 6, 8192)
    0.2708333333333333
    """
    if not layers or not all(isinstance(layer, AttentionLayer) for layer in layers):
        raise TypeError("layers must be a non-empty sequence of AttentionLayer")
    values = sum(layer.held_values(seq_len) for layer in layers)
    return values * check_count(batch, "batch") * check_count(bytes_per_value, "bytes_per_value")


class KVCache:
    """The keys and values of the tokens seen so far, for one attention layer.

    Starts empty. :func:`cached_self_attention` (and so ``CausalSelfAttention(x_new, cache=c)``)
    appends the new tokens' keys and values, both ``(B, n_kv_heads, T, d_k)``. ``len(cache)`` is
    the number of tokens held; :attr:`nbytes` is the memory of the two tensors.

    >>> cache = KVCache()
    >>> len(cache), cache.nbytes
    (0, 0)
    >>> k = v = torch.zeros(1, 2, 3, 4)              # (B, n_kv_heads, T, d_k)
    >>> _ = cache.append(k, v)
    >>> len(cache), cache.nbytes                       # 2 tensors * 1*2*3*4 floats * 4 bytes
    (3, 192)
    """

    def __init__(self) -> None:
        self.keys: Tensor | None = None  # (B, n_kv_heads, T, d_k)
        self.values: Tensor | None = None  # (B, n_kv_heads, T, d_k)
        # (keys, values, whether both are finite): what _held_finite knows, for these tensors only
        self._finite: tuple[Tensor | None, Tensor | None, bool] | None = None

    def __len__(self) -> int:
        return 0 if self.keys is None else int(self.keys.size(2))

    def __repr__(self) -> str:
        shape = "empty" if self.keys is None else f"keys/values {shape_str(tuple(self.keys.shape))}"
        return f"KVCache({shape}, {self.nbytes} bytes)"

    @property
    def nbytes(self) -> int:
        """Bytes held: ``2 * B * n_kv_heads * T * d_k * bytes per value``."""
        if self.keys is None or self.values is None:
            return 0
        return sum(t.numel() * t.element_size() for t in (self.keys, self.values))

    def clear(self) -> None:
        """Forget every token (start a new sequence)."""
        self.keys = self.values = None
        self._finite = None

    def check(self, x: Tensor, n_kv_heads: int, d_k: int) -> None:
        """Raise if new tokens ``x`` ``(B, T_new, d_model)`` cannot extend this cache."""
        if self.keys is None:
            return
        B, h, _, d = self.keys.shape
        if x.size(0) != B:
            raise ValueError(
                f"the cache holds {B} sequence(s) (keys {shape_str(tuple(self.keys.shape))}) but "
                f"x has shape {shape_str(tuple(x.shape))} with batch size {x.size(0)}; use a new "
                "KVCache (or cache.clear()) for a different batch"
            )
        if (h, d) != (n_kv_heads, d_k):
            raise ValueError(
                f"the cache holds keys {shape_str(tuple(self.keys.shape))}, expected "
                f"({B}, {n_kv_heads}, T, {d_k}) (n_kv_heads, d_k of this layer): it was filled by "
                "another layer"
            )
        if self.keys.dtype != x.dtype:
            raise TypeError(
                f"the cache holds {self.keys.dtype} keys but x has dtype {x.dtype}; shape "
                f"{shape_str(tuple(x.shape))}"
            )

    def reorder(self, indices: Tensor) -> None:
        """Make sequence ``i`` of the cache a copy of sequence ``indices[i]`` (beam search: each
        kept beam continues from its parent's keys and values).

        ``indices`` ``(B_new,)`` are integers in ``[0, B)``; ``B_new`` may differ from ``B``
        (``[0, 0, 0]`` turns one prompt's cache into three beams). An empty cache stays empty.

        >>> cache = KVCache()
        >>> k = torch.arange(2.0).reshape(2, 1, 1, 1)              # (B=2, 1, T=1, 1)
        >>> _ = cache.append(k, k)
        >>> cache.reorder(torch.tensor([1, 1, 0]))
        >>> cache.keys.flatten().tolist()
        [1.0, 1.0, 0.0]
        """
        indices = self._checked_indices(indices)
        if indices is None or self.keys is None or self.values is None:
            return
        finite = self._finite is not None and self._held_finite()
        self.keys = self.keys.index_select(0, indices)  # (B_new, n_kv_heads, T, d_k)
        self.values = self.values.index_select(0, indices)  # (B_new, n_kv_heads, T, d_k)
        self._finite = (self.keys, self.values, True) if finite else None  # copies of finite rows

    def _checked_indices(self, indices: object) -> Tensor | None:
        """``indices`` checked for :meth:`reorder`, on the cache's device (``None``: empty)."""
        if (
            not isinstance(indices, Tensor)
            or indices.is_floating_point()
            or indices.is_complex()
            or indices.dtype == torch.bool
            or indices.dim() != 1
        ):
            got = (
                f"dtype {indices.dtype} with shape {shape_str(tuple(indices.shape))}"
                if isinstance(indices, Tensor)
                else type(indices).__name__
            )
            raise TypeError(f"indices must be a 1-D integer tensor (B_new,); got {got}")
        keys = self.keys
        if keys is None:
            return None
        B = keys.size(0)
        if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= B):
            raise ValueError(
                f"indices must lie in [0, {B}) (the cache holds {B} sequence(s)); got "
                f"{indices.tolist()}"
            )
        return indices.to(keys.device)

    def _checked_pair(self, k: Tensor, v: Tensor) -> None:
        """``k``, ``v`` agree with each other and with what the cache holds (see :meth:`append`)."""
        check_float_tensor(k, "k", "(B, n_kv_heads, T_new, d_k)", ndim=4)
        check_float_tensor(v, "v", "(B, n_kv_heads, T_new, d_v)", ndim=4)
        check_cache_pair(k, v, ("k", "v"), 3, "(B, n_kv_heads, T_new)", "one value per key")
        if self.keys is not None and self.values is not None:
            for name, new, held in (("k", k, self.keys), ("v", v, self.values)):
                check_cache_extension(
                    new, held, name, time_dim=2, what="batch, heads and head width"
                )

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Append ``k``, ``v`` ``(B, n_kv_heads, T_new, d_k)``; return all keys and values.

        ``k`` and ``v`` must agree with each other (batch, heads, length, dtype, device) and with
        what the cache holds (batch, heads, head widths, dtype, device): a mismatch is an error,
        never a silently mixed cache.
        """
        self._checked_pair(k, v)
        return self._append_trusted(k, v, None)

    def _append_trusted(self, k: Tensor, v: Tensor, finite: bool | None) -> tuple[Tensor, Tensor]:
        """:meth:`append` without its checks, for callers that checked once (the decoding path).

        ``finite``: whether everything held *after* the append is finite, if the caller knows
        (``None``: not known, found out when :meth:`_held_finite` is next asked).
        """
        if self.keys is None or self.values is None:
            self.keys, self.values = k, v  # (B, n_kv_heads, T_new, d_k)
        else:
            self.keys = torch.cat([self.keys, k], dim=2)  # (B, n_kv_heads, T + T_new, d_k)
            self.values = torch.cat([self.values, v], dim=2)  # (B, n_kv_heads, T + T_new, d_k)
        self._finite = None if finite is None else (self.keys, self.values, finite)
        return self.keys, self.values

    def _held_finite(self) -> bool:
        """Whether every key and value held is finite (no NaN, no inf).

        Known without reading the cache after an append whose caller checked the new tokens;
        otherwise (a first call, or ``keys``/``values`` assigned by hand) read once and remembered
        for exactly these tensors.
        """
        known = self._finite
        if known is not None and known[0] is self.keys and known[1] is self.values:
            return known[2]
        finite = all(t is None or bool(torch.isfinite(t).all()) for t in (self.keys, self.values))
        self._finite = (self.keys, self.values, finite)
        return finite

    def crop(self, n: int) -> None:
        """Keep the first ``n`` tokens and forget the rest (e.g. to time one step again and again,
        or to drop rejected tokens of speculative decoding).

        >>> cache = KVCache()
        >>> _ = cache.append(torch.zeros(1, 2, 5, 4), torch.zeros(1, 2, 5, 4))
        >>> cache.crop(3)
        >>> len(cache)
        3
        """
        n = check_int(n, "n", low=0, high=len(self))
        if self.keys is not None and self.values is not None:
            finite = self._finite is not None and self._held_finite()
            self.keys, self.values = self.keys[:, :, :n], self.values[:, :, :n]  # (B, h, n, d)
            # a part of a finite cache is finite; a part of a non-finite one is read again
            self._finite = (self.keys, self.values, True) if finite else None


class PreallocatedKVCache(KVCache):
    """A :class:`KVCache` that writes each new token into a slot of memory set aside in advance.

    :class:`KVCache` appends with ``torch.cat``, which copies everything held into a new tensor at
    every step: a step at ``T`` cached tokens copies ``T`` keys and values (and the allocator hands
    out fresh memory for them), so generating ``N`` tokens copies ``O(N²)`` numbers. This cache
    holds two tensors ``(B, n_kv_heads, capacity, d_k)``, writes the new tokens into the next free
    slots (``O(T_new)``) and returns *views* of the filled part; when full it doubles its capacity
    (one copy, so appends stay ``O(1)`` per token on average). ``capacity`` sets the first
    allocation (e.g. prompt length + new tokens, when known); by default it is the first append's
    length rounded up to a power of two, at least 16.

    The keys are stored transposed, ``(B, n_kv_heads, d_k, capacity)``, one column a token:
    :attr:`keys` is a view in the usual ``(B, n_kv_heads, T, d_k)`` shape, and
    :attr:`transposed_keys` hands the decoding step ``Kᵀ`` itself. A new token's scores ``q Kᵀ``
    are then a row vector times a row-major matrix, which streams ``Kᵀ`` through memory in order
    (the layout argument of :func:`course_utils.kv_cache_fast.decoding_layout`): measured on the
    2-core development machine (one thread, 12 layers of 4,096 cached tokens), the attention of one
    step took 22 ms this way against 29 ms for ``scaled_dot_product_attention`` on row-major keys
    (``benchmarks/bench_decode_floor.py``).

    The same interface as :class:`KVCache`: ``len``, :attr:`nbytes` (the bytes *held*, as there;
    :attr:`allocated_nbytes` counts the slots set aside), ``keys``/``values`` (read-only views),
    :meth:`append`, :meth:`reorder`, :meth:`crop`, :meth:`clear`. Writing in place is for
    inference: appending keys that need a gradient while autograd records is an error (use
    :class:`KVCache`). Tested to give the outputs of :class:`KVCache` and of a full causal pass,
    across capacity growth (``tests/test_kv_cache_fast.py``).

    >>> cache = PreallocatedKVCache(capacity=4)
    >>> for t in range(6):                                # one token at a time, past the capacity
    ...     k = torch.full((1, 2, 1, 3), float(t))        # (B, n_kv_heads, 1, d_k)
    ...     keys, values = cache.append(k, k)
    >>> len(cache), tuple(keys.shape), cache.capacity     # 4 slots doubled to 8
    (6, (1, 2, 6, 3), 8)
    >>> keys[0, 0, :, 0].tolist()
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    >>> cache.nbytes, cache.allocated_nbytes     # 2 * 1*2*6*3 * 4 bytes held; 8 slots set aside
    (288, 384)
    """

    def __init__(self, capacity: int | None = None) -> None:
        # no KVCache.__init__: keys and values are properties (views of the storage) here
        self._first_capacity = None if capacity is None else check_int(capacity, "capacity", low=1)
        self._k_store: Tensor | None = None  # (B, n_kv_heads, d_k, capacity): keys transposed
        self._v_store: Tensor | None = None  # (B, n_kv_heads, capacity, d_v)
        self._length = 0  # slots filled
        self._all_finite: bool | None = True  # None: not known (after a crop of non-finite data)

    @property
    def keys(self) -> Tensor | None:  # type: ignore[override]
        """The keys held, a view ``(B, n_kv_heads, T, d_k)`` (``None`` before the first append)."""
        if self._k_store is None:
            return None
        return self._k_store[..., : self._length].transpose(-1, -2)  # (B, n_kv_heads, T, d_k)

    @property
    def transposed_keys(self) -> Tensor | None:
        """``Kᵀ``, the keys held as stored: a view ``(B, n_kv_heads, d_k, T)``."""
        return None if self._k_store is None else self._k_store[..., : self._length]

    @property
    def values(self) -> Tensor | None:  # type: ignore[override]
        """The values held, a view ``(B, n_kv_heads, T, d_v)``."""
        return None if self._v_store is None else self._v_store[:, :, : self._length]

    @property
    def capacity(self) -> int:
        """Tokens that fit before the storage grows (0 before the first append)."""
        return 0 if self._v_store is None else int(self._v_store.size(2))

    @property
    def allocated_nbytes(self) -> int:
        """Bytes of the storage set aside, filled or not."""
        stores = (self._k_store, self._v_store)
        return sum(t.numel() * t.element_size() for t in stores if t is not None)

    def __len__(self) -> int:
        return self._length

    def __repr__(self) -> str:
        if self._k_store is None:
            return "PreallocatedKVCache(empty)"
        B, h, _, d = self._v_store.shape
        shape = shape_str((B, h, self._length, d))
        return (
            f"PreallocatedKVCache(keys/values {shape}, {self.nbytes} bytes held, capacity "
            f"{self.capacity} tokens)"
        )

    def clear(self) -> None:
        """Forget every token and release the storage (the next batch may differ)."""
        self._k_store = self._v_store = None
        self._length, self._all_finite = 0, True

    def crop(self, n: int) -> None:
        """Keep the first ``n`` tokens (the storage stays; the next append writes slot ``n``)."""
        self._length = check_int(n, "n", low=0, high=len(self))
        if not self._all_finite:  # the dropped tokens may have been the non-finite ones
            self._all_finite = None

    def _held_finite(self) -> bool:
        if self._all_finite is None:
            held = (self.keys, self.values)
            self._all_finite = all(t is None or bool(torch.isfinite(t).all()) for t in held)
        return self._all_finite

    def reorder(self, indices: Tensor) -> None:
        """As :meth:`KVCache.reorder`; the capacity is kept."""
        indices = self._checked_indices(indices)
        if indices is None or self._k_store is None or self._v_store is None:
            return
        L, k_old, v_old = self._length, self._k_store, self._v_store
        k_new = k_old.new_empty(indices.numel(), *k_old.shape[1:])  # (B_new, h, d_k, capacity)
        v_new = v_old.new_empty(indices.numel(), *v_old.shape[1:])  # (B_new, h, capacity, d_v)
        k_new[..., :L] = k_old[..., :L].index_select(0, indices)
        v_new[:, :, :L] = v_old[:, :, :L].index_select(0, indices)
        self._k_store, self._v_store = k_new, v_new
        self._all_finite = True if self._all_finite else None  # copies of finite rows are finite

    def _append_trusted(self, k: Tensor, v: Tensor, finite: bool | None) -> tuple[Tensor, Tensor]:
        if torch.is_grad_enabled() and (k.requires_grad or v.requires_grad):
            raise RuntimeError(
                "PreallocatedKVCache writes keys and values in place, which autograd cannot "
                "differentiate through: run it under torch.no_grad() (inference), or use KVCache"
            )
        L, T_new = self._length, k.size(2)
        if self._k_store is None or self._v_store is None:
            first = max(self._first_capacity or max(16, 1 << (T_new - 1).bit_length()), T_new)
            self._k_store = k.new_empty(*k.shape[:2], k.size(3), first)  # (B, h, d_k, capacity)
            self._v_store = v.new_empty(*v.shape[:2], first, v.size(3))  # (B, h, capacity, d_v)
        elif L + T_new > self.capacity:  # full: double (or more), copy what is held once
            grown = max(2 * self.capacity, L + T_new)
            k_old, v_old = self._k_store, self._v_store
            self._k_store = k_old.new_empty(*k_old.shape[:3], grown)  # (B, h, d_k, grown)
            self._k_store[..., :L] = k_old[..., :L]
            self._v_store = v_old.new_empty(*v_old.shape[:2], grown, v_old.size(3))
            self._v_store[:, :, :L] = v_old[:, :, :L]
        self._k_store[..., L : L + T_new] = k.transpose(-1, -2)  # (B, h, d_k, T_new): a column each
        self._v_store[:, :, L : L + T_new] = v  # (B, n_kv_heads, T_new, d_v): one slot a token
        self._length = L + T_new
        self._all_finite = finite
        return self.keys, self.values  # (B, n_kv_heads, L + T_new, d_k) views


class StreamingKVCache(KVCache):
    """A KV cache of bounded size: the first ``n_sink`` tokens and the last ``window`` tokens
    (StreamingLLM: Xiao et al. 2023, "Efficient Streaming Language Models with Attention Sinks").

    Softmax attention must put its weight somewhere, and trained models dump much of it on the
    first few tokens (the *attention sinks*). A plain rolling window (``n_sink = 0``) evicts them
    and the model degrades; keeping them (the paper uses 4) restores it, with a cache that never
    holds more than ``n_sink + window`` tokens however long the stream.

    - **What it keeps.** Before it appends ``T_new`` tokens, the cache evicts its oldest non-sink
      tokens until the new ones fit in ``n_sink + window`` (the StreamingLLM code's
      ``evict_for_space``). So a token appended alone attends to the sinks and the last ``window``
      tokens *including itself*: with ``n_sink = 0`` that is the causal sliding window ``i -
      window < j <= i`` of :mod:`course_utils.sparse`. The tokens of one append attend to what
      the cache holds and causally to each other. :attr:`positions` lists the stream positions
      held. An append that cannot fit even after evicting every non-sink token is an error
      (feed a long prompt in pieces of at most ``window`` tokens).
    - **Positions (RoPE).** StreamingLLM numbers the tokens by their place *in the cache*, not in
      the text (§3.2): the cache keeps keys *before* rotation, and every step
      :func:`cached_self_attention` rotates the held keys by ``0 .. L-1`` and the new queries by
      the last positions. A query then sees the window at its true distances and the sinks just
      before the window, and no position ever exceeds ``n_sink + window - 1`` (no position the
      model never saw in training). Models that add positions to their input embeddings
      (:class:`~course_utils.causal.TinyCausalLM`) are not made for this; SmolLM2 (RoPE) is.

    Same interface as :class:`KVCache` (``len``, ``nbytes``, :meth:`append`, :meth:`reorder`,
    :meth:`clear`): pass one per layer where a model takes its caches.

    >>> cache = StreamingKVCache(window=3, n_sink=2)
    >>> for t in range(8):                                  # one token at a time
    ...     _ = cache.append(torch.zeros(1, 1, 1, 4), torch.zeros(1, 1, 1, 4))
    >>> cache.positions, len(cache)                         # sinks 0, 1 and the last 3 tokens
    ([0, 1, 5, 6, 7], 5)
    """

    def __init__(self, window: int, n_sink: int = 4) -> None:
        super().__init__()
        self.window = check_int(window, "window", low=1)
        self.n_sink = check_int(n_sink, "n_sink", low=0)
        self.positions: list[int] = []  # the stream positions held, in cache order
        self.seen = 0  # tokens appended since the start (or the last clear())

    @property
    def capacity(self) -> int:
        """The most tokens the cache ever holds: ``n_sink + window``."""
        return self.n_sink + self.window

    def __repr__(self) -> str:
        return (
            f"StreamingKVCache(window={self.window}, n_sink={self.n_sink}, {len(self)} of "
            f"{self.capacity} tokens held, {self.seen} seen, {self.nbytes} bytes)"
        )

    def clear(self) -> None:
        """Forget every token (start a new stream)."""
        super().clear()
        self.positions, self.seen = [], 0

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Evict the oldest non-sink tokens to make room, append ``k``, ``v`` ``(B, n_kv_heads,
        T_new, d_k)`` and return what the cache now holds, keys and values ``(B, n_kv_heads, L,
        d_k)`` with ``L <= n_sink + window`` (the keys as given: unrotated for a RoPE model)."""
        self._checked_pair(k, v)
        T_new = k.size(2)
        sinks = min(len(self), self.n_sink)  # sinks held (fewer while the stream is short)
        if sinks + T_new > self.capacity:
            raise ValueError(
                f"{T_new} new tokens do not fit in this StreamingKVCache (window = "
                f"{self.window}, n_sink = {self.n_sink}: at most {self.capacity} tokens, "
                f"{sinks} of them sinks already held); append at most "
                f"{self.capacity - sinks} tokens at a time"
            )
        keep_recent = min(len(self) - sinks, self.capacity - T_new - sinks)  # old non-sinks kept
        if self.keys is not None and self.values is not None and keep_recent < len(self) - sinks:
            kept = list(range(sinks)) + list(range(len(self) - keep_recent, len(self)))
            index = torch.tensor(kept, dtype=torch.long, device=self.keys.device)  # (L_kept,)
            self.keys = self.keys.index_select(2, index)  # (B, n_kv_heads, L_kept, d_k)
            self.values = self.values.index_select(2, index)  # (B, n_kv_heads, L_kept, d_k)
            self.positions = [self.positions[i] for i in kept]
        self.positions += list(range(self.seen, self.seen + T_new))
        self.seen += T_new
        return super().append(k, v)  # (B, n_kv_heads, L_kept + T_new, d_k) each


def cache_nbytes(caches: Sequence[KVCache]) -> int:
    """Total bytes of a model's caches (one per layer)."""
    return sum(c.nbytes for c in caches)


def layer_caches(layers: Sequence[AttentionLayer]) -> list[KVCache]:
    """One real cache per layer, by its kind: a :class:`KVCache` for a ``full`` layer (it keeps
    every token) and a :class:`StreamingKVCache` with ``n_sink = 0`` for a ``sliding`` one (a
    rolling buffer of its last ``window`` tokens, Mistral 7B v0.1's cache; Jiang et al. 2023, §2).

    What :func:`layers_cache_bytes` computes, these tensors hold: after ``T`` tokens
    :func:`cache_nbytes` of them is ``Σ 2 · n_kv · d_head · min(T, window) · bytes`` (a full
    layer's window is ``T``). Five sliding layers per full one, as Gemma 3:

    >>> local = AttentionLayer("sliding", n_heads=4, n_kv_heads=2, d_head=8, window=16)
    >>> full = AttentionLayer("full", n_heads=4, n_kv_heads=2, d_head=8)
    >>> caches = layer_caches([local] * 5 + [full])
    >>> for _ in range(100):                          # one token at a time, float32
    ...     for c in caches:
    ...         _ = c.append(torch.zeros(1, 2, 1, 8), torch.zeros(1, 2, 1, 8))
    >>> [len(c) for c in caches]
    [16, 16, 16, 16, 16, 100]
    >>> cache_nbytes(caches) == layers_cache_bytes([local] * 5 + [full], 100, bytes_per_value=4)
    True
    >>> layer_caches([AttentionLayer("mla", n_heads=4, d_latent_kv=8)])
    Traceback (most recent call last):
    ...
    ValueError: layers[0] is a 'mla' layer; layer_caches builds 'full' and 'sliding' caches only
    """
    if isinstance(layers, AttentionLayer) or not isinstance(layers, Sequence) or not layers:
        raise TypeError(
            f"layers must be a non-empty sequence of AttentionLayer; got {type(layers).__name__}"
        )
    caches: list[KVCache] = []
    for i, layer in enumerate(layers):
        if not isinstance(layer, AttentionLayer):
            raise TypeError(f"layers[{i}] must be an AttentionLayer; got {type(layer).__name__}")
        if layer.kind == "full":
            caches.append(KVCache())
        elif layer.kind == "sliding" and layer.window is not None:
            caches.append(StreamingKVCache(layer.window, n_sink=0))
        else:
            raise ValueError(
                f"layers[{i}] is a {layer.kind!r} layer; layer_caches builds 'full' and "
                "'sliding' caches only"
            )
    return caches


def _check_x(x: object, d_model: int, dtype: torch.dtype) -> Tensor:
    expected = f"(B, T, d_model) with d_model = {d_model}"
    if not isinstance(x, Tensor) or not x.is_floating_point():
        got = f"dtype {x.dtype}" if isinstance(x, Tensor) else type(x).__name__
        raise TypeError(f"x must be a floating-point torch.Tensor {expected}; got {got}")
    if x.dim() != 3 or x.size(-1) != d_model or x.size(1) == 0:
        raise ValueError(f"x has shape {shape_str(tuple(x.shape))}, expected {expected} and T >= 1")
    check_module_dtype(x, "x", dtype, "(B, T, d_model)")
    return x


def cached_self_attention(
    attn: MultiHeadAttention,
    x: Tensor,
    cache: KVCache | None = None,
    *,
    return_weights: bool = False,
    rope_base: float | ScaledRoPE | None = None,
    fast: bool | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """Causal self-attention of ``attn`` on the new tokens ``x`` ``(B, T_new, d_model)``.

    With ``cache`` holding ``P`` earlier tokens, the new tokens sit at positions ``P..P+T_new-1``;
    their keys and values are appended to the cache, and new token ``i`` attends to every cached
    token and to new tokens ``0..i`` (the causal mask aligned bottom-right). Without a cache this
    is plain causal self-attention. ``rope_base`` (e.g. 100000 for SmolLM2) rotates q and k by
    their absolute positions with :func:`course_utils.positions.apply_rope` *before* caching, so
    a cached key is never rotated again; a :class:`~course_utils.positions.ScaledRoPE` there
    rotates them with a long-context model's scaled frequencies instead. A
    :class:`StreamingKVCache` keeps keys unrotated and the positions are those in the cache
    (StreamingLLM): the held keys are rotated by ``0 .. L-1`` and the new queries by ``L-T_new ..
    L-1`` at every call. Returns ``(B, T_new,
    d_model)``, or ``(output, weights)`` with weights ``(B, n_heads, T_new, P + T_new)`` (``L``
    keys for a streaming cache).
    """
    x = _check_x(x, attn.d_model, attn.W_Q.weight.dtype)
    check_cache(cache, x, attn)
    check_bool(return_weights, "return_weights")
    if fast is not None:
        check_bool(fast, "fast")
    if rope_base is not None and not isinstance(rope_base, ScaledRoPE):
        # the fast path would read '1e4' as 10000 and True as 1.0: refuse them here, for both
        rope_base = check_positive_finite(rope_base, "rope_base")
    return cached_self_attention_checked(attn, x, cache, return_weights, rope_base, fast)


def check_cache(cache: object, x: Tensor, attn: MultiHeadAttention) -> None:
    """Raise unless ``cache`` is ``None`` or a :class:`KVCache` that new tokens ``x`` ``(B, T,
    d_model)`` of the layer ``attn`` may extend (its batch, k/v heads, head width and dtype)."""
    if cache is not None:
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache or None; got {type(cache).__name__}")
        cache.check(x, attn.n_kv_heads, attn.d_k)


def cached_self_attention_checked(
    attn: MultiHeadAttention,
    x: Tensor,
    cache: KVCache | None,
    return_weights: bool = False,
    rope_base: float | ScaledRoPE | None = None,
    fast: bool | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """:func:`cached_self_attention` on arguments already checked (``x`` by :func:`_check_x` or a
    block's own check, ``cache`` by :func:`check_cache`): the blocks and models check once at
    their entry and call this in their layers, so a decoding step is not re-validated per layer.

    Without weights asked for (and with a plain or preallocated cache) it takes the speed path,
    :func:`course_utils.kv_cache_fast.decode_attention`: one stacked q/k/v product, RoPE from
    tables, the cache extended without re-checking, ``scaled_dot_product_attention``. Otherwise,
    or when a new query, key or value is not finite, the four readable steps below.
    """
    streaming = isinstance(cache, StreamingKVCache)
    if not return_weights and fast is not False and not streaming:
        out = decode_attention(attn, x, cache, rope_base)
        if isinstance(out, Tensor):
            return out  # (B, T, d_model)
        q, k, v, mask = out  # NaN or inf somewhere: the readable steps, as MultiHeadAttention
        return attn.attend(q, k, v, mask, fast=False)  # (B, T, d_model)
    past = 0 if cache is None else len(cache)
    T = x.size(1)
    q = attn.split_heads(attn.W_Q(x))  # (B, n_heads, T, d_k)
    k = attn.split_heads(attn.W_K(x), attn.n_kv_heads)  # (B, n_kv_heads, T, d_k)
    v = attn.split_heads(attn.W_V(x), attn.n_kv_heads)  # (B, n_kv_heads, T, d_k)
    if rope_base is not None and not streaming:
        positions = torch.arange(past, past + T, device=x.device)  # (T,) absolute positions
        q = rotate_by_rope(q, positions, rope_base)  # (B, n_heads, T, d_k)
        k = rotate_by_rope(k, positions, rope_base)  # (B, n_kv_heads, T, d_k)
    if cache is not None:
        k, v = cache.append(k, v)  # (B, n_kv_heads, L, d_k) each; L = past + T unless streaming
    if rope_base is not None and streaming:
        # StreamingLLM numbers tokens by their place in the cache (sinks 0.., then the window),
        # so the held keys, cached unrotated, are rotated afresh at every step.
        positions = torch.arange(k.size(2), device=x.device)  # (L,) positions in the cache
        q = rotate_by_rope(q, positions[-T:], rope_base)  # (B, n_heads, T, d_k)
        k = rotate_by_rope(k, positions, rope_base)  # (B, n_kv_heads, L, d_k)
    mask = None
    if T > 1:  # one new token may see every key: no mask needed
        tri = causal_mask(T, k.size(2), align="bottom_right")  # (T, L)
        mask = torch.from_numpy(tri).to(x.device)[None, None]  # (1, 1, T, L)
    return attn.attend(q, k, v, mask, return_weights, fast=fast)


# --------------------------------------------------------------------------------------------
# PagedAttention: the cache in fixed-size blocks from a shared pool (Kwon et al., 2023, vLLM)
# --------------------------------------------------------------------------------------------


def blocks_needed(length: int, block_size: int) -> int:
    """Blocks of ``block_size`` slots that ``length`` tokens occupy: ``ceil(length / block_size)``.

    A last, partial block is a whole block: its empty slots are the waste of paging.

    >>> blocks_needed(33, 16), blocks_needed(32, 16), blocks_needed(0, 16)
    (3, 2, 0)
    """
    length = check_int(length, "length", low=0)
    block_size = check_int(block_size, "block_size", low=1)
    return -(-length // block_size)


class PagedKVCache:
    """The keys and values of many sequences, in fixed-size blocks taken from one shared pool.

    The pool holds ``n_blocks`` physical blocks of ``block_size`` token slots each (keys and values
    ``(n_blocks, n_kv_heads, block_size, head_dim)``). Each sequence has a *block table*: the list
    of the physical blocks that hold its tokens ``0..B-1``, ``B..2B-1``, ... in order. A sequence
    takes a new block from the free list only when its last block is full, and :meth:`free`
    returns its blocks to the pool, so a sequence never holds more than ``block_size - 1`` empty
    slots, wherever its blocks lie (Kwon et al., 2023, PagedAttention in vLLM). Blocks are taken
    from the front of the free list and returned to its end.

    >>> cache = PagedKVCache(block_size=4, n_blocks=8, n_kv_heads=1, head_dim=2)
    >>> cache.append("a", torch.ones(1, 5, 2), torch.ones(1, 5, 2))   # 5 tokens: 2 blocks
    >>> cache.append("b", torch.ones(1, 3, 2), torch.ones(1, 3, 2))   # 3 tokens: 1 block
    >>> cache.append("a", torch.ones(1, 4, 2), torch.ones(1, 4, 2))   # 9 tokens: 3 blocks
    >>> cache.block_tables, cache.wasted_slots("a"), cache.n_free
    ({'a': [0, 1, 3], 'b': [2]}, 3, 4)
    >>> cache.free("a"); cache.n_free
    7
    """

    def __init__(
        self,
        block_size: int,
        n_blocks: int,
        n_kv_heads: int,
        head_dim: int,
        *,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self.block_size = check_count(block_size, "block_size")
        self.n_blocks = check_count(n_blocks, "n_blocks")
        n_kv_heads = check_count(n_kv_heads, "n_kv_heads")
        head_dim = check_count(head_dim, "head_dim")
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise TypeError(f"dtype must be a floating-point torch.dtype; got {dtype!r}")
        shape = (self.n_blocks, n_kv_heads, self.block_size, head_dim)
        self.key_pool = torch.zeros(shape, dtype=dtype)  # (n_blocks, h_kv, block_size, d)
        self.value_pool = torch.zeros(shape, dtype=dtype)  # (n_blocks, h_kv, block_size, d)
        self._free = list(range(self.n_blocks))  # physical blocks nobody holds, in order of use
        self.block_tables: dict[object, list[int]] = {}  # sequence -> its physical blocks
        self.lengths: dict[object, int] = {}  # sequence -> tokens held

    def __repr__(self) -> str:
        return (
            f"PagedKVCache(block_size={self.block_size}, n_blocks={self.n_blocks}, "
            f"{len(self.block_tables)} sequence(s), {self.n_free} block(s) free)"
        )

    @property
    def n_free(self) -> int:
        """Blocks of the pool that no sequence holds."""
        return len(self._free)

    def _check_seq(self, seq_id: object) -> None:
        if seq_id not in self.block_tables:
            held = sorted(map(repr, self.block_tables)) or ["none"]
            raise KeyError(f"seq_id {seq_id!r} holds no tokens; sequences held: {', '.join(held)}")

    def append(self, seq_id: object, k: Tensor, v: Tensor) -> None:
        """Write new tokens' keys and values ``(n_kv_heads, T_new, head_dim)`` after ``seq_id``'s.

        A new ``seq_id`` starts an empty sequence. Raises ``RuntimeError`` ("pool exhausted") and
        changes nothing when the pool has fewer free blocks than the new tokens need.
        """
        _, h_kv, _, d = self.key_pool.shape
        expected = f"({h_kv}, T_new, {d}) (n_kv_heads, T_new, head_dim)"
        for name, x in (("k", k), ("v", v)):
            check_float_tensor(x, name, expected, ndim=3)
            if (x.shape[0], x.shape[2]) != (h_kv, d):
                raise ValueError(f"{name} must have shape {expected}; got {shape_str(x.shape)}")
            if x.dtype != self.key_pool.dtype:
                raise TypeError(f"{name} must have dtype {self.key_pool.dtype}; got {x.dtype}")
        if k.shape != v.shape:
            raise ValueError(
                f"k and v must have one shape (one value per key); got k {shape_str(k.shape)}, "
                f"v {shape_str(v.shape)}"
            )
        table = self.block_tables.get(seq_id, [])
        past, new = self.lengths.get(seq_id, 0), k.shape[1]
        needs = blocks_needed(past + new, self.block_size) - len(table)
        if needs > self.n_free:
            raise RuntimeError(
                f"pool exhausted: needs {needs} blocks, {self.n_free} free (seq_id {seq_id!r} "
                f"grows from {past} to {past + new} tokens; free a finished sequence)"
            )
        table = table + self._free[:needs]
        del self._free[:needs]
        self.block_tables[seq_id], self.lengths[seq_id] = table, past + new
        position = torch.arange(past, past + new)  # (T_new,): where the tokens go
        physical = torch.tensor(table, dtype=torch.long)  # (n,): long even when empty
        block = physical[position // self.block_size]  # (T_new,): each token's physical block
        slot = position % self.block_size  # (T_new,): slot within the block
        # pool[block, :, slot] is (T_new, h_kv, d): the tokens' axis first
        self.key_pool[block, :, slot] = k.transpose(0, 1)
        self.value_pool[block, :, slot] = v.transpose(0, 1)

    def gather(self, seq_id: object) -> tuple[Tensor, Tensor]:
        """``seq_id``'s keys and values ``(n_kv_heads, L, head_dim)``, read through its table."""
        self._check_seq(seq_id)
        # (n,): physical blocks, in order (long even when the sequence holds no tokens)
        table = torch.tensor(self.block_tables[seq_id], dtype=torch.long)
        length = self.lengths[seq_id]
        out = []
        for pool in (self.key_pool, self.value_pool):
            blocks = pool.index_select(0, table)  # (n, h_kv, block_size, d)
            # (h_kv, n * block_size, d): the blocks side by side, then the empty slots cut off
            out.append(blocks.transpose(0, 1).flatten(1, 2)[:, :length])
        return out[0], out[1]

    def free(self, seq_id: object) -> None:
        """Return ``seq_id``'s blocks to the pool (the sequence is finished)."""
        self._check_seq(seq_id)
        self._free.extend(self.block_tables.pop(seq_id))
        del self.lengths[seq_id]

    def wasted_slots(self, seq_id: object) -> int:
        """Slots ``seq_id``'s blocks hold but no token uses: at most ``block_size - 1``."""
        self._check_seq(seq_id)
        return len(self.block_tables[seq_id]) * self.block_size - self.lengths[seq_id]


def paged_attention(q: Tensor, cache: PagedKVCache, seq_id: object) -> Tensor:
    """One new token's attention over the keys and values ``cache`` holds for ``seq_id``.

    ``q`` is ``(n_heads, 1, head_dim)``, ``n_heads`` a multiple of the cache's ``n_kv_heads``
    (query head ``i`` reads key/value head ``i // (n_heads / n_kv_heads)``, as grouped-query
    attention). The keys are read block by block through the sequence's block table, wherever
    the blocks lie in the pool; the token's own key must have been appended first. Returns
    ``(n_heads, 1, head_dim)``; equals ``scaled_dot_product_attention`` over the same keys.

    >>> cache = PagedKVCache(block_size=2, n_blocks=4, n_kv_heads=1, head_dim=2)
    >>> cache.append(0, torch.zeros(1, 3, 2), torch.arange(6.0).reshape(1, 3, 2))
    >>> paged_attention(torch.ones(2, 1, 2), cache, 0)  # equal scores: the mean value, 2 heads
    tensor([[[2., 3.]],
    <BLANKLINE>
            [[2., 3.]]])
    """
    if not isinstance(cache, PagedKVCache):
        raise TypeError(f"cache must be a PagedKVCache; got {type(cache).__name__}")
    _, h_kv, _, d = cache.key_pool.shape
    check_float_tensor(q, "q", f"(n_heads, 1, {d})", ndim=3)
    if q.shape[1] != 1 or q.shape[2] != d or q.shape[0] % h_kv:
        raise ValueError(
            f"q must have shape (n_heads, 1, {d}) with n_heads a multiple of n_kv_heads = {h_kv};"
            f" got {shape_str(q.shape)}"
        )
    if q.dtype != cache.key_pool.dtype:
        raise TypeError(f"q must have the cache's dtype {cache.key_pool.dtype}; got {q.dtype}")
    k, v = cache.gather(seq_id)  # (h_kv, L, d) each
    if k.shape[1] == 0:  # a softmax over no keys is undefined
        raise ValueError(
            f"seq_id {seq_id!r} holds 0 tokens: append the new token's key and value first"
        )
    return one_query_attention(q[None], k.transpose(-2, -1)[None], v[None])[0]  # (n_heads, 1, d)
