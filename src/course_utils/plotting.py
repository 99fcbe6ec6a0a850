"""Static figures: attention heatmaps with token labels (Chinese included) and 2-D query/key arrows.

Every function draws on the ``ax`` it is given (or a new ``plt.subplots()`` figure) and returns the
Axes. Nothing changes ``matplotlib.rcParams``; Chinese labels get the fallback font family from
:mod:`course_utils.fonts` explicitly, so there are no "Glyph missing" warnings and no empty boxes.
Colour maps default to ``viridis`` (perceptually uniform and colour-blind safe); arrows use the
Okabe–Ito palette.

Alt text and captions in the book (the recipe)
-----------------------------------------------
myst-nb (1.4) reads per-cell options from the cell metadata key ``mystnb``: ``image`` options go
onto every image output of the cell (``alt``, ``width``, ``classes``, ...) and ``figure`` wraps the
output in a numbered figure (``caption``, ``name``). In the notebook JSON (JupyterLab: Property
Inspector → Cell Metadata), for the cell that draws the figure::

    "metadata": {
      "mystnb": {
        "image": {"alt": "Heatmap of attention weights, 8 by 8: 看书 attends most to 小明 ..."},
        "figure": {"caption": "Attention weights for the seed's sentence.",
                   "name": "fig-bank-weights"}
      }
    }

The ``alt`` becomes the ``alt`` attribute of the ``<img>`` in the HTML (myst-nb's ``render_image``
copies it onto the docutils image node; ``tests/test_plotting.py`` checks this with a real build);
``name`` lets the text refer to the figure with ``{numref}`fig-bank-weights```.
:func:`describe_attention` writes a factual alt text from the weights (which token each query
attends to most); print it once while writing the chapter, and paste it into the metadata (the
metadata is static, so re-check it if the numbers change; a test can compare the two). End the
plotting line with ``;`` (or call ``plt.show()``) so the cell does not also print ``<Axes: ...>``.

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import matplotlib.pyplot as plt
>>> from course_utils.data import bank_example
>>> ex = bank_example()
>>> _, weights = ex.attention()
>>> ax = plot_attention(weights, ex.tokens, title="小明在银行边的长椅上看书")
>>> [label.get_text() for label in ax.get_yticklabels()][:3]
['小明', '在', '银行']
>>> plt.close(ax.figure)
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._validation import as_float_array, check_int, shape_str
from .fonts import cjk_font_family
from .i18n import get_language, install_matplotlib_hook, t, t_literal

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn, not by `import course_utils`
    from matplotlib.axes import Axes

__all__ = [
    "COLUMN_WIDTH_IN",
    "FIGURE_DPI",
    "FLEX_STYLES",
    "MIN_TEXT_PX",
    "OKABE_ITO",
    "PALETTE_MAX_ERROR",
    "SMALL_FONT_PT",
    "TEXTS_KEY",
    "TEXT_SIZE_KEY",
    "column_figsize",
    "describe_attention",
    "figure_png",
    "figure_texts",
    "install_figure_format",
    "palette_png",
    "plot_attention",
    "plot_attention_variants",
    "plot_decoder_stack",
    "plot_decoding_times",
    "plot_flex_benchmark",
    "plot_nll_per_block",
    "plot_query_and_keys",
    "plot_vectors",
    "recorded_text_px",
    "recorded_texts",
    "smallest_text_px",
    "token_font_kwargs",
]

# Okabe & Ito's colour-blind-safe palette (RGB in [0, 1]).
OKABE_ITO: dict[str, tuple[float, float, float]] = {
    "orange": (0.902, 0.624, 0.0),
    "sky blue": (0.337, 0.706, 0.914),
    "bluish green": (0.0, 0.620, 0.451),
    "yellow": (0.941, 0.894, 0.259),
    "blue": (0.0, 0.447, 0.698),
    "vermillion": (0.835, 0.369, 0.0),
    "reddish purple": (0.8, 0.475, 0.655),
}


# ---- Figure and text sizes: every figure's smallest text is >= 11 px in the book at 100% zoom ----
#
# The book shows a figure at its natural size (one PNG pixel per CSS pixel) up to the width of the
# content column, and shrinks a wider one to the column. On a 1280 px desktop the column holds
# images up to 672 px (measured in Chromium on the built site), i.e. 6.72 inches at the figures'
# 100 dpi. A text of ``s`` points is ``s * dpi / 72`` px in the PNG and is shown at that size times
# (shown width / natural width). So a figure at most COLUMN_WIDTH_IN wide, with no text under
# SMALL_FONT_PT, has no text under MIN_TEXT_PX; ``tests/browser/test_site_audit.py`` measures it.

#: Smallest text of a figure, in CSS px as the book shows it on a desktop at 100% zoom.
MIN_TEXT_PX = 11.0
#: Resolution of the course's figures (matplotlib's default, which the notebooks keep).
FIGURE_DPI = 100
#: Width of a figure in inches: the column (672 px at FIGURE_DPI) less room for the tight crop,
#: which may grow a figure by labels that stick out (a legend below the axes).
COLUMN_WIDTH_IN = 6.5
#: Smallest font size (points) for any text in a figure: 8 pt is 11.1 px at 100 dpi.
SMALL_FONT_PT = 8.0
#: The PNG text chunk in which :func:`figure_png` records the figure's smallest text (PNG px).
TEXT_SIZE_KEY = "course_utils smallest text px"
#: The PNG text chunk in which :func:`figure_png` records every visible text of the figure (a JSON
#: list of strings, ASCII-escaped): the 中文 edition's tests read it to find English left on a
#: figure.
TEXTS_KEY = "course_utils texts"
#: :func:`figure_png` stores a figure with a palette of 256 colours (a PNG often less than half the
#: size, which the book's pages load) only if no pixel changes by more than this, out of 255, in
#: any channel: a change the eye cannot see. Otherwise it keeps the full-colour PNG.
PALETTE_MAX_ERROR = 4


def column_figsize(height: float, width: float = COLUMN_WIDTH_IN) -> tuple[float, float]:
    """A ``figsize`` no wider than the book's column, so the book shows the figure unshrunk.

    >>> column_figsize(3.0)
    (6.5, 3.0)
    >>> column_figsize(3.0, width=9)
    Traceback (most recent call last):
    ...
    ValueError: width is 9 inches, expected at most COLUMN_WIDTH_IN = 6.5 (the book's column)
    """
    if not 0 < width <= COLUMN_WIDTH_IN:
        raise ValueError(
            f"width is {width} inches, expected at most COLUMN_WIDTH_IN = {COLUMN_WIDTH_IN} "
            "(the book's column)"
        )
    if not height > 0:
        raise ValueError(f"height is {height} inches, expected a positive number")
    return (float(width), float(height))


def smallest_text_px(fig: Any) -> float | None:
    """The smallest visible text of figure ``fig``, in pixels of its PNG (font size x dpi / 72).

    Every visible, non-empty text counts: titles, axis labels, tick labels, legends, annotations.
    ``None`` if the figure has no text. Sub- and superscripts of mathtext (``$2^{10}$``) are drawn
    smaller than their text's font size; they count at that font size.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(dpi=100)
    >>> _ = ax.set_title("title", fontsize=12)
    >>> _ = ax.text(0.5, 0.5, "small", fontsize=7.2)
    >>> smallest_text_px(fig)
    10.0
    >>> plt.close(fig)
    """
    sizes = [float(text.get_fontsize()) * fig.dpi / 72.0 for text in _visible_texts(fig)]
    return round(min(sizes), 2) if sizes else None


def _visible_texts(fig: Any, with_ticks: bool = False) -> list[Any]:
    """Every visible, non-empty ``Text`` artist of ``fig``, in drawing-tree order, after a draw
    (which lays out the ticks, legends and labels as they will be drawn); with ``with_ticks``,
    pairs ``(text, is a tick label)``."""
    from matplotlib.axis import Tick
    from matplotlib.text import Text

    fig.canvas.draw()
    texts: list[Any] = []

    def walk(artist: Any, in_tick: bool) -> None:  # a hidden artist hides its children
        if not artist.get_visible():
            return
        if isinstance(artist, Text) and artist.get_text().strip():
            texts.append((artist, in_tick) if with_ticks else artist)
        for child in artist.get_children():
            walk(child, in_tick or isinstance(artist, Tick))

    walk(fig, False)
    return texts


def figure_texts(fig: Any) -> list[str]:
    """Every visible text of figure ``fig`` as drawn, once each, in drawing order: titles, axis
    labels, tick labels, legend entries, annotations, colour-bar labels. Under ``COURSE_LANG=zh``
    a text is recorded as the figure hook draws it (:func:`course_utils.i18n.figures.as_drawn`:
    translated where the catalogue has it; tick labels as written).

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([0, 1], label="weights")
    >>> _ = ax.set_xticks([0, 1], ["Q", "K"])
    >>> _ = ax.set_title("title"); _ = ax.legend(); _ = ax.set_ylabel("hidden", visible=False)
    >>> [t for t in figure_texts(fig) if not t[0].isdigit() and t[0] not in "−-"]
    ['Q', 'K', 'title', 'weights']
    >>> plt.close(fig)
    """
    from .i18n import get_language, t_literal
    from .i18n.figures import as_drawn

    def shown(text: Any, in_tick: bool) -> str:
        string = text.get_text()
        return string if in_tick or get_language() == "en" else as_drawn(string, t_literal)

    return list(dict.fromkeys(shown(t, tick) for t, tick in _visible_texts(fig, with_ticks=True)))


def figure_png(fig: Any) -> bytes | None:
    """The PNG of ``fig`` as the notebook shows it, its smallest text recorded in the PNG.

    Same rendering as IPython's inline backend (``bbox_inches="tight"``, the figure's dpi and
    colours), plus a text chunk ``TEXT_SIZE_KEY`` with :func:`smallest_text_px`; the book's browser
    test reads it to compute the text size as shown. ``None`` for an empty figure (as IPython).

    >>> import io
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from PIL import Image
    >>> fig, ax = plt.subplots(figsize=(2, 2), dpi=100)
    >>> _ = ax.set_xlabel("x", fontsize=9)
    >>> Image.open(io.BytesIO(figure_png(fig))).text[TEXT_SIZE_KEY]  # tick labels are 10 pt
    '12.50'
    >>> plt.close(fig)
    """
    from IPython.core.pylabtools import print_figure

    if not fig.axes and not fig.lines:
        return None
    smallest = smallest_text_px(fig)
    metadata = {
        TEXT_SIZE_KEY: "none" if smallest is None else f"{smallest:.2f}",
        TEXTS_KEY: json.dumps(figure_texts(fig)),  # ASCII (\\u escapes): a plain tEXt chunk
    }
    return palette_png(print_figure(fig, fmt="png", bbox_inches="tight", metadata=metadata))


def recorded_text_px(path: str | Path) -> float | None:
    """The smallest text a figure's PNG records (``TEXT_SIZE_KEY``, written by :func:`figure_png`),
    in PNG pixels; ``None`` if the PNG records none (drawn before the package recorded it)."""
    from PIL import Image

    with Image.open(path) as image:
        value = getattr(image, "text", {}).get(TEXT_SIZE_KEY)
    if value is None or value == "none":
        return None
    return float(value)


def recorded_texts(path: str | Path) -> list[str] | None:
    """The texts a figure's PNG records (``TEXTS_KEY``, written by :func:`figure_png`); ``None``
    if the PNG records none (drawn before the package recorded them, or not by the package).

    >>> import io
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(figsize=(2, 2))
    >>> _ = ax.set_xlabel("position")
    >>> "position" in recorded_texts(io.BytesIO(figure_png(fig)))
    True
    >>> plt.close(fig)
    """
    from PIL import Image

    with Image.open(path) as image:
        value = getattr(image, "text", {}).get(TEXTS_KEY)
    return None if value is None else [str(x) for x in json.loads(value)]


def palette_png(png: bytes, max_error: int = PALETTE_MAX_ERROR) -> bytes:
    """``png`` with a palette of at most 256 colours if that is smaller and looks the same.

    Same pixels to within ``max_error`` (out of 255, per channel), the same size and the same text
    chunks (the smallest text recorded by :func:`figure_png`). An image with transparent pixels, or
    one whose 256-colour version would differ by more, is returned unchanged.

    >>> import io
    >>> from PIL import Image
    >>> buffer = io.BytesIO()
    >>> greys = np.random.default_rng(0).integers(0, 256, (64, 64), dtype=np.uint8)
    >>> Image.fromarray(greys).convert("RGBA").save(buffer, "PNG")  # 256 greys, opaque
    >>> smaller = palette_png(buffer.getvalue())
    >>> Image.open(io.BytesIO(smaller)).mode, len(smaller) < len(buffer.getvalue())
    ('P', True)
    """
    import io

    from PIL import Image, ImageChops, PngImagePlugin

    image = Image.open(io.BytesIO(png))
    if image.mode == "RGBA":
        if image.getchannel("A").getextrema() != (255, 255):
            return png  # transparency: keep it
        image = image.convert("RGB")
    if image.mode != "RGB":
        return png
    # MAXCOVERAGE keeps rare colours (a colour bar's ends), so a heatmap keeps every shade.
    paletted = image.quantize(256, method=Image.Quantize.MAXCOVERAGE, dither=Image.Dither.NONE)
    error = max(hi for _, hi in ImageChops.difference(image, paletted.convert("RGB")).getextrema())
    if error > max_error:
        return png
    info = PngImagePlugin.PngInfo()
    for key, value in getattr(Image.open(io.BytesIO(png)), "text", {}).items():
        info.add_text(key, value)
    out = io.BytesIO()
    extra = {"dpi": image.info["dpi"]} if "dpi" in image.info else {}
    paletted.save(out, "PNG", optimize=True, pnginfo=info, **extra)
    return out.getvalue() if out.tell() < len(png) else png


def _figure_png_base64(fig: Any) -> str | None:
    import base64

    data = figure_png(fig)
    return None if data is None else base64.b64encode(data).decode("ascii")


def install_figure_format(shell: Any = None) -> bool:
    """Show matplotlib figures in IPython through :func:`figure_png` (records the smallest text).

    The book's execute script (``scripts/execute_notebooks.py``) calls it in the kernel before
    every cell (``%matplotlib inline`` puts IPython's own formatter back); importing the package
    does not. It does nothing outside IPython and returns whether it installed the formatter. It
    replaces IPython's PNG formatter for figures with the same pixels.

    >>> from IPython import get_ipython
    >>> install_figure_format() == (get_ipython() is not None)  # outside IPython: nothing
    True
    """
    if shell is None:
        ipython = sys.modules.get("IPython")  # not imported: not in IPython (and no import cost)
        shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    formatter = shell.display_formatter.formatters["image/png"]
    if "matplotlib.figure" in sys.modules:  # a formatter registered by type wins over one by name
        formatter.for_type(sys.modules["matplotlib.figure"].Figure, _figure_png_base64)
    else:
        formatter.for_type_by_name("matplotlib.figure", "Figure", _figure_png_base64)
    return True


_ARROW_COLORS = [OKABE_ITO[n] for n in ("blue", "vermillion", "bluish green", "reddish purple")] + [
    OKABE_ITO[n] for n in ("orange", "sky blue", "yellow")
]


def token_font_kwargs() -> dict[str, Any]:
    """Keyword arguments that make a matplotlib text call render Chinese and Latin characters.

    >>> token_font_kwargs()["fontfamily"]
    ['DejaVu Sans', 'Noto Sans CJK SC (course_utils)']
    """
    return {"fontfamily": cjk_font_family()}


def _new_axes(figsize: tuple[float, float]) -> Axes:
    import matplotlib.pyplot as plt

    if get_language() == "zh":  # COURSE_LANG=zh: this figure's text drawn in Chinese
        install_matplotlib_hook()
    _, ax = plt.subplots(figsize=figsize)
    return ax


def _check_tokens(tokens: Sequence[str], name: str, expected: int, axis_name: str) -> list[str]:
    if isinstance(tokens, str):
        raise TypeError(f"{name} must be a sequence of tokens, not one string; got {tokens!r}")
    labels = [str(t) for t in tokens]
    if len(labels) != expected:
        raise ValueError(
            f"{name} has {len(labels)} tokens, expected {expected} ({axis_name} of weights)"
        )
    return labels


def plot_attention(
    weights: Any,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    annotate: bool = True,
    cmap: str = "viridis",
    decimals: int = 2,
    vmin: float | None = 0.0,
    vmax: float | None = 1.0,
    colorbar: bool = True,
    xlabel: str = "key (键)",
    ylabel: str = "query (查询)",
) -> Axes:
    """Heatmap of a ``(T_q, T_k)`` weight (or score) matrix with token labels; returns the Axes.

    Rows are queries, columns are keys, as in the formulas: row ``i`` is where token ``i`` looks.
    ``key_tokens`` defaults to ``query_tokens`` (self-attention). With ``annotate`` each cell shows
    its value rounded to ``decimals``, in black on light cells and white on dark ones. For raw
    scores (not in [0, 1]) pass ``vmin=None, vmax=None``.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> ax = plot_attention([[0.75, 0.25], [0.5, 0.5]], ["看", "书"])
    >>> [t.get_text() for t in ax.texts]
    ['0.75', '0.25', '0.50', '0.50']
    >>> plt.close(ax.figure)
    """
    w = as_float_array(weights, "weights")
    if w.ndim != 2:
        raise ValueError(f"weights has shape {shape_str(w.shape)}, expected (T_q, T_k)")
    if np.isinf(w).any():
        raise ValueError("weights contains inf; plot finite numbers (replace -inf scores first)")
    t_q, t_k = w.shape
    rows = _check_tokens(query_tokens, "query_tokens", t_q, "rows")
    cols = _check_tokens(
        query_tokens if key_tokens is None else key_tokens, "key_tokens", t_k, "columns"
    )
    if ax is None:
        ax = _new_axes((max(3.0, 0.6 * t_k + 1.8), max(2.5, 0.5 * t_q + 1.2)))
    font = token_font_kwargs()

    image = ax.imshow(w, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")  # (T_q, T_k)
    ax.set_xticks(np.arange(t_k))
    ax.set_yticks(np.arange(t_q))
    ax.set_xticklabels(cols, **font)
    ax.set_yticklabels(rows, **font)
    ax.tick_params(axis="x", top=True, bottom=False, labeltop=True, labelbottom=False)
    ax.set_xlabel(xlabel, **font)
    ax.xaxis.set_label_position("top")
    ax.set_ylabel(ylabel, **font)
    if title is not None:
        ax.set_title(title, pad=12, **font)
    if annotate:
        norm = image.norm
        colormap = image.get_cmap()
        for i in range(t_q):
            for j in range(t_k):
                r, g, b, _ = colormap(norm(w[i, j]))
                luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
                ax.text(
                    j,
                    i,
                    f"{w[i, j]:.{decimals}f}",
                    ha="center",
                    va="center",
                    fontsize=SMALL_FONT_PT,
                    color="black" if luminance > 0.5 else "white",
                )
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def describe_attention(
    weights: Any,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str] | None = None,
    *,
    decimals: int = 2,
) -> str:
    """A factual alt text for an attention heatmap: its size and each query's strongest key.

    >>> text = describe_attention([[0.75, 0.25], [0.5, 0.5]], ["看", "书"])
    >>> for sentence in text.split(". "):
    ...     print(sentence)
    Heatmap of attention weights, 2 queries (rows) by 2 keys (columns)
    Strongest key per query: 看 → 看 (0.75); 书 → 看 (0.50).
    """
    w = as_float_array(weights, "weights")
    if w.ndim != 2:
        raise ValueError(f"weights has shape {shape_str(w.shape)}, expected (T_q, T_k)")
    t_q, t_k = w.shape
    rows = _check_tokens(query_tokens, "query_tokens", t_q, "rows")
    cols = _check_tokens(
        query_tokens if key_tokens is None else key_tokens, "key_tokens", t_k, "columns"
    )
    parts = []
    for i in range(t_q):
        j = int(np.argmax(w[i]))  # first maximum on ties
        parts.append(f"{rows[i]} → {cols[j]} ({w[i, j]:.{decimals}f})")
    return t(
        "Heatmap of attention weights, {t_q} queries (rows) by {t_k} keys (columns). Strongest "
        "key per query: {parts}.",
        t_q=t_q,
        t_k=t_k,
        parts="; ".join(parts),
    )


def plot_vectors(
    vectors: Any,
    labels: Sequence[str],
    *,
    ax: Axes | None = None,
    colors: Sequence[Any] | None = None,
    title: str | None = None,
    origin: Sequence[float] = (0.0, 0.0),
    linestyle: str = "-",
) -> Axes:
    """Draw 2-D vectors ``(n, 2)`` as labelled arrows from ``origin``; returns the Axes.

    The axes get equal aspect and a grid, and the limits include every arrow and the origin.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> ax = plot_vectors([[1, 0], [0, 2]], ["k₁", "k₂"])
    >>> [t.get_text() for t in ax.texts if t.get_text()]  # arrows are empty annotations
    ['k₁', 'k₂']
    >>> plt.close(ax.figure)
    """
    vecs = as_float_array(vectors, "vectors")
    if vecs.ndim != 2 or vecs.shape[1] != 2:
        raise ValueError(f"vectors has shape {shape_str(vecs.shape)}, expected (n, 2)")
    if np.isinf(vecs).any():
        raise ValueError("vectors contains inf")
    n = vecs.shape[0]
    names = _check_tokens(labels, "labels", n, "rows")
    if colors is not None and len(colors) != n:
        raise ValueError(f"colors has {len(colors)} entries, expected {n}")
    if ax is None:
        ax = _new_axes((4.0, 4.0))
    font = token_font_kwargs()
    x0, y0 = float(origin[0]), float(origin[1])
    for i in range(n):
        color = colors[i] if colors is not None else _ARROW_COLORS[i % len(_ARROW_COLORS)]
        dx, dy = vecs[i]
        ax.annotate(
            "",
            xy=(x0 + dx, y0 + dy),
            xytext=(x0, y0),
            arrowprops={"arrowstyle": "-|>", "color": color, "lw": 2, "linestyle": linestyle},
        )
        norm = float(np.hypot(dx, dy)) or 1.0
        ax.text(
            x0 + dx + 0.12 * dx / norm,
            y0 + dy + 0.12 * dy / norm,
            names[i],
            color=color,
            ha="center",
            va="center",
            **font,
        )
    tips = vecs + np.array([x0, y0])  # (n, 2)
    extent = float(np.abs(np.vstack([tips, [[x0, y0]]])).max()) * 1.25 or 1.0
    lim = max(extent, *np.abs(ax.get_xlim()), *np.abs(ax.get_ylim()))  # never shrink earlier arrows
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.grid(True, alpha=0.3)
    ax.axhline(0, color="0.6", lw=0.8)
    ax.axvline(0, color="0.6", lw=0.8)
    if title is not None:
        ax.set_title(title, **font)
    return ax


def plot_query_and_keys(
    query: Any,
    keys: Any,
    key_labels: Sequence[str],
    *,
    query_label: str = "q",
    weights: Any = None,
    ax: Axes | None = None,
    title: str | None = None,
    decimals: int = 2,
) -> Axes:
    """A 2-D query (black, dashed) and its keys as arrows; ``weights`` are shown in the key labels.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> ax = plot_query_and_keys([1, 1], [[1, 0], [0, 1]], ["k₁", "k₂"], weights=[0.5, 0.5])
    >>> sorted(t.get_text() for t in ax.texts if t.get_text())
    ['k₁ (0.50)', 'k₂ (0.50)', 'q']
    >>> plt.close(ax.figure)
    """
    q = as_float_array(query, "query")
    if q.shape != (2,):
        raise ValueError(f"query has shape {shape_str(q.shape)}, expected (2,)")
    k = as_float_array(keys, "keys")
    if k.ndim != 2 or k.shape[1] != 2:
        raise ValueError(f"keys has shape {shape_str(k.shape)}, expected (T_k, 2)")
    labels = _check_tokens(key_labels, "key_labels", k.shape[0], "rows of keys")
    if weights is not None:
        w = as_float_array(weights, "weights")
        if w.shape != (k.shape[0],):
            raise ValueError(f"weights has shape {shape_str(w.shape)}, expected ({k.shape[0]},)")
        labels = [f"{name} ({w[i]:.{decimals}f})" for i, name in enumerate(labels)]
    ax = plot_vectors(k, labels, ax=ax, title=title)
    plot_vectors(q[None, :], [query_label], ax=ax, colors=["black"], linestyle="--")
    return ax


def plot_decoder_stack(
    n_layers: int,
    d_model: int,
    n_heads: int,
    n_kv_heads: int,
    d_ff: int,
    vocab_size: int,
    *,
    ax: Axes | None = None,
) -> Axes:
    """A Llama-style decoder (SmolLM2) as one picture: token ids -> token embedding -> ``n_layers``
    pre-norm blocks (RMSNorm, causal attention with RoPE and GQA, add; RMSNorm, SwiGLU FFN, add)
    -> final RMSNorm -> LM head, with the arrow of the tied weights (the LM head is the embedding
    matrix). The sizes are written in the boxes. Drawn at :data:`COLUMN_WIDTH_IN` with no text
    under :data:`SMALL_FONT_PT`.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> ax = plot_decoder_stack(30, 576, 9, 3, 1536, 49152)
    >>> any("30" in text for text in figure_texts(ax.figure))
    True
    >>> plt.close(ax.figure)
    """
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    from .transformer_cost import check_decoder_config

    v, d, _, h, kv, f = check_decoder_config(
        vocab_size, d_model, n_layers, n_heads, n_kv_heads, d_ff
    )
    L = n_layers
    if ax is None:
        ax = _new_axes(column_figsize(5.6))
        ax.set_position((0.0, 0.0, 1.0, 1.0))  # a diagram: no axes, the whole figure
    ax.set_xlim(0, 10.4)
    ax.set_ylim(0, 13)
    ax.axis("off")
    size = SMALL_FONT_PT + 1
    colours = {
        "embed": OKABE_ITO["sky blue"],
        "norm": (0.88, 0.88, 0.88),
        "attn": OKABE_ITO["orange"],
        "ffn": OKABE_ITO["bluish green"],
        "head": OKABE_ITO["reddish purple"],
    }

    def box(y: float, text: str, colour: Any, x: float = 3.0, w: float = 5.6) -> None:
        ax.add_patch(
            FancyBboxPatch(
                (x, y - 0.32),
                w,
                0.64,
                boxstyle="round,pad=0.04",
                facecolor=colour,
                edgecolor="black",
                linewidth=0.8,
            )
        )
        ax.text(x + w / 2, y, text, ha="center", va="center", fontsize=size)

    def arrow(y0: float, y1: float, x: float = 5.8) -> None:
        ax.add_patch(
            FancyArrowPatch((x, y0), (x, y1), arrowstyle="-|>", mutation_scale=10, linewidth=0.8)
        )

    # bottom to top, as the text flows through the model
    ax.text(5.8, 0.35, t("token ids, shape (T,)"), ha="center", va="center", fontsize=size)
    arrow(0.6, 1.0)
    box(1.35, t("token embedding: a table of {v:,} × {d}", v=v, d=d), colours["embed"])
    arrow(1.7, 2.35)
    # the stack of blocks: a dashed frame around one block
    ax.add_patch(
        FancyBboxPatch(
            (1.9, 2.35),
            7.3,
            6.3,
            boxstyle="round,pad=0.05",
            facecolor="none",
            edgecolor="black",
            linestyle="--",
            linewidth=0.8,
        )
    )
    ax.text(1.5, 5.5, t("× {L} blocks", L=L), ha="center", va="center", fontsize=size, rotation=90)
    rows = [
        (2.95, t("RMSNorm"), colours["norm"]),
        (
            3.95,
            t("causal attention (RoPE), GQA: {h} query / {kv} KV heads", h=h, kv=kv),
            colours["attn"],
        ),
        (5.95, t("RMSNorm"), colours["norm"]),
        (6.95, t("SwiGLU FFN: {d} → {f} → {d}", d=d, f=f), colours["ffn"]),
    ]
    for y, text, colour in rows:
        box(y, text, colour, x=3.2, w=5.4)
    for y0, y1 in ((3.27, 3.63), (4.27, 4.72), (5.28, 5.63), (6.27, 6.63), (7.27, 7.72)):
        arrow(y0, y1, x=5.9)
    # the residual stream: the block's input skips each sublayer and joins its output at an add
    for y_add in (5.0, 8.0):
        ax.text(5.9, y_add, "⊕", ha="center", va="center", fontsize=size + 4)
    for y_from, y_add in ((2.55, 5.0), (5.3, 8.0)):
        ax.plot([5.9, 2.5, 2.5], [y_from, y_from, y_add], color="black", linewidth=1.2)
        ax.add_patch(
            FancyArrowPatch(
                (2.5, y_add), (5.7, y_add), arrowstyle="-|>", mutation_scale=10, linewidth=1.2
            )
        )
    ax.text(2.62, 8.3, t("residual stream"), ha="left", va="center", fontsize=size)
    arrow(8.2, 9.35)
    box(9.7, t("final RMSNorm"), colours["norm"])
    arrow(10.05, 10.65)
    box(11.0, t("LM head: × the embedding table → {v:,} logits", v=v), colours["head"])
    arrow(11.35, 11.95)
    ax.text(
        5.8, 12.3, t("next-token probabilities (softmax)"), ha="center", va="center", fontsize=size
    )
    # weight tying: the LM head is the embedding table itself
    ax.add_patch(
        FancyArrowPatch(
            (8.7, 1.35),
            (8.7, 11.0),
            connectionstyle="arc3,rad=0.25",
            arrowstyle="<|-|>",
            mutation_scale=10,
            linewidth=1.2,
            color=OKABE_ITO["blue"],
            linestyle="-",
        )
    )
    ax.text(
        10.05,
        6.2,
        t("same matrix (tied weights)"),
        ha="center",
        va="center",
        fontsize=size,
        color=OKABE_ITO["blue"],
        rotation=90,
    )
    return ax


def plot_attention_variants(result: Mapping[str, Any], *, ax: Axes | None = None) -> Axes:
    """Validation loss against KV cache size for attention variants trained several times each.

    ``result`` is what ``benchmarks/attention_variants_quality.py`` saves: ``result["variants"]``
    maps a name (``"MHA"``, ``"GQA"``, ...) to ``{"cache_values_per_token_per_layer": int,
    "runs": [{"val_loss": float, ...}, ...]}``. Every run is a dot; each variant's mean is a bar
    with its standard deviation over the runs (so the spread shows next to the difference), and
    the variant's name is written beside it. Drawn at :data:`COLUMN_WIDTH_IN`.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> r = {"variants": {"MHA": {"cache_values_per_token_per_layer": 128,
    ...                           "runs": [{"val_loss": 0.50}, {"val_loss": 0.52}]},
    ...                   "MQA": {"cache_values_per_token_per_layer": 32,
    ...                           "runs": [{"val_loss": 0.55}, {"val_loss": 0.56}]}}}
    >>> ax = plot_attention_variants(r)
    >>> sorted(text for text in figure_texts(ax.figure) if text in ("MHA", "MQA"))
    ['MHA', 'MQA']
    >>> plt.close(ax.figure)
    """
    variants = result.get("variants") if isinstance(result, Mapping) else None
    if not isinstance(variants, Mapping) or not variants:
        got = type(result).__name__ if not isinstance(result, Mapping) else sorted(result)
        raise ValueError(
            f"result must be a mapping with a non-empty 'variants' mapping (the benchmark's "
            f"JSON); got {got}"
        )
    rows = []
    for name, v in variants.items():
        runs = v.get("runs") if isinstance(v, Mapping) else None
        cache = v.get("cache_values_per_token_per_layer") if isinstance(v, Mapping) else None
        if not isinstance(cache, int) or isinstance(cache, bool) or cache < 1 or not runs:
            raise ValueError(
                f"result['variants'][{name!r}] must hold an int "
                f"'cache_values_per_token_per_layer' >= 1 and a non-empty 'runs' list; got {v!r}"
            )
        losses = as_float_array(
            [r.get("val_loss") for r in runs], f"result['variants'][{name!r}] val_loss"
        )
        rows.append((str(name), cache, losses))
    if ax is None:
        ax = _new_axes(column_figsize(3.2))
    # Okabe-Ito without its yellow, which is hard to see on white
    names = ("blue", "vermillion", "bluish green", "orange", "reddish purple", "sky blue")
    colours = [OKABE_ITO[c] for c in names]
    for i, (name, cache, losses) in enumerate(rows):
        colour = colours[i % len(colours)]
        ax.scatter(np.full(len(losses), cache), losses, s=18, color=colour, alpha=0.8, zorder=5)
        std = float(losses.std(ddof=1)) if len(losses) > 1 else 0.0
        ax.errorbar(
            cache,
            float(losses.mean()),
            yerr=std,
            fmt="_",
            color="black",
            markersize=14,
            capsize=4,
            linewidth=1.2,
            zorder=4,
        )
        ax.annotate(
            name,
            (cache, float(losses.mean())),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            fontsize=SMALL_FONT_PT + 1,
        )
    ax.set_xscale("log", base=2)
    caches = sorted({c for _, c, _ in rows})
    ax.set_xticks(caches, [str(c) for c in caches])
    ax.minorticks_off()
    ax.set_xlim(caches[0] / 1.4, caches[-1] * 1.6)
    ax.set_xlabel(t("KV cache values per token per layer (log scale)"))
    ax.set_ylabel(t("validation loss (nats per character)"))
    ax.grid(alpha=0.3)
    ax.figure.tight_layout()
    return ax


def plot_decoding_times(result: Mapping[str, Any], *, ax: Axes | None = None) -> Axes:
    """The measured time per generated token of ``benchmarks/bench_cross_kv_cache.py``: naive
    greedy decoding (solid) against decoding with a cached source (dashed) and, where the rows
    have it, with only the self-attention cached (dotted), one colour per model size, by source
    length, on log–log axes. ``result`` is the benchmark's JSON, loaded.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> rows = [{"size": "chapter 8", "t_src": n, "naive_ms_per_token": 2.0 + n / 100,
    ...          "cached_ms_per_token": 1.0} for n in (16, 64, 256)]
    >>> ax = plot_decoding_times({"rows": rows})
    >>> len(ax.get_lines()), ax.get_xscale()
    (2, 'log')
    >>> plt.close(ax.figure)
    """
    from matplotlib.ticker import NullLocator

    keys = ("size", "t_src", "naive_ms_per_token", "cached_ms_per_token")
    rows = result.get("rows") if isinstance(result, Mapping) else None
    if (
        not isinstance(rows, Sequence)
        or not rows
        or not all(isinstance(r, Mapping) and all(k in r for k in keys) for r in rows)
    ):
        raise ValueError(
            f"result must be the JSON of benchmarks/bench_cross_kv_cache.py: a mapping whose "
            f"'rows' is a non-empty list of rows with the keys {list(keys)}; got "
            f"{type(result).__name__}"
            + (f" with rows {rows!r:.80}" if isinstance(result, Mapping) else "")
        )
    if ax is None:
        ax = _new_axes(column_figsize(4.4))
    sizes = list(dict.fromkeys(str(r["size"]) for r in rows))  # in the file's order
    colours = [OKABE_ITO["vermillion"], OKABE_ITO["blue"], OKABE_ITO["bluish green"]]
    for i, size in enumerate(sizes):
        mine = sorted((r for r in rows if str(r["size"]) == size), key=lambda r: r["t_src"])
        x = [r["t_src"] for r in mine]
        colour = colours[i % len(colours)]
        lines = [
            ("naive_ms_per_token", "-", t("{size}: nothing cached", size=size)),
            ("self_cache_only_ms_per_token", ":", t("{size}: self-attention cached", size=size)),
            ("cached_ms_per_token", "--", t("{size}: source cached too", size=size)),
        ]
        for key, style, label in lines:
            if all(key in r for r in mine):  # the middle line is optional
                y = [r[key] for r in mine]
                ax.plot(x, y, style, marker="o", color=colour, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    t_values = sorted({r["t_src"] for r in rows})
    ax.set_xticks(t_values, [str(v) for v in t_values])
    ax.xaxis.set_minor_locator(NullLocator())
    times = [r[k] for r in rows for k, _, _ in lines if k in r]
    y_ticks = [
        v
        for v in (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500)
        if min(times) / 2 <= v <= 2 * max(times)
    ]
    ax.set_yticks(y_ticks, [f"{v:g}" for v in y_ticks])
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("source length T_k (tokens)", fontsize=SMALL_FONT_PT + 1)
    ax.set_ylabel("ms per generated token (CPU time)", fontsize=SMALL_FONT_PT + 1)
    ax.tick_params(labelsize=SMALL_FONT_PT + 1)
    ax.legend(
        fontsize=SMALL_FONT_PT + 1,
        frameon=False,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.18),
        ncol=2,
    )
    ax.grid(True, which="major", alpha=0.3)
    return ax


#: How :func:`plot_flex_benchmark` draws each variant of ``benchmarks/bench_flex_attention.py``:
#: colour, marker and line style (the two compiled FlexAttention kernels share a colour, the window
#: solid and the causal control dashed, so that the gap between them reads as the mask's saving).
FLEX_STYLES: dict[str, tuple[str, str, str]] = {
    "sdpa causal": ("blue", "o", ":"),
    "sdpa + mask": ("sky blue", "s", ":"),
    "ours": ("vermillion", "D", "-"),
    "flex eager": ("reddish purple", "v", "-."),
    "flex compiled": ("bluish green", "^", "-"),
    "flex compiled, causal": ("bluish green", "^", "--"),
}


def plot_flex_benchmark(result: dict[str, Any], ax: Axes | None = None) -> Axes:
    """Time per call (CPU ms, median) against ``T``, one line per variant, from the JSON that
    ``benchmarks/bench_flex_attention.py`` saves (its ``rows``: ``T``, ``cpu_ms`` by variant).
    Log-log axes; a variant missing from the rows (the compiled ones, when ``torch.compile``
    failed) is simply not drawn. Returns the Axes.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> rows = [{"T": T, "cpu_ms": {"ours": T / 100, "sdpa + mask": T * T / 1e5}}
    ...         for T in (1024, 2048)]
    >>> ax = plot_flex_benchmark({"rows": rows})
    >>> [line.get_label() for line in ax.get_lines()]
    ['sdpa + mask', 'ours']
    >>> import matplotlib.pyplot as plt; plt.close(ax.figure)
    """
    rows = result.get("rows") if isinstance(result, dict) else None
    if not rows or not all(isinstance(r, dict) and "T" in r and "cpu_ms" in r for r in rows):
        raise ValueError(
            "result must be the JSON of benchmarks/bench_flex_attention.py: a dict whose 'rows' "
            "hold 'T' and 'cpu_ms'; got "
            + (f"keys {sorted(result)}" if isinstance(result, dict) else type(result).__name__)
        )
    unknown = sorted({n for r in rows for n in r["cpu_ms"]} - set(FLEX_STYLES))
    if unknown:
        raise ValueError(f"unknown variants {unknown}; expected some of {list(FLEX_STYLES)}")
    if ax is None:
        ax = _new_axes(column_figsize(3.6))
    lengths = [r["T"] for r in rows]
    for name, (colour, marker, style) in FLEX_STYLES.items():
        if all(name in r["cpu_ms"] for r in rows):
            ax.loglog(
                lengths,
                [r["cpu_ms"][name] for r in rows],
                marker=marker,
                linestyle=style,
                color=OKABE_ITO[colour],
                lw=1.8,
                label=name,
            )
    ax.set_xticks(lengths, [f"{T // 1024}k" for T in lengths])
    ax.minorticks_off()
    ax.set_xlabel("sequence length T")
    ax.set_ylabel("CPU time per call (ms)")
    ax.legend(fontsize=SMALL_FONT_PT, loc="upper left")  # the lines rise to the right
    return ax


#: Line styles of :func:`plot_nll_per_block`'s curves, in order: colour, dash and marker all differ,
#: so the curves stay apart in grey print and for colour-blind readers.
_NLL_STYLES = [
    (OKABE_ITO["blue"], "-", "o"),
    (OKABE_ITO["vermillion"], "--", "s"),
    (OKABE_ITO["bluish green"], "-.", "^"),
    (OKABE_ITO["reddish purple"], ":", "D"),
    (OKABE_ITO["orange"], (0, (5, 1, 1, 1)), "v"),
]


def plot_nll_per_block(
    curves: Mapping[str, Sequence[float]],
    block: int,
    *,
    boundary: int | None = None,
    boundary_label: str = "",
    ax: Axes | None = None,
) -> Axes:
    """A language model's mean negative log-likelihood (NLL) per block of ``block`` tokens, one
    curve per run (``curves``: label -> the NLL of blocks 0, 1, ...), against the position in
    the text (each point at the middle of its block). ``boundary`` draws a dotted vertical line
    at that token, labelled ``boundary_label`` (where a cache starts to evict, or a model's
    trained context ends). Lower is better: ``exp`` of the NLL is the perplexity. Labels go
    through :func:`course_utils.i18n.t_literal`, so a label the catalogue knows is drawn in
    Chinese in the 中文 edition. Used by chapter 7 (StreamingLLM's sinks,
    ``benchmarks/streaming_sinks.py``) and chapter 5 (RoPE scaling on a long text,
    ``benchmarks/smollm2_long_context.py``).

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> ax = plot_nll_per_block({"full cache": [4.4, 3.9], "rolling window": [4.4, 5.2]}, 64,
    ...                         boundary=64, boundary_label="eviction starts")
    >>> [line.get_xdata().tolist() for line in ax.get_lines()[:2]]
    [[32.0, 96.0], [32.0, 96.0]]
    >>> plt.close(ax.figure)
    """
    block = check_int(block, "block", low=1)
    if not isinstance(curves, Mapping) or not curves:
        raise TypeError(
            f"curves must be a non-empty mapping label -> NLL per block; got {curves!r:.80}"
        )
    if len(curves) > len(_NLL_STYLES):
        raise ValueError(f"curves has {len(curves)} runs, expected at most {len(_NLL_STYLES)}")
    values = {str(k): as_float_array(v, f"curves[{k!r}]") for k, v in curves.items()}
    for label, v in values.items():
        if v.ndim != 1 or v.size == 0:
            raise ValueError(
                f"curves[{label!r}] has shape {shape_str(v.shape)}, expected (n_blocks,) "
                "with n_blocks >= 1"
            )
        if not np.isfinite(v).all():
            raise ValueError(f"curves[{label!r}] holds a NaN or an infinity: {v.tolist()}")
    if boundary is not None:
        boundary = check_int(boundary, "boundary", low=0)
    if ax is None:
        ax = _new_axes(column_figsize(3.0))
    for (label, v), (colour, dash, marker) in zip(values.items(), _NLL_STYLES, strict=False):
        x = (np.arange(v.size) + 0.5) * block  # (n_blocks,): the middle of each block
        ax.plot(x, v, color=colour, linestyle=dash, marker=marker, markersize=4,
                label=t_literal(label))  # fmt: skip
    if boundary is not None:
        ax.axvline(boundary, color="grey", linestyle=":", linewidth=1.2)
        if boundary_label:
            ax.annotate(
                t_literal(boundary_label),
                (boundary, 0.0),
                xycoords=("data", "axes fraction"),
                xytext=(4, 4),
                textcoords="offset points",
                fontsize=SMALL_FONT_PT,
                color="dimgrey",
            )
    ax.set_xlabel(t("position in the text (tokens)"), fontsize=SMALL_FONT_PT + 1)
    ax.set_ylabel(t("mean NLL per {block} tokens", block=block), fontsize=SMALL_FONT_PT + 1)
    ax.tick_params(labelsize=SMALL_FONT_PT)
    ax.legend(fontsize=SMALL_FONT_PT, loc="best")
    ax.figure.tight_layout()
    return ax
