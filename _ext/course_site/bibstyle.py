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

from typing import Any

from pybtex.plugin import register_plugin
from pybtex.style.formatting.alpha import Style as _AlphaStyle
from pybtex.style.sorting.author_year_title import SortingStyle as _AuthorYearTitle

__all__ = ["STYLE_NAME", "SortingStyle", "Style", "setup"]

STYLE_NAME = "course_alpha"


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
