"""The whole book as one PDF, printed by Chromium from the built site: ``make pdf``.

1. The pages of ``_toc.yml``, in order, are read from the built site (``_build/html``); their
   article bodies are put one after the other into one print page (``_build/pdf/book.html``),
   each chapter starting on a new page, after a title page and a table of contents. Local URLs
   are rewritten to point into the site; the pages' widget state comes along.
2. Chromium (Playwright, the browser tests' engine) opens it from ``file://`` with every outside
   request blocked, waits for MathJax and the widgets, and replaces each widget by a still image
   (a screenshot of its initial state) with its caption.
3. The book is printed (A4, page numbers in the footer, PDF outline/bookmarks from the headings);
   the page where each chapter starts is read back with ``pdftotext`` and written into the table
   of contents, whose pages alone are printed again, numbers only, and laid over the book's
   (:func:`add_page_numbers`).

Needs the built site and ``/usr/bin/chromium`` (``COURSE_CHROMIUM`` overrides); ``pdftotext``
(poppler-utils) for the page numbers (without it the contents list has links but no numbers).
"""

from __future__ import annotations

import base64
import html
import os
import posixpath
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

CHROMIUM = os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")
PDF_NAME = "attention-step-by-step.pdf"
#: The 中文 edition's book (``make pdf`` prints both, from ``_build/html`` and ``_build/html/zh``).
PDF_NAME_ZH = "attention-step-by-step.zh.pdf"
#: The print page's own words, per edition (``<html lang>``).
PRINT_TEXT = {
    "en": {
        "intro": "An interactive course on the attention mechanism: the printable edition.<br>\n"
        "The widgets are shown as still images of their initial state;\n"
        "the live versions are on the website.",
        "contents": "Contents",
        "still": "still image of the widget's initial state; it is live on the website",
        "solution": "Solution",
    },
    "zh-CN": {
        "intro": "关于注意力机制的交互式课程：打印版。<br>\n"
        "交互组件以其初始状态的静态图片显示；可交互的版本在网站上。",
        "contents": "目录",
        "still": "交互组件初始状态的静态图片；网站上的版本可以交互",
        "solution": "参考答案",
    },
}
PAGE_NUMBER_SLOT = "000"
#: Scripts of a page that belong to the widget runtime (the site's anywidget loader).
WIDGET_SCRIPT_WORDS = ("course_widgets", "anywidget", "widget")

PRINT_CSS = """
@page { size: A4; margin: 16mm 15mm 18mm 15mm; }
html, body { background: #fff; }
body { font-size: 10.5pt; margin: 0; }
.cu-print-part { break-before: page; }
.cu-print-title { text-align: center; padding-top: 30vh; }
.cu-print-title h1 { font-size: 28pt; }
.cu-print-toc ol { list-style: none; padding: 0; }
.cu-print-toc li { display: flex; gap: 0.5em; margin: 0.35em 0; }
.cu-print-toc li.cu-print-toc-part { display: block; margin-top: 0.9em; }
.cu-print-toc .cu-print-toc-caption { font-weight: bold; }
.cu-print-toc li.cu-print-toc-part > ol { margin-left: 1.2em; }
.cu-print-toc li .dots { flex: 1; border-bottom: 1px dotted #888; margin-bottom: 0.3em; }
.cu-print-toc a { color: inherit; text-decoration: none; }
.cu-print-toc .page { visibility: hidden; min-width: 3ch; text-align: right; }
html.cu-print-numbers-only body * { visibility: hidden !important; }
html.cu-print-numbers-only .cu-print-toc .page { visibility: visible !important; }
html.cu-print-numbers-only section.cu-print-part { display: none !important; }
html.cu-print-numbers-only, html.cu-print-numbers-only body { background: transparent !important; }
a.headerlink, .cu-kit-links, .cu-lang-switch, .toggle-button, button.copybtn, .prev-next-area,
 .header-article, .bd-footer-article, .bd-sidebar-secondary { display: none !important; }
pre { white-space: pre-wrap; word-break: break-word; }
figure, img, .cu-still, table { break-inside: avoid; }
h1, h2, h3 { break-after: avoid; }
img { max-width: 100%; height: auto; }
.cu-still img { max-width: 100%; border: 1px solid #ccc; }
.cu-still figcaption { font-size: 9pt; color: #444; }
details > * { display: block; }
.cu-print-solution { font-weight: 600; margin: 0.6em 0 0.2em; }
/* Parts of a widget that only serve a reader at a screen (typing a sentence, a download). */
.cu-screen-only { display: none !important; }
/* A wrapped code line continues under its own indentation, not at the margin (for_print_code). */
.cu-code-line { display: block; }
"""

