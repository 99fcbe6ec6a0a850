"""The package's language: English (the default) or Chinese (中文), one catalogue of messages.

Everything the package shows a reader (widget labels and live-region text, exercise feedback and
hints, figure titles, axis labels, legends and alt text) is written in English in the code and
looked up in one catalogue, ``zh.json`` next to this file, when the language is ``"zh"``. A message
missing from the catalogue falls back to English; the tests in ``tests/test_i18n.py`` make sure
none is missing and none is unused.

Choosing the language
---------------------
:func:`get_language` reads the environment variable ``COURSE_LANG`` (``zh``, ``zh_CN``, ``zh-CN``,
``zh_CN.UTF-8`` ... mean Chinese; unset or anything else means English). The zh edition of the
site executes the same notebooks with ``COURSE_LANG=zh``. :func:`set_language` overrides the
environment for this Python process: a learner in JupyterLab runs ``set_language("zh")`` before
creating a widget or calling a checker (``set_language(None)`` goes back to ``COURSE_LANG``).

Two ways to translate
---------------------
* :func:`t` looks up an English message with named fields and formats them:
  ``t("all {n} cases right", n=3)``. New code uses it.
* :func:`translate` takes text that is *already formatted*, such as an f-string of a checker
  (``f"row {i} sums to {s:.3g}, expected 1"``), a widget title passed by a notebook cell, or a
  figure title set by ``ax.set_title`` in a cell. Catalogue keys may contain placeholders
  (``{}`` or ``{name}``); a key matches the whole text with each placeholder standing for any
  non-empty text, which is carried over unchanged (numbers stay identical). The key of an f-string
  is the f-string with every ``{expression}`` replaced by ``{}``, so a static scan of the source
  (``tests/test_i18n.py``) can check that every message has its entry.

The widgets' JavaScript has its own ``CU.t`` with the same two behaviours; the entries it needs are
put into the widget's ES module by :class:`course_utils.widgets._base.CourseWidget` when the widget
is created under ``"zh"`` (so the saved widget state of a zh notebook carries its Chinese, and an
English widget's code is unchanged).

>>> set_language("zh")
>>> get_language()
'zh'
>>> t("correct")
'正确'
>>> translate("row 2 sums to 1.37, expected 1")
'第 2 行之和为 1.37，应为 1'
>>> translate("a sentence the catalogue does not know")
'a sentence the catalogue does not know'
>>> set_language("en")
>>> translate("row 2 sums to 1.37, expected 1")
'row 2 sums to 1.37, expected 1'
>>> set_language(None)  # back to COURSE_LANG
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "ALLOWED_WORDS",
    "LANGUAGES",
    "PAREN_TERMS",
    "catalogue",
    "get_language",
    "glossary_terms",
    "glossary_violations",
    "js_catalogue",
    "js_messages",
    "normalise_language",
    "set_language",
    "t",
    "translate",
    "untranslated_english",
]

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = ("en", "zh")
HERE = Path(__file__).parent
_override: Language | None = None
_CJK_SPACE = re.compile(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])")

# A placeholder of a catalogue key: {} or {name}; {{ and }} are literal braces.
_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)?\}")


def normalise_language(lang: Any) -> Language:
    """``"zh"`` for any spelling of Chinese (``zh``, ``zh_CN``, ``zh-CN``, ``zh_CN.UTF-8``), else
    ``"en"``.

    >>> normalise_language("zh-CN"), normalise_language("zh_CN"), normalise_language("fr")
    ('zh', 'zh', 'en')
    """
    text = str(lang or "").strip().lower().replace("-", "_").split(".")[0]
    return "zh" if text in {"zh", "zh_cn", "zh_hans", "zh_hans_cn"} else "en"


def get_language() -> Language:
    """The language the package speaks now: :func:`set_language`'s choice, else ``COURSE_LANG``."""
    if _override is not None:
        return _override
    return normalise_language(os.environ.get("COURSE_LANG", ""))


def set_language(lang: str | None) -> None:
    """Choose the language of this process (``"en"``, ``"zh"``); ``None`` follows ``COURSE_LANG``.

    >>> set_language("klingon")
    Traceback (most recent call last):
    ...
    ValueError: lang must be 'en', 'zh' (or zh_CN, zh-CN) or None; got 'klingon'
    """
    global _override
    if lang is None:
        _override = None
        return
    if not isinstance(lang, str):
        raise TypeError(f"lang must be a str or None; got {type(lang).__name__}")
    norm = normalise_language(lang)
    if norm == "en" and lang.strip().lower() not in {"en", "en_us", "en-us", "en_gb", "en-gb"}:
        raise ValueError(f"lang must be 'en', 'zh' (or zh_CN, zh-CN) or None; got {lang!r}")
    _override = norm
    if norm == "zh":
        install_matplotlib_hook()


