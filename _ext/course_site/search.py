"""The site's search finds Chinese words, in both editions (jieba's segmentation).

Sphinx indexes a page by splitting its text into words. Its English splitter keeps a run of
Chinese characters as one "word" (the seed's terms quoted on an English page, 因果注意力, are one
term, so 因果 finds nothing), and its Chinese splitter segments with ``jieba`` (a PyPI package;
without it the 中文 index had no Chinese term at all) but drops one-character words (头, "head").
Both splitters here add, for every run of Chinese characters, jieba's search segmentation
(``cut_for_search``: 注意力 gives 注意 and 注意力) and each character on its own, so that a
one- or two-character query finds its pages. Registered for ``en`` and ``zh`` by
:func:`course_site.setup`.

>>> chinese_terms("the 多头注意力 (multi-head)")[:4]
['多头', '注意', '注意力', '多头注意力']
"""

from __future__ import annotations

import functools
import logging
import re

from sphinx.search.en import SearchEnglish
from sphinx.search.zh import SearchChinese

#: A run of Chinese characters (CJK Unified Ideographs, extension A, compatibility ideographs).
CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def glossary_words() -> list[str]:
    """The Chinese terms of the glossary's headwords (each run of Chinese characters in them).

    >>> "归一化指数函数" in glossary_words() and "因果注意力" in glossary_words()
    True
    """
    from .zh_catalogues import DEFAULT_GLOSSARY, load_glossary

    if not DEFAULT_GLOSSARY.is_file():
        return []
    return sorted({run for _, zh in load_glossary(DEFAULT_GLOSSARY) for run in CJK_RUN.findall(zh)})


@functools.cache
def _quiet_jieba() -> None:
    """No "Building prefix dict" notes from jieba on every build. Once: setting a logger's level
    clears every logger's cache (2.2 s of a build when done for each of its 22,500 texts). Also
    once: the glossary's terms join jieba's dictionary, so that a term such as 归一化指数函数 is
    a search word of its own as well as its parts (归一化, 指数函数), and a reader who types the
    whole term finds its pages."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    for word in glossary_words():
        jieba.add_word(word)


def chinese_terms(text: str) -> list[str]:
    """jieba's search words of every Chinese run in ``text``, then each of its characters."""
    import jieba

    _quiet_jieba()
    terms: list[str] = []
    for run in CJK_RUN.findall(text):
        terms += [w for w in jieba.cut_for_search(run) if CJK_RUN.fullmatch(w)]
        terms += list(run)
    return terms


class EnglishWithChineseSearch(SearchEnglish):
    """Sphinx's English search, plus the Chinese words of the English pages."""

    def split(self, input: str) -> list[str]:
        return super().split(input) + chinese_terms(input)


class _WordSet(set[str]):
    """A set that takes words the way Sphinx's Chinese search gives them to its list."""

    def extend(self, words: list[str]) -> None:
        self.update(words)


class ChineseSearch(SearchChinese):
    """Sphinx's Chinese search (jieba), plus one-character words.

    Sphinx 7.4 keeps every Latin word the book's pages split into in one list (a class attribute,
    so shared by every instance, as here) and its ``stem`` looks each word up in that list: the
    lookups grow with the book, and took 22 s of the 中文 build's 100 s (profiled). The same
    words kept in a set give the same answers at once.
    """

    latin_terms = _WordSet()  # type: ignore[assignment]

    def split(self, input: str) -> list[str]:
        _quiet_jieba()  # the glossary's terms in jieba's dictionary before Sphinx segments
        return super().split(input) + [c for run in CJK_RUN.findall(input) for c in run]

    def word_filter(self, stemmed_word: str) -> bool:
        return super().word_filter(stemmed_word) or bool(CJK_RUN.fullmatch(stemmed_word))