STILLS_JS = """
() => {
  const out = [];
  document.querySelectorAll('.cu-widget').forEach((w, i) => {
    const area = w.closest('.widget-subarea') || w;
    area.setAttribute('data-cu-still', String(i));
    const title = w.querySelector('.cu-title, h3, h4, [class*="title"]');
    const label = (title && title.textContent.trim()) || w.getAttribute('aria-label') || 'Widget';
    out.push({index: i, caption: label});
  });
  return out;
}
"""


def for_print(soup: Any, article: Any, solution: str) -> None:
    """Make a page's article fit paper: what a screen keeps behind a toggle cannot be opened on
    paper, and what only answers a reader's input has no reader.

    * a worked solution (a cell tagged ``solution``, folded on the site) is printed open, after
      its exercise, under the label ``solution``;
    * any other folded cell part (``hide-input`` plotting code, ``hide-cell`` set-up) is left out;
    * the output of an exercise stub (its checker's "not yet right" before anyone answered it) is
      left out.

    >>> from bs4 import BeautifulSoup
    >>> html = ('<article><div class="cell tag_exercise"><div class="cell_output">✗ not yet'
    ...         '</div></div><div class="cell tag_hide-cell tag_solution"><details class="hide">'
    ...         '<summary>Show</summary><pre>def f_solution(): ...</pre></details></div>'
    ...         '<div class="cell tag_hide-input"><details class="hide"><summary>Show</summary>'
    ...         '<pre>plt.plot()</pre></details><img src="fig.png"></div></article>')
    >>> soup = BeautifulSoup(html, "html.parser")
    >>> for_print(soup, soup.article, "Solution")
    >>> print(soup.article.get_text(" ", strip=True))
    Solution def f_solution(): ...
    >>> len(soup.find_all("img"))
    1
    """
    for cell in article.select("div.tag_exercise"):
        for output in cell.select("div.cell_output"):
            output.decompose()
    for details in article.select("details.hide"):
        cell = details.find_parent("div", class_="cell")
        if cell is not None and "tag_solution" in (cell.get("class") or []):
            label = soup.new_tag("p", attrs={"class": "cu-print-solution"})
            label.string = solution
            summary = details.find("summary")
            if summary is not None:
                summary.replace_with(label)
            details.unwrap()
        else:
            details.decompose()


#: How far (in characters) a wrapped code line continues right of its own indentation.
HANGING_INDENT = 4


def for_print_code(article: Any) -> int:
    r"""Put each line of every code block in its own block with a hanging indent, so that a line
    too long for the page wraps under its own indentation plus :data:`HANGING_INDENT`, not at the
    margin (paper cannot scroll sideways). A block whose highlighting spans a line break (a
    multi-line string) is left as it is. Returns the number of blocks changed.

    >>> from bs4 import BeautifulSoup
    >>> soup = BeautifulSoup('<pre>def f():\n    <span>return</span> 1\n</pre>', "html.parser")
    >>> for_print_code(soup)
    1
    >>> print(soup.pre)  # doctest: +NORMALIZE_WHITESPACE
    <pre><span class="cu-code-line" style="padding-left:4ch;text-indent:-4ch">def f():</span><span
    class="cu-code-line" style="padding-left:8ch;text-indent:-8ch">    <span>return</span>
    1</span></pre>
    """
    from bs4 import BeautifulSoup

    changed = 0
    for pre in article.find_all("pre"):
        lines = pre.decode_contents().rstrip("\n").split("\n")
        if any(line.count("<span") != line.count("</span>") for line in lines):
            continue
        parts = []
        for line in lines:
            text = html.unescape(re.sub(r"<[^>]+>", "", line))
            hang = len(text) - len(text.lstrip(" ")) + HANGING_INDENT
            parts.append(
                f'<span class="cu-code-line" style="padding-left:{hang}ch;text-indent:-{hang}ch">'
                f"{line or ' '}</span>"
            )
        # Parsed inside a <pre>: the parser keeps the leading spaces of each line there.
        rebuilt = BeautifulSoup(f"<pre>{''.join(parts)}</pre>", "html.parser").pre
        pre.clear()
        for child in list(rebuilt.contents):
            pre.append(child.extract())
        changed += 1
    return changed


