"""Small, deterministic example data for the chapters.

Every example is a frozen :class:`ToyExample`: tokens, a translation, token embeddings ``X`` of
shape ``(T, d_model)`` and projection matrices ``W_Q``, ``W_K`` (``(d_model, d_k)``) and ``W_V``
(``(d_model, d_v)``). ``Q = X W_Q``, ``K = X W_K`` and ``V = X W_V`` are properties, and
:meth:`ToyExample.attention` runs :func:`course_utils.attention.scaled_dot_product_attention` on
them. The arrays are read-only, so a notebook cannot change an example by accident for the cells
after it.

The examples
------------
``"by_hand"``  (:func:`by_hand_example`)
    "the cat sat down": 4 tokens, ``d_model = 4``, ``d_k = d_v = 3``, small integers so that a
    learner can compute ``Q Kᵀ`` with pencil and paper (chapter 1).
``"cat"``  (:func:`english_example`)
    "the cat sat on the mat": 6 tokens in the toy feature space of the Chinese example (below), with
    the same projection matrices. The two "the" get identical rows: attention alone knows nothing of
    word order.
``"bank"``  (:func:`bank_example`)
    The seed's sentence 小明在银行边的长椅上看书 ("Xiao Ming is reading on a bench by the bank"),
    segmented into words 小明/在/银行/边/的/长椅/上/看书. Hand-designed so that the pattern can be
    read: 看书 attends to 小明 (who reads?), 小明 to 看书, 长椅 to 银行 and 边 (where is the
    bench?), 银行 to 长椅 (the context of the word "bank"; chapter 1 explains why "river bank" is a
    pun that works in English only).
``"reading"``  (:func:`reading_example`)
    The seed's causal-attention sentence 看书真好 (看/书/真/好, "Reading is really nice"), seeded
    random numbers rounded to one decimal; used with :func:`course_utils.masks.causal_mask`.

:func:`query_plane_example` gives 2-D keys and values for the "query plane" widget, and
:func:`get_example` looks a :class:`ToyExample` up by name (:func:`example_names` lists them).

The toy feature space (``"bank"`` and ``"cat"``)
-------------------------------------------------
Each embedding dimension is a hand-made feature, not a learned one: ``person``, ``action``,
``place``, ``object``, ``spatial`` (在, 边, 上, on) and ``function`` (的, the). ``W_K`` says what
each feature *offers* and ``W_Q`` what it *looks for*, in four channels ``actor``, ``action``,
``location`` and ``object``: a person offers an actor and looks for an action; an action offers an
action and looks for an actor; an object looks for a location; a place offers a location and looks
for an object beside it. ``W_V`` is the identity, so an output row is a weighted mix of the feature
vectors and can be read feature by feature. Real models learn such matrices; these are designed by
hand to make the mechanism visible.

>>> ex = get_example("bank")
>>> ex.tokens
('小明', '在', '银行', '边', '的', '长椅', '上', '看书')
>>> output, weights = ex.attention()
>>> ex.tokens[int(weights[7].argmax())]  # 看书 (reading) attends most to 小明 (Xiao Ming)
'小明'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._validation import as_bool_array, as_float_array, shape_str
from .attention import attention_scores, scaled_dot_product_attention

__all__ = [
    "FEATURES",
    "PlaneExample",
    "ToyExample",
    "bank_example",
    "by_hand_example",
    "english_example",
    "example_names",
    "get_example",
    "query_plane_example",
    "reading_example",
]


def _frozen(x: Any, name: str) -> NDArray[np.float64]:
    arr = np.array(as_float_array(x, name, min_ndim=2), dtype=np.float64)  # a private copy
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class ToyExample:
    """A small sentence with embeddings and projection matrices. Arrays are read-only float64.

    >>> ex = by_hand_example()
    >>> ex.T, ex.d_model, ex.d_k, ex.d_v
    (4, 4, 3, 3)
    >>> ex.Q.shape, ex.K.shape, ex.V.shape
    ((4, 3), (4, 3), (4, 3))
    """

    name: str
    tokens: tuple[str, ...]
    translation: str
    embeddings: NDArray[np.float64]  # (T, d_model)
    W_Q: NDArray[np.float64]  # (d_model, d_k)
    W_K: NDArray[np.float64]  # (d_model, d_k)
    W_V: NDArray[np.float64]  # (d_model, d_v)
    description: str = ""
    feature_names: tuple[str, ...] | None = None
    language: str = "en"
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        tokens = tuple(str(t) for t in self.tokens)
        object.__setattr__(self, "tokens", tokens)
        X = _frozen(self.embeddings, "embeddings")
        W_Q = _frozen(self.W_Q, "W_Q")
        W_K = _frozen(self.W_K, "W_K")
        W_V = _frozen(self.W_V, "W_V")
        if X.shape != (len(tokens), X.shape[1]) or X.ndim != 2:
            raise ValueError(
                f"embeddings has shape {shape_str(X.shape)}, expected ({len(tokens)}, d_model): "
                f"one row per token"
            )
        d_model = X.shape[1]
        for wname, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)):
            if W.ndim != 2 or W.shape[0] != d_model:
                raise ValueError(
                    f"{wname} has shape {shape_str(W.shape)}, expected ({d_model}, d): "
                    f"its first dimension must equal d_model = {d_model}"
                )
        if W_Q.shape[1] != W_K.shape[1]:
            raise ValueError(
                f"W_K has shape {shape_str(W_K.shape)}, expected ({d_model}, {W_Q.shape[1]}): "
                f"queries and keys need the same d_k"
            )
        if self.feature_names is not None and len(self.feature_names) != d_model:
            raise ValueError(
                f"feature_names has {len(self.feature_names)} names, expected d_model = {d_model}"
            )
        for attr, value in (("embeddings", X), ("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)):
            object.__setattr__(self, attr, value)

    @property
    def T(self) -> int:
        """Number of tokens."""
        return len(self.tokens)

    @property
    def d_model(self) -> int:
        return int(self.embeddings.shape[1])

    @property
    def d_k(self) -> int:
        return int(self.W_Q.shape[1])

    @property
    def d_v(self) -> int:
        return int(self.W_V.shape[1])

    @property
    def X(self) -> NDArray[np.float64]:
        """The embeddings, under the name the formulas use."""
        return self.embeddings  # (T, d_model)

    @property
    def Q(self) -> NDArray[np.float64]:
        """Queries (查询) ``X W_Q``, shape ``(T, d_k)``."""
        return self.embeddings @ self.W_Q  # (T, d_k)

    @property
    def K(self) -> NDArray[np.float64]:
        """Keys (键) ``X W_K``, shape ``(T, d_k)``."""
        return self.embeddings @ self.W_K  # (T, d_k)

    @property
    def V(self) -> NDArray[np.float64]:
        """Values (值) ``X W_V``, shape ``(T, d_v)``."""
        return self.embeddings @ self.W_V  # (T, d_v)

    def scores(self, *, scaled: bool = True) -> NDArray[np.float64]:
        """``Q Kᵀ`` (divided by ``√d_k`` if ``scaled``), shape ``(T, T)``.

        >>> by_hand_example().scores(scaled=False)[2]  # "sat" looks for its subject, "cat"
        array([0., 4., 0., 0.])
        """
        return attention_scores(self.Q, self.K, scale=None if scaled else 1.0)  # (T, T)

    def attention(
        self, mask: Any = None, *, scale: float | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Self-attention of the example: ``(output (T, d_v), weights (T, T))``."""
        if mask is not None:
            mask = as_bool_array(mask, "mask")
        return scaled_dot_product_attention(self.Q, self.K, self.V, mask, scale=scale)

    def __repr__(self) -> str:
        return (
            f"ToyExample(name={self.name!r}, tokens={self.tokens!r}, T={self.T}, "
            f"d_model={self.d_model}, d_k={self.d_k}, d_v={self.d_v})"
        )


