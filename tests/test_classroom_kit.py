"""The classroom kit covers every chapter: lesson plan, learner copy, deck (see also
``tests/browser/test_browser_decks.py`` and ``tests/browser/test_pdf.py``).

Chapters are found in ``chapters/`` at collection time, so a new chapter is covered with no edit
here. Learner copies are built in a temporary folder from the committed notebooks:

* no solution is left in them: no cell tagged ``solution``, no Markdown "Solution" block, and no
  line of any solution's code or text (a line that also occurs outside the solutions excepted);
* exercise cells keep their stub and their ``check_*`` call, with outputs cleared;
* each learner copy runs in a fresh kernel with its exercises unsolved, from its first exercise to
  its end, after every earlier cell that binds a name those cells read (followed back; nbval runs
  the whole chapter, so the slow experiments before the exercises that the exercises do not use
  are not run a second time here), and every exercise's checker reports "not yet right" instead
  of raising.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from course_kit import build_learner_copies
from course_kit.lesson_plan import PLAN_SECTIONS, read_plan
from course_kit.notebooks import (
    exercise_flags,
    is_placeholder,
    is_solution,
    is_widget,
    learner_copy,
    read_notebook,
    solution_texts,
    source,
    strip_solution_blocks,
)

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((REPO / "chapters").glob("*.ipynb"))
IDS = [p.stem for p in CHAPTERS]


def written(path: Path) -> dict:
    """The chapter's notebook; a chapter still marked as being written is skipped."""
    nb = read_notebook(path)
    if is_placeholder(nb):
        pytest.skip(f"{path.name} is still a placeholder")
    return nb


PLAN_HEADINGS = [*PLAN_SECTIONS, "Answer key"]


def _toc_sections_of(file: str) -> list[str]:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))

    def walk(entries: list[dict]) -> list[str]:
        for entry in entries:
            if entry.get("file") == file:
                return [s["file"] for s in entry.get("sections", [])]
            for key in ("chapters", "sections", "parts"):
                found = walk(entry.get(key, []))
                if found:
                    return found
        return []

    return walk(toc.get("parts", []) + toc.get("chapters", []))


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_lesson_plan(path: Path) -> None:
    """instructor/<stem>.md exists, has every section, a timed row per plan, and is in the toc."""
    nb = written(path)
    plan_path = REPO / "instructor" / f"{path.stem}.md"
    assert plan_path.is_file(), f"no lesson plan {plan_path.relative_to(REPO)}"
    text = plan_path.read_text(encoding="utf-8")
    found = re.findall(r"^##\s+(.*?)\s*$", text, flags=re.M)
    missing = [h for h in PLAN_HEADINGS if not any(f.startswith(h) for f in found)]
    assert not missing, f"{plan_path.name}: missing sections {missing}"
    notes = read_plan(plan_path)
    kinds = {n.kind for n in notes}
    assert set(PLAN_SECTIONS) <= kinds, (
        f"{plan_path.name}: empty sections {set(PLAN_SECTIONS) - kinds}"
    )
    n_widgets = sum(is_widget(c) for c in nb["cells"])
    questions = [n for n in notes if n.kind == "Predict, then move the slider"]
    assert len(questions) >= n_widgets, (
        f"{plan_path.name}: {len(questions)} predict-then-move questions for {n_widgets} widgets"
    )
    assert f"instructor/{path.stem}" in _toc_sections_of("instructor_guide"), (
        f"instructor/{path.stem} is not a section of instructor_guide in _toc.yml"
    )


