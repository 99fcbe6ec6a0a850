"""Plots: Chinese labels render in the CJK font without warnings; labels, values and errors.

pytest runs with ``filterwarnings = error``, so any "Glyph ... missing" warning fails a test. The
control test shows that the same labels *do* warn with matplotlib's default font, so the check can
fail.
"""

from __future__ import annotations

import base64
import io
import re
import subprocess
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib import font_manager
from matplotlib.ft2font import FT2Font

from course_utils.data import bank_example, query_plane_example, reading_example
from course_utils.fonts import (
    CJK_FONT_NAME,
    COURSE_CJK_FAMILY,
    cjk_font_family,
    cjk_font_path,
    contains_cjk,
)
from course_utils.masks import causal_mask
from course_utils.plotting import (
    describe_attention,
    plot_attention,
    plot_nll_per_block,
    plot_query_and_keys,
    plot_vectors,
    token_font_kwargs,
)

pytestmark = pytest.mark.usefixtures("close_figures")


def _render_all_formats(fig) -> dict[str, bytes]:
    out = {}
    for fmt in ("png", "svg", "pdf"):
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt)
        out[fmt] = buf.getvalue()
    return out


def _font_used_for(text_artist, char: str) -> str:
    """The file matplotlib's fallback picks for ``char``: the first font of the list that has it."""
    paths = font_manager.fontManager._find_fonts_by_props(text_artist.get_fontproperties())
    for path in paths:
        if FT2Font(str(path)).get_char_index(ord(char)) != 0:
            return str(path)
    raise AssertionError(f"no font in {paths} has {char!r}")


def _pdf_fonts(pdf: bytes) -> set[str]:
    """Names of the fonts embedded in a PDF, without the random subset prefix (``ABCDEF+``)."""
    return {
        name.split("+")[-1] for name in re.findall(r"/BaseFont /([\w+\-]+)", pdf.decode("latin-1"))
    }


def test_chinese_heatmap_renders_without_warnings_in_every_format():
    ex = bank_example()
    _, w = ex.attention()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # also when run outside pytest's configuration
        ax = plot_attention(w, ex.tokens, title="小明在银行边的长椅上看书")
        outputs = _render_all_formats(ax.figure)
    assert all(len(data) > 1000 for data in outputs.values())


def test_the_font_used_for_chinese_labels_is_the_cjk_font():
    ex = bank_example()
    _, w = ex.attention()
    ax = plot_attention(w, ex.tokens, title="银行 (bank)")
    cjk_file = str(cjk_font_path())
    labels = [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.title]
    for label in labels:
        for ch in label.get_text():
            if contains_cjk(ch):
                assert _font_used_for(label, ch) == cjk_file, (label.get_text(), ch)
    assert "DejaVuSans" in _font_used_for(ax.title, "b")  # Latin letters keep the default font
    # The PDF embeds exactly the fonts whose glyphs were drawn: Noto Sans CJK SC is one of them.
    fonts = _pdf_fonts(_render_all_formats(ax.figure)["pdf"])
    assert "NotoSansCJKsc-Regular" in fonts


def test_control_default_font_really_warns_about_missing_glyphs():
    """Without our font family, the same label triggers the warning the tests above forbid."""
    fig, ax = plt.subplots()
    ax.set_title("银行")
    with pytest.warns(UserWarning, match=r"Glyph \d+ .* missing from font\(s\) DejaVu Sans"):
        fig.canvas.draw()


def test_latin_only_heatmap_does_not_embed_the_cjk_font():
    ax = plot_attention(np.eye(2), ["the", "cat"], xlabel="key", ylabel="query", colorbar=False)
    fonts = _pdf_fonts(_render_all_formats(ax.figure)["pdf"])
    assert "NotoSansCJKsc-Regular" not in fonts and "DejaVuSans" in fonts


def test_importing_and_plotting_changes_no_rcparams():
    before = dict(matplotlib.rcParams)
    ax = plot_attention(np.eye(3), ["看", "书", "好"])
    ax.figure.canvas.draw()
    after = dict(matplotlib.rcParams)
    assert {k for k in before if before[k] != after[k]} == set()


