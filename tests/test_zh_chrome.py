"""The 中文 edition shows no English chrome, and its figures are checked for English (no build).

* the glossary: every chapter's terms, one LayerNorm entry, headwords 中文（English）on the zh page,
* the site's chrome: title suffix, footer, the date, the solution and code-cell toggles;
* figures: ``course_utils.plotting`` records every visible text of a figure in its PNG
  (strict unit test), and the figures of the zh-executed notebooks carry no English prose
  (reported, not failed, for PNGs drawn before the texts were recorded).
"""

from __future__ import annotations

import base64
import io
import json
import re
import warnings
from pathlib import Path

import pytest

import course_site as sphinx_ext
from course_site import zh_catalogues, zh_edition
from course_site.zh_lint import figure_english

REPO = Path(__file__).resolve().parents[1]
GLOSSARY_PO = REPO / "locale" / "zh_CN" / "LC_MESSAGES" / "glossary.po"


# ---- glossary ---------------------------------------------------------------------------------
def _terms() -> list[tuple[str, str]]:
    return zh_catalogues.load_glossary(REPO / "glossary.md")


@pytest.mark.parametrize(
    "english",
    [
        "Causal attention", "Causal mask", "KV cache", "Teacher forcing", "Multi-query attention",
        "Grouped-query attention", "Multi-head latent attention", "Latent vector",
        "Decoupled RoPE", "Weight absorption", "Online softmax", "Tiling", "Attention pooling",
        "Attention rollout", "Ablation", "Bootstrap", "Rotary position embedding", "ALiBi",
        "Sliding window", "Sparse attention", "Cross-attention", "Attention sink",
    ],
)  # fmt: skip
def test_glossary_covers_every_chapter(english: str) -> None:
    assert english in dict(_terms()), f"glossary.md has no entry {english!r}"


def test_glossary_lists_layernorm_once_and_uses_the_courses_terms() -> None:
    zh = [z for _, z in _terms()]
    assert zh.count("层归一化") == 1, zh
    terms = dict(_terms())
    assert terms["Attention sink"] == "注意力汇"
    assert terms["KV cache"] == "KV 缓存" and terms["Online softmax"] == "在线 softmax"


def test_zh_glossary_headwords_read_chinese_first_and_every_message_is_translated() -> None:
    import polib

    po = {e.msgid: e.msgstr for e in polib.pofile(str(GLOSSARY_PO))}
    problems = []
    for en, zh in _terms():
        headword = po.get(f"{en} ({zh})")
        if not headword:
            problems.append(f"{en}: no zh headword")
        elif (
            not re.match(r"[\u4e00-\u9fff]|softmax|ALiBi|KV|Transformer 块", headword)
            or "（" not in headword
        ):
            problems.append(f"{en}: {headword!r} is not 中文（English）")
    text = (REPO / "glossary.md").read_text(encoding="utf-8")
    block = re.search(r"(?s)```\{glossary\}\n(.*?)\n```", text).group(1)
    definitions = re.findall(r"(?m)((?:^  \S.*\n?)+)", block)
    for d in definitions:
        msgid = " ".join(line.strip() for line in d.splitlines())
        if not po.get(msgid):
            problems.append(f"definition not translated: {msgid[:60]!r}")
    banned = ("归一化指数函数", "种子笔记", "极性", "滚动最大值", "滚动和", "下沉点")
    for msgid, msgstr in po.items():
        for word in banned:
            if word in msgstr and not msgid.startswith(("Softmax", "A token", "The function")):
                problems.append(f"{word} in {msgstr[:40]!r}")
    assert not problems, "\n".join(problems)


# ---- site chrome ------------------------------------------------------------------------------
def test_zh_config_has_a_chinese_title_footer_and_date(tmp_path: Path) -> None:
    config = zh_edition.zh_config(REPO, tmp_path / "src", tmp_path / "kit")
    assert config["title"] == "注意力，一步一步来"
    footer = config["html"]["extra_footer"]
    assert "MIT 许可证" in footer and "licence" not in footer
    assert config["sphinx"]["config"]["html_last_updated_fmt"] == "%Y 年 %-m 月 %-d 日"
    import datetime

    from sphinx.util.i18n import format_date

    day = datetime.datetime(2026, 12, 3)
    assert (
        format_date(zh_edition.ZH_LAST_UPDATED_FMT, date=day, language="zh_CN")
        == "2026 年 12 月 3 日"
    )


def test_the_theme_date_sentence_ends_with_a_full_width_period() -> None:
    import polib

    po = {e.msgid: e.msgstr for e in polib.pofile(str(GLOSSARY_PO.with_name("sphinx.po")))}
    assert po["Last updated on %(last_updated)s."] == "最后更新于 %(last_updated)s。"
    template = (sphinx_ext.TEMPLATES / "last-updated.html").read_text(encoding="utf-8")
    assert "Last updated on {{ last_updated }}." in template