# --- "the cat sat down": pencil-and-paper numbers ------------------------------------------------

_BY_HAND_FEATURES = ("noun", "verb", "function", "modifier")


def by_hand_example() -> ToyExample:
    """ "the cat sat down", small enough to compute ``Q Kᵀ`` by hand (chapter 1).

    Each token's embedding is one feature (``noun``, ``verb``, ``function`` word, ``modifier``), so
    ``Q = X W_Q`` simply picks rows of ``W_Q``. Keys use three channels (noun, verb, other); queries
    say what each word looks for: "the" and "sat" look for a noun (both attend to "cat"), "cat" and
    "down" look for a verb (both attend to "sat").

    >>> ex = by_hand_example()
    >>> ex.Q.astype(int)
    array([[2, 0, 0],
           [0, 1, 0],
           [2, 0, 0],
           [0, 2, 0]])
    >>> ex.K.astype(int)
    array([[0, 0, 1],
           [2, 0, 0],
           [0, 2, 0],
           [0, 0, 1]])
    >>> (ex.Q @ ex.K.T).astype(int)
    array([[0, 4, 0, 0],
           [0, 0, 2, 0],
           [0, 4, 0, 0],
           [0, 0, 4, 0]])
    """
    X = [
        [0, 0, 1, 0],  # the: function word
        [1, 0, 0, 0],  # cat: noun
        [0, 1, 0, 0],  # sat: verb
        [0, 0, 0, 1],  # down: modifier
    ]  # (T=4, d_model=4)
    W_Q = [
        [0, 1, 0],  # a noun looks for a verb (weakly)
        [2, 0, 0],  # a verb looks for a noun (its subject)
        [2, 0, 0],  # a function word looks for its noun
        [0, 2, 0],  # a modifier looks for the verb it modifies
    ]  # (d_model=4, d_k=3)
    W_K = [
        [2, 0, 0],  # a noun offers "noun"
        [0, 2, 0],  # a verb offers "verb"
        [0, 0, 1],  # a function word offers "other"
        [0, 0, 1],  # a modifier offers "other"
    ]  # (d_model=4, d_k=3)
    W_V = [
        [1, 0, 0],
        [0, 1, 0],
        [0, 0, 1],
        [0, 0, 1],
    ]  # (d_model=4, d_v=3)
    return ToyExample(
        name="by_hand",
        tokens=("the", "cat", "sat", "down"),
        translation="the cat sat down",
        embeddings=X,
        W_Q=W_Q,
        W_K=W_K,
        W_V=W_V,
        description="4 tokens with integer entries for computing Q·Kᵀ by hand",
        feature_names=_BY_HAND_FEATURES,
        language="en",
    )


