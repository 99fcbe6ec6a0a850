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

One way to translate
--------------------
:func:`t` formats a message: ``t("row {row} sums to {total}, expected 1", row=i, total=s)``. Its
first argument is a literal ``str.format`` template with named fields, and it is the catalogue
key: the Chinese entry is a template with the same fields, formatted with the same values (the
numbers are identical in both languages). ``tests/test_i18n.py`` walks the source of the package
and of the chapters, collects every literal first argument of ``t``, and fails if one has no
entry, if an entry's fields differ from its key's, if ``t`` is given anything but a literal
(outside the documented pass-throughs) or if an entry is used by nothing.

:func:`t_literal` passes finished text through ``t`` by exact key, no patterns: a title or figure
label written as a literal in a notebook cell (widget ``Text`` traits, the matplotlib hook of
:mod:`course_utils.i18n.figures`), a label, hint or message constant of a checker (``Feedback``),
a note of ``model_configs.json``.

The widgets' JavaScript has its own ``CU.t`` (section ``widgets_js``); the entries it needs are
put into the widget's ES module by :class:`course_utils.widgets._base.CourseWidget` when the widget
is created under ``"zh"`` (so the saved widget state of a zh notebook carries its Chinese, and an
English widget's code is unchanged).

>>> set_language("zh")
>>> get_language()
'zh'
>>> t("correct")
'正确'
>>> t("all {n} cases right", n=3)
'全部 3 个用例都正确'
>>> t_literal("a sentence the catalogue does not know")
'a sentence the catalogue does not know'
>>> set_language("en")
>>> t("correct")
'correct'
>>> set_language(None)  # back to COURSE_LANG
"""

from __future__ import annotations

import functools
import json
import os
import re
import string
import sys
import unicodedata
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "LANGUAGES",
    "catalogue",
    "get_language",
    "js_catalogue",
    "js_messages",
    "normalise_language",
    "pad_to_columns",
    "set_language",
    "t",
    "t_literal",
    "text_columns",
]

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = ("en", "zh")
HERE = Path(__file__).parent
_override: Language | None = None
_CJK_SPACE = re.compile(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])")

_FORMATTER = string.Formatter()


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
    """The fields of a message template, in order, as written (name, conversion and format spec).

    >>> key_fields("{name} is still {answer!r}, τ = {tau:g}")
    ['name', 'answer!r', 'tau:g']
    """
    out = []
    for _, name, spec, conversion in _FORMATTER.parse(key):
        if name is not None:
            out.append(
                name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            )
    return out


def _plain_fields(template: str) -> set[str]:
    """The fields of a (translated) template that may be translated themselves: no conversion, no
    format spec, and not shown in backticks (`` `{name}` `` is a code name, kept as it is)."""
    quoted = set(re.findall(r"`\{(\w+)\}`", template))
    return {
        name
        for _, name, spec, conversion in _FORMATTER.parse(template)
        if name and not spec and not conversion and name not in quoted
    }


def t(template: str, /, **fields: Any) -> str:
    """The message ``template`` in the current language, with its named ``fields`` formatted in.

    ``template`` is a literal ``str.format`` template with named fields; it is the catalogue key
    (``tests/test_i18n.py`` collects every literal first argument of ``t`` from the source, so each
    must have its entry, with the same fields). The Chinese template formats the same values, so
    numbers are identical in both languages. A field whose value is itself a catalogue message
    without fields (a label such as ``"weights"``) is translated too, unless the Chinese shows it
    in backticks (a code name); a field that is a formatted message is passed as ``t(...)`` itself.

    >>> set_language("en")
    >>> t("all {n} cases match kv_cache.max_batch", n=5)
    'all 5 cases match kv_cache.max_batch'
    >>> set_language("zh")
    >>> t("all {n} cases match kv_cache.max_batch", n=5)
    '全部 5 个用例都与 kv_cache.max_batch 一致'
    >>> t("{label} sums to {total}, expected {want}{reason}", label=t("row {row}", row=2),
    ...   total=1.37, want=1, reason="")
    '第 2 行之和为 1.37，应为 1'
    >>> set_language(None)
    """
    lang = get_language()
    if lang == "en":
        return template.format(**fields)
    if "matplotlib" in sys.modules:  # a figure label made with t: draw its Chinese in CJK
        install_matplotlib_hook()
    text = catalogue(lang, "messages").get(template, template)
    if not fields:
        return text.format()
    plain = _plain_fields(text)
    done = {
        name: t_literal(str(value))
        if name in plain and isinstance(value, str | BaseException)
        else value
        for name, value in fields.items()
    }
    # "{name} 之和" keeps a space after a code name ("w 之和"), not after Chinese ("第 2 行之和").
    return _CJK_SPACE.sub("", text.format(**done))


def t_literal(text: str, lang: Language | None = None) -> str:
    """Finished ``text`` through :func:`t`: its translation if the catalogue has it as a key.

    The one documented pass-through of text that is not a ``t`` call in the package: a title or a
    figure label written in a notebook cell (widget ``Text`` traits, the figure hook), a label or a
    hint the package keeps in a constant (``Feedback`` title, messages and hints), a note of
    ``model_configs.json``. Only whole texts match (no patterns): a message with fields is made
    with ``t(...)`` where it is formatted. Braces are literal; white space around is kept.
    ``lang`` defaults to the current language.

    >>> t_literal("correct", "zh"), t_literal("  correct\\n", "zh"), t_literal("correct", "en")
    ('正确', '  正确\\n', 'correct')
    >>> t_literal("a sentence the catalogue does not know {x}", "zh")
    'a sentence the catalogue does not know {x}'
    """
    lang = get_language() if lang is None else lang
    if lang == "en" or not isinstance(text, str) or not text.strip():
        return text
    stripped = text.strip()
    if stripped != text:
        start = text.index(stripped[0])
        return text[:start] + t_literal(stripped, lang) + text[start + len(stripped) :]
    value = catalogue(lang, "messages").get(stripped.replace("{", "{{").replace("}", "}}"))
    return text if value is None else value.format()


def text_columns(text: str) -> int:
    """The columns ``text`` takes in a monospace font: a wide character (CJK, full-width punctuation
    such as ``，``) takes two, a combining mark none, any other character one.

    ``str.format`` pads by characters, so ``f"{name:20s}"`` lines up English in a printed table but
    not Chinese; :func:`pad_to_columns` pads by these columns instead.

    >>> text_columns("sliding window"), text_columns("滑动窗口"), text_columns("窗口，w = 4")
    (14, 8, 11)
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str; got {type(text).__name__} {text!r}")
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def pad_to_columns(text: str, width: int, align: str = "<") -> str:
    """``text`` padded with spaces to ``width`` columns of a monospace font (:func:`text_columns`):
    the column of a printed table whose cells may be Chinese. ``align`` is ``"<"`` (left, spaces
    after) or ``">"`` (right, spaces before); text already as wide is returned as it is.

    For English it is ``f"{text:<{width}}"`` (``f"{text:>{width}}"``), so a table of the English
    edition prints the same characters: ``f"{pad_to_columns(t_literal(name), 20)} ..."``.

    >>> pad_to_columns("window", 10) + "|", pad_to_columns("窗口", 10) + "|"
    ('window    |', '窗口      |')
    >>> pad_to_columns("窗口", 6, ">")
    '  窗口'
    >>> pad_to_columns("窗口", 6, "^")
    Traceback (most recent call last):
    ...
    ValueError: align must be '<' or '>'; got '^'
    """
    from .._validation import check_int

    columns = text_columns(text)
    width = check_int(width, "width", low=0)
    if align not in ("<", ">"):
        raise ValueError(f"align must be '<' or '>'; got {align!r}")
    spaces = " " * max(0, width - columns)
    return text + spaces if align == "<" else spaces + text


def install_matplotlib_hook() -> None:
    """Translate matplotlib text (titles, labels, legends, annotations) when a figure is drawn.

    Installed when the language is Chinese (by :func:`set_language` and by importing
    :mod:`course_utils.plotting` under ``COURSE_LANG=zh``); see :mod:`course_utils.i18n.figures`.
    """
    from .figures import install

    install(get_language, t_literal)


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