@functools.cache
def _sections(lang: Language) -> dict[str, dict[str, str]]:
    if lang == "en":
        return {"messages": {}, "widgets_js": {}}
    data = json.loads((HERE / f"{lang}.json").read_text(encoding="utf-8"))
    return {name: data.get(name, {}) for name in ("messages", "widgets_js")}


def catalogue(lang: Language = "zh", section: str | None = None) -> dict[str, str]:
    """The messages of ``lang``: English key -> translation (``{}`` for English itself).

    ``section`` is ``"messages"`` (what Python shows: feedback, widget text traits, figure text)
    or ``"widgets_js"`` (the ``CU.t`` keys of the widgets' JavaScript); ``None``: both.

    >>> catalogue("zh")["hint:"]
    '提示：'
    """
    parts = _sections(lang)
    if section is not None:
        return parts[section]
    return {**parts["widgets_js"], **parts["messages"]}


def key_fields(key: str) -> list[str]:
    """The placeholder names of a catalogue key, in order (``""`` for ``{}``).

    >>> key_fields("Step {step} of {}")
    ['step', '']
    """
    return [m.group(1) or "" for m in _FIELD.finditer(key) if m.group(0) not in ("{{", "}}")]


def _key_regex(key: str) -> re.Pattern[str]:
    parts: list[str] = []
    pos = 0
    for m in _FIELD.finditer(key):
        parts.append(re.escape(key[pos : m.start()]))
        token = m.group(0)
        parts.append(re.escape(token[0]) if token in ("{{", "}}") else "(.*?)")
        pos = m.end()
    parts.append(re.escape(key[pos:]))
    return re.compile("".join(parts), re.DOTALL)


@functools.cache
def _templates(lang: Language) -> tuple[tuple[re.Pattern[str], list[str], str], ...]:
    """The keys with placeholders, longest literal text first (the most specific key wins)."""
    out = []
    for key, value in catalogue(lang, "messages").items():
        fields = key_fields(key)
        if fields:
            literal = len(_FIELD.sub("", key))
            out.append((literal, _key_regex(key), fields, value))
    out.sort(key=lambda item: -item[0])
    return tuple((rx, fields, value) for _, rx, fields, value in out)


def _fill(value: str, fields: list[str], groups: tuple[str, ...]) -> str:
    # A field may itself be a known message ("row 2" in "row 2 sums to 1.37, expected 1"); it is
    # shorter than the text, so the recursion ends.
    # A field the translation shows in backticks is a code name (`dot`): kept as it is.
    raw: set[int | str] = set()
    auto = 0
    for m in re.finditer(r"(`?)\{(\w*)\}(`?)", value):
        ref: int | str = m.group(2) if m.group(2) else auto
        if not m.group(2):
            auto += 1
        if isinstance(ref, str) and ref.isdigit():
            ref = int(ref)
        if m.group(1) and m.group(3):
            raw.add(ref)
    done = [g if i in raw else translate(g) for i, g in enumerate(groups)]
    named = {name: g for name, g in zip(fields, done, strict=True) if name}
    # "{} 之和" keeps a space after a code name ("w 之和") but not after Chinese ("第 2 行之和").
    return _CJK_SPACE.sub("", value.format(*done, **named))


def translate(text: str, lang: Language | None = None) -> str:
    """Translate already formatted English ``text`` (exact entry, else a key with placeholders).

    Falls back to ``text`` itself. Leading and trailing white space is kept.

    >>> translate("correct", "zh")
    '正确'
    >>> translate("correct", "en")
    'correct'
    """
    lang = get_language() if lang is None else lang
    if lang == "en" or not isinstance(text, str) or not text.strip():
        return text
    stripped = text.strip()
    if stripped != text:
        start = text.index(stripped[0])
        return text[:start] + translate(stripped, lang) + text[start + len(stripped) :]
    messages = catalogue(lang, "messages")
    if text in messages:
        return messages[text]
    literal = _literal_messages(lang)
    if text in literal:
        return literal[text]
    for rx, fields, value in _templates(lang):
        m = rx.fullmatch(text)
        if m:
            return _fill(value, fields, m.groups())
    return text


@functools.cache
def _literal_messages(lang: Language) -> dict[str, str]:
    """Keys without placeholders that escape a brace (``\\sqrt{{d_k}}``), as the text shows them
    (``\\sqrt{d_k}``): the text ``translate`` receives is already formatted."""
    out = {}
    for key, value in catalogue(lang, "messages").items():
        if ("{{" in key or "}}" in key) and not key_fields(key):
            out[key.replace("{{", "{").replace("}}", "}")] = value.replace("{{", "{").replace(
                "}}", "}"
            )
    return out


