"""Unit tests of the course_site Sphinx extension and the vendored files (no build, no browser)."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import anywidget
import pytest

import course_site as sphinx_ext

ROOT = Path(__file__).resolve().parents[1]
VENDOR = sphinx_ext.STATIC / "course_vendor"


def _config(**overrides):
    base = {
        "html_static_path": ["_static"],
        "nb_ipywidgets_js": {"https://cdn.example/require.js": {}},
        "mathjax_path": "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js",
        "html_context": {},
        "html_theme_options": {"launch_buttons": {"thebe": False}},
        "templates_path": ["_templates"],
        "mathjax3_config": {"options": {"processHtmlClass": "math"}},
        "html_favicon": None,  # Sphinx's default
    }
    base.update(overrides)
    return SimpleNamespace(**base)


def test_config_points_everything_at_the_site() -> None:
    config = _config()
    sphinx_ext._config_inited(None, config)
    assert config.html_static_path == ["_static", str(sphinx_ext.STATIC)]
    assert config.nb_ipywidgets_js == {sphinx_ext.LOADER: {"defer": "defer"}}
    assert all("://" not in k for k in config.nb_ipywidgets_js)
    assert not any("cdn" in json.dumps(v) for v in config.nb_ipywidgets_js.values())
    assert config.mathjax_path == "course_vendor/mathjax/tex-mml-chtml.js"
    assert config.html_context["default_mode"] == "light"
    assert Path(config.html_favicon).is_file(), config.html_favicon  # no /favicon.ico 404
    for rel in [*config.nb_ipywidgets_js, config.mathjax_path, sphinx_ext.LOADER]:
        assert (sphinx_ext.STATIC / rel).is_file(), rel
    # Our theme components win over the theme's; formulas are not Tab stops; myst-nb's keys stay.
    assert config.templates_path == [str(sphinx_ext.TEMPLATES), "_templates"]
    options = config.mathjax3_config["options"]
    assert options["menuOptions"]["settings"]["inTabOrder"] is False
    assert options["processHtmlClass"] == "math"


def test_a_favicon_the_book_sets_is_kept() -> None:
    config = _config(html_favicon="my_icon.png")
    sphinx_ext._config_inited(None, config)
    assert config.html_favicon == "my_icon.png"


def test_theme_components_we_override_exist_in_the_theme() -> None:
    """Each template of ours replaces a component the theme really has (same file name)."""
    import pydata_sphinx_theme

    theme = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
    ours = sorted(p.name for p in sphinx_ext.TEMPLATES.glob("*.html"))
    assert ours == ["last-updated.html", "search-button-field.html", "theme-switcher.html"]
    for name in ours:
        assert list(theme.rglob(name)), f"{name} is not a pydata-sphinx-theme component"


def test_our_asset_macros_are_the_themes_without_font_awesomes_script() -> None:
    """``templates/static/webpack-macros.html`` is the theme's file (same path, so it replaces it)
    with one change: no ``fontawesome.js`` (the theme's CSS draws the icons from its web fonts).
    After a theme upgrade this fails until the copy is taken again."""
    import pydata_sphinx_theme

    theme = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
    theirs = (theme / "static" / "webpack-macros.html").read_text(encoding="utf-8")
    ours = (sphinx_ext.TEMPLATES / "static" / "webpack-macros.html").read_text(encoding="utf-8")
    assert "fontawesome.js" in theirs
    assert "fontawesome.js" not in ours
    kept = ours.split("-#}\n", 1)[1]  # after our comment
    dropped = [line for line in theirs.splitlines() if line not in kept.splitlines()]
    assert dropped == [
        "  <!-- So that users can add custom icons -->",
        "  <script defer src=\"{{ pathto('_static/scripts/fontawesome.js', 1) }}"
        '?digest=55c26ed414f5f8a31ebb"></script>',
    ], dropped
    assert [line for line in kept.splitlines() if line not in theirs.splitlines()] == []
    css = (theme / "static" / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    assert "fa-solid-900.woff2" in css and ".fa-bars:before" in css  # the icons' web font


def _state_script(models):
    body = json.dumps({"version_major": 2, "version_minor": 0, "state": models})
    return SimpleNamespace(
        filename=None,
        attributes={"type": "application/vnd.jupyter.widget-state+json", "body": body},
    )


ANYWIDGET = {"model_module": "anywidget", "model_name": "AnyModel", "state": {}}
LAYOUT = {"model_module": "@jupyter-widgets/base", "model_name": "LayoutModel", "state": {}}
SLIDER = {"model_module": "@jupyter-widgets/controls", "model_name": "IntSliderModel"}


def test_pages_of_anywidgets_keep_the_loader_myst_nb_adds() -> None:
    """An anywidget (with its layout) passes; the page keeps its scripts (myst-nb added the
    loader from ``nb_ipywidgets_js``)."""
    scripts = [_script("_static/doctools.js"), _state_script({"a": ANYWIDGET, "l": LAYOUT})]
    scripts.append(_script(f"_static/{sphinx_ext.LOADER}"))
    app = SimpleNamespace(config=_config(), add_js_file=lambda rel, **kw: None)
    sphinx_ext._page_context(app, "chapters/x", "page.html", {"script_files": scripts}, None)
    assert [s.filename for s in scripts] == [
        "_static/doctools.js",
        None,
        f"_static/{sphinx_ext.LOADER}",
    ]


@pytest.mark.parametrize(
    ("models", "named"),
    [
        ({"a": ANYWIDGET, "s": SLIDER}, "@jupyter-widgets/controls/IntSliderModel"),
        ({"s": SLIDER, "l": LAYOUT}, "@jupyter-widgets/controls/IntSliderModel"),
        ({"o": {"model_module": "@jupyter-widgets/output", "model_name": "OutputModel"}}, "Output"),
    ],
)
def test_a_page_saving_another_widget_model_fails_the_build(models, named) -> None:
    """The site carries no widget manager but our anywidget loader: a core ipywidget saved in a
    notebook would be frozen on the page, so the build stops and names the page and the model."""
    scripts = [_script("_static/doctools.js"), _state_script(models)]
    app = SimpleNamespace(config=_config(), add_js_file=lambda rel, **kw: None)
    with pytest.raises(sphinx_ext.WidgetModelError, match=r"chapters/x: saved widget model") as e:
        sphinx_ext._page_context(app, "chapters/x", "page.html", {"script_files": scripts}, None)
    assert named in str(e.value)


def test_page_body_fixes() -> None:
    body = (
        '<details class="hide above-input"><summary aria-label="Toggle hidden content">'
        '<p class="collapsed admonition-title">Show the solution</p></summary></details>'
        '<div role="list" class="citation-list">'
        '<div class="citation" id="id3" role="doc-biblioentry"><span>[1]</span></div></div>'
    )
    fixed = sphinx_ext.fix_body(body)
    assert "Toggle hidden content" not in fixed
    assert "<summary><p" in fixed
    assert '<div class="citation" id="id3" role="listitem">' in fixed
    assert "doc-biblioentry" not in fixed


def test_local_mathjax_path_is_kept() -> None:
    config = _config(mathjax_path="my/mathjax.js")
    sphinx_ext._config_inited(None, config)
    assert config.mathjax_path == "my/mathjax.js"


def _script(filename, body=""):
    return SimpleNamespace(filename=filename, attributes={"body": body} if body else {})


@pytest.mark.parametrize("thebe", [False, True])
def test_thebe_scripts_dropped_when_thebe_is_off(thebe) -> None:
    inline = 'const THEBE_JS_URL = "https://unpkg.com/thebe@0.8.2/lib/index.js"'
    scripts = [
        _script("doctools.js"),
        _script(None, inline),
        _script("sphinx-thebe.js"),
        _script(None, inline),  # the duplicate that raises a SyntaxError
        _script("course_vendor/require/require.js"),
    ]
    css = [_script("sphinx-thebe.css"), _script("theme.css")]
    context = {"script_files": scripts, "css_files": css}
    app = SimpleNamespace(config=_config(html_theme_options={"launch_buttons": {"thebe": thebe}}))
    sphinx_ext._page_context(app, "intro", "page.html", context, None)
    names = [s.filename for s in context["script_files"]]
    if thebe:
        assert names == ["doctools.js", None, "sphinx-thebe.js", "course_vendor/require/require.js"]
    else:
        assert names == ["doctools.js", "course_vendor/require/require.js"]
        assert [c.filename for c in context["css_files"]] == ["theme.css"]


def test_vendored_files_match_their_manifest() -> None:
    """Every vendored file has the sha256 VERSIONS.json records, and each package has a licence."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "vendor_static.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for package in ["anywidget", "mathjax"]:
        assert (VENDOR / package / "LICENSE").is_file(), package
    # No widget manager but our loader: html-manager and require.js are gone for good.
    assert sorted(p.name for p in VENDOR.iterdir() if p.is_dir()) == ["anywidget", "mathjax"]


def test_axe_core_is_vendored_for_tests_only() -> None:
    """axe-core (pinned, with its licence) sits under tests/, never in the site's static files."""
    import hashlib

    tests_vendor = ROOT / "tests" / "browser" / "vendor"
    manifest = json.loads((tests_vendor / "VERSIONS.json").read_text())
    assert manifest["packages"]["axe-core"]["license"] == "MPL-2.0"
    for rel, digest in manifest["files"].items():
        data = (tests_vendor / "axe-core" / rel).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, rel
    assert (tests_vendor / "axe-core" / "LICENSE").is_file()
    assert not list(sphinx_ext.STATIC.rglob("axe*.js")), "axe-core must not be served by the site"


def test_anywidget_front_end_is_the_installed_wheels() -> None:
    wheel = Path(anywidget.__file__).parent / "nbextension" / "index.js"
    vendored = (VENDOR / "anywidget" / "index.js").read_bytes()
    upstream = b"\n".join(
        line
        for line in wheel.read_bytes().split(b"\n")
        if not line.startswith(b"//# sourceMappingURL=")
    )
    assert vendored == upstream
    manifest = json.loads((VENDOR / "VERSIONS.json").read_text())
    assert manifest["packages"]["anywidget"]["version"] == importlib.metadata.version("anywidget")


def test_bare_root_redirect_becomes_a_valid_page(tmp_path) -> None:
    (tmp_path / "index.html").write_text(
        '<meta http-equiv="Refresh" content="0; url=intro.html" />\n', encoding="utf8"
    )
    app = SimpleNamespace(
        builder=SimpleNamespace(format="html"),
        outdir=str(tmp_path),
        config=SimpleNamespace(html_title="Attention <step> by step", project="p", language="en"),
    )
    sphinx_ext._build_finished(app, None)
    text = (tmp_path / "index.html").read_text()
    assert '<html lang="en">' in text
    # An empty icon: no /favicon.ico 404, and no icon fetch that the redirect would abort.
    assert '<link rel="icon" href="data:,">' in text
    assert "<title>Attention &lt;step&gt; by step</title>" in text
    assert '<meta http-equiv="Refresh" content="0; url=intro.html">' in text
    assert '<a href="intro.html">' in text
    # A real page is left alone.
    (tmp_path / "index.html").write_text("<html>real</html>")
    sphinx_ext._build_finished(app, None)
    assert (tmp_path / "index.html").read_text() == "<html>real</html>"


#: What would make a page lay out differently on a touch phone than in a 390 px desktop window:
#: pointer/hover media queries (in CSS or matchMedia) and touch detection in script.
TOUCH_DEPENDENT = re.compile(r"\((?:any-)?(?:pointer|hover)\s*:|ontouch|maxTouchPoints|TouchEvent")


def test_no_widget_or_site_style_depends_on_touch() -> None:
    """The page audit measures the phone at 390 px in a desktop browser context (one page load for
    every viewport); a touch phone shows the same sizes only while no course stylesheet or widget
    script asks whether the screen is touched. (``touch-action`` says what a touch does, not how
    the page is laid out.)"""
    root = Path(__file__).resolve().parents[1]
    files = [
        p
        for folder in (
            root / "src" / "course_utils" / "widgets",
            root / "_ext" / "course_site" / "static" / "course",
        )
        for p in sorted(folder.rglob("*"))
        if p.suffix in {".js", ".css"}
    ]
    assert len(files) > 20, files
    found = [
        f"{p.relative_to(root)}: {m.group(0)!r}"
        for p in files
        for m in TOUCH_DEPENDENT.finditer(p.read_text(encoding="utf-8"))
    ]
    assert not found, found


def _playwright_disabled_features() -> list[str]:
    """The features the installed Playwright turns off when it launches Chromium, read from its
    driver (``disabledFeatures = [...]``: one quoted name a line, comments between)."""
    import playwright

    bundle = Path(playwright.__file__).parent / "driver/package/lib/coreBundle.js"
    text = bundle.read_text(encoding="utf-8")
    block = re.search(r"disabledFeatures = \[(.*?)\]\.filter\(Boolean\)", text, re.S)
    assert block, f"Playwright's list of disabled features was not found in {bundle}"
    names = re.findall(r'^\s*"(\w+)",?\s*$', block.group(1), re.M)
    assert len(names) >= 10, names  # the list as read, not an empty match
    return names


def test_our_chromium_switches_keep_what_playwright_turns_off() -> None:
    """CHROMIUM_ARGS gives a --disable-features switch of its own (no address-bar pop-up), after
    Playwright's: it repeats every feature the pinned Playwright turns off."""
    from course_site.browser import CHROMIUM_ARGS, NO_OMNIBOX_POPUP

    ours = [a for a in CHROMIUM_ARGS if a.startswith("--disable-features=")]
    assert len(ours) == 1, ours
    listed = set(ours[0].removeprefix("--disable-features=").split(","))
    missing = [f for f in _playwright_disabled_features() if f not in listed]
    assert not missing, f"add to PLAYWRIGHT_DISABLED_FEATURES (course_site/browser.py): {missing}"
    assert set(NO_OMNIBOX_POPUP) <= listed
    resolver = [a for a in CHROMIUM_ARGS if a.startswith("--host-resolver-rules=")]
    loopback_only = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"
    assert resolver == [f"--host-resolver-rules={loopback_only}"]


def test_chinese_search_finds_and_stems_latin_words_as_sphinx_does() -> None:
    """The 中文 search keeps the Latin words it has seen in a set (Sphinx's own list made every
    lookup scan the whole book's words): the same terms, the same stems, acronyms kept whole."""
    from sphinx.search.zh import SearchChinese

    from course_site.search import ChineseSearch

    text = "多头注意力 (multi-head attention) 的 QKV、GQA 与 RoPE: softmax of the scores, KV cache"
    ours, sphinx = ChineseSearch({}), SearchChinese({})
    mine = ours.split(text)  # first: it puts the glossary's terms in jieba's dictionary
    words = sphinx.split(text)
    assert mine[: len(words)] == words  # then each Chinese character
    assert "多头注意力" in mine  # a glossary term stays whole, beside its parts
    assert isinstance(ChineseSearch.latin_terms, set), "the Latin words are looked up in a list"
    assert {"QKV", "GQA", "RoPE", "softmax"} <= ChineseSearch.latin_terms
    assert [ours.stem(w) for w in words] == [sphinx.stem(w) for w in words]
    assert ours.stem("GQA") == "gqa" and ours.stem("scores") == "score"


def test_pybtex_plugins_are_looked_up_once_and_are_the_same() -> None:
    import pybtex.plugin

    from course_site import _remember_pybtex_plugins

    first = pybtex.plugin.find_plugin("pybtex.backends", "plaintext")
    _remember_pybtex_plugins()
    _remember_pybtex_plugins()  # a second build in one process does not wrap it twice
    found = pybtex.plugin.find_plugin
    assert found("pybtex.backends", "plaintext") is first
    assert found("pybtex.backends", "plaintext") is first
    assert found.cache_info().hits >= 1
    assert not hasattr(found.__wrapped__, "cache_info")
