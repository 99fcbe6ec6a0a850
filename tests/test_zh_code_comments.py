"""The 中文 edition's code comments (``locale/zh_CN/code_comments.json``).

The code of a chapter is the same in both editions; its comments that explain a step are
translated when the zh book is staged (``course_site.zh_edition.translate_code_comments``, as
d2l-zh does). These tests hold the catalogue to the notebooks: every comment with English prose
has a translation, no entry is stale, a translation is Chinese that follows the edition's terms
and fits the line, and translating touches nothing but comments.
"""

from __future__ import annotations

import copy
import io
import json
import re
import tokenize
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_site import i18n, zh_edition
from course_site.zh_lint import glossary_violations, untranslated_english
from tests.test_zh_terms import TERMS

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = [p.relative_to(REPO).as_posix() for p in zh_edition.book_notebooks(REPO)]
CATALOG = zh_edition.load_code_comments(REPO)
#: The longest line a translated comment may make, a CJK character counting 2 columns (PEP 8's
#: 79, or the English line's own width where that is already longer).
WIDTH = 79
#: ASCII punctuation touching Chinese text: Chinese writes ，：；（ inside a sentence.
HALF_WIDTH_IN_CHINESE = re.compile(r"[\u3400-\u9fff][,:;!?]|[,:;!?] ?[\u3400-\u9fff]")


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def key(rel: str) -> str:
    return rel.removesuffix(".ipynb")


def columns(text: str) -> int:
    """Display width: a wide (CJK) character takes two columns.

    >>> columns("# 查询 q"), columns("# query q")
    (8, 9)
    """
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def code_tokens(src: str) -> list[tuple[int, str]]:
    """A cell's tokens but its comments and the line breaks of comment-only lines."""
    tokens = tokenize.generate_tokens(io.StringIO(src).readline)
    return [(t.type, t.string) for t in tokens if t.type not in {tokenize.COMMENT, tokenize.NL}]


def translated(rel: str) -> dict[str, Any]:
    nb = read(REPO / rel)
    zh_edition.translate_code_comments(nb, CATALOG.get(key(rel), {}))
    return nb


# --- the catalogue against the notebooks ---------------------------------------------------------


@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_every_comment_with_english_prose_has_a_translation(rel: str) -> None:
    comments = zh_edition.code_comments(read(REPO / rel))
    entries = CATALOG.get(key(rel), {})
    missing = [c for c in comments if not entries.get(c)]
    assert not missing, f"add to {zh_edition.CODE_COMMENTS} [{key(rel)!r}]:\n" + "\n".join(missing)


@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_no_catalogue_entry_is_stale(rel: str) -> None:
    comments = set(zh_edition.code_comments(read(REPO / rel), prose_only=False))
    stale = sorted(set(CATALOG.get(key(rel), {})) - comments)
    assert not stale, f"{key(rel)}: no longer a comment of the notebook: {stale}"


def test_the_catalogue_names_only_book_notebooks() -> None:
    assert set(CATALOG) <= {key(rel) for rel in NOTEBOOKS}, sorted(set(CATALOG))
    assert sum(len(v) for v in CATALOG.values()) > 300


# --- the translations -----------------------------------------------------------------------------


def _entries() -> list[tuple[str, str, str]]:
    return [(page, en, zh) for page, entries in CATALOG.items() for en, zh in entries.items()]


@pytest.mark.parametrize("page", sorted(CATALOG))
def test_translations_are_chinese_and_use_the_terms(page: str) -> None:
    """Chinese (no English prose left), the glossary's terms, the edition's terms
    (``tests/test_zh_terms.py``), full-width punctuation, and the English's numbers."""
    problems = []
    for en, zh in CATALOG[page].items():
        if not i18n.CJK.search(zh):
            problems.append(("no Chinese", en, zh))
        if untranslated_english(zh.replace("\n", " ")):
            problems.append((f"English {untranslated_english(zh)}", en, zh))
        if glossary_violations(en, zh):
            problems.append((f"glossary {glossary_violations(en, zh)}", en, zh))
        for avoid, use, _why, _alias in TERMS:
            if avoid in zh:
                problems.append((f"{avoid} -> {use}", en, zh))
        if HALF_WIDTH_IN_CHINESE.search(zh):
            problems.append(("half-width punctuation", en, zh))
        lost = [n for n in re.findall(r"\d+(?:\.\d+)?", en) if n not in zh]
        if lost:
            problems.append((f"numbers {lost} lost", en, zh))
    assert not problems, "\n".join(map(repr, problems))


