"""The site's build machinery (Sphinx extension ``course_site``): the site serves everything itself.

It lives outside the learner-facing package ``course_utils`` and is enabled from ``_config.yml``
(``sphinx: local_extensions: {course_site: _ext/}``). What it does:

At ``config-inited`` (after Jupyter Book generated the Sphinx config):

* appends ``static/`` to ``html_static_path``. Jupyter Book adds every ``.js`` and ``.css`` it
  finds under ``html_static_path`` to *every* page when it generates the config; because we append
  later, the vendored trees are copied to ``_static/`` but never auto-included;
* appends ``templates/`` to ``templates_path``: our copies of a few theme components, fixed for
  screen readers (a button's name contains its visible text);
* sets myst-nb's ``nb_ipywidgets_js`` to our small anywidget loader ``course/widget_loader.js``
  (:func:`widget_scripts`); myst-nb adds it only to pages whose notebook stored widget state;
* sets ``mathjax_path`` to the vendored MathJax 3 (Sphinx adds it only to pages with math) and
  keeps formulas out of the Tab order (a reader can turn MathJax's explorer on in its menu);
* sets the theme's ``default_mode`` to ``light`` when empty (else a console error on first visit);
* sets ``html_favicon`` to ``static/course/favicon.svg`` when empty (else every browser asks for
  ``/favicon.ico``, a 404 in the console).

At ``builder-inited``: adds ``course/site.css`` (phones, dark mode, focus; every page) and
``course/site_nav.js`` (the ☰ and contents buttons work on every copy, and the language switch
keeps the section being read; every page).

At ``html-page-context``:

* fails the build (``WidgetModelError``) on a page that saved a widget model other than an
  anywidget's (with its layout and style): the site carries no other widget manager, so such a
  widget would be frozen (:func:`foreign_widget_models`);
* labels every solution toggle "Show the solution" (中文: 显示答案), and a 中文 page's other
  hidden-cell toggles in Chinese (:func:`label_toggles`);
* names each hidden-cell toggle by its visible text ("Show the solution"), not "Toggle hidden
  content", and gives the bibliography a list structure screen readers accept;
* drops sphinx-thebe's scripts when the thebe launch button is off (Jupyter Book always loads
  sphinx-thebe; its inline ``const THEBE_JS_URL = "https://unpkg..."`` is added twice per page,
  a SyntaxError in the console, and names a CDN), and drops exact duplicates.

At ``build-finished``: wraps every figure a notebook drew in a link to its full-size image, with
the width under which its smallest text would be under 11 px as its least width (a phone scrolls
it sideways, ``course/wide_figures.js`` then shows a hint; :func:`link_figures`); writes every
course widget's ES module (per language) and stylesheet into
``_static/course_widgets/`` (:func:`write_widget_code`), where the loader takes the code that the
saved notebooks leave out (their widgets keep state only); deletes the theme's Font Awesome script,
which no page loads (our ``templates/static/webpack-macros.html`` leaves it out: the theme's
stylesheet draws the icons from the web fonts); turns sphinx-external-toc's bare ``index.html``
redirect (one ``<meta>`` line) into a small valid page with ``<html lang>``, a ``<title>`` and a
visible link; and, when a page holds the head explorer, writes the browser model into
``_static/minilm/`` (:func:`write_browser_model`): the ES modules beside
``course_utils.pretrained.minilm_web`` (``.mjs``, so never swept into every page as plain scripts,
and started only by the widget on the reader's first edit) and the float16 weights exported from the
package's safetensors (generated, never committed).

The vendored files (``static/course_vendor/``, with licences and ``VERSIONS.json``) are refreshed by
``scripts/vendor_static.py`` (``make vendor``).

>>> list(widget_scripts())
['course/widget_loader.js']
>>> foreign_widget_models({"a": {"model_module": "anywidget"}})
[]
"""

from __future__ import annotations

import copy
import functools
import html
import json
import math
import posixpath
import re
import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform

STATIC = Path(__file__).parent / "static"
TEMPLATES = Path(__file__).parent / "templates"
MATHJAX = "course_vendor/mathjax/tex-mml-chtml.js"
#: Our anywidget loader; a stable URL (``_static/course/widget_loader.js``) the slide decks use too.
LOADER = "course/widget_loader.js"
SITE_CSS = "course/site.css"
#: Every copy of the theme's ☰ and contents buttons works (the theme binds the first only), and
#: the language switch keeps the section being read.
SITE_NAV = "course/site_nav.js"
#: Makes a display formula that overflows its column a Tab stop (only pages with maths load it).
SCROLLABLE_MATH = "course/scrollable_math.js"
#: Shows a figure's "scroll sideways" hint while its box scrolls (pages with figures load it).
WIDE_FIGURES = "course/wide_figures.js"
STATE_MIME = "application/vnd.jupyter.widget-state+json"
#: Models the loader may ignore: an anywidget's layout and style (it draws everything itself).
PASSIVE_MODELS = {("@jupyter-widgets/base", "LayoutModel"), ("@jupyter-widgets/base", "StyleModel")}


def widget_scripts() -> dict[str, dict[str, str]]:
    """Scripts (relative to ``_static``) a page with saved widgets loads: our anywidget loader."""
    return {LOADER: {"defer": "defer"}}


