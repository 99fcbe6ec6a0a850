"""Read a chapter's lesson plan (``instructor/NN_<stem>.md``) and turn it into speaker notes.

The plan's format (CONTRIBUTING.md, "Lesson plans"): sections ``## 45-minute plan`` and
``## 90-minute plan`` (tables ``minutes | activity | cell/widget``), ``## Misconceptions to expect``
and ``## Predict, then move the slider`` (bullet lists, two-column tables or short paragraphs),
``## Answer key``.

How a note finds its slide: the *cell/widget* column of a plan row (or the text of a bullet) names
the chapter's section in double quotes, ``"One score by hand"``, and/or a widget class in
backticks, ```QueryKeyPlane```. A quoted name goes to the slide of the heading it matches
(numbers like "2.1" and markup ignored; exact match first, then prefix, then substring); a widget
name goes to the slide of the code cell that builds that widget. A note that names nothing the
chapter has goes to the first slide, so nothing in the plan is ever lost.

>>> plan = parse_plan('''## 45-minute plan
... | minutes | activity | cell/widget |
... |---|---|---|
... | 0-10 | Hook | "Why a word needs to look" |
... ## Predict, then move the slider
... - `QueryKeyPlane`: which key wins?
... ''')
>>> [(n.refs, n.widgets) for n in plan]
[(['Why a word needs to look'], []), ([], ['QueryKeyPlane'])]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

PLAN_SECTIONS = (
    "45-minute plan",
    "90-minute plan",
    "Misconceptions to expect",
    "Predict, then move the slider",
)
#: The 中文 lesson plans' headings of the same sections (their .po translations), so that the
#: 中文 decks get their speaker notes too.
PLAN_SECTIONS_ZH = {
    "45 分钟教案": "45-minute plan",
    "90 分钟教案": "90-minute plan",
    "预计会出现的误解": "Misconceptions to expect",
    "先预测，再拖动滑块": "Predict, then move the slider",
}
QUOTED = re.compile(r"[\"“]([^\"”]{3,}?)[\"”]")
WIDGET_NAME = re.compile(r"`([A-Z][A-Za-z0-9]+)`")


@dataclass
class Note:
    kind: str  # one of PLAN_SECTIONS
    text: str  # Markdown of the note (a plan row rendered as "minutes: activity", or a bullet)
    refs: list[str] = field(default_factory=list)  # quoted section names
    widgets: list[str] = field(default_factory=list)  # widget class names


def _section_lines(text: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = re.match(r"^##\s+(.*?)\s*$", line)
        if m:
            title = m.group(1)
            current = next((s for s in PLAN_SECTIONS if title.lower().startswith(s.lower())), None)
            current = current or next(
                (en for zh, en in PLAN_SECTIONS_ZH.items() if title.startswith(zh)), None
            )
            if current:
                sections[current] = []
            continue
        if current:
            sections[current].append(line)
    return sections


def _table_row(line: str) -> list[str] | None:
    """The cells of a Markdown table row, or None for a header, a separator or a non-table line."""
    if not line.lstrip().startswith("|"):
        return None
    cols = [c.strip() for c in line.strip().strip("|").split("|")]
    if all(set(c) <= set("-: ") for c in cols):
        return None
    return cols


def _items(lines: list[str]) -> list[str]:
    """A section's items: bullets (with their continuation lines), table rows, or paragraphs.

    Contributors write misconceptions and questions as bullets, as a two-column table, or as short
    paragraphs; all three give one item each.

    >>> lines = ["- one", "  more", "", "| a | b |", "|---|---|", "| x | y |", "", "A paragraph"]
    >>> _items([*lines, "goes on."])
    ['one more', 'x: y', 'A paragraph goes on.']
    """
    items: list[str] = []
    in_table = False
    paragraph_open = False
    for line in lines:
        stripped = line.strip()
        if re.match(r"^[-*]\s+", line):
            items.append(re.sub(r"^[-*]\s+", "", line).strip())
            paragraph_open = False
        elif line.lstrip().startswith("|"):
            cols = _table_row(line)
            if cols is not None and in_table:
                items.append(": ".join(c for c in cols if c))
            in_table = True  # the first row of a table is its header
            paragraph_open = False
        elif not stripped:
            in_table = False
            paragraph_open = False
        elif items and (line.startswith((" ", "\t")) or paragraph_open):
            items[-1] += " " + stripped
        else:
            items.append(stripped)
            paragraph_open = True
    return items


def parse_plan(text: str) -> list[Note]:
    notes: list[Note] = []
    for kind, lines in _section_lines(text).items():
        if kind.endswith("plan"):
            for line in lines:
                cols = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cols) < 3 or not line.lstrip().startswith("|"):
                    continue
                if set(cols[0]) <= set("-: ") or cols[0].lower().startswith("min"):
                    continue
                where = " | ".join(cols[2:])
                notes.append(
                    Note(
                        kind,
                        f"**{cols[0]} min**: {cols[1]}",
                        QUOTED.findall(where),
                        WIDGET_NAME.findall(where),
                    )
                )
        else:
            for item in _items(lines):
                notes.append(Note(kind, item, QUOTED.findall(item), WIDGET_NAME.findall(item)))
    return notes


def read_plan(path: Path) -> list[Note]:
    return parse_plan(Path(path).read_text(encoding="utf-8")) if Path(path).is_file() else []


def normalise(title: str) -> str:
    """Heading text reduced for matching: no markup, no section number, lower case.

    >>> normalise("## 2.1 A first look: the same recipe, a bigger $d_k$")
    'a first look: the same recipe, a bigger d_k'
    """
    t = re.sub(r"^#+\s*", "", title)
    t = re.sub(r"[`*$\\]", "", t)
    t = re.sub(r"^(\d+(\.\d+)*\.?)\s+", "", t)
    return re.sub(r"\s+", " ", t).strip().lower()


def match_heading(ref: str, titles: list[str]) -> int | None:
    """Index of the title that ``ref`` names (exact, then prefix, then substring), or None."""
    r = normalise(ref)
    norm = [normalise(t) for t in titles]
    for test in (
        lambda t: t == r,
        lambda t: t.startswith(r) or (r.startswith(t) and len(t) > 6),
        lambda t: r in t,
    ):
        for i, t in enumerate(norm):
            if t and test(t):
                return i
    return None
