"""Build the 中文 edition into ``_build/html/zh/``: ``python -m course_site.zh_edition``.

``make book`` runs it after the English build (``make book-zh`` alone).

The zh edition is the same book built again by Sphinx with ``language = "zh_CN"``: the prose comes
from the message catalogues ``locale/zh_CN/LC_MESSAGES/<docname>.po`` (gettext; Sphinx compiles the
``.mo`` files at build time, an empty or fuzzy message falls back to English), the code and the
outputs from the notebooks. Its figures and widgets must speak Chinese, so its outputs come from the
notebooks executed with ``COURSE_LANG=zh`` (``make execute-zh``, committed as
``locale/zh_CN/notebooks/<folder>/<name>.ipynb``).

Steps (all outputs under ``_build/``):

1. **stage** ``_build/zh-src/``: a copy of the book's sources in which every notebook keeps its
   English Markdown and code (the catalogues' msgids) and takes each code cell's outputs, and the
   saved widget state, from its zh-executed copy (:func:`compose`). A zh copy whose code differs
   from the English notebook is stale: its English outputs are kept, with a warning (and
   ``tests/test_zh_edition.py`` fails). ``_config.yml`` gains ``language: zh_CN`` and the
   absolute path of ``_ext/``; the classroom kit gets translated chapters and lesson plans in
   ``_build/zh-kit/``.
2. **build** it with ``jupyter-book build --builder html -W -n --keep-going`` into
   ``_build/zh-build/`` (its own doctrees: a shared environment is "incompatible");
3. **publish**: copy ``_build/zh-build/_build/html`` to ``_build/html/zh`` (same file names as the
   English pages; its own ``_static``).

>>> compose({"cells": [_code("x = 1", [])], "metadata": {}},
...         {"cells": [_code("x = 1", ["out"])], "metadata": {}})["cells"][0]["outputs"]
['out']
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from course_site import i18n

REPO = Path(__file__).resolve().parents[2]
STAGE = "_build/zh-src"
KIT = "_build/zh-kit"
OUT = "_build/zh-build"
SITE_SUBDIR = "zh"
#: Folders of the repository that are not part of the book (never staged).
NOT_BOOK = {".git", ".venv", "_build", "tests", "_ext", "scripts", "benchmarks", ".ci"}
NOT_BOOK |= {".pytest_cache", ".ruff_cache", ".hypothesis", "test-artifacts", ".jupyter_cache"}


def _code(src: str, outputs: list[Any]) -> dict[str, Any]:
    return {"cell_type": "code", "source": src, "outputs": outputs, "metadata": {}}


def source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def zh_notebook(repo: Path, notebook: Path) -> Path:
    """The zh-executed copy of a notebook of the book (``chapters/x.ipynb`` -> ``locale/...``)."""
    rel = notebook.resolve().relative_to(repo.resolve())
    return repo / "locale" / i18n.LOCALE / "notebooks" / rel


def book_notebooks(repo: Path) -> list[Path]:
    return sorted((repo / "chapters").glob("*.ipynb")) + sorted((repo / "appendix").glob("*.ipynb"))


def code_cells(nb: dict[str, Any]) -> list[str]:
    return [source(c) for c in nb["cells"] if c["cell_type"] == "code"]


def compose(english: dict[str, Any], zh: dict[str, Any]) -> dict[str, Any]:
    """The English notebook with the outputs (and saved widget state) of its zh-executed copy.

    Raises ValueError when their code cells differ (the zh copy is stale: ``make execute-zh``).
    """
    if code_cells(english) != code_cells(zh):
        raise ValueError(
            "code cells differ between the English notebook and its zh-executed copy "
            f"({len(code_cells(english))} vs {len(code_cells(zh))} code cells): run make execute-zh"
        )
    new = copy.deepcopy(english)
    zh_code = [c for c in zh["cells"] if c["cell_type"] == "code"]
    en_code = [c for c in new["cells"] if c["cell_type"] == "code"]
    for cell, zh_cell in zip(en_code, zh_code, strict=True):
        cell["outputs"] = copy.deepcopy(zh_cell.get("outputs", []))
        if "execution_count" in zh_cell:
            cell["execution_count"] = zh_cell["execution_count"]
    widgets = zh.get("metadata", {}).get("widgets")
    if widgets is not None:
        new.setdefault("metadata", {})["widgets"] = copy.deepcopy(widgets)
    else:
        new.get("metadata", {}).pop("widgets", None)
    return new


#: The figures' alt texts (cell metadata ``mystnb.image.alt``, which Sphinx's gettext does not
#: see: myst-nb applies it to the output image at render time), ``{notebook: {English: 中文}}``.
FIGURE_ALT = "locale/zh_CN/figure_alt.json"


def figure_alts(nb: dict[str, Any]) -> list[str]:
    """The alt text of every figure cell of a notebook, in order."""
    alts = []
    for cell in nb.get("cells", []):
        alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
        if alt:
            alts.append(alt)
    return alts


def translate_figure_alts(nb: dict[str, Any], catalog: dict[str, str]) -> list[str]:
    """Replace each figure's alt text by its translation in place; return the untranslated ones.

    >>> nb = {"cells": [{"metadata": {"mystnb": {"image": {"alt": "A heatmap"}}}}]}
    >>> translate_figure_alts(nb, {"A heatmap": "一张热力图"}), figure_alts(nb)
    ([], ['一张热力图'])
    """
    missing = []
    for cell in nb.get("cells", []):
        image = cell.get("metadata", {}).get("mystnb", {}).get("image", {})
        alt = image.get("alt")
        if not alt:
            continue
        if catalog.get(alt):
            image["alt"] = catalog[alt]
        else:
            missing.append(alt)
    return missing


def load_figure_alts(repo: Path = REPO) -> dict[str, dict[str, str]]:
    path = repo / FIGURE_ALT
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


#: The code cells' comments, ``{notebook: {English: 中文}}``: the code is the same in both
#: editions, its comments are translated when the zh book is staged
#: (:func:`translate_code_comments`).
CODE_COMMENTS = "locale/zh_CN/code_comments.json"

#: A comment's marker and the space after it (``# ``, ``#: ``), kept as they are.
_COMMENT_MARK = re.compile(r"#+:?\s*")
#: An IPython line (``%timeit``, ``!pip``): not Python, tokenize cannot read it.
_MAGIC_LINE = re.compile(r"^\s*[%!]")


def _comment_blocks(src: str) -> list[tuple[int, int, int, str, str]]:
    """The comments of one code cell as ``(first row, last row, column, mark, text)``, rows from 0.

    Consecutive lines holding only a comment, at one column, form one block (a sentence often runs
    over two lines): its text is the lines' texts joined by a space. A comment after code is a
    block of its own. Found with :mod:`tokenize`, so a ``#`` inside a string is not a comment;
    IPython's ``%``/``!`` lines are blanked first, and a cell magic (``%%``) or a cell that still
    does not tokenize has no comments.

    >>> _comment_blocks('x = "#1"  # one\\n# two\\n#   three\\n%time f()  # magic')
    [(0, 0, 10, '# ', 'one'), (1, 2, 0, '# ', 'two three')]
    """
    import io
    import tokenize

    if src.lstrip().startswith("%%"):
        return []
    lines = src.splitlines(keepends=True)
    python = "".join("\n" if _MAGIC_LINE.match(line) else line for line in lines)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(python).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    blocks: list[list[Any]] = []
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        row, col = tok.start[0] - 1, tok.start[1]
        mark = _COMMENT_MARK.match(tok.string)
        prefix = mark.group(0) if mark else "#"
        text = tok.string[len(prefix) :].rstrip()
        if not text:
            continue  # a bare ``#`` line separates two blocks
        alone = not lines[row][:col].strip()
        last = blocks[-1] if blocks else None
        if alone and last and last[5] and last[1] == row - 1 and last[2] == col:
            last[1], last[4] = row, f"{last[4]} {text}"
            continue
        blocks.append([row, row, col, prefix, text, alone])
    return [(a, b, c, m, t) for a, b, c, m, t, _ in blocks]


_STATEMENT = re.compile(r"(?:return|import|from|raise|assert|del|pass|yield)\b")
_ASSIGN_OR_CALL = re.compile(r"[\w\]]\(|(?<![=<>!])=(?!=)")


def needs_translation(comment: str) -> bool:
    """Whether a comment has English prose: a shape ``(B, T, d)``, a code name or a line of
    code commented out (``return m, l`` in an exercise's stub) has none.

    >>> needs_translation("(T_k, T_k)"), needs_translation("(T_k, T_k): chapter 2's formula")
    (False, True)
    >>> needs_translation("return weights, output"), needs_translation("weights in MiB")
    (False, True)
    """
    import ast

    from course_site.zh_lint import untranslated_english

    if not untranslated_english(comment):
        return False
    try:
        ast.parse(comment)
    except SyntaxError:
        return True
    # Prose can parse too ("weights in MiB", "inputs and output"): code is a statement or has an
    # assignment or a call.
    return not (_STATEMENT.match(comment) or _ASSIGN_OR_CALL.search(comment))


def code_comments(nb: dict[str, Any], *, prose_only: bool = True) -> list[str]:
    """The comments (blocks of comment lines joined) of a notebook's code cells that have English
    prose, in order, each once: the keys its entry in :data:`CODE_COMMENTS` must have. With
    ``prose_only=False``, every comment: the keys it may have (an entry may also give a comment
    that is already Chinese its full-width punctuation)."""
    found: list[str] = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        for *_, text in _comment_blocks(source(cell)):
            if (needs_translation(text) or not prose_only) and text not in found:
                found.append(text)
    return found


def translate_code_comments(nb: dict[str, Any], catalog: dict[str, str]) -> list[str]:
    """Replace the comments of the code cells by their translations in place (strings and code
    untouched); return the comments with English prose that have none.

    A translation may hold line breaks (``\\n``): a block of comment lines becomes as many lines
    as the translation has, at the block's indentation.

    >>> nb = {"cells": [{"cell_type": "code", "source": [
    ...     "scores = q @ k.T  # (T,): one score per key\\n",
    ...     "    # the texts of the page,\\n", "    # rounded\\n",
    ...     "s = '# not a comment'  # (T,)"]}]}
    >>> translate_code_comments(nb, {"(T,): one score per key": "(T,)：每个键一个分数",
    ...                              "the texts of the page, rounded": "页面上的文字，\\n已舍入"})
    []
    >>> print(source(nb["cells"][0]))
    scores = q @ k.T  # (T,)：每个键一个分数
        # 页面上的文字，
        # 已舍入
    s = '# not a comment'  # (T,)
    >>> translate_code_comments(nb, {}), translate_code_comments(
    ...     {"cells": [{"cell_type": "code", "source": "x = 1  # no entry"}]}, {})
    ([], ['no entry'])
    """
    missing: list[str] = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        src = source(cell)
        lines = src.splitlines(keepends=True)
        changed = False
        blocks = _comment_blocks(src)
        for *_, text in blocks:
            if not catalog.get(text) and needs_translation(text) and text not in missing:
                missing.append(text)
        for first, last, col, mark, text in reversed(blocks):
            zh = catalog.get(text)
            if not zh:
                continue
            end = lines[last][len(lines[last].rstrip("\r\n")) :]
            head = lines[first][:col]
            indent = head if not head.strip() else " " * col
            new = [head + mark + zh_line for zh_line in zh.split("\n")[:1]]
            new += [indent + mark + zh_line for zh_line in zh.split("\n")[1:]]
            lines[first : last + 1] = [line + "\n" for line in new[:-1]] + [new[-1] + end]
            changed = True
        if changed:
            new_src = "".join(lines)
            is_list = isinstance(cell.get("source"), list)
            cell["source"] = new_src.splitlines(keepends=True) if is_list else new_src
    return missing


def load_code_comments(repo: Path = REPO) -> dict[str, dict[str, str]]:
    path = repo / CODE_COMMENTS
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _write_if_changed(path: Path, data: bytes) -> None:
    """Write only when the bytes differ: Sphinx rebuilds a page whose source is newer."""
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _copy_if_changed(src: Path, dst: Path) -> None:
    same_size = dst.is_file() and dst.stat().st_size == src.stat().st_size
    if same_size and dst.read_bytes() == src.read_bytes():
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def _book_files(repo: Path) -> list[Path]:
    files = []
    # The folders that are not the book (the venv, _build, .git: 84,000 entries) are not walked.
    tops = [p for p in repo.iterdir() if p.name not in NOT_BOOK]
    walked = (q for p in tops for q in ([p] if p.is_file() else p.rglob("*")))
    for path in sorted(walked):
        rel = path.relative_to(repo)
        if not path.is_file():
            continue
        if rel.parts[0] == "locale" and "notebooks" in rel.parts:
            continue
        if rel.suffix == ".mo" or ".ipynb_checkpoints" in rel.parts or rel.name == "conf.py":
            continue
        if rel.parts[0] == "src" and (rel.suffix != ".py" or "__pycache__" in rel.parts):
            continue  # the package's code only: a chapter shows a module with literalinclude
        files.append(path)
    return files


#: The site's own words in the 中文 edition (``_config.yml`` holds the English ones): the book's
#: title, which Sphinx also puts after every page title ("1. 查询、键、值 — 注意力，一步一步来"),
#: and the footer.
ZH_CHROME = {
    "title": "注意力，一步一步来",
    "author": "《注意力，一步一步来》的贡献者",
    "extra_footer": "代码：MIT 许可证；文字与图片：CC BY 4.0。\n",
    # sphinx-togglebutton's hint on a folded answer or cell (its own catalogue has no zh_CN)
    "togglebutton_hint": "点击显示",
    "togglebutton_hint_hide": "点击隐藏",
}
#: The date of "最后更新于 …" (no zero padding, as Chinese dates are written).
ZH_LAST_UPDATED_FMT = "%Y 年 %-m 月 %-d 日"


def zh_config(repo: Path, stage: Path, kit: Path) -> dict[str, Any]:
    """``_config.yml`` of the staged zh book."""
    config = yaml.safe_load((repo / "_config.yml").read_text(encoding="utf-8"))
    config["title"] = ZH_CHROME["title"]
    config["author"] = ZH_CHROME["author"]
    config.setdefault("html", {})["extra_footer"] = ZH_CHROME["extra_footer"]
    sphinx = config.setdefault("sphinx", {})
    local = dict(sphinx.get("local_extensions") or {})
    for name, path in local.items():
        local[name] = str((repo / path).resolve())
    sphinx["local_extensions"] = local
    options = sphinx.setdefault("config", {})
    options["language"] = i18n.LOCALE
    options.setdefault("locale_dirs", ["locale/"])
    options.setdefault("gettext_compact", False)
    options["classroom_kit_source"] = str(kit.resolve())
    options["togglebutton_hint"] = ZH_CHROME["togglebutton_hint"]
    options["togglebutton_hint_hide"] = ZH_CHROME["togglebutton_hint_hide"]
    if options.get("html_last_updated_fmt") is not None:  # the date is shown: write it in Chinese
        options["html_last_updated_fmt"] = ZH_LAST_UPDATED_FMT
    return config


def stage(repo: Path = REPO, *, quiet: bool = False) -> list[str]:
    """Write the staged zh book (``_build/zh-src``) and kit sources; return the warnings."""
    dest, kit = repo / STAGE, repo / KIT
    warnings: list[str] = []
    notebooks = {p.resolve() for p in book_notebooks(repo)}
    for path in _book_files(repo):
        rel = path.relative_to(repo)
        if path.resolve() in notebooks:
            english = json.loads(path.read_text(encoding="utf-8"))
            zh_path = zh_notebook(repo, path)
            nb = english
            if not zh_path.is_file():
                warnings.append(f"{rel}: no zh-executed copy ({zh_path.relative_to(repo)})")
            else:
                try:
                    nb = compose(english, json.loads(zh_path.read_text(encoding="utf-8")))
                except ValueError as err:
                    warnings.append(f"{rel}: {err}")
            alts = load_figure_alts(repo).get(rel.with_suffix("").as_posix(), {})
            for alt in translate_figure_alts(nb, alts):
                warnings.append(
                    f"{rel}: figure alt text not translated in {FIGURE_ALT}: {alt[:60]}"
                )
            comments = load_code_comments(repo).get(rel.with_suffix("").as_posix(), {})
            for comment in translate_code_comments(nb, comments):
                warnings.append(
                    f"{rel}: code comment not translated in {CODE_COMMENTS}: {comment[:60]}"
                )
            data = (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
            _write_if_changed(dest / rel, data)
            if rel.parts[0] == "chapters":
                catalog = i18n.load_catalog(i18n.messages_dir(repo) / rel.with_suffix(".po"))
                translated = i18n.translate_notebook(nb, catalog)
                data = (json.dumps(translated, indent=1, ensure_ascii=False) + "\n").encode()
                _write_if_changed(kit / rel, data)
        elif rel.parts[0] == "_config.yml":
            pass
        else:
            _copy_if_changed(path, dest / rel)
    config = zh_config(repo, dest, kit)
    _write_if_changed(
        dest / "_config.yml", yaml.safe_dump(config, allow_unicode=True, sort_keys=False).encode()
    )
    # The kit's lesson plans (speaker notes) and the files its zip carries.
    for plan in sorted((repo / "instructor").glob("*.md")):
        rel = plan.relative_to(repo)
        catalog = i18n.load_catalog(i18n.messages_dir(repo) / rel.with_suffix(".po"))
        text = i18n.translate_markdown(plan.read_text(encoding="utf-8"), catalog)
        _write_if_changed(kit / rel, text.encode("utf-8"))
    for extra in ("requirements.txt", "runtime.txt", "pyproject.toml", "_toc.yml", "_config.yml"):
        if (repo / extra).is_file():
            _copy_if_changed(repo / extra, kit / extra)
    if not quiet:
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)
    return warnings


def build(repo: Path = REPO, *, jupyter_book: str | None = None) -> float:
    """Stage, build (``-W -n --keep-going``), publish to ``_build/html/zh``; return seconds."""
    start = time.perf_counter()
    stage(repo)
    exe = jupyter_book or str(Path(sys.executable).with_name("jupyter-book"))
    env = dict(os.environ)
    # Our _ext and src first, as for the English build.
    extra = [str(repo / "_ext"), str(repo / "src")]
    env["PYTHONPATH"] = os.pathsep.join([*extra, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [exe, "build", str(repo / STAGE), "--builder", "html", "-W", "-n", "--keep-going"]
    cmd += ["--path-output", str(repo / OUT)]
    subprocess.run(cmd, check=True, env=env)
    built = repo / OUT / "_build" / "html"
    site = repo / "_build" / "html" / SITE_SUBDIR
    if site.exists():
        shutil.rmtree(site)
    shutil.copytree(built, site)
    shared = share_static(repo / "_build" / "html", site)
    print(
        f"{shared['files']} files of _static shared with the English edition: "
        f"{shared['bytes'] / 1e6:.1f} MB not copied twice"
    )
    return time.perf_counter() - start


#: A local ``src``/``href`` into the edition's ``_static`` folder: (attribute + quote, the ``../``
#: that lead to the edition's root, the file's path inside ``_static``).
STATIC_REF = re.compile(r'((?:src|href)=")((?:\.\./)*)_static/([^"#?]+)')


def share_static(site: Path, edition: Path) -> dict[str, int]:
    """Let the edition in ``edition`` (``site/zh``) use the English site's ``_static`` files.

    The two editions' ``_static`` folders are the same but for the language settings
    (``documentation_options.js``, ``translations.js``): the browser model of the head explorer
    alone is 44 MB. Every file of ``edition/_static`` that is byte for byte the English one is
    deleted, and every page of the edition (chapters, decks, search) that loads it is pointed one
    folder up, at the English copy. Files that differ stay. Scripts that find their neighbours
    from their own address (the widget loader's ``static_url``, MathJax's components) then find the
    English ones, which are the same. Returns the number of files and bytes shared.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> for folder, text in (("_static", "en"), ("zh/_static", "zh")):
    ...     (root / folder).mkdir(parents=True)
    ...     _ = (root / folder / "same.js").write_text("x")
    ...     _ = (root / folder / "options.js").write_text(text)
    >>> _ = (root / "zh" / "p.html").write_text('<script src="_static/same.js"></script>'
    ...                                         '<script src="_static/options.js"></script>')
    >>> share_static(root, root / "zh")
    {'files': 1, 'bytes': 1}
    >>> (root / "zh" / "p.html").read_text()
    '<script src="../_static/same.js"></script><script src="_static/options.js"></script>'
    """
    english, own = site / "_static", edition / "_static"
    if not english.is_dir() or not own.is_dir():
        return {"files": 0, "bytes": 0}
    same = {
        f.relative_to(own).as_posix(): f.stat().st_size
        for f in own.rglob("*")
        if f.is_file()
        and (english / f.relative_to(own)).is_file()
        and f.read_bytes() == (english / f.relative_to(own)).read_bytes()
    }
    for page in edition.rglob("*.html"):
        rel = page.relative_to(edition)
        if rel.parts[0] == "_static":
            continue
        up = "../" * (len(rel.parts) - 1)  # from this page to the edition's root

        def to_english(m: re.Match[str], up: str = up) -> str:
            if m.group(2) != up or unquote(m.group(3)) not in same:
                return m.group(0)
            return f"{m.group(1)}{up}../_static/{m.group(3)}"

        text = page.read_text(encoding="utf-8")
        shared = STATIC_REF.sub(to_english, text)
        if shared != text:
            page.write_text(shared, encoding="utf-8")
    for rel in same:
        (own / rel).unlink()
    for folder in sorted((d for d in own.rglob("*") if d.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    return {"files": len(same), "bytes": sum(same.values())}


def drop_obsolete_entries(locale_dir: Path) -> dict[str, int]:
    """Remove the obsolete (``#~``) entries ``sphinx-intl update`` keeps for text that left a page.

    They are translations of sentences the book no longer has; left in, they contradict the
    current text for whoever reads the catalogue (two of chapter 12's did). Returns the number
    removed per catalogue (relative path), only where some were.
    """
    import polib

    removed = {}
    for path in sorted(locale_dir.rglob("*.po")):
        catalogue = polib.pofile(str(path), wrapwidth=78)
        obsolete = [entry for entry in catalogue if entry.obsolete]
        if obsolete:
            for entry in obsolete:
                catalogue.remove(entry)
            catalogue.save(str(path))
            removed[path.relative_to(locale_dir).as_posix()] = len(obsolete)
    return removed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_site.zh_edition")
    parser.add_argument(
        "what", choices=["build", "stage", "drop-obsolete"], nargs="?", default="build"
    )
    args = parser.parse_args(argv)
    if args.what == "drop-obsolete":
        removed = drop_obsolete_entries(REPO / "locale" / "zh_CN" / "LC_MESSAGES")
        print(f"obsolete entries removed: {sum(removed.values())} {removed or ''}".rstrip())
        return 0
    if args.what == "stage":
        warnings = stage(REPO)
        print(f"staged {REPO / STAGE} ({len(warnings)} warnings)")
        return 0
    try:
        seconds = build(REPO)
    except subprocess.CalledProcessError as err:
        print(f"the zh build failed ({err.returncode})", file=sys.stderr)
        return 1
    print(f"\nThe 中文 edition is in _build/html/{SITE_SUBDIR} (built in {seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
