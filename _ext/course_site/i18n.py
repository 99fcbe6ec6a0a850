"""The 中文 edition's message catalogues: lookup, coverage, glossary consistency, kit translation.

The site's prose is translated with Sphinx's gettext machinery: one ``.po`` file per page under
``locale/zh_CN/LC_MESSAGES/<docname>.po`` (``gettext_compact: false``), filled by translators,
compiled to ``.mo`` by Sphinx at build time. A message that is empty or ``#, fuzzy`` falls back
to English. This module reads the same catalogues for what Sphinx does not do by itself:

* :func:`coverage` — per page, the share of messages translated (non-empty and not fuzzy);
  ``python -m course_site.i18n_coverage`` prints it and checks the goals (>= 98 % overall, 100 % for
  every chapter);
* the static checks of the catalogues (glossary terms, numbers, messages Sphinx would drop,
  consistency across pages) live in :mod:`course_site.zh_catalogues`;
* :func:`translate_markdown` / :func:`translate_notebook` — the classroom kit (slide decks, learner
  copies) is built from notebooks, not from Sphinx's doctrees, so its Markdown cells are translated
  block by block with the page's catalogue (a block without a translation stays English).

>>> catalog = {"Learning objectives": "学习目标", "A first look": "初看"}
>>> print(translate_markdown("## A first look\\n\\nNo translation here.", catalog))
## 初看
<BLANKLINE>
No translation here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOCALE = "zh_CN"
#: The language the package reads from ``COURSE_LANG`` (shared with ``course_utils``).
COURSE_LANG = "zh"
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
COVERAGE_OVERALL = 0.98
COVERAGE_CHAPTER = 1.0


def normalise(text: str) -> str:
    """Whitespace runs to one space, as Sphinx's msgids are (lines of a paragraph are joined).

    >>> normalise("a\\n   b  c ")
    'a b c'
    """
    return re.sub(r"\s+", " ", text).strip()


def messages_dir(repo: Path, locale: str = LOCALE) -> Path:
    return repo / "locale" / locale / "LC_MESSAGES"


def catalogue_files(repo: Path, locale: str = LOCALE) -> dict[str, Path]:
    """``{docname: path}`` of every ``.po`` file (``sphinx.po`` holds the theme's own strings)."""
    root = messages_dir(repo, locale)
    return {p.relative_to(root).with_suffix("").as_posix(): p for p in sorted(root.rglob("*.po"))}


def _entries(path: Path) -> list[Any]:
    import polib

    return [e for e in polib.pofile(str(path)) if e.msgid and not e.obsolete]


def is_translated(entry: Any) -> bool:
    """A message counts when its msgstr is non-empty and it is not fuzzy (Sphinx skips fuzzy)."""
    return bool(entry.msgstr.strip()) and "fuzzy" not in entry.flags


def load_catalog(path: Path) -> dict[str, str]:
    """``{normalised msgid: msgstr}`` of the translated messages of one ``.po`` file."""
    if not path.is_file():
        return {}
    return {normalise(e.msgid): e.msgstr for e in _entries(path) if is_translated(e)}


@dataclass(frozen=True)
class PageCoverage:
    page: str
    translated: int
    total: int

    @property
    def share(self) -> float:
        return self.translated / self.total if self.total else 1.0

    @property
    def is_chapter(self) -> bool:
        return self.page.startswith("chapters/")


def coverage(repo: Path, locale: str = LOCALE) -> list[PageCoverage]:
    """Per page (one ``.po`` each), how many of its messages are translated."""
    out = []
    for page, path in catalogue_files(repo, locale).items():
        entries = _entries(path)
        out.append(PageCoverage(page, sum(map(is_translated, entries)), len(entries)))
    return out


def coverage_problems(pages: Iterable[PageCoverage]) -> list[str]:
    """What keeps the catalogues from the goals: >= 98 % overall and 100 % for every chapter.

    >>> coverage_problems([PageCoverage("chapters/01_x", 9, 10), PageCoverage("intro", 90, 90)])
    ['chapters/01_x: 9/10 translated (90.0 %); a chapter needs 100 %']
    >>> coverage_problems([PageCoverage("intro", 1, 10)])
    ['overall: 1/10 translated (10.0 %); the goal is >= 98 %']
    """
    pages = list(pages)
    problems = [
        f"{p.page}: {p.translated}/{p.total} translated ({100 * p.share:.1f} %); "
        "a chapter needs 100 %"
        for p in pages
        if p.is_chapter and p.share < COVERAGE_CHAPTER
    ]
    done, total = sum(p.translated for p in pages), sum(p.total for p in pages)
    if total and done / total < COVERAGE_OVERALL:
        problems.append(
            f"overall: {done}/{total} translated ({100 * done / total:.1f} %); "
            f"the goal is >= {100 * COVERAGE_OVERALL:.0f} %"
        )
    return problems


def coverage_report(pages: Iterable[PageCoverage]) -> str:
    """A table: page, translated/total, share; and the overall line.

    >>> print(coverage_report([PageCoverage("intro", 1, 2)]))
    intro                                       1/2      50.0 %
    overall                                     1/2      50.0 %
    """
    pages = list(pages)
    lines = [f"{p.page:<40} {p.translated:>4}/{p.total:<5} {100 * p.share:5.1f} %" for p in pages]
    done, total = sum(p.translated for p in pages), sum(p.total for p in pages)
    share = 100 * done / total if total else 100.0
    lines.append(f"{'overall':<40} {done:>4}/{total:<5} {share:5.1f} %")
    return "\n".join(lines)


def all_catalogs(repo: Path, locale: str = LOCALE) -> dict[str, dict[str, str]]:
    return {page: load_catalog(path) for page, path in catalogue_files(repo, locale).items()}


# --- translating Markdown (the classroom kit) -----------------------------------------------

HEADING = re.compile(r"^(#{1,6}\s+)(.*?)\s*$")
LIST_ITEM = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)(.*)$")
FENCE = re.compile(r"^(\s*)(`{3,}|:{3,})\s*(\{[^}]+\})?\s*(.*?)\s*$")
#: Directives whose body is code or maths, not prose: kept as they are.
VERBATIM = {"{code}", "{code-block}", "{code-cell}", "{math}", "{raw}", "{literalinclude}"}


