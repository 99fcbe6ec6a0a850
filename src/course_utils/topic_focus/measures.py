"""Where all-MiniLM-L6-v2 draws from, on sentences whose topic words are known.

all-MiniLM-L6-v2 is a sentence-embedding model: its sentence vector is the mean of the last
layer's token vectors, normalised (mean pooling, Reimers & Gurevych 2019); BERT-style models also
have the ``[CLS]`` token, whose vector is often used instead. For one sentence,
:func:`minilm_measures` returns five scores per WordPiece token:

* ``cls_raw`` / ``mean_raw``: the last layer's attention, averaged over its 12 heads, in the row
  of ``[CLS]`` / averaged over every row (what the mean-pooled vector gathers in that layer);
* ``cls_rollout`` / ``mean_rollout``: the same rows of :func:`attention_rollout` over all 6 layers;
* (for the ablation) ``cls_flow``: attention flow (Abnar & Zuidema 2020), the maximum flow from
  each token to ``[CLS]`` through the same graph rollout follows;
* ``gradient``: gradient × input of a zero-shot topic score (below) with respect to the word
  embeddings, signed (positive = evidence for the topic); ``gradient_abs``: its magnitude;
  ``saliency``: the length of the gradient, ``‖∂score/∂x_t‖`` (Simonyan et al. 2014).

The model was not trained on our four topics, so the "prediction" we attribute is zero-shot: the
cosine similarity of the sentence vector with the vector of "This sentence is about <topic>.",
for the true topic, minus the mean over the other three topics.

Ground truth on WordPiece tokens: a token is a topic token when its character span overlaps a
topic word (all the pieces of ``thunder ##storm ##s``). The vocabulary is English: most Chinese
characters become ``[UNK]``, so a Chinese topic word is usually invisible to the model, and the
measurements on Chinese sentences say so rather than pretend otherwise (``unk`` marks them).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from numpy.typing import NDArray
from torch import Tensor

from .._validation import check_int
from ..pretrained import load_tokenizer, run_encoder, tokenize, word_vectors
from .attribution import attention_flow, attention_rollout, input_gradient
from .classifier import one_thread
from .dataset import TOPICS, TopicSentence, topic_mask

__all__ = [
    "ABLATION_MEASURES",
    "MEASURES",
    "MiniLMAblation",
    "MiniLMMeasures",
    "label_vectors",
    "minilm_ablation",
    "minilm_measures",
    "sentence_vector",
    "to_words",
    "zero_shot_after_removal",
]

#: The names of the per-token scores, in the order the chapter shows them.
MEASURES = (
    "cls_raw",
    "mean_raw",
    "cls_rollout",
    "mean_rollout",
    "gradient",
    "gradient_abs",
    "saliency",
)
LABEL_TEMPLATE = "This sentence is about {}."


@dataclass(frozen=True)
class MiniLMMeasures:
    """Per-token scores of one sentence (all arrays ``(T,)``, over ``[CLS] ... [SEP]``)."""

    tokens: list[str]
    spans: list[tuple[int, int]]  # character spans; (0, 0) for [CLS] and [SEP]
    is_topic: NDArray[np.bool_]  # ground truth
    is_special: NDArray[np.bool_]  # [CLS] and [SEP]: excluded from rankings
    unk: NDArray[np.bool_]  # tokens the vocabulary does not know
    scores: dict[str, NDArray[np.float64]]  # MEASURES -> (T,)
    zero_shot: NDArray[np.float64]  # (n_topics,) cosine similarity with each topic's label


def sentence_vector(hidden_states: Tensor) -> Tensor:
    """The model's sentence vector: mean of the last layer's token vectors, L2-normalised."""
    return F.normalize(hidden_states[-1].mean(dim=0), dim=-1)  # (d_model,)


@lru_cache(maxsize=1)
def label_vectors() -> Tensor:
    """``(n_topics, d_model)`` sentence vectors of "This sentence is about <topic>."."""
    rows = []
    with torch.no_grad(), one_thread():
        for topic in TOPICS:
            _, ids = tokenize(LABEL_TEMPLATE.format(topic))
            states, _ = run_encoder(word_vectors(ids))  # (L + 1, T, d)
            rows.append(sentence_vector(states))
    return torch.stack(rows)  # (n_topics, d_model)


def minilm_measures(sentence: TopicSentence) -> MiniLMMeasures:
    """Run all-MiniLM-L6-v2 on one sentence (forward and backward) and score every token."""
    if not isinstance(sentence, TopicSentence):
        raise TypeError(f"sentence must be a TopicSentence; got {type(sentence).__name__}")
    tokens, ids = tokenize(sentence.text)
    spans = [tuple(o) for o in load_tokenizer().encode(sentence.text).offsets]
    labels = label_vectors()  # (C, d)
    c = sentence.label

    kept: dict[str, Tensor] = {}

    def topic_score(words: Tensor) -> Tensor:
        states, maps = run_encoder(words)  # (L + 1, T, d), (L, H, T, T)
        sims = labels @ sentence_vector(states)  # (C,)
        kept["maps"], kept["sims"] = maps.detach(), sims.detach()  # one forward serves both
        others = torch.cat([sims[:c], sims[c + 1 :]])  # (C - 1,)
        return sims[c] - others.mean()

    with one_thread():
        x = word_vectors(ids)  # (T, d)
        grad = input_gradient(topic_score, x)  # (T, d)
    maps, zero_shot = kept["maps"], kept["sims"].double().numpy()  # (L, H, T, T), (C,)
    grad_x = (grad * x).sum(dim=-1).double().numpy()  # (T,): gradient × input
    maps_np = maps.double().numpy()  # (L, H, T, T)
    last = maps_np[-1].mean(axis=0)  # (T, T): last layer, heads averaged
    rollout = attention_rollout(maps_np)  # (T, T)
    scores = {
        "cls_raw": last[0],
        "mean_raw": last.mean(axis=0),
        "cls_rollout": rollout[0],
        "mean_rollout": rollout.mean(axis=0),
        "gradient": grad_x,
        "gradient_abs": np.abs(grad_x),
        "saliency": grad.norm(dim=-1).double().numpy(),
    }
    return MiniLMMeasures(
        tokens=tokens,
        spans=spans,
        is_topic=topic_mask(spans, sentence.topic_spans),
        is_special=np.array([t in ("[CLS]", "[SEP]") for t in tokens]),
        unk=np.array([t == "[UNK]" for t in tokens]),
        scores=scores,
        zero_shot=zero_shot,
    )


def to_words(measures: MiniLMMeasures, name: str, word_spans: list[tuple[int, int]]) -> NDArray:
    """Scores of WordPiece tokens summed into words: ``(W,)`` for ``W`` word spans.

    Each word gets the sum of the scores of the tokens that overlap it (``thunder ##storm ##s``
    -> one word); ``[CLS]``, ``[SEP]`` and tokens outside every word (punctuation) are dropped.
    """
    if name not in measures.scores:
        raise ValueError(f"name must be one of {sorted(measures.scores)}; got {name!r}")
    scores = measures.scores[name]  # (T,)
    out = np.zeros(len(word_spans))  # (W,)
    for w, span in enumerate(word_spans):
        inside = topic_mask(measures.spans, [span])  # (T,) tokens overlapping this word
        out[w] = scores[inside].sum()
    return out


#: What :func:`minilm_ablation` removes by: five of the chapter's measures plus attention flow.
ABLATION_MEASURES = ("cls_raw", "mean_raw", "cls_rollout", "cls_flow", "saliency")


def zero_shot_after_removal(sentence: TopicSentence, remove: Any) -> NDArray[np.float64]:
    """``(R, n_topics)`` cosine similarities of the sentence vector with each topic's label, after
    deleting the tokens marked in each row of ``remove`` (bool ``(R, T)`` over ``[CLS] … [SEP]``).

    A deleted token is gone from the input, as if it had not been written: the others move up a
    position. A row of ``False`` gives :class:`MiniLMMeasures`' ``zero_shot`` again.
    """
    _, ids = tokenize(sentence.text)
    r = np.asarray(remove)
    T = len(ids)
    if r.dtype != np.bool_ or r.ndim != 2 or r.shape[1] != T or r[:, [0, -1]].any():
        raise ValueError(
            f"remove must be a bool array of shape (R, {T}) with [CLS] and [SEP] (the first and "
            f"last columns) kept; got shape {r.shape}, dtype {r.dtype}"
        )
    labels = label_vectors()  # (C, d)
    rows = []
    with torch.no_grad(), one_thread():
        for row in r:
            kept = [i for i, gone in zip(ids, row, strict=True) if not gone]
            states, _ = run_encoder(word_vectors(kept))  # (L + 1, T', d)
            rows.append((labels @ sentence_vector(states)).double().numpy())  # (C,)
    return np.stack(rows)  # (R, C)


@dataclass(frozen=True)
class MiniLMAblation:
    """Per-sentence effects of deleting the top-``k`` tokens of each measure (and ``k`` random
    ones): ``drop[name]`` is the fall of the zero-shot margin (the true topic's similarity minus
    the mean of the others), ``flip[name]`` whether the zero-shot topic changed; ``(N,)`` each."""

    k: int
    drop: dict[str, NDArray[np.float64]]
    flip: dict[str, NDArray[np.float64]]


def _margin(sims: NDArray[np.float64], c: int) -> NDArray[np.float64]:
    others = np.delete(sims, c, axis=-1)  # (..., C - 1)
    return sims[..., c] - others.mean(axis=-1)


def minilm_ablation(
    sentences: list[TopicSentence],
    ks: tuple[int, ...] = (1, 2, 3),
    *,
    n_random: int = 10,
    seed: int = 0,
) -> list[MiniLMAblation]:
    """Delete the top-``k`` WordPiece tokens by each of :data:`ABLATION_MEASURES` (``[CLS]`` and
    ``[SEP]`` never), or ``k`` random ones (``n_random`` seeded draws, averaged), and re-run
    all-MiniLM-L6-v2: the erasure test of the chapter's classifier, asked of the real model.

    Sentences with at most ``max(ks)`` word tokens are skipped. One forward pass per removal:
    about a minute for the 32 English sentences (``benchmarks/minilm_ablation.py``).
    """
    for k in ks:
        check_int(k, "ks[...]", low=1)
    rng = np.random.default_rng(seed)
    names = (*ABLATION_MEASURES, "random")
    out = {k: ({n: [] for n in names}, {n: [] for n in names}) for k in ks}
    for sentence in sentences:
        m = minilm_measures(sentence)
        words = np.flatnonzero(~m.is_special)  # candidate positions
        if len(words) <= max(ks):
            continue
        with torch.no_grad(), one_thread():
            _, maps = run_encoder(word_vectors(tokenize(sentence.text)[1]))  # (L, H, T, T)
        scores = dict(m.scores, cls_flow=attention_flow(maps.double().numpy(), outputs=[0])[0])
        c, before = sentence.label, int(m.zero_shot.argmax())
        T = len(m.tokens)
        for k in ks:
            rows = []
            for name in ABLATION_MEASURES:
                top = words[np.argsort(-scores[name][words], kind="stable")[:k]]
                rows.append(np.isin(np.arange(T), top))
            for _ in range(n_random):
                rows.append(np.isin(np.arange(T), rng.choice(words, size=k, replace=False)))
            sims = zero_shot_after_removal(sentence, np.array(rows))  # (R, C)
            drop = _margin(m.zero_shot, c) - _margin(sims, c)  # (R,)
            flip = (sims.argmax(axis=1) != before).astype(float)  # (R,)
            drops, flips = out[k]
            for i, name in enumerate(ABLATION_MEASURES):
                drops[name].append(drop[i])
                flips[name].append(flip[i])
            drops["random"].append(float(drop[len(ABLATION_MEASURES) :].mean()))
            flips["random"].append(float(flip[len(ABLATION_MEASURES) :].mean()))
    return [
        MiniLMAblation(
            k,
            {n: np.asarray(v) for n, v in out[k][0].items()},
            {n: np.asarray(v) for n, v in out[k][1].items()},
        )
        for k in ks
    ]
