"""A small encoder–decoder learns to reverse a word: ``"cab"`` -> ``"bac"``.

The alignment is predictable: output step ``i`` copies source position ``L - 1 - i`` (``L`` is the
source's length), so a reader can check where the cross-attention *should* look. The sources have
different lengths (``min_len`` to ``max_len`` letters) and are padded on the right with ``<pad>``;
the key-padding mask (:func:`course_utils.masks.key_padding_mask`) hides the padding from the
encoder's self-attention and from the decoder's cross-attention.

Model: letter embeddings + sinusoidal positions -> ``n_layers`` encoder blocks
(:class:`~course_utils.transformer.TransformerBlock`) -> LayerNorm = the memory; the decoder reads
``<bos> y_0 ... y_{L-1}`` with a causal mask through ``n_layers``
:class:`~course_utils.decoder.DecoderBlock` s -> LayerNorm -> logits over letters and ``<eos>``.
Trained with teacher forcing (the decoder sees the right previous letters), decoded greedily:
:meth:`ReversalModel.greedy_decode` either runs the decoder on the whole prefix at every step
(the cross-attention's keys and values projected from the memory again each time) or projects
them once per source and caches the self-attention's keys and values (``cached=True``).

Runs are seeded and deterministic (one thread, deterministic algorithms).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .._determinism import deterministic as _deterministic
from .._shared_results import shared_result
from .._training import ExperimentConfig, train_adam, with_settings
from .._validation import check_bool, check_int
from ..decoder import DecoderBlock
from ..i18n import t
from ..kv_cache import KVCache
from ..masks import causal_mask, key_padding_mask
from ..positions import sinusoidal_encoding
from ..transformer import TransformerBlock, TransformerSize

__all__ = [
    "ReversalConfig",
    "ReversalModel",
    "ReversalRun",
    "alignment_accuracy",
    "cross_attention_rows",
    "decode",
    "encode",
    "exact_match_by_padding",
    "make_batch",
    "train_reversal",
]

PAD, BOS, EOS = 0, 1, 2
LETTERS = string.ascii_lowercase[:10]  # a..j
VOCAB = ["<pad>", "<bos>", "<eos>", *LETTERS]


@dataclass(frozen=True, kw_only=True)
class ReversalConfig(ExperimentConfig):
    """Everything :func:`train_reversal` can be told, with its defaults (chapter 8's run).

    Words of ``min_len`` to ``max_len`` letters; the size of the encoder and of the decoder
    (``n_layers`` blocks each); the training schedule (Adam with linear decay).

    >>> TransformerSize.of(ReversalConfig())
    TransformerSize(d_model=32, n_heads=2, d_ff=64, n_layers=2)
    """

    steps: int = 600
    batch: int | None = 64
    lr: float = 3e-3
    eval_every: int = 100
    min_len: int = 2  # letters of the shortest word
    max_len: int = 8  # letters of the longest word
    d_model: int = 32
    n_heads: int = 2
    d_ff: int = 64
    n_layers: int = 2  # blocks in the encoder, and in the decoder


def encode(words: Sequence[str], t_k: int | None = None) -> tuple[Tensor, Tensor]:
    """Words -> token ids ``(B, t_k)`` padded with ``<pad>``, and their lengths ``(B,)``.

    >>> src, lengths = encode(["cab", "a"])
    >>> src.tolist(), lengths.tolist()
    ([[5, 3, 4], [3, 0, 0]], [3, 1])
    """
    if isinstance(words, str) or not words:
        raise ValueError(f"words must be a non-empty list of strings; got {words!r}")
    for w in words:
        if not isinstance(w, str) or not w or any(c not in LETTERS for c in w):
            raise ValueError(f"every word must be non-empty, letters a-j only; got {w!r}")
    lengths = torch.tensor([len(w) for w in words])  # (B,)
    t_k = int(lengths.max()) if t_k is None else t_k
    src = torch.full((len(words), t_k), PAD)  # (B, t_k)
    for b, w in enumerate(words):
        src[b, : len(w)] = torch.tensor([VOCAB.index(c) for c in w])
    return src, lengths


def decode(ids: Tensor | Sequence[int]) -> str:
    """Token ids -> the letters up to the first ``<eos>`` (``<pad>``/``<bos>`` dropped)."""
    out = []
    for i in ids:
        i = int(i)
        if i == EOS:
            break
        if i > EOS:
            out.append(VOCAB[i])
    return "".join(out)


def make_batch(
    batch: int, min_len: int, max_len: int, generator: torch.Generator
) -> tuple[Tensor, Tensor, Tensor]:
    """Random words: sources ``(B, max_len)``, lengths ``(B,)``, targets ``(B, max_len + 1)``.

    The target is the reversed word, then ``<eos>``, then ``<pad>``.

    >>> src, lengths, tgt = make_batch(2, 2, 4, torch.Generator().manual_seed(0))
    >>> [decode(s[:n]) for s, n in zip(src, lengths)], [decode(t) for t in tgt]
    (['dadj', 'hd'], ['jdad', 'dh'])
    """
    lengths = torch.randint(min_len, max_len + 1, (batch,), generator=generator)  # (B,)
    letters = torch.randint(EOS + 1, len(VOCAB), (batch, max_len), generator=generator)  # (B, T)
    pos = torch.arange(max_len)[None, :]  # (1, max_len)
    real = pos < lengths[:, None]  # (B, max_len)
    src = torch.where(real, letters, PAD)  # (B, max_len)
    # target position i holds source position L - 1 - i, then <eos> at i = L
    idx = (lengths[:, None] - 1 - pos).clamp(min=0)  # (B, max_len)
    tgt = torch.full((batch, max_len + 1), PAD)  # (B, max_len + 1)
    tgt[:, :max_len] = torch.where(real, src.gather(1, idx), PAD)
    tgt[torch.arange(batch), lengths] = EOS
    return src, lengths, tgt


class ReversalModel(nn.Module):
    """Encoder blocks + decoder blocks (pre-LN) sharing one embedding table and sinusoids."""

    def __init__(
        self, *, max_len: int = 8, d_model: int = 32, n_heads: int = 2, d_ff: int = 64,
        n_layers: int = 2,
    ) -> None:  # fmt: skip
        super().__init__()
        self.max_len, self.d_model = max_len, d_model
        self.embed = nn.Embedding(len(VOCAB), d_model)
        pe = torch.tensor(sinusoidal_encoding(max_len + 2, d_model), dtype=torch.float32)
        self.register_buffer("pe", pe, persistent=False)  # (max_len + 2, d_model)
        self.encoder = nn.ModuleList(
            TransformerBlock(d_model, n_heads, d_ff) for _ in range(n_layers)
        )
        self.decoder = nn.ModuleList(DecoderBlock(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.enc_norm = nn.LayerNorm(d_model)
        self.dec_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, len(VOCAB))

    def _embed(self, ids: Tensor, start: int = 0) -> Tensor:
        """Letter vectors plus the sinusoids of positions ``start .. start + T - 1``."""
        return self.embed(ids) + self.pe[start : start + ids.size(1)]  # (B, T, d_model)

    def encode(
        self, src: Tensor, lengths: Tensor, *, use_encoder_mask: bool = True
    ) -> tuple[Tensor, Tensor]:
        """The memory ``(B, T_k, d_model)`` and the key-padding mask ``(B, 1, T_k)``.

        ``use_encoder_mask=False`` leaves the mask out of the encoder's self-attention only
        (chapter 8's exercise 8.4 measures what that does); the mask is still returned.
        """
        keep = torch.from_numpy(key_padding_mask(lengths, src.size(1)))[:, None, :]  # (B, 1, T_k)
        h = self._embed(src)  # (B, T_k, d_model)
        for block in self.encoder:
            # (B, T_k, d_model); with the mask, padding is never attended to
            h = block(h, keep if use_encoder_mask else None)
        return self.enc_norm(h), keep

    def decode_step(
        self, tgt_in: Tensor, memory: Tensor, keep: Tensor | None, *, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        """Logits ``(B, T_q, vocab)`` for decoder inputs ``(B, T_q)``; optionally the cross
        weights ``(B, n_heads, T_q, T_k)`` of every decoder block."""
        causal = torch.from_numpy(causal_mask(tgt_in.size(1)))  # (T_q, T_q)
        h = self._embed(tgt_in)  # (B, T_q, d_model)
        cross = []
        for block in self.decoder:
            if return_weights:
                h, w = block(h, memory, self_mask=causal, memory_mask=keep, return_weights=True)
                cross.append(w.cross)  # (B, n_heads, T_q, T_k)
            else:
                h = block(h, memory, self_mask=causal, memory_mask=keep)  # (B, T_q, d_model)
        logits = self.head(self.dec_norm(h))  # (B, T_q, vocab)
        return (logits, cross) if return_weights else logits

    def forward(self, src: Tensor, lengths: Tensor, tgt: Tensor) -> Tensor:
        """Teacher forcing: logits ``(B, T_out, vocab)`` predicting ``tgt`` ``(B, T_out)``."""
        memory, keep = self.encode(src, lengths)
        tgt_in = torch.cat([torch.full_like(tgt[:, :1], BOS), tgt[:, :-1]], dim=1)  # shift right
        return self.decode_step(tgt_in, memory, keep)

    @torch.no_grad()
    def generate(
        self,
        src: Tensor,
        lengths: Tensor,
        *,
        use_padding_mask: bool = True,
        use_encoder_mask: bool = True,
    ) -> tuple[Tensor, list[Tensor]]:
        """Greedy decoding of ``max_len + 1`` steps: ids ``(B, T_out)`` and, per decoder block,
        the cross weights ``(B, n_heads, T_out, T_k)`` of the final pass.

        ``use_padding_mask`` is the mask of the decoder's cross-attention, ``use_encoder_mask``
        the one of the encoder's self-attention."""
        memory, keep = self.encode(src, lengths, use_encoder_mask=use_encoder_mask)
        keep = keep if use_padding_mask else None
        out, _ = self._greedy(memory, keep, self.max_len + 1, cached=False)  # (B, T_out)
        ids = torch.cat([torch.full_like(out[:, :1], BOS), out], dim=1)  # (B, 1 + T_out)
        _, cross = self.decode_step(ids[:, :-1], memory, keep, return_weights=True)
        return out, cross

    @torch.no_grad()
    def greedy_decode(
        self, src: Tensor, lengths: Tensor, *, n_steps: int | None = None, cached: bool = True
    ) -> tuple[Tensor, Tensor]:
        """Greedy decoding of ``n_steps`` tokens (default ``max_len + 1``): the ids ``(B,
        n_steps)`` and the logits ``(B, n_steps, vocab)`` each step chose from.

        ``cached=False``: every step runs the decoder on the whole prefix, so each block projects
        the memory through the cross-attention's ``W_K`` and ``W_V`` again and recomputes the
        self-attention of every earlier token. ``cached=True``: each block projects the memory
        once (:meth:`DecoderBlock.cross_kv`), and a step runs the new token only, its
        self-attention reading a :class:`~course_utils.kv_cache.KVCache`. Same tokens, same logits
        to float32 rounding (``tests/test_reversal.py``).

        >>> _ = torch.manual_seed(0)
        >>> model = ReversalModel().eval()
        >>> src, lengths = encode(["cab", "jihgf"])
        >>> naive, fast = (model.greedy_decode(src, lengths, cached=c) for c in (False, True))
        >>> torch.equal(naive[0], fast[0]), bool((naive[1] - fast[1]).abs().max() < 1e-5)
        (True, True)
        """
        cached = check_bool(cached, "cached")
        longest = self.pe.size(0) - 1  # positions 0 .. n_steps - 1 of the decoder's input
        n_steps = longest if n_steps is None else check_int(n_steps, "n_steps", low=1, high=longest)
        memory, keep = self.encode(src, lengths)
        return self._greedy(memory, keep, n_steps, cached=cached)

    def _greedy(
        self,
        memory: Tensor,
        keep: Tensor | None,
        n_steps: int,
        *,
        cached: bool,
        cross_once: bool = True,
    ) -> tuple[Tensor, Tensor]:
        """:meth:`greedy_decode` from the memory ``(B, T_k, d_model)`` on (no checks).

        ``cross_once=False`` (with ``cached=True``) keeps the self-attention's KV cache but
        projects the memory again at every step: what ``benchmarks/bench_cross_kv_cache.py``
        times to tell the cross-attention's saving from the self-attention's."""
        ids = torch.full((memory.size(0), 1), BOS)  # (B, 1): the decoder's input so far
        steps = []
        if cached:
            crosses = [block.cross_kv(memory, keep) for block in self.decoder]  # once per source
            caches = [KVCache() for _ in self.decoder]
        for step in range(n_steps):
            if cached:
                if not cross_once and step > 0:
                    crosses = [block.cross_kv(memory, keep) for block in self.decoder]
                h = self._embed(ids[:, -1:], start=step)  # (B, 1, d_model): the newest token
                for block, cross, cache in zip(self.decoder, crosses, caches, strict=True):
                    h = block.step(h, cross, cache)  # (B, 1, d_model)
                logits = self.head(self.dec_norm(h))[:, -1]  # (B, vocab)
            else:
                logits = self.decode_step(ids, memory, keep)[:, -1]  # (B, vocab): whole prefix
            steps.append(logits)
            ids = torch.cat([ids, logits.argmax(-1, keepdim=True)], dim=1)  # (B, t + 2)
        return ids[:, 1:], torch.stack(steps, dim=1)  # (B, n_steps), (B, n_steps, vocab)


def alignment_accuracy(cross: Tensor, lengths: Tensor) -> float:
    """How often the head-averaged cross-attention's strongest source position at output step
    ``i < L`` is ``L - 1 - i``, the letter the task says step ``i`` copies.

    ``cross`` is ``(B, n_heads, T_out, T_k)``; only the ``L`` letter steps of each word count.
    """
    top = cross.mean(dim=1).argmax(dim=-1)  # (B, T_out)
    hits = total = 0
    for b, n in enumerate(lengths.tolist()):
        expected = torch.arange(n - 1, -1, -1)  # (n,)
        hits += int((top[b, :n] == expected).sum())
        total += n
    return hits / total


@dataclass(frozen=True)
class ReversalRun:
    seed: int
    steps: list[int]  # steps at which the held-out loss was measured (0 = before training)
    losses: list[float]  # held-out teacher-forced cross-entropy (nats) at those steps
    exact_match: float  # share of held-out words reversed exactly by greedy decoding
    alignment: list[float]  # per decoder block: alignment_accuracy on the held-out words
    model: ReversalModel


def _loss(model: ReversalModel, src: Tensor, lengths: Tensor, tgt: Tensor) -> Tensor:
    logits = model(src, lengths, tgt)  # (B, T_out, vocab)
    return F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=PAD)


def _batch_loss(model: ReversalModel, next_batch: Callable[[], tuple[Tensor, ...]]) -> Tensor:
    return _loss(model, *next_batch())  # the next (src, lengths, tgt) of training words


def _held_out_loss(model: ReversalModel, src: Tensor, lengths: Tensor, tgt: Tensor) -> float:
    model.eval()
    with torch.no_grad():
        return float(_loss(model, src, lengths, tgt))


def held_out(n: int = 500, *, min_len: int = 2, max_len: int = 8) -> tuple[Tensor, Tensor, Tensor]:
    """The held-out words (seeded apart from training; the same for every run)."""
    return make_batch(n, min_len, max_len, torch.Generator().manual_seed(12345))


@shared_result  # trained once per test session (see _shared_results)
def train_reversal(
    seeds: Sequence[int] = (0, 1, 2),
    *,
    config: ReversalConfig | None = None,
    **settings: Any,
) -> list[ReversalRun]:
    """Train one :class:`ReversalModel` per seed (Adam, linear decay); report held-out numbers.

    Pass a :class:`ReversalConfig` as ``config``, or keywords for single settings (``min_len``,
    ``max_len``, ``d_model``, ``n_heads``, ``d_ff``, ``n_layers``, ``steps``, ``batch``, ``lr``,
    ``eval_every``); what is not given keeps chapter 8's value.

    >>> runs = train_reversal(seeds=(0,), steps=2, eval_every=1, batch=4)
    >>> runs[0].steps, len(runs[0].alignment)
    ([0, 1, 2], 2)
    """
    cfg = with_settings(ReversalConfig, config, settings, "train_reversal")
    min_len, max_len = cfg.min_len, cfg.max_len
    runs = []
    with _deterministic():
        test_src, test_len, test_tgt = held_out(min_len=min_len, max_len=max_len)
        for seed in seeds:
            torch.manual_seed(seed)
            model = ReversalModel(max_len=max_len, **asdict(TransformerSize.of(cfg)))
            data = torch.Generator().manual_seed(1000 + seed)
            next_batch = partial(make_batch, cfg.schedule.batch, min_len, max_len, data)
            at, losses = train_adam(
                model,
                partial(_batch_loss, model, next_batch),
                cfg.schedule,
                evaluate=partial(_held_out_loss, model, test_src, test_len, test_tgt),
                at_start=True,
                at_end=True,
                train_mode=True,
                # linear decay to 0: the late steps settle instead of jumping out of the minimum
                linear_decay=True,
            )
            model.eval()
            out, cross = model.generate(test_src, test_len)
            exact = float(
                np.mean([decode(o) == decode(t) for o, t in zip(out, test_tgt, strict=True)])
            )
            align = [alignment_accuracy(c, test_len) for c in cross]
            runs.append(ReversalRun(seed, at, losses, exact, align, model))
    return runs


def exact_match_by_padding(
    model: ReversalModel,
    src: Tensor,
    lengths: Tensor,
    tgt: Tensor,
    *,
    use_encoder_mask: bool = True,
) -> dict[int, float]:
    """Share of words reversed exactly, by the number of ``<pad>`` tokens after each word.

    ``src`` ``(B, T_k)``, ``lengths`` ``(B,)`` and ``tgt`` as :func:`held_out` gives them; the
    cross-attention always gets the padding mask, the encoder only if ``use_encoder_mask``.

    >>> src, lengths, tgt = held_out(8)
    >>> sorted(exact_match_by_padding(ReversalModel(), src, lengths, tgt))  # padding amounts
    [0, 3, 4, 5]
    """
    model.eval()
    out, _ = model.generate(src, lengths, use_encoder_mask=use_encoder_mask)
    right = np.array([decode(o) == decode(t) for o, t in zip(out, tgt, strict=True)])  # (B,)
    padding = (src.size(1) - lengths).numpy()  # (B,)
    return {int(p): float(right[padding == p].mean()) for p in np.unique(padding)}


def cross_attention_rows(
    model: ReversalModel,
    words: Sequence[str],
    *,
    t_k: int | None = None,
    use_padding_mask: bool = True,
    block: int = -1,
) -> list[tuple[str, list[str], list[str], np.ndarray]]:
    """For each word: ``(label, source tokens, output tokens, weights (T_out, T_k))``.

    The sources are padded to ``t_k`` (default: the longest word) and shown with their
    ``<pad>`` tokens; the output runs to the first ``<eos>``; the weights are the cross-attention
    of decoder block ``block``, averaged over heads. This is what
    :class:`course_utils.widgets.CrossAttentionView` draws.

    >>> _ = torch.manual_seed(0)
    >>> label, src, out, w = cross_attention_rows(ReversalModel().eval(), ["cab", "a"])[1]
    >>> src, w.shape[1]
    (['a', '<pad>', '<pad>'], 3)
    """
    src, lengths = encode(words, t_k)
    ids, cross = model.generate(src, lengths, use_padding_mask=use_padding_mask)
    weights = cross[block].mean(dim=1)  # (B, T_out, T_k): average over heads
    rows = []
    for b, word in enumerate(words):
        out_ids = ids[b].tolist()
        n = out_ids.index(EOS) + 1 if EOS in out_ids else len(out_ids)  # through <eos>
        out_tokens = [VOCAB[i] for i in out_ids[:n]]
        src_tokens = [VOCAB[i] for i in src[b].tolist()]
        mask_text = "with" if use_padding_mask else "WITHOUT"
        label = t(
            "{word} -> {output} ({mask} padding mask)",
            word=word,
            output=decode(out_ids),
            mask=mask_text,
        )
        rows.append((label, src_tokens, out_tokens, weights[b, :n].double().numpy()))
    return rows
