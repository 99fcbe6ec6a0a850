"""Sphinx extension: the references page in alphabetical order, corporate authors included.

The book's bibliography uses pybtex's ``alpha`` style (sphinxcontrib-bibtex's default), which sorts
entries by the first author's name *as written in references.bib*. A corporate author is written in
braces so that it is not split into first and last names (``author = {{Gemma Team}}``), and the
brace then sorts after every letter: such entries landed at the end of the list, out of order. This
extension registers ``course_alpha``, the same style with braces ignored when sorting, and the
book's ``_config.yml`` selects it with ``bibtex_default_style: course_alpha``.

>>> from pybtex.database import Person
>>> SortingStyle().person_key(Person("{Gemma Team}")).strip()
'gemma team'
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pybtex.plugin import register_plugin
from pybtex.style.formatting.alpha import Style as _AlphaStyle
from pybtex.style.sorting.author_year_title import SortingStyle as _AuthorYearTitle

__all__ = ["REFERENCES", "STYLE_NAME", "SortingStyle", "Style", "author_year", "setup"]

STYLE_NAME = "course_alpha"
#: The book's bibliography.
REFERENCES = Path(__file__).resolve().parents[2] / "references.bib"


@functools.cache
def _entries(bib: Path) -> Any:
    from pybtex.database import parse_file

    return parse_file(str(bib)).entries


def author_year(key: str, bib: Path = REFERENCES) -> str:
    """The (author, year) label the book prints for the reference ``key``, without parentheses:
    one author's last name, two joined by "and", three or more as "First et al."; a corporate
    author (in braces) whole. Where there is no page to link to (slides, plain Jupyter), this is
    what a reader sees instead of the raw key.

    >>> author_year("vaswani2017attention")
    'Vaswani et al., 2017'
    >>> author_year("nokey")
    Traceback (most recent call last):
    ...
    KeyError: "no reference 'nokey' in references.bib"
    """
    entries = _entries(bib)
    if key not in entries:
        raise KeyError(f"no reference {key!r} in {bib.name}")
    entry = entries[key]
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [" ".join(p.last_names).replace("{", "").replace("}", "") for p in people]
    if not names:
        who = entry.fields.get("organization") or entry.fields.get("institution") or key
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = " and ".join(names)
    else:
        who = f"{names[0]} et al."
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


class SortingStyle(_AuthorYearTitle):
    """Author, year, title, as pybtex sorts them, with ``{`` and ``}`` removed from names."""

    def person_key(self, person: Any) -> str:
        return super().person_key(person).replace("{", "").replace("}", "")


class Style(_AlphaStyle):
    """pybtex's ``alpha`` style, sorted by :class:`SortingStyle`."""

    default_sorting_style = "course_author_year_title"


register_plugin("pybtex.style.sorting", "course_author_year_title", SortingStyle)
register_plugin("pybtex.style.formatting", STYLE_NAME, Style)


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point: importing this module has registered the style."""
    return {"parallel_read_safe": True, "parallel_write_safe": True}