def _read_toc(repo: Path) -> dict[str, Any]:
    return yaml.safe_load((repo / "_toc.yml").read_text(encoding="utf-8"))


def _docname(file: str) -> str:
    """A ``_toc.yml`` entry's file as a docname (``chapters/01_x.ipynb`` -> ``chapters/01_x``)."""
    return re.sub(r"\.(md|ipynb)$", "", file)


def toc_pages(repo: Path) -> list[str]:
    """Docnames of ``_toc.yml`` in reading order."""
    toc = _read_toc(repo)
    pages = [toc["root"]]

    def walk(entries: list[dict[str, Any]]) -> None:
        for entry in entries:
            if "file" in entry:
                pages.append(entry["file"])
            for key in ("chapters", "sections"):
                walk(entry.get(key, []))

    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    walk(toc.get("chapters", []))
    return [_docname(p) for p in pages]


def toc_part_starts(repo: Path) -> list[str]:
    """The docname each part of ``_toc.yml`` starts with, in order (the book's parts: the
    contents group the chapters under their captions, as the site's sidebar does).

    >>> toc_part_starts(Path(__file__).resolve().parents[2])[:2]
    ['chapters/01_queries_keys_values', 'chapters/04_multi_head_attention']
    """
    parts = _read_toc(repo).get("parts", [])
    return [_docname(part["chapters"][0]["file"]) for part in parts if part.get("chapters")]


def part_captions(root_soup: Any) -> list[str]:
    """The parts' captions as the built site's sidebar shows them (the 中文 edition's are
    translated), read from the root page.

    >>> from bs4 import BeautifulSoup
    >>> part_captions(BeautifulSoup(
    ...     '<nav class="bd-docs-nav"><p class="caption"><span class="caption-text">Part I'
    ...     '</span></p><ul></ul><p class="caption"><span class="caption-text">Part II</span></p>'
    ...     '</nav>', "html.parser"))
    ['Part I', 'Part II']
    """
    nav = root_soup.select_one("nav.bd-docs-nav")
    if nav is None:
        return []
    return [c.get_text(" ", strip=True) for c in nav.select("p.caption .caption-text")]


def _contents_items(titles: list[str], parts: dict[int, str]) -> str:
    """The contents' list: an entry per page (title, dots, page-number slot), the entries of a
    part nested under its caption (``parts``: index of a part's first page -> its caption).

    >>> items = _contents_items(["Intro", "One", "Two"], {1: "Part I"})
    >>> print(re.sub(r'<span class="dots"></span><span class="page"[^<]*</span>', " ...", items))
    <li><a href="#cu-print-0">Intro</a> ...</li>
    <li class="cu-print-toc-part"><span class="cu-print-toc-caption">Part I</span><ol>
    <li><a href="#cu-print-1">One</a> ...</li>
    <li><a href="#cu-print-2">Two</a> ...</li>
    </ol></li>
    """
    lines: list[str] = []
    in_part = False
    for i, t in enumerate(titles):
        if i in parts:
            if in_part:
                lines.append("</ol></li>")
            lines.append(
                '<li class="cu-print-toc-part"><span class="cu-print-toc-caption">'
                f"{html.escape(parts[i])}</span><ol>"
            )
            in_part = True
        lines.append(
            f'<li><a href="#cu-print-{i}">{html.escape(t)}</a><span class="dots"></span>'
            f'<span class="page" data-part="{i}">{PAGE_NUMBER_SLOT}</span></li>'
        )
    if in_part:
        lines.append("</ol></li>")
    return "\n".join(lines)


