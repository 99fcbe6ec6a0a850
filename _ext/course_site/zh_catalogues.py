"""Check the Chinese gettext catalogues (``locale/zh_CN/LC_MESSAGES/**/*.po``).

Sphinx keeps the English text, without a warning, when a translated message parses as another
node type than the one it replaces: ``1. 掩码`` is an ordered list, not a title; ``- 注意`` is a
bullet list; a message with a blank line keeps only its first paragraph. This script finds such
messages statically, and proves on a built zh site that every translated message was applied.
It also checks numbers, glossary terms and messages shared by several pages.

Usage (from the repository root, with ``_ext`` on ``PYTHONPATH``)::

    python -m course_site.zh_catalogues [CHECKS] [--html DIR] [--locale DIR]
        [--glossary-file FILE] [--page NAME ...] [--json FILE] [--strict] [--verbose]

Checks (with none given, every static check runs, and ``--applied`` too when ``--html`` is given):

``--structure``
    every ``msgstr`` parses (MyST, with the book's extensions) as one paragraph, or as one heading
    with the ``====`` underline that Sphinx adds to titles. Anything else is dropped by Sphinx.
``--applied``
    needs ``--html DIR``, a zh build (``sphinx-build -b html -D language=zh_CN ...``). For every
    translated message of a page, the visible text of its ``msgstr`` (markup, math, citations and
    cross-references stripped) is in the text of the page's article (or of the sidebar's
    table-of-contents captions), and the English text of its ``msgid`` is not in the page's prose
    (code cells and outputs excluded; only English of 20 letters or more that the translation
    does not keep). Prints ``applied / translated / total`` per page.
``--numbers``
    every number written in a ``msgid`` appears in its ``msgstr`` (``1D`` may be ``一维``).
``--consistency``
    a ``msgid`` found in several ``.po`` files has the same ``msgstr`` in all of them, and "the
    seed" (the study notes) is 学习笔记 (or 这份笔记), never 种子笔记 or a bare 种子 (kept for a
    random seed).
``--glossary``
    every glossary term ``English (中文)`` of ``glossary.md`` found in a ``msgid``
    (case-insensitive, whole words, plurals allowed, longest match first, math, code and role
    targets ignored) has its Chinese term in the ``msgstr``. The converse, a glossary Chinese term
    in a ``msgstr`` whose ``msgid`` has none of the English words it stands for, is a warning.
``--asterisks``
    no ``msgstr`` renders a literal ``*`` (emphasis that CommonMark cannot open or close, as in
    ``**“词”**`` next to Chinese punctuation); with ``--html`` the pages are searched too.

Exit status 0 when every check passes, 1 otherwise (``--strict``: warnings fail too). Output:
one ``check  errors N  warnings M`` line per check, with ``--applied`` a table ``page  applied /
translated / total  percent`` first, and with ``--verbose`` every finding. ``--json FILE`` writes
``{"errors": [...], "warnings": [...], "pages": {page: {"applied", "translated", "total"}}}``,
each finding with ``check``, ``detail`` and, for a message, ``page``, ``line``, ``msgid`` and
``msgstr``. Pages are named like the ``.po`` files (``chapters/02_scaling``); ``sphinx.po``
(theme strings) is skipped. Untranslated and ``#, fuzzy`` messages count as not translated,
never as errors: they fall back to English by design. A ``msgstr`` equal to its ``msgid`` counts
as applied (Sphinx keeps it without parsing it). Needs polib, markdown-it-py and myst-parser
(all in ``requirements.txt``).

Example::

    >>> visible_fragments("{term}`注意力 <Attention (注意力)>`（attention）把 $q$ 与 **键** 比较")
    ['注意力（attention）把', '与 键 比较']
    >>> parses_as_translatable("1. 掩码"), parses_as_translatable("1\\\\. 掩码")
    (False, True)
"""

from __future__ import annotations

