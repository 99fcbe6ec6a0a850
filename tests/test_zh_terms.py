"""One 中文 term per concept, as d2l-zh and Chinese lecturers write it, everywhere the 中文 edition
has text: the page catalogues (``locale/zh_CN/LC_MESSAGES``), the package's messages and widget
text (``zh.json``), and what the zh-executed notebooks print.

Each row: a word a reader must not meet, the word the edition uses instead, and why. The glossary
keeps a long name once as an alias (softmax's 归一化指数函数, attention sink's variants), so its
catalogue is held only to the terms it does not list as aliases.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polib
import pytest

REPO = Path(__file__).resolve().parents[1]
LOCALE = REPO / "locale" / "zh_CN" / "LC_MESSAGES"
ZH_JSON = REPO / "src" / "course_utils" / "i18n" / "zh.json"
ZH_NOTEBOOKS = REPO / "locale" / "zh_CN" / "notebooks"
GLOSSARY = LOCALE / "glossary.po"

#: (avoid, use, why, the glossary may name it as an alias)
TERMS = [
    ("归一化指数函数", "softmax", "Chinese text writes softmax", True),
    ("种子笔记", "学习笔记", "collides with 随机种子 / 种子 0", False),
    ("极性", "掩码的约定", "a mask has a convention, not a polarity", False),
    ("滚动最大值", "当前最大值", "滚动 means a rolling window", False),
    ("滚动和", "累计和", "滚动 means a rolling window", False),
    ("当前和", "累计和", "the running sum accumulates (当前最大值 is the running max)", False),
    ("批大小", "批量大小", "d2l-zh's word", False),
    ("键值缓存", "KV 缓存", "one name for the KV cache", True),
    ("KV cache", "KV 缓存", "one name for the KV cache", True),
    ("注意力下沉点", "注意力汇", "attention sink: one term", True),
    ("被掩码", "被屏蔽", "mask as a verb is 屏蔽/遮蔽", False),
    ("锐利", "集中", "a distribution gets concentrated, not sharp", False),
    ("尖锐", "集中", "a distribution gets concentrated, not sharp", False),
    ("平坦化", "趋于均匀", "a distribution tends to uniform", False),
    ("检查程序", "检查器", "one word for a checker", False),
]
IDS = [avoid for avoid, *_ in TERMS]


#: A ``{term}`` role; its target (``<Softmax (归一化指数函数)>``) names a glossary entry, not prose.
TERM_ROLE = re.compile(r"\{term\}`(?:[^`<]*<([^`>]+)>|([^`]+))`")


def _catalogue_texts() -> list[tuple[str, str]]:
    texts = []
    for path in sorted(LOCALE.rglob("*.po")):
        for entry in polib.pofile(str(path)):
            # a message kept as it is (a formula, a name) is not translated prose
            if entry.msgstr and not entry.obsolete and entry.msgstr != entry.msgid:
                prose = TERM_ROLE.sub(lambda m: m.group(0).split("<")[0], entry.msgstr)
                texts.append((str(path.relative_to(LOCALE)), prose))
    return texts


def _json_texts(node: object, where: str = "zh.json") -> list[tuple[str, str]]:
    if isinstance(node, dict):
        return [
            t for k, v in node.items() if k != "//" for t in _json_texts(v, f"{where}:{k[:40]}")
        ]
    if isinstance(node, list):
        return [t for v in node for t in _json_texts(v, where)]
    return [(where, node)] if isinstance(node, str) else []


def _printed_texts() -> list[tuple[str, str]]:
    import nbformat

    texts = []
    for path in sorted(ZH_NOTEBOOKS.rglob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for out in cell.get("outputs", []):
                text = out.get("text") or out.get("data", {}).get("text/plain", "")
                if text:
                    texts.append((str(path.relative_to(ZH_NOTEBOOKS)), "".join(text)))
    return texts


CATALOGUES = _catalogue_texts()
PACKAGE = _json_texts(json.loads(ZH_JSON.read_text(encoding="utf-8")))


@pytest.mark.parametrize(("avoid", "use", "why", "alias"), TERMS, ids=IDS)
def test_catalogues_use_the_term(avoid: str, use: str, why: str, alias: bool) -> None:
    found = [
        (page, text[:80])
        for page, text in CATALOGUES
        if avoid in text and not (alias and page == GLOSSARY.name)
    ]
    assert not found, f"{avoid!r} -> {use!r} ({why}): {found[:8]}"


@pytest.mark.parametrize(("avoid", "use", "why", "alias"), TERMS, ids=IDS)
def test_package_messages_use_the_term(avoid: str, use: str, why: str, alias: bool) -> None:
    found = [(where, text[:80]) for where, text in PACKAGE if avoid in text]
    assert not found, f"{avoid!r} -> {use!r} ({why}): {found[:8]}"


def test_printed_output_uses_the_terms() -> None:
    """What the zh notebooks print comes from the package (zh.json) and the chapters' code."""
    printed = _printed_texts()
    assert len(printed) > 100, len(printed)
    found = [
        (where, avoid, text[:60]) for where, text in printed for avoid, *_ in TERMS if avoid in text
    ]
    assert not found, found[:10]


