"""Causal self-attention (因果注意力), generation, and the KV cache (KV 缓存).

A decoder may only look backwards: token ``t`` attends to tokens ``0..t`` (the seed's 看书真好
table, :func:`course_utils.masks.causal_mask`). Two consequences, both tested:

- **No peeking.** Changing any token after position ``t`` never changes an output at or before
  ``t``, so one forward pass over a whole sentence trains every next-token prediction at once
  (teacher forcing).
- **The KV cache.** The keys and values of past tokens never change when a token is appended, so
  a generator keeps them and computes q, k and v for the *new* token only. The outputs for the
  new tokens equal the matching rows of a full recomputation.

The cache and cached attention live in :mod:`course_utils.kv_cache` (:class:`KVCache`,
:func:`cached_self_attention`, beside the byte counts): :func:`cached_self_attention` projects
the new tokens, appends their keys and values to the cache and calls
:meth:`MultiHeadAttention.attend` with a bottom-right-aligned causal mask. Everything here is built
on :class:`course_utils.multihead.MultiHeadAttention` (including its grouped-query form,
``n_kv_heads < n_heads``) and :class:`course_utils.transformer.TransformerBlock`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._determinism import deterministic, snap_to_float32
from ._shared_results import shared_result
from ._validation import (
    check_bool,
    check_float_tensor,
    check_int,
    check_positive_finite,
    shape_str,
)
from .kv_cache import KVCache, cached_self_attention
from .multihead import MultiHeadAttention
from .positions import ScaledRoPE
from .transformer import TransformerBlock

__all__ = [
    "TINY_CORPUS",
    "CausalSelfAttention",
    "CharTokenizer",
    "TinyCausalLM",
    "check_sampling_args",
    "generate",
    "next_token",
    "sequence_log_prob",
    "top_k_filter",
    "top_p_filter",
    "train_tiny_lm",
]


def _vocab_size(model: nn.Module) -> int | None:
    """The model's vocabulary size: its ``vocab_size`` (or ``cfg.vocab_size``), or the rows of
    its ``embed`` table; ``None`` if it shows none of them."""
    for owner in (model, getattr(model, "cfg", None)):
        size = getattr(owner, "vocab_size", None)
        if isinstance(size, int) and not isinstance(size, bool):
            return size
    embed = getattr(model, "embed", None)
    return embed.num_embeddings if isinstance(embed, nn.Embedding) else None


def _check_ids(ids: Any, vocab_size: int | None) -> Tensor:
    """Token ids ``(B, T)``, ``T >= 1``, integers in ``[0, vocab_size)``; a list of ints is one
    sequence ``(1, T)``."""
    if not isinstance(ids, Tensor):
        try:
            values = list(ids)
        except TypeError:
            raise TypeError(
                f"ids must be a (B, T) integer tensor or a list of ints; got {type(ids).__name__}"
            ) from None
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in values):
            kinds = sorted({type(i).__name__ for i in values})
            raise TypeError(f"ids must be a list of ints (token ids); got items of type {kinds}")
        ids = torch.tensor([values], dtype=torch.long)  # (1, T)
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(
            f"ids must be integer token ids (B, T); got dtype {ids.dtype} with shape "
            f"{shape_str(tuple(ids.shape))}"
        )
    if ids.dim() != 2 or ids.size(1) == 0:
        raise ValueError(
            f"ids must be integer token ids (B, T), T >= 1; got {shape_str(tuple(ids.shape))}"
        )
    if ids.numel() and (int(ids.min()) < 0 or (vocab_size and int(ids.max()) >= vocab_size)):
        low, high = int(ids.min()), int(ids.max())
        top = "vocab_size" if vocab_size is None else f"vocab_size = {vocab_size}"
        raise ValueError(
            f"ids must lie in [0, {top}); got ids from {low} to {high} in a tensor of shape "
            f"{shape_str(tuple(ids.shape))}"
        )
    return ids


class CausalSelfAttention(nn.Module):
    """Masked (causal) multi-head self-attention with an optional :class:`KVCache`.

    Built on :class:`~course_utils.multihead.MultiHeadAttention` (kept as ``self.mha``, so
    ``n_kv_heads < n_heads`` gives grouped-query attention). ``rope_base``: RoPE's base (q and k
    rotated by their positions), or a :class:`~course_utils.positions.ScaledRoPE` (a long-context
    model's scaled frequencies), or ``None`` for no RoPE.

    >>> _ = torch.manual_seed(0)
    >>> attn = CausalSelfAttention(d_model=8, n_heads=2).double()
    >>> x = torch.randn(1, 5, 8, dtype=torch.float64)     # (B, T, d_model)
    >>> full = attn(x)                                     # all 5 tokens at once
    >>> cache = KVCache()
    >>> steps = [attn(x[:, t : t + 1], cache=cache) for t in range(5)]   # one token at a time
    >>> torch.allclose(torch.cat(steps, dim=1), full, atol=1e-12), len(cache)
    (True, 5)
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        n_kv_heads: int | None = None,
        bias: bool = True,
        rope_base: float | ScaledRoPE | None = None,
    ) -> None:
        super().__init__()
        self.mha = MultiHeadAttention(d_model, n_heads, n_kv_heads, bias=bias)
        # checked here, not at the first forward pass (a ScaledRoPE was checked when made)
        self.rope_base = (
            rope_base
            if rope_base is None or isinstance(rope_base, ScaledRoPE)
            else check_positive_finite(rope_base, "rope_base")
        )
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, self.mha.n_kv_heads

    def forward(
        self,
        x: Tensor,
        cache: KVCache | None = None,
        *,
        return_weights: bool = False,
        fast: bool | None = None,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """``x`` ``(B, T, d_model)`` -> ``(B, T, d_model)`` (see :func:`cached_self_attention`)."""
        return cached_self_attention(
            self.mha, x, cache, return_weights=return_weights, rope_base=self.rope_base, fast=fast
        )


# ---------------------------------------------------------------------------------------------
# The chapter's tiny language model, trained causally on a few sentences, character by character
# ---------------------------------------------------------------------------------------------

#: The tiny model's training text: short, repetitive sentences a 2-block model can learn in seconds.
TINY_CORPUS = (
    "the cat sat on the mat. the dog sat on the log. the cat saw the dog. "
    "the dog saw the cat. a cat is on a mat. a dog is on a log. "
)


class CharTokenizer:
    """Characters <-> ids over a fixed alphabet.

    >>> tok = CharTokenizer("abc")
    >>> tok.encode("cab"), tok.decode([2, 0, 1])
    ([2, 0, 1], 'cab')
    """

    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or not text:
            raise ValueError(f"text must be a non-empty string; got {text!r}")
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        unknown = sorted(set(text) - set(self.index))
        if unknown:
            raise ValueError(f"text has characters outside the alphabet: {unknown}")
        return [self.index[c] for c in text]

    def decode(self, ids: Sequence[int] | Tensor) -> str:
        # a negative id would index from the end, 1.5 would be cut to 1: both are refused
        high = len(self.chars) - 1
        values = [i.item() if hasattr(i, "item") else i for i in ids]  # tensor ids as numbers
        return "".join(self.chars[check_int(i, "each id", low=0, high=high)] for i in values)


class TinyCausalLM(nn.Module):
    """Token + position embeddings -> pre-LN :class:`TransformerBlock` s -> LayerNorm -> logits.

    The blocks are chapter 6's, run causally: ``forward(ids)`` masks the future, and
    ``forward(ids_new, cache=caches)`` continues a sequence whose earlier tokens live in
    ``caches`` (one :class:`KVCache` per block, from :meth:`new_cache`).
    """

    def __init__(
        self, vocab_size: int, max_len: int, *, d_model: int = 32, n_heads: int = 4,
        d_ff: int = 128, n_layers: int = 2,
    ) -> None:  # fmt: skip
        super().__init__()
        self.vocab_size = check_int(vocab_size, "vocab_size", low=1)
        self.max_len = check_int(max_len, "max_len", low=1)
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_heads, d_ff) for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def new_cache(self) -> list[KVCache]:
        """One empty cache per block."""
        return [KVCache() for _ in self.blocks]

    def forward(self, ids: Tensor, cache: list[KVCache] | None = None) -> Tensor:
        """``ids`` ``(B, T)`` -> logits ``(B, T, vocab)`` for the next token after each position."""
        if not isinstance(ids, Tensor) or ids.dim() != 2 or ids.is_floating_point():
            got = shape_str(tuple(ids.shape)) if isinstance(ids, Tensor) else type(ids).__name__
            raise ValueError(f"ids must be an integer tensor of shape (B, T); got {got}")
        ids = _check_ids(ids, self.vocab_size)
        if cache is not None and len(cache) != len(self.blocks):
            raise ValueError(f"cache must hold {len(self.blocks)} KVCache(s); got {len(cache)}")
        past = 0 if cache is None else len(cache[0])
        T = ids.size(1)
        if past + T > self.max_len:
            raise ValueError(
                f"the model has max_len = {self.max_len} positions; got {past} cached + {T} new"
            )
        positions = torch.arange(past, past + T, device=ids.device)  # (T,)
        h = self.embed(ids) + self.pos(positions)  # (B, T, d_model)
        for i, block in enumerate(self.blocks):
            # Without a cache: the whole sequence, future masked. With one: only the new tokens.
            h = block(h, causal=True) if cache is None else block(h, cache=cache[i])  # (B, T, d)
        return self.head(self.norm(h))  # (B, T, vocab)


