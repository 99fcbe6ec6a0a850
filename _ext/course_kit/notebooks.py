"""A chapter notebook as the classroom kit reads it: its cells' roles, and its learner copy.

A chapter follows the chapter standard (``tests/test_course_structure.py``):

* an exercise is a code cell tagged ``exercise``: a stub the learner fills, ending with a
  ``chNN.check_*`` call;
* its worked solution is the code cell tagged ``solution`` (and ``hide-cell``) right after it.
  Older chapters wrote the solution as a Markdown ``{admonition} Solution`` block instead; both
  forms are recognised, so a chapter is covered whichever form it uses;
* a live widget is a code cell tagged ``widget`` (older chapters: a code cell whose output is a
  widget view).

The learner copy (:func:`learner_copy`) drops every solution (cells and Markdown blocks) and
clears the outputs of the exercise cells; everything else, including the ``check_*`` calls and the
outputs of the teaching cells, stays. A learner opens it in plain JupyterLab, not on the site, so
its Markdown is rewritten for Jupyter (:func:`course_kit.myst.myst_to_markdown`): the answers of
"Check your understanding" become closed ``<details>``, citations ``(Author, year)``, glued
numbers the values the notebook's outputs recorded, links to
other chapters their learner copies; and a sentence that points at the left-out solutions ("in the
hidden cell below each exercise") is replaced by one saying where they are
(:func:`drop_solution_pointers`).

>>> nb = {"cells": [
...     {"cell_type": "markdown", "metadata": {}, "source": "### Exercise 1: dot"},
...     {"cell_type": "code", "metadata": {"tags": ["exercise"]},
...      "source": "def f(): ...\\ncheck(f)",
...      "outputs": [{"output_type": "stream", "name": "stdout", "text": "not yet"}],
...      "execution_count": 7},
...     {"cell_type": "code", "metadata": {"tags": ["hide-cell", "solution"]},
...      "source": "def f_solution(): return 1", "outputs": [], "execution_count": 8},
... ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
>>> [c["source"][:3] for c in learner_copy(nb)["cells"]]
['###', 'def']
>>> learner_copy(nb)["cells"][1]["outputs"]
[]
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

Notebook = dict[str, Any]
Cell = dict[str, Any]

#: Opening line of a Markdown block that holds a worked solution (MyST admonition or dropdown).
SOLUTION_OPENING = re.compile(
    r"^\s*(`{3,}|~{3,}|:{3,})\s*\{(admonition|dropdown)\}\s*(Solution|Worked solution|解答)\b", re.I
)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


#: A chapter that is still a stub says so (tests/test_course_structure.py skips it too).
PLACEHOLDER = "(This chapter is being written.)"


def is_placeholder(nb: Notebook) -> bool:
    return any(PLACEHOLDER in source(c) for c in nb.get("cells", []))


def read_notebook(path: Path) -> Notebook:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write_notebook(nb: Notebook, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def source(cell: Cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def tags(cell: Cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def headings(cell: Cell) -> list[tuple[int, str]]:
    """(level, text) of the Markdown headings of a cell, outside code fences."""
    if cell.get("cell_type") != "markdown":
        return []
    found, fence = [], None
    for line in source(cell).splitlines():
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1).startswith(fence):
                fence = None
            continue
        h = HEADING.match(line) if fence is None else None
        if h:
            found.append((len(h.group(1)), h.group(2)))
    return found


def is_solution_markdown(cell: Cell) -> bool:
    """A Markdown cell that *is* a worked solution (it opens with a Solution admonition)."""
    if cell.get("cell_type") != "markdown":
        return False
    text = source(cell).lstrip()
    return bool(text) and bool(SOLUTION_OPENING.match(text.splitlines()[0]))


def is_solution(cell: Cell) -> bool:
    return "solution" in tags(cell) or is_solution_markdown(cell)


def exercise_flags(nb: Notebook) -> list[bool]:
    """For each cell: is it an exercise stub? Tag ``exercise``; or (older chapters) a code cell
    that calls a ``check_*`` checker and is followed directly by a solution."""
    cells = nb["cells"]
    flags = []
    for i, cell in enumerate(cells):
        is_ex = "exercise" in tags(cell)
        if not is_ex and cell.get("cell_type") == "code" and not is_solution(cell):
            following = cells[i + 1] if i + 1 < len(cells) else None
            is_ex = "check_" in source(cell) and following is not None and is_solution(following)
        flags.append(is_ex)
    return flags


def is_widget(cell: Cell) -> bool:
    if cell.get("cell_type") != "code":
        return False
    if "widget" in tags(cell):
        return True
    return any(WIDGET_VIEW in out.get("data", {}) for out in cell.get("outputs", []))


def strip_solution_blocks(text: str) -> str:
    """Markdown without any fenced ``{admonition} Solution`` / ``{dropdown} Solution`` block.

    >>> strip_solution_blocks("Q?\\n````{admonition} Solution\\n:class: dropdown\\nA\\n````\\nNext")
    'Q?\\nNext'
    """
    out: list[str] = []
    skipping: str | None = None
    for line in text.splitlines():
        if skipping is not None:
            stripped = line.strip()
            if (
                stripped
                and stripped == skipping[0] * len(stripped)
                and len(stripped) >= len(skipping)
            ):
                skipping = None
            continue
        m = SOLUTION_OPENING.match(line)
        if m:
            skipping = m.group(1)
            continue
        out.append(line)
    return "\n".join(out)


def solution_texts(nb: Notebook) -> list[str]:
    """The text of every solution in a chapter (whole cells, and blocks inside Markdown cells)."""
    texts = []
    for cell in nb["cells"]:
        if is_solution(cell):
            texts.append(source(cell))
        elif cell.get("cell_type") == "markdown":
            text = source(cell)
            kept = strip_solution_blocks(text)
            if kept != text.rstrip("\n") and kept != text:
                texts.append(text)
    return texts


#: Where the solutions are, said once in a learner copy in place of the sentences that pointed at
#: the hidden cells (:func:`drop_solution_pointers`).
SOLUTIONS_ELSEWHERE = {
    "en": "This learner copy leaves the worked solutions out: your teacher has them, and the "
    "book's website shows each one under its exercise.",
    "zh": "这份学员版不含参考答案：老师那里有，本书网站上每道练习下面也有。",
}
_SENTENCE_END = {"en": re.compile(r"(?<=[.!?])\s+(?=[A-Z*`(])"), "zh": re.compile(r"(?<=[。！？])")}


def _points_at_solutions(sentence: str, lang: str) -> bool:
    if lang == "zh":
        return "答案" in sentence and any(w in sentence for w in ("隐藏", "名字", "它的答案"))
    low = sentence.lower()
    return "solution" in low and any(
        w in low for w in ("hidden", "names", "open its solution", "click")
    )


def join_lines(text: str, lang: str) -> str:
    """One line: a line break is a space, except between two Chinese characters."""
    if lang == "en":
        return re.sub(r"\s*\n\s*", " ", text)
    return re.sub(r"\s*\n\s*", lambda m: "" if _cjk_around(text, m.start(), m.end()) else " ", text)


def _cjk_around(text: str, start: int, end: int) -> bool:
    before, after = text[start - 1 : start], text[end : end + 1]
    return bool(re.match(r"[^\x00-\x7f]", before) or re.match(r"[^\x00-\x7f]", after))


def drop_solution_pointers(text: str, lang: str = "en", *, note: bool = True) -> tuple[str, bool]:
    """``text`` without the sentences that point at solutions the learner copy leaves out; the
    first such paragraph gets :data:`SOLUTIONS_ELSEWHERE` in their place (if ``note``). Returns the
    text and whether a sentence was dropped. Code fences are left alone.

    >>> text = "Replace `...`. Worked solutions are in the hidden cell (click\\nto show it)."
    >>> drop_solution_pointers(text, note=False)
    ('Replace `...`.', True)
    >>> drop_solution_pointers("请先尝试每道练习，再打开它的答案。然后运行。", "zh")[0]
    '这份学员版不含参考答案：老师那里有，本书网站上每道练习下面也有。然后运行。'
    """
    lang = "zh" if lang.startswith("zh") else "en"
    paragraphs = re.split(r"(\n\s*\n)", text)
    dropped = False
    in_fence = False
    for k in range(0, len(paragraphs), 2):
        para = paragraphs[k]
        fences = len(re.findall(r"^\s*(?:`{3,}|~{3,})", para, re.M))
        if in_fence or fences:
            in_fence = in_fence != (fences % 2 == 1)
            continue
        joined = join_lines(para.strip(), lang)
        sentences = [x for x in _SENTENCE_END[lang].split(joined) if x]
        kept = [x for x in sentences if not _points_at_solutions(x, lang)]
        if len(kept) == len(sentences):
            continue
        if note and not dropped:
            first = next(i for i, x in enumerate(sentences) if _points_at_solutions(x, lang))
            kept.insert(min(first, len(kept)), SOLUTIONS_ELSEWHERE[lang])
        dropped = True
        paragraphs[k] = (" " if lang == "en" else "").join(kept)
    return "".join(paragraphs), dropped


def learner_copy(
    nb: Notebook,
    *,
    language: str = "en",
    include_root: Path | None = None,
    doc_link: Any = None,
) -> Notebook:
    """The learner's edition of a chapter: solutions removed, exercise outputs cleared, Markdown
    rewritten for plain Jupyter (``language`` of the notebook's text; ``include_root``: the folder
    of the chapters, for ``{literalinclude}``; ``doc_link``: a ``{doc}`` role's text -> Markdown).
    """
    from course_kit.myst import glued_values, myst_to_markdown

    glued = glued_values(nb)  # {glue} roles show these values: no kernel reads them in Jupyter
    flags = exercise_flags(nb)
    pointer_replaced = False
    out = copy.deepcopy(nb)
    cells = []
    for cell, is_ex in zip(out["cells"], flags, strict=True):
        if is_solution(cell):
            continue
        if cell.get("cell_type") == "markdown":
            text = strip_solution_blocks(source(cell))
            if not text.strip():
                continue
            text, dropped = drop_solution_pointers(text, language, note=not pointer_replaced)
            pointer_replaced = pointer_replaced or dropped
            extra = {"doc_link": doc_link} if doc_link is not None else {}
            cell["source"] = myst_to_markdown(
                text, include_root=include_root, language=language, glued=glued, **extra
            )
        if is_ex and cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
            cell_tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if "exercise" not in cell_tags:  # older chapters: mark it, as the standard does
                cell_tags.append("exercise")
        cells.append(cell)
    if str(language).lower().startswith("zh"):
        first_code = next((i for i, c in enumerate(cells) if c.get("cell_type") == "code"), 0)
        cells.insert(first_code, _language_cell())
    out["cells"] = cells
    out.setdefault("metadata", {})["course_edition"] = "learner"
    return out


#: The first code cell of a 中文 learner copy: importing course_utils changes no setting, so the
#: copy says which language its figures, widgets and checkers speak.
SET_CHINESE = (
    "from course_utils.i18n import set_language\n"
    "\n"
    'set_language("zh")  # 图中文字、小部件和检查器的反馈都用中文'
)


def _language_cell() -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {"tags": ["language"]},
        "outputs": [],
        "source": SET_CHINESE,
    }


def cell_names(source: str) -> tuple[set[str], set[str]] | None:
    """(names a cell's code binds at top level, global names it reads anywhere); None if it
    does not parse. IPython lines (``%...``, ``!...``) are left out."""
    import symtable

    code = "\n".join(
        line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))
    )
    try:
        top = symtable.symtable(code, "<cell>", "exec")
    except SyntaxError:
        return None
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()} | {
        t.get_name() for t in top.get_children()
    }  # def and class
    read: set[str] = set()
    tables = [top]
    while tables:
        table = tables.pop()
        for s in table.get_symbols():
            referenced = s.is_referenced()
            if referenced and (table is top or s.is_global()):
                read.add(s.get_name())
        tables.extend(table.get_children())
    return bound, read
