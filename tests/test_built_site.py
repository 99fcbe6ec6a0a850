"""Rule 9: the built website serves everything itself, has no broken local links, and is accessible.

These tests read the HTML of the built book (no browser needed; ``html.parser``), but they are
marked ``browser`` because they need ``_build/html``: ``make test`` runs them after ``make book``
with ``pytest -m "browser or jupyterlab" tests``. The site is ``$COURSE_SITE_DIR`` (default
``_build/html`` in the repository). A missing site skips the tests, with the reason, except in CI
(``CI=true``), where it is a failure.

What is checked, on every page (every ``*.html`` outside ``_static``, ``_sources``, ``_images``):

- every ``<img>`` has a non-empty ``alt``; the page has a non-empty ``<title>`` and ``<html lang>``;
- no loaded resource points outside the site: ``<script src>``, ``<link href>`` for stylesheets,
  fonts, icons and preloads, ``<img>``/``<source>``/``<iframe>``/``<video>``/``<audio>``/``<embed>``
  ``src``, ``<object data>``, and ``url(...)``/``@import`` in inline styles and in every local CSS
  file the pages load (followed through ``@import``). "Outside" means ``http(s)://`` or ``//``;
- no loaded resource URL, inline ``<script>`` or inline ``<style>`` contains ``cdn.``, ``unpkg`` or
  ``jsdelivr``. (A vendored library may *contain* a CDN fallback URL, used only if a local module
  is missing, which the real-browser tests in ``tests/browser`` watch for. Their text is not
  checked here.);
- every local ``src``/``href`` (links included) and every local CSS ``url()`` exists on disk, and a
  ``#fragment`` into a page of the site names an ``id`` that exists on that page.
"""

from __future__ import annotations

import functools
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from course_site import SMOLLM2_MODEL_DIR

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
CDN_WORDS = ("cdn.", "unpkg", "jsdelivr")
RESOURCE_RELS = {
    "stylesheet",
    "preload",
    "modulepreload",
    "prefetch",
    "icon",
    "shortcut",
    "manifest",
}
NON_PAGE_DIRS = ("_static/", "_sources/", "_images/", "_downloads/")


def site_dir() -> Path:
    return Path(os.environ.get("COURSE_SITE_DIR", REPO / "_build" / "html"))


@pytest.fixture(scope="module")
def site() -> Path:
    root = site_dir()
    if not (root / "index.html").is_file():
        message = f"built site not found at {root} (run `make book`, or set COURSE_SITE_DIR)"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message + "; in CI the site must exist")
        pytest.skip(message)
    return root


def is_external(url: str) -> bool:
    return bool(re.match(r"^\s*(https?:)?//", url, re.I))


def is_local_target(url: str) -> bool:
    """A URL that names a file of the site (not external, not mailto:, data:, javascript: ...)."""
    url = url.strip()
    return bool(url) and not is_external(url) and not re.match(r"^[a-z][a-z0-9+.-]*:", url, re.I)


