"""MyST -> the Markdown that plain Jupyter and nbconvert render: one rewrite for the decks and the
learner copies.

The chapters use MyST (Jupyter Book) syntax that JupyterLab, Jupyter Notebook and nbconvert show as
raw text. :func:`myst_to_markdown` rewrites it:

* ``{term}`label <Target>``` and ``{ref}``/``{numref}`` roles become their label;
* ``{cite}`a,b``` (and ``{cite:p}``, ``{cite:t}``) becomes ``(Author et al., 2017; Other, 2015)``,
  the book's author-year labels (:func:`course_site.bibstyle.author_year`), never a raw key;
* ``{doc}`path``` becomes what ``doc_link`` makes of it (default: its label, or its last part);
* ``{gloss}`text``` (an English gloss of Chinese seed text) becomes ``*text*``, and nothing in a
  中文 copy;
* an admonition with ``:class: dropdown`` becomes ``<details><summary>Title</summary>...``: closed
  until the reader opens it, in JupyterLab as on a slide; any other admonition becomes a block quote
  under its bold title;
* ``{literalinclude}`` becomes a fenced code block with the file's text (``include_root``: the
  folder the path is relative to; ``:pyobject:``, ``:lines:`` and ``:start-after:`` honoured);
* ``{math}`` blocks become ``$$``; figures become images; MyST target lines ``(label)=`` go;
* ``{glue:text}`name:fmt``` and ``{glue}`name``` (myst-nb's glue) become the glued value's text,
  formatted as the book formats it: ``glued`` maps each name to the ``text/plain`` the notebook's
  outputs recorded (:func:`glued_values`); a role naming no glued value is an error.

>>> myst_to_markdown("See {term}`Query (查询)` {cite:p}`vaswani2017attention`.")
'See Query (查询) (Vaswani et al., 2017).'
>>> print(myst_to_markdown("```{admonition} Note\\n:class: tip\\nBody\\n```"))
> **Note**
>
> Body
>>> print(myst_to_markdown("```{admonition} Answer\\n:class: dropdown\\nIt is 4.\\n```"))
<details><summary>Answer</summary>
<BLANKLINE>
It is 4.
<BLANKLINE>
</details>
>>> myst_to_markdown("It puts {glue:text}`w:.3f` on one key.", glued={"w": "0.992"})
'It puts 0.992 on one key.'
"""

from __future__ import annotations

import ast
import html
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "DIRECTIVE",
    "ROLE",
    "cite_label",
    "doc_title",
    "glue_text",
    "glued_values",
    "myst_to_markdown",
]

ROLE = re.compile(r"\{([a-z:]+)\}`([^`]*)`")
DIRECTIVE = re.compile(r"^(\s*)(`{3,}|~{3,}|:{3,})\s*\{([a-z-]+)\}\s*(.*)$")


def cite_label(keys: str) -> str:
    """``"a, b"`` (a cite role's keys) as the book prints them: ``(A et al., 2017; B, 2015)``.
    A key missing from the bibliography is shown as it is (the book build fails on it anyway)."""
    from course_site.bibstyle import author_year

    labels = []
    for key in (k.strip() for k in keys.split(",")):
        try:
            labels.append(author_year(key))
        except KeyError:
            labels.append(key)
    return "(" + "; ".join(labels) + ")"


def doc_title(path: Path) -> str | None:
    """The title (first ``#`` heading) of a book page, a notebook or a Markdown file."""
    import json

    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        cells = json.loads(text).get("cells", [])
        text = "\n".join(
            "".join(c.get("source", "")) for c in cells if c.get("cell_type") == "markdown"
        )
    m = re.search(r"^#\s+(.+?)\s*$", text, re.M)
    return m.group(1) if m else None


def glued_values(nb: dict[str, Any]) -> dict[str, str]:
    """Every value a notebook glued (``myst_nb.glue``) in its committed outputs: name ->
    ``text/plain``, as myst-nb reads them (with or without ``display``).

    >>> out = {"output_type": "display_data", "metadata": {"scrapbook": {"name": "w",
    ...        "mime_prefix": "application/papermill.record/"}},
    ...        "data": {"application/papermill.record/text/plain": "0.992"}}
    >>> glued_values({"cells": [{"cell_type": "code", "outputs": [out]}]})
    {'w': '0.992'}
    """
    values: dict[str, str] = {}
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            scrap = out.get("metadata", {}).get("scrapbook")
            if not scrap:
                continue
            plain = out.get("data", {}).get(scrap.get("mime_prefix", "") + "text/plain")
            if plain is not None:
                values[scrap["name"]] = "".join(plain) if isinstance(plain, list) else plain
    return values


def glue_text(role: str, inner: str, glued: Mapping[str, str]) -> str:
    """The text a ``{glue}`` / ``{glue:text}`` role shows: the glued ``text/plain``, through the
    role's format spec (``name:.3f``) as myst-nb applies it (:func:`format_plain_text`).

    >>> glue_text("glue:text", "n:,d", {"n": "20000"})
    '20,000'
    """
    from myst_nb.core.variables import format_plain_text

    name, fmt = inner, ""  # {glue}: the text/plain as it is
    if role == "glue:text":
        name, fmt = inner.rsplit(":", 1) if ":" in inner else (inner, "s")
    if name not in glued:
        known = ", ".join(sorted(glued)) or "none"
        raise ValueError(f"{{{role}}}`{inner}`: no value glued as {name!r} (glued: {known})")
    return format_plain_text(glued[name], fmt) if fmt else str(glued[name])