def _long_lines(text: str) -> set[str]:
    return {ln.strip() for ln in text.splitlines() if len(ln.strip()) >= 12}


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_learner_copy_has_no_solution(path: Path) -> None:
    nb = written(path)
    learner = learner_copy(nb)
    solutions = solution_texts(nb)
    assert solutions, f"{path.name}: no solutions found (tag them `solution`)"
    # Lines that also occur outside the solutions (a stub's `def` line, a shared import) are not
    # solution text.
    elsewhere = "\n".join(
        strip_solution_blocks(source(c)) for c in nb["cells"] if not is_solution(c)
    )
    solution_lines = {
        ln for ln in set().union(*(_long_lines(t) for t in solutions)) if ln not in elsewhere
    }
    solution_lines -= {ln for ln in solution_lines if re.fullmatch(r"[`~:]{3,}.*", ln)}
    assert solution_lines, f"{path.name}: solutions have no distinctive line to look for"
    learner_text = "\n".join(source(c) for c in learner["cells"])
    leaked = sorted(ln for ln in solution_lines if ln in learner_text)
    assert not leaked, f"{path.name}: solution text in the learner copy: {leaked[:5]}"
    assert not any("solution" in c.get("metadata", {}).get("tags", []) for c in learner["cells"])
    assert not re.search(r"\{(admonition|dropdown)\}\s*Solution", learner_text)
    # Exercises stay, with their checker calls, and no outputs.
    exercises = [c for c, f in zip(nb["cells"], exercise_flags(nb), strict=True) if f]
    kept = [c for c, f in zip(learner["cells"], exercise_flags(learner), strict=True) if f]
    assert len(exercises) >= 3 and len(kept) == len(exercises)
    for cell in kept:
        assert "check_" in source(cell) and cell["outputs"] == []


def test_learner_zip(tmp_path: Path) -> None:
    import zipfile

    written, zip_path = build_learner_copies(REPO, tmp_path, CHAPTERS)
    assert [p.name for p in written] == [f"{p.stem}.learner.ipynb" for p in CHAPTERS]
    names = zipfile.ZipFile(zip_path).namelist()
    for needed in (
        "requirements.txt",
        "pyproject.toml",
        "README.txt",
        "src/course_utils/__init__.py",
    ):
        assert f"attention-step-by-step/{needed}" in names, needed
    # the saved measurements chapters 10 and 12 read from ../benchmarks/results
    for result in ("gqa_decoding.json", "flash.json"):
        assert f"attention-step-by-step/benchmarks/results/{result}" in names, result
    assert not [n for n in names if "__pycache__" in n]
    for p in CHAPTERS:
        assert f"attention-step-by-step/chapters/{p.stem}.learner.ipynb" in names


@pytest.fixture(scope="module")
def unzipped_and_installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The learner zip as a learner gets it: unzipped, and its package built and installed from
    the zip alone (``pip install -r requirements.txt`` ends with ``-e .``: the zip must hold what
    that line builds). Returns (the unzipped folder, where the package was installed)."""
    import subprocess
    import sys
    import zipfile

    work = tmp_path_factory.mktemp("learner-zip")
    _, zip_path = build_learner_copies(REPO, work / "site", CHAPTERS)
    zipfile.ZipFile(zip_path).extractall(work / "unzipped")
    folder = work / "unzipped" / "attention-step-by-step"
    assert (folder / "requirements.txt").read_text().rstrip().endswith("-e .")
    target = work / "installed"
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(
        [*pip, "--no-index", "--quiet", "--target", str(target), str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"the zip's package does not install:\n{done.stderr[-2000:]}"
    assert (target / "course_utils" / "widgets" / "rope_dial.js").is_file()  # package data too
    return folder, target


def test_the_learner_zip_installs_as_its_readme_says(
    unzipped_and_installed: tuple[Path, Path],
) -> None:
    """The zip installs (seconds, in `make test`); every copy's Run All is `make test-handouts`."""
    folder, installed = unzipped_and_installed
    assert (folder / "chapters").is_dir()
    assert (installed / "course_utils" / "__init__.py").is_file()