def test_import_registers_no_font_until_first_use():
    """Lazy: importing course_utils.plotting adds nothing to matplotlib's font list.

    It looks for the package's own file, so a system font of the same family (Debian's
    fonts-noto-cjk) does not count; tests/test_environment.py runs this with such a font."""
    code = (
        "import matplotlib; matplotlib.use('Agg'); from matplotlib import font_manager as fm\n"
        "import course_utils.plotting as p\n"
        "from course_utils.fonts import cjk_font_path; path = str(cjk_font_path())\n"
        "has = lambda: any(f.fname == path for f in fm.fontManager.ttflist)\n"
        "before = has(); p.cjk_font_family(); print(before, has())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "True"]


def test_plot_attention_labels_values_and_title():
    ex = reading_example()
    _, w = ex.attention(causal_mask(4))
    ax = plot_attention(w, ex.tokens, title="看书真好", decimals=3)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(ex.tokens)
    assert [t.get_text() for t in ax.get_xticklabels()] == list(ex.tokens)
    assert ax.get_title() == "看书真好"
    texts = [t.get_text() for t in ax.texts]
    assert texts == [f"{x:.3f}" for x in w.ravel()]
    assert ax.images[0].get_cmap().name == "viridis"
    np.testing.assert_array_equal(ax.images[0].get_array(), w)
    assert len(ax.figure.axes) == 2  # the heatmap and its colour bar


def test_plot_attention_annotation_contrast():
    ax = plot_attention([[0.0, 1.0]], ["q"], ["a", "b"], colorbar=False)
    colours = [t.get_color() for t in ax.texts]
    assert colours == ["white", "black"]  # white on dark viridis, black on yellow


def test_plot_attention_cross_attention_and_options():
    fig, ax0 = plt.subplots()
    w = np.full((2, 3), 1 / 3)
    ax = plot_attention(
        w,
        ["看", "书"],
        ["Reading", "is", "nice"],
        ax=ax0,
        annotate=False,
        cmap="cividis",
        colorbar=False,
        vmin=None,
        vmax=None,
    )
    assert ax is ax0
    assert len(ax.texts) == 0
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Reading", "is", "nice"]
    assert ax.images[0].get_cmap().name == "cividis"
    assert len(fig.axes) == 1


@pytest.mark.parametrize(
    ("weights", "q_tok", "k_tok", "error", "match"),
    [
        (
            np.ones(3),
            ["a", "b", "c"],
            None,
            ValueError,
            r"weights has shape \(3,\), expected \(T_q, T_k\)",
        ),
        (
            np.ones((2, 3)),
            ["a", "b"],
            None,
            ValueError,
            r"key_tokens has 2 tokens, expected 3 \(columns of weights\)",
        ),
        (
            np.ones((2, 3)),
            ["a"],
            ["x", "y", "z"],
            ValueError,
            r"query_tokens has 1 tokens, expected 2 \(rows of weights\)",
        ),
        (
            np.ones((2, 2)),
            "ab",
            None,
            TypeError,
            r"query_tokens must be a sequence of tokens, not one string",
        ),
        (np.full((1, 1), np.nan), ["a"], None, ValueError, r"weights contains NaN"),
        ([[0.0, -np.inf]], ["a"], ["x", "y"], ValueError, r"weights contains inf"),
        ([["a"]], ["a"], None, TypeError, r"weights must be a numeric array"),
    ],
)
def test_plot_attention_bad_input(weights, q_tok, k_tok, error, match):
    with pytest.raises(error, match=match):
        plot_attention(weights, q_tok, k_tok)


def test_describe_attention_names_the_strongest_key_per_query():
    ex = bank_example()
    _, w = ex.attention()
    text = describe_attention(w, ex.tokens)
    assert text.startswith("Heatmap of attention weights, 8 queries (rows) by 8 keys (columns).")
    assert "看书 → 小明 (0.51)" in text
    assert "长椅 → 银行 (0.31)" in text  # tie with 边: the first maximum is named
    assert text.count("→") == 8
    with pytest.raises(ValueError, match=r"key_tokens has 1 tokens, expected 8"):
        describe_attention(w, ex.tokens, ["x"])


def test_plot_vectors_arrows_labels_and_limits():
    vecs = np.array([[1.0, 0.0], [0.0, 2.0], [-3.0, -1.0]])
    ax = plot_vectors(vecs, ["k₁", "k₂", "长椅"], title="keys")
    arrows = [t for t in ax.texts if t.get_text() == ""]
    labels = [t.get_text() for t in ax.texts if t.get_text()]
    assert len(arrows) == 3 and labels == ["k₁", "k₂", "长椅"]
    for arrow, (dx, dy) in zip(arrows, vecs, strict=True):
        assert arrow.xy == pytest.approx((dx, dy))
    lo, hi = ax.get_xlim()
    assert lo <= -3 and hi >= 3
    assert ax.get_aspect() == 1.0
    ax.figure.canvas.draw()  # the Chinese label draws without a warning


def test_plot_query_and_keys_with_weights():
    ex = query_plane_example()
    _, w = ex.attention(ex.query)
    ax = plot_query_and_keys(ex.query, ex.keys, ex.labels, weights=w, title="soft lookup")
    labels = [t.get_text() for t in ax.texts if t.get_text()]
    assert labels == [f"{name} ({x:.2f})" for name, x in zip(ex.labels, w, strict=True)] + ["q"]
    lo, hi = ax.get_ylim()
    assert lo <= ex.keys[:, 1].min() and hi >= ex.keys[:, 1].max()


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: plot_vectors(np.ones((2, 3)), ["a", "b"]),
            ValueError,
            r"vectors has shape \(2, 3\), expected \(n, 2\)",
        ),
        (
            lambda: plot_vectors(np.ones((2, 2)), ["a"]),
            ValueError,
            r"labels has 1 tokens, expected 2",
        ),
        (
            lambda: plot_vectors(np.ones((2, 2)), ["a", "b"], colors=["red"]),
            ValueError,
            r"colors has 1 entries, expected 2",
        ),
        (
            lambda: plot_query_and_keys([1, 2, 3], np.ones((2, 2)), ["a", "b"]),
            ValueError,
            r"query has shape \(3,\), expected \(2,\)",
        ),
        (
            lambda: plot_query_and_keys([1, 2], np.ones((2, 3)), ["a", "b"]),
            ValueError,
            r"keys has shape \(2, 3\), expected \(T_k, 2\)",
        ),
        (
            lambda: plot_query_and_keys([1, 2], np.ones((2, 2)), ["a", "b"], weights=[1.0]),
            ValueError,
            r"weights has shape \(1,\), expected \(2,\)",
        ),
    ],
)
def test_vector_plots_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- fonts --------------------------------------------------------------------------------------


