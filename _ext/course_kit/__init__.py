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
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

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


def build_learner_copies(repo: Path, site: Path, chapters: list[Path]) -> tuple[list[Path], Path]:
    """Write ``site/learner/<stem>.learner.ipynb`` for each chapter and the zip of them all."""
    out = site / LEARNER_DIR
    written = []
    for nb_path in chapters:
        target = out / learner_name(nb_path.stem)
        write_notebook(learner_copy(read_notebook(nb_path)), target)
        written.append(target)
    zip_path = out / ZIP_NAME
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in written:
            zf.write(path, f"attention-step-by-step/chapters/{path.name}")
        for extra in ("requirements.txt", "runtime.txt", "pyproject.toml"):
            if (repo / extra).is_file():
                zf.write(repo / extra, f"attention-step-by-step/{extra}")
        zf.writestr(
            "attention-step-by-step/README.txt",
            "Learner copies of 'Attention, step by step' (solutions removed).\n"
            "The notebooks import course_utils: install the course's environment first, from a\n"
            "copy of the repository (pip install -r requirements.txt), or open them on your\n"
            "class's JupyterHub, where it is installed. Then: jupyter lab chapters\n",
        )
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
    report.learner, report.zip_path = build_learner_copies(repo, site, chapters)
    for nb_path in chapters:
        plan = repo / "instructor" / f"{nb_path.stem}.md"
        report.decks.append(build_deck(nb_path, site / SLIDES_DIR, plan, language=language))
    index = index_page(report.decks, title, language=language)
    (site / SLIDES_DIR / "index.html").write_text(index, encoding="utf-8")
    (site / SLIDES_DIR / "decks.json").write_text(
        json.dumps([d.__dict__ for d in report.decks], indent=1, ensure_ascii=False),
        encoding="utf-8",
    )
    return report
