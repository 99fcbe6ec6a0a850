"""Text a reader sees in a widget, stored in the reader's language (see :mod:`course_utils.i18n`).

>>> from course_utils.i18n import set_language
>>> set_language("zh")
>>> translate_parts("sliding window; window + global")
'滑动窗口; 窗口 + 全局'
>>> set_language(None)
"""

from __future__ import annotations

from typing import Any

import traitlets

from ..i18n import translate

__all__ = ["Text", "translate_parts"]


def translate_parts(text: str, sep: str = "; ") -> str:
    """Translate each ``sep``-separated part of ``text`` (notes that join several messages).

    >>> translate_parts("a; b")
    'a; b'
    """
    return sep.join(translate(part) for part in text.split(sep))


class Text(traitlets.Unicode):  # type: ignore[misc]
    """A text trait a reader sees (a title, a caption, a label): stored in the current language.

    Under ``"zh"`` the value is passed through :func:`course_utils.i18n.translate` when it is set,
    so a title written in English in a notebook cell is Chinese in the zh edition; in English it
    is a plain ``Unicode`` trait. Use ``traitlets.List(Text())`` for a list of labels. Learner data
    (tokens, sentences) stays ``Unicode``: it is never translated.
    """

    def validate(self, obj: Any, value: Any) -> str:
        return translate(super().validate(obj, value))