# -- decoding: top-k and top-p filters, sampling, beam search ----------------------------------


def _check_logits(logits: Any) -> Tensor:
    """Floating-point logits ``(..., vocab)``, ``vocab >= 1``, no NaN (``-inf``: removed)."""
    logits = check_float_tensor(logits, "logits", "(..., vocab)", min_ndim=1)
    if logits.size(-1) == 0:
        raise ValueError(
            f"logits must have a last dimension (the vocabulary) of size >= 1; got shape "
            f"{shape_str(tuple(logits.shape))}"
        )
    if torch.isnan(logits).any():
        raise ValueError(f"logits contain NaN (shape {shape_str(tuple(logits.shape))})")
    return logits


def _check_probability(p: Any, name: str) -> float:
    """A probability mass to keep: a number in ``(0, 1]``."""
    if isinstance(p, bool) or not isinstance(p, int | float):
        raise TypeError(f"{name} must be a number in (0, 1]; got {type(p).__name__} {p!r}")
    if not 0 < p <= 1:  # also rejects NaN
        raise ValueError(
            f"{name} must be a number in (0, 1] (the probability mass to keep); got {p!r}"
        )
    return float(p)


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    """Keep the ``k`` largest logits along the last dimension; set the others to ``-inf``.

    The rule is transformers' ``TopKLogitsWarper``: an entry is removed when it is *smaller*
    than the ``k``-th largest value, so entries tied with the ``k``-th value are all kept (more
    than ``k`` tokens may survive a tie), and ``k`` larger than the vocabulary keeps everything.
    ``logits`` ``(..., vocab)`` keep their shape and dtype.

    >>> top_k_filter(torch.tensor([1.0, 3.0, 2.0, 0.5]), 2)
    tensor([-inf, 3., 2., -inf])
    >>> top_k_filter(torch.tensor([1.0, 2.0, 2.0, 0.5]), 1)   # a tie at the k-th value: both stay
    tensor([-inf, 2., 2., -inf])
    """
    logits = _check_logits(logits)
    k = min(check_int(k, "k", low=1), logits.size(-1))
    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1)
    return logits.masked_fill(logits < kth_largest, float("-inf"))  # (..., vocab)


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    """Nucleus filtering (Holtzman et al. 2020): keep the most probable tokens whose probabilities
    add up to at least ``p``; set the others to ``-inf``.

    The rule is transformers' ``TopPLogitsWarper``, step for step: sort the logits in ascending
    order, take the cumulative sum of their softmax, and remove every token whose cumulative
    probability is ``<= 1 - p`` (computed in the logits' dtype). So a token exactly at the
    boundary is removed, and the most probable token is always kept (``p`` tiny keeps exactly
    one); ``p = 1`` removes only tokens of probability exactly 0. Among tied logits straddling
    the boundary, which go first is the order ``torch.sort`` gives them: we make transformers'
    very call (``stable=False``), so the same tokens go. (On CPU that order is the stable one,
    lower index first, only for rows of at most 16 tokens; longer rows are sorted otherwise.)
    ``logits`` ``(..., vocab)`` keep their shape and dtype.

    >>> logits = torch.tensor([0.1, 0.6, 0.3]).log()      # probabilities 0.1, 0.6, 0.3
    >>> top_p_filter(logits, 0.8).exp()                    # 0.6 + 0.3 >= 0.8: the 0.1 goes
    tensor([0.0000, 0.6000, 0.3000])
    >>> top_p_filter(logits, 0.5).exp()                    # 0.6 alone covers 0.5
    tensor([0.0000, 0.6000, 0.0000])
    """
    logits = _check_logits(logits)
    p = _check_probability(p, "p")
    ascending, order = torch.sort(logits, dim=-1)  # (..., vocab) each; ties as transformers
    cumulative = ascending.softmax(dim=-1).cumsum(dim=-1)  # (..., vocab): mass up to each token
    remove_sorted = cumulative <= 1 - p  # (..., vocab): the low tail holding at most 1 - p
    remove_sorted[..., -1] = False  # the most probable token always stays
    remove = remove_sorted.scatter(-1, order, remove_sorted)  # (..., vocab): back to vocab order
    return logits.masked_fill(remove, float("-inf"))  # (..., vocab)


