"""Text a reader sees in a widget, stored in the reader's language (see :mod:`course_utils.i18n`).

>>> import traitlets
>>> from course_utils.i18n import set_language
>>> class Box(traitlets.HasTraits):
...     title = Text("")
>>> set_language("zh")
>>> Box(title="sliding window").title
'滑动窗口'
>>> set_language(None)
"""

from __future__ import annotations

from typing import Any

import traitlets

from ..i18n import t_literal

__all__ = ["Text"]


class Text(traitlets.Unicode):  # type: ignore[misc]
    """A text trait a reader sees (a title, a caption, a label): stored in the current language.

    Under ``"zh"`` the value is passed through :func:`course_utils.i18n.t_literal` when it is
    set, so a title written in English in a notebook cell is Chinese in the zh edition (a text
    formatted in the package comes as ``t(...)``, already translated); in English it
    is a plain ``Unicode`` trait. Use ``traitlets.List(Text())`` for a list of labels. Learner data
    (tokens, sentences) stays ``Unicode``: it is never translated.
    """

    def validate(self, obj: Any, value: Any) -> str:
        return t_literal(super().validate(obj, value))
