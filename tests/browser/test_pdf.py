"""The printable books (``make pdf``): ``_build/pdf/attention-step-by-step.pdf`` and the 中文
edition's ``attention-step-by-step.zh.pdf`` (every test runs on both).

Read back with poppler's ``pdftotext``/``pdfimages``: every chapter's title is there and starts a
page; the table of contents gives each chapter a page number; no raw TeX (``\\frac``, ``$$``, ...)
is left in the text (MathJax typeset it); no page is blank (neither text nor image); each widget
became a still image with a caption. The PDF is ``$COURSE_PDF_DIR`` (default ``_build/pdf``); a
missing PDF skips, except in CI.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from course_kit.notebooks import headings, is_widget, read_notebook
from course_kit.pdf import (
    PDF_NAME,
    PDF_NAME_ZH,
    PRINT_TEXT,
    english_part,
    starts_with_title,
    title_pattern,
    top_of_page,
)

from ..system_tools import require, require_cjk_font

# The PDFs are read back once per edition (module fixture `pages`): under xdist the module stays on
# one worker (--dist loadgroup).
pytestmark = [pytest.mark.browser, pytest.mark.handouts, pytest.mark.xdist_group("pdf")]

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((REPO / "chapters").glob("*.ipynb"))
#: TeX that MathJax should have typeset. A single backslash only: the book's code shows TeX in
#: Python strings (matplotlib labels such as "$\\\\sqrt{d_k}$"), written with a doubled backslash.
RAW_TEX = re.compile(r"(?<!\\)\\(frac|sqrt|begin|operatorname|top|mathbb|alpha)\b|\$\$")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _title(path: Path, edition: str = "en") -> str:
    """The chapter's title in an edition (中文: its translation, if the catalogue has one)."""
    nb = read_notebook(path)
    title = next(t for c in nb["cells"] for lvl, t in headings(c) if lvl == 1)
    if edition == "zh":
        from course_site import i18n

        catalog = i18n.load_catalog(i18n.messages_dir(REPO) / "chapters" / f"{path.stem}.po")
        title = catalog.get(i18n.normalise(title), title).replace("\\.", ".")  # "2\\. 缩放"
    return title


EDITIONS = {"en": (PDF_NAME, "en"), "zh": (PDF_NAME_ZH, "zh-CN")}


@pytest.fixture(scope="module", params=sorted(EDITIONS))
def edition(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _pdf_file(edition: str) -> Path:
    return Path(os.environ.get("COURSE_PDF_DIR", REPO / "_build" / "pdf")) / EDITIONS[edition][0]


@pytest.fixture(scope="module")
def pages(edition: str) -> list[str]:
    pdf = _pdf_file(edition)
    if not pdf.is_file():
        message = f"{pdf} not found (run `make pdf`)"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message)
        pytest.skip(message)
    text = subprocess.run(
        [require("pdftotext"), "-layout", str(pdf), "-"], check=True, capture_output=True, text=True
    ).stdout
    found = text.split("\f")
    if found and not found[-1].strip():
        found = found[:-1]
    pytest.pdf_path = pdf  # type: ignore[attr-defined]
    return found


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_starts_a_page(path: Path, pages: list[str], edition: str) -> None:
    """The chapter's title is at the top of a page, and the contents give it a page number."""
    title = _title(path, edition)
    key = english_part(title)
    starts = [i for i, page in enumerate(pages[2:], start=3) if starts_with_title(page, title)]
    assert starts, f"no page starts with the chapter title {title!r}"
    cjk = [ch for ch in title if "\u3000" <= ch <= "\u9fff"]
    if cjk:  # the Chinese of the title is drawn (not tofu) on that page
        require_cjk_font()
        top = top_of_page(pages[starts[0] - 1], lines=8)
        assert all(ch in top for ch in cjk), f"{title!r}: Chinese not drawn: {top!r}"
    # The contents fill the pages after the title page, up to the first page of the book itself.
    toc = _norm(" ".join(pages[1 : min(starts)]))
    m = re.search(title_pattern(title).pattern + r"[^0-9]*?(\d+)", toc.replace("- ", "-"))
    assert m, f"{key!r} has no page number in the table of contents"
    # The title can also open another page (the welcome page lists the chapters); the page the
    # contents give must be one that starts with the title.
    assert int(m.group(1)) in starts, (
        f"{key!r}: contents say page {m.group(1)}; pages starting with the title: {starts}"
    )


def test_pdf_has_an_outline(pages: list[str]) -> None:
    """Bookmarks (Chromium's outline from the headings) for every chapter."""
    data = pytest.pdf_path.read_bytes()  # type: ignore[attr-defined]
    assert b"/Outlines" in data, "the PDF has no outline (bookmarks)"
    assert data.count(b"/Title") >= len(CHAPTERS), "fewer bookmarks than chapters"


def test_no_raw_tex(pages: list[str]) -> None:
    text = "\n".join(pages)
    found = sorted({m.group(0) for m in RAW_TEX.finditer(text)})
    assert not found, f"raw TeX in the PDF's text: {found}"