# --- the shared toy feature space ----------------------------------------------------------------

FEATURES: tuple[str, ...] = ("person", "action", "place", "object", "spatial", "function")
"""Names of the 6 embedding dimensions of the ``"bank"`` and ``"cat"`` examples."""

_CHANNELS = ("actor", "action", "location", "object")

# What each feature offers to be matched (rows: FEATURES, columns: _CHANNELS).
_W_K_FEATURES = [
    [2, 0, 0, 0],  # person  offers an actor
    [0, 2, 0, 0],  # action  offers an action
    [0, 0, 2, 0],  # place   offers a location
    [0, 0, 0, 2],  # object  offers an object
    [0, 0, 1, 0],  # spatial offers a little location
    [0, 0, 0, 0],  # function offers nothing
]  # (d_model=6, d_k=4)

# What each feature looks for.
_W_Q_FEATURES = [
    [0, 2, 0, 0],  # person  looks for an action (what does he do?)
    [2, 0, 0, 0],  # action  looks for an actor (who does it?)
    [0, 0, 1, 2],  # place   looks for an object beside it, and a little for location words
    [0, 0, 2, 0],  # object  looks for a location (where is it?)
    [0, 0, 0, 2],  # spatial looks for the object it locates
    [0, 0, 1, 1],  # function looks for locations and objects a little
]  # (d_model=6, d_k=4)

_W_V_FEATURES = np.eye(6)  # (d_model=6, d_v=6): values are the feature vectors themselves

_LEXICON: dict[str, list[float]] = {
    # person action place object spatial function
    "小明": [1, 0, 0, 0, 0, 0],
    "在": [0, 0, 0, 0, 1, 1],
    "银行": [0, 0, 1, 0, 0, 0],
    "边": [0, 0, 0.5, 0, 1, 0],
    "的": [0, 0, 0, 0, 0, 1],
    "长椅": [0, 0, 0, 1, 0, 0],
    "上": [0, 0, 0, 0, 1, 0],
    "看书": [0, 1, 0, 0, 0, 0],
    "the": [0, 0, 0, 0, 0, 1],
    "cat": [1, 0, 0, 0, 0, 0],
    "sat": [0, 1, 0, 0, 0, 0],
    "on": [0, 0, 0, 0, 1, 0],
    "mat": [0, 0, 0, 1, 0, 0],
}


