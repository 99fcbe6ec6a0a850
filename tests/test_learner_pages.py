"""Learner pages speak to learners: they never mention the project's issues or goals (those belong
in the tracker and in benchmarks/, not in a chapter)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polib
import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted([*(REPO / "chapters").glob("*.ipynb"), *(REPO / "appendix").glob("*.ipynb")])
PAGES = [REPO / name for name in ("intro.md", "glossary.md", "notation.md", "appendix/index.md")]
CATALOGUES = sorted((REPO / "locale" / "zh_CN" / "LC_MESSAGES").glob("[!i]*/*.po"))
PROJECT_WORDS = re.compile(r"\bissues?\b|\bissue's\b|\bgoals?\b", re.IGNORECASE)
#: The words in another sense (chapter 13's football sentence).
ALLOWED = ("scored a late goal",)


def _prose(path: Path) -> str:
    if path.suffix == ".md":
        return path.read_text(encoding="utf-8")
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("path", NOTEBOOKS + PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_learner_pages_never_mention_issues_or_goals(path: Path) -> None:
    text = _prose(path)
    for phrase in ALLOWED:
        text = text.replace(phrase, "")
    found = [m.group(0) for m in PROJECT_WORDS.finditer(text)]
    assert not found, f"{path.name}: {found}"


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_chinese_pages_never_mention_issues(path: Path) -> None:
    found = [e.msgstr[:80] for e in polib.pofile(str(path)) if re.search(r"issue", e.msgstr, re.I)]
    assert not found, found
