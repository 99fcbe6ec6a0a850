"""Numbers the prose quotes from a computation are glued (``course_utils.prose_numbers.glue``,
which publishes exactly what ``myst_nb.glue`` does), not retyped.

A chapter glues each computed number it quotes in a code cell (``glue(name, value,
display=False)``, the value rounded as the text gives it) and its Markdown shows it with
``{glue:text}`name:fmt```: the number then comes from the committed outputs, which nbval
re-computes, so the prose cannot drift from the code. Checked here, for every chapter:

* every glue role of the English Markdown names a value the English notebook's outputs glued, and
  every role of the 中文 catalogue (``.po`` msgstr) one that the zh-executed notebook glued;
* a translated message keeps the glue roles of its English message, and no glued value is unused;
* a glued float has no more decimals than the text prints (the outputs must not depend on a
  float's last bits);
* learner copies and slide decks (plain Jupyter, no kernel) show the glued value, not the role;
* ``course_utils.prose_numbers.glue`` publishes what ``myst_nb``'s own ``glue`` publishes, for
  every kind of value the chapters glue, and the chapters use it (not myst_nb's: its import costs
  a kernel 1-3 s).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import polib
import pytest

from course_kit.myst import ROLE, glue_text, glued_values, myst_to_markdown
from course_kit.notebooks import learner_copy
from course_kit.slides import deck_notebook
from course_site import i18n

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((REPO / "chapters").glob("*.ipynb"))
GLUE_ROLES = {"glue", "glue:text"}
#: The chapters whose prose quotes computed numbers, all of them glued (the checks below run on
#: every chapter; this list makes sure they do not pass on a chapter by finding no roles).
GLUED_CHAPTERS = (
    "01_queries_keys_values",
    "02_scaling",
    "03_softmax_weighted_sum",
    "04_multi_head_attention",
    "05_positions",
    "06_transformer_block",
    "07_causal_attention",
    "08_cross_attention",
    "09_sparse_attention",
    "10_grouped_query_attention",
    "11_multi_head_latent_attention",
    "12_efficient_attention",
    "13_topic_words",
    "14_attention_atlas",
)


def _notebook(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _zh_notebook(path: Path) -> dict:
    return _notebook(REPO / "locale" / "zh_CN" / "notebooks" / "chapters" / path.name)


def _catalogue(path: Path) -> polib.POFile:
    return polib.pofile(
        str(REPO / "locale" / "zh_CN" / "LC_MESSAGES" / "chapters" / f"{path.stem}.po")
    )


def _catalog(path: Path) -> dict[str, str]:
    return i18n.load_catalog(
        REPO / "locale" / "zh_CN" / "LC_MESSAGES" / "chapters" / f"{path.stem}.po"
    )


def _markdown(nb: dict) -> str:
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def glue_roles(text: str) -> list[tuple[str, str]]:
    """The ``(role, content)`` of every glue role in ``text``."""
    return [(m[1], m[2]) for m in ROLE.finditer(text) if m[1] in GLUE_ROLES]


def _name(content: str) -> str:
    return content.rsplit(":", 1)[0] if ":" in content else content


def _problems(roles: list[tuple[str, str]], glued: dict[str, str]) -> list[str]:
    problems = []
    for role, content in roles:
        try:
            glue_text(role, content, glued)
        except ValueError as err:  # a name glued nowhere, or a value its format cannot print
            problems.append(str(err))
    return problems


@pytest.mark.parametrize("stem", GLUED_CHAPTERS)
def test_the_chapters_that_quote_computed_numbers_glue_them(stem: str) -> None:
    path = REPO / "chapters" / f"{stem}.ipynb"
    en, zh = _notebook(path), _zh_notebook(path)
    assert glue_roles(_markdown(en)), f"{stem}: no glue role in the English Markdown"
    assert any(glue_roles(e.msgstr) for e in _catalogue(path)), f"{stem}: none in the .po"
    assert glued_values(en) and glued_values(zh), f"{stem}: a notebook glues nothing"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_glue_role_names_a_glued_value_and_every_value_is_used(path: Path) -> None:
    en, zh = _notebook(path), _zh_notebook(path)
    en_roles = glue_roles(_markdown(en))
    zh_roles = [r for e in _catalogue(path) if e.msgstr for r in glue_roles(e.msgstr)]
    en_glued, zh_glued = glued_values(en), glued_values(zh)
    assert not _problems(en_roles, en_glued), f"{path.name} (English)"
    assert not _problems(zh_roles, zh_glued), f"{path.name} (中文 catalogue)"
    assert sorted(en_glued) == sorted(zh_glued), f"{path.name}: the editions glue other names"
    unused = sorted(set(en_glued) - {_name(c) for _, c in en_roles})
    assert not unused, f"{path.name}: glued but never shown: {unused}"
    unused_zh = sorted(set(zh_glued) - {_name(c) for _, c in zh_roles})
    assert not unused_zh, f"{path.name}: glued but never shown in the 中文 edition: {unused_zh}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_a_translation_keeps_the_glue_roles_of_its_message(path: Path) -> None:
    differ = [
        e.msgid[:70]
        for e in _catalogue(path)
        if e.msgstr and Counter(glue_roles(e.msgid)) != Counter(glue_roles(e.msgstr))
    ]
    assert not differ, f"{path.name}: msgstr glue roles differ from the msgid's: {differ}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_glued_floats_have_the_decimals_the_text_prints(path: Path) -> None:
    glued = glued_values(_notebook(path))
    decimals: dict[str, int] = {}
    for _, content in glue_roles(_markdown(_notebook(path))):
        m = re.search(r":\.(\d+)f$", content)
        if m:
            decimals[_name(content)] = min(int(m[1]), decimals.get(_name(content), 99))
    too_long = {
        name: glued[name]
        for name, places in decimals.items()
        if len(glued[name].partition(".")[2]) > places
    }
    assert not too_long, f"{path.name}: round these as the text prints them: {too_long}"


def _chapter_with_glue() -> Path:
    return next(p for p in CHAPTERS if glue_roles(_markdown(_notebook(p))))


def test_myst_to_markdown_shows_the_glued_value() -> None:
    glued = {"w": "0.992", "n": "20000", "s": "'text'"}
    text = "puts {glue:text}`w:.3f` on one key, of {glue:text}`n:,d` ({glue:text}`s`, {glue}`w`)"
    assert myst_to_markdown(text, glued=glued) == "puts 0.992 on one key, of 20,000 (text, 0.992)"
    assert myst_to_markdown(f"- {text}", glued=glued).startswith("- puts 0.992")


def test_a_glue_role_with_no_value_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"no value glued as 'x' \(glued: w\)"):
        myst_to_markdown("{glue:text}`x:.2f`", glued={"w": "1.0"})


@pytest.mark.parametrize("edition", ["en", "zh"])
def test_learner_copy_and_deck_show_the_glued_numbers(edition: str) -> None:
    path = _chapter_with_glue()
    nb = _notebook(path)
    if edition == "zh":
        nb = i18n.translate_notebook(_zh_notebook(path), _catalog(path))
    glued = glued_values(nb)
    roles = glue_roles(_markdown(nb))
    assert roles and glued
    for copy in (learner_copy(nb, language=edition), deck_notebook(nb, language=edition)):
        text = _markdown(copy)
        assert "{glue" not in text, f"{path.name} ({edition}): a raw glue role is left"
        for role, content in roles:
            shown = glue_text(role, content, glued)
            assert shown in text, f"{path.name} ({edition}): {content} should show {shown}"


@pytest.mark.browser
@pytest.mark.parametrize("edition", ["en", "zh"])
def test_the_built_pages_show_the_glued_numbers(edition: str) -> None:
    """Every glue role of a chapter is on its built page as the glued text (the 中文 edition's
    roles sit in translated paragraphs, which Sphinx parses without their notebook:
    ``course_site.glue``). Needs ``make book``; a missing site skips, except in CI."""
    import html
    import os

    from course_site.browser import site_dir

    site = site_dir() / ("zh" if edition == "zh" else "")
    if not (site / "intro.html").is_file():
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"no built site at {site}")
        pytest.skip(f"no built site at {site} (run `make book`)")
    checked = 0
    for path in CHAPTERS:
        nb = _notebook(path)
        if edition == "zh":
            nb = i18n.translate_notebook(_zh_notebook(path), _catalog(path))
        roles = glue_roles(_markdown(nb))
        page = (site / "chapters" / f"{path.stem}.html").read_text(encoding="utf-8")
        shown = re.findall(r'<span class="pasted-text">(.*?)</span>', page, re.S)
        expected = [glue_text(role, content, glued_values(nb)) for role, content in roles]
        assert Counter(html.unescape(s) for s in shown) == Counter(expected), path.name
        assert "{glue" not in page, f"{path.name}: a glue role is shown raw"
        checked += len(expected)
    assert checked > 0


GLUE_CASES = [
    ("float", 0.992, False),
    ("int", 196_608, False),
    ("str", "eaddggd", False),
    ("shown", 1.5, True),
    ("numpy_float", __import__("numpy").float64(30.5), False),
    ("list", [1, 2, 3], False),
    ("tuple_of_floats", (0.29, 1.0), True),
]


@pytest.mark.parametrize(("name", "value", "display"), GLUE_CASES, ids=[c[0] for c in GLUE_CASES])
def test_course_glue_publishes_what_myst_nb_glue_does(
    name: str, value: object, display: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The oracle is myst_nb's own ``glue``: the display call it makes (data, raw, metadata)."""
    import myst_nb.ext.glue as myst_glue

    import course_utils.prose_numbers as ours

    calls: list[tuple] = []

    def record(data: dict, *, raw: bool, metadata: dict) -> None:
        calls.append((data, raw, metadata))

    monkeypatch.setattr(myst_glue, "ipy_display", record)
    monkeypatch.setattr("IPython.display.display", record)
    myst_glue.glue(name, value, display)
    ours.glue(name, value, display)
    assert len(calls) == 2
    assert calls[1] == calls[0]
    assert calls[0][2]["scrapbook"]["name"] == name