def _label(text: str) -> str:
    """``label <target>`` -> ``label``."""
    return re.sub(r"\s*<[^>]*>\s*$", "", text)


def _default_doc(text: str) -> str:
    label = _label(text)
    return label if label != text else text.rsplit("/", 1)[-1]


def _include(path: Path, options: dict[str, str]) -> str:
    """The text a ``{literalinclude}`` shows."""
    text = path.read_text(encoding="utf-8")
    if "pyobject" in options:
        tree = ast.parse(text)
        lines = text.splitlines()
        for node in ast.walk(tree):
            if getattr(node, "name", None) == options["pyobject"] and hasattr(node, "lineno"):
                first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
                text = "\n".join(lines[first - 1 : node.end_lineno])
                break
    if "start-after" in options and options["start-after"] in text:
        text = text.split(options["start-after"], 1)[1].lstrip("\n")
    if "end-before" in options and options["end-before"] in text:
        text = text.split(options["end-before"], 1)[0]
    if "lines" in options:
        lines = text.splitlines()
        picked: list[str] = []
        for part in options["lines"].split(","):
            lo, dash, hi = part.strip().partition("-")
            start = int(lo) if lo else 1
            stop = int(hi) if hi else (len(lines) if dash else start)  # "5-" runs to the end
            picked += lines[start - 1 : stop]
        text = "\n".join(picked)
    return text.rstrip("\n")


#: What a ``{numref}`` with no text of its own becomes (there are no figure numbers here).
THE_FIGURE = {"en": "the figure", "zh": "该图"}


def myst_to_markdown(
    text: str,
    *,
    doc_link: Callable[[str], str] = _default_doc,
    include_root: Path | None = None,
    language: str = "en",
    glued: Mapping[str, str] | None = None,
) -> str:
    """Rewrite the MyST the chapters use into Markdown that plain Jupyter and nbconvert render
    (see the module's docstring). ``doc_link`` turns a ``{doc}`` role's text into Markdown;
    ``include_root`` is where ``{literalinclude}`` paths start (None: the directive becomes a
    note naming the file); ``language`` of the text (``en``, ``zh``...); ``glued``: the
    notebook's glued values (:func:`glued_values`) for its ``{glue}`` roles."""
    lang = "zh" if language.startswith("zh") else "en"

    def role(m: re.Match[str]) -> str:
        name, inner = m.group(1), m.group(2)
        if name.startswith("cite"):
            return cite_label(inner)
        if name in {"glue", "glue:text"}:
            return glue_text(name, inner, glued or {})
        if name == "doc":
            return doc_link(inner)
        if name == "math":
            return f"${inner}$"
        if name == "gloss":  # an English gloss of Chinese seed text: the 中文 copy leaves it out
            return f"*{inner}*" if lang == "en" else ""
        if name == "numref" and _label(inner) == inner:
            return THE_FIGURE[lang]
        return _label(inner)

    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = DIRECTIVE.match(line)
        if not m:
            if re.match(r"^\(\S+\)=\s*$", line):  # a MyST target label
                i += 1
                continue
            out.append(ROLE.sub(role, line))
            i += 1
            continue
        fence, name, arg = m.group(2), m.group(3), m.group(4).strip()
        body: list[str] = []
        options: dict[str, str] = {}
        i += 1
        depth = 0
        while i < len(lines):
            inner = lines[i].strip()
            if DIRECTIVE.match(lines[i]) and DIRECTIVE.match(lines[i]).group(2)[0] == fence[0]:
                depth += 1
            elif inner and inner == fence[0] * len(inner) and len(inner) >= len(fence):
                if depth == 0:
                    i += 1
                    break
                depth -= 1
            if not body and re.match(r"^:[a-z-]+:", inner):
                key, _, value = inner[1:].partition(":")
                options[key] = value.strip()
            else:
                body.append(lines[i])
            i += 1
        inner_md = myst_to_markdown(
            "\n".join(body),
            doc_link=doc_link,
            include_root=include_root,
            language=language,
            glued=glued,
        )
        if name == "math":
            out += ["$$", inner_md.strip(), "$$"]
        elif name in {"figure", "image"}:
            alt = options.get("alt", "")
            out.append(f"![{alt}]({arg})")
            out.append(inner_md)
        elif name == "literalinclude":
            language = options.get("language", "python")
            if include_root is not None and (include_root / arg).is_file():
                out += [f"```{language}", _include(include_root / arg, options), "```"]
            else:
                out.append(f"(The code shown here is the file `{arg}`.)")
        elif "dropdown" in options.get("class", "") or name == "dropdown":
            out += [
                f"<details><summary>{html.escape(ROLE.sub(role, arg) or 'Show')}</summary>",
                "",
                inner_md,
                "",
                "</details>",
            ]
        elif name in {"code-cell", "code-block", "code"}:
            out += ["```" + arg, inner_md, "```"]
        else:
            title = arg or name.capitalize()
            quoted = [f"> **{ROLE.sub(role, title)}**", ">"]
            quoted += ["> " + b if b.strip() else ">" for b in inner_md.splitlines()]
            out += quoted
    return "\n".join(out)