def site_title(site: Path, root: str) -> str | None:
    """The book's title as a built edition names it: Sphinx's ``<title>`` of a page is
    "<page> — <book>" (the 中文 edition's book title is translated). None if the page has none.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "intro.html").write_text("<title>注意力 &#8212; 注意力，一步一步来</title>")
    >>> site_title(folder, "intro")
    '注意力，一步一步来'
    """
    page = site / f"{root}.html"
    found = re.search(r"<title>([^<]*)</title>", page.read_text(encoding="utf-8"))
    if not found:
        return None
    return html.unescape(found.group(1)).rsplit(" \u2014 ", 1)[-1].strip() or None


def _rewrite_urls(soup: Any, page: str, prefix: str) -> None:
    """Make local src/href of ``page`` (a docname) relative to the print page."""
    base = posixpath.dirname(page)
    for tag in soup.find_all(True):
        for attr in ("src", "href"):
            url = tag.get(attr)
            if not url or url.startswith(("#", "data:", "mailto:", "javascript:")) or "//" in url:
                continue
            path, _, frag = url.partition("#")
            if not path:
                continue
            target = posixpath.normpath(posixpath.join(base, path))
            tag[attr] = prefix + target + (f"#{frag}" if frag else "")


def print_page(
    repo: Path, site: Path, out_dir: Path, title: str, language: str = "en"
) -> tuple[str, list[str]]:
    """The HTML of the print page and the chapter titles it holds, in order."""
    words = PRINT_TEXT.get(language, PRINT_TEXT["en"])
    from bs4 import BeautifulSoup

    prefix = os.path.relpath(site, out_dir).replace(os.sep, "/") + "/"
    head_links: list[str] = []
    states: list[str] = []
    widget_scripts: list[str] = []
    parts: list[str] = []
    titles: list[str] = []
    mathjax_src: str | None = None
    captions: list[str] = []
    pages = toc_pages(repo)
    for n, page in enumerate(pages):
        path = site / f"{page}.html"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: build the site first (make book)")
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        _rewrite_urls(soup, page, prefix)
        if n == 0:
            captions = part_captions(soup)
        if not head_links:
            for link in soup.head.find_all("link", rel="stylesheet"):
                head_links.append(str(link))
        for script in soup.find_all("script", src=True):
            src = script["src"]
            if mathjax_src is None and "course_vendor/mathjax/" in src:
                # Where this edition's pages load MathJax from (the 中文 edition uses the English
                # site's _static), already made relative to the print page.
                mathjax_src = src.split("?", 1)[0].rsplit("/", 1)[0] + "/tex-mml-chtml.js"
            is_widget_runtime = any(k in src for k in WIDGET_SCRIPT_WORDS)
            if is_widget_runtime and str(script) not in widget_scripts:
                widget_scripts.append(str(script))
        for script in soup.find_all("script", type="application/vnd.jupyter.widget-state+json"):
            states.append(str(script))
        article = soup.find("article") or soup.find("main")
        for_print(soup, article, words["solution"])
        for_print_code(article)
        h1 = article.find("h1")
        name = h1.get_text(" ", strip=True).replace("#", "").strip() if h1 else page
        titles.append(name)
        anchor = f"cu-print-{n}"
        parts.append(
            f'<section class="cu-print-part" id="{anchor}">{article.decode_contents()}</section>'
        )
    starts = toc_part_starts(repo)
    if len(captions) != len(starts):
        raise RuntimeError(
            f"{pages[0]}.html names {len(captions)} part captions, _toc.yml has {len(starts)} parts"
        )
    toc_items = _contents_items(
        titles,
        {pages.index(first): caption for first, caption in zip(starts, captions, strict=True)},
    )
    if mathjax_src is None:  # a book without formulas: the edition's own copy
        mathjax_src = f"{prefix}_static/course_vendor/mathjax/tex-mml-chtml.js"
    mathjax = (
        '<script>window.MathJax = {"options": {"processHtmlClass": "math|output_area"}};</script>\n'
        f'<script defer src="{mathjax_src}"></script>'
    )
    doc = f"""<!DOCTYPE html>
<html lang="{html.escape(language)}"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
{chr(10).join(head_links)}
<style>{PRINT_CSS}</style>
{mathjax}
{chr(10).join(widget_scripts)}
{chr(10).join(states)}
</head><body class="cu-print">
<div class="cu-print-title"><h1>{html.escape(title)}</h1>
<p>{words["intro"]}</p></div>
<nav class="cu-print-part cu-print-toc" aria-label="{words["contents"]}">
<h2>{words["contents"]}</h2>
<ol>{toc_items}</ol></nav>
{"".join(parts)}
</body></html>
"""
    return doc, titles