def check_sampling_args(
    temperature: Any, top_k: Any, top_p: Any, num_beams: Any, seed: Any, generator: Any
) -> tuple[float, int | None, float | None, int, torch.Generator | None]:
    """:func:`generate`'s decoding arguments checked (each bad one named with its value):
    ``(temperature, top_k, top_p, num_beams, generator)``, a seed turned into a generator.

    >>> check_sampling_args(0, None, None, 1, None, None)
    (0.0, None, None, 1, None)
    """
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not math.isfinite(temperature)
        or temperature < 0
    ):
        raise ValueError(
            f"temperature must be a finite number >= 0 (0 = greedy); got {temperature!r}"
        )
    if top_k is not None:
        top_k = check_int(top_k, "top_k", low=1)
    if top_p is not None:
        top_p = _check_probability(top_p, "top_p")
    if temperature == 0 and (top_k is not None or top_p is not None):
        raise ValueError(
            f"top_k = {top_k!r} and top_p = {top_p!r} filter a sampling distribution, but "
            "temperature = 0 is greedy decoding (no sampling): pass temperature > 0"
        )
    num_beams = check_int(num_beams, "num_beams", low=1)
    if num_beams > 1 and temperature != 0:
        raise ValueError(
            f"num_beams = {num_beams} is beam search, which is deterministic: temperature must be "
            f"0; got {temperature!r}"
        )
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None; got {type(generator).__name__}"
        )
    if seed is not None:
        seed = check_int(seed, "seed", low=0)
        if generator is not None:
            raise ValueError(
                f"pass seed or generator, not both; got seed = {seed} and a torch.Generator"
            )
        generator = torch.Generator().manual_seed(seed)
    return float(temperature), top_k, top_p, num_beams, generator