# Every learner copy run again in a fresh kernel is as long as nbval's run of the chapters (about
# 140 test-s): `make test-handouts`, which CI runs after `make test`.
@pytest.mark.handouts
@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_learner_copy_runs_all_from_the_unzipped_zip(
    path: Path, unzipped_and_installed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unzip, install as the README says, Run All: the whole learner notebook runs in a fresh
    kernel in the unzipped chapters folder, with the package the zip installed (not the
    repository's), and every unsolved exercise says "not yet right"."""
    import nbformat
    from nbclient import NotebookClient

    from course_kit.kernels import socket_kernel_manager_class

    written(path)
    folder, installed = unzipped_and_installed
    notebook = folder / "chapters" / f"{path.stem}.learner.ipynb"
    node = nbformat.read(notebook, as_version=4)
    flags = exercise_flags(node)
    assert any(flags), f"{path.name}: the learner copy has no exercise"
    where = nbformat.v4.new_code_cell("import course_utils\nprint(course_utils.__file__)")
    node.cells.append(where)
    monkeypatch.setenv("PYTHONPATH", str(installed))  # the kernel imports the zip's package
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    client = NotebookClient(
        node,
        timeout=300,
        kernel_name="python3",
        kernel_manager_class=socket_kernel_manager_class(asynchronous=True),
        resources={"metadata": {"path": str(notebook.parent)}},
    )
    client.execute()  # raises CellExecutionError, with the traceback, if any cell raises
    assert str(installed) in where.outputs[0]["text"], where.outputs
    for cell, is_ex in zip(node.cells, flags, strict=False):
        if not is_ex:
            continue
        text = "".join(
            o.get("text", "") + "".join(o.get("data", {}).get("text/plain", ""))
            for o in cell.outputs
        )
        assert "not yet right" in text.lower(), (
            f"{path.name}: unsolved exercise printed no 'not yet right':\n{source(cell)[:200]}\n"
            f"output: {text[:300]}"
        )


#: MyST that plain Jupyter shows as raw text: a directive fence, a role, a directive option.
RAW_MYST = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})\s*\{[a-z-]+\}|\{[a-z:]+\}`|^:class:", re.M)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_learner_copy_shows_no_answer_and_no_raw_myst(tmp_path: Path, language: str) -> None:
    """In plain Jupyter: every "Check your understanding" answer is a closed <details>, no MyST is
    left raw, no citation key shows, and no sentence points at the hidden solutions."""
    from course_site.bibstyle import _entries

    root = REPO if language == "en" else _zh_kit(tmp_path / "zh-kit")
    chapters = sorted((root / "chapters").glob("*.ipynb"))
    written_copies, _ = build_learner_copies(root, tmp_path / "site", chapters, language)
    keys = set(_entries(REPO / "references.bib"))
    pointer = "hidden cell" if language == "en" else "隐藏的单元格"
    for copy_path, chapter in zip(written_copies, chapters, strict=True):
        markdown = [c for c in read_notebook(copy_path)["cells"] if c["cell_type"] == "markdown"]
        text = "\n".join(source(c) for c in markdown)
        name = copy_path.name
        assert not RAW_MYST.search(text), f"{name}: raw MyST {RAW_MYST.search(text).group(0)!r}"
        shown = re.sub(r"<details>.*?</details>", "", text, flags=re.S)
        for answer in _answers(read_notebook(chapter)):
            assert answer not in shown, f"{name}: an answer is shown openly: {answer[:80]!r}"
            assert answer in text, f"{name}: an answer went missing: {answer[:80]!r}"
        leaked = sorted(k for k in keys if re.search(rf"\b{re.escape(k)}\b", text))
        assert not leaked, f"{name}: citation keys shown: {leaked}"
        assert pointer not in text, f"{name}: still points at the hidden solutions"


def _answers(nb: dict) -> list[str]:
    """A piece of every dropdown admonition's first line of text (the answers) of a chapter: the
    longest run without MyST roles (the learner copy rewrites those), if long enough to be telling.
    """
    found = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for m in re.finditer(
            r"^(`{3,})\{admonition\}[^\n]*\n:class: dropdown\n\s*(.+)$", source(cell), re.M
        ):
            line = m.group(2)
            if re.match(r"^\s*(`{3,}|:{3,}|\$\$)", line):
                continue  # a nested directive or display maths: rewritten, not compared
            piece = max(re.split(r"\{[a-z:]+\}`[^`]*`", line), key=len).strip()
            if len(piece) > 12:
                found.append(piece)
    return found