class Page(HTMLParser):
    """Everything the checks need from one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lang: str | None = None
        self.title = ""
        self.in_title = False
        self.in_inline: str | None = None  # "script" or "style" while inside an inline one
        self.imgs: list[dict[str, str | None]] = []
        self.resources: list[tuple[str, str]] = []  # (tag description, url) loaded by the page
        self.links: list[tuple[str, str]] = []  # (tag description, url) of every local href/src
        self.inline: list[tuple[str, str]] = []  # (kind, text) of inline scripts and styles
        self.ids: set[str] = set()
        self.icons: list[str] = []  # href of every <link rel="icon">

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v or "") for k, v in attrs}
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "name" in a:
            self.ids.add(a["name"])
        if tag == "html":
            self.lang = a.get("lang")
        elif tag == "title":
            self.in_title = True
        elif tag == "img":
            self.imgs.append(dict(attrs))
        if "style" in a:
            self.inline.append(("style attribute", a["style"]))
        if tag == "script":
            if a.get("src"):
                self.resources.append(("<script src>", a["src"]))
            else:
                self.in_inline = "script"
        elif tag == "style":
            self.in_inline = "style"
        elif tag == "link" and a.get("href"):
            rels = set(a.get("rel", "").lower().split())
            if "icon" in rels:
                self.icons.append(a["href"])
            if rels & RESOURCE_RELS:
                self.resources.append((f"<link rel={a.get('rel')}>", a["href"]))
        elif tag in {"img", "source", "iframe", "video", "audio", "embed", "track", "input"}:
            if a.get("src"):
                self.resources.append((f"<{tag} src>", a["src"]))
            for part in a.get("srcset", "").split(","):
                if part.strip():
                    self.resources.append((f"<{tag} srcset>", part.split()[0]))
        elif tag == "object" and a.get("data"):
            self.resources.append(("<object data>", a["data"]))
        for attr in ("href", "src"):
            if a.get(attr):
                self.links.append((f"<{tag} {attr}>", a[attr]))

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        elif tag in {"script", "style"}:
            self.in_inline = None

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data
        if self.in_inline:
            self.inline.append((f"inline <{self.in_inline}>", data))


def page_rel(rel_path: str) -> str:
    """A path within its edition: the 中文 edition is the same site under ``zh/``."""
    return rel_path.removeprefix("zh/")


def site_pages(root: Path) -> list[Path]:
    """The pages of both editions (English, and 中文 under ``zh/``)."""
    return sorted(
        p
        for p in root.rglob("*.html")
        if not page_rel(p.relative_to(root).as_posix()).startswith(NON_PAGE_DIRS)
    )


@functools.cache
def parse_page(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def resolve(base: Path, url: str) -> Path:
    return (base.parent / unquote(urlsplit(url).path)).resolve()


CSS_URL = re.compile(r"url\(\s*(['\"]?)([^'\")]*)\1\s*\)|@import\s+(['\"])([^'\"]+)\3", re.I)


def css_urls(text: str) -> list[str]:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)  # comments
    return [m.group(2) or m.group(4) for m in CSS_URL.finditer(text)]


def loaded_css(root: Path) -> set[Path]:
    """Every local CSS file a page loads, followed through @import."""
    todo = [
        resolve(page, url)
        for page in site_pages(root)
        for kind, url in parse_page(page).resources
        if kind.startswith("<link") and is_local_target(url) and urlsplit(url).path.endswith(".css")
    ]
    seen: set[Path] = set()
    while todo:
        css = todo.pop()
        if css in seen or not css.is_file():
            continue
        seen.add(css)
        for url in css_urls(css.read_text(encoding="utf-8", errors="replace")):
            if is_local_target(url) and urlsplit(url).path.endswith(".css"):
                todo.append(resolve(css, url))
    return seen


def rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def report(problems: list[str], what: str) -> None:
    if problems:
        shown = problems[:40] + (
            [f"... and {len(problems) - 40} more"] if len(problems) > 40 else []
        )
        pytest.fail(f"{what} ({len(problems)}):\n  " + "\n  ".join(shown))


def test_site_has_pages(site: Path):
    pages = site_pages(site)
    assert len(pages) >= 3, f"only {len(pages)} HTML pages in {site}"


def test_every_img_has_alt_text(site: Path):
    problems = []
    for path in site_pages(site):
        for img in parse_page(path).imgs:
            if not (img.get("alt") or "").strip():
                problems.append(f"{rel(site, path)}: <img src={img.get('src')!r}> has no alt text")
    report(problems, "images without alt text")


def test_every_page_has_title_and_lang(site: Path):
    problems = []
    for path in site_pages(site):
        page = parse_page(path)
        if not page.title.strip():
            problems.append(f"{rel(site, path)}: no <title>")
        if not (page.lang or "").strip():
            problems.append(f"{rel(site, path)}: <html> has no lang attribute")
    report(problems, "pages without <title> or lang")


def test_every_page_declares_an_icon_the_site_serves(site: Path):
    """Without a ``<link rel="icon">`` every browser asks for ``/favicon.ico``: a 404 in the
    reader's console (seen once per browser, so the live-page tests cannot see it)."""
    problems = []
    for path in site_pages(site):
        icons = parse_page(path).icons
        if not icons:
            problems.append(f"{rel(site, path)}: no <link rel=icon>")
        for href in icons:
            if not href.startswith("data:") and not resolve(path, href).is_file():
                problems.append(f"{rel(site, path)}: icon {href} is not in the site")
    report(problems, "pages without an icon")