def _page_texts(pdf: Path) -> list[str]:
    text = subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True, text=True
    ).stdout
    return text.split("\f")


def english_part(title: str) -> str:
    """The title without its parenthesised Chinese, whitespace normalised (what pdftotext keeps in
    order: it may move CJK text around on the line).

    >>> english_part("1. Queries, keys and values (查询、键、值)")
    '1. Queries, keys and values'
    """
    return re.sub(
        r"\s+", " ", re.sub(r"\s*[(（][^)）]*[\u3000-\u9fff][^)）]*[)）]", "", title)
    ).strip()


def top_of_page(page: str, lines: int = 4) -> str:
    found = [ln.strip() for ln in page.splitlines() if ln.strip()][:lines]
    return re.sub(r"\s+", " ", " ".join(found))


def title_pattern(title: str) -> re.Pattern[str]:
    """What pdftotext shows of a chapter title, whitespace anywhere (a long title wraps, and a CJK
    line may be split between any two characters).

    An English title is matched without its parenthesised Chinese (pdftotext may move CJK text
    around on the line); a Chinese title (中文 edition) is matched whole, its English in
    parentheses included.

    >>> shown = "4. 多头注意力（Multi- head attention）"
    >>> bool(title_pattern("4. 多头注意力（Multi-head attention）").match(shown))
    True
    >>> bool(title_pattern("10. MHA、MQA 与 GQA").match("教案：10. MHA、MQA 与 GQA"))
    False
    """
    key = english_part(title)
    if not re.search(r"[\u3000-\u9fff]", key):
        key = re.sub(r"\s+", "", key)
    else:
        key = re.sub(r"\s+", "", title)
    return re.compile(r"\s*".join(re.escape(ch) for ch in key))


def starts_with_title(page: str, title: str) -> bool:
    """Whether the top of ``page`` (pdftotext's text) begins with the chapter ``title``."""
    return bool(title_pattern(title).match(top_of_page(page).replace("- ", "-")))


def chapter_start_pages(pdf: Path, titles: list[str], first: int = 3) -> list[int | None]:
    """1-based page whose top shows each title, searched in order from page ``first``."""
    pages = _page_texts(pdf)
    found: list[int | None] = []
    start = first - 1
    for t in titles:
        hit = None
        for i in range(start, len(pages)):
            if english_part(t) and starts_with_title(pages[i], t):
                hit, start = i + 1, i + 1
                break
        found.append(hit)
    return found


def add_page_numbers(
    pdf: Path, page: Any, starts: list[int | None], options: dict[str, Any]
) -> None:
    """Draw the contents' page numbers (now in the print page's ``.page`` slots) onto the printed
    ``pdf`` without printing the whole book again: Chromium prints only the pages before the first
    chapter, with nothing visible but the numbers and no background (the same layout: the slots
    kept their width while hidden), and each of those pages is laid over its page of the book by
    ``pikepdf`` (qpdf's bindings). The chapters, which start on a page of their own after the
    contents, are not laid out at all for that print (``display: none``): the pages before them
    are laid out as before. The book keeps its outline, links and tags; the numbers are untagged
    (the entries' links carry the chapters' names). Printing the whole book a second time took
    44 % of ``make pdf``; printing its first pages with the rest laid out, 15 s of the 100 s an
    edition takes."""
    import io

    import pikepdf

    front = min((s for s in starts if s), default=0) - 1  # title page and contents
    if front < 1:
        return
    page.evaluate("() => document.documentElement.classList.add('cu-print-numbers-only')")
    # Chromium puts a white page under all it prints, backgrounds printed or not: laid over the
    # book, that page hid its contents (the titles, while pdftotext still read them). A clear
    # default background (what Puppeteer's omitBackground sets) leaves only the numbers.
    cdp = page.context.new_cdp_session(page)
    clear = {"color": {"r": 0, "g": 0, "b": 0, "a": 0}}
    cdp.send("Emulation.setDefaultBackgroundColorOverride", clear)
    only_numbers = {
        **options,
        "print_background": False,
        "outline": False,
        "tagged": False,
        "footer_template": "<div></div>",  # the book's page has its footer already
        "page_ranges": f"1-{front}",
    }
    try:
        numbers = page.pdf(**only_numbers)
    finally:  # the page is the book's again, whatever the print did
        cdp.send("Emulation.setDefaultBackgroundColorOverride", {})
        cdp.detach()
        page.evaluate("() => document.documentElement.classList.remove('cu-print-numbers-only')")
    with (
        pikepdf.open(pdf, allow_overwriting_input=True) as book,
        pikepdf.open(io.BytesIO(numbers)) as overlay,
    ):
        if len(overlay.pages) != front:
            raise RuntimeError(
                f"the contents' numbers printed on {len(overlay.pages)} pages, expected {front}"
            )
        for i, numbers_page in enumerate(overlay.pages):
            book.pages[i].add_overlay(numbers_page)
        book.save(pdf)