#: A hidden cell as myst-nb 1.x writes it (copied from the built chapter 7).
CELL = (
    '<div class="cell {tags} docutils container">\n<details class="admonition hide above-input">\n'
    '<summary>\n<p class="collapsed admonition-title">{show}</p>'
    '<p class="expanded admonition-title">{hide}</p>\n</summary>'
)


@pytest.mark.parametrize(
    ("tags", "language", "want"),
    [
        ("tag_hide-cell tag_solution", "en", ("Show the solution", "Hide the solution")),
        ("tag_hide-cell tag_solution", "zh_CN", ("显示答案", "隐藏答案")),
        ("tag_hide-cell", "zh_CN", ("显示代码", "隐藏代码")),
        ("tag_hide-cell", "en", ("Show code cell content", "Hide code cell content")),
    ],
)
def test_toggles_are_labelled_in_the_pages_language(tags: str, language: str, want: tuple) -> None:
    body = CELL.format(tags=tags, show="Show code cell content", hide="Hide code cell content")
    out = sphinx_ext.label_toggles(body, language)
    assert f">{want[0]}</p>" in out and f">{want[1]}</p>" in out, out


# ---- figures ----------------------------------------------------------------------------------
def test_figure_png_records_every_visible_text() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course_utils.plotting import figure_png, recorded_texts, token_font_kwargs

    font = token_font_kwargs()
    fig, (ax, bx) = plt.subplots(1, 2)
    ax.plot([0, 1], [0, 1], label="权重")
    ax.set_title("注意力", **font)
    ax.set_xlabel("位置", **font)
    ax.set_ylabel("largest weight")
    ax.set_xticks([0, 1], ["看", "书"], **font)
    ax.legend(prop=font.get("fontproperties") or {"family": font.get("fontfamily")})
    ax.annotate("峰值", (1, 1), **font)
    bx.set_title("hidden panel")
    bx.set_visible(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a glyph missing from the fallback font
        texts = recorded_texts(io.BytesIO(figure_png(fig)))
    plt.close(fig)
    for text in ("注意力", "位置", "largest weight", "看", "书", "权重", "峰值"):
        assert text in texts, (text, texts)
    assert "hidden panel" not in texts
    assert figure_english(texts) == ["largest weight"]


def _pngs(nb: dict) -> list[tuple[int, bytes]]:
    out = []
    for i, cell in enumerate(nb["cells"]):
        for o in cell.get("outputs", []):
            data = o.get("data", {}).get("image/png")
            if data:
                out.append((i, base64.b64decode("".join(data) if isinstance(data, list) else data)))
    return out


ZH_NOTEBOOKS = sorted((REPO / "locale" / "zh_CN" / "notebooks").rglob("*.ipynb"))


@pytest.mark.parametrize("path", ZH_NOTEBOOKS, ids=lambda p: p.stem)
def test_zh_figures_show_no_english_prose(path: Path) -> None:
    """Every figure of a zh-executed notebook: no English prose in the texts its PNG records (as
    drawn: the figure hook's translations). A PNG that records no texts fails: it was drawn before
    the recording, so re-execute the notebook (``make execute-zh``)."""
    from course_utils.plotting import recorded_texts

    nb = json.loads(path.read_text(encoding="utf-8"))
    problems, unrecorded = [], 0
    for cell, png in _pngs(nb):
        texts = recorded_texts(io.BytesIO(png))
        if texts is None:
            unrecorded += 1
            continue
        english = figure_english(texts)
        if english:
            problems.append(f"cell {cell}: {english}")
    assert not problems, f"{path.relative_to(REPO)}: English on figures:\n" + "\n".join(problems)
    assert not unrecorded, f"{path.relative_to(REPO)}: {unrecorded} figure(s) record no texts"


def test_a_zh_figure_records_its_texts_as_drawn() -> None:
    """Under 中文 the PNG records what the figure hook draws: a label the catalogue knows in
    Chinese, a label with maths and a tick label as written (the hook leaves those alone)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course_utils.i18n import get_language, set_language
    from course_utils.plotting import figure_png, recorded_texts

    before = get_language()
    set_language("zh")
    try:
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1], label="weight")
        ax.set_xlabel("$d_k$ (dimension of queries and keys)")
        ax.set_ylabel("values")
        ax.set_xticks([0, 1], ["weight", "K"])
        ax.legend()
        texts = recorded_texts(io.BytesIO(figure_png(fig)))
        plt.close(fig)
    finally:
        set_language(before)
    assert "权重" in texts and "值" in texts, texts
    assert "weight" in texts  # the tick label: ticks are drawn as written
    assert "values" not in texts
