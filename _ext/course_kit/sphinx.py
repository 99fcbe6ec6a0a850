"""Sphinx extension of the classroom kit (enabled in ``_config.yml``).

* ``config-inited``: serves ``static/`` (reveal.js, the deck's own JS/CSS) under ``_static/``;
* ``source-read``: the welcome page's ``git clone`` command gets the repository's address once
  ``_config.yml`` sets ``repository.url`` (:func:`fill_repository_url`);
* ``html-page-context``: on each chapter page, under its title, links to the chapter's deck and
  its learner copy (a download); on the welcome page, links to the slides index and the zip of all
  learner copies;
* ``build-finished``: builds the decks, learner copies and zip into the site
  (:func:`course_kit.build_kit`), so ``jupyter-book build`` (``make book``) makes them.
"""

from __future__ import annotations

import html
import posixpath
import re
import time
from pathlib import Path
from typing import Any

from course_kit import LEARNER_DIR, SLIDES_DIR, ZIP_NAME, build_kit, learner_name

STATIC = Path(__file__).parent / "static"


def launch_problem(theme_options: dict[str, Any]) -> str | None:
    """Why the launch buttons that ``_config.yml`` asks for cannot work (None if they can).

    >>> launch_problem({"launch_buttons": {"jupyterhub_url": ""}, "repository_url": ""}) is None
    True
    >>> launch_problem({"launch_buttons": {"binderhub_url": "https://mybinder.org"}})[:30]
    'launch_buttons.binderhub_url i'
    """
    launch = theme_options.get("launch_buttons") or {}
    wanted = [k for k in ("jupyterhub_url", "binderhub_url") if str(launch.get(k) or "").strip()]
    repo = str(theme_options.get("repository_url") or "")
    if wanted and "github.com/" not in repo:
        return (
            f"launch_buttons.{wanted[0]} is set in _config.yml, but repository.url is not a GitHub "
            f"repository ({repo!r}): the launch buttons need the course's GitHub address"
        )
    return None


def _config_inited(app: Any, config: Any) -> None:
    # No copy of every page's source in the site (5 MB for both editions): the theme's download
    # menu offers the chapter's learner copy instead (see learner_download), and the source
    # notebook, which holds the solutions, stays in the repository.
    config.html_copy_source = False
    paths = list(config.html_static_path or [])
    if str(STATIC) not in paths:
        paths.append(str(STATIC))
    config.html_static_path = paths
    options = config.html_theme_options if isinstance(config.html_theme_options, dict) else {}
    problem = launch_problem(options)
    if problem:
        from sphinx.errors import ConfigError

        raise ConfigError(problem)


#: What the welcome page's ``git clone`` command shows until the publisher sets repository.url.
REPOSITORY_PLACEHOLDER = "<URL of this repository>"


def fill_repository_url(text: str, url: str) -> str:
    """``text`` with the repository's address in place of the placeholder (unchanged if unset).

    >>> fill_repository_url("git clone <URL of this repository> x", "https://github.com/o/r")
    'git clone https://github.com/o/r x'
    >>> fill_repository_url("git clone <URL of this repository> x", "")
    'git clone <URL of this repository> x'
    """
    return text.replace(REPOSITORY_PLACEHOLDER, url) if url else text


def _source_read(app: Any, docname: str, source: list[str]) -> None:
    if docname != "intro":
        return
    options = app.config.html_theme_options
    url = str((options if isinstance(options, dict) else {}).get("repository_url") or "")
    source[0] = fill_repository_url(source[0], url)


def _chapter_stem(app: Any, pagename: str) -> str | None:
    if not pagename.startswith("chapters/"):
        return None
    src = Path(app.srcdir) / f"{pagename}.ipynb"
    return src.stem if src.is_file() else None


#: The kit links' words, per edition (``language`` of the Sphinx build, ``en`` by default).
KIT_TEXT = {
    "en": {
        "slides": "Slides for this chapter",
        "learner": "Download the learner copy (.ipynb, no solutions)",
        "classes": "For classes: ",
        "all_slides": "slides for every chapter",
        "all_learner": "all learner copies and requirements.txt (.zip)",
    },
    "zh-CN": {
        "slides": "本章幻灯片",
        "learner": "下载学员版笔记本（.ipynb，不含答案）",
        "classes": "课堂用：",
        "all_slides": "每一章的幻灯片",
        "all_learner": "全部学员版笔记本和 requirements.txt（.zip）",
    },
}


def kit_language(language: str | None) -> str:
    """The kit's language tag for a Sphinx ``language`` (``zh_CN`` -> ``zh-CN``; else ``en``).

    >>> kit_language("zh_CN"), kit_language(None)
    ('zh-CN', 'en')
    """
    return "zh-CN" if str(language or "").lower().startswith("zh") else "en"