def next_token(
    logits: Tensor,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
    generator: torch.Generator | None,
) -> Tensor:
    """The next token ``(B, 1)`` from the last position's ``logits`` ``(B, vocab)``, as
    :func:`generate` picks it (arguments already checked there): the largest logit when
    ``temperature == 0``, else a draw from the softmax of ``logits / temperature`` after
    :func:`top_k_filter` and :func:`top_p_filter`.

    >>> next_token(torch.tensor([[0.5, 2.0, 1.0]]), 0.0, None, None, None)
    tensor([[1]])
    """
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True)  # (B, 1)
    scaled = logits.double() / temperature  # (B, vocab)
    if top_k is not None:
        scaled = top_k_filter(scaled, top_k)  # (B, vocab), -inf outside the top k
    if top_p is not None:
        scaled = top_p_filter(scaled, top_p)  # (B, vocab), -inf outside the nucleus
    probs = torch.softmax(scaled, dim=-1)  # (B, vocab)
    return torch.multinomial(probs, 1, generator=generator)  # (B, 1)


def generate(
    model: nn.Module,
    ids: Tensor | Sequence[int],
    n_new: int | None = None,
    *,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    num_beams: int = 1,
    seed: int | None = None,
    use_cache: bool = True,
    generator: torch.Generator | None = None,
    max_new_tokens: int | None = None,
) -> Tensor:
    """Append ``n_new`` tokens to ``ids`` ``(B, T)`` (or a list of ids), one at a time.

    ``max_new_tokens=`` is accepted as another name for ``n_new`` (transformers' name).

    - ``temperature == 0`` (the default) is greedy: the most likely token.
    - ``temperature > 0`` samples, in transformers' order: divide the logits by ``temperature``
      (chapter 3), keep the ``top_k`` largest (:func:`top_k_filter`), keep the nucleus of mass
      ``top_p`` (:func:`top_p_filter`), then draw from their softmax with ``generator`` or with a
      fresh ``torch.Generator`` seeded with ``seed`` (the same seed, the same tokens).
    - ``num_beams > 1`` is beam search (greedy only, batch size 1): keep the ``num_beams``
      sequences of largest summed log-probability, extend each by every token, keep the best
      ``num_beams`` again; return the best one. There is no end-of-text token here: every beam
      is ``n_new`` tokens long, so no length penalty is needed (transformers' beam search gives
      the same tokens whenever no end-of-text token enters its top ``num_beams`` candidates:
      then all its finished beams have one length, and dividing their scores by
      ``length ** length_penalty`` keeps their order).

    ``use_cache=False`` recomputes the whole sequence at every step; ``use_cache=True`` runs the
    prompt once, then one token per step with ``model.new_cache()`` (for beam search the caches
    are reordered with :meth:`~course_utils.kv_cache.KVCache.reorder` as beams are kept and
    dropped). Both give the same tokens. ``model(ids, cache=...)`` must return logits
    ``(B, T, vocab)``. Returns ``(B, T + n_new)``.

    >>> _ = torch.manual_seed(0)
    >>> model = TinyCausalLM(vocab_size=10, max_len=16).eval()      # untrained, but a model
    >>> a = generate(model, [1, 2, 3], 8, temperature=1.0, top_k=5, top_p=0.9, seed=0)
    >>> b = generate(model, [1, 2, 3], 8, temperature=1.0, top_k=5, top_p=0.9, seed=0)
    >>> a.shape, torch.equal(a, b)                 # (1, 3 + 8), and the same seed, the same draw
    (torch.Size([1, 11]), True)
    >>> beams = generate(model, [1, 2, 3], 8, num_beams=3)       # the best of 3 beams
    >>> beams.shape, torch.equal(beams, generate(model, [1, 2, 3], 8, num_beams=3, use_cache=False))
    (torch.Size([1, 11]), True)

    Checked first: ``ids`` are integers in ``[0, vocab_size)`` (the model's ``vocab_size`` or its
    ``embed`` table), ``n_new`` an int >= 0, ``temperature`` a finite number >= 0 (``top_k`` and
    ``top_p`` need it > 0, ``num_beams > 1`` needs it 0), ``top_k`` an int >= 1, ``top_p`` in
    ``(0, 1]``, ``use_cache`` a bool, ``generator`` a ``torch.Generator`` or ``None`` and not
    given together with ``seed``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    ids = _check_ids(ids, _vocab_size(model))  # (B, T)
    if n_new is not None and max_new_tokens is not None:
        raise TypeError(
            f"pass n_new or its other name max_new_tokens, not both; got n_new = {n_new!r} and "
            f"max_new_tokens = {max_new_tokens!r}"
        )
    if n_new is None and max_new_tokens is None:
        raise TypeError("generate() needs n_new, the number of tokens to append")
    name = "n_new" if max_new_tokens is None else "max_new_tokens"
    n_new = check_int(n_new if max_new_tokens is None else max_new_tokens, name, low=0)
    temperature, top_k, top_p, num_beams, generator = check_sampling_args(
        temperature, top_k, top_p, num_beams, seed, generator
    )
    use_cache = check_bool(use_cache, "use_cache")
    if use_cache and not callable(getattr(model, "new_cache", None)):
        raise TypeError(
            f"use_cache=True needs a model with a new_cache() method; {type(model).__name__} has "
            "none (pass use_cache=False)"
        )
    if num_beams > 1:
        return _beam_search(model, ids, n_new, num_beams, use_cache)
    cache = model.new_cache() if use_cache else None
    out = ids  # (B, T)
    with torch.no_grad():
        step_input = ids  # (B, T): the prompt first, then one token per step
        for _ in range(n_new):
            logits = model(step_input if use_cache else out, cache=cache)[:, -1]  # (B, vocab)
            nxt = next_token(logits, temperature, top_k, top_p, generator)  # (B, 1)
            out = torch.cat([out, nxt], dim=1)  # (B, T + step + 1)
            step_input = nxt  # (B, 1)
    return out


def _beam_search(
    model: nn.Module, ids: Tensor, n_new: int, num_beams: int, use_cache: bool
) -> Tensor:
    """Beam search for one prompt ``ids`` ``(1, T)``: the best of ``num_beams`` beams ``(1, T +
    n_new)`` by summed log-probability (float32, as transformers scores its beams)."""
    if ids.size(0) != 1:
        raise ValueError(
            f"beam search (num_beams = {num_beams}) takes one prompt, ids of shape (1, T); got "
            f"{shape_str(tuple(ids.shape))}: call generate once per prompt"
        )
    vocab = _vocab_size(model)
    if vocab is not None and num_beams > vocab:
        raise ValueError(f"num_beams must be <= vocab_size = {vocab}; got {num_beams}")
    cache = model.new_cache() if use_cache else None
    if cache is not None and not all(callable(getattr(c, "reorder", None)) for c in cache):
        raise TypeError(
            "beam search with use_cache=True needs caches with a reorder(indices) method "
            "(course_utils.kv_cache.KVCache); pass use_cache=False"
        )
    beams = ids  # (n_beams, T + step): one beam before the first step
    scores = torch.zeros(1)  # (n_beams,) summed log-probabilities
    with torch.no_grad():
        step_input = ids  # (n_beams, T): the prompt first, then one token per beam
        for _ in range(n_new):
            logits = model(step_input if use_cache else beams, cache=cache)[:, -1]  # (n, vocab)
            log_probs = F.log_softmax(logits.float(), dim=-1)  # (n, vocab)
            candidates = scores[:, None] + log_probs  # (n, vocab): every beam x every token
            vocab_size = candidates.size(-1)
            # the best num_beams of all n * vocab continuations, best first
            scores, flat = candidates.flatten().topk(num_beams)  # (num_beams,) each
            parent = flat // vocab_size  # (num_beams,) the beam each one extends
            token = flat % vocab_size  # (num_beams,)
            beams = torch.cat([beams[parent], token[:, None]], dim=1)  # (num_beams, T + step + 1)
            if cache is not None:
                for c in cache:  # each kept beam continues from its parent's keys and values
                    c.reorder(parent)
            step_input = token[:, None]  # (num_beams, 1)
    return beams[:1]  # (1, T + n_new): topk sorts, so beam 0 is the best


def sequence_log_prob(model: nn.Module, ids: Tensor | Sequence[int], prompt_len: int) -> Tensor:
    """The summed log-probability of each row's tokens after its first ``prompt_len`` tokens.

    ``sum over t >= prompt_len of log softmax(logits at t - 1)[x_t]``, the log of
    ``p(x_prompt_len, ..., x_T-1 | prompt)``:
    the score beam search maximises (:func:`generate` with ``num_beams > 1``), computed from one
    full forward pass (no cache) in float32, as beam search scores its beams. ``ids`` ``(B, T)``
    (or one list of ids); returns ``(B,)``, each ``<= 0``. Greedy decoding takes the best token
    one step at a time; the sequence it ends with can score lower than one that starts with a
    less likely token (chapter 7 compares both on SmolLM2).

    >>> _ = torch.manual_seed(0)
    >>> model = TinyCausalLM(vocab_size=10, max_len=16).eval()
    >>> greedy = generate(model, [1, 2, 3], 4)
    >>> beam = generate(model, [1, 2, 3], 4, num_beams=4)
    >>> bool(sequence_log_prob(model, beam, 3) >= sequence_log_prob(model, greedy, 3))
    True
    >>> sequence_log_prob(model, [1, 2, 3], 3)             # nothing after the prompt: log 1
    tensor([0.])

    Checked first: ``ids`` are integers in ``[0, vocab_size)``, and ``prompt_len`` an int with
    ``1 <= prompt_len <= T`` (the first token has no prediction to score).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    ids = _check_ids(ids, _vocab_size(model))  # (B, T)
    prompt_len = check_int(prompt_len, "prompt_len", low=1, high=ids.size(1))
    if prompt_len == ids.size(1):  # nothing after the prompt (and a 1-token row has no logits)
        return torch.zeros(ids.size(0))  # (B,)
    with torch.no_grad():
        logits = model(ids[:, :-1])  # (B, T - 1, vocab): position t predicts token t + 1
    log_probs = F.log_softmax(logits.float(), dim=-1)  # (B, T - 1, vocab)
    picked = log_probs.gather(-1, ids[:, 1:, None])[..., 0]  # (B, T - 1): each next token's
    return picked[:, prompt_len - 1 :].sum(-1)  # (B,): the new tokens only


