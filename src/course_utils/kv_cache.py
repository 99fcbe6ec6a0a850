"""The KV cache (KV 缓存): the cache itself, attention that uses it, and how many numbers and bytes
it holds for MHA, GQA, MQA and MLA.

:class:`KVCache` keeps one layer's keys and values; :func:`cached_self_attention` runs causal
self-attention for new tokens only, appending their keys and values (chapter 7; the decoder's
blocks, :class:`course_utils.transformer.TransformerBlock`, and SmolLM2 use it).

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

import torch
from torch import Tensor

from ._validation import (
    check_cache_extension,
    check_cache_pair,
    check_count,
    check_float_tensor,
    check_int,
    check_module_dtype,
    shape_str,
)
from .masks import causal_mask
from .multihead import MultiHeadAttention
from .positions import apply_rope

__all__ = [
    "DEEPSEEK_V2",
    "KVCache",
    "StreamingKVCache",
    "cache_nbytes",
    "cached_self_attention",
    "kv_cache_bytes",
    "max_batch",
    "mla_cache_bytes",
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
        if self.keys is None or self.values is None:
            return
        B = self.keys.size(0)
        if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= B):
            raise ValueError(
                f"indices must lie in [0, {B}) (the cache holds {B} sequence(s)); got "
                f"{indices.tolist()}"
            )
        indices = indices.to(self.keys.device)
        self.keys = self.keys.index_select(0, indices)  # (B_new, n_kv_heads, T, d_k)
        self.values = self.values.index_select(0, indices)  # (B_new, n_kv_heads, T, d_k)

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
        if self.keys is None or self.values is None:
            self.keys, self.values = k, v  # (B, n_kv_heads, T_new, d_k)
        else:
            self.keys = torch.cat([self.keys, k], dim=2)  # (B, n_kv_heads, T + T_new, d_k)
            self.values = torch.cat([self.values, v], dim=2)  # (B, n_kv_heads, T + T_new, d_k)
        return self.keys, self.values


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
    rope_base: float | None = None,
    fast: bool | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """Causal self-attention of ``attn`` on the new tokens ``x`` ``(B, T_new, d_model)``.

    With ``cache`` holding ``P`` earlier tokens, the new tokens sit at positions ``P..P+T_new-1``;
    their keys and values are appended to the cache, and new token ``i`` attends to every cached
    token and to new tokens ``0..i`` (the causal mask aligned bottom-right). Without a cache this
    is plain causal self-attention. ``rope_base`` (e.g. 100000 for SmolLM2) rotates q and k by
    their absolute positions with :func:`course_utils.positions.apply_rope` *before* caching, so
    a cached key is never rotated again. A :class:`StreamingKVCache` instead keeps keys unrotated
    and the positions are those in the cache (StreamingLLM): the held keys are rotated by ``0 ..
    L-1`` and the new queries by ``L-T_new .. L-1`` at every call. Returns ``(B, T_new,
    d_model)``, or ``(output, weights)`` with weights ``(B, n_heads, T_new, P + T_new)`` (``L``
    keys for a streaming cache).
    """
    x = _check_x(x, attn.d_model, attn.W_Q.weight.dtype)
    if cache is not None:
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache or None; got {type(cache).__name__}")
        cache.check(x, attn.n_kv_heads, attn.d_k)
    past = 0 if cache is None else len(cache)
    T = x.size(1)
    q = attn.split_heads(attn.W_Q(x))  # (B, n_heads, T, d_k)
    k = attn.split_heads(attn.W_K(x), attn.n_kv_heads)  # (B, n_kv_heads, T, d_k)
    v = attn.split_heads(attn.W_V(x), attn.n_kv_heads)  # (B, n_kv_heads, T, d_k)
    streaming = isinstance(cache, StreamingKVCache)
    if rope_base is not None and not streaming:
        positions = torch.arange(past, past + T, device=x.device)  # (T,) absolute positions
        q = apply_rope(q, positions, base=rope_base)  # (B, n_heads, T, d_k)
        k = apply_rope(k, positions, base=rope_base)  # (B, n_kv_heads, T, d_k)
    if cache is not None:
        k, v = cache.append(k, v)  # (B, n_kv_heads, L, d_k) each; L = past + T unless streaming
    if rope_base is not None and streaming:
        # StreamingLLM numbers tokens by their place in the cache (sinks 0.., then the window),
        # so the held keys, cached unrotated, are rotated afresh at every step.
        positions = torch.arange(k.size(2), device=x.device)  # (L,) positions in the cache
        q = apply_rope(q, positions[-T:], base=rope_base)  # (B, n_heads, T, d_k)
        k = apply_rope(k, positions, base=rope_base)  # (B, n_kv_heads, L, d_k)
    mask = None
    if T > 1:  # one new token may see every key: no mask needed
        tri = causal_mask(T, k.size(2), align="bottom_right")  # (T, L)
        mask = torch.from_numpy(tri).to(x.device)[None, None]  # (1, 1, T, L)
    return attn.attend(q, k, v, mask, return_weights, fast=fast)