def _zh_kit(folder: Path) -> Path:
    """The 中文 chapters as the 中文 build stages them for its kit (zh-executed outputs, translated
    Markdown), written under ``folder`` (not into ``_build``, which a running build may use)."""
    import json

    from course_site import i18n
    from course_site.zh_edition import (
        compose,
        load_code_comments,
        translate_code_comments,
        zh_notebook,
    )

    comments = load_code_comments(REPO)
    for path in CHAPTERS:
        english = json.loads(path.read_text(encoding="utf-8"))
        nb = compose(english, json.loads(zh_notebook(REPO, path).read_text(encoding="utf-8")))
        rel = path.relative_to(REPO)
        translate_code_comments(nb, comments.get(rel.with_suffix("").as_posix(), {}))
        catalog = i18n.load_catalog(i18n.messages_dir(REPO) / rel.with_suffix(".po"))
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(i18n.translate_notebook(nb, catalog), ensure_ascii=False))
    return folder


# ------------------------------------------------------------------------------------------
# Deck derivation (no browser): boundaries, speaker notes, what is left out
# ------------------------------------------------------------------------------------------


def _md(text: str, **meta: object) -> dict:
    return {"cell_type": "markdown", "metadata": dict(meta), "source": text}


def _code(text: str, tags: list[str] | None = None, outputs: list | None = None) -> dict:
    return {
        "cell_type": "code",
        "metadata": {"tags": tags or []},
        "source": text,
        "outputs": outputs or [],
        "execution_count": 1,
    }


def test_deck_notebook_boundaries_notes_and_skips() -> None:
    from course_kit.lesson_plan import parse_plan
    from course_kit.slides import deck_notebook

    view = {"data": {"application/vnd.jupyter.widget-view+json": {"model_id": "x"}}}
    nb = {
        "metadata": {},
        "cells": [
            _md("# 9. Title (标题)\n\nIntro"),
            _md("## 9.1 First part\n\ntext"),
            _code("x = 1"),
            _md("### Try it: a widget"),
            _code("w = QueryKeyPlane(keys)\nw", tags=["widget"], outputs=[view]),
            _md("## Exercises"),
            _code("def f(): ...\ncheck_f(f)", tags=["exercise"]),
            _code(
                "def f_solution(): return 1\ncheck_f(f_solution)", tags=["hide-cell", "solution"]
            ),
            _md("not on the slides", tags=["slides-skip"]),
            _md("explicit", slideshow={"slide_type": "fragment"}),
        ],
    }
    plan = parse_plan(
        "## 45-minute plan\n| minutes | activity | cell/widget |\n|---|---|---|\n"
        '| 0-5 | Hook | "First part" |\n| 5-9 | Nowhere | "No such section" |\n'
        "## Predict, then move the slider\n- `QueryKeyPlane`: which key wins?\n"
    )
    deck = deck_notebook(nb, plan)
    kinds = [c["metadata"]["slideshow"]["slide_type"] for c in deck["cells"]]
    by_source = {source(c)[:12]: k for c, k in zip(deck["cells"], kinds, strict=True)}
    assert kinds[0] == "slide" and "(标题)" in source(deck["cells"][0])
    assert by_source["## 9.1 First"] == "slide"
    assert by_source["def f_soluti"] == "skip"
    assert by_source["def f(): ...\n"[:12]] == "skip"  # a stub is worked in the notebook
    assert by_source["not on the s"] == "skip"
    assert by_source["explicit"] == "fragment"
    widget = next(c for c in deck["cells"] if "QueryKeyPlane" in source(c))
    assert widget["metadata"]["transient"] == {"remove_source": True}
    # Every slide has speaker notes, before the next slide starts: the prose moved off the slide,
    # the plan's rows and questions for it (an unmatched row on the first slide).
    slides: list[list[str]] = []
    for cell, kind in zip(deck["cells"], kinds, strict=True):
        if kind in {"slide", "subslide"}:
            slides.append([])
        elif kind == "notes":
            slides[-1].append(source(cell))
    assert all(slides), [i for i, n in enumerate(slides) if not n]
    assert "Intro" in slides[0][0] and "Nowhere" in "".join(slides[0])
    assert "Hook" in "".join(slides[1])
    assert any("which key wins" in "".join(n) for n in slides)