@dataclass(frozen=True)
class TinyRun:
    """A trained :class:`TinyCausalLM`, its tokenizer and its loss curve."""

    model: TinyCausalLM
    tokenizer: CharTokenizer
    losses: list[float]


@shared_result  # trained once per test session (see _shared_results)
def train_tiny_lm(
    text: str = TINY_CORPUS, *, steps: int = 200, context: int = 32, batch: int = 8,
    seed: int = 0, lr: float = 3e-3, **model_kwargs: int,
) -> TinyRun:  # fmt: skip
    """Train a :class:`TinyCausalLM` on ``text`` by next-character prediction (teacher forcing).

    Every position of every window predicts the next character in one causal forward pass.
    Seeded, and trained in float64 on one thread, so the numbers are the same on every machine.
    """
    with deterministic():  # float64, one thread: the same numbers on every machine
        return _train_tiny_lm(text, steps, context, batch, seed, lr, model_kwargs)


def _train_tiny_lm(
    text: str, steps: int, context: int, batch: int, seed: int, lr: float,
    model_kwargs: dict[str, int],
) -> TinyRun:  # fmt: skip
    torch.manual_seed(seed)
    tok = CharTokenizer(text)
    data = torch.tensor(tok.encode(text))  # (N,)
    if len(data) <= context + 1:
        raise ValueError(f"text must be longer than context + 1 = {context + 1} characters")
    model = TinyCausalLM(len(tok), max_len=64, **model_kwargs)
    snap_to_float32(model)  # the same initial weights on every machine (see _determinism)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    losses = []
    model.train()
    for _ in range(steps):
        starts = torch.randint(0, len(data) - context - 1, (batch,), generator=g)  # (batch,)
        idx = starts[:, None] + torch.arange(context + 1)  # (batch, context + 1)
        window = data[idx]  # (batch, context + 1)
        logits = model(window[:, :-1])  # (batch, context, vocab)
        loss = F.cross_entropy(logits.reshape(-1, len(tok)), window[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        snap_to_float32(model)  # the same weights on every machine (see _determinism)
        losses.append(float(loss.detach()))
    return TinyRun(model.eval(), tok, losses)
