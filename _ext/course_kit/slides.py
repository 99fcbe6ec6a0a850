"""Build a reveal.js deck from a chapter notebook (a temporary copy; the chapter is never changed).

Slide boundaries come from the chapter itself:

* a Markdown cell that opens with a ``#`` or ``##`` heading starts a new slide; ``###`` starts a
  sub-slide (reached with the same arrow keys: the deck navigates linearly);
* a slide is made to be read by a room (body text 26 px, code 19.5 px at 1280x720): it keeps the
  heading, one lead sentence, lists, tables, display maths, figures, widgets, bold-led items
  (exercises, questions) and code of at most :data:`CODE_LINES` lines; the section's prose goes
  to the slide's speaker notes (:func:`split_for_slide`), so every slide has notes; the set-up
  cell (imports) and exercise stubs are not slides; a widget or a figure gets its own slide;
* a run of cells too long for one 1280x720 slide is cut into sub-slides (an estimate in lines,
  :data:`SLIDE_LINES`; a long list or table is cut between items or rows); a slide that still
  overflows is scaled down in the browser to fit;
* a cell's own ``slideshow.slide_type`` metadata (Jupyter's slideshow editor) always wins;
* left out: solution cells and Markdown solution blocks, cells tagged ``slides-skip`` or
  ``remove-cell``; inputs tagged ``hide-input``/``remove-input`` and outputs tagged
  ``hide-output``/``remove-output`` are dropped; a widget cell shows the widget, not its code.

MyST syntax that nbconvert does not know is rewritten for the deck (:mod:`course_kit.myst`):
``{term}`X (中)``` becomes ``X (中)``, ``{cite:p}`key``` becomes ``(Author et al., year)``,
admonitions become block quotes, dropdowns become ``<details>``.

Speaker notes (press ``s`` in a deck) come from the chapter's lesson plan,
``instructor/NN_<stem>.md`` (see :mod:`course_kit.lesson_plan`).

The widget runtime of the decks is :func:`widget_runtime`: one place to change.
"""

from __future__ import annotations

import copy
import html
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course_kit import lesson_plan
from course_kit.myst import glued_values, myst_to_markdown
from course_kit.notebooks import (
    Notebook,
    headings,
    is_solution,
    is_widget,
    join_lines,
    read_notebook,
    source,
    strip_solution_blocks,
    tags,
)

TEMPLATES = Path(__file__).parent / "templates"
#: Lines (of about 90 characters) that fit on one slide before the deck starts a sub-slide.
SLIDE_LINES = 24
#: Fewest slides a chapter's deck should have (a lesson's worth: 15-30 slides).
MIN_SLIDES = 15
MATHJAX = "course_vendor/mathjax/tex-mml-chtml.js"
#: JupyterLab's notebook CSS (nbconvert's lab template), one copy for all decks, under _static/.
LAB_CSS = "course_kit/jupyterlab.css"

#: The widget runtime the decks load, as ``{path under _static/: {attribute: value}}`` in load
#: order: the site's own anywidget loader (``_ext/course_site``, ``LOADER``), a plain script that
#: renders every saved widget view on any page nbconvert or myst-nb wrote.
WIDGET_RUNTIME: dict[str, dict[str, str]] = {"course/widget_loader.js": {}}

SKIP_TAGS = {"slides-skip", "remove-cell"}
NO_INPUT_TAGS = {"hide-input", "remove-input"}
NO_OUTPUT_TAGS = {"hide-output", "remove-output"}


def other_edition(language: str, filename: str) -> dict[str, str]:
    """The same file of the slides folder in the other edition: English decks are in ``slides/``,
    the 中文 ones in ``zh/slides/`` (link, its ``lang`` and the edition's name).

    >>> other_edition("en", "index.html")["href"], other_edition("zh-CN", "a.slides.html")["href"]
    ('../zh/slides/index.html', '../../slides/a.slides.html')
    """
    if language.lower().startswith("zh"):
        return {"href": f"../../slides/{filename}", "lang": "en", "name": "English"}
    return {"href": f"../zh/slides/{filename}", "lang": "zh-CN", "name": "中文"}


def widget_runtime() -> list[dict[str, Any]]:
    """Scripts (relative to ``_static/``) that make the decks' widgets live, in load order."""
    return [{"src": src, "attrs": dict(attrs)} for src, attrs in WIDGET_RUNTIME.items()]


# ------------------------------------------------------------------------------------------
# The deck's copy of the notebook
# ------------------------------------------------------------------------------------------