def test_cjk_font_file_ships_with_mplfonts():
    path = cjk_font_path()
    assert path.name == "NotoSansCJKsc-Regular.otf" and path.is_file()
    assert font_manager.FontProperties(fname=str(path)).get_name() == CJK_FONT_NAME


def test_cjk_font_family_is_a_fresh_fallback_list():
    a = cjk_font_family()
    b = cjk_font_family()
    assert a == ["DejaVu Sans", COURSE_CJK_FAMILY] and a is not b
    assert token_font_kwargs() == {"fontfamily": a}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("小明", True),
        ("Xiao Ming", False),
        ("a银", True),
        ("，", True),
        ("カ", True),
        ("한", True),
        ("", False),
        ("√d_k", False),
        ("✓", False),
    ],
)
def test_contains_cjk(text, expected):
    assert contains_cjk(text) is expected


# --- the alt-text recipe of the module docstring, checked with a real myst-nb build ---------------


@pytest.mark.slow
def test_alt_text_recipe_yields_img_alt_in_a_myst_nb_build(tmp_path):
    """The recipe in plotting.py's docstring gives ``<img alt=...>`` and a numbered figure."""
    import myst_nb  # noqa: F401 - needed below
    import nbformat

    ex = bank_example()
    _, w = ex.attention()
    ax = plot_attention(w, ex.tokens)
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png", dpi=30)
    alt = describe_attention(w, ex.tokens)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells.append(nbformat.v4.new_markdown_cell("# Alt text\n\nSee {numref}`fig-bank-weights`."))
    cell = nbformat.v4.new_code_cell("plot_attention(weights, tokens);")
    cell.metadata["mystnb"] = {
        "image": {"alt": alt},
        "figure": {"caption": "Attention weights.", "name": "fig-bank-weights"},
    }
    png = base64.b64encode(buf.getvalue()).decode()
    cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png})]
    nb.cells.append(cell)
    src = tmp_path / "src"
    src.mkdir()
    nbformat.write(nb, src / "index.ipynb")
    (src / "conf.py").write_text(
        'extensions = ["myst_nb"]\nnb_execution_mode = "off"\nnumfig = True\n'
    )
    out = tmp_path / "html"
    cmd = [sys.executable, "-m", "sphinx", "-q", "-W", "-n", "-b", "html", str(src), str(out)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    html = (out / "index.html").read_text(encoding="utf-8")
    assert f'<img alt="{alt}"' in html
    assert "Fig. 1" in html  # the named figure is numbered and referenced


def test_the_palette_lives_in_plotting_only() -> None:
    """OKABE_ITO's one home is course_utils.plotting; course_utils.data no longer has it."""
    from course_utils import data, plotting

    assert "OKABE_ITO" in plotting.__all__ and not hasattr(data, "OKABE_ITO")
    assert len(plotting.OKABE_ITO) == 7
    assert all(0 <= c <= 1 for rgb in plotting.OKABE_ITO.values() for c in rgb)


# --- text sizes: every figure records its smallest text (the book's browser test reads it) ---


def test_smallest_text_px_counts_every_visible_text() -> None:
    import matplotlib.pyplot as plt

    from course_utils.plotting import SMALL_FONT_PT, smallest_text_px

    fig, ax = plt.subplots(dpi=100)
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend(fontsize=7)
    assert smallest_text_px(fig) == round(7 * 100 / 72, 2)  # the legend, 9.72 px
    ax.get_legend().set_visible(False)
    assert smallest_text_px(fig) == round(10 * 100 / 72, 2)  # then the 10 pt tick labels
    ax.tick_params(labelsize=SMALL_FONT_PT)
    assert smallest_text_px(fig) == round(SMALL_FONT_PT * 100 / 72, 2)
    plt.close(fig)


def test_the_size_rules_give_11_px_text_in_the_book_column() -> None:
    from course_utils.plotting import COLUMN_WIDTH_IN, FIGURE_DPI, MIN_TEXT_PX, SMALL_FONT_PT

    assert SMALL_FONT_PT * FIGURE_DPI / 72 >= MIN_TEXT_PX  # unshrunk, the smallest font is legible
    # 672 px: the widest image the content column shows unshrunk at 1280 px (measured in Chromium)
    assert COLUMN_WIDTH_IN * FIGURE_DPI <= 672


def test_a_notebook_figure_records_its_smallest_text_in_the_png(tmp_path, monkeypatch) -> None:
    """In a kernel set up as the book's execute script sets it up, running cells as the chapters
    do (`%matplotlib inline`, then `import course_utils`): the PNG records its smallest text."""
    import base64
    import importlib.util
    import io

    import nbformat
    from nbclient import NotebookClient
    from PIL import Image

    from course_kit.kernels import socket_kernel_manager_class
    from course_utils.plotting import TEXT_SIZE_KEY

    script = Path(__file__).resolve().parents[1] / "scripts" / "execute_notebooks.py"
    spec = importlib.util.spec_from_file_location("execute_notebooks", script)
    assert spec is not None and spec.loader is not None
    execute_notebooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(execute_notebooks)
    for name in ("IPYTHONDIR", "JUPYTER_CONFIG_DIR"):
        monkeypatch.setenv(name, "")  # restored after the test; set by the function below
    execute_notebooks.book_kernel_environment(str(tmp_path))

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "%matplotlib inline\nimport matplotlib.pyplot as plt\nimport course_utils"
        ),
        nbformat.v4.new_code_cell(
            "fig, ax = plt.subplots(figsize=(3, 2))\nax.set_title('t', fontsize=9)\n"
            "ax.plot([0, 1], label='a')\nax.legend(fontsize=7.2)\nplt.show()"
        ),
    ]
    NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        kernel_manager_class=socket_kernel_manager_class(asynchronous=True),
    ).execute()
    (png,) = [o["data"]["image/png"] for o in nb.cells[1].outputs if "image/png" in o["data"]]
    image = Image.open(io.BytesIO(base64.b64decode(png)))
    assert image.text[TEXT_SIZE_KEY] == "10.00"  # 7.2 pt at 100 dpi