import argparse
import html
import html.parser
import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import polib

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file: _ext/course_site/)
DEFAULT_LOCALE = ROOT / "locale" / "zh_CN" / "LC_MESSAGES"
DEFAULT_GLOSSARY = ROOT / "glossary.md"
MYST_EXTENSIONS = {"amsmath", "dollarmath", "colon_fence", "deflist", "html_image", "substitution"}
# Roles whose content is shown as text; every other role is a citation or a cross-reference whose
# text
# Sphinx computes (page titles, numbers, author-year), so it is a separator.
TEXT_ROLES = {"term", "kbd", "abbr", "sub", "sup", "guilabel", "menuselection", "code", "math"}
SEPARATOR = "\x00"
# English text of a msgid is looked for in the zh page only when it has this many letters
# (distinctive).
MIN_ENGLISH_LETTERS = 20
# Characters that smartquotes, dash and ellipsis handling may change, plus whitespace and header
# links.
_SKELETON_DROP = re.compile(r"[\s\"'“”‘’„«»「」『』\-–—‒―.…¶#\u200b]+")
_NUMBER = re.compile(r"(?<![A-Za-z_\\])\d+(?:[.,]\d+)*")
_CJK = re.compile(r"[\u3400-\u9fff]")


@lru_cache(maxsize=1)
def _md():  # type: ignore[no-untyped-def]
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    return create_md_parser(MdParserConfig(enable_extensions=MYST_EXTENSIONS), RendererHTML)


def _block_types(text: str) -> list[str]:
    """Top-level block token types of ``text`` parsed as MyST (``paragraph_open``...)."""
    return [t.type for t in _md().parse(text) if t.level == 0 and not t.type.endswith("_close")]


def parses_as_translatable(msgstr: str) -> bool:
    """Return True when Sphinx would accept ``msgstr``: one paragraph, or one heading once Sphinx
    adds the ``====`` underline it appends to a title before parsing.

    >>> parses_as_translatable("缩放点积注意力"), parses_as_translatable("- 注意")
    (True, False)
    >>> parses_as_translatable("第一段\\n\\n第二段")
    False
    """
    if _block_types(msgstr) == ["paragraph_open"]:
        return True
    titled = msgstr + "\n" + "=" * len(msgstr) * 2
    return _block_types(titled) == ["heading_open"]


def _role_text(token) -> str:  # type: ignore[no-untyped-def]
    name = token.meta.get("name", "")
    content = token.content
    if name not in TEXT_ROLES:
        return SEPARATOR
    if name == "math":
        return SEPARATOR
    match = re.fullmatch(r"(?s)(.*?)\s*<[^<>]*>", content)
    return match.group(1) if match else content


def _inline_text(children) -> str:  # type: ignore[no-untyped-def]
    parts: list[str] = []
    for tok in children or []:
        if tok.type == "text":
            parts.append(tok.content)
        elif tok.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif tok.type == "code_inline":
            parts.append(tok.content)
        elif tok.type == "myst_role":
            parts.append(_role_text(tok))
        elif tok.type == "image":
            parts.append(SEPARATOR)
        elif tok.children:
            parts.append(_inline_text(tok.children))
        elif tok.type.endswith(("_open", "_close")):
            continue
        else:  # math_inline, math_inline_double, html_inline, substitutions, targets...
            parts.append(SEPARATOR)
    return "".join(parts)


def visible_text(msg: str) -> str:
    """The text a reader sees of a message, with ``\\x00`` where math or computed text (citations,
    cross-references) would be."""
    out: list[str] = []
    for tok in _md().parse(msg):
        if tok.type == "inline":
            out.append(_inline_text(tok.children))
            out.append(SEPARATOR)
    return "".join(out)


def visible_fragments(msg: str) -> list[str]:
    """Visible text of ``msg`` split at math and computed text, whitespace normalised, empty parts
    dropped."""
    frags = (re.sub(r"\s+", " ", f).strip() for f in visible_text(msg).split(SEPARATOR))
    return [f for f in frags if skeleton(f)]