class WidgetModelError(Exception):
    """A page saved a widget model the site cannot draw (not an anywidget's)."""


def foreign_widget_models(models: dict[str, Any]) -> list[str]:
    """The saved models that are neither an anywidget nor an anywidget's layout or style, as
    ``"module/name"``: the site's loader draws anywidgets only, so a core ipywidget (a slider of
    ``interact``, say) would be frozen on the page.

    >>> foreign_widget_models({"a": {"model_module": "@jupyter-widgets/controls",
    ...                               "model_name": "IntSliderModel"},
    ...                        "b": {"model_module": "@jupyter-widgets/base",
    ...                              "model_name": "LayoutModel"}})
    ['@jupyter-widgets/controls/IntSliderModel']
    """
    foreign = []
    for model in models.values():
        module, name = model.get("model_module"), model.get("model_name")
        if module != "anywidget" and (module, name) not in PASSIVE_MODELS:
            foreign.append(f"{module}/{name}")
    return sorted(foreign)


def _config_inited(app: Any, config: Any) -> None:
    static = str(STATIC)
    paths = list(config.html_static_path or [])
    if static not in paths:
        paths.append(static)
    config.html_static_path = paths
    config.nb_ipywidgets_js = widget_scripts()
    # A favicon of our own: without one every browser asks for /favicon.ico, a 404 in the console.
    if not config.html_favicon:
        config.html_favicon = str(STATIC / "course" / "favicon.svg")
    templates = list(config.templates_path or [])
    if str(TEMPLATES) not in templates:
        templates.insert(0, str(TEMPLATES))  # ours win over the theme's components
    config.templates_path = templates
    # MathJax: formulas are not Tab stops (a chapter has hundreds); the explorer stays in its menu.
    mj = dict(config.mathjax3_config or {})
    options = dict(mj.get("options") or {})
    menu = dict(options.get("menuOptions") or {})
    menu["settings"] = {**dict(menu.get("settings") or {}), "inTabOrder": False}
    options["menuOptions"] = menu
    mj["options"] = options
    config.mathjax3_config = mj
    # pydata-sphinx-theme logs console.error("Got invalid theme mode: .") on a first visit when
    # Jupyter Book leaves default_mode empty: give it a valid mode.
    # (the theme reads it from html_context, not from html_theme_options)
    context = dict(config.html_context or {})
    if not context.get("default_mode"):
        context["default_mode"] = "light"
        config.html_context = context
    # sphinx-book-theme draws its own header (article buttons, search in the sidebar); pydata's
    # default navbar_persistent search button otherwise adds a second, empty 64 px bar with a second
    # search box above it on a wide screen (sphinx-book-theme issue #986).
    theme_options = config.html_theme_options if isinstance(config.html_theme_options, dict) else {}
    if "navbar_persistent" not in theme_options:
        config.html_theme_options = {**theme_options, "navbar_persistent": []}
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


def _builder_inited(app: Any) -> None:
    if getattr(app.builder, "format", "") == "html":
        app.add_css_file(SITE_CSS)
        app.add_js_file(SITE_NAV, defer="defer")


def _saved_models(scripts: list[Any]) -> dict[str, Any] | None:
    """The widget models saved in the page (from myst-nb's state script), or None."""
    for script in scripts:
        attrs = getattr(script, "attributes", None) or {}
        if attrs.get("type") == STATE_MIME:
            try:
                return dict(json.loads(str(attrs.get("body", ""))).get("state") or {})
            except ValueError:
                return None
    return None


def _check_widget_models(pagename: str, scripts: list[Any]) -> None:
    """Fail the build on a page whose saved widgets are not all anywidgets."""
    foreign = foreign_widget_models(_saved_models(scripts) or {})
    if foreign:
        raise WidgetModelError(
            f"{pagename}: saved widget model(s) {', '.join(foreign)}; the site draws anywidgets "
            "only (course_utils.widgets), so these would be frozen. Use a course widget, or "
            "clear the cell's widget output before saving the notebook."
        )


TOGGLE_LABEL = re.compile(r'<summary aria-label="Toggle hidden content">')
BIBLIOENTRY = re.compile(r'(<div class="citation" id="[^"]*") role="doc-biblioentry"')
#: The theme's sidebar expanders: a <summary> holding only a chevron icon has no accessible name.
NAMELESS_TOC_TOGGLE = '<summary><span class="toctree-toggle" role="presentation">'
NAMED_TOC_TOGGLE = (
    '<summary aria-label="Show or hide the pages of this section">'
    '<span class="toctree-toggle" role="presentation">'
)


def name_toc_toggles(html: str) -> str:
    """Give the sidebar's section expanders a name (axe: summary-name, serious).

    The sidebar is drawn by the theme's templates, outside the page body, so the built files are
    mended once the build is done.

    >>> name_toc_toggles(NAMELESS_TOC_TOGGLE) == NAMED_TOC_TOGGLE
    True
    """
    return html.replace(NAMELESS_TOC_TOGGLE, NAMED_TOC_TOGGLE)