def _heatmap_png() -> bytes:
    from course_utils.plotting import figure_png

    x = np.linspace(0, 6, 128)
    fig, ax = plt.subplots(figsize=(4.8, 4))
    image = ax.imshow(np.cos(x[:, None] - x[None, :]), cmap="cividis", vmin=-1, vmax=1)
    fig.colorbar(image, ax=ax)
    ax.set_title("a heatmap")
    try:
        return figure_png(fig)
    finally:
        plt.close(fig)


def test_a_heatmap_is_stored_with_a_palette_that_looks_the_same() -> None:
    """The PNG shrinks, keeps its size, its recorded text size and every pixel within the bound."""
    from PIL import Image, ImageChops

    from course_utils.plotting import PALETTE_MAX_ERROR, TEXT_SIZE_KEY

    png = _heatmap_png()
    image = Image.open(io.BytesIO(png))
    assert image.mode == "P", "a cividis heatmap has few colours: it gets a palette"
    assert image.text[TEXT_SIZE_KEY] == "13.89"  # 10 pt ticks at 100 dpi, recorded as before
    # The full-colour rendering, re-made, differs from the stored one by at most the bound.
    full = Image.open(io.BytesIO(_heatmap_png_full()))
    assert full.size == image.size
    diff = ImageChops.difference(full.convert("RGB"), image.convert("RGB"))
    assert max(hi for _, hi in diff.getextrema()) <= PALETTE_MAX_ERROR
    assert len(png) < 0.7 * len(_heatmap_png_full())