def skeleton(text: str) -> str:
    """``text`` without whitespace, quotes, dashes and dots, lower-cased: what survives smartquotes
    and HTML rendering unchanged."""
    return _SKELETON_DROP.sub("", text).lower()


# --------------------------------------------------------------------------------------------- cata
@dataclass
class Message:
    page: str
    msgid: str
    msgstr: str
    fuzzy: bool
    line: int

    @property
    def translated(self) -> bool:
        return bool(self.msgstr.strip()) and not self.fuzzy


@dataclass
class Report:
    errors: list[dict] = field(default_factory=list)
    warnings: list[dict] = field(default_factory=list)
    pages: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, kind: str, check: str, msg: Message | None, detail: str) -> None:
        item = {"check": check, "detail": detail}
        if msg is not None:
            item |= {"page": msg.page, "line": msg.line, "msgid": msg.msgid, "msgstr": msg.msgstr}
        (self.errors if kind == "error" else self.warnings).append(item)


def load_catalogues(locale_dir: Path, pages: list[str] | None = None) -> dict[str, list[Message]]:
    """Messages of every ``.po`` under ``locale_dir``, keyed by page (``chapters/02_scaling``)."""
    cats: dict[str, list[Message]] = {}
    for path in sorted(locale_dir.rglob("*.po")):
        page = path.relative_to(locale_dir).with_suffix("").as_posix()
        if page == "sphinx" or (pages and page not in pages):
            continue  # sphinx.po holds the theme templates' strings, not page text
        po = polib.pofile(str(path))
        cats[page] = [
            Message(page, e.msgid, e.msgstr, "fuzzy" in e.flags, e.linenum)
            for e in po
            if not e.obsolete and e.msgid
        ]
    return cats


# ------------------------------------------------------------------------------------------------ c
def check_structure(cats: dict[str, list[Message]], report: Report) -> None:
    for msgs in cats.values():
        for m in msgs:
            if m.translated and m.msgstr != m.msgid and not parses_as_translatable(m.msgstr):
                kinds = ",".join(_block_types(m.msgstr))
                report.add(
                    "error", "structure", m, f"msgstr parses as {kinds}: Sphinx keeps the English"
                )


class _TextExtractor(html.parser.HTMLParser):
    """Collects the text of a page twice: ``parts`` with attributes (alt, title, aria-label) and
    code, and ``prose`` without them (code cells, their outputs and generated alt text are
    English in both editions)."""

    VOID = frozenset(
        [
            "area",
            "base",
            "br",
            "col",
            "embed",
            "hr",
            "img",
            "input",
            "link",
            "meta",
            "source",
            "wbr",
        ]
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.prose: list[str] = []
        self._stack: list[tuple[str, bool]] = []  # (tag, starts an excluded subtree)
        self._skip = 0  # inside script/style
        self._output = 0  # inside a cell output

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag in ("script", "style"):
            self._skip += 1
        for key, value in attrs:
            if key in ("alt", "title", "aria-label") and value:
                self.parts.append(f" {value} ")
        if tag in self.VOID:
            return
        output = tag == "pre" or bool({"cell_input", "cell_output", "output"} & set(classes))
        self._output += output
        self._stack.append((tag, output))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        while self._stack:
            name, output = self._stack.pop()
            self._output -= output
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)
            if not self._output:
                self.prose.append(data)


def page_text(html_file: Path, prose: bool = False) -> str:
    """Text of the page's article (``<article ...>``; the whole body if there is none) and of the
    table-of-contents captions; with ``prose``, without attributes, code cells and outputs."""
    source = html_file.read_text(encoding="utf-8")
    match = re.search(r"(?s)<article\b.*</article>", source)
    parser = _TextExtractor()
    parser.feed(match.group(0) if match else source)
    # the table-of-contents captions (messages of the root page) are shown in the sidebar only
    captions = [
        html.unescape(c) for c in re.findall(r'<span class="caption-text">([^<]*)</span>', source)
    ]
    return " ".join((parser.prose if prose else parser.parts) + captions)


