"""Chinese figure text without changing the notebooks' code: a hook on matplotlib's text drawing.

A chapter's code cell may write figure text itself (``ax.set_title("Scores before scaling")``);
the code cells are the same in both editions, so that text is translated when it is *drawn*: the
hook wraps :meth:`matplotlib.text.Text.draw`, and while the language is ``"zh"`` each text whose
string the catalogue knows (:func:`course_utils.i18n.translate`) is drawn in Chinese with the
package's CJK font (:func:`course_utils.fonts.cjk_font_family`), then set back, so the figure
object itself keeps its English text. Under ``"en"`` the hook draws exactly what matplotlib would
(the text is not touched), so English figures are byte-identical.

Titles, axis labels, legend entries, annotations and ``fig.text`` are all
:class:`matplotlib.text.Text` objects, so one hook covers them. Tick labels are left alone: they
are data (tokens, numbers), and an English token such as "next" must not become 后一个词元.

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import matplotlib.pyplot as plt
>>> from course_utils.i18n import install_matplotlib_hook, set_language
>>> install_matplotlib_hook()  # install(get_language, translate), the package's own
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

__all__ = ["drawn_texts", "install"]

_ATTR = "_course_i18n_original_draw"
_in_tick = threading.local()


@functools.cache
def install(get_language: Callable[[], str], translate: Callable[[str], str]) -> None:
    """Wrap ``Text.draw`` once per process (idempotent).

    ``get_language`` and ``translate`` are :mod:`course_utils.i18n`'s own, passed in by
    :func:`course_utils.i18n.install_matplotlib_hook` (so this module never imports its package
    back: no import cycle).
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
        if get_language() == "en" or getattr(_in_tick, "on", False):
            return original(self, renderer, *args, **kwargs)
        text = self.get_text()
        translated = translate(text) if isinstance(text, str) else text
        # Mathtext ("$d_k$") draws the text around the maths in its own font, which has no CJK
        # glyphs (boxes and a warning per character): such a label stays English.
        if translated == text or "$" in translated:
            return original(self, renderer, *args, **kwargs)
        from ..fonts import cjk_font_family

        # Swap the string and the font for this one draw (set_text would mark the figure stale).
        props = self._fontproperties
        self._text = translated
        self._fontproperties = props.copy()
        self._fontproperties.set_family(cjk_font_family())
        try:
            return original(self, renderer, *args, **kwargs)
        finally:
            self._text = text
            self._fontproperties = props

    setattr(draw, _ATTR, original)
    Text.draw = draw
    Tick.draw = draw_tick


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
