"""A sentence view of self-attention: pick a query token, see its weights over every token.

Each sentence is a list of tokens with one vector per token. Python computes the full weight matrix
``softmax(Q Kᵀ / √d_k)`` of every sentence with :func:`course_utils.scaled_dot_product_attention`
(Q = X W_Q, K = X W_K; identity projections by default); JavaScript draws the row of the chosen
query token as bars under the tokens and arcs from the query.

>>> w = SentenceAttention([("demo", ["a", "b"], [[1.0, 0.0], [0.0, 1.0]])])
>>> w.weights.round(3)
array([0.67, 0.33])
>>> w.query_index = 1
>>> w.weights.round(3)
array([0.33, 0.67])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

import traitlets
from numpy.typing import NDArray

from ..attention import scaled_dot_product_attention
from ._base import CourseWidget, check_tokens, check_vectors, pack_array, unpack_array

__all__ = ["SentenceAttention"]

MAX_TOKENS = 40


def _as_sentence(entry: Any, i: int) -> tuple[str, list[str], NDArray]:
    """Accept ``(label, tokens, vectors)`` or a mapping with those keys."""
    where = f"sentences[{i}]"
    if isinstance(entry, Mapping):
        missing = {"label", "tokens", "vectors"} - set(entry)
        if missing:
            raise ValueError(
                f"{where} must have keys 'label', 'tokens', 'vectors'; missing {sorted(missing)}"
            )
        label, tokens, vectors = entry["label"], entry["tokens"], entry["vectors"]
    elif isinstance(entry, Sequence) and not isinstance(entry, str) and len(entry) == 3:
        label, tokens, vectors = entry
    else:
        raise TypeError(
            f"{where} must be a (label, tokens, vectors) tuple or a mapping with those keys; "
            f"got {type(entry).__name__}"
        )
    if not isinstance(label, str) or not label.strip():
        raise TypeError(f"{where} label must be a non-empty str; got {label!r}")
    toks = check_tokens(tokens, f"{where} tokens", max_len=MAX_TOKENS)
    x = check_vectors(vectors, f"{where} vectors", rows=len(toks))  # (T, d_model)
    return label, toks, x


class SentenceAttention(CourseWidget):
    """Self-attention weights of one query token over a sentence, for several sentences.

    Parameters
    ----------
    sentences : sequence
        Each item ``(label, tokens, vectors)`` (or a mapping with those keys): ``tokens`` a list of
        str (any text; shown as text), ``vectors`` an array of shape ``(T, d_model)``. All sentences
        share ``d_model``.
    w_q, w_k : array_like, shape ``(d_model, d_k)``, optional
        Query/key projections. Default: identity (Q = K = X, attention by similarity).
    scale : float, optional
        Score scale; default ``1/sqrt(d_k)``.
    sentence_index, query_index : int
        Initial sentence and query token.
    """

    _widget_file = "sentence_attention"
    _default_description = (
        "Choose a sentence and a query token; a bar above every token shows how much "
        "attention weight the query gives it. The weights of one query sum to 1."
    )

    labels = traitlets.List(traitlets.Unicode()).tag(sync=True)  # one per sentence
    tokens = traitlets.List(traitlets.List(traitlets.Unicode())).tag(sync=True)  # per sentence
    frames = traitlets.List(traitlets.Dict()).tag(sync=True)  # per sentence: packed (T, T) weights
    sentence_index = traitlets.Int(0).tag(sync=True)
    query_index = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        sentences: Sequence[Any],
        *,
        w_q: Any | None = None,
        w_k: Any | None = None,
        scale: float | None = None,
        sentence_index: int = 0,
        query_index: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._scale = scale
        self._w_q = w_q
        self._w_k = w_k
        self.set_sentences(sentences, w_q=w_q, w_k=w_k)
        self.sentence_index = sentence_index
        self.query_index = query_index

    @classmethod
    def example(cls) -> Self:
        """Chapter 1's two sentences (:func:`course_utils.data.bank_example` and
        :func:`~course_utils.data.english_example`) with their shared ``W_Q`` and ``W_K``; the
        query is 看书 (reading).

        >>> w = SentenceAttention.example()
        >>> w.labels
        ['小明在银行边的长椅上看书', 'the cat sat on the mat']
        >>> w.query_token, w.sentence[int(w.weights.argmax())]   # who reads?
        ('看书', '小明')
        >>> w.sentence_index, w.query_index = 1, 2
        >>> w.query_token, w.sentence[int(w.weights.argmax())]   # who sat?
        ('sat', 'cat')
        """
        from ..data import bank_example, english_example

        bank, cat = bank_example(), english_example()
        return cls(
            [
                ("".join(bank.tokens), list(bank.tokens), bank.X),
                (cat.translation, list(cat.tokens), cat.X),
            ],
            w_q=bank.W_Q,
            w_k=bank.W_K,
            query_index=bank.tokens.index("看书"),
            title="Self-attention over a sentence: pick a query token",
        )

    def set_sentences(
        self, sentences: Sequence[Any], *, w_q: Any | None = None, w_k: Any | None = None
    ) -> None:
        """Replace the sentences (and projections) and recompute every weight matrix."""
        if isinstance(sentences, str | bytes) or not isinstance(sentences, Sequence):
            raise TypeError(
                "sentences must be a list of (label, tokens, vectors); "
                f"got {type(sentences).__name__}"
            )
        if len(sentences) < 1:
            raise ValueError("sentences must contain at least one sentence; got 0")
        parsed = [_as_sentence(s, i) for i, s in enumerate(sentences)]
        d_model = parsed[0][2].shape[1]
        for i, (_, _, x) in enumerate(parsed):
            if x.shape[1] != d_model:
                raise ValueError(
                    f"sentences[{i}] vectors have shape {x.shape}, expected (T, {d_model}): "
                    f"all sentences must share d_model = {d_model}"
                )
        self._w_q = None if w_q is None else check_vectors(w_q, "w_q", rows=d_model)
        d_k = d_model if self._w_q is None else self._w_q.shape[1]
        self._w_k = None if w_k is None else check_vectors(w_k, "w_k", rows=d_model, dim=d_k)
        if self._w_q is None and self._w_k is not None and self._w_k.shape[1] != d_model:
            raise ValueError(f"w_k must have shape ({d_model}, {d_model}) when w_q is not given")
        self._vectors = [x for _, _, x in parsed]
        with self.hold_trait_notifications():
            self.labels = [label for label, _, _ in parsed]
            self.tokens = [toks for _, toks, _ in parsed]
            self.frames = [pack_array(self.weight_matrix(i)) for i in range(len(parsed))]
            self.sentence_index = 0
            self.query_index = 0
        self._check_budget()

    def weight_matrix(self, sentence: int | None = None) -> NDArray:
        """The full ``(T, T)`` attention weight matrix of a sentence (default: the current one)."""
        i = self.sentence_index if sentence is None else sentence
        x = self._vectors[i]  # (T, d_model)
        q = x if self._w_q is None else x @ self._w_q  # (T, d_k)
        k = x if self._w_k is None else x @ self._w_k  # (T, d_k)
        _, weights = scaled_dot_product_attention(q, k, x, scale=self._scale)  # (T, T)
        return weights

    _sequence_index = ("sentence_index", "query_index", "tokens")
    _v_index = traitlets.validate("sentence_index", "query_index")(CourseWidget._valid_index)
    _on_sentence = traitlets.observe("sentence_index")(CourseWidget._keep_position_within)

    @property
    def sentence(self) -> list[str]:
        """Tokens of the current sentence."""
        return list(self.tokens[self.sentence_index])

    @property
    def query_token(self) -> str:
        """The current query token."""
        return self.sentence[self.query_index]

    @property
    def weights(self) -> NDArray:
        """Weights of the current query token over the sentence's tokens, shape ``(T,)``."""
        return self.weight_matrix()[self.query_index]

    def frame(self, sentence: int) -> NDArray:
        """The packed (rounded) frame the browser draws for a sentence, unpacked: ``(T, T)``."""
        return unpack_array(self.frames[sentence])