#: Characters of body text on one line of a slide (26 px on 1280 px; a CJK character counts 2).
LINE_CHARS = 76
#: Lines of printed output kept on a slide (the rest: "..."; the full output is on the page).
OUTPUT_LINES = 12


def _closed(text: str) -> str:
    """``text`` as a slide first shows it: a ``<details>`` block is its summary line."""
    # Three lines: the summary is a button with margins around it.
    return re.sub(r"<details>\s*(<summary>.*?</summary>).*?</details>", r"\1\n\n", text, flags=re.S)


def _width(text: str) -> int:
    return sum(2 if ord(ch) > 0x2E80 else 1 for ch in text)


def _line_count(line: str) -> int:
    """Lines of a slide one Markdown line fills; a table row counts at least two (its cells wrap
    in their narrow columns)."""
    lines = max(1, -(-_width(line) // LINE_CHARS))
    return (
        max(2, lines)
        if line.lstrip().startswith("|") and not re.match(r"^\|[-:| ]+\|$", line.strip())
        else lines
    )


def _estimate_lines(cell: dict[str, Any]) -> int:
    text = source(cell)
    if cell.get("cell_type") == "markdown":
        text = _closed(text)
        lines = 1  # the margins of a block
        for line in text.splitlines():
            lines += _line_count(line)
            if re.match(r"^#{1,2}\s", line):
                lines += 1  # a big heading and its margin
        return lines
    lines = sum(max(1, len(line) // 100 + 1) for line in text.splitlines()) if text else 0
    if (cell.get("metadata", {}).get("transient") or {}).get("remove_source"):
        lines = 0
    lines += 1
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if out.get("output_type") == "stream":
            lines += min(
                30,
                out.get("text", "").count("\n") + 1
                if isinstance(out.get("text"), str)
                else len(out.get("text", [])),
            )
        elif "application/vnd.jupyter.widget-view+json" in data:
            lines += 16
        elif "image/png" in data or "image/svg+xml" in data:
            lines += 14
        elif "text/html" in data:
            lines += 6
        elif "text/plain" in data:
            lines += min(10, "".join(data["text/plain"]).count("\n") + 1)
    return lines


@dataclass
class DeckInfo:
    stem: str
    title: str
    slides: int
    notes: int
    widgets: int


def _widget_classes(cell: dict[str, Any]) -> set[str]:
    return set(re.findall(r"\b([A-Z][A-Za-z0-9]+)\(", source(cell)))


#: Longest code cell shown on a slide (lines); a longer one shows only its output (the code is on
#: the chapter page, and the notes say so).
CODE_LINES = 10
#: Longest lead sentence kept on a slide (characters); the rest of a section's prose goes to the
#: speaker notes.
LEAD_CHARS = 220
#: Words of the notes, per language.
NOTES_TEXT = {
    "en": {
        "code": "The code of this step is on the chapter page.",
        "exercise": "Learners do this exercise in their notebook; its checker names their mistake.",
        "widget": "Ask the room to predict what will change, then move the control.",
        "output": "Walk through the code, then read the result aloud before moving on.",
        "figure": "Let the room read the figure first: what is on each axis?",
        "text": "Go through the points on the slide; the chapter page has the full text.",
    },
    "zh": {
        "code": "这一步的代码在本章的网页上。",
        "exercise": "学员在自己的笔记本里做这道练习；检查器会指出他们的错误。",
        "widget": "先请大家预测会发生什么变化，再拖动控件。",
        "output": "先讲一遍代码，再把结果念出来，然后继续。",
        "figure": "先让大家读图：每条坐标轴表示什么？",
        "text": "逐条讲解幻灯片上的要点；完整的文字在本章的网页上。",
    },
}
#: A lesson-plan section's name in the notes, per language.
PLAN_LABELS_ZH = {en: zh for zh, en in lesson_plan.PLAN_SECTIONS_ZH.items()}


def _notes_cell(parts: list[str], index: int) -> dict[str, Any]:
    return {
        "cell_type": "markdown",
        "id": f"cu-speaker-notes-{index}",
        "metadata": {"slideshow": {"slide_type": "notes"}},
        "source": "\n\n".join(parts),
    }


def _plan_notes(notes: list[lesson_plan.Note], lang: str) -> list[str]:
    by_kind: dict[str, list[str]] = {}
    for n in notes:
        by_kind.setdefault(n.kind, []).append(n.text)
    label = (lambda k: PLAN_LABELS_ZH.get(k, k)) if lang == "zh" else (lambda k: k)
    return [
        f"**{label(kind)}**\n\n" + "\n".join(f"- {t}" for t in texts)
        for kind, texts in by_kind.items()
    ]


def _blocks(markdown: str) -> list[str]:
    """Markdown split at blank lines; a fenced block (code, maths, ``<details>``) whole; a heading
    on its own."""
    blocks: list[str] = []
    current: list[str] = []
    fence: str | None = None  # what closes the open fenced block
    for line in markdown.splitlines():
        stripped = line.strip()
        if fence is None and re.match(r"^#{1,6}\s", line):
            if current:
                blocks.append("\n".join(current))
            blocks.append(line)
            current = []
            continue
        if fence is None and not stripped:
            if current:
                blocks.append("\n".join(current))
            current = []
            continue
        current.append(line)
        if fence is None:
            opener = re.match(r"^(`{3,}|~{3,}|:{3,}|\$\$|<details)", stripped)
            if opener:
                closer = "</details>" if opener.group(1) == "<details" else opener.group(1)
                one_line = len(stripped) > len(opener.group(1)) and stripped.endswith(closer)
                fence = None if one_line else closer
        elif stripped.startswith(fence) or (fence == "</details>" and stripped.endswith(fence)):
            fence = None
    if current:
        blocks.append("\n".join(current))
    return blocks


def _lead(paragraph: str, lang: str, clause: bool = False) -> str:
    """The first sentence of a paragraph, at most :data:`LEAD_CHARS` characters (else nothing);
    with ``clause``, a sentence too long is cut after its first clause (``:`` or ``;``).

    >>> long = "Write `f(x)` for one row: `x` has shape $(T,)$; return " + "more " * 50 + "."
    >>> _lead(long, "en")
    ''
    >>> _lead(long, "en", clause=True)
    'Write `f(x)` for one row:'
    """
    text = join_lines(paragraph.strip(), lang)
    end = re.search(r"[.!?](?=\s)|[。！？]", text)
    sentence = text[: end.end()] if end else text
    if len(sentence) <= LEAD_CHARS:
        return sentence
    # A clause ends at ":" or ";" outside maths and code (where they are part of a formula).
    plain = re.sub(r"\$[^$]*\$|`[^`]*`", lambda m: "_" * len(m.group(0)), sentence)
    cut = re.search(r"[:;](?=\s)|[：；]", plain[:LEAD_CHARS]) if clause else None
    return sentence[: cut.end()] if cut else ""


#: A chapter's prerequisites line, in either edition.
_PREREQUISITES = ("**Prerequisites:**", "**预备知识：**")


def _folded_or_aside(block: str, first: str) -> bool:
    r"""A folded box (a directive with ``:class: dropdown``: an answer) or the prerequisites line.

    >>> answer = "````{admonition} Answer\n:class: dropdown\nYes.\n````"
    >>> _folded_or_aside(answer, answer.splitlines()[0])
    True
    >>> question = "**Predict, then move it.** Which key wins?"
    >>> _folded_or_aside(question, question)
    False
    """
    fenced = re.match(r"^(`{3,}|~{3,}|:{3,})\{", first)
    dropdown = bool(fenced) and re.search(r"^:class:.*\bdropdown\b", block, re.M) is not None
    return dropdown or first.startswith(_PREREQUISITES)


def split_for_slide(markdown: str, lang: str = "en", lead: bool = True) -> tuple[str, list[str]]:
    r"""``(what the slide shows, what goes to the speaker notes)`` of a Markdown cell: headings,
    lists, tables, display maths, images, boxes, code and paragraphs that open in bold (an
    exercise, a question) stay on the slide; other prose paragraphs and folded answers
    (``<details>``) go to the notes, except the first sentence of the first prose paragraph
    when ``lead`` (the slide's one line).

    >>> slide, notes = split_for_slide(
    ...     "## Scores\n\nA score says how well. It is a dot product.\n\n$$s = q k$$\n\nMore."
    ... )
    >>> print(slide)
    ## Scores
    <BLANKLINE>
    A score says how well.
    <BLANKLINE>
    $$s = q k$$
    >>> notes
    ['A score says how well. It is a dot product.', 'More.']
    """
    slide: list[str] = []
    notes: list[str] = []
    first_lead = lead
    blocks = _blocks(markdown)
    firsts = [b.lstrip().splitlines()[0] if b.strip() else "" for b in blocks]
    prose = [
        bool(f)
        and not re.match(r"^(#{1,6}\s|[-*+]\s|\d+[.)]\s|\||!\[|>|<|`{3}|~{3}|\$\$|\\\[|\*\*)", f)
        for f in firsts
    ]
    for k, (block, first, is_prose) in enumerate(zip(blocks, firsts, prose, strict=True)):
        if slide and re.match(r"^#{1,6}\s", first):
            # A later section with nothing but prose under its heading keeps a lead sentence: its
            # heading would otherwise stand alone on the slide.
            rest = prose[k + 1 :]
            alone = next(
                (i for i, f in enumerate(firsts[k + 1 :]) if re.match(r"^#", f)), len(rest)
            )
            lead = first_lead and all(rest[:alone])
        if first.startswith("<details") or _folded_or_aside(block, first):
            # An answer (the teacher reveals it from the notes), or the page's prerequisites line
            # (a reader's way in, not a slide).
            notes.append(block.strip())
            continue
        if not is_prose:
            slide.append(block)
            continue
        notes.append(block.strip())
        if lead:
            # Under a heading that would stand alone, a long first sentence gives its first clause.
            headings_only = bool(slide) and all(re.match(r"^#{1,6}\s", b) for b in slide)
            sentence = _lead(block, lang, clause=headings_only)
            if sentence:
                slide.append(sentence)
            lead = False
    return "\n\n".join(slide), notes


def _chunks(markdown: str, slide_lines: int = SLIDE_LINES) -> list[str]:
    """A slide's Markdown cut into pieces that each fit a slide of ``slide_lines`` lines: blocks
    stay whole, except a long list or table, which is cut between items or rows (a table's header is
    repeated). A heading stays with what follows it."""
    pieces: list[str] = []
    for block in _blocks(markdown):
        lines = block.splitlines()
        est = sum(_line_count(x) for x in _closed(block).splitlines())
        if est <= slide_lines - 4 or not lines:
            pieces.append(block)
            continue
        if lines[0].lstrip().startswith("|") and len(lines) > 3:  # a table: header, rule, rows
            head, rows = lines[:2], lines[2:]
            per = max(1, (slide_lines - 6) // max(1, est // len(lines)))
            pieces += ["\n".join(head + rows[k : k + per]) for k in range(0, len(rows), per)]
            continue
        items: list[list[str]] = []
        for line in lines:
            if re.match(r"^([-*+]|\d+[.)])\s", line) or not items:
                items.append([line])
            else:
                items[-1].append(line)
        group: list[str] = []
        size = 0
        for item in items:
            n = sum(_line_count(x) for x in _closed("\n".join(item)).splitlines())
            if group and size + n > slide_lines - 4:
                pieces.append("\n".join(group))
                group, size = [], 0
            group += item
            size += n
        if group:
            pieces.append("\n".join(group))

    # A heading (and a lead sentence) goes with the piece after it, if both fit one slide.
    def lines_of(text: str) -> int:
        return sum(_line_count(x) for x in _closed(text).splitlines()) + 2

    merged: list[str] = []
    for piece in pieces:
        head = merged[-1] if merged else ""
        first, *rest = head.split("\n\n") if head else [""]
        starts_with_heading = bool(re.match(r"^#{1,6}\s", first))
        only_lead = len(rest) <= 1 and not any(
            re.match(r"^([-*+|>]|\d+[.)]|\$\$|!\[|`{3})", r) for r in rest
        )
        if starts_with_heading and only_lead and lines_of(head + piece) <= slide_lines:
            merged[-1] += "\n\n" + piece
        else:
            merged.append(piece)
    return merged


def _trim_outputs(cell: dict[str, Any]) -> None:
    """Keep at most :data:`OUTPUT_LINES` lines of each printed output on a slide."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            text = "".join(out.get("text", ""))
            lines = text.splitlines()
            if len(lines) > OUTPUT_LINES:
                out["text"] = "\n".join([*lines[: OUTPUT_LINES - 1], "..."]) + "\n"
        data = out.get("data", {})
        if (
            "text/plain" in data
            and "text/html" not in data
            and not any(k.startswith(("image/", "application/vnd.jupyter.widget")) for k in data)
        ):
            lines = "".join(data["text/plain"]).splitlines()
            if len(lines) > OUTPUT_LINES:
                data["text/plain"] = "\n".join([*lines[: OUTPUT_LINES - 1], "..."])


def _shows(cell: dict[str, Any]) -> str:
    """What a cell puts on its slide: ``widget``, ``figure``, ``output`` (code and a result) or
    ``text``."""
    if is_widget(cell):
        return "widget"
    data = [o.get("data", {}) for o in cell.get("outputs", [])]
    if any("image/png" in d or "image/svg+xml" in d for d in data):
        return "figure"
    return "output" if cell["cell_type"] == "code" else "text"


def _imports_only(code: str) -> bool:
    lines = [
        ln.strip() for ln in code.splitlines() if ln.strip() and not ln.strip().startswith("#")
    ]
    return bool(lines) and all(ln.startswith(("import ", "from ", "%")) for ln in lines)


def deck_notebook(
    nb: Notebook, notes: list[lesson_plan.Note] | None = None, language: str = "en"
) -> Notebook:
    """A copy of ``nb`` made into slides a room can read (:func:`_deck_notebook`), with at least
    :data:`MIN_SLIDES` slides where the chapter has the material: a chapter whose text is compact
    (Chinese says in 14 slides what English says in 16) is cut with a smaller budget of lines per
    slide, two lines at a time, down to ``SLIDE_LINES - 8``: a slide then holds less, never more,
    so it only gets easier to read from the back of the room."""
    for slide_lines in range(SLIDE_LINES, SLIDE_LINES - 9, -2):
        deck = _deck_notebook(nb, notes, language, slide_lines)
        if count_slides(deck) >= MIN_SLIDES:
            break
    return deck


def count_slides(deck: Notebook) -> int:
    """The slides of a deck notebook: the cells that start a slide or a sub-slide (at least 1)."""
    kinds = [c.get("metadata", {}).get("slideshow", {}).get("slide_type") for c in deck["cells"]]
    return max(1, sum(1 for k in kinds if k in {"slide", "subslide"}))


def _deck_notebook(
    nb: Notebook, notes: list[lesson_plan.Note] | None, language: str, slide_lines: int
) -> Notebook:
    """A copy of ``nb`` made into slides a room can read: slide types, Markdown nbconvert renders,
    on each slide its heading, one lead sentence, lists, maths, figures, widgets and short code;
    the section's prose, the lesson plan's notes for it and a word on code left out go to the
    slide's speaker notes, so every content slide has notes (``s`` in a deck)."""
    lang = "zh" if language.startswith("zh") else "en"
    deck = copy.deepcopy(nb)
    cells = deck["cells"]
    glued = glued_values(nb)  # the numbers the text's {glue} roles show
    # Where each note goes: the index of a cell it is attached after.
    heading_cells = [
        (i, t) for i, c in enumerate(cells) if not is_solution(c) for _, t in headings(c)
    ]
    titles = [t for _, t in heading_cells]
    attached: dict[int, list[lesson_plan.Note]] = {}
    first_visible = 0
    for note in notes or []:
        target: int | None = None
        for name in note.widgets:
            target = next(
                (i for i, c in enumerate(cells) if is_widget(c) and name in _widget_classes(c)),
                None,
            )
            if target is not None:
                break
        if target is None:
            for ref in note.refs:
                k = lesson_plan.match_heading(ref, titles)
                if k is not None:
                    target = heading_cells[k][0]
                    break
        attached.setdefault(first_visible if target is None else target, []).append(note)

    out_cells: list[dict[str, Any]] = []
    pending: list[str] = []  # the notes of the slide being filled
    shown: list[str] = []  # what the slide being filled shows: "widget", "figure", "output", "text"

    def flush(index: int) -> None:
        if shown and not pending:  # a slide with nothing to move or plan: a prompt from its kind
            kind = next((k for k in ("widget", "figure", "output") if k in shown), "text")
            pending.append(NOTES_TEXT[lang][kind])
        if pending:
            out_cells.append(_notes_cell(list(pending), len(out_cells)))
        pending.clear()
        shown.clear()

    used = 0
    heading_alone = False  # the slide being filled shows a heading and nothing else yet
    after_widget = False  # the slide being filled ends with a widget: it keeps the slide

    def place(cell: dict[str, Any], index: int, upcoming: int = 0) -> None:
        """Give ``cell`` its slide type (a heading or a full slide starts a new one) and add it.
        ``upcoming``: the size of what follows; a heading that would be parted from it starts a
        new slide with it."""
        nonlocal used, heading_alone, after_widget
        meta = cell.setdefault("metadata", {})
        explicit = meta.get("slideshow", {}).get("slide_type")
        if explicit is None:
            first = source(cell).lstrip().splitlines()[:1]
            level = 0
            if cell["cell_type"] == "markdown" and first:
                m = re.match(r"^(#{1,6})\s", first[0])
                level = len(m.group(1)) if m else 0
            size = _estimate_lines(cell)
            if cell["cell_type"] == "markdown" and not source(cell).strip():
                slide_type = "skip"  # all of it went to the notes
            elif heading_alone and level == 0:
                slide_type, used = "-", used + size  # a heading is never left alone on a slide
            elif 1 <= level <= 2:
                slide_type, used = "slide", size
            elif (
                # a widget or a figure gets the slide (with its heading): large, readable
                (_shows(cell) in {"widget", "figure"} and used > 4 and not heading_alone)
                or after_widget  # and nothing after a widget shares its slide
                or (level == 3 and used > slide_lines // 2)
                or (used and used + size > slide_lines)
                or (level >= 3 and used and used + size + upcoming > slide_lines)
            ):
                slide_type, used = "subslide", size
            else:
                slide_type, used = "-", used + size
            meta.setdefault("slideshow", {})["slide_type"] = slide_type
        elif explicit in {"slide", "subslide"}:
            used = _estimate_lines(cell)
        slide_type = meta["slideshow"]["slide_type"] if "slideshow" in meta else None
        if slide_type in {"slide", "subslide"}:
            flush(index)
        if slide_type != "skip":
            # Headings only (one, or a section's heading and its first sub-heading when the
            # prose between and under them went to the notes): what follows joins the slide.
            is_heading = cell["cell_type"] == "markdown" and bool(
                re.fullmatch(r"(\s*#{1,6}\s[^\n]*\s*)+", source(cell))
            )
            new_slide = slide_type in {"slide", "subslide"}
            heading_alone = is_heading and (new_slide or heading_alone)
        out_cells.append(cell)
        if slide_type != "skip":
            shown.append(_shows(cell))
            after_widget = _shows(cell) == "widget"

    lead = True
    first_code = next((c for c in cells if c["cell_type"] == "code"), None)  # the set-up cell
    for i, cell in enumerate(cells):
        meta = cell.setdefault("metadata", {})
        cell_tags = tags(cell)
        skip = bool(is_solution(cell) or cell_tags & SKIP_TAGS)
        setup = cell is first_code and re.search(r"^(import|from) ", source(cell), re.M)
        if cell["cell_type"] == "code" and (setup or _imports_only(source(cell))):
            skip = skip or not is_widget(cell)  # the imports and set-up: not a slide
        if "exercise" in cell_tags:  # a stub is worked in the notebook, not read off a wall
            skip = True
            pending.append(NOTES_TEXT[lang]["exercise"])
        if skip:
            meta.setdefault("slideshow", {})["slide_type"] = "skip"
            out_cells.append(cell)
        elif cell["cell_type"] == "markdown":
            text = myst_to_markdown(
                strip_solution_blocks(source(cell)), language=language, glued=glued
            )
            if re.match(r"^\s*#{1,6}\s", text):
                lead = True
            before_widget = i + 1 < len(cells) and is_widget(cells[i + 1])
            # Above a widget the slide keeps only the heading: the widget needs the room.
            slide_md, moved = split_for_slide(text, lang, lead=lead and not before_widget)
            lead = lead and not moved
            explicit = meta.get("slideshow", {}).get("slide_type")
            chunks = [slide_md] if explicit else _chunks(slide_md, slide_lines)
            # A "Try it" heading stays with its widget.
            nxt = cells[i + 1] if i + 1 < len(cells) else None
            following = _estimate_lines(nxt) if nxt is not None and is_widget(nxt) else 0
            chunks = chunks or [""]
            for k, chunk in enumerate(chunks):
                part = cell if k == 0 else copy.deepcopy(cell)
                if k:
                    part["id"] = f"{cell.get('id', i)}-{k}"
                    part["metadata"].pop("slideshow", None)
                part["source"] = chunk
                after = chunks[k + 1] if k + 1 < len(chunks) else None
                upcoming = (
                    following if after is None else _estimate_lines({**part, "source": after})
                )
                place(part, i, upcoming)
                if k == 0:
                    pending.extend(moved)
        else:
            # A widget or a figure is shown without the code that builds it: on a projector the
            # picture needs the room and is the point (the code is on the chapter page). So is
            # a long cell.
            long_code = len(source(cell).splitlines()) > CODE_LINES
            if cell_tags & NO_INPUT_TAGS or _shows(cell) in {"widget", "figure"} or long_code:
                meta["transient"] = {"remove_source": True}
            if cell_tags & NO_OUTPUT_TAGS:
                cell["outputs"] = []
            _trim_outputs(cell)
            alt = meta.get("mystnb", {}).get("image", {}).get("alt")
            for output in cell.get("outputs", []):
                if alt and "image/png" in output.get("data", {}):
                    output.setdefault("metadata", {}).setdefault("image/png", {})["alt"] = alt
            place(cell, i)
            if long_code:
                pending.append(NOTES_TEXT[lang]["code"])
        if i in attached:
            pending.extend(_plan_notes(attached[i], lang))
    flush(len(cells))
    deck["cells"] = out_cells
    return deck


def chapter_title(nb: Notebook, fallback: str) -> str:
    r"""The text of the notebook's first ``#`` heading, as a reader sees it: without Markdown's
    backslash escapes (a translated heading keeps ``1\.``, which stops Markdown reading "1." as a
    list; a deck's ``<title>`` and the decks' index show it as plain text).

    >>> chapter_title({"cells": [{"cell_type": "markdown", "source": "# 1\\. 查询、键、值"}]}, "x")
    '1. 查询、键、值'
    """
    for cell in nb["cells"]:
        for level, text in headings(cell):
            if level == 1:
                return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)
    return fallback


def build_deck(
    notebook: Path,
    out_dir: Path,
    plan: Path | None = None,
    *,
    static_prefix: str = "../_static/",
    language: str = "en",
    images: Path | None = None,
) -> DeckInfo:
    """Write ``out_dir/<stem>.slides.html``; return what it holds.

    ``images``: the site's ``_images`` folder (beside ``out_dir``). A figure the chapter's page
    already shows is there, and the deck links to that file instead of holding a second copy.
    """
    import nbformat
    from nbconvert import SlidesExporter
    from traitlets.config import Config

    nb = read_notebook(notebook)
    notes = lesson_plan.read_plan(plan) if plan else []
    deck_nb = deck_notebook(nb, notes, language)
    has_widgets = "widgets" in nb.get("metadata", {}) and any(is_widget(c) for c in nb["cells"])
    title = chapter_title(nb, notebook.stem)
    config = Config()
    config.SlidesExporter.extra_template_basedirs = [str(TEMPLATES)]
    config.SlidesExporter.template_name = "course_reveal"
    config.SlidesExporter.exclude_anchor_links = True  # no "¶" links on a projector
    exporter = SlidesExporter(config=config)
    resources = {
        "deck": {
            "title": myst_to_markdown(title),
            # what the <title> adds after the chapter's title
            "suffix": "（幻灯片）" if language.startswith("zh") else " (slides)",
            "language": language,
            "static": static_prefix,
            "mathjax": MATHJAX,
            "lab_css": LAB_CSS,
            "widgets": has_widgets,
            # MathJax only for a deck with maths (the site's rule: no MathJax on pages without).
            "math": any(
                c["cell_type"] == "markdown" and re.search(r"\$|\\\(|\\\[", source(c))
                for c in deck_nb["cells"]
            ),
            "widget_scripts": widget_runtime(),
            "other_edition": other_edition(language, f"{notebook.stem}.slides.html"),
        }
    }
    # reads() (unlike from_dict) joins the multi-line strings of the JSON into plain strings.
    node = nbformat.reads(json.dumps(deck_nb), as_version=4)
    body, _ = exporter.from_notebook_node(node, resources=resources)
    if images is not None:
        body = link_page_images(body, images)  # the deck sits in slides/, beside _images/
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{notebook.stem}.slides.html").write_text(body, encoding="utf-8")
    slides = count_slides(deck_nb)
    n_notes = sum(
        1
        for c in deck_nb["cells"]
        if c["metadata"].get("slideshow", {}).get("slide_type") == "notes"
    )
    widgets = sum(1 for c in deck_nb["cells"] if is_widget(c))
    return DeckInfo(notebook.stem, title, slides, n_notes, widgets)


#: A PNG written into the page as a data URI (what nbconvert does with a figure).
PNG_DATA_URI = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=\s]+)")


def link_page_images(html: str, images: Path, prefix: str = "../_images") -> str:
    """``html`` with every PNG data URI whose image is in ``images`` replaced by a link to that
    file: the folder where Sphinx writes each figure of the site's pages once, named by the
    SHA-256 of its bytes (myst-nb). A figure the pages do not show stays inline.

    >>> import base64, hashlib, tempfile
    >>> png = b"PNG, say"
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / f"{hashlib.sha256(png).hexdigest()}.png").write_bytes(png)
    >>> uri = "data:image/png;base64," + base64.b64encode(png).decode()
    >>> out = link_page_images(f'<img src="{uri}"><img src="data:image/png;base64,AAAA">', d)
    >>> out.count('src="../_images/'), out.count("data:image/png")  # the second is on no page
    (1, 1)
    """
    import base64
    import hashlib

    def link(m: re.Match[str]) -> str:
        name = f"{hashlib.sha256(base64.b64decode(m.group(1))).hexdigest()}.png"
        return f"{prefix}/{name}" if (images / name).is_file() else m.group(0)

    return PNG_DATA_URI.sub(link, html)


def lab_css() -> str:
    """nbconvert's JupyterLab notebook CSS (light theme), as its lab template would inline it."""
    from jupyter_core.paths import jupyter_path

    for base in jupyter_path("nbconvert", "templates"):
        static = Path(base) / "lab" / "static"
        if (static / "index.css").is_file():
            parts = [static / "index.css", static / "theme-light.css"]
            return "\n".join(p.read_text(encoding="utf-8") for p in parts if p.is_file())
    raise FileNotFoundError("nbconvert's lab template CSS (lab/static/index.css) not found")


#: The words of the slides' index page in the 中文 edition (``language="zh-CN"``).
INDEX_TEXT_ZH = {
    "heading": "幻灯片",
    "intro": "每章一套幻灯片，由该章的笔记本生成。方向键切换幻灯片；<kbd>s</kbd> 打开演讲者视图"
    "（含教案的时间安排和问题）；<kbd>f</kbd> 全屏；<kbd>Esc</kbd> 显示全部幻灯片。交互组件可以直接"
    "操作：用 Tab 键选中控件，再用方向键调节。全部内容离线可用。",
    "back": "返回课程",
}


def index_page(decks: list[DeckInfo], title: str, language: str = "en") -> str:
    """The slides' index page (``slides/index.html``), in English or (``zh-CN``) Chinese.

    >>> "幻灯片" in index_page([], "Course", language="zh-CN")
    True
    """
    zh = INDEX_TEXT_ZH if language.lower().startswith("zh") else None

    def live(d: DeckInfo) -> str:
        if zh:
            return f"，{d.widgets} 个交互组件" if d.widgets else ""
        return f", {d.widgets} live widget{'s' if d.widgets != 1 else ''}" if d.widgets else ""

    count = "（{n} 张幻灯片{live}）" if zh else "({n} slides{live})"
    items = "\n".join(
        f'<li><a href="{html.escape(d.stem)}.slides.html">{html.escape(d.title)}</a> '
        + count.format(n=d.slides, live=live(d))
        + "</li>"
        for d in decks
    )
    if zh:
        return _index_html(
            language, f"{zh['heading']}：{html.escape(title)}", zh["intro"], items, zh["back"]
        )
    return _index_html(
        language,
        f"Slides: {html.escape(title)}",
        "One deck per chapter, built from the chapter's own notebook. Arrow keys move between "
        "slides;\n<kbd>s</kbd> opens the speaker view with the lesson plan's timings and "
        "questions; <kbd>f</kbd> goes\nfull screen; <kbd>Esc</kbd> shows every slide. The widgets "
        "are live: Tab to a control, then use the\narrow keys. Everything works offline.",
        items,
        "Back to the course",
    )


def _index_html(language: str, heading: str, intro: str, items: str, back: str) -> str:
    other = other_edition(language, "index.html")
    switch = (
        '<nav aria-label="Language / 语言"><a href="{href}" lang="{lang}" hreflang="{lang}">'
        "{name}</a></nav>"
    ).format(**{k: html.escape(v, quote=True) for k, v in other.items()})
    return f"""<!DOCTYPE html>
<html lang="{html.escape(language)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="../_static/favicon.svg">
<title>{heading}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 46em; margin: 2em auto; padding: 0 1em;
       line-height: 1.5; color: #222; }}
a {{ color: #0063a0; }}
</style>
</head>
<body>
{switch}
<main>
<h1>{heading}</h1>
<p>{intro}</p>
<ul>
{items}
</ul>
<p><a href="../intro.html">{back}</a></p>
</main>
</body>
</html>
"""
