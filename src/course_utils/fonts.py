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
characters from the package's Noto Sans CJK SC.

The file is registered under its own family name, :data:`COURSE_CJK_FAMILY`, not under the font's
name "Noto Sans CJK SC". Many Linux desktops (Debian's ``fonts-noto-cjk``) install a font of that
same name; matplotlib would then pick whichever file it met first, and the same notebook would draw
different glyphs on different machines. A name only this package uses always resolves to the
package's file.

>>> family = cjk_font_family()
>>> family[-1]
'Noto Sans CJK SC (course_utils)'
>>> contains_cjk("小明"), contains_cjk("Xiao Ming")
(True, False)
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
from pathlib import Path

__all__ = [
    "CJK_FONT_NAME",
    "COURSE_CJK_FAMILY",
    "cjk_font_family",
    "cjk_font_path",
    "contains_cjk",
]

CJK_FONT_NAME = "Noto Sans CJK SC"  # the name inside the font file
#: The family name the package's font file is registered under: unique, so that a system font of
#: the same name (e.g. Debian's fonts-noto-cjk) can never be chosen instead.
COURSE_CJK_FAMILY = f"{CJK_FONT_NAME} (course_utils)"
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
    path = (Path(next(iter(spec.submodule_search_locations))) / "fonts" / _CJK_FONT_FILE).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"mplfonts is installed but {path} is missing")
    return path


@functools.cache
def _register() -> str:
    from matplotlib import font_manager, ft2font

    path = cjk_font_path()
    # What FontManager.addfont does, but under our own family name (the file is one face, .otf).
    entry = font_manager.ttfFontProperty(ft2font.FT2Font(str(path)))
    manager = font_manager.fontManager
    if not any(f.name == COURSE_CJK_FAMILY and f.fname == entry.fname for f in manager.ttflist):
        manager.ttflist.append(dataclasses.replace(entry, name=COURSE_CJK_FAMILY))
    manager._findfont_cached.cache_clear()  # addfont clears it too: cached lookups may change
    return COURSE_CJK_FAMILY


def cjk_font_family() -> list[str]:
    """Register the CJK font (once); return ``["DejaVu Sans", "Noto Sans CJK SC (course_utils)"]``.

    A new list each call, so callers may change it. The second name always means the package's
    font file, whatever CJK fonts the machine has installed.
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