def _english_probe(m: Message) -> str:
    """The longest English fragment of the msgid that is distinctive (20+ letters) and not kept in
    the translation; empty when there is none."""
    kept = skeleton(visible_text(m.msgstr))
    best = ""
    for frag in visible_fragments(m.msgid):
        sk = skeleton(frag)
        distinctive = len(re.findall(r"[a-z]", sk)) >= MIN_ENGLISH_LETTERS
        if distinctive and sk not in kept and len(sk) > len(best):
            best = sk
    return best


CAPTION_NOTE = (
    "table-of-contents caption not translated: sphinx-external-toc inserts the toctrees after "
    "Sphinx's Locale transform, so no .po entry can change it (the build must translate captions)"
)


def toc_captions(toc_file: Path = ROOT / "_toc.yml") -> set[str]:
    """The ``caption:`` strings of ``_toc.yml`` (messages of the root page shown in the sidebar)."""
    if not toc_file.exists():
        return set()
    found = re.findall(r"caption:\s*(.+)", toc_file.read_text(encoding="utf-8"))
    return {c.strip().strip("\"'") for c in found}


def check_applied(cats: dict[str, list[Message]], html_dir: Path, report: Report) -> None:
    captions = toc_captions()
    for page, msgs in cats.items():
        html_file = html_dir / f"{page}.html"
        total = len(msgs)
        translated = [m for m in msgs if m.translated]
        if not html_file.exists():
            report.add("error", "applied", None, f"{page}: no page {html_file}")
            report.pages[page] = {"applied": 0, "translated": len(translated), "total": total}
            continue
        text = skeleton(page_text(html_file))
        prose = skeleton(page_text(html_file, prose=True))
        applied = 0
        for m in translated:
            if m.msgstr == m.msgid:
                applied += 1  # Sphinx keeps an identical message as it is, without parsing it
                continue
            missing = [f for f in visible_fragments(m.msgstr) if skeleton(f) not in text]
            probe = _english_probe(m)
            if not parses_as_translatable(m.msgstr):
                kinds = ",".join(_block_types(m.msgstr))
                detail = f"rejected by Sphinx: the msgstr parses as {kinds}"
                report.add("error", "applied", m, detail)
            elif missing and m.msgid in captions:
                report.add("error", "applied", m, CAPTION_NOTE)
            elif missing:
                report.add("error", "applied", m, f"not in the zh page: {missing[0]!r}")
            elif probe and probe in prose:
                report.add("error", "applied", m, "the English text is still in the zh page")
            else:
                applied += 1
        report.pages[page] = {"applied": applied, "translated": len(translated), "total": total}


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


_CHINESE_DIGITS = {
    "0": "零",
    "1": "一",
    "2": "二两",
    "3": "三",
    "4": "四",
    "5": "五",
    "6": "六",
    "7": "七",
    "8": "八",
    "9": "九",
    "10": "十",
}


_MEASURE_WORDS = "[维个倍分次章层头步种组类项条位列行句词元]"


def _number_written(number: str, msgstr: str) -> bool:
    """``number`` is in ``msgstr`` as digits, or, up to 10, as a Chinese numeral followed by a
    measure word (``1D`` → 一维, ``4 times less`` → 四分之一).

    >>> _number_written("2", "二维数组"), _number_written("2", "一个数组")
    (True, False)
    """
    if number in _numbers(msgstr):
        return True
    numerals = _CHINESE_DIGITS.get(number, "")
    return bool(numerals) and re.search(f"[{numerals}]{_MEASURE_WORDS}", msgstr) is not None