def build_pdf(
    repo: Path,
    site: Path,
    out_dir: Path,
    *,
    title: str | None = None,
    language: str = "en",
    name: str = PDF_NAME,
) -> Path:
    """Print the book built in ``site`` to ``out_dir/name`` (``language``: its ``<html lang>``)."""
    from playwright.sync_api import sync_playwright

    from course_site.browser import wait_for_widgets

    words = PRINT_TEXT.get(language, PRINT_TEXT["en"])
    site, out_dir = site.resolve(), out_dir.resolve()
    if title is None:  # the edition's own title (the 中文 one is translated), else _config.yml's
        title = site_title(site, toc_pages(repo)[0])
    if title is None:
        config = yaml.safe_load((repo / "_config.yml").read_text(encoding="utf-8"))
        title = str(config.get("title", "Book"))
    out_dir.mkdir(parents=True, exist_ok=True)
    doc, titles = print_page(repo, site, out_dir, title, language)
    book_html = out_dir / ("book.html" if name == PDF_NAME else f"{Path(name).stem}.html")
    book_html.write_text(doc, encoding="utf-8")
    pdf = out_dir / name
    footer = (
        '<div style="font-size:8px;width:100%;text-align:center;color:#555">'
        '<span class="pageNumber"></span></div>'
    )
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        context = browser.new_context(viewport={"width": 760, "height": 1000})
        context.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith(("file://", "data:", "blob:"))
                else route.abort()
            ),
        )
        page = context.new_page()
        # A loaded machine may need more than the default 30 s to load the whole book.
        page.goto(book_html.as_uri(), wait_until="load", timeout=180_000)
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("() => MathJax.startup.promise")
        if wait_for_widgets(page, timeout_ms=60_000):
            page.wait_for_timeout(300)
        # Every still is taken before any is put in: each replacement lays the whole book out
        # again, and the next screenshot would wait for that layout.
        stills = [
            [
                still["index"],
                base64.b64encode(
                    page.locator(f'[data-cu-still="{still["index"]}"]').screenshot()
                ).decode(),
                f"{still['caption']} ({words['still']})",
            ]
            for still in page.evaluate(STILLS_JS)
        ]
        page.evaluate(
            """(stills) => stills.forEach(([i, png, caption]) => {
              const area = document.querySelector(`[data-cu-still="${i}"]`);
              const fig = document.createElement('figure');
              fig.className = 'cu-still';
              const img = document.createElement('img');
              img.src = 'data:image/png;base64,' + png;
              img.alt = caption;
              const cap = document.createElement('figcaption');
              cap.textContent = caption;
              fig.append(img, cap);
              area.replaceWith(fig);
            })""",
            stills,
        )
        options = dict(
            format="A4",
            print_background=True,
            display_header_footer=True,
            header_template="<div></div>",
            footer_template=footer,
            outline=True,
            tagged=True,
        )
        page.pdf(path=str(pdf), **options)
        if shutil.which("pdftotext"):
            starts = chapter_start_pages(pdf, titles)
            page.evaluate(
                """(starts) => document.querySelectorAll('.cu-print-toc .page').forEach((s, i) => {
                  s.textContent = starts[i] === null ? '' : String(starts[i]);
                })""",
                starts,
            )
            add_page_numbers(pdf, page, starts, options)
        browser.close()
        browser.close()
    return pdf