@pytest.mark.parametrize("bad", ["", None, 3])
def test_course_glue_names_a_bad_name(bad: object) -> None:
    import course_utils.prose_numbers as ours

    with pytest.raises(TypeError, match="name must be a non-empty str"):
        ours.glue(bad, 1.0)  # type: ignore[arg-type]


def test_chapters_glue_with_the_course_glue() -> None:
    """Every glued chapter (both editions) imports ``glue`` from ``course_utils.prose_numbers``."""
    zh = REPO / "locale" / "zh_CN" / "notebooks" / "chapters"
    for path in [*CHAPTERS, *sorted(zh.glob("*.ipynb"))]:
        code = "\n".join(
            "".join(c["source"])
            for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
            if c["cell_type"] == "code"
        )
        if "glue(" in code:
            assert "from course_utils.prose_numbers import glue" in code, path.name
            assert "myst_nb" not in code, f"{path.name}: imports myst_nb in a kernel"


def test_a_gloss_is_italic_in_english_and_left_out_in_chinese() -> None:
    """``{gloss}`...``` (an English gloss of Chinese seed text) in a learner copy or a deck."""
    text = "> 小明在银行边的长椅上看书\n>\n> {gloss}`Xiao Ming is reading on a bench by the bank.`"
    english = myst_to_markdown(text, language="en")
    assert english.endswith("> *Xiao Ming is reading on a bench by the bank.*")
    chinese = myst_to_markdown(text, language="zh_CN")
    assert "Xiao Ming" not in chinese and "gloss" not in chinese
    assert chinese.startswith("> 小明在银行边的长椅上看书")