def kit_links(pagename: str, stem: str | None, root_doc: str, language: str = "en") -> str:
    """The HTML of the kit's links for a page ('' if the page gets none).

    >>> "../slides/01_x.slides.html" in kit_links("chapters/01_x", "01_x", "intro")
    True
    >>> "本章幻灯片" in kit_links("chapters/01_x", "01_x", "intro", language="zh-CN")
    True
    """
    text = KIT_TEXT.get(language, KIT_TEXT["en"])
    base = posixpath.dirname(pagename)

    def rel(target: str) -> str:
        return html.escape(posixpath.relpath(target, base or "."), quote=True)

    if stem:
        deck = rel(f"{SLIDES_DIR}/{stem}.slides.html")
        copy = rel(f"{LEARNER_DIR}/{learner_name(stem)}")
        return (
            '<p class="cu-kit-links">'
            f'<a class="cu-kit-slides btn btn-sm btn-outline-primary" href="{deck}">'
            f"{text['slides']}</a> "
            f'<a class="cu-kit-learner btn btn-sm btn-outline-primary" href="{copy}" download>'
            f"{text['learner']}</a></p>"
        )
    if pagename == root_doc:
        index = rel(f"{SLIDES_DIR}/index.html")
        zipped = rel(f"{LEARNER_DIR}/{ZIP_NAME}")
        return (
            f'<p class="cu-kit-links">{text["classes"]}'
            f'<a class="cu-kit-slides" href="{index}">{text["all_slides"]}</a> · '
            f'<a class="cu-kit-learner" href="{zipped}" download>'
            f"{text['all_learner']}</a></p>"
        )
    return ""


def learner_download(header_buttons: list[dict], learner_href: str | None, tooltip: str) -> None:
    """Point the theme's download menu at the learner copy instead of the page's source file.

    The site has no ``_sources`` (``html_copy_source = False``), so the theme's source link would
    lead nowhere; a chapter offers its learner copy there, other pages just "print to PDF".

    >>> buttons = [{"label": "download-buttons", "buttons": [
    ...     {"label": "download-source-button", "url": "../_sources/c.ipynb", "text": ".ipynb"},
    ...     {"label": "download-pdf-button", "text": ".pdf"}]}]
    >>> learner_download(buttons, "../learner/c.learner.ipynb", "learner copy")
    >>> [(b["label"], b.get("url")) for b in buttons[0]["buttons"]]
    [('download-learner-button', '../learner/c.learner.ipynb'), ('download-pdf-button', None)]
    """
    sources = ("download-source-button", "download-notebook-button")
    for group in header_buttons:
        if group.get("label") != "download-buttons":
            continue
        kept = []
        for button in group.get("buttons", []):
            if button.get("label") not in sources:
                kept.append(button)
            elif learner_href:
                kept.append(
                    button
                    | {"url": learner_href, "text": ".ipynb", "tooltip": tooltip}
                    | {"label": "download-learner-button", "icon": "fas fa-code"}
                )
                learner_href = None  # one learner link, even if the theme offered two sources
        group["buttons"] = kept


def _page_context(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    language = kit_language(app.config.language)
    stem = _chapter_stem(app, pagename)
    if isinstance(context.get("header_buttons"), list):
        href = None
        if stem:
            target = f"{LEARNER_DIR}/{learner_name(stem)}"
            href = posixpath.relpath(target, posixpath.dirname(pagename) or ".")
        tooltip = KIT_TEXT.get(language, KIT_TEXT["en"])["learner"]
        learner_download(context["header_buttons"], href, tooltip)
    if "body" not in context:
        return
    links = kit_links(pagename, stem, app.config.root_doc, language)
    if not links:
        return
    body = context["body"]
    m = re.search(r"</h1>", body)
    context["body"] = body[: m.end()] + links + body[m.end() :] if m else links + body


def _build_finished(app: Any, exception: Exception | None) -> None:
    if exception is not None or getattr(app.builder, "format", "") != "html":
        return
    start = time.perf_counter()
    # The 中文 edition builds its kit from translated chapters (course_site.zh_edition).
    source = Path(app.config.classroom_kit_source or app.srcdir)
    language = kit_language(app.config.language)
    # jupyter-book puts _config.yml's title in html_title and leaves `project` unset
    # (Sphinx's "Project name not set"); the 中文 edition's html_title is its translated title.
    title = str(app.config.html_title or app.config.project)
    report = build_kit(source, Path(app.outdir), title=title, language=language)
    from sphinx.util import logging

    logging.getLogger(__name__).info(
        "classroom kit: %d decks, %d learner copies in %.1f s",
        len(report.decks),
        len(report.learner),
        time.perf_counter() - start,
    )


def setup(app: Any) -> dict[str, Any]:
    # Where the kit reads chapters/ and instructor/ from ("" = the book's source folder).
    app.add_config_value("classroom_kit_source", "", "env", types=[str])
    app.connect("config-inited", _config_inited, priority=900)
    app.connect("source-read", _source_read)
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("build-finished", _build_finished, priority=900)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