def test_no_blank_pages(pages: list[str]) -> None:
    pdf = pytest.pdf_path  # type: ignore[attr-defined]
    blank = []
    for i, page in enumerate(pages, start=1):
        if page.strip():
            continue
        images = subprocess.run(
            ["pdfimages", "-list", "-f", str(i), "-l", str(i), str(pdf)],
            capture_output=True,
            text=True,
        ).stdout.splitlines()[2:]
        if not images:
            blank.append(i)
    assert not blank, f"blank pages: {blank}"


def test_widgets_are_still_images_with_captions(pages: list[str], edition: str) -> None:
    n_widgets = sum(is_widget(c) for p in CHAPTERS for c in read_notebook(p)["cells"])
    text = re.sub(r"\s+", "", "\n".join(pages))
    # The caption's first clause (before ";" or the full-width "；" of the 中文 caption).
    still = re.sub(r"\s+", "", re.split("[;；]", PRINT_TEXT[EDITIONS[edition][1]]["still"])[0])
    captions = text.count(still)
    assert captions >= n_widgets, f"{captions} widget stills for {n_widgets} widgets"


def test_paper_shows_the_solutions_and_no_screen_only_parts(pages: list[str], edition: str) -> None:
    """On paper nothing can be opened or typed into: every worked solution is printed open under
    its label, no toggle is left ("Show the solution", "Show code cell content"), no unanswered
    checker says "not yet right", no still shows the head explorer's typing box or download
    button, no sentence tells the reader to move a widget with the arrow keys, and every still has
    its widget's own caption (not the fallback "Widget")."""
    text = "\n".join(pages)
    language = EDITIONS[edition][1]
    n_solutions = sum(
        "solution" in (c.get("metadata", {}).get("tags") or [])
        for p in CHAPTERS
        for c in read_notebook(p)["cells"]
    )
    label = PRINT_TEXT[language]["solution"]
    assert len(re.findall(rf"^\s*{label}\s*$", text, re.M)) >= n_solutions
    toggles = re.findall(
        r"^\s*(?:Show the solution|Show code cell \w+|显示答案|显示代码)\s*$", text, re.M
    )
    assert not toggles, f"{len(toggles)} toggle labels printed"
    failures = re.findall(r"✗[^\n]*(?:not yet right|还不对)", text)
    assert not failures, f"{len(failures)} unanswered checkers printed, e.g. {failures[0]!r}"
    assert not re.search(r"downloads \d|Run the model on it", text)
    # How to move a widget (the chapters' {screen} role): a still image has nothing to move.
    flat = re.sub(r"\s+", "", text)
    told = re.findall(r"mouse,?or(?:with)?thearrowkeys|鼠标或方向键|再用方向键", flat)
    assert not told, f"{len(told)} instructions to move a widget printed"
    screen_only = screen_only_words(language)
    assert screen_only, "the chapters mark no screen-only words"
    printed = [w for w in screen_only if re.sub(r"\s+", "", w) in flat]
    assert not printed, f"screen-only words printed: {printed}"
    still = re.split("[;；]", PRINT_TEXT[language]["still"])[0]
    assert not re.search(rf"^\s*Widget \({re.escape(still)}", text, re.M)


#: Words that tell a reader to work a screen with a pointer or keys: on paper there is nothing to
#: drag, click or hover (the chapters say "move the slider", which a still image can answer, or
#: mark such words ``{screen}``).
POINTER_WORDS = {
    "en": re.compile(r"\b(?:drag|click|hover)\w*|arrow keys|the mouse|downloads \d", re.I),
    "zh": re.compile(r"拖动|拖到|点击|单击|悬停|鼠标|方向键"),
}


def _page_title(markdown: Path, edition: str) -> str:
    """The first heading of a Markdown page, in an edition (中文: its catalogue's translation)."""
    title = next(
        line[2:].strip()
        for line in markdown.read_text(encoding="utf-8").splitlines()
        if line.startswith("# ")
    )
    if edition == "zh":
        from course_site import i18n

        catalog = i18n.load_catalog(i18n.messages_dir(REPO) / f"{markdown.stem}.po")
        title = catalog.get(i18n.normalise(title), title)
    return title


def test_chapters_on_paper_tell_no_one_to_drag_or_click(pages: list[str], edition: str) -> None:
    """From chapter 1 to the appendix's end (the pages before the instructor guide), no sentence
    tells the reader to drag, click or hover, or to use the arrow keys or the mouse: the words of
    the review's tour ("Drag the slider", "(click to show it)", "hover a word", "drag the context")
    are screen-only or say "move"/"set". (The welcome page and the instructor's pages describe the
    website and a class, and may name them.)"""
    first = next(
        i
        for i, page in enumerate(pages[2:], start=2)
        if starts_with_title(page, _title(CHAPTERS[0], edition))
    )
    guide = _page_title(REPO / "instructor_guide.md", edition)
    last = next(
        (i for i in range(first, len(pages)) if starts_with_title(pages[i], guide)), len(pages)
    )
    assert last - first > 50, f"the chapters run from page {first + 1} to {last}?"
    told = [
        f"page {i + 1}: {line.strip()!r}"
        for i in range(first, last)
        for line in pages[i].splitlines()
        if POINTER_WORDS[edition].search(line)
    ]
    assert not told, f"{len(told)} pointer instructions printed: {told[:6]}"