def test_uptraining_is_continued_training() -> None:
    """ "Uptraining" (GQA's conversion, then more training) is 继续训练 wherever the English says it
    (上训练 is not a word for it; 在…上训练 "train on" is, so this is checked per message)."""
    entries = [
        (path.name, e.msgstr)
        for path in sorted(LOCALE.rglob("*.po"))
        for e in polib.pofile(str(path))
        if e.msgstr and "uptrain" in e.msgid.lower()
    ]
    assert len(entries) >= 3, entries
    assert [(page, text[:60]) for page, text in entries if "继续训练" not in text] == []


def test_every_term_role_of_a_translation_names_a_glossary_entry() -> None:
    """A rename in a translation must not reach a ``{term}`` target: the 中文 build fails on a
    target the glossary does not have (``-W``)."""
    glossary = (REPO / "glossary.md").read_text(encoding="utf-8")
    headwords = {
        line.strip().lower()
        for line in glossary.splitlines()
        if re.fullmatch(r"[A-Z][^()]*? \([^()]+\)\s*", line)
    }
    missing = sorted(
        {
            (path.name, (m.group(1) or m.group(2)).strip())
            for path in LOCALE.rglob("*.po")
            for entry in polib.pofile(str(path))
            for m in TERM_ROLE.finditer(entry.msgstr)
            if (m.group(1) or m.group(2)).strip().lower() not in headwords
        }
    )
    assert len(headwords) > 40 and missing == [], missing


def test_the_glossary_keeps_the_long_names_once() -> None:
    """The aliases a learner will meet elsewhere are named once, in the glossary."""
    text = "\n".join(e.msgstr for e in polib.pofile(str(GLOSSARY)))
    assert "归一化指数函数" in text and "注意力汇" in text


#: "1.7×" used as a Chinese word (快 1.7×, 小 57×): Chinese writes 倍, or a fraction for "N times
#: smaller". A product of sizes (``2 × 2 像素``, ``512 × 256``) is maths and stays.
TIMES_AS_A_WORD = re.compile(r"\d\s?×(?!\s?[\d$\\(A-Za-z_{])")


def test_times_is_written_bei_in_chinese_text() -> None:
    texts = (
        CATALOGUES
        + [(w, t) for w, t in PACKAGE if re.search(r"[\u4e00-\u9fff]", t)]
        + _printed_texts()
    )
    found = [
        (where, m.group(0), text[max(0, m.start() - 20) : m.end() + 10])
        for where, text in texts
        for m in TIMES_AS_A_WORD.finditer(text)
    ]
    assert not found, found[:10]