def check_numbers(cats: dict[str, list[Message]], report: Report) -> None:
    for msgs in cats.values():
        for m in msgs:
            if not m.translated:
                continue
            missing = sorted(n for n in _numbers(m.msgid) if not _number_written(n, m.msgstr))
            if missing:
                report.add(
                    "error", "numbers", m, f"numbers missing from msgstr: {', '.join(missing)}"
                )


# "the seed" is the study notes the course is built on (学习笔记, 这份笔记); "seeds" of random
# generators are 种子 or 随机种子. A msgid about the notes must call them 学习笔记 or
# 这份笔记 (种子笔记 would collide with 随机种子 / 种子 0 in the same paragraphs) and, unless it
# also speaks of random seeds, must not use a bare 种子.
_SEED_NOTES = re.compile(r"\bthe seed(?:'s)?\b(?! ?-?\d)|\bseed's|\bseed notes\b", re.IGNORECASE)
_SEED_RANDOM = re.compile(
    r"\bseeds\b|\bseeded\b|\bseed[ =-]?\d|\bseed=|random seed|depending on the seed|"
    r"\b(?:a|another|one|second|every|each|per|different|other|on the) seed\b",
    re.IGNORECASE,
)
# phrases about a random seed that the notes pattern would otherwise match
_SEED_RANDOM_PHRASE = re.compile(r"depending on the seed|\b(?:a|one|each|every) seed's", re.I)


def check_consistency(cats: dict[str, list[Message]], report: Report) -> None:
    by_id: dict[str, dict[str, list[Message]]] = defaultdict(lambda: defaultdict(list))
    for msgs in cats.values():
        for m in msgs:
            if m.translated:
                by_id[m.msgid][m.msgstr].append(m)
    for variants in by_id.values():
        if len(variants) > 1:
            desc = " | ".join(
                f"{s!r} ({', '.join(x.page for x in ms)})" for s, ms in variants.items()
            )
            first = next(iter(variants.values()))[0]
            report.add("error", "consistency", first, f"{len(variants)} translations: {desc}")
    for msgs in cats.values():
        for m in msgs:
            if not m.translated or not _SEED_NOTES.search(_SEED_RANDOM_PHRASE.sub(" ", m.msgid)):
                continue
            if "种子笔记" in m.msgstr or not re.search(r"学习笔记|这份笔记|笔记", m.msgstr):
                report.add(
                    "error",
                    "consistency",
                    m,
                    "'the seed' (the study notes) must be 学习笔记 or 这份笔记, not 种子笔记",
                )
            elif re.search(r"(?<!随机)种子", m.msgstr) and not _SEED_RANDOM.search(m.msgid):
                report.add("error", "consistency", m, "a bare 种子: the study notes are 学习笔记")


# ---------------------------------------------------------------------------------------------- glo
def load_glossary(path: Path) -> list[tuple[str, str]]:
    """``(English, 中文)`` pairs of the ``{glossary}`` block of ``glossary.md``."""
    text = path.read_text(encoding="utf-8")
    block = re.search(r"(?s)```\{glossary\}\n(.*?)\n```", text)
    pairs = []
    for line in (block.group(1) if block else "").splitlines():
        term = re.fullmatch(r"(\S.*?) \((.+)\)\s*", line)
        if term and not line.startswith(" "):
            pairs.append((term.group(1), term.group(2)))
    return pairs


def _plain_no_code(msg: str) -> str:
    out: list[str] = []
    for tok in _md().parse(msg):
        if tok.type == "inline":
            kids = [c for c in tok.children or [] if c.type != "code_inline"]
            out.append(_inline_text(kids))
    return " ".join(out).replace(SEPARATOR, " ")


def _english_pattern(term: str) -> re.Pattern[str]:
    words = re.escape(term).replace(r"\ ", r"[\s-]+").replace(r"\-", r"[\s-]?")
    if term.lower().endswith("y"):
        words = words[:-1] + "(?:y|ies)"
    else:
        words += "(?:s|es)?"
    words = words.replace("isation", "i[sz]ation")
    return re.compile(rf"(?<![\w-]){words}(?![\w-])", re.IGNORECASE)


