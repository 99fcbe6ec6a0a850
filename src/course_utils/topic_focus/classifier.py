"""An attention-pooling classifier (注意力池化): one learned query reads a sentence, and a linear
layer names its topic.

For a sentence of ``T`` tokens with embeddings ``x_t`` (learned, ``d_model`` wide, no context: a
token's vector does not depend on its neighbours)::

    k_t = W_K x_t                               # (T, d_k)   keys
    a   = softmax(q · k_t / √d_k over t)        # (T,)       one query q, learned; masked -> 0
    z   = Σ_t a_t x_t                           # (d_model,) the attention-weighted average
    logits = W_out z + b                        # (n_topics,)

Steps 1-3 are :func:`course_utils.multihead.attention_weights` with a single query. Because the
embeddings carry no context, the only way information about a word reaches the prediction is
through its own weight ``a_t``; that is what makes this model a fair place to ask whether the
weights explain the decision (deep contextual encoders mix words before any pooling).

>>> data = make_split(n_train=400, n_test=100, seed=0)
>>> result = train_classifier(data, seed=0, steps=60)
>>> result.test_accuracy > 0.9
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
from numpy.typing import NDArray
from torch import Tensor, nn

from .._determinism import deterministic, one_thread
from .._shared_results import shared_result
from .._training import ExperimentConfig, train_adam, with_settings
from ..multihead import attention_weights
from .dataset import TOPICS, TopicSentence, template_sentences, topic_mask, word_tokens

__all__ = [
    "AttentionPoolingClassifier",
    "Batch",
    "ClassifierConfig",
    "Split",
    "TrainResult",
    "Vocabulary",
    "make_batch",
    "make_split",
    "one_thread",
    "train_classifier",
]

PAD, UNK = "<pad>", "<unk>"


@dataclass(frozen=True, kw_only=True)
class ClassifierConfig(ExperimentConfig):
    """Everything :func:`train_classifier` can be told besides the data and the seed.

    The widths of the embeddings (``d_model``) and of the query/key space (``d_k``), the
    schedule: full-batch Adam (``batch`` is None: every step sees the whole training set), and
    ``attention``: ``"learned"`` (the query is trained) or ``"uniform"``, the baseline of
    Wiegreffe and Pinter (2019, their first test): the query stays at zero, so every token of a
    sentence keeps the weight ``1/T`` and only the embeddings and the output layer learn.

    >>> ClassifierConfig().schedule
    Schedule(steps=150, batch=None, lr=0.05, eval_every=10)
    """

    steps: int = 150
    batch: int | None = None  # the whole training set at every step
    lr: float = 0.05
    eval_every: int = 10
    d_model: int = 32
    d_k: int = 16
    attention: str = "learned"  # or "uniform": the query is frozen at zero

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.attention not in ATTENTION_KINDS:
            raise ValueError(
                f"attention must be one of {', '.join(map(repr, ATTENTION_KINDS))}; "
                f"got {self.attention!r}"
            )


#: How :func:`train_classifier` treats the attention weights (``ClassifierConfig.attention``).
ATTENTION_KINDS = ("learned", "uniform")


@dataclass(frozen=True)
class Vocabulary:
    """Token -> id, built from training sentences; id 0 is padding, id 1 is unknown.

    >>> vocab = Vocabulary.build([["the", "rain"], ["the", "soup"]])
    >>> vocab.ids(["the", "soup", "pizza"])
    [4, 3, 1]
    """

    tokens: tuple[str, ...]

    @classmethod
    def build(cls, token_lists: Sequence[Sequence[str]]) -> Vocabulary:
        seen = dict.fromkeys(tok for toks in token_lists for tok in toks)
        return cls((PAD, UNK, *sorted(seen)))

    def __len__(self) -> int:
        return len(self.tokens)

    def ids(self, tokens: Sequence[str]) -> list[int]:
        index = self._index
        return [index.get(tok, 1) for tok in tokens]

    @property
    def _index(self) -> dict[str, int]:
        cached = self.__dict__.get("_cache")
        if cached is None:
            cached = {tok: i for i, tok in enumerate(self.tokens)}
            object.__setattr__(self, "_cache", cached)
        return cached


@dataclass(frozen=True)
class Batch:
    """Padded token ids of several sentences, with their masks and labels."""

    ids: Tensor  # (B, T) long, 0 = padding
    mask: Tensor  # (B, T) bool, True = a real token
    is_topic: Tensor  # (B, T) bool, True = part of a topic word
    labels: Tensor  # (B,) long, index into TOPICS
    tokens: list[list[str]]  # the tokens of each sentence (unpadded)


def make_batch(sentences: Sequence[TopicSentence], vocab: Vocabulary) -> Batch:
    """Tokenise with :func:`~course_utils.topic_focus.dataset.word_tokens`, map to ids, pad."""
    if not sentences:
        raise ValueError("sentences must contain at least one sentence; got 0")
    tokens, masks = [], []
    for s in sentences:
        toks, spans = word_tokens(s.text)
        if not toks:
            raise ValueError(f"sentence {s.text!r} has no tokens")
        tokens.append(toks)
        masks.append(topic_mask(spans, s.topic_spans))
    T = max(len(t) for t in tokens)
    ids = torch.zeros(len(tokens), T, dtype=torch.long)  # (B, T)
    is_topic = torch.zeros(len(tokens), T, dtype=torch.bool)  # (B, T)
    for b, (toks, m) in enumerate(zip(tokens, masks, strict=True)):
        ids[b, : len(toks)] = torch.tensor(vocab.ids(toks))
        is_topic[b, : len(toks)] = torch.from_numpy(m)
    labels = torch.tensor([s.label for s in sentences])  # (B,)
    return Batch(ids, ids != 0, is_topic, labels, tokens)


class AttentionPoolingClassifier(nn.Module):
    """Embeddings, one learned query, attention pooling, a linear layer (see the module docstring).

    Parameters
    ----------
    vocab_size : int
        Number of token ids (id 0 is padding).
    n_classes : int
        Number of topics.
    d_model, d_k : int
        Width of the embeddings and of the query/key space.
    """

    def __init__(self, vocab_size: int, n_classes: int, d_model: int = 32, d_k: int = 16) -> None:
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("n_classes", n_classes),
            ("d_model", d_model),
            ("d_k", d_k),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1; got {value!r}")
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.W_K = nn.Linear(d_model, d_k, bias=False)
        self.query = nn.Parameter(torch.zeros(d_k))  # q: starts at 0, so attention starts uniform
        self.out = nn.Linear(d_model, n_classes)

    def embed(self, ids: Tensor) -> Tensor:
        """``(B, T)`` token ids -> ``(B, T, d_model)`` embeddings (the "input" of attributions)."""
        if not isinstance(ids, Tensor) or ids.dim() != 2 or ids.dtype != torch.long:
            got = tuple(ids.shape) if isinstance(ids, Tensor) else type(ids).__name__
            raise ValueError(f"ids must be a (B, T) long tensor; got {got}")
        return self.embedding(ids)  # (B, T, d_model)

    def forward_embeddings(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """Logits ``(B, n_classes)`` and attention weights ``(B, T)`` from embeddings ``x``.

        ``mask`` ``(B, T)`` bool: ``False`` tokens get exactly zero weight (padding, or words an
        ablation removed). A sentence with every token removed pools to the zero vector.
        """
        if x.dim() != 3 or mask.shape != x.shape[:2] or mask.dtype != torch.bool:
            raise ValueError(
                f"x must be (B, T, d_model) and mask a (B, T) bool tensor; got x of shape "
                f"{tuple(x.shape)} and mask of shape {tuple(mask.shape)}, dtype {mask.dtype}"
            )
        k = self.W_K(x)[:, None]  # (B, 1, T, d_k)
        q = self.query.expand(x.size(0), 1, 1, -1)  # (B, 1, 1, d_k)
        weights = attention_weights(q, k, mask[:, None, None, :])[:, 0, 0]  # (B, T)
        pooled = (weights[:, :, None] * x).sum(dim=1)  # (B, d_model)
        return self.out(pooled), weights  # (B, n_classes), (B, T)

    def forward(self, ids: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Logits ``(B, n_classes)`` and attention weights ``(B, T)`` of token ids ``(B, T)``."""
        x = self.embed(ids)  # (B, T, d_model)
        mask = ids != 0 if mask is None else mask  # (B, T)
        return self.forward_embeddings(x, mask)