def screen_only_words(language: str) -> list[str]:
    """The texts of the chapters' ``{screen}`...``` roles, in the edition's language."""
    role = re.compile(r"\{screen\}`([^`]+)`")
    if language == "en":
        texts = ["".join(c["source"]) for p in CHAPTERS for c in read_notebook(p)["cells"]]
    else:
        catalogues = sorted((REPO / "locale" / "zh_CN" / "LC_MESSAGES" / "chapters").glob("*.po"))
        texts = [p.read_text(encoding="utf-8").replace('"\n"', "") for p in catalogues]
        texts = [t.split("msgstr", 1)[-1] for t in "\n".join(texts).split("msgid")]
    return [m for t in texts for m in role.findall(t)]


@pytest.mark.parametrize("edition", ["zh"], indirect=True)
def test_zh_pdf_is_the_chinese_edition(pages: list[str], edition: str) -> None:
    """The 中文 book is printed from the 中文 pages: its own contents heading, Chinese text."""
    require_cjk_font()
    text = re.sub(r"\s+", "", "\n".join(pages[:3]))
    assert PRINT_TEXT["zh-CN"]["contents"] in text, "no 目录 (contents) in the 中文 book"
    assert "打印版" in text, "the title page of the 中文 book is not in Chinese"
    assert "注意力，一步一步来" in re.sub(r"\s+", "", pages[0]), (
        "the title page's title is not Chinese"
    )
    import pikepdf

    with pikepdf.open(_pdf_file("zh")) as pdf:
        assert str(pdf.docinfo.get("/Title")) == "注意力，一步一步来", pdf.docinfo.get("/Title")


#: A word of the contents as pdftotext places it on the page (PDF points from the top left).
BBOX_WORD = re.compile(
    r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>'
)


def test_the_contents_titles_are_seen_beside_their_page_numbers(
    pages: list[str], edition: str, tmp_path: Path
) -> None:
    """The contents' page numbers are printed apart and laid over the book's contents pages: the
    chapters' titles must still be drawn there, not only found in the text (an opaque white page
    under the numbers once hid every title while pdftotext still read them). Page 2, drawn by
    pdftoppm at 72 dpi (one pixel a point): every word of a title has dark pixels in its box."""
    from PIL import Image

    pdf = _pdf_file(edition)
    page = 2  # the title page is page 1
    boxes = subprocess.run(
        [require("pdftotext"), "-f", str(page), "-l", str(page), "-bbox", str(pdf), "-"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    words = [
        (float(x0), float(y0), float(x1), float(y1), word)
        for x0, y0, x1, y1, word in BBOX_WORD.findall(boxes)
        if not word.isdigit()  # the numbers come from the laid-over page
    ]
    assert len(words) >= 20, f"page {page} has {len(words)} words besides page numbers"
    draw = [require("pdftoppm"), "-f", str(page), "-l", str(page), "-r", "72", "-gray", "-png"]
    subprocess.run([*draw, str(pdf), str(tmp_path / "page")], check=True, capture_output=True)
    (png,) = tmp_path.glob("page*.png")
    image = Image.open(png).convert("L")
    unseen = [
        word
        for x0, y0, x1, y1, word in words
        if image.crop((int(x0), int(y0), int(x1) + 1, int(y1) + 1)).getextrema()[0] > 160
    ]
    assert not unseen, (
        f"{len(unseen)} of the {len(words)} words of the contents on page {page} are not drawn "
        f"(hidden under the page numbers' print?): {unseen[:6]}"
    )


def test_the_contents_group_the_chapters_under_their_parts(pages: list[str], edition: str) -> None:
    """The contents name the book's parts as the site's sidebar does, each caption before the
    title of its part's first page (without them, chapter 14, last of part IV, read as if it came
    before chapter 13 by mistake)."""
    from bs4 import BeautifulSoup

    from course_kit.pdf import part_captions, toc_part_starts

    site = REPO / "_build" / "html" / ("zh/" if edition == "zh" else "")
    root = BeautifulSoup((site / "intro.html").read_text("utf-8"), "html.parser")
    captions = part_captions(root)
    root_title = root.select_one("article h1").get_text(" ", strip=True).replace("#", "").strip()
    book = [i for i, page in enumerate(pages[2:], start=3) if starts_with_title(page, root_title)]
    assert book, f"no page starts with the book's first page, {root_title!r}"
    # The contents: the pages after the title page and before the book's first page.
    toc = _norm(" ".join(pages[1 : min(book) - 1]))
    assert len(captions) == len(toc_part_starts(REPO)) >= 5, captions
    at = -1
    for caption, first in zip(captions, toc_part_starts(REPO), strict=True):
        found = title_pattern(caption).search(toc, at + 1)
        assert found, f"{caption!r}: not in the contents after the part before it"
        at = found.start()
        if first.startswith("chapters/"):
            title = _title(REPO / f"{first}.ipynb", edition)
            after = title_pattern(title).search(toc, at)
            assert after, f"{caption!r} is not followed by its first chapter {title!r}"
