"""Which words does the decision rest on? Three measures side by side, and removal to check them.

Pick a sentence. Its words are shaded three times: by the attention-pooling classifier's weights,
by all-MiniLM-L6-v2's attention rollout (mean-pooled, summed over each word's WordPiece tokens),
and by the classifier's gradient × input. The true topic words are underlined. A second control
removes the top-``k`` words by attention, by gradient × input, or ``k`` random words (one seeded
draw), and shows the classifier's prediction before and after.

Python computes every frame with :mod:`course_utils.topic_focus` (the classifier, the ablation, the
real model); JavaScript only looks them up, so the widget works on the static site.

>>> from course_utils.topic_focus import make_split, real_sentences, train_classifier
>>> result = train_classifier(make_split(200, 40), steps=30)
>>> w = TopicWordFocus(result, real_sentences()[:2], k_max=2)
>>> w.tokens[0][:4], w.measure_names[0]
(['the', 'striker', 'scored', 'a'], 'classifier attention')
>>> w.option_index, w.k_index = 1, 0          # remove the top-1 word by attention
>>> w.removed_words
['team']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import torch
import traitlets
from numpy.typing import NDArray

from ..topic_focus.attribution import ablate, classifier_gradient_x_input
from ..topic_focus.classifier import TrainResult
from ..topic_focus.dataset import TOPICS, TopicSentence, topic_mask, word_tokens
from ..topic_focus.measures import minilm_measures, to_words
from ._base import CourseWidget, check_tokens, pack_array, pack_uint8, unpack_array
from ._text import Text

__all__ = ["TopicWordFocus"]

MEASURE_NAMES = ("classifier attention", "MiniLM rollout (mean-pooled)", "gradient × input")
OPTION_NAMES = (
    "nothing",
    "top-k words by attention",
    "top-k words by gradient × input",
    "k random words (one draw)",
)
MAX_WORDS = 24


class TopicWordFocus(CourseWidget):
    """Three attributions of one sentence's words, and what removing the top-k does.

    Parameters
    ----------
    result : TrainResult
        A trained attention-pooling classifier (:func:`~course_utils.topic_focus.train_classifier`).
    sentences : sequence of TopicSentence
        The sentences to choose from (at most ``MAX_WORDS`` words each).
    k_max : int
        The largest number of words to remove (the ``k`` slider runs 1..k_max).
    seed : int
        Seed of the random removals.
    """

    _widget_file = "topic_word_focus"
    _default_description = (
        "Choose a sentence. Its words are shown three times, shaded by three measures of "
        "importance (darker = less, brighter = more); true topic words are underlined. "
        "Choose what to remove and how many words: removed words are struck through and "
        "the bars show the classifier's topic probabilities before and after."
    )

    labels = traitlets.List(traitlets.Unicode()).tag(sync=True)  # one per sentence
    tokens = traitlets.List(traitlets.List(traitlets.Unicode())).tag(sync=True)  # words
    is_topic = traitlets.List(traitlets.List(traitlets.Bool())).tag(sync=True)
    topic = traitlets.List(Text()).tag(sync=True)  # true topic per sentence
    measure_names = traitlets.List(Text()).tag(sync=True)
    option_names = traitlets.List(Text()).tag(sync=True)
    topics = traitlets.List(Text()).tag(sync=True)
    measures = traitlets.List(traitlets.Dict()).tag(sync=True)  # per sentence: packed (3, T)
    removed = traitlets.List(traitlets.Dict()).tag(sync=True)  # per sentence: uint8 (O, K, T)
    probs = traitlets.List(traitlets.Dict()).tag(sync=True)  # per sentence: packed (O, K, C)
    k_max = traitlets.Int(3).tag(sync=True)
    sentence_index = traitlets.Int(0).tag(sync=True)
    option_index = traitlets.Int(0).tag(sync=True)
    k_index = traitlets.Int(0).tag(sync=True)  # k = k_index + 1

    def __init__(
        self,
        result: TrainResult,
        sentences: Sequence[TopicSentence],
        *,
        k_max: int = 3,
        seed: int = 0,
        option_index: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not isinstance(result, TrainResult):
            raise TypeError(f"result must be a TrainResult; got {type(result).__name__}")
        if isinstance(sentences, str) or not isinstance(sentences, Sequence) or not sentences:
            raise TypeError("sentences must be a non-empty list of TopicSentence")
        if isinstance(k_max, bool) or not isinstance(k_max, int) or not 1 <= k_max <= 5:
            raise ValueError(f"k_max must be an int in [1, 5]; got {k_max!r}")
        rng = np.random.default_rng(seed)
        labels, tokens, is_topic, topic, measures, removed, probs = [], [], [], [], [], [], []
        self._values: list[NDArray] = []
        for i, s in enumerate(sentences):
            if not isinstance(s, TopicSentence):
                raise TypeError(f"sentences[{i}] must be a TopicSentence; got {type(s).__name__}")
            words, spans = word_tokens(s.text)
            check_tokens(words, f"sentences[{i}] words")
            T = len(words)
            if not k_max < T <= MAX_WORDS:
                raise ValueError(
                    f"sentences[{i}] has {T} words; expected {k_max + 1} to {MAX_WORDS} "
                    f"(more than k_max, few enough to draw)"
                )
            _, w = result.predict([s])  # (1, C), [(T,)]
            attention = w[0]  # (T,)
            gradient = classifier_gradient_x_input(result, s)  # (T,)
            rollout = to_words(minilm_measures(s), "mean_rollout", spans)  # (T,)
            values = np.stack([attention, rollout, gradient])  # (3, T)
            self._values.append(values)
            masks = np.zeros((len(OPTION_NAMES), k_max, T), dtype=bool)  # (O, K, T)
            for k in range(1, k_max + 1):
                for o, ranking in ((1, attention), (2, gradient)):
                    masks[o, k - 1, np.argsort(-ranking, kind="stable")[:k]] = True
                masks[3, k - 1, rng.choice(T, size=k, replace=False)] = True
            after = ablate(result, s, masks.reshape(-1, T)).reshape(len(OPTION_NAMES), k_max, -1)
            labels.append(f"{s.text} ({s.gloss})" if s.gloss else s.text)  # zh: no gloss
            tokens.append(words)
            is_topic.append(topic_mask(spans, s.topic_spans).tolist())
            topic.append(s.topic)
            measures.append(pack_array(values, 3))
            removed.append(pack_uint8(masks.astype(np.uint8), "removed"))
            probs.append(pack_array(after, 3))
        with self.hold_trait_notifications():
            self.labels, self.tokens, self.is_topic, self.topic = labels, tokens, is_topic, topic
            self.measure_names = list(MEASURE_NAMES)
            self.option_names = list(OPTION_NAMES)
            self.topics = list(TOPICS)
            self.k_max = k_max
            self.measures, self.removed, self.probs = measures, removed, probs
            self.sentence_index = 0
            self.option_index = option_index
            self.k_index = 0
        self._check_budget("use fewer or shorter sentences, or a smaller k_max")

    @classmethod
    def example(cls) -> Self:
        """A briefly trained classifier (40 full-batch steps on 300 template sentences, seed 0) on
        two hand-written sentences, one English and one Chinese; removal by attention chosen.

        >>> w = TopicWordFocus.example()
        >>> w.labels[0], w.topic[0]
        ('The striker scored a late goal and the team won the match.', 'sport')
        >>> w.option_names[w.option_index], w.removed_words        # the top-1 word by attention
        ('top-k words by attention', ['team'])
        """
        from ..topic_focus import make_split, real_sentences, train_classifier

        # Training seeds torch and loading MiniLM draws initial weights: leave the caller's RNG.
        with torch.random.fork_rng(devices=[]):
            result = train_classifier(make_split(300, 60, seed=0), seed=0, steps=40)
            return cls(
                result,
                [real_sentences()[i] for i in (0, 44)],
                k_max=2,
                option_index=1,
                title="Which words does the decision rest on?",
            )

    _v_index = traitlets.validate("sentence_index", "option_index", "k_index")(
        CourseWidget._valid_index
    )

    def _index_size(self, name: str) -> int:
        sizes = {"sentence_index": len(self.tokens), "option_index": len(OPTION_NAMES)}
        return sizes.get(name, self.k_max)

    @property
    def values(self) -> NDArray:
        """The three measures of the current sentence, ``(3, T)`` (unrounded)."""
        return self._values[self.sentence_index]

    @property
    def removed_words(self) -> list[str]:
        """The words the current option and ``k`` remove."""
        mask = unpack_array(self.removed[self.sentence_index])[self.option_index, self.k_index]
        return [t for t, m in zip(self.tokens[self.sentence_index], mask, strict=True) if m]

    @property
    def probabilities(self) -> NDArray:
        """Topic probabilities after the current removal (rounded as drawn), ``(n_topics,)``."""
        packed = unpack_array(self.probs[self.sentence_index])  # (O, K, C)
        return packed[self.option_index, self.k_index]
