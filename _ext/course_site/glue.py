"""``{glue:text}`` in the 中文 edition's translated paragraphs.

myst-nb's glue roles read the glued values from the notebook being parsed. Sphinx parses a
translated paragraph (a ``.po`` msgstr) as a separate small Markdown document, which has no
notebook: there myst-nb's role finds no value and warns. :class:`GlueTextRole` is myst-nb's role
with a fallback for that case: it reads the values from the page's own notebook (in the zh build,
the staged notebook with the zh-executed outputs) and formats them the same way
(:func:`course_kit.myst.glue_text`), so a number glued in English prose is glued in Chinese too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes
from myst_nb.ext.glue.roles import PasteTextRole

_CACHE: dict[tuple[str, float], dict[str, str]] = {}


def notebook_glue(path: Path) -> dict[str, str]:
    """The values a notebook file glued (read once per file version)."""
    from course_kit.myst import glued_values

    key = (str(path), path.stat().st_mtime)
    if key not in _CACHE:
        _CACHE[key] = glued_values(json.loads(path.read_text(encoding="utf-8")))
    return _CACHE[key]


class GlueTextRole(PasteTextRole):
    """myst-nb's ``{glue:text}``, also in a translated message (see the module's docstring)."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        if "nb_renderer" in self.document or "::" in self.text:
            return super().run()
        from course_kit.myst import glue_text

        env = self.document.settings.env
        path = Path(env.doc2path(env.docname))
        if path.suffix != ".ipynb":
            return super().run()
        try:
            text = glue_text("glue:text", self.text, notebook_glue(path))
        except ValueError as exc:
            msg = self.inliner.reporter.warning(str(exc), line=self.line)
            return [], [msg]
        node = nodes.inline(text, text, classes=["pasted-text"])
        self.set_source_info(node)
        return [node], []


def setup(app: Any) -> None:
    """Put the role in place of myst-nb's ``glue:text`` (myst-nb is set up before us)."""
    app.add_role_to_domain("glue", "text", GlueTextRole(), override=True)
