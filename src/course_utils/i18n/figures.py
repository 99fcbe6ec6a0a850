"""Chinese figure text without changing the notebooks' code: a hook on matplotlib's text drawing.

A chapter's code cell may write figure text itself (``ax.set_title("Scores before scaling")``);
the code cells are the same in both editions, so that text is translated when it is *drawn*: the
hook wraps :meth:`matplotlib.text.Text.draw`, and while the language is ``"zh"`` each text whose
whole string is a catalogue key (:func:`course_utils.i18n.t_literal`) is drawn in Chinese with the
package's CJK font (:func:`course_utils.fonts.cjk_font_family`), then set back, so the figure
object itself keeps its English text. Under ``"en"`` the hook draws exactly what matplotlib would
(the text is not touched), so English figures are byte-identical.

Titles, axis labels, legend entries, annotations and ``fig.text`` are all
:class:`matplotlib.text.Text` objects, so one hook covers them. Tick labels are not translated:
they are data (tokens, numbers), and an English token such as "next" must not become 后一个词元;
a tick label a cell wrote in Chinese (``t("block {i}", i=0)``: 第 0 块) is drawn in the CJK font.

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import matplotlib.pyplot as plt
>>> from course_utils.i18n import install_matplotlib_hook, set_language
>>> install_matplotlib_hook()  # install(get_language, t_literal), the package's own
>>> set_language("zh")
>>> fig, ax = plt.subplots()
>>> _ = ax.set_title("weights")
>>> drawn = drawn_texts(fig)
>>> "权重" in drawn, ax.get_title()
(True, 'weights')
>>> plt.close(fig)
>>> set_language(None)
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["as_drawn", "drawn_texts", "install"]

_ATTR = "_course_i18n_original_draw"
_in_tick = threading.local()


@functools.cache
def install(get_language: Callable[[], str], lookup: Callable[[str], str]) -> None:
    """Wrap ``Text.draw`` once per process (idempotent).

    ``get_language`` and ``lookup`` (:func:`~course_utils.i18n.t_literal`) are
    :mod:`course_utils.i18n`'s own, passed in by :func:`course_utils.i18n.install_matplotlib_hook`
    (so this module never imports its package back: no import cycle).
    """
    from matplotlib.axis import Tick
    from matplotlib.text import Text

    original = Text.draw
    if getattr(original, _ATTR, None) is not None:  # pragma: no cover - already wrapped
        return
    tick_draw = Tick.draw

    @functools.wraps(tick_draw)
    def draw_tick(self: Tick, renderer: Any, *args: Any, **kwargs: Any) -> Any:
        _in_tick.on = True
        try:
            return tick_draw(self, renderer, *args, **kwargs)
        finally:
            _in_tick.on = False

    @functools.wraps(original)
    def draw(self: Text, renderer: Any, *args: Any, **kwargs: Any) -> Any:
        if get_language() == "en":
            return original(self, renderer, *args, **kwargs)
        text = self.get_text()
        # A tick label is data and never translated; one already in Chinese (a cell's
        # t("block {i}") -> 第 0 块) is drawn in the CJK font, as it is measured (get_layout).
        translated = text if getattr(_in_tick, "on", False) else as_drawn(text, lookup)
        if translated == text and not _needs_cjk_font(self):
            return original(self, renderer, *args, **kwargs)
        # Swap the string and the font for this one draw (set_text would mark the figure stale).
        props = self._fontproperties
        self._text = translated
        self._fontproperties = _with_cjk_font(props)
        try:
            return original(self, renderer, *args, **kwargs)
        finally:
            self._text = text
            self._fontproperties = props

    original_layout = Text._get_layout

    @functools.wraps(original_layout)
    def get_layout(self: Text, renderer: Any) -> Any:
        # Text already in Chinese (made with t(...) in a cell: "种子 0") is measured in the CJK
        # font too, so a layout never measures, nor warns about, glyphs the default font lacks.
        if get_language() == "en" or not _needs_cjk_font(self):
            return original_layout(self, renderer)
        props = self._fontproperties
        self._fontproperties = _with_cjk_font(props)
        try:
            return original_layout(self, renderer)
        finally:
            self._fontproperties = props

    setattr(draw, _ATTR, original)
    Text.draw = draw
    Text._get_layout = get_layout
    Tick.draw = draw_tick


def as_drawn(text: Any, lookup: Callable[[str], str]) -> Any:
    """The string the hook draws for a (non-tick) text whose string is ``text`` under "zh".

    Mathtext ("$d_k$") draws the text around the maths in its own font, which has no CJK glyphs
    (boxes and a warning per character): a translation with maths in it is not drawn, the label
    stays as written.

    >>> as_drawn("weight", {"weight": "权重"}.get), as_drawn("$d_k$", {"$d_k$": "$d_k$ 值"}.get)
    ('权重', '$d_k$')
    """
    translated = lookup(text) if isinstance(text, str) else text
    return text if translated is None or "$" in translated else translated


def _needs_cjk_font(text: Any) -> bool:
    """A text that has CJK characters (and no maths) in a font family without a CJK font."""
    from ..fonts import contains_cjk

    string = text.get_text()
    return (
        isinstance(string, str)
        and "$" not in string
        and contains_cjk(string)
        and not any("CJK" in family for family in text._fontproperties.get_family())
    )


def _with_cjk_font(props: Any) -> Any:
    from ..fonts import cjk_font_family

    out = props.copy()
    out.set_family(cjk_font_family())
    return out


def drawn_texts(fig: Any) -> list[str]:
    """Draw ``fig`` and return every non-empty string matplotlib drew (for tests), in order.

    Records what the (possibly translated) :class:`~matplotlib.text.Text` objects really drew.
    """
    from matplotlib.text import Text

    seen: list[str] = []
    inner = Text._get_layout  # called by draw with the text being drawn

    def spy(self: Text, renderer: Any) -> Any:
        if self.get_text():
            seen.append(self.get_text())
        return inner(self, renderer)

    Text._get_layout = spy
    try:
        fig.canvas.draw()
    finally:
        Text._get_layout = inner
    return seen