@dataclass(frozen=True)
class Split:
    """Training and test sentences (from the templates) and the training set's vocabulary."""

    train: list[TopicSentence]
    test: list[TopicSentence]
    vocab: Vocabulary


def make_split(n_train: int = 800, n_test: int = 200, *, seed: int = 0) -> Split:
    """Template sentences for training and testing (different seeds) and the vocabulary."""
    train = template_sentences(n_train, seed=seed)
    test = template_sentences(n_test, seed=seed + 10_000)
    vocab = Vocabulary.build([word_tokens(s.text)[0] for s in train])
    return Split(train, test, vocab)


@dataclass
class TrainResult:
    """A trained model and what was measured while training it."""

    model: AttentionPoolingClassifier
    vocab: Vocabulary
    seed: int
    test_accuracy: float
    steps: list[int] = field(default_factory=list)  # when the curves were measured
    test_accuracy_curve: list[float] = field(default_factory=list)
    topic_share_curve: list[float] = field(default_factory=list)  # mean weight on topic words

    @torch.no_grad()
    def predict(self, sentences: Sequence[TopicSentence]) -> tuple[NDArray, list[NDArray]]:
        """Class probabilities ``(N, n_topics)`` and every sentence's ``(T_i,)`` weights."""
        batch = make_batch(sentences, self.vocab)
        logits, weights = self.model(batch.ids, batch.mask)  # (N, C), (N, T)
        probs = torch.softmax(logits.double(), dim=-1).numpy()  # (N, C), float64
        lengths = batch.mask.sum(dim=1).tolist()
        return probs, [weights[i, :n].numpy() for i, n in enumerate(lengths)]