def _stem_pattern(term: str) -> re.Pattern[str]:
    """A looser pattern for the converse check: the head noun (last word) of ``term`` by its stem,
    anywhere in a word (``Scaling`` finds rescaled, ``Projection
    matrix`` finds matrices).

    >>> bool(_stem_pattern("Scaling").search("the rescaled scores"))
    True
    """
    last = term.split()[-1].split("-")[-1]
    stem = re.sub(r"(?:ation|ing|ed|es|s|e|y|x)$", "", last) or last
    stem = re.escape(stem).replace("is", "i[sz]")
    if term.lower() == "attention":
        stem = "atten"
    return re.compile(stem, re.IGNORECASE)  # anywhere in a word: rescaled, renormalise, attn_mask


# English phrases in which a glossary word is not the glossary term ("answer key" is not a key).
_NOT_TERMS = re.compile(
    r"\banswer keys?\b|\bkey (?:ideas?|points?|takeaways?|messages?|questions?|steps?|insights?|"
    r"facts?|results?|differences?|words?)\b",
    re.IGNORECASE,
)


# Other English names the course uses for a glossary term (found like the term itself).
ALIASES = {"Rotary position embedding": ("Rotary embedding",)}


# Terms that Chinese technical writing keeps in English; the English term counts as the Chinese one.
KEPT_IN_ENGLISH = {
    "Softmax": ("softmax",),
    "Transformer block": ("Transformer 块", "Transformer 模块"),
    "ALiBi": ("ALiBi",),
}

#: Glossary terms whose 中文 term the catalogues do not all use yet: a message without it is
#: reported as a warning, not an error. Empty since the chapters 7-13 catalogues adopted the terms
#: of December 2026 (attention sink, KV cache, causal mask, latent vector, decoupled RoPE).
PENDING_TERMS: set[str] = set()


def check_glossary(
    cats: dict[str, list[Message]], glossary: list[tuple[str, str]], report: Report
) -> None:
    aliases = [(alias, zh) for en, zh in glossary for alias in ALIASES.get(en, ())]
    ordered = sorted([*glossary, *aliases], key=lambda p: -len(p[0]))
    patterns = [(en, zh, _english_pattern(en)) for en, zh in ordered]
    zh_terms = sorted({zh for _, zh in glossary}, key=len, reverse=True)
    for page, msgs in cats.items():
        if page == "glossary":
            continue  # the glossary page defines the terms: both languages on purpose
        for m in msgs:
            if not m.translated or m.msgstr == m.msgid:
                continue
            source = _NOT_TERMS.sub(" ", _plain_no_code(m.msgid))
            target = _plain_no_code(m.msgstr)
            found: list[tuple[str, str]] = []
            for en, zh, pat in patterns:
                hit = pat.search(source)
                if hit:
                    found.append((en, zh))
                    source = pat.sub(" ", source)
            for en, zh in found:
                accepted = (zh, *KEPT_IN_ENGLISH.get(en, ()))
                if not any(a.lower() in target.lower() for a in accepted):
                    level = "warning" if en in PENDING_TERMS else "error"
                    report.add(level, "glossary", m, f"{en!r} is not translated {zh!r}")
            # converse: a Chinese glossary term with none of its English terms in the msgid
            rest = target
            english_for = defaultdict(set)
            for en, zh in glossary:
                english_for[zh].add(en)
            for zh in zh_terms:
                if len(zh) < 2 or zh not in rest:
                    continue
                rest = rest.replace(zh, " ")
                english = _plain_no_code(m.msgid)
                if zh in m.msgid:
                    continue  # the English text already gives the Chinese term
                if not any(_stem_pattern(en).search(english) for en, z, _ in patterns if z == zh):
                    ens = "/".join(sorted(english_for[zh]))
                    report.add(
                        "warning", "glossary", m, f"{zh!r} used, but the English has no {ens!r}"
                    )