def _feature_example(
    name: str, tokens: tuple[str, ...], translation: str, description: str, language: str
) -> ToyExample:
    X = [_LEXICON[t] for t in tokens]  # (T, d_model=6)
    return ToyExample(
        name=name,
        tokens=tokens,
        translation=translation,
        embeddings=X,
        W_Q=_W_Q_FEATURES,
        W_K=_W_K_FEATURES,
        W_V=_W_V_FEATURES,
        description=description,
        feature_names=FEATURES,
        language=language,
        extra={"channels": _CHANNELS},
    )


def bank_example() -> ToyExample:
    """The seed's 小明在银行边的长椅上看书: "Xiao Ming is reading on a bench by the bank".

    In Chinese 银行 is the financial bank (a place that keeps money); the seed's reading "river
    bank" (河岸) is an English pun, explained once, in chapter 1. The translation keeps the plain
    "by the bank".

    Hand-designed features (see the module docstring): 看书 (reading) attends to 小明 (who reads),
    小明 to 看书, 长椅 (bench) to 银行 (bank) and 边 (side) equally, and 银行 to 长椅: the context
    the seed's head 4 (词义消歧, word-sense disambiguation) would look at.

    >>> ex = bank_example()
    >>> _, weights = ex.attention()  # (8, 8)
    >>> weights[5].round(2)  # row of 长椅 (bench)
    array([0.04, 0.11, 0.31, 0.31, 0.04, 0.04, 0.11, 0.04])
    """
    return _feature_example(
        "bank",
        ("小明", "在", "银行", "边", "的", "长椅", "上", "看书"),
        "Xiao Ming is reading on a bench by the bank",
        "the seed's sentence, 8 words, hand-designed 6-feature embeddings",
        "zh",
    )


def english_example() -> ToyExample:
    """ "the cat sat on the mat" in the same toy feature space and with the same ``W_Q, W_K, W_V``.

    "sat" attends to "cat" (who sat?), "cat" to "sat", "on" and "mat" to each other. The two "the"
    have the same embedding, so their rows of the weights are identical: without positional
    information, attention cannot tell them apart.

    >>> ex = english_example()
    >>> _, weights = ex.attention()
    >>> ex.tokens[int(weights[2].argmax())]
    'cat'
    >>> bool((weights[0] == weights[4]).all())  # the two "the"
    True
    """
    return _feature_example(
        "cat",
        ("the", "cat", "sat", "on", "the", "mat"),
        "the cat sat on the mat",
        "an English sentence, 6 tokens, the same 6-feature space as 'bank'",
        "en",
    )