@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_translated_lines_fit(rel: str) -> None:
    """Each line of a translated comment fits 79 columns (CJK 2), or the English line's width."""
    english = read(REPO / rel)
    entries = CATALOG.get(key(rel), {})
    too_long = []
    for cell in english["cells"]:
        if cell["cell_type"] != "code":
            continue
        lines = zh_edition.source(cell).splitlines()
        for first, last, col, mark, text in zh_edition._comment_blocks(zh_edition.source(cell)):
            if not entries.get(text):
                continue
            limit = max(WIDTH, *(columns(line) for line in lines[first : last + 1]))
            for zh_line in entries[text].split("\n"):
                line = lines[first][:col] + mark + zh_line
                if columns(line) > limit:
                    too_long.append(f"{columns(line)} > {limit}: {line.strip()}")
    assert not too_long, "\n".join(too_long)


# --- translate_code_comments touches comments only ------------------------------------------------


@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_translation_changes_comments_only(rel: str) -> None:
    english = read(REPO / rel)
    zh = translated(rel)
    assert len(zh["cells"]) == len(english["cells"])
    for en_cell, zh_cell in zip(english["cells"], zh["cells"], strict=True):
        if en_cell["cell_type"] != "code":
            assert zh_cell == en_cell
            continue
        assert {k: v for k, v in zh_cell.items() if k != "source"} == {
            k: v for k, v in en_cell.items() if k != "source"
        }
        en_src, zh_src = zh_edition.source(en_cell), zh_edition.source(zh_cell)
        assert code_tokens(zh_src) == code_tokens(en_src)


def test_strings_magics_and_shapes_are_left_alone() -> None:
    src = (
        "s = 'a # in a string'  # the string\n"
        'doc = """\n# not a comment either\n"""\n'
        "%timeit f(x)  # a magic line: not Python\n"
        "y = x  # (B, T, d)\n"
        "    # your code here\n"
    )
    nb = {"cells": [{"cell_type": "code", "source": src, "outputs": [], "metadata": {}}]}
    catalog = {
        "the string": "这个字符串",
        "your code here": "在这里写你的代码",
        "not a comment either": "不该出现",
        "a magic line: not Python": "不该出现",
    }
    assert zh_edition.translate_code_comments(nb, catalog) == []
    assert zh_edition.source(nb["cells"][0]) == (
        "s = 'a # in a string'  # 这个字符串\n"
        'doc = """\n# not a comment either\n"""\n'
        "%timeit f(x)  # a magic line: not Python\n"
        "y = x  # (B, T, d)\n"
        "    # 在这里写你的代码\n"
    )


def test_cell_magics_and_broken_cells_are_skipped() -> None:
    cells = ["%%bash\n# a shell comment\necho hi", "def f(:\n    # half a function"]
    nb = {"cells": [{"cell_type": "code", "source": c, "metadata": {}} for c in cells]}
    before = copy.deepcopy(nb)
    assert zh_edition.translate_code_comments(nb, {"a shell comment": "注释"}) == []
    assert nb == before


def test_untranslated_comments_are_returned_once_in_order() -> None:
    src = "x = 1  # second step\ny = 2  # first step\nz = 3  # second step\nw = 4  # (T,)"
    nb = {"cells": [{"cell_type": "code", "source": src, "metadata": {}}]}
    assert zh_edition.translate_code_comments(nb, {}) == ["second step", "first step"]