def _loss(model: AttentionPoolingClassifier, batch: Batch) -> Tensor:
    logits, _ = model(batch.ids, batch.mask)  # (B, C)
    return nn.functional.cross_entropy(logits, batch.labels)


@torch.no_grad()
def _measure(model: AttentionPoolingClassifier, batch: Batch) -> tuple[float, float]:
    logits, weights = model(batch.ids, batch.mask)  # (B, C), (B, T)
    accuracy = (logits.argmax(dim=-1) == batch.labels).float().mean().item()
    share = (weights * batch.is_topic).sum(dim=1).mean().item()  # mean over sentences
    return accuracy, share


@shared_result  # trained once per test session (see _shared_results)
def train_classifier(
    data: Split,
    *,
    seed: int = 0,
    config: ClassifierConfig | None = None,
    **settings: Any,
) -> TrainResult:
    """Train an :class:`AttentionPoolingClassifier` with full-batch Adam; seeded, CPU, ~1 s.

    Every ``eval_every`` steps (and at step 0) the test accuracy and the mean attention weight on
    topic words (the "topic share") are recorded, so the curves show how focusing develops. The
    settings: ``config`` (a :class:`ClassifierConfig`, the defaults if None), and as keywords
    ``steps``, ``lr``, ``eval_every``, ``d_model``, ``d_k``, ``attention`` (see the module's
    example). ``attention="uniform"`` trains the same model with uniform weights instead of
    learned attention, the baseline a learned attention must beat:

    >>> data = make_split(n_train=200, n_test=100, seed=0)
    >>> uniform = train_classifier(data, seed=0, steps=20, attention="uniform")
    >>> uniform.topic_share_curve[0] == uniform.topic_share_curve[-1]  # weights never move
    True
    """
    cfg = with_settings(ClassifierConfig, config, settings, "train_classifier")
    if cfg.schedule.batch is not None:
        raise ValueError(
            "batch must be None: train_classifier trains on the whole training set at every "
            f"step; got {cfg.schedule.batch!r}"
        )
    with deterministic():  # float64, one thread: the same numbers on every machine
        return _train(data, seed, cfg)


def _train(data: Split, seed: int, cfg: ClassifierConfig) -> TrainResult:
    torch.manual_seed(seed)
    model = AttentionPoolingClassifier(
        len(data.vocab), len(TOPICS), d_model=cfg.d_model, d_k=cfg.d_k
    )
    if cfg.attention == "uniform":  # q stays 0: every score is 0, every weight 1/T
        model.query.requires_grad_(False)
    train = make_batch(data.train, data.vocab)
    test = make_batch(data.test, data.vocab)
    at, measured = train_adam(  # full batch: every step sees the whole training set
        model,
        partial(_loss, model, train),
        cfg.schedule,
        evaluate=partial(_measure, model, test),
        at_start=True,
        at_end=True,
    )
    model.eval()
    accuracy_curve, share_curve = (list(curve) for curve in zip(*measured, strict=True))
    return TrainResult(model, data.vocab, seed, accuracy_curve[-1], at, accuracy_curve, share_curve)