#: What the themes write in English whatever the language (sphinx-book-theme hard-codes its
#: sidebar toggles' titles and two landmarks' names; Sphinx 7.4's zh_CN catalogue leaves the
#: "Link to this ..." anchors untranslated; Jupyter Book sets the search box's words; the sidebar
#: expanders' name is ours, :data:`NAMED_TOC_TOGGLE`). Exact attribute texts, so nothing else on
#: a page can match; a 中文 page gets them in Chinese (:func:`translate_theme_chrome`).
ZH_THEME_CHROME = {
    'title="Link to this heading"': 'title="链接到此标题"',
    'title="Link to this image"': 'title="链接到此图片"',
    'title="Link to this term"': 'title="链接到此术语"',
    'title="Link to this table"': 'title="链接到此表格"',
    'title="Link to this code"': 'title="链接到此代码"',
    'title="Link to this equation"': 'title="链接到此公式"',
    'title="Toggle primary sidebar"': 'title="显示或隐藏左侧目录"',
    'title="Toggle secondary sidebar"': 'title="显示或隐藏本页目录"',
    'aria-label="Main"': 'aria-label="全书目录"',
    'aria-label="Page"': 'aria-label="本页"',
    'aria-label="Show or hide the pages of this section"': 'aria-label="显示或隐藏本节的页面"',
    'placeholder="Search this book..."': 'placeholder="搜索本书……"',
    'aria-label="Search this book..."': 'aria-label="搜索本书……"',
}
_COPYRIGHT = re.compile(r"© Copyright (\d{4})\.")


def translate_theme_chrome(html: str, language: str | None) -> str:
    """A 中文 page's theme chrome in Chinese (:data:`ZH_THEME_CHROME`, the copyright line).

    >>> translate_theme_chrome('<a title="Link to this heading">#</a> © Copyright 2026.', "zh_CN")
    '<a title="链接到此标题">#</a> © 2026 版权所有。'
    >>> translate_theme_chrome('<a title="Link to this heading">#</a>', "en")
    '<a title="Link to this heading">#</a>'
    """
    if edition(language) != "zh":
        return html
    for english, chinese in ZH_THEME_CHROME.items():
        html = html.replace(english, chinese)
    return _COPYRIGHT.sub(r"© \1 版权所有。", html)


#: The theme's primary sidebar (brand, search button, the book's contents). It is no landmark, so
#: the brand and the search button sat outside every landmark (axe's ``region`` rule): it becomes a
#: named complementary region, beside ``main``, as a book's sidebar is.
PRIMARY_SIDEBAR = '<div id="pst-primary-sidebar" class="bd-sidebar-primary bd-sidebar">'
PRIMARY_SIDEBAR_LABEL = {"en": "Course contents", "zh": "课程目录"}


def name_primary_sidebar(html: str, language: str | None) -> str:
    """The primary sidebar as a named landmark, in the edition's language.

    >>> name_primary_sidebar(PRIMARY_SIDEBAR, "zh_CN")  # doctest: +NORMALIZE_WHITESPACE
    '<div id="pst-primary-sidebar" class="bd-sidebar-primary bd-sidebar" role="complementary"
    aria-label="课程目录">'
    """
    label = PRIMARY_SIDEBAR_LABEL[edition(language)]
    named = PRIMARY_SIDEBAR[:-1] + f' role="complementary" aria-label="{label}">'
    return html.replace(PRIMARY_SIDEBAR, named, 1)


def fix_body(body: str) -> str:
    """Accessible names and roles in a page's HTML body.

    * myst-nb names every hidden-cell toggle "Toggle hidden content" while it shows "Show the
      solution": without the label the toggle is named by the text it shows;
    * Sphinx's citation list says ``role="list"`` around ``role="doc-biblioentry"`` items (a list
      without list items, and a deprecated role): its entries become list items.

    >>> fix_body('<summary aria-label="Toggle hidden content"><p>Show the solution</p>')
    '<summary><p>Show the solution</p>'
    """
    body = TOGGLE_LABEL.sub("<summary>", body)
    if "citation-list" in body:
        body = BIBLIOENTRY.sub(r'\1 role="listitem"', body)
    return body


#: The words of a hidden cell's toggle, per edition: (shown while closed, shown while open). A
#: solution cell (tag ``solution``) says so in every chapter; any other hidden cell gets myst-nb's
#: words, in the edition's language.
TOGGLE_WORDS = {
    "en": {"solution": ("Show the solution", "Hide the solution")},
    "zh": {
        "solution": ("显示答案", "隐藏答案"),
        "Show code cell content": "显示代码",
        "Hide code cell content": "隐藏代码",
        "Show code cell source": "显示代码",
        "Hide code cell source": "隐藏代码",
        "Show code cell outputs": "显示输出",
        "Hide code cell outputs": "隐藏输出",
        "Show the solution": "显示答案",
        "Hide the solution": "隐藏答案",
    },
}
_CELL_TOGGLE = re.compile(
    r'(<div class="cell (?P<tags>[^"]*)">\s*'
    r'<details class="[^"]*\bhide\b[^"]*">\s*<summary[^>]*>\s*)'
    r'<p class="collapsed admonition-title">(?P<show>[^<]*)</p>\s*'
    r'<p class="expanded admonition-title">(?P<hide>[^<]*)</p>'
)


