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
    "LANGUAGES",
    "catalogue",
    "get_language",
    "js_catalogue",
    "js_messages",
    "normalise_language",
    "set_language",
    "t",
    "translate",
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