FRAGMENTS = [
    "x = 1",
    "s = '# hash'",
    't = "a # b"  ',
    "y = [1,\n     2]",
    "if x:\n    z = 2",
    'u = f"{x} # {y}"',
]
COMMENTS = ["# step one", "# (T, d)", "#: a note", "# two words", "#", "# the # inside"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(["", *COMMENTS]), st.booleans()),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["注释", "第一行\n第二行", "（T，d）：形状"]),
)
def test_property_code_tokens_survive_any_translation(
    parts: list[tuple[str, str, bool]], zh: str
) -> None:
    """Whatever the catalogue says, the code's tokens (strings included) are unchanged and every
    comment that had a translation now holds it."""
    lines = []
    for code, comment, own_line in parts:
        if comment and own_line:
            lines += [comment, code]
        else:
            lines.append(f"{code}  {comment}".rstrip() if comment else code)
    src = "\n".join(lines) + "\n"
    nb = {"cells": [{"cell_type": "code", "source": src, "metadata": {}}]}
    blocks = zh_edition._comment_blocks(src)
    catalog = {text: zh for *_, text in blocks}
    assert zh_edition.translate_code_comments(nb, catalog) == []
    out = zh_edition.source(nb["cells"][0])
    assert code_tokens(out) == code_tokens(src)
    after = [text for *_, text in zh_edition._comment_blocks(out)]
    # (a comment after code continues on lines of its own, aligned under it)
    assert " ".join(after) == " ".join([zh.replace("\n", " ")] * len(blocks))


# --- the staged notebook -------------------------------------------------------------------------


def test_the_composed_chapter_has_chinese_comments_and_zh_outputs() -> None:
    """What ``stage()`` writes for chapter 1, in memory: the zh copy's outputs (the code check of
    ``compose`` still holds: both notebooks keep their English comments), then Chinese comments."""
    rel = "chapters/01_queries_keys_values.ipynb"
    english = read(REPO / rel)
    zh_copy = read(zh_edition.zh_notebook(REPO, REPO / rel))
    nb = zh_edition.compose(english, zh_copy)
    assert zh_edition.translate_code_comments(nb, CATALOG[key(rel)]) == []
    code = "\n".join(zh_edition.code_cells(nb))
    comments = [t for c in zh_edition.code_cells(nb) for *_, t in zh_edition._comment_blocks(c)]
    assert sum(bool(i18n.CJK.search(c)) for c in comments) >= 20, comments[:10]
    assert "在这里写你的代码" in code
    assert not [c for c in comments if zh_edition.needs_translation(c)]
    zh_outputs = [c.get("outputs") for c in zh_copy["cells"] if c["cell_type"] == "code"]
    assert [c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"] == zh_outputs


def test_stage_writes_chinese_comments_to_the_book_and_the_kit(tmp_path: Path) -> None:
    """``stage()`` on a one-chapter copy of the repository (1-2 s): the staged page and the kit
    copy hold the Chinese comments; a missing entry is a warning, and its comment stays English."""
    import shutil

    rel = "chapters/01_queries_keys_values.ipynb"
    for path in (rel, f"locale/zh_CN/notebooks/{rel}", "_config.yml"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / path, tmp_path / path)
    catalog = copy.deepcopy(CATALOG[key(rel)])
    dropped = "the chapter's only random number generator"
    del catalog[dropped]
    (tmp_path / zh_edition.CODE_COMMENTS).write_text(
        json.dumps({key(rel): catalog}, ensure_ascii=False), encoding="utf-8"
    )
    warnings = zh_edition.stage(tmp_path, quiet=True)
    assert [w for w in warnings if "code comment" in w] == [
        f"{rel}: code comment not translated in {zh_edition.CODE_COMMENTS}: {dropped}"
    ]
    for staged in (tmp_path / zh_edition.STAGE / rel, tmp_path / zh_edition.KIT / rel):
        code = "\n".join(zh_edition.code_cells(read(staged)))
        assert "# 在这里写你的代码" in code and "# 第 3 步：用 softmax 归一化每一行" in code
        assert f"# {dropped}" in code
