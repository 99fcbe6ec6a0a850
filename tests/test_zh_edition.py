"""The 中文 edition's sources (issue 20): catalogues, zh-executed notebooks, glossary, the kit.

Fast, no build needed: they read ``locale/zh_CN/`` and the notebooks. The built sites are compared
in ``tests/test_built_site_zh.py``; the pages in Chromium in ``tests/browser/``.

* every page of ``_toc.yml`` has its catalogue ``locale/zh_CN/LC_MESSAGES/<docname>.po``;
* coverage: >= 98 % of the messages translated overall and 100 % for every chapter (this fails
  until the translators' catalogues are merged; ``python -m course_site.i18n_coverage`` reports);
* every glossary term ``English (中文)`` in a translated message is translated by its 中文 term;
* every notebook has a zh-executed copy (``make execute-zh``) with the same code cells and the same
  printed numbers, per cell, as the English notebook.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from course_kit.pdf import toc_pages
from course_site import i18n, zh_catalogues, zh_edition

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = [p.relative_to(REPO).as_posix() for p in zh_edition.book_notebooks(REPO)]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: A number as printed: an optional sign, digits, a decimal part, an exponent (1e-07, -0.25, 512).
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def printed_text(cell: dict[str, Any]) -> list[str]:
    """What a code cell printed: its streams and the plain text of its results (not widget views,
    whose plain text is a repr)."""
    out = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            out.append(zh_edition.source({"source": o.get("text", "")}))
        elif o.get("output_type") in {"execute_result", "display_data", "error"}:
            data = o.get("data", {})
            if WIDGET_VIEW in data:
                continue
            if "text/plain" in data:
                out.append(zh_edition.source({"source": data["text/plain"]}))
            if o.get("output_type") == "error":
                out.append(f"{o.get('ename')}: {o.get('evalue')}")
    return out


def printed_numbers(cell: dict[str, Any]) -> list[str]:
    """The numbers a code cell printed, in order (the words around them may be translated).

    >>> printed_numbers({"outputs": [{"output_type": "stream", "text": "mean 0.25, 1e-07 (2/3)"}]})
    ['0.25', '1e-07', '2', '3']
    """
    return [m.group(0) for text in printed_text(cell) for m in NUMBER.finditer(text)]


def output_kinds(cell: dict[str, Any]) -> list[str]:
    """The kinds of a cell's outputs: a stream's name, or a result's MIME types; consecutive
    writes to one stream count once (a kernel may split or merge them).

    >>> output_kinds({"outputs": [{"output_type": "stream", "name": "stdout"},
    ...     {"output_type": "stream", "name": "stdout"}, {"output_type": "display_data",
    ...     "data": {"image/png": "", "text/plain": ""}}]})
    ['stdout', 'image/png text/plain']
    """
    kinds: list[str] = []
    for o in cell.get("outputs", []):
        stream = o["output_type"] == "stream"
        kind = o.get("name", "") if stream else " ".join(sorted(o.get("data", {})))
        if not (stream and kinds and kinds[-1] == kind):
            kinds.append(kind or o["output_type"])
    return kinds


def code(nb: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


# --- catalogues --------------------------------------------------------------------------------


def test_every_page_of_the_book_has_a_catalogue() -> None:
    pages = set(i18n.catalogue_files(REPO))
    missing = [p for p in toc_pages(REPO) if p not in pages]
    assert not missing, (
        f"pages without locale/zh_CN/LC_MESSAGES/<page>.po (make gettext): {missing}"
    )


def test_catalogues_are_one_per_page_and_uncompiled() -> None:
    """gettext_compact is false: one catalogue per page; the .mo files are never committed."""
    import subprocess

    config = (REPO / "_config.yml").read_text(encoding="utf-8")
    assert "gettext_compact: false" in config
    assert 'locale_dirs: ["locale/"]' in config
    tracked = subprocess.run(
        ["git", "ls-files", "locale"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.split()
    assert not [t for t in tracked if t.endswith(".mo")]


def test_catalogues_hold_no_obsolete_entries(tmp_path: Path) -> None:
    """No ``#~`` entry: a translation of text the book no longer has only contradicts the page
    (``make gettext`` drops them after ``sphinx-intl update``)."""
    import polib

    from course_site.zh_edition import drop_obsolete_entries

    catalogues = sorted((REPO / "locale" / "zh_CN" / "LC_MESSAGES").rglob("*.po"))
    obsolete = {
        p.name: n for p in catalogues if (n := sum(e.obsolete for e in polib.pofile(str(p))))
    }
    assert obsolete == {}
    # The purge itself, on a copy with one obsolete entry beside a current one.
    sample = tmp_path / "chapters" / "page.po"
    sample.parent.mkdir()
    sample.write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "kept"\nmsgstr "保留"\n\n#~ msgid "gone"\n#~ msgstr "已删"\n',
        encoding="utf-8",
    )
    assert drop_obsolete_entries(tmp_path) == {"chapters/page.po": 1}
    assert [(e.msgid, e.obsolete) for e in polib.pofile(str(sample))] == [("kept", False)]


def test_translation_coverage() -> None:
    """>= 98 % of the messages translated overall, 100 % for every chapter (per page: the report).

    Fails until the translators' catalogues are merged: ``python -m course_site.i18n_coverage``.
    """
    pages = i18n.coverage(REPO)
    assert len(pages) >= len(toc_pages(REPO))
    problems = i18n.coverage_problems(pages)
    assert not problems, i18n.coverage_report(pages) + "\n" + "\n".join(problems)


def test_coverage_counts_empty_and_fuzzy_as_untranslated(tmp_path: Path) -> None:
    import polib

    root = tmp_path / "locale" / "zh_CN" / "LC_MESSAGES" / "chapters"
    root.mkdir(parents=True)
    po = polib.POFile()
    po.append(polib.POEntry(msgid="Queries", msgstr="查询"))
    po.append(polib.POEntry(msgid="Keys", msgstr="键", flags=["fuzzy"]))
    po.append(polib.POEntry(msgid="Values", msgstr=""))
    po.save(str(root / "01_x.po"))
    [page] = i18n.coverage(tmp_path)
    assert (page.page, page.translated, page.total, page.is_chapter) == (
        "chapters/01_x",
        1,
        3,
        True,
    )
    assert i18n.coverage_problems([page])
    assert i18n.load_catalog(root / "01_x.po") == {"Queries": "查询"}


def test_glossary_terms_are_read() -> None:
    terms = dict(zh_catalogues.load_glossary(REPO / "glossary.md"))
    # The seed's own wording (the list).
    assert terms["Query"] == "查询" and terms["Key"] == "键" and terms["Value"] == "值"


@pytest.mark.parametrize("check", ["structure", "numbers", "consistency", "glossary", "asterisks"])
def test_catalogues_pass_the_static_check(check: str) -> None:
    """Every msgstr parses as the node it replaces (``2\\.`` for a numbered heading, or Sphinx
    silently keeps the English), keeps the msgid's numbers, uses the glossary's 中文 term wherever
    the msgid uses its English term (math, code and role targets aside), has the same translation
    on every page that shares the msgid, and renders no literal ``*``."""
    cats = zh_catalogues.load_catalogues(zh_catalogues.DEFAULT_LOCALE)
    report = zh_catalogues.Report()
    if check == "glossary":
        zh_catalogues.check_glossary(
            cats, zh_catalogues.load_glossary(REPO / "glossary.md"), report
        )
    elif check == "asterisks":
        zh_catalogues.check_asterisks(cats, None, report)
    else:
        getattr(zh_catalogues, f"check_{check}")(cats, report)
    problems = [
        f"{e.get('page')}: {e['detail']} {e.get('msgid', '')[:70]!r}" for e in report.errors
    ]
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])


# --- zh-executed notebooks ---------------------------------------------------------------


@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_zh_notebook_has_the_same_code(rel: str) -> None:
    zh = zh_edition.zh_notebook(REPO, REPO / rel)
    assert zh.is_file(), f"{zh.relative_to(REPO)} missing: run make execute-zh"
    english, chinese = read(REPO / rel), read(zh)
    assert zh_edition.code_cells(chinese) == zh_edition.code_cells(english), (
        f"{zh.relative_to(REPO)} is stale (its code differs from {rel}): run make execute-zh"
    )
    assert [c.get("metadata", {}).get("tags", []) for c in code(chinese)] == [
        c.get("metadata", {}).get("tags", []) for c in code(english)
    ]


@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_zh_notebook_prints_the_same_numbers(rel: str) -> None:
    zh = zh_edition.zh_notebook(REPO, REPO / rel)
    assert zh.is_file(), f"{zh.relative_to(REPO)} missing: run make execute-zh"
    english, chinese = code(read(REPO / rel)), code(read(zh))
    assert len(english) == len(chinese)
    # A cell excused from nbval times the reader's machine (test_course_structure's whitelist
    # says why, cell by cell): its numbers differ at every run, in either edition.
    differ = [
        f"code cell {i}: {printed_numbers(e)[:12]} vs {printed_numbers(z)[:12]}"
        for i, (e, z) in enumerate(zip(english, chinese, strict=True))
        if printed_numbers(e) != printed_numbers(z)
        and "nbval-ignore-output" not in e.get("metadata", {}).get("tags", [])
    ]
    assert not differ, "\n".join(differ)
    # The same kinds of output, cell by cell (a figure stays a figure, a widget a widget).
    assert [output_kinds(c) for c in english] == [output_kinds(c) for c in chinese]


@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_zh_notebook_has_the_same_widgets(rel: str) -> None:
    def widgets(nb: dict[str, Any]) -> list[str]:
        state = nb.get("metadata", {}).get("widgets", {})
        models = next(iter(state.values()), {}).get("state", {}) if state else {}
        views = [
            o["data"][WIDGET_VIEW]["model_id"]
            for c in code(nb)
            for o in c.get("outputs", [])
            if WIDGET_VIEW in o.get("data", {})
        ]
        return [str(models.get(m, {}).get("state", {}).get("_anywidget_id", "?")) for m in views]

    zh = zh_edition.zh_notebook(REPO, REPO / rel)
    assert zh.is_file(), f"{zh.relative_to(REPO)} missing: run make execute-zh"
    assert widgets(read(zh)) == widgets(read(REPO / rel))


def test_printed_numbers_tell_numbers_apart() -> None:
    a = {"outputs": [{"output_type": "stream", "text": "weights [0.1 0.9], total 1.0"}]}
    b = {"outputs": [{"output_type": "stream", "text": "权重 [0.1 0.8]，总和 1.0"}]}
    c = {"outputs": [{"output_type": "stream", "text": "权重 [0.1 0.9]，总和 1.0"}]}
    assert printed_numbers(a) != printed_numbers(b)
    assert printed_numbers(a) == printed_numbers(c)


def test_compose_takes_zh_outputs_and_refuses_other_code() -> None:
    english = {
        "cells": [
            {"cell_type": "markdown", "source": "# Title"},
            zh_edition._code("x = 1", ["en"]),
        ],
        "metadata": {},
    }
    zh = {
        "cells": [
            {"cell_type": "markdown", "source": "# Title"},
            zh_edition._code("x = 1", ["zh"]),
        ],
        "metadata": {"widgets": {"w": 1}},
    }
    composed = zh_edition.compose(english, zh)
    assert composed["cells"][1]["outputs"] == ["zh"]
    assert composed["cells"][0]["source"] == "# Title"  # the English msgids stay
    assert composed["metadata"]["widgets"] == {"w": 1}
    assert english["cells"][1]["outputs"] == ["en"]  # not changed in place
    zh["cells"][1]["source"] = "x = 2"
    with pytest.raises(ValueError, match="execute-zh"):
        zh_edition.compose(english, zh)


def test_zh_config_sets_the_language_and_absolute_extension_paths(tmp_path: Path) -> None:
    config = zh_edition.zh_config(REPO, tmp_path / "src", tmp_path / "kit")
    options = config["sphinx"]["config"]
    assert options["language"] == "zh_CN"
    assert options["gettext_compact"] is False and options["locale_dirs"] == ["locale/"]
    assert options["classroom_kit_source"] == str((tmp_path / "kit").resolve())
    assert (options["togglebutton_hint"], options["togglebutton_hint_hide"]) == (
        "点击显示",
        "点击隐藏",
    )
    for path in config["sphinx"]["local_extensions"].values():
        assert Path(path).is_absolute() and Path(path).is_dir()
    assert config["execute"]["execute_notebooks"] == "off"  # outputs are committed, as in English


# --- the classroom kit's translation -------------------------------------------------------------


@pytest.mark.parametrize("stem", [p.stem for p in sorted((REPO / "chapters").glob("*.ipynb"))])
def test_kit_translation_reaches_the_prose_of_each_chapter(stem: str) -> None:
    """The decks are built from notebooks: with a catalogue that translates every message, the
    translated notebook uses >= 90 % of the chapter's prose messages (display maths and text inside
    outputs are not in Markdown cells as such)."""
    po = i18n.messages_dir(REPO) / "chapters" / f"{stem}.po"
    msgids = [e.msgid for e in i18n._entries(po)]
    prose = [m for m in msgids if not m.startswith("\n")]
    catalog = {i18n.normalise(m): f"〔{k}〕" for k, m in enumerate(msgids)}
    nb = i18n.translate_notebook(read(REPO / "chapters" / f"{stem}.ipynb"), catalog)
    text = "\n".join(zh_edition.source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    used = {int(k) for k in re.findall(r"〔(\d+)〕", text)}
    reached = sum(1 for k, m in enumerate(msgids) if k in used and not m.startswith("\n"))
    assert reached >= 0.9 * len(prose), f"{reached} of {len(prose)} prose messages reached"
    # Code cells are never touched.
    assert zh_edition.code_cells(nb) == zh_edition.code_cells(
        read(REPO / "chapters" / f"{stem}.ipynb")
    )


@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_every_figure_alt_text_has_a_chinese_translation(rel: str) -> None:
    """A figure's alt text is cell metadata, which gettext does not see; the zh build takes it
    from ``locale/zh_CN/figure_alt.json``. Every alt text of the notebook is there, in Chinese,
    with the numbers of the English, and nothing stale is left."""
    english = zh_edition.figure_alts(read(REPO / rel))
    catalog = zh_edition.load_figure_alts(REPO).get(rel.removesuffix(".ipynb"), {})
    missing = [alt[:60] for alt in english if not catalog.get(alt)]
    assert not missing, f"add to {zh_edition.FIGURE_ALT}: {missing}"
    assert set(catalog) == set(english), f"stale entries: {sorted(set(catalog) - set(english))}"
    for alt in english:
        zh = catalog[alt]
        assert i18n.CJK.search(zh), (alt[:60], zh[:60])
        lost = [n for n in re.findall(r"\d+(?:\.\d+)?", alt) if n not in zh]
        assert not lost, f"numbers {lost} of {alt[:60]!r} missing from {zh[:60]!r}"