def test_a_slide_keeps_the_key_lines_and_the_notes_the_prose() -> None:
    from course_kit.slides import split_for_slide

    text = (
        "## 2.3 Softmax\n\nSoftmax turns scores into weights. It exponentiates, then divides.\n\n"
        "- every weight is positive\n- a row sums to 1\n\n$$p_j = e^{z_j} / \\sum_m e^{z_m}$$\n\n"
        "**Exercise 2.1.** Write it.\n\nA long explanation follows here."
    )
    slide, notes = split_for_slide(text)
    for kept in ("## 2.3 Softmax", "Softmax turns scores into weights.", "- a row sums to 1"):
        assert kept in slide
    assert "$$p_j" in slide and "**Exercise 2.1.**" in slide
    assert "It exponentiates" not in slide and "A long explanation" not in slide
    assert notes == [
        "Softmax turns scores into weights. It exponentiates, then divides.",
        "A long explanation follows here.",
    ]


def test_long_sections_are_cut_into_subslides() -> None:
    from course_kit.slides import SLIDE_LINES, deck_notebook

    long = "\n".join(f"- item {i}" for i in range(SLIDE_LINES - 2))
    nb = {"metadata": {}, "cells": [_md("## A section"), _md(long), _md(long), _md(long)]}
    deck = deck_notebook(nb)["cells"]
    kinds = [c["metadata"]["slideshow"]["slide_type"] for c in deck]
    assert kinds[0] == "slide" and kinds.count("subslide") >= 2
    shown = "\n".join(source(c) for c, k in zip(deck, kinds, strict=True) if k != "notes")
    assert shown.count("- item 0") == 3  # cut between items, none lost


def test_the_imports_are_not_a_slide() -> None:
    from course_kit.slides import deck_notebook

    nb = {
        "metadata": {},
        "cells": [
            _md("# 1. T"),
            _code("%matplotlib inline\nimport numpy as np\nnp.set_printoptions()"),
        ],
    }
    kinds = [c["metadata"]["slideshow"]["slide_type"] for c in deck_notebook(nb)["cells"]]
    assert kinds[1] == "skip"


def test_deck_widget_runtime_exists() -> None:
    """The decks' widget runtime scripts are files the site serves under _static/."""
    from course_kit.slides import MATHJAX, widget_runtime

    statics = [REPO / "_ext" / "course_site" / "static"]
    statics.append(REPO / "_ext" / "course_kit" / "static")
    scripts = widget_runtime()
    assert scripts
    for rel in [s["src"] for s in scripts] + [MATHJAX]:
        assert any((d / rel).is_file() for d in statics), f"_static/{rel} is not served"


def test_reveal_is_vendored_with_licence_and_hashes() -> None:
    import importlib.util
    import json as _json

    spec = importlib.util.spec_from_file_location(
        "vendor_reveal", REPO / "scripts" / "vendor_reveal.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (module.DEST / "LICENSE").is_file()
    manifest = _json.loads((module.DEST / "VERSIONS.json").read_text(encoding="utf-8"))
    assert manifest["files"] == module.file_hashes(), "run scripts/vendor_reveal.py (hashes differ)"


def test_launch_buttons_default_off_and_one_setting_turns_them_on() -> None:
    from course_kit.sphinx import launch_problem

    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    launch = config["launch_buttons"]
    assert not launch.get("jupyterhub_url") and not launch.get("binderhub_url"), "must be off"
    assert "course_kit.sphinx" in config["sphinx"]["local_extensions"]  # _ext/, not in course_utils
    repo = "https://github.com/example/attention"
    on = {"launch_buttons": {**launch, "jupyterhub_url": "https://hub.example.edu"}}
    assert launch_problem({**on, "repository_url": repo}) is None
    assert "repository.url" in launch_problem({**on, "repository_url": ""})


def test_a_zh_learner_copy_speaks_chinese_when_run() -> None:
    """Importing course_utils sets no language, so a 中文 learner copy opens with a cell that does:
    after it, checker feedback is Chinese; the English copy has no such cell."""
    import subprocess
    import sys

    nb = read_notebook(CHAPTERS[0])
    zh = learner_copy(nb, language="zh-CN")
    en = learner_copy(nb)
    first_zh = next(c for c in zh["cells"] if c["cell_type"] == "code")
    first_en = next(c for c in en["cells"] if c["cell_type"] == "code")
    assert "set_language" in source(first_zh) and "set_language" not in source(first_en)
    assert len(zh["cells"]) == len(en["cells"]) + 1
    program = source(first_zh) + "\nfrom course_utils.i18n import t\nprint(t('correct'))"
    env = {k: v for k, v in __import__("os").environ.items() if k != "COURSE_LANG"}
    run = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=120
    )
    assert run.returncode == 0, run.stderr[-1000:]
    assert run.stdout.strip() == "正确"