def _heatmap_png_full() -> bytes:
    """The same heatmap without the palette step (what IPython's formatter would store)."""
    from unittest import mock

    import course_utils.plotting as plotting

    with mock.patch.object(plotting, "palette_png", lambda png: png):
        return _heatmap_png()


def test_an_image_that_would_change_keeps_full_colour() -> None:
    """Noise has far more than 256 colours; a transparent image keeps its alpha: both unchanged."""
    from PIL import Image

    from course_utils.plotting import palette_png

    rng = np.random.default_rng(0)
    for pixels, mode in (
        (rng.integers(0, 256, (64, 64, 3), dtype=np.uint8), "RGB"),
        (np.full((64, 64, 4), (255, 0, 0, 128), dtype=np.uint8), "RGBA"),
    ):
        buffer = io.BytesIO()
        Image.fromarray(pixels, mode).save(buffer, "PNG")
        assert palette_png(buffer.getvalue()) == buffer.getvalue()


# --- plot_attention_variants (chapter 11, benchmarks/attention_variants_quality.py) ---

from matplotlib.collections import PathCollection  # noqa: E402

from course_utils.plotting import (  # noqa: E402
    MIN_TEXT_PX,
    figure_texts,
    plot_attention_variants,
    smallest_text_px,
)

_VARIANTS = {
    "variants": {
        "MHA": {
            "cache_values_per_token_per_layer": 128,
            "runs": [{"val_loss": v} for v in (0.5, 0.52)],
        },
        "GQA": {
            "cache_values_per_token_per_layer": 64,
            "runs": [{"val_loss": v} for v in (0.6, 0.7, 0.65)],
        },
        "MLA": {"cache_values_per_token_per_layer": 39, "runs": [{"val_loss": 0.4}]},
    }
}


