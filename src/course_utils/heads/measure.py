"""Measure what each head of the pretrained model attends to, over a corpus of sentences.

Instead of picking a pretty example, every head is scored on every sentence of a small corpus
(``head_corpus.json``, about 70 varied English sentences written for the course) and the scores are
averaged, following the measurements of Clark et al. (2019), "What Does BERT Look At?". For a head,
each pattern's score is the mean attention weight, over the query tokens where the pattern is
defined, that the query puts on:

=============  ==============================================================================
``previous``   the token just before it (queries 2 .. T-2, so the previous token is a word)
``next``       the token just after it (queries 1 .. T-3, so the next token is a word)
``self``       itself
``cls``        ``[CLS]`` (position 0)
``sep``        ``[SEP]`` (position T-1)
``punct``      punctuation tokens (``. , ; : ! ?``), summed, in sentences that have them
``same``       other occurrences of its own token, summed (only queries whose token repeats)
``coref``      for an annotated pronoun, the noun it refers to (13 sentences with ``coref``)
=============  ==============================================================================

Only word tokens are used as queries (not ``[CLS]``/``[SEP]``). A uniform head would score about
``1/T`` on a single position.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..pretrained import attention_maps

__all__ = ["PATTERNS", "HeadScores", "load_corpus", "measure_heads", "pattern_weights", "top_heads"]

PATTERNS = ("previous", "next", "self", "cls", "sep", "punct", "same", "coref")
PUNCTUATION = frozenset(".,;:!?")
CORPUS_PATH = Path(__file__).with_name("head_corpus.json")


@lru_cache(maxsize=1)
def _corpus() -> tuple[tuple[str, tuple[str, str] | None], ...]:
    data = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))
    return tuple(
        (s["text"], tuple(s["coref"]) if "coref" in s else None) for s in data["sentences"]
    )


def load_corpus() -> list[dict[str, Any]]:
    """The corpus as a list of ``{"text": str, "coref": (pronoun, antecedent) or None}``.

    >>> corpus = load_corpus()
    >>> len(corpus) >= 50, corpus[0]["text"]
    (True, 'The cat sat on the mat.')
    """
    return [{"text": text, "coref": coref} for text, coref in _corpus()]


def pattern_weights(
    tokens: list[str], maps: NDArray, coref: tuple[str, str] | None = None
) -> dict[str, tuple[NDArray, int]]:
    """For one sentence: per pattern, the summed weight over its queries ``(L, H)`` and their count.

    ``maps`` is ``(L, H, T, T)`` as returned by :func:`course_utils.pretrained.attention_maps`.

    >>> maps = np.zeros((1, 1, 4, 4)); maps[..., 2, 1] = 1.0   # query 2 looks at query 1
    >>> total, count = pattern_weights(["[CLS]", "a", "b", "[SEP]"], maps)["previous"]
    >>> total.tolist(), count
    ([[1.0]], 1)
    """
    T = len(tokens)
    if maps.ndim != 4 or maps.shape[-2:] != (T, T):
        raise ValueError(f"maps must have shape (L, H, {T}, {T}); got {maps.shape}")
    words = range(1, T - 1)  # query positions that are not [CLS] / [SEP]
    out: dict[str, tuple[NDArray, int]] = {}

    def collect(name: str, rows: list[int], cols: list[list[int]]) -> None:
        total = np.zeros(maps.shape[:2])  # (L, H)
        for i, js in zip(rows, cols, strict=True):
            total += maps[:, :, i, js].sum(axis=-1)  # (L, H)
        out[name] = (total, len(rows))

    collect("previous", [i for i in words if i >= 2], [[i - 1] for i in words if i >= 2])
    collect("next", [i for i in words if i <= T - 3], [[i + 1] for i in words if i <= T - 3])
    collect("self", list(words), [[i] for i in words])
    collect("cls", list(words), [[0] for _ in words])
    collect("sep", list(words), [[T - 1] for _ in words])
    punct = [j for j in words if tokens[j] in PUNCTUATION]
    collect("punct", list(words) if punct else [], [punct for _ in words] if punct else [])
    same_rows = [i for i in words if any(tokens[j] == tokens[i] for j in words if j != i)]
    collect(
        "same",
        same_rows,
        [[j for j in words if j != i and tokens[j] == tokens[i]] for i in same_rows],
    )
    if coref is not None:
        pronoun, antecedent = coref
        if tokens.count(pronoun) != 1 or tokens.count(antecedent) != 1:
            raise ValueError(
                f"coref {coref} must name two tokens that occur once each; tokens are {tokens}"
            )
        collect("coref", [tokens.index(pronoun)], [[tokens.index(antecedent)]])
    else:
        collect("coref", [], [])
    return out


@dataclass(frozen=True)
class HeadScores:
    """Mean weight per pattern and head: ``scores[pattern]`` is ``(n_layers, n_heads)``."""

    scores: dict[str, NDArray]
    counts: dict[str, int]  # how many queries each mean is over
    n_sentences: int
    mean_length: float  # mean number of tokens T per sentence (with [CLS] and [SEP])


@lru_cache(maxsize=4)
def _measure(texts: tuple[tuple[str, tuple[str, str] | None], ...]) -> HeadScores:
    totals: dict[str, NDArray] = {}
    counts = dict.fromkeys(PATTERNS, 0)
    lengths = []
    for text, coref in texts:
        tokens, maps = attention_maps(text)
        lengths.append(len(tokens))
        for name, (total, count) in pattern_weights(tokens, maps.astype(np.float64), coref).items():
            totals[name] = totals.get(name, 0) + total
            counts[name] += count
    scores = {name: totals[name] / max(counts[name], 1) for name in PATTERNS}
    return HeadScores(scores, counts, len(texts), float(np.mean(lengths)))


def measure_heads(corpus: list[dict[str, Any]] | None = None) -> HeadScores:
    """Average the pattern weights of every head over ``corpus`` (default: the course corpus).

    Cached: the second call with the same corpus is instant.
    """
    items = load_corpus() if corpus is None else corpus
    key = tuple((c["text"], tuple(c["coref"]) if c.get("coref") else None) for c in items)
    return _measure(key)


def top_heads(scores: HeadScores, pattern: str, k: int = 3) -> list[tuple[int, int, float]]:
    """The ``k`` heads with the highest mean weight on ``pattern``: ``(layer, head, weight)``.

    Layers and heads are numbered from 0. Ties are broken by position (layer, then head).
    """
    if pattern not in scores.scores:
        raise ValueError(f"pattern must be one of {PATTERNS}; got {pattern!r}")
    s = scores.scores[pattern]  # (L, H)
    order = np.lexsort((np.arange(s.size), -s.ravel()))[:k]
    return [(int(i // s.shape[1]), int(i % s.shape[1]), float(s.ravel()[i])) for i in order]