def label_toggles(body: str, language: str | None) -> str:
    """One label for every solution toggle ("Show the solution"), and a 中文 page's toggles in
    Chinese (myst-nb writes "Show code cell content" whatever the language).

    >>> cell = ('<div class="cell tag_hide-cell tag_solution docutils container">'
    ...         '<details class="admonition hide above-input"><summary>'
    ...         '<p class="collapsed admonition-title">Show code cell content</p>'
    ...         '<p class="expanded admonition-title">Hide code cell content</p>')
    >>> label_toggles(cell, "en").count("the solution"), label_toggles(cell, "zh_CN").count("答案")
    (2, 2)
    """
    words = TOGGLE_WORDS[edition(language)]

    def relabel(m: re.Match[str]) -> str:
        if "tag_solution" in m["tags"].split():
            show, hide = words["solution"]
        else:
            show, hide = words.get(m["show"], m["show"]), words.get(m["hide"], m["hide"])
        return (
            f'{m.group(1)}<p class="collapsed admonition-title">{show}</p>'
            f'<p class="expanded admonition-title">{hide}</p>'
        )

    return _CELL_TOGGLE.sub(relabel, body)


#: The two editions: ``language`` prefix -> (``lang``/``hreflang``, name, folder in the site).
EDITIONS = {"en": ("en", "English", ""), "zh": ("zh-CN", "中文", "zh/")}


def edition(language: str | None) -> str:
    """``"zh"`` for a Chinese build (``language = "zh_CN"``), else ``"en"``.

    >>> edition("zh_CN"), edition("en"), edition(None)
    ('zh', 'en', 'en')
    """
    return "zh" if str(language or "").lower().startswith("zh") else "en"


def language_switch(pagename: str, language: str | None) -> str:
    """The link to the same page in the other edition (every page of both editions has one).

    The English site is ``_build/html/<page>.html``, the 中文 one ``_build/html/zh/<page>.html``.

    >>> print(language_switch("chapters/01_x", "en"))  # doctest: +NORMALIZE_WHITESPACE
    <nav class="cu-lang-switch" aria-label="Language / 语言"><a href="../zh/chapters/01_x.html"
     lang="zh-CN" hreflang="zh-CN">中文</a></nav>
    >>> 'href="../../chapters/01_x.html" lang="en" hreflang="en">English' in language_switch(
    ...     "chapters/01_x", "zh_CN")
    True
    """
    this = edition(language)
    other = "en" if this == "zh" else "zh"
    lang, name, folder = EDITIONS[other]
    here = posixpath.dirname(EDITIONS[this][2] + pagename)
    href = posixpath.relpath(f"{folder}{pagename}.html", here or ".")
    return (
        '<nav class="cu-lang-switch" aria-label="Language / 语言">'
        f'<a href="{html.escape(href, quote=True)}" lang="{lang}" hreflang="{lang}">'
        f"{name}</a></nav>"
    )


#: What a cell printed, as myst-nb writes it: ``<div class="output stream ...">``, then
#: ``<div class="highlight"><pre>...</pre>`` (also ``text_plain`` results, ``error`` tracebacks).
_OUTPUT_PRE = re.compile(
    r'(<div class="output [^"]*"><div class="highlight)(">)(<pre>(?P<text>.*?)</pre>)', re.S
)
#: A code block of the text (```` ```bash ````, ```` ```text ````, ``literalinclude``), as Sphinx
#: writes it: ``<div class="highlight-bash notranslate"><div class="highlight"><pre>``. Not a
#: cell's code (``ipython3``, in a ``cell_input``): ruff holds the notebooks' code to the column.
_TEXT_CODE_PRE = re.compile(
    r'(?<!<div class="cell_input docutils container">\n)'
    r'(<div class="highlight-(?!ipython)[\w+-]+ notranslate"><div class="highlight)(">)'
    r"(<pre>(?P<text>.*?)</pre>)",
    re.S,
)
#: The columns of the notebooks' code (chapters/ruff.toml): code blocks are sized to hold them.
CODE_COLUMNS = 79


def fit_outputs(body: str) -> str:
    """Mark what a cell printed wider than the code's :data:`CODE_COLUMNS`, and a code block of
    the text that wide (the instructor guide's nbgitpuller link, 175 characters to copy whole),
    with its widest line's columns (a CJK character takes two:
    :func:`course_utils.i18n.text_columns`), as ``--cu-columns`` on the block. The site's style
    sheet then shows it in a font just small enough for the text column (never under 11 px), and
    at the desktop width wraps a line that still does not fit instead of scrolling it sideways (a
    table of 150 columns, a long error message, a long link: wrapped on screen, copied as one
    line). A cell's code is never marked. A page marked once is unchanged.

    >>> out = '<div class="output stream x"><div class="highlight"><pre><span></span>{}\\n</pre>'
    >>> fit_outputs(out.format("a" * 94))[:92]
    '<div class="output stream x"><div class="highlight cu-wide-output" style="--cu-columns: 94">'
    >>> fit_outputs(out.format("看书 &amp; " * 10)) == out.format("看书 &amp; " * 10)  # 70 columns
    True
    >>> text = '<div class="highlight-text notranslate"><div class="highlight"><pre>{}</pre>'
    >>> fit_outputs(text.format("h" * 175))[:91]
    '<div class="highlight-text notranslate"><div class="highlight cu-wide-output" style="--cu-c'
    >>> cell = '<div class="cell_input docutils container">\\n' + text.format("x" * 90)
    >>> fit_outputs(cell) == cell
    True
    """
    from course_utils.i18n import text_columns

    def mark(m: re.Match[str]) -> str:
        text = html.unescape(re.sub(r"<[^>]*>", "", m["text"]))
        columns = max((text_columns(line) for line in text.splitlines()), default=0)
        if columns <= CODE_COLUMNS:
            return m.group(0)
        marked = f'{m.group(1)} cu-wide-output" style="--cu-columns: {columns}{m.group(2)}'
        return marked + m.group(3)

    return _TEXT_CODE_PRE.sub(mark, _OUTPUT_PRE.sub(mark, body))