def test_plot_attention_variants_draws_every_run_and_each_mean_with_its_spread():
    ax = plot_attention_variants(_VARIANTS)
    try:
        dots = np.concatenate(
            [c.get_offsets() for c in ax.collections if isinstance(c, PathCollection)]
        )
        assert sorted(map(tuple, dots.tolist())) == sorted(
            [(128, 0.5), (128, 0.52), (64, 0.6), (64, 0.7), (64, 0.65), (39, 0.4)]
        )
        texts = figure_texts(ax.figure)
        assert {"MHA", "GQA", "MLA"} <= set(texts)
        # the error bars: mean ± sample standard deviation (ddof=1); one run has none
        bars = [line for c in ax.containers for line in c.lines[2]]
        spans = sorted(tuple(np.round(seg[:, 1], 6)) for b in bars for seg in b.get_segments())
        assert (0.6, 0.7) in spans  # GQA: 0.65 ± 0.05
        assert (
            round(0.51 - np.std([0.5, 0.52], ddof=1), 6),
            round(0.51 + np.std([0.5, 0.52], ddof=1), 6),
        ) in spans
        assert smallest_text_px(ax.figure) >= MIN_TEXT_PX
    finally:
        plt.close(ax.figure)


@pytest.mark.parametrize(
    ("result", "match"),
    [
        ([1, 2], "result must be a mapping with a non-empty 'variants'"),
        ({"variants": {}}, "non-empty 'variants'"),
        ({"variants": {"MHA": {"runs": [{"val_loss": 1.0}]}}}, r"\['MHA'\] must hold an int"),
        (
            {"variants": {"MHA": {"cache_values_per_token_per_layer": 8, "runs": []}}},
            "non-empty 'runs'",
        ),
        (
            {
                "variants": {
                    "MHA": {
                        "cache_values_per_token_per_layer": 8,
                        "runs": [{"val_loss": float("inf")}],
                    }
                }
            },
            r"\['MHA'\] val_loss contains \+inf",
        ),
        (
            {"variants": {"MHA": {"cache_values_per_token_per_layer": 8, "runs": [{}]}}},
            r"result\['variants'\]\['MHA'\] val_loss",
        ),
    ],
)
def test_plot_attention_variants_bad_input(result, match):
    with pytest.raises((TypeError, ValueError), match=match):
        plot_attention_variants(result)


def test_plot_decoding_times_draws_the_saved_benchmark_and_rejects_other_input():
    import json

    from course_utils.plotting import MIN_TEXT_PX, plot_decoding_times, smallest_text_px

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "cross_kv_cache.json"
    result = json.loads(path.read_text(encoding="utf-8"))
    ax = plot_decoding_times(result)
    sizes = {r["size"] for r in result["rows"]}
    assert len(ax.get_lines()) == 3 * len(sizes)  # nothing, self-attention, both cached
    for line in ax.get_lines():  # every plotted time is one of the file's
        times = {r["naive_ms_per_token"] for r in result["rows"]}
        times |= {r["cached_ms_per_token"] for r in result["rows"]}
        times |= {r["self_cache_only_ms_per_token"] for r in result["rows"]}
        assert set(line.get_ydata()) <= times
    assert smallest_text_px(ax.figure) >= MIN_TEXT_PX
    plt.close(ax.figure)
    for bad in ({}, {"rows": []}, {"rows": [{"size": "x"}]}, [1, 2]):
        with pytest.raises(ValueError, match="result must be the JSON of benchmarks"):
            plot_decoding_times(bad)


# --- chapter 9: the FlexAttention benchmark, drawn from its saved JSON ---