def _slides(deck: list[dict]) -> list[list[dict]]:
    """A deck's cells grouped by slide (notes and skipped cells left out)."""
    slides: list[list[dict]] = []
    for cell in deck:
        kind = cell.get("metadata", {}).get("slideshow", {}).get("slide_type")
        if kind in {"skip", "notes"}:
            continue
        if kind in {"slide", "subslide"} or not slides:
            slides.append([])
        slides[-1].append(cell)
    return slides


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_no_slide_is_a_heading_alone(path: Path) -> None:
    """A heading always shares its slide with something: a lead sentence, a list, a widget. (A
    "Try it" heading was left alone above a slide with its widget, a section heading deep in
    a cell lost its lead sentence to the notes, and a section's heading directly followed by a
    sub-heading, chapter 9's "9.2 The patterns" and "A sliding window", made a slide of two
    headings.)"""
    from course_kit.slides import deck_notebook

    deck = deck_notebook(read_notebook(path))["cells"]
    alone = []
    for cells in _slides(deck):
        text = "\n\n".join(source(c) for c in cells).strip()
        if all(c["cell_type"] == "markdown" for c in cells) and re.fullmatch(
            r"#{1,6}\s[^\n]*(\s+#{1,6}\s[^\n]*)*", text
        ):
            alone.append(text)
    assert not alone, f"slides with only a heading: {alone}"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_deck_cell_ids_are_unique(path: Path) -> None:
    """Every cell of a deck notebook has its own id (nbformat "corrects" a repeated id with a
    warning at each build: two speaker-notes cells once shared the id of the cell they followed)."""
    from course_kit.slides import deck_notebook

    ids = [c.get("id") for c in deck_notebook(read_notebook(path))["cells"]]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    assert not repeated, f"{path.name}: repeated cell ids {repeated}"


def test_a_compact_chapter_still_gets_min_slides() -> None:
    """A chapter that says in few lines what fills 15 slides in English (Chinese is shorter) is cut
    with fewer lines a slide until its deck has ``MIN_SLIDES``; a slide never holds more."""
    from course_kit.slides import (
        MIN_SLIDES,
        SLIDE_LINES,
        _deck_notebook,
        count_slides,
        deck_notebook,
    )

    items = "\n".join(f"- point {k}: a short line of the list" for k in range(17))
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# A chapter\n\nIts lead."}]
    cells += [
        {"cell_type": "markdown", "metadata": {}, "source": f"## Section {i}\n\n{items}"}
        for i in range(9)
    ]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    assert count_slides(_deck_notebook(nb, None, "en", SLIDE_LINES)) < MIN_SLIDES
    assert count_slides(deck_notebook(nb)) >= MIN_SLIDES


def test_the_welcome_page_clone_command_gets_the_configured_repository() -> None:
    """The intro's ``git clone`` shows the repository's address once ``_config.yml`` sets it."""
    from types import SimpleNamespace

    from course_kit.sphinx import REPOSITORY_PLACEHOLDER, _source_read

    intro = (REPO / "intro.md").read_text(encoding="utf-8")
    assert f"git clone {REPOSITORY_PLACEHOLDER} attention-step-by-step" in intro

    def read(docname: str, url: str) -> str:
        app = SimpleNamespace(config=SimpleNamespace(html_theme_options={"repository_url": url}))
        source = [intro]
        _source_read(app, docname, source)
        return source[0]

    url = "https://github.com/example/attention-step-by-step"
    assert f"git clone {url} attention-step-by-step" in read("intro", url)
    assert REPOSITORY_PLACEHOLDER not in read("intro", url)
    assert read("intro", "") == intro  # unset: the placeholder stays, with the zip as the way in
    assert read("chapters/01_queries_keys_values", url) == intro  # only the welcome page
