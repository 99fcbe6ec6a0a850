"""The rule "no untranslated English" on a 中文 page, and the glossary's terms (lint, not runtime).

The tests of the 中文 edition use these on everything a Chinese reader sees: widget text in the
browser, checker feedback, figure text and the catalogues. They read the book's ``glossary.md``,
so they live with the site's build machinery, not in ``course_utils`` (which a learner installs
without the book).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

__all__ = [
    "ALLOWED_WORDS",
    "FIGURE_ALLOWED_WORDS",
    "PAREN_TERMS",
    "figure_english",
    "glossary_terms",
    "glossary_violations",
    "untranslated_english",
]

REPO = Path(__file__).resolve().parents[2]


# ---- the rule "no untranslated English" (used by the tests of the zh edition) ----------------

#: Words with at most one capital letter that may stay in Chinese text: Python and numpy names the
#: messages quote as code, units, and proper nouns (names with two or more capitals, such as
#: PyTorch, MiniLM, RoPE, GiB, LayerNorm, are always allowed, and so are acronyms).
ALLOWED_WORDS = frozenset(
    [
        "True",
        "False",
        "None",
        "Ellipsis",
        "Mistral",
        "Falcon",
        "Python",
        "http",
        "ellipsis",
        "function",
        "object",
        "numpy",
        "int",
        "float",
        "bool",
        "str",
        "list",
        "tuple",
        "dict",
        "ndarray",
        "dtype",
        "inf",
        "nan",
        "exp",
        "log",
        "sqrt",
        "sin",
        "cos",
        "ln",
        "argmax",
        "softmax",
        "logit",
        "logits",
        "reshape",
        "rotate-half",
        "eps",
        "gamma",
        "beta",
        "sigma",
        "axis",
        "diag",
        "mask",
        "scores",
        "answer",
        "memory",
        "window",
        "length",
        "bias",
        "lambda",
        "Llama",
        "Transformer",
        "Sparse",
        "Vaswani",
        "Okabe",
        "Ito",
        "Adam",
        "Ainslie",
        "Shazeer",
        "et",
        "al",
        "Var",
        "torch",
        "np",
        "nn",
        "ms",
        "s",
    ]
)
#: English shown in parentheses after its Chinese term, besides the glossary's own terms.
PAREN_TERMS = frozenset(
    {"one-hot", "uptraining", "rollout", "precision at k", "softmax", "key-padding mask"}
)

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'’-]*")
_CODE_NEIGHBOUR = set("@=()[]*/~<>+×·|^−{}%√")


#: Entries whose headword keeps a long Chinese name once (the glossary's alias) while running text
#: writes another word, as d2l-zh does: softmax, not 归一化指数函数.
RUNNING_TEXT_TERMS = {"Softmax": "softmax", "ALiBi": "ALiBi"}


@functools.cache
def glossary_terms() -> dict[str, str]:
    """English -> 中文 of every entry of the book's ``glossary.md`` (``English (中文)`` lines), the
    中文 being what running text writes (:data:`RUNNING_TEXT_TERMS`)."""
    path = REPO / "glossary.md"
    if not path.is_file():
        return {}
    terms = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.fullmatch(r"([A-Z][^()]*?) \(([^()]+)\)\s*", line)
        if m:
            terms[m.group(1).strip()] = m.group(2).strip()
    return terms | {en: zh for en, zh in RUNNING_TEXT_TERMS.items() if en in terms}


def untranslated_english(text: str) -> list[str]:
    """The runs of English words in Chinese ``text`` that should have been translated.

    The rule, in order:

    1. Removed first, as not prose: code in backticks, quoted text (``'...'``, ``"..."``, “...”,
       ‘...’: a learner's value or a token), ``$...$`` maths, and a Python exception's own message
       (``ZeroDivisionError: division by zero``, to the end of the text).
    2. Removed: parentheses holding a glossary term or a :data:`PAREN_TERMS` term in English
       (``注意力（Attention）``), and an author-year citation, which names people and is never
       translated (``（Touvron et al., 2023）``, ``（Llama Team, AI @ Meta, 2024）``).
    3. A word (letters, then letters, digits, ``_``, ``'`` or ``-``) is allowed when it is code or
       a name: it has a digit or ``_`` (``d_k``, ``float32``), it is one letter (a maths symbol),
       it has two or more capitals (``PyTorch``, ``GQA``, ``RoPE``, ``GiB``), it is in
       :data:`ALLOWED_WORDS`, it is an attribute (``np.tril``, ``x.var``), or it touches an
       operator or bracket (``weights @ V``, ``softmax(...)``), ignoring spaces.
    4. Every other word is English that should be Chinese; neighbouring ones (separated only by
       spaces and ``, ; -``) form one run. The result lists the runs, in order.

    >>> untranslated_english("分数 = Q Kᵀ，d_k = 64；用 np.tril(...) 和 PyTorch")
    []
    >>> untranslated_english("查询（Query）的权重：'the cat'")
    []
    >>> untranslated_english("第 2 步 not yet right：weights @ V")
    ['not yet right']
    >>> untranslated_english("your code raised ZeroDivisionError: division by zero")
    ['your code raised']
    >>> untranslated_english("已发表的配置（Touvron et al., 2023），上下文 4k")
    []
    >>> untranslated_english("（see the paper, 2023）")
    ['see the paper']
    """
    s = str(text)
    s = re.sub(r"`[^`]*`", " ", s)
    s = re.sub(r"\$[^$]*\$", " ", s)
    s = re.sub(r"\b[A-Z]\w*(?:Error|Exception|Warning|Interrupt)\b: .*", " ", s, flags=re.S)
    s = re.sub(r"“[^”]*”|‘[^’]*’", " ", s)
    s = re.sub(r"(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])", " ", s)
    s = re.sub(r'"[^"\n]*"', " ", s)
    terms = {t.lower() for t in glossary_terms()} | PAREN_TERMS

    def paren(m: re.Match[str]) -> str:
        inner = m.group(1).strip().lower()
        return " " if inner in terms or inner.rstrip("s") in terms else m.group(0)

    s = re.sub(r"[（(]([A-Za-z][A-Za-z \-–]*)[)）]", paren, s)
    s = re.sub(_CITATION, " ", s)

    def allowed(m: re.Match[str]) -> bool:
        word = m.group(0).rstrip("'’-")
        if len(word) == 1 or re.search(r"[0-9_]", word) or sum(c.isupper() for c in word) >= 2:
            return True
        if word in ALLOWED_WORDS or word.lower() in ALLOWED_WORDS:
            return True
        if s[m.start() - 1 : m.start()] == "." or re.match(r"\.[A-Za-z_(]", s[m.end() :]):
            return True  # x.var, np.tril: attribute access, not the end of a sentence
        return _near_code(s, m.start(), m.end())

    runs: list[str] = []
    current: list[re.Match[str]] = []
    for m in _WORD.finditer(s):
        if allowed(m):
            if current:
                runs.append(s[current[0].start() : current[-1].end()])
                current = []
            continue
        if current and not re.fullmatch(r"[\s,;\-]*", s[current[-1].end() : m.start()]):
            runs.append(s[current[0].start() : current[-1].end()])
            current = []
        current.append(m)
    if current:
        runs.append(s[current[0].start() : current[-1].end()])
    return runs


# (Surname et al., 2023), (Surname and Other, 2019a), (Llama Team, AI @ Meta, 2024): capitalised
# names, "et al." / "and" / "&" / "@" between them, then a comma and a four-digit year.
_NAME = r"[A-Z][A-Za-z\-']*(?:\s+[A-Z@][A-Za-z\-']*|\s+@)*"
_CITATION = re.compile(
    rf"[（(]{_NAME}(?:\s+et al\.?|(?:,?\s+(?:and|&)\s+|,\s+){_NAME})*,\s*\d{{4}}[a-z]?[)）]"
)


def _near_code(text: str, start: int, end: int) -> bool:
    before = text[:start].rstrip()
    after = text[end:].lstrip()
    return before[-1:] in _CODE_NEIGHBOUR or after[:1] in _CODE_NEIGHBOUR


#: A glossary noun whose verb has its own Chinese word: "masked" is 被屏蔽/被遮蔽 (d2l-zh),
#: while the noun "mask" stays 掩码.
VERB_TERMS = {"Mask": ("屏蔽", "遮蔽")}


def glossary_violations(english: str, chinese: str) -> list[tuple[str, str]]:
    """The glossary terms of ``english`` whose Chinese term is missing from ``chinese``.

    A term counts where it is prose: as whole words (a plural ``s`` allowed; ``key`` in
    ``key-padding`` or ``d_key`` is not the term Key), not in backticks and not touching an
    operator or bracket (``softmax(logits / temperature)`` is code).

    >>> glossary_violations("apply softmax to each row", "对每一行做 softmax")
    []
    >>> glossary_violations("the keys are masked", "这些键被遮住了")
    [('Mask', '掩码')]
    >>> glossary_violations("the keys are masked", "这些键被屏蔽了")  # the verb: 屏蔽/遮蔽
    []
    >>> glossary_violations("flip it with ~mask", "用 ~mask 翻转")
    []
    """
    text = re.sub(r"`[^`]*`", " ", english)
    missing = []
    for term, zh in glossary_terms().items():
        words = r"[\s-]+".join(re.escape(w) for w in re.split(r"[\s-]+", term))
        rx = re.compile(rf"(?<![\w.\-]){words}(?:s|es|ed)?(?![\w(\-])", re.IGNORECASE)
        hits = [m for m in rx.finditer(text) if not _near_code(text, m.start(), m.end())]
        if hits and zh not in chinese:
            verbs = VERB_TERMS.get(term, ())
            as_verb = all(m.group(0).lower().endswith("ed") for m in hits)
            if not (as_verb and any(v in chinese for v in verbs)):
                missing.append((term, zh))
    return missing


# ---- figures: the texts a figure's PNG records (course_utils.plotting.TEXTS_KEY) --------------

#: Words a 中文 figure may show besides :data:`ALLOWED_WORDS` (identifiers such as Q, K, V, d_k,
#: RoPE, GQA, MLA, KV, LayerNorm pass by the general rule: one letter, a digit or ``_``, or two
#: capitals): the tokens of the course's English example sentences, which are data, not prose
#: (chapter 1's toy keys, chapter 7's "reading is good", the sentences of the English half of
#: chapter 13's hand-labelled set are drawn as tokens), and names kept in English.
FIGURE_ALLOWED_WORDS = frozenset(
    [
        "cat", "tiger", "bicycle", "truck", "dog", "bank", "river", "the", "a", "sat", "on",
        "mat", "reading", "is", "good", "love", "you", "pad", "cls", "sep", "eos", "bos",
        "softmax", "top-k", "argmax", "Perceiver", "Longformer", "BigBird", "FlashAttention",
        "MiniLM", "SmolLM2", "Transformer", "max", "min", "mean", "exp", "log",
        # chapter 4's coreference sentence (Winograd), drawn as the English model's tokens
        "trophy", "did", "not", "fit", "in", "suitcase", "because", "it", "was", "too", "big",
    ]
)  # fmt: skip


def figure_english(texts: list[str]) -> list[str]:
    """The runs of English prose left on a 中文 figure, from the texts its PNG records.

    Each text is checked with :func:`untranslated_english`; a run made only of
    :data:`FIGURE_ALLOWED_WORDS` (example tokens, names) is not prose. Each run is listed once.

    >>> figure_english(["位置", "Q", "d_k", "cat", "GQA（分组）", "reading is good", "0.5"])
    []
    >>> figure_english(["largest weight", "attention adds", "权重", "largest weight"])
    ['largest weight', 'attention adds']
    """
    allowed = {w.lower() for w in FIGURE_ALLOWED_WORDS}
    runs: list[str] = []
    for text in texts:
        for run in untranslated_english(text):
            words = [w.lower() for w in _WORD.findall(run)]
            if words and all(w in allowed for w in words):
                continue
            if run not in runs:
                runs.append(run)
    return runs