def test_plot_flex_benchmark_draws_the_saved_json():
    import json

    from course_utils.plotting import FLEX_STYLES, plot_flex_benchmark

    path = Path(__file__).resolve().parents[1] / "benchmarks/results/flex_attention.json"
    result = json.loads(path.read_text(encoding="utf-8"))
    ax = plot_flex_benchmark(result)
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == set(result["rows"][0]["cpu_ms"]) <= set(FLEX_STYLES)
    for name, line in lines.items():  # every point is a saved number, none invented
        assert list(line.get_ydata()) == [r["cpu_ms"][name] for r in result["rows"]]
        assert list(line.get_xdata()) == [r["T"] for r in result["rows"]]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    plt.close(ax.figure)


def test_plot_flex_benchmark_without_compiled_variants_and_bad_input():
    from course_utils.plotting import plot_flex_benchmark

    rows = [{"T": T, "cpu_ms": {"ours": T / 100, "flex eager": T / 10}} for T in (1024, 4096)]
    ax = plot_flex_benchmark({"rows": rows, "compile_ok": False})
    assert [line.get_label() for line in ax.get_lines()] == ["ours", "flex eager"]
    plt.close(ax.figure)
    with pytest.raises(ValueError, match=r"'rows' hold 'T' and 'cpu_ms'; got keys \['runs'\]"):
        plot_flex_benchmark({"runs": rows})
    with pytest.raises(ValueError, match="got list"):
        plot_flex_benchmark(rows)
    with pytest.raises(ValueError, match=r"unknown variants \['naive'\]"):
        plot_flex_benchmark({"rows": [{"T": 8, "cpu_ms": {"naive": 1.0}}]})


# --- NLL per block (chapter 7's sinks, chapter 5's long context) ------------------------------


def test_plot_nll_per_block_draws_each_curve_at_block_middles_and_the_boundary():
    from course_utils.plotting import SMALL_FONT_PT, smallest_text_px

    curves = {"full cache": [4.4, 3.9, 4.5], "rolling window": [4.4, 3.9, 5.2]}
    ax = plot_nll_per_block(curves, 64, boundary=128, boundary_label="eviction starts")
    lines = ax.get_lines()
    assert [ln.get_xdata().tolist() for ln in lines[:2]] == [[32.0, 96.0, 160.0]] * 2
    assert [ln.get_ydata().tolist() for ln in lines[:2]] == list(curves.values())
    assert list(lines[2].get_xdata()) == [128, 128]  # the dotted boundary
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(curves)
    assert len({ln.get_linestyle() for ln in lines[:2]}) == 2  # told apart without colour
    assert smallest_text_px(ax.figure) >= SMALL_FONT_PT * 100 / 72 - 0.01
    assert "eviction starts" in [t.get_text() for t in ax.texts]


@pytest.mark.parametrize(
    ("curves", "block", "kwargs", "error", "match"),
    [
        ({}, 64, {}, TypeError, r"^curves must be a non-empty mapping"),
        ([[1.0, 2.0]], 64, {}, TypeError, r"^curves must be a non-empty mapping"),
        ({"a": [1.0]}, 0, {}, ValueError, r"^block must be >= 1; got 0"),
        ({"a": [[1.0, 2.0]]}, 64, {}, ValueError, r"^curves\['a'\] has shape \(1, 2\), expected"),
        ({"a": []}, 64, {}, ValueError, r"^curves\['a'\] has shape \(0,\)"),
        ({"a": [1.0, float("-inf")]}, 64, {}, ValueError, r"^curves\['a'\] holds a NaN or"),
        ({"a": [1.0, float("nan")]}, 64, {}, ValueError, r"curves\['a'\]"),
        ({"a": ["x"]}, 64, {}, TypeError, r"curves\['a'\]"),
        ({"a": [1.0]}, 64, {"boundary": -1}, ValueError, r"^boundary must be >= 0; got -1"),
        ({str(i): [1.0] for i in range(6)}, 64, {}, ValueError, r"^curves has 6 runs, expected"),
    ],
)  # fmt: skip
def test_plot_nll_per_block_bad_input(curves, block, kwargs, error, match):
    with pytest.raises(error, match=match):
        plot_nll_per_block(curves, block, **kwargs)