def check_asterisks(cats: dict[str, list[Message]], html_dir: Path | None, report: Report) -> None:
    for msgs in cats.values():
        for m in msgs:
            if m.translated and "*" in visible_text(m.msgstr) and "*" not in visible_text(m.msgid):
                report.add("error", "asterisks", m, "a literal * is rendered")
    if html_dir is None:
        return
    for page in cats:
        html_file = html_dir / f"{page}.html"
        if html_file.exists():
            for hit in re.finditer(
                r".{0,20}\*\*?[\u3400-\u9fff“”（）：，。].{0,20}", page_text(html_file)
            ):
                if _CJK.search(hit.group(0)):
                    report.add(
                        "warning", "asterisks", None, f"{page}: literal * in HTML: {hit.group(0)!r}"
                    )


# --------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("structure", "applied", "numbers", "consistency", "glossary", "asterisks"):
        ap.add_argument(f"--{name}", action="store_true")
    ap.add_argument("--html", type=Path, help="a zh build's html folder (enables --applied)")
    ap.add_argument("--locale", type=Path, default=DEFAULT_LOCALE, help="the LC_MESSAGES folder")
    ap.add_argument("--glossary-file", type=Path, default=DEFAULT_GLOSSARY)
    ap.add_argument(
        "--page", action="append", help="only this page (repeatable), e.g. chapters/02_scaling"
    )
    ap.add_argument("--json", type=Path, help="write the findings and per-page counts here")
    ap.add_argument("--strict", action="store_true", help="warnings count as errors")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every finding")
    args = ap.parse_args(argv)
    checks = {
        n
        for n in ("structure", "applied", "numbers", "consistency", "glossary", "asterisks")
        if getattr(args, n)
    }
    if not checks:
        checks = {"structure", "numbers", "consistency", "glossary", "asterisks"} | (
            {"applied"} if args.html else set()
        )
    if "applied" in checks and not args.html:
        ap.error("--applied needs --html DIR")

    cats = load_catalogues(args.locale, args.page)
    report = Report()
    if "structure" in checks:
        check_structure(cats, report)
    if "applied" in checks:
        check_applied(cats, args.html, report)
    if "numbers" in checks:
        check_numbers(cats, report)
    if "consistency" in checks:
        check_consistency(cats, report)
    if "glossary" in checks:
        check_glossary(cats, load_glossary(args.glossary_file), report)
    if "asterisks" in checks:
        check_asterisks(cats, args.html, report)

    if report.pages:
        print(f"{'page':45} applied / translated / total")
        for page, c in report.pages.items():
            pct = 100 * c["applied"] / c["translated"] if c["translated"] else 100.0
            print(f"{page:45} {c['applied']:5} / {c['translated']:5} / {c['total']:5}  {pct:6.2f}%")
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for item in report.errors:
        counts[item["check"]][0] += 1
    for item in report.warnings:
        counts[item["check"]][1] += 1
    for check in sorted(checks):
        print(f"{check:12} errors {counts[check][0]:4}  warnings {counts[check][1]:4}")
    if args.verbose:
        for kind, items in (("ERROR", report.errors), ("WARNING", report.warnings)):
            for it in items:
                where = f"{it.get('page', '')}.po:{it.get('line', '')}" if "page" in it else ""
                print(f"{kind} [{it['check']}] {where} {it['detail']}")
                if "msgid" in it:
                    print(f"    msgid:  {it['msgid'][:200]!r}\n    msgstr: {it['msgstr'][:200]!r}")
    if args.json:
        data = {"errors": report.errors, "warnings": report.warnings, "pages": report.pages}
        args.json.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    failed = bool(report.errors) or (args.strict and bool(report.warnings))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
