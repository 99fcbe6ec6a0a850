"""Sphinx extension of the course (enabled from ``_config.yml``).

Placeholder until the live-widget work lands: it will serve the vendored JavaScript, widget manager and
MathJax from the book itself, only on the pages that need them.
"""

from __future__ import annotations

from typing import Any


def setup(app: Any) -> dict[str, Any]:
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
