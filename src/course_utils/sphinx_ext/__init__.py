"""Sphinx extension of the course (enabled from ``_config.yml``): the site serves everything itself.

What it does, at ``config-inited`` (after Jupyter Book generated the Sphinx config):

* appends ``static/`` (this package's folder) to ``html_static_path``. Jupyter Book adds every
  ``.js`` and ``.css`` it finds under ``html_static_path`` to *every* page when it generates the
  config; because we append later, the vendored trees are copied to ``_static/`` but never
  auto-included;
* sets myst-nb's ``nb_ipywidgets_js`` to the vendored require.js, our ``course_widgets/config.js``
  and html-manager's ``embed-amd.js``; myst-nb adds these only to pages whose notebook stored
  widget state;
* sets ``mathjax_path`` to the vendored MathJax 3; Sphinx adds it only to pages with math;
* sets the theme's ``default_mode`` to ``light`` when empty (else a console error on first visit);
* at ``html-page-context``, drops sphinx-thebe's scripts when the thebe launch button is off
  (Jupyter Book always loads sphinx-thebe; its inline ``const THEBE_JS_URL = "https://unpkg..."``
  is added twice per page, a SyntaxError in the console, and names a CDN), and drops exact
  duplicates;
* at ``build-finished``, turns sphinx-external-toc's bare ``index.html`` redirect (one ``<meta>``
  line) into a small valid page with ``<html lang>``, a ``<title>`` and a visible link.

The vendored files (``static/course_vendor/``, with licences and ``VERSIONS.json``) are refreshed by
``scripts/vendor_static.py`` (``make vendor``).

>>> list(widget_scripts())[1]  # between require.js and embed-amd.js
'course_widgets/config.js'
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

STATIC = Path(__file__).parent / "static"
MATHJAX = "course_vendor/mathjax/tex-mml-chtml.js"


def widget_scripts() -> dict[str, dict[str, str]]:
    """Scripts (relative to ``_static``) a page with widgets needs, in load order."""
    return {
        "course_vendor/require/require.js": {},
        "course_widgets/config.js": {},
        "course_vendor/html-manager/embed-amd.js": {},
    }


def _config_inited(app: Any, config: Any) -> None:
    static = str(STATIC)
    paths = list(config.html_static_path or [])
    if static not in paths:
        paths.append(static)
    config.html_static_path = paths
    config.nb_ipywidgets_js = widget_scripts()
    # pydata-sphinx-theme logs console.error("Got invalid theme mode: .") on a first visit when
    # Jupyter Book leaves default_mode empty: give it a valid mode.
    # (the theme reads it from html_context, not from html_theme_options)
    context = dict(config.html_context or {})
    if not context.get("default_mode"):
        context["default_mode"] = "light"
        config.html_context = context
    mathjax = str(config.mathjax_path or "")
    if not mathjax or "://" in mathjax:
        config.mathjax_path = MATHJAX


def _thebe_enabled(config: Any) -> bool:
    options = getattr(config, "html_theme_options", None) or {}
    launch = options.get("launch_buttons", {}) if isinstance(options, dict) else {}
    return bool(launch.get("thebe", False))


def _is_thebe(script: Any) -> bool:
    filename = str(getattr(script, "filename", "") or "")
    body = str((getattr(script, "attributes", None) or {}).get("body", ""))
    return (
        filename.endswith("sphinx-thebe.js")
        or "THEBE_JS_URL" in body
        or "unpkg.com/thebe" in filename
    )


def _page_context(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    scripts = context.get("script_files")
    if scripts is None:
        return
    thebe_on = _thebe_enabled(app.config)
    kept: list[Any] = []
    seen: set[tuple[str, str]] = set()
    for script in scripts:
        if not thebe_on and _is_thebe(script):
            continue
        attrs = getattr(script, "attributes", None) or {}
        key = (str(getattr(script, "filename", script) or ""), str(attrs.get("body", "")))
        if key in seen:
            continue
        seen.add(key)
        kept.append(script)
    scripts[:] = kept
    if not thebe_on and context.get("css_files") is not None:
        css = context["css_files"]
        css[:] = [c for c in css if not str(getattr(c, "filename", c)).endswith("sphinx-thebe.css")]


BARE_REDIRECT = re.compile(r'^\s*<meta http-equiv="Refresh" content="0; url=([^"<>]+)" />\s*$')


def redirect_page(target: str, title: str, language: str = "en") -> str:
    """A complete HTML page that sends the reader to ``target`` (used for the root index.html).

    >>> "<title>Course</title>" in redirect_page("intro.html", "Course")
    True
    """
    t = html.escape(title)
    u = html.escape(target, quote=True)
    return (
        f'<!DOCTYPE html>\n<html lang="{html.escape(language)}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Refresh" content="0; url={u}">\n<title>{t}</title>\n</head>\n'
        f'<body>\n<p><a href="{u}">{t}: go to the first page</a></p>\n</body>\n</html>\n'
    )


def _build_finished(app: Any, exception: Exception | None) -> None:
    if exception is not None or getattr(app.builder, "format", "") != "html":
        return
    index = Path(app.outdir) / "index.html"
    if not index.is_file():
        return
    match = BARE_REDIRECT.match(index.read_text(encoding="utf-8"))
    if match:
        title = str(getattr(app.config, "html_title", "") or app.config.project or "Home")
        language = str(app.config.language or "en")
        index.write_text(redirect_page(match.group(1), title, language), encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    # After myst-nb and Jupyter Book (priority 500 default): run late so our values win.
    app.connect("config-inited", _config_inited, priority=900)
    app.connect("html-page-context", _page_context, priority=900)
    # After sphinx-external-toc wrote its redirect (default priority 500).
    app.connect("build-finished", _build_finished, priority=900)
    return {"version": "0.2", "parallel_read_safe": True, "parallel_write_safe": True}
