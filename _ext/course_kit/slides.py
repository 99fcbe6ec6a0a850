"""Build a reveal.js deck from a chapter notebook (a temporary copy; the chapter is never changed).

Slide boundaries come from the chapter itself:

* a Markdown cell that opens with a ``#`` or ``##`` heading starts a new slide; ``###`` starts a
  sub-slide (reached with the same arrow keys: the deck navigates linearly);
* a run of cells too long for one 1280x720 slide is cut into sub-slides (an estimate in lines,
  :data:`SLIDE_LINES`); a slide that still overflows is scaled down in the browser to fit;
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
from course_kit.myst import myst_to_markdown
from course_kit.notebooks import (
    Notebook,
    headings,
    is_solution,
    is_widget,
    read_notebook,
    source,
    strip_solution_blocks,
    tags,
)

TEMPLATES = Path(__file__).parent / "templates"
#: Lines (of about 90 characters) that fit on one slide before the deck starts a sub-slide.
SLIDE_LINES = 22
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


def _estimate_lines(cell: dict[str, Any]) -> int:
    text = source(cell)
    lines = sum(max(1, len(line) // 90 + 1) for line in text.splitlines()) if text else 0
    if cell.get("cell_type") == "markdown":
        return lines
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


def _notes_cell(notes: list[lesson_plan.Note], index: int) -> dict[str, Any]:
    by_kind: dict[str, list[str]] = {}
    for n in notes:
        by_kind.setdefault(n.kind, []).append(n.text)
    parts = []
    for kind, texts in by_kind.items():
        parts.append(f"**{kind}**\n\n" + "\n".join(f"- {t}" for t in texts))
    return {
        "cell_type": "markdown",
        "id": f"cu-speaker-notes-{index}",
        "metadata": {"slideshow": {"slide_type": "notes"}},
        "source": "\n\n".join(parts),
    }


def deck_notebook(nb: Notebook, notes: list[lesson_plan.Note] | None = None) -> Notebook:
    """A copy of ``nb`` with slide types, speaker notes and deck-friendly Markdown."""
    deck = copy.deepcopy(nb)
    cells = deck["cells"]
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
    used = 0
    for i, cell in enumerate(cells):
        meta = cell.setdefault("metadata", {})
        explicit = meta.get("slideshow", {}).get("slide_type")
        cell_tags = tags(cell)
        if is_solution(cell) or cell_tags & SKIP_TAGS:
            meta.setdefault("slideshow", {})["slide_type"] = "skip"
            explicit = "skip"
        if cell["cell_type"] == "markdown":
            cell["source"] = myst_to_markdown(strip_solution_blocks(source(cell)))
        if cell["cell_type"] == "code":
            # A widget is shown without the code that builds it: on a projector the widget
            # needs the room (the code is on the chapter page).
            if cell_tags & NO_INPUT_TAGS or is_widget(cell):
                meta["transient"] = {"remove_source": True}
            if cell_tags & NO_OUTPUT_TAGS:
                cell["outputs"] = []
            alt = meta.get("mystnb", {}).get("image", {}).get("alt")
            for output in cell.get("outputs", []):
                if alt and "image/png" in output.get("data", {}):
                    output.setdefault("metadata", {}).setdefault("image/png", {})["alt"] = alt
        if explicit is None:
            first = source(cell).lstrip().splitlines()[:1]
            level = 0
            if cell["cell_type"] == "markdown" and first:
                m = re.match(r"^(#{1,6})\s", first[0])
                level = len(m.group(1)) if m else 0
            size = _estimate_lines(cell)
            if 1 <= level <= 2:
                slide_type, used = "slide", size
            elif level == 3 or (used and used + size > SLIDE_LINES):
                slide_type, used = "subslide", size
            else:
                slide_type, used = "-", used + size
            meta.setdefault("slideshow", {})["slide_type"] = slide_type
        elif explicit in {"slide", "subslide"}:
            used = _estimate_lines(cell)
        out_cells.append(cell)
        if i in attached:
            out_cells.append(_notes_cell(attached[i], i))
    deck["cells"] = out_cells
    return deck


def chapter_title(nb: Notebook, fallback: str) -> str:
    for cell in nb["cells"]:
        for level, text in headings(cell):
            if level == 1:
                return text
    return fallback


def build_deck(
    notebook: Path,
    out_dir: Path,
    plan: Path | None = None,
    *,
    static_prefix: str = "../_static/",
    language: str = "en",
) -> DeckInfo:
    """Write ``out_dir/<stem>.slides.html``; return what it holds."""
    import nbformat
    from nbconvert import SlidesExporter
    from traitlets.config import Config

    nb = read_notebook(notebook)
    notes = lesson_plan.read_plan(plan) if plan else []
    deck_nb = deck_notebook(nb, notes)
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
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{notebook.stem}.slides.html").write_text(body, encoding="utf-8")
    slides = sum(
        1
        for c in deck_nb["cells"]
        if c["metadata"].get("slideshow", {}).get("slide_type") in {"slide", "subslide"}
    )
    n_notes = sum(
        1
        for c in deck_nb["cells"]
        if c["metadata"].get("slideshow", {}).get("slide_type") == "notes"
    )
    widgets = sum(1 for c in deck_nb["cells"] if is_widget(c))
    return DeckInfo(notebook.stem, title, max(1, slides), n_notes, widgets)


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