def _lookup(text: str, catalog: dict[str, str]) -> str:
    return catalog.get(normalise(text), text)


def _table_row(line: str, catalog: dict[str, str]) -> str:
    if re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", line):
        return line  # the |---|---| rule
    cells = line.strip().strip("|").split("|")
    return "| " + " | ".join(_lookup(c.strip(), catalog) for c in cells) + " |"


def _paragraph(lines: list[str], catalog: dict[str, str]) -> list[str]:
    first = lines[0]
    heading = HEADING.match(first)
    if heading and len(lines) == 1:
        return [heading[1] + _lookup(heading[2], catalog)]
    if first.lstrip().startswith("|"):
        return [_table_row(ln, catalog) for ln in lines]
    if re.match(r"^\s*:[\w-]+:", first):
        return lines  # directive options
    if LIST_ITEM.match(first):
        items: list[tuple[str, list[str]]] = []
        for ln in lines:
            m = LIST_ITEM.match(ln)
            if m:
                items.append((m[1], [m[2]]))
            else:
                items[-1][1].append(ln)
        out: list[str] = []
        for marker, text in items:
            joined = " ".join(t.strip() for t in text)
            new = _lookup(joined, catalog)
            out.extend([marker + new] if new != joined else [marker + text[0], *text[1:]])
        return out
    text = "\n".join(lines)
    new = _lookup(text, catalog)
    return [new] if new != text else lines


def translate_markdown(text: str, catalog: dict[str, str]) -> str:
    """The Markdown ``text`` with every block (heading, paragraph, list item, table cell, directive
    title) that has a translation in ``catalog`` replaced; code and maths blocks are kept.

    >>> cat = {"Solution": "答案", "Use the slider.": "拖动滑块。", "one": "一"}
    >>> src = "```{admonition} Solution\\nUse the slider.\\n```\\n- one\\n- two\\n```\\none\\n```"
    >>> print(translate_markdown(src, cat))
    ```{admonition} 答案
    拖动滑块。
    ```
    - 一
    - two
    ```
    one
    ```
    """
    if not catalog:
        return text
    out: list[str] = []
    block: list[str] = []
    opened: list[str] = []  # the fences of the directives we are inside
    verbatim: str | None = None  # the fence that ends the code block we are inside

    def flush() -> None:
        if block:
            out.extend(_paragraph(block, catalog))
            block.clear()

    for line in text.split("\n"):
        if verbatim is not None:
            out.append(line)
            if line.strip() == verbatim:
                verbatim = None
            continue
        fence = FENCE.match(line)
        if fence:
            flush()
            indent, marks, directive, arg = fence.groups()
            if directive is None and not arg and opened and opened[-1] == marks:
                opened.pop()  # closes a directive
                out.append(line)
            elif directive is None or directive in VERBATIM:
                verbatim = marks  # a code or maths block
                out.append(line)
            else:
                opened.append(marks)
                out.append(
                    f"{indent}{marks}{directive}" + (f" {_lookup(arg, catalog)}" if arg else "")
                )
            continue
        if not line.strip():
            flush()
            out.append(line)
            continue
        if not block and re.match(r"^\s*:[\w-]+:", line):
            out.append(line)  # a directive's option
            continue
        if HEADING.match(line):
            flush()
            block.append(line)
            flush()
            continue
        block.append(line)
    flush()
    return "\n".join(out)


def translate_notebook(nb: dict[str, Any], catalog: dict[str, str]) -> dict[str, Any]:
    """A copy of the notebook with its Markdown cells translated (code cells untouched)."""
    import copy

    new = copy.deepcopy(nb)
    for cell in new["cells"]:
        if cell["cell_type"] == "markdown":
            src = cell["source"]
            text = "".join(src) if isinstance(src, list) else src
            cell["source"] = translate_markdown(text, catalog)
    return new
