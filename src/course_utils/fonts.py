"""A CJK font for matplotlib, registered lazily and used explicitly.

matplotlib's default font (DejaVu Sans) has no Chinese glyphs: a label such as 银行 is drawn as
empty boxes ("tofu") and matplotlib warns ``Glyph ... missing from font(s) DejaVu Sans``. The course
depends on the PyPI package ``mplfonts``, which ships Noto Sans CJK SC (SIL Open Font License), so
this works on any machine without a system font.

Nothing here changes ``matplotlib.rcParams``. :func:`cjk_font_family` registers the font file with
matplotlib's font manager the first time it is called (adding a font to the list of known fonts
changes no default) and returns a family *fallback list*; pass it to text calls, e.g.
``ax.set_xticklabels(tokens, fontfamily=cjk_font_family())``. matplotlib (>= 3.6) then takes each
character from the first family in the list that has it: Latin letters from DejaVu Sans, Chinese
characters from Noto Sans CJK SC.

>>> family = cjk_font_family()
>>> family[-1]
'Noto Sans CJK SC'
>>> contains_cjk("小明"), contains_cjk("Xiao Ming")
(True, False)
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

__all__ = ["CJK_FONT_NAME", "cjk_font_family", "cjk_font_path", "contains_cjk"]

CJK_FONT_NAME = "Noto Sans CJK SC"
_CJK_FONT_FILE = "NotoSansCJKsc-Regular.otf"
_LATIN_FAMILY = "DejaVu Sans"  # matplotlib's bundled default, always present


def cjk_font_path() -> Path:
    """Path of the Noto Sans CJK SC file shipped by ``mplfonts`` (found without importing it).

    Raises ``FileNotFoundError`` with the fix if the package is missing.
    """
    spec = importlib.util.find_spec("mplfonts")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the CJK font comes from the PyPI package 'mplfonts'; install it with "
            "`pip install -r requirements.txt`"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "fonts" / _CJK_FONT_FILE
    if not path.is_file():
        raise FileNotFoundError(f"mplfonts is installed but {path} is missing")
    return path


@functools.cache
def _register() -> str:
    from matplotlib import font_manager

    path = cjk_font_path()
    font_manager.fontManager.addfont(str(path))
    return font_manager.FontProperties(fname=str(path)).get_name()


def cjk_font_family() -> list[str]:
    """Register the CJK font (once); return the list ``["DejaVu Sans", "Noto Sans CJK SC"]``.

    A new list each call, so callers may change it.
    """
    name = _register()
    return [_LATIN_FAMILY, name]


def contains_cjk(text: str) -> bool:
    """True if ``text`` has a CJK ideograph, kana, hangul or full-width punctuation character."""
    for ch in text:
        code = ord(ch)
        if (
            0x2E80 <= code <= 0x9FFF  # radicals, CJK punctuation, kana, CJK unified ideographs
            or 0xAC00 <= code <= 0xD7AF  # hangul syllables
            or 0xF900 <= code <= 0xFAFF  # compatibility ideographs
            or 0xFF00 <= code <= 0xFFEF  # half- and full-width forms
            or 0x20000 <= code <= 0x2FA1F  # extension B and later
        ):
            return True
    return False
