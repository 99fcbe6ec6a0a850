"""Sentences whose topic words are known: the ground truth for "does attention focus on them?".

Four topics (sport 体育, food 美食, weather 天气, reading 阅读), each with a vocabulary of topic
words in English and Chinese, and neutral filler words (names, times, places, adjectives, verbs)
that belong to no topic. Two sources of sentences, both shipped in ``topic_sentences.json`` (no
network):

* :func:`template_sentences`: generated from templates, seeded, as many as you like (training and a
  held-out test set);
* :func:`real_sentences`: 48 hand-written sentences (32 English, 16 Chinese, including the seed's
  小明在银行边的长椅上看书 and 看书真好), never used for training.

Every sentence carries the character spans of its topic words, so any tokenisation can be given a
ground-truth mask with :func:`topic_mask` (a token is a topic token when its span overlaps a
topic word: the pieces of a WordPiece word, the characters of a Chinese word).

The classifier's own tokens come from :func:`word_tokens`: lower-cased English words, and single
Chinese characters (no word segmentation, so 天 in 今天 "today" is the same token as 天 in 天气
"weather").

>>> s = real_sentences()[44]
>>> s.text, s.topic, s.topic_words
('小明在银行边的长椅上看书', 'reading', ('看书',))
>>> tokens, spans = word_tokens(s.text)
>>> tokens[-2:], topic_mask(spans, s.topic_spans)[-2:].tolist()
(['看', '书'], [True, True])
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..i18n import get_language

__all__ = [
    "TOPICS",
    "TopicSentence",
    "find_spans",
    "load_topic_data",
    "real_sentences",
    "template_sentences",
    "topic_mask",
    "word_tokens",
]

DATA_FILE = Path(__file__).with_name("topic_sentences.json")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[\u3400-\u9fff]")
_CJK = re.compile(r"[\u3400-\u9fff]")


@lru_cache(maxsize=1)
def load_topic_data() -> dict[str, Any]:
    """The contents of ``topic_sentences.json`` (read once): topics, vocabulary, templates."""
    return json.loads(DATA_FILE.read_text(encoding="utf-8"))


TOPICS: tuple[str, ...] = tuple(load_topic_data()["topics"])


@dataclass(frozen=True)
class TopicSentence:
    """One sentence, its topic, and where its topic words are."""

    text: str
    topic: str  # one of TOPICS
    lang: str  # "en" or "zh"
    topic_words: tuple[str, ...]  # as they appear in the text
    topic_spans: tuple[tuple[int, int], ...]  # (start, end) character spans of every occurrence
    translation: str = ""  # English translation of a Chinese sentence

    @property
    def label(self) -> int:
        """The topic's index in :data:`TOPICS`."""
        return TOPICS.index(self.topic)

    @property
    def gloss(self) -> str:
        """The English translation to show beside a Chinese sentence: ``""`` when the course
        speaks Chinese (its readers read the sentence itself) or the sentence is English.

        >>> s = TopicSentence("看书真好", "reading", "zh", ("看书",), ((0, 2),), "Reading is nice")
        >>> s.gloss
        'Reading is nice'
        """
        return "" if get_language() == "zh" else self.translation


def find_spans(text: str, words: tuple[str, ...] | list[str]) -> tuple[tuple[int, int], ...]:
    """Character spans of every occurrence of ``words`` in ``text`` (English: whole words only).

    >>> find_spans("Rain, rain and more rainfall.", ["rain"])
    ((0, 4), (6, 10))
    >>> find_spans("今天下雨了", ["下雨"])
    ((2, 4),)
    """
    spans = []
    for word in words:
        if not isinstance(word, str) or not word:
            raise ValueError(f"words must be non-empty strings; got {word!r}")
        if _CJK.search(word):
            pattern = re.escape(word)
        else:
            pattern = rf"(?<![a-z0-9]){re.escape(word.lower())}(?![a-z0-9])"
        found = [(m.start(), m.end()) for m in re.finditer(pattern, text.lower())]
        if not found:
            raise ValueError(f"topic word {word!r} does not occur in {text!r}")
        spans += found
    return tuple(sorted(set(spans)))