def test_no_resource_is_loaded_from_outside_the_site(site: Path):
    problems = []
    for path in site_pages(site):
        page = parse_page(path)
        for kind, url in page.resources:
            if is_external(url):
                problems.append(f"{rel(site, path)}: {kind} loads {url}")
            elif not url.startswith("data:") and any(w in url.lower() for w in CDN_WORDS):
                problems.append(f"{rel(site, path)}: {kind} URL names a CDN: {url}")
        for kind, text in page.inline:
            urls = css_urls(text) if "style" in kind else []
            problems += [f"{rel(site, path)}: {kind} loads {u}" for u in urls if is_external(u)]
            for word in CDN_WORDS:
                if word in text.lower():
                    at = text.lower().index(word)
                    snippet = text[max(0, at - 60) : at + 60].replace("\n", " ")
                    problems.append(f"{rel(site, path)}: {kind} contains {word!r}: ...{snippet}...")
    for css in sorted(loaded_css(site)):
        for url in css_urls(css.read_text(encoding="utf-8", errors="replace")):
            if is_external(url) or any(w in url.lower() for w in CDN_WORDS):
                problems.append(f"{rel(site, css)}: url()/@import loads {url}")
    report(problems, "resources from outside the site")


def test_local_links_and_resources_exist(site: Path):
    problems = []
    for path in site_pages(site):
        for kind, url in parse_page(path).links:
            if not is_local_target(url):
                continue
            parts = urlsplit(url)
            target = resolve(path, url) if parts.path else path
            if parts.path and not target.exists():
                problems.append(f"{rel(site, path)}: {kind} {url!r} -> missing file")
            elif target.is_dir() and not (target / "index.html").is_file():
                problems.append(
                    f"{rel(site, path)}: {kind} {url!r} -> directory without index.html"
                )
            elif (
                parts.fragment
                and target.suffix == ".html"
                and target.is_file()
                and site.resolve() in target.parents
                and not page_rel(rel(site.resolve(), target)).startswith(NON_PAGE_DIRS)
                and unquote(parts.fragment) not in parse_page(target).ids
            ):
                problems.append(f"{rel(site, path)}: {kind} {url!r} -> no id {parts.fragment!r}")
    for css in sorted(loaded_css(site)):
        for url in css_urls(css.read_text(encoding="utf-8", errors="replace")):
            if is_local_target(url) and not url.startswith("#") and not resolve(css, url).exists():
                problems.append(f"{rel(site, css)}: url({url}) -> missing file")
    report(problems, "broken local links or resources")