def reading_example(seed: int = 7) -> ToyExample:
    """The seed's 看书真好 (看/书/真/好, "Reading is really nice") for causal attention.

    The numbers are not designed: seeded random normals rounded to one decimal
    (``d_model = 4``, ``d_k = d_v = 3``). The default seed was picked, among seeds 0-29, for weights
    that are not nearly one-hot (largest weight 0.51), so that the effect of the mask is easy to
    see. Pair it with ``causal_mask(4)``, the seed's ✓/✗ table.

    >>> ex = reading_example()
    >>> from course_utils.masks import causal_mask
    >>> _, weights = ex.attention(causal_mask(ex.T))
    >>> bool((weights[0, 1:] == 0).all())  # 看 sees only itself
    True
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(4, 4)).round(1) + 0.0  # (T=4, d_model=4); + 0.0 turns -0.0 into 0.0
    W_Q = rng.normal(size=(4, 3)).round(1) + 0.0  # (d_model, d_k)
    W_K = rng.normal(size=(4, 3)).round(1) + 0.0  # (d_model, d_k)
    W_V = rng.normal(size=(4, 3)).round(1) + 0.0  # (d_model, d_v)
    return ToyExample(
        name="reading",
        tokens=("看", "书", "真", "好"),
        translation="Reading is really nice",
        embeddings=X,
        W_Q=W_Q,
        W_K=W_K,
        W_V=W_V,
        description=f"the seed's causal-attention sentence, seeded random numbers (seed={seed})",
        language="zh",
        extra={"seed": seed},
    )


_REGISTRY: dict[str, Callable[[], ToyExample]] = {
    "by_hand": by_hand_example,
    "cat": english_example,
    "bank": bank_example,
    "reading": reading_example,
}


def example_names() -> tuple[str, ...]:
    """Names accepted by :func:`get_example`.

    >>> example_names()
    ('by_hand', 'cat', 'bank', 'reading')
    """
    return tuple(_REGISTRY)


def get_example(name: str) -> ToyExample:
    """Look up a :class:`ToyExample` by name (see :func:`example_names`).

    >>> get_example("reading").translation
    'Reading is really nice'
    >>> get_example("river")
    Traceback (most recent call last):
    ...
    KeyError: "unknown example 'river'; expected one of: 'by_hand', 'cat', 'bank', 'reading'"
    """
    try:
        factory = _REGISTRY[name]
    except (KeyError, TypeError):
        names = ", ".join(repr(n) for n in _REGISTRY)
        raise KeyError(f"unknown example {name!r}; expected one of: {names}") from None
    return factory()


# --- 2-D keys and values for the query-plane widget ----------------------------------------------


@dataclass(frozen=True, eq=False)
class PlaneExample:
    """Keys as 2-D points, each with a 2-D value and a colour, and a starting query.

    ``scores = keys @ query`` (one per key) and ``output = weights @ values`` (a 2-D point), or
    ``weights @ colors`` (a mixed colour): attention as a soft dictionary lookup.

    >>> ex = query_plane_example()
    >>> ex.labels
    ('cat', 'tiger', 'bicycle', 'truck')
    >>> out, w = ex.attention(ex.query)
    >>> ex.labels[int(w.argmax())]
    'cat'
    """

    labels: tuple[str, ...]
    keys: NDArray[np.float64]  # (T_k, 2)
    values: NDArray[np.float64]  # (T_k, 2)
    colors: NDArray[np.float64]  # (T_k, 3) RGB in [0, 1]
    color_names: tuple[str, ...]
    query: NDArray[np.float64]  # (2,)
    axis_labels: tuple[str, str] = ("x", "y")
    description: str = ""

    def __post_init__(self) -> None:
        keys = _frozen(self.keys, "keys")
        values = _frozen(self.values, "values")
        colors = _frozen(self.colors, "colors")
        query = np.array(as_float_array(self.query, "query"), dtype=np.float64)
        query.setflags(write=False)
        n = len(self.labels)
        for aname, arr, width in (("keys", keys, 2), ("values", values, 2), ("colors", colors, 3)):
            if arr.shape != (n, width):
                raise ValueError(
                    f"{aname} has shape {shape_str(arr.shape)}, expected ({n}, {width})"
                )
        if query.shape != (2,):
            raise ValueError(f"query has shape {shape_str(query.shape)}, expected (2,)")
        if len(self.color_names) != n:
            raise ValueError(f"color_names has {len(self.color_names)} names, expected {n}")
        object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(self, "color_names", tuple(self.color_names))
        for attr, value in (
            ("keys", keys),
            ("values", values),
            ("colors", colors),
            ("query", query),
        ):
            object.__setattr__(self, attr, value)

    def attention(
        self, query: Any, *, scale: float | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Attend from one 2-D ``query``: returns ``(output (2,), weights (T_k,))``."""
        q = as_float_array(query, "query")
        if q.shape != (2,):
            raise ValueError(f"query has shape {shape_str(q.shape)}, expected (2,)")
        output, weights = scaled_dot_product_attention(
            q[None, :], self.keys, self.values, scale=scale
        )  # (1, 2), (1, T_k)
        return output[0], weights[0]  # (2,), (T_k,)


def query_plane_example() -> PlaneExample:
    """Four keys in a 2-D "meaning" plane: x = animal (−) ↔ vehicle (+), y = small (−) ↔ big (+).

    Values are 2-D points too (here: the keys themselves, so the output is a point pulled towards
    the keys the query matches), and each key has an Okabe–Ito colour so a widget can show the
    output as a mixed colour. The starting query points at the small animals.
    """
    from .plotting import OKABE_ITO  # the palette's home; imported here so data stays light

    names = ("orange", "vermillion", "sky blue", "blue")
    keys = [[-1.5, -1.0], [-1.5, 1.5], [1.5, -1.0], [1.5, 1.5]]  # (T_k=4, 2)
    return PlaneExample(
        labels=("cat", "tiger", "bicycle", "truck"),
        keys=keys,
        values=keys,
        colors=[OKABE_ITO[n] for n in names],
        color_names=names,
        query=[-2.0, -0.3],
        axis_labels=("animal ← → vehicle", "small ← → big"),
        description="2-D keys: x = animal (-) to vehicle (+), y = small (-) to big (+)",
    )