def _page_context(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    if isinstance(context.get("body"), str):
        context["body"] = label_toggles(fix_body(context["body"]), app.config.language)
        context["body"] = fit_outputs(context["body"])
        if doctree is not None:  # a page of the book (not search, genindex)
            context["body"] = language_switch(pagename, app.config.language) + context["body"]
    scripts = context.get("script_files")
    if scripts is None:
        return
    _check_widget_models(pagename, scripts)
    if any("mathjax" in str(getattr(s, "filename", s) or "") for s in scripts):
        app.add_js_file(SCROLLABLE_MATH, defer="defer")  # this page only, like the loader
    if FIGURE_IMG.search(str(context.get("body") or "")):
        app.add_js_file(WIDE_FIGURES, defer="defer")
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


#: An image a notebook cell drew, as Sphinx writes it: ``<img alt="..." src="../_images/x.png" />``.
FIGURE_IMG = re.compile(
    r'<img (?P<attrs>[^>]*?\bsrc="(?P<src>(?:\.\./)*_images/[^"/]+\.png)"[^>]*?)\s*/?>'
)
#: The hint under a figure too wide for the screen (shown by course/wide_figures.js), per edition.
FIGURE_HINT = {
    "en": "Scroll sideways to see the whole figure, or open the image at full size.",
    "zh": "左右滑动可查看整幅图，或点击图片查看原尺寸大图。",
}
#: What a figure's link does, per edition: its title (a tooltip, and the link's accessible
#: description; its accessible name is the figure's alt text, what the figure shows).
FIGURE_LINK_TITLE = {
    "en": "Open the image at full size",
    "zh": "查看原尺寸大图",
}


def figure_min_width(png: Path) -> int | None:
    """The narrowest width (CSS px) at which figure ``png`` shows its smallest text at
    ``MIN_TEXT_PX``: its natural width x MIN_TEXT_PX / (its smallest text in PNG px, which
    ``course_utils.plotting`` records in the PNG). ``None`` if the PNG records no text size.

    >>> import io, tempfile
    >>> from PIL import Image, PngImagePlugin
    >>> from course_utils.plotting import TEXT_SIZE_KEY
    >>> info = PngImagePlugin.PngInfo(); info.add_text(TEXT_SIZE_KEY, "12.50")
    >>> path = Path(tempfile.mkdtemp()) / "f.png"
    >>> Image.new("RGB", (500, 100), "white").save(path, pnginfo=info)
    >>> figure_min_width(path)  # 500 x 11 / 12.5
    440
    """
    from PIL import Image

    from course_utils.plotting import MIN_TEXT_PX, recorded_text_px

    text_px = recorded_text_px(png)
    if not text_px:
        return None
    with Image.open(png) as image:
        width = image.width
    return math.ceil(width * MIN_TEXT_PX / text_px)


def link_figures(body: str, page_dir: Path, language: str | None) -> str:
    """Every figure a notebook drew links to its full-size image and is never shown smaller than
    :func:`figure_min_width` (its smallest text at 11 px): on a narrow screen (a phone) it keeps
    that width in a box that scrolls sideways, with a hint saying so. ``page_dir``: the built
    page's folder (where the image's relative address starts). A page mended once is unchanged.

    The link's accessible name is the image's alt text (what the figure shows) and its title says
    what it does (a screen reader reads it as the link's description; a mouse shows it as a tip).

    >>> link_figures('<p><img alt="A" src="_images/none.png" /></p>', Path("."), "en")
    '<p><span class="cu-figure-scroll"><a class="cu-figure-link" href="_images/none.png" \
title="Open the image at full size"><img class="cu-figure-img" alt="A" src="_images/none.png" \
/></a></span><span class="cu-figure-hint" hidden>Scroll sideways to see the whole figure, or open \
the image at full size.</span></p>'
    """
    hint = FIGURE_HINT[edition(language)]
    title = FIGURE_LINK_TITLE[edition(language)]

    def mend(m: re.Match[str]) -> str:
        png = page_dir / m["src"]
        width = figure_min_width(png) if png.is_file() else None
        style = f' style="--cu-figure-min-width: {width}px"' if width else ""
        attrs = m["attrs"]
        if 'class="' in attrs:
            attrs = attrs.replace('class="', 'class="cu-figure-img ', 1)
        else:
            attrs = f'class="cu-figure-img" {attrs}'
        return (
            f'<span class="cu-figure-scroll"><a class="cu-figure-link" href="{m["src"]}" '
            f'title="{title}">'
            f"<img{style} {attrs} /></a></span>"
            f'<span class="cu-figure-hint" hidden>{hint}</span>'
        )

    if "cu-figure-img" in body:
        return body
    return FIGURE_IMG.sub(mend, body)


BARE_REDIRECT = re.compile(r'^\s*<meta http-equiv="Refresh" content="0; url=([^"<>]+)" />\s*$')
OUR_REDIRECT = re.compile(
    r'<meta http-equiv="Refresh" content="0; url=([^"<>]+)">\n<link rel="icon"'
)


def redirect_page(target: str, title: str, language: str = "en") -> str:
    """A complete HTML page that sends the reader to ``target`` (used for the root index.html).

    Its icon is empty (``data:,``): without one the browser asks for ``/favicon.ico`` (a 404), and
    a real file would be fetched only to be aborted by the redirect.

    >>> "<title>Course</title>" in redirect_page("intro.html", "Course")
    True
    >>> "前往第一页" in redirect_page("intro.html", "课程", "zh-CN")
    True
    """
    t = html.escape(title)
    u = html.escape(target, quote=True)
    go = "前往第一页" if edition(language) == "zh" else "go to the first page"
    return (
        f'<!DOCTYPE html>\n<html lang="{html.escape(language)}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Refresh" content="0; url={u}">\n<link rel="icon" href="data:,">\n'
        f"<title>{t}</title>\n</head>\n"
        f'<body>\n<p><a href="{u}">{t}: {go}</a></p>\n</body>\n</html>\n'
    )


#: Where the browser model goes in the built site (the widget's ``worker_path`` is relative to it).
BROWSER_MODEL_DIR = "_static/minilm"
#: Pages that need the browser model hold a saved head explorer (its state names its class).
NEEDS_BROWSER_MODEL = re.compile(r'"_anywidget_id":\s*"course_utils\.widgets\.head_explorer\.')
#: Where SmolLM2's browser path goes (the writer widget's ``worker_path`` is relative to _static).
SMOLLM2_MODEL_DIR = "_static/smollm2"
#: Pages that need it hold a saved writer widget.
NEEDS_SMOLLM2 = re.compile(r'"_anywidget_id":\s*"course_utils\.widgets\.smollm2_writer\.')


def write_browser_model(outdir: str | Path) -> Path:
    """Write the browser path's ES modules and float16 weights into ``outdir/_static/minilm``.

    The weights are the kept export (``minilm_web.prepare_export``: made once, then copied).
    Returns that folder. ``scripts/export_minilm_web.py`` does the same from the command line.
    """
    from course_utils.pretrained.minilm_web import copy_export, web_files

    target = Path(outdir) / BROWSER_MODEL_DIR
    target.mkdir(parents=True, exist_ok=True)
    for source in web_files():
        (target / source.name).write_bytes(source.read_bytes())
    model = target / "model"
    shutil.rmtree(model, ignore_errors=True)  # an older export's chunk files must not stay
    copy_export(model, "float16")
    return target


#: The comment that asks a browser's developer tools for a source map (``//# sourceMappingURL=``
#: in JavaScript, ``/*# sourceMappingURL= */`` in CSS), on a line of its own.
SOURCE_MAP_COMMENT = re.compile(
    r"\n?(?://|/\*)# sourceMappingURL=[^\n]*?\.map(?: ?\*/)?[ \t]*(?=\n|$)"
)


def drop_source_maps(static: Path) -> int:
    r"""Delete the theme's source maps (``*.map``, 3.5 MB in ``_static``: for its developers, never
    loaded by a reader's browser) and the comments that name them. Returns the bytes removed.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "a.js").write_text("x = 1;\n//# sourceMappingURL=a.js.map")
    >>> _ = (d / "a.js.map").write_text("{}")
    >>> _ = (d / "a.css").write_text("p {}\n/*# sourceMappingURL=a.css.map*/")
    >>> drop_source_maps(d), (d / "a.js").read_text(), (d / "a.css").read_text()
    (2, 'x = 1;', 'p {}')
    """
    removed = 0
    for source_map in static.rglob("*.map"):
        removed += source_map.stat().st_size
        source_map.unlink()
    for path in [*static.rglob("*.js"), *static.rglob("*.css")]:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        if "sourceMappingURL=" in text:
            path.write_text(
                SOURCE_MAP_COMMENT.sub("", text), encoding="utf-8", errors="surrogateescape"
            )
    return removed


#: Theme files no page loads: Font Awesome's SVG script (templates/static/webpack-macros.html
#: leaves it out; the theme's stylesheet draws the icons from the web fonts).
UNUSED_THEME_SCRIPTS = ("scripts/fontawesome.js", "scripts/fontawesome.js.LICENSE.txt")


def drop_unused_theme_scripts(static: Path) -> list[str]:
    """Delete :data:`UNUSED_THEME_SCRIPTS` from ``static``; return the ones deleted.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> (d / "scripts").mkdir()
    >>> _ = (d / "scripts" / "fontawesome.js").write_text("")
    >>> drop_unused_theme_scripts(d), (d / "scripts").is_dir()
    (['scripts/fontawesome.js'], True)
    """
    removed = []
    for rel in UNUSED_THEME_SCRIPTS:
        path = static / rel
        if path.is_file():
            path.unlink()
            removed.append(rel)
    return removed


#: A font's TrueType fallback after its WOFF2 source in an ``@font-face`` rule:
#: ``,url(x.ttf) format("truetype")``.
TRUETYPE_FALLBACK = re.compile(
    r',\s*url\(["\']?([^)"\']+\.ttf)["\']?\)\s*format\(["\']truetype["\']\)'
)


def drop_truetype_fallbacks(static: Path) -> int:
    """Delete the TrueType copies of fonts that ``static``'s stylesheets also offer as WOFF2
    (the theme's Font Awesome, 0.7 MB): a browser takes the first source it can read, and every
    browser the theme supports reads WOFF2, so the ``.ttf`` after it is never fetched. The
    stylesheets stop naming them. Returns the bytes removed.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> (d / "fonts").mkdir()
    >>> _ = (d / "fonts" / "a.woff2").write_bytes(b"w")
    >>> _ = (d / "fonts" / "a.ttf").write_bytes(b"ttf")
    >>> css = '@font-face{src:url(fonts/a.woff2) format("woff2"),'
    >>> _ = (d / "theme.css").write_text(css + 'url(fonts/a.ttf) format("truetype")}')
    >>> drop_truetype_fallbacks(d), (d / "theme.css").read_text(), (d / "fonts" / "a.ttf").exists()
    (3, '@font-face{src:url(fonts/a.woff2) format("woff2")}', False)
    """
    fallbacks: set[Path] = set()
    sheets = sorted(static.rglob("*.css"))
    for css in sheets:
        text = css.read_text(encoding="utf-8", errors="surrogateescape")
        spans = set()
        for m in TRUETYPE_FALLBACK.finditer(text):
            font = (css.parent / m.group(1)).resolve()
            if font.with_suffix(".woff2").is_file():
                spans.add(m.span())
                fallbacks.add(font)
        if spans:
            kept = TRUETYPE_FALLBACK.sub(
                lambda m, spans=spans: "" if m.span() in spans else m[0], text
            )
            css.write_text(kept, encoding="utf-8", errors="surrogateescape")
    still_named = " ".join(css.read_text(encoding="utf-8", errors="replace") for css in sheets)
    removed = 0
    for font in sorted(fallbacks):
        if font.is_file() and font.name not in still_named:  # no sheet needs it any more
            removed += font.stat().st_size
            font.unlink()
    return removed


def write_widget_code(static: Path) -> list[Path]:
    """Write every course widget's ES module (per language) and stylesheet into
    ``static/course_widgets/``, where the loader imports the code a saved notebook left out.

    The site's widgets then run the package's current ``.js``/``.css`` files: a change to one of
    them needs ``make book``, not a re-execution of the notebooks.
    """
    from course_utils.widgets.saved_code import MODULE_FOLDER, write_widget_modules

    return write_widget_modules(static / MODULE_FOLDER)


def _build_finished(app: Any, exception: Exception | None) -> None:
    if exception is not None or getattr(app.builder, "format", "") != "html":
        return
    drop_source_maps(Path(app.outdir) / "_static")
    drop_unused_theme_scripts(Path(app.outdir) / "_static")
    drop_truetype_fallbacks(Path(app.outdir) / "_static")
    write_widget_code(Path(app.outdir) / "_static")
    needs_model = needs_smollm2 = False
    for page in Path(app.outdir).rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        needs_model = needs_model or bool(NEEDS_BROWSER_MODEL.search(html))
        needs_smollm2 = needs_smollm2 or bool(NEEDS_SMOLLM2.search(html))
        mended = link_figures(name_toc_toggles(html), page.parent, app.config.language)
        mended = translate_theme_chrome(mended, app.config.language)
        mended = name_primary_sidebar(mended, app.config.language)
        if edition(app.config.language) == "zh":
            mended = drop_empty_paragraphs(mended)
        if mended != html:
            page.write_text(mended, encoding="utf-8")
    if needs_model:
        write_browser_model(app.outdir)
    if needs_smollm2:
        # SmolLM2 for the writer widget: the ES modules, kernels.wasm and the model files
        # (exported once and kept between builds; identical in both editions, so shared)
        from course_utils.pretrained.smollm2_web import write_browser_files

        write_browser_files(Path(app.outdir) / SMOLLM2_MODEL_DIR)
    index = Path(app.outdir) / "index.html"
    if not index.is_file():
        return
    text = index.read_text(encoding="utf-8")
    # Jupyter Book's bare redirect, or ours from an earlier build (rewritten: its words may change)
    match = BARE_REDIRECT.match(text) or OUR_REDIRECT.search(text)
    if match:
        title = str(getattr(app.config, "html_title", "") or app.config.project or "Home")
        language = str(app.config.language or "en").replace("_", "-")  # zh_CN -> zh-CN (BCP 47)
        index.write_text(redirect_page(match.group(1), title, language), encoding="utf-8")


def screen_only_role(
    name: str,
    rawtext: str,
    text: str,
    lineno: int,
    inliner: Any,
    options: Any = None,
    content: Any = None,
) -> tuple[list[nodes.Node], list[Any]]:
    """``{screen}`(or with the arrow keys)```: words that only a reader at a screen can act on (how
    to move a widget). The page shows them; the printed book, whose widgets are still images,
    leaves them out (``.cu-screen-only`` in the print style sheet)."""
    return [nodes.inline(rawtext, text, classes=["cu-screen-only"])], []


def gloss_role(
    name: str, rawtext: str, text: str, lineno: int, inliner: Any, *_: Any, **__: Any
) -> tuple[list[nodes.Node], list[Any]]:
    """``{gloss}`Let every element...```: an English gloss of the Chinese seed text beside it. The
    English edition shows it in italics; the 中文 edition, whose readers read the Chinese itself,
    leaves it out (a paragraph left empty by it is dropped: :func:`drop_empty_paragraphs`)."""
    env = getattr(inliner.document.settings, "env", None)
    language = getattr(getattr(env, "config", None), "language", None)
    if edition(language) == "zh":
        return [], []
    return [nodes.emphasis(rawtext, text, classes=["cu-gloss"])], []


_EMPTY_PARAGRAPH = re.compile(r"<p>\s*</p>\n?")


def drop_empty_paragraphs(html_text: str) -> str:
    r"""Remove ``<p></p>`` (a 中文 page's paragraph that held only a :func:`gloss_role`).

    >>> drop_empty_paragraphs("<blockquote><p>看书</p>\n<p></p>\n</blockquote>")
    '<blockquote><p>看书</p>\n</blockquote>'
    """
    return _EMPTY_PARAGRAPH.sub("", html_text)


class TranslateTocCaptions(SphinxTransform):
    """Translate the table of contents' part captions ("Part I: ...") in a translated build.

    sphinx-external-toc inserts its toctrees (with their captions) in a transform of priority 100,
    after Sphinx's own translation transform (priority 20) has run, so the captions would stay
    English whatever the page's ``.po`` says. This runs just after the insertion and looks each
    caption up in the page's catalogue (``locale/<language>/LC_MESSAGES/<docname>.po``).
    """

    default_priority = 101

    def apply(self, **kwargs: Any) -> None:
        language = self.config.language
        if not language or language == "en":
            return
        from .i18n import load_catalog, normalise

        catalog: dict[str, str] | None = None
        for toctree in self.document.findall(addnodes.toctree):
            caption = toctree.get("caption")
            if not caption:
                continue
            if catalog is None:
                catalog = {}
                for folder in self.config.locale_dirs:
                    po = Path(self.env.srcdir, folder, language, "LC_MESSAGES", self.env.docname)
                    catalog.update(load_catalog(po.with_suffix(".po")))
            translated = catalog.get(normalise(caption))
            if translated:
                toctree["caption"] = toctree["rawcaption"] = translated


def _reuse_myst_default_settings() -> None:
    """Build docutils' default settings once, not once a parse (the 中文 build: ~14 s less).

    myst-parser 3.0.1's renderer makes a new document with docutils' default settings (an option
    parser of some 50 options: 3.5 ms here) every time it parses, even when it is handed the
    document to fill (``options.get("document", make_document())`` evaluates its default first):
    the 中文 build parses each of its ~3,900 translated messages so. The defaults are the same every
    time: this builds them once per parser class and gives each new document its own deep copy
    (0.06 ms), so nothing a document changes in its settings reaches another.
    """
    from docutils.frontend import get_default_settings
    from docutils.utils import new_document
    from myst_parser.mdit_to_docutils import base

    if getattr(base.make_document, "course_site_reuses_settings", False):
        return
    defaults: dict[type, Any] = {}

    def make_document(source_path: str = "notset", parser_cls: type = base.RSTParser) -> Any:
        if parser_cls not in defaults:
            defaults[parser_cls] = get_default_settings(parser_cls)
        return new_document(source_path, settings=copy.deepcopy(defaults[parser_cls]))

    make_document.course_site_reuses_settings = True  # type: ignore[attr-defined]
    base.make_document = make_document


def _remember_pybtex_plugins() -> None:
    """Look each pybtex plugin up once per build, not once per citation (about 6 s less a build).

    sphinxcontrib-bibtex 2.6 asks ``pybtex.plugin.find_plugin("pybtex.backends", "plaintext")``
    for every citation it resolves (237 in a build), and each call reads the entry points of every
    installed distribution again (25 ms here, profiled). Which class a name gives cannot change
    while a build runs.
    """
    import pybtex.plugin

    if hasattr(pybtex.plugin.find_plugin, "cache_info"):
        return
    pybtex.plugin.find_plugin = functools.lru_cache(maxsize=None)(pybtex.plugin.find_plugin)


def setup(app: Any) -> dict[str, Any]:
    from . import glue
    from .search import ChineseSearch, EnglishWithChineseSearch

    _reuse_myst_default_settings()
    _remember_pybtex_plugins()
    app.add_search_language(EnglishWithChineseSearch)  # Chinese words findable in both editions
    app.add_search_language(ChineseSearch)
    app.add_transform(TranslateTocCaptions)
    app.add_role("screen", screen_only_role)
    app.add_role("gloss", gloss_role)
    glue.setup(app)  # {glue:text} in translated paragraphs too
    # After myst-nb and Jupyter Book (priority 500 default): run late so our values win.
    app.connect("config-inited", _config_inited, priority=900)
    app.connect("builder-inited", _builder_inited)
    app.connect("html-page-context", _page_context, priority=900)
    # After sphinx-external-toc wrote its redirect (default priority 500).
    app.connect("build-finished", _build_finished, priority=900)
    return {"version": "0.2", "parallel_read_safe": True, "parallel_write_safe": True}