def test_every_solution_toggle_has_one_label_in_the_pages_language(site: Path):
    """A solution cell's toggle reads "Show the solution" in every chapter (中文: 显示答案), never
    myst-nb's "Show code cell content"; a 中文 page has no English toggle label at all."""
    problems = []
    solutions = 0
    for path in site_pages(site):
        text = path.read_text(encoding="utf-8")
        zh = rel(site, path).startswith("zh/")
        for m in re.finditer(
            r'<div class="cell ([^"]*)">\s*<details[^>]*>\s*<summary[^>]*>\s*'
            r'<p class="collapsed admonition-title">([^<]*)</p>',
            text,
        ):
            tags, label = m.group(1).split(), m.group(2)
            if "tag_solution" in tags:
                solutions += 1
                want = "显示答案" if zh else "Show the solution"
                if label != want:
                    problems.append(f"{rel(site, path)}: solution toggle {label!r}, not {want!r}")
            elif zh and re.search(r"[A-Za-z]", label):
                problems.append(f"{rel(site, path)}: English toggle label {label!r}")
    assert solutions >= 2 * 3 * 13, f"only {solutions} solution toggles found (the regex is stale?)"
    report(problems, "toggle labels")


def test_decks_link_the_figures_the_pages_serve_instead_of_holding_copies(site: Path):
    """A deck's figure that a chapter page shows too is a link to ``_images/`` (the file the page
    loads), not a second copy inside the deck; the links resolve (test above). Both editions."""
    import base64
    import hashlib

    problems, linked = [], 0
    for edition in (site, site / "zh"):
        for deck in sorted((edition / "slides").glob("*.slides.html")):
            text = deck.read_text(encoding="utf-8")
            linked += len(re.findall(r'<img [^>]*src="\.\./_images/[0-9a-f]{64}\.png"', text))
            for data in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=\s]+)", text):
                name = f"{hashlib.sha256(base64.b64decode(data)).hexdigest()}.png"
                if (edition / "_images" / name).is_file():
                    problems.append(f"{rel(site, deck)}: holds a copy of _images/{name}")
    assert linked >= 2 * 40, f"only {linked} figures linked from the decks (the regex is stale?)"
    report(problems, "figures copied into decks")


#: The whole built site (both editions, decks, learner copies, MiniLM's browser model) in bytes:
#: 84.6 MB once chapters 5, 6, 7 and 13 had their practitioners' sections; 73.4 MB since MiniLM's
#: weights are packed (byte planes under deflate, 45.5 -> 38.6 MB), the decks link the figures the
#: pages serve instead of holding copies (-3.6 MB) and the theme's unused TrueType fonts are gone
#: (-0.7 MB).
SITE_BUDGET_BYTES = 75_000_000
#: SmolLM2's browser model (chapter 7's writer), counted apart: a download the reader asks for,
#: as big as the model is (86.6 MB of quantised weights, lossless), shared by both editions.
SMOLLM2_BUDGET_BYTES = 90_000_000


def test_the_site_weighs_at_most_75_mb_and_the_model_90(site: Path):
    """A course copied to a school server or a USB stick: the built site stays <= 75 MB (73.4 MB
    measured with both editions, their decks and learner copies), plus
    SmolLM2's browser model, <= 90 MB on its own (``_static/smollm2``). The biggest parts are
    listed when it does not, so the failure says where the weight went."""
    sizes: dict[str, int] = {}
    model = site / SMOLLM2_MODEL_DIR
    model_bytes = sum(p.stat().st_size for p in model.rglob("*") if p.is_file())
    assert 0 < model_bytes <= SMOLLM2_BUDGET_BYTES, f"SmolLM2's files: {model_bytes / 1e6:.1f} MB"
    for path in site.rglob("*"):
        if path.is_file() and model not in path.parents:
            top = "/".join(path.relative_to(site).parts[:2])
            sizes[top] = sizes.get(top, 0) + path.stat().st_size
    total = sum(sizes.values())
    biggest = sorted(sizes.items(), key=lambda kv: -kv[1])[:8]
    listed = ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in biggest)
    assert total <= SITE_BUDGET_BYTES, f"site is {total / 1e6:.1f} MB (> 75 MB): {listed}"
    assert not (site / "_sources").exists(), "page sources are copied into the site again"
    chapter = site / "chapters" / "01_queries_keys_values.html"
    assert "learner/01_queries_keys_values.learner.ipynb" in chapter.read_text(encoding="utf-8")