def t(text: str, /, **fields: Any) -> str:
    """The message ``text`` in the current language, with its named ``fields`` formatted in.

    >>> set_language("en")
    >>> t("all {n} cases match kv_cache.max_batch", n=5)
    'all 5 cases match kv_cache.max_batch'
    >>> set_language("zh")
    >>> t("all {n} cases match kv_cache.max_batch", n=5)
    '全部 5 个用例都与 kv_cache.max_batch 一致'
    >>> set_language(None)
    """
    lang = get_language()
    template = catalogue(lang, "messages").get(text, text) if lang != "en" else text
    return template.format(**fields) if fields else template


def install_matplotlib_hook() -> None:
    """Translate matplotlib text (titles, labels, legends, annotations) when a figure is drawn.

    Installed when the language is Chinese (by :func:`set_language` and by importing
    :mod:`course_utils.plotting` under ``COURSE_LANG=zh``); see :mod:`course_utils.i18n.figures`.
    """
    from .figures import install

    install(get_language, translate)


def _js_literal(src: str, i: int) -> tuple[str, int]:
    """Read the JS string or template literal starting at ``src[i]``; return (key, end index).

    A template literal's ``${...}`` becomes ``{}``; literal braces become ``{{``/``}}``.
    """
    quote = src[i]
    out: list[str] = []
    i += 1
    while i < len(src):
        c = src[i]
        if c == "\\":
            nxt = src[i + 1]
            escapes = {"n": "\n", "t": "\t", "u": None}
            if nxt == "u":
                code = src[i + 2 : i + 6]
                out.append(chr(int(code, 16)))
                i += 6
                continue
            out.append(escapes.get(nxt, nxt) or nxt)
            i += 2
            continue
        if c == quote:
            return "".join(out), i + 1
        if quote == "`" and src.startswith("${", i):
            depth, i = 1, i + 2
            while depth:
                if src[i] in "\"'`":
                    _, i = _js_literal(src, i)
                    continue
                depth += {"{": 1, "}": -1}.get(src[i], 0)
                i += 1
            out.append("{}")
            continue
        out.append({"{": "{{", "}": "}}"}.get(c, c))
        i += 1
    raise ValueError(f"unterminated JS literal at {i}")


def js_messages(source: str) -> list[str]:
    """The catalogue keys of every ``CU.t(...)`` call in widget JavaScript ``source``, in order.

    The argument must be string or template literals joined by ``+``; each ``${expression}``
    becomes a ``{}`` placeholder.

    >>> js_messages('CU.t(`Step ${i + 1}: ` + "done"); CU.t("Query angle")')
    ['Step {}: done', 'Query angle']
    """
    keys: list[str] = []
    for m in re.finditer(r"\bCU\.t\(", source):
        i, parts = m.end(), []
        while True:
            while source[i].isspace() or source[i] == "+":
                i += 1
            if source[i] in "\"'`":
                text, i = _js_literal(source, i)
                parts.append(text)
                continue
            if source[i] == ")":
                break
            raise ValueError(
                f"CU.t(...) must be given literals; got {source[m.start() : i + 20]!r}"
            )
        keys.append("".join(parts))
    return keys


def js_catalogue(source: str, lang: Language) -> dict[str, str]:
    """The entries of ``lang`` that the widget JavaScript ``source`` uses (for its ES module)."""
    messages = catalogue(lang, "widgets_js")
    return {k: messages[k] for k in dict.fromkeys(js_messages(source)) if k in messages}


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


@functools.cache
def glossary_terms() -> dict[str, str]:
    """English -> 中文 of every entry of the book's ``glossary.md`` (``English (中文)`` lines).

    Empty when the package is used outside the book's repository.
    """
    path = HERE.parents[2] / "glossary.md"
    if not path.is_file():
        return {}
    terms = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.fullmatch(r"([A-Z][^()]*?) \(([^()]+)\)\s*", line)
        if m:
            terms[m.group(1).strip()] = m.group(2).strip()
    return terms


def _is_cjk(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff" or "\u3000" <= ch <= "\u303f" or "\uff00" <= ch <= "\uffef"


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


def glossary_violations(english: str, chinese: str) -> list[tuple[str, str]]:
    """The glossary terms of ``english`` whose Chinese term is missing from ``chinese``.

    A term counts where it is prose: as whole words (a plural ``s`` allowed; ``key`` in
    ``key-padding`` or ``d_key`` is not the term Key), not in backticks and not touching an
    operator or bracket (``softmax(logits / temperature)`` is code).

    >>> glossary_violations("apply softmax to each row", "对每一行应用归一化指数函数")
    []
    >>> glossary_violations("the keys are masked", "这些键被遮住了")
    [('Mask', '掩码')]
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
            missing.append((term, zh))
    return missing
