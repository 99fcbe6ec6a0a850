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
from ._validation import check_bool, check_int, check_positive_finite, shape_str
from .kv_cache import KVCache, cached_self_attention
from .multihead import MultiHeadAttention
from .transformer import TransformerBlock

__all__ = [
    "TINY_CORPUS",
    "CausalSelfAttention",
    "CharTokenizer",
    "TinyCausalLM",
    "generate",
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
    ``n_kv_heads < n_heads`` gives grouped-query attention).

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
        rope_base: float | None = None,
    ) -> None:
        super().__init__()
        self.mha = MultiHeadAttention(d_model, n_heads, n_kv_heads, bias=bias)
        # checked here, not at the first forward pass
        self.rope_base = (
            None if rope_base is None else check_positive_finite(rope_base, "rope_base")
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
        return "".join(self.chars[int(i)] for i in ids)


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


def generate(
    model: nn.Module,
    ids: Tensor | Sequence[int],
    max_new_tokens: int,
    *,
    use_cache: bool = True,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Append ``max_new_tokens`` tokens to ``ids`` ``(B, T)`` (or a list of ids), one at a time.

    ``temperature == 0`` is greedy (the most likely token); otherwise the next token is drawn
    from ``softmax(logits / temperature)`` (chapter 3) with ``generator`` (seed it for
    repeatable samples). ``use_cache=False`` recomputes the whole sequence at every step;
    ``use_cache=True`` runs the prompt once, then one token per step with ``model.new_cache()``.
    Both give the same tokens. ``model(ids, cache=...)`` must return logits ``(B, T, vocab)``.
    Returns ``(B, T + max_new_tokens)``.

    Checked first: ``ids`` are integers in ``[0, vocab_size)`` (the model's ``vocab_size`` or its
    ``embed`` table), ``max_new_tokens`` an int >= 0, ``temperature`` a finite number >= 0,
    ``use_cache`` a bool and ``generator`` a ``torch.Generator`` or ``None``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    ids = _check_ids(ids, _vocab_size(model))  # (B, T)
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", low=0)
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not math.isfinite(temperature)
        or temperature < 0
    ):
        raise ValueError(
            f"temperature must be a finite number >= 0 (0 = greedy); got {temperature!r}"
        )
    use_cache = check_bool(use_cache, "use_cache")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None; got {type(generator).__name__}"
        )
    if use_cache and not callable(getattr(model, "new_cache", None)):
        raise TypeError(
            f"use_cache=True needs a model with a new_cache() method; {type(model).__name__} has "
            "none (pass use_cache=False)"
        )
    cache = model.new_cache() if use_cache else None
    out = ids  # (B, T)
    with torch.no_grad():
        step_input = ids  # (B, T): the prompt first, then one token per step
        for _ in range(max_new_tokens):
            logits = model(step_input if use_cache else out, cache=cache)[:, -1]  # (B, vocab)
            if temperature == 0:
                nxt = logits.argmax(dim=-1, keepdim=True)  # (B, 1)
            else:
                probs = torch.softmax(logits.double() / temperature, dim=-1)  # (B, vocab)
                nxt = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
            out = torch.cat([out, nxt], dim=1)  # (B, T + step + 1)
            step_input = nxt  # (B, 1)
    return out


@dataclass(frozen=True)
class TinyRun:
    """A trained :class:`TinyCausalLM`, its tokenizer and its loss curve."""

    model: TinyCausalLM
    tokenizer: CharTokenizer
    losses: list[float]


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