def word_tokens(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """The classifier's tokens of ``text`` and their character spans.

    English words are lower-cased; punctuation is dropped; every Chinese character is a token.

    >>> word_tokens("The cat's bowl, 看书!")
    (['the', "cat's", 'bowl', '看', '书'], [(0, 3), (4, 9), (10, 14), (16, 17), (17, 18)])
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str; got {type(text).__name__}")
    matches = list(_WORD.finditer(text.lower()))
    return [m.group() for m in matches], [(m.start(), m.end()) for m in matches]


def topic_mask(spans: Any, topic_spans: Any) -> NDArray[np.bool_]:
    """``(T,)`` bool: which tokens overlap a topic word (``spans``: one ``(start, end)`` per token).

    A token with an empty span (``(0, 0)``, e.g. ``[CLS]``) is never a topic token.

    >>> topic_mask([(0, 0), (0, 5), (5, 8), (9, 12)], [(0, 8)]).tolist()
    [False, True, True, False]
    """
    starts_ends = np.asarray(spans, dtype=np.int64).reshape(-1, 2)  # (T, 2)
    out = np.zeros(len(starts_ends), dtype=bool)  # (T,)
    for a, b in topic_spans:
        out |= (
            (starts_ends[:, 0] < b)
            & (starts_ends[:, 1] > a)
            & (starts_ends[:, 1] > starts_ends[:, 0])
        )
    return out


def _sentence(
    text: str, topic: str, lang: str, words: list[str], translation: str = ""
) -> TopicSentence:
    if topic not in TOPICS:
        raise ValueError(f"topic must be one of {TOPICS}; got {topic!r}")
    return TopicSentence(text, topic, lang, tuple(words), find_spans(text, words), translation)


@lru_cache(maxsize=1)
def real_sentences() -> tuple[TopicSentence, ...]:
    """The 48 hand-written sentences (32 English, then 16 Chinese), with their topic words."""
    return tuple(
        _sentence(s["text"], s["topic"], s["lang"], s["topic_words"], s.get("translation", ""))
        for s in load_topic_data()["sentences"]
    )


def template_sentences(n: int, *, seed: int = 0, zh_fraction: float = 0.4) -> list[TopicSentence]:
    """``n`` sentences from the templates: a topic, 1-3 of its words, neutral fillers; seeded.

    Topics are balanced (sentence ``i`` has topic ``i % 4`` before shuffling) and each sentence is
    Chinese with probability ``zh_fraction``.

    >>> for s in template_sentences(2, seed=0):
    ...     print(s.topic, "|", s.text)
    food | last night the recipe in town felt boring, anna wrote.
    sport | there was a strange team downtown today.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1; got {n!r}")
    if not 0.0 <= float(zh_fraction) <= 1.0:
        raise ValueError(f"zh_fraction must be in [0, 1]; got {zh_fraction!r}")
    data = load_topic_data()
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        lang = "zh" if rng.random() < zh_fraction else "en"
        template = str(rng.choice(data["templates"][lang]))
        vocab = data["vocabulary"][topic][lang]
        words = [str(w) for w in rng.choice(vocab, size=3, replace=False)]
        fill = data["fillers"][lang]
        names = rng.choice(fill["name"], size=2, replace=False)
        slots = {
            "name": names[0],
            "name2": names[1],
            **{k: str(rng.choice(fill[k])) for k in ("time", "place", "adj", "verb")},
            "t1": words[0],
            "t2": words[1],
            "t3": words[2],
        }
        text = template.format(**slots)
        used = [
            w for k, w in zip(("t1", "t2", "t3"), words, strict=True) if "{" + k + "}" in template
        ]
        out.append(_sentence(text, topic, lang, used))
    order = rng.permutation(n)
    return [out[j] for j in order]
