"""Fixtures of the browser tests: the built site served on 127.0.0.1 and a headless Chromium.

The site is ``$COURSE_SITE_DIR`` (default ``_build/html``). If it is missing the tests are skipped
with a message, except in CI (``CI=true``), where a missing site is a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from course_site.browser import (
    ROOT,
    XSS_PAGE,
    launch,
    serve,
    site_dir,
    xss_page_html,
)

from ..system_tools import in_ci, require

ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="session")
def site_root() -> Path:
    root = site_dir()
    if not (root / "index.html").exists() and not (root / "intro.html").exists():
        message = f"built site not found at {root} (run `make book` or set COURSE_SITE_DIR)"
        if in_ci():
            pytest.fail(message + "; in CI the site must exist")
        pytest.skip(message)
    return root


@pytest.fixture(scope="session")
def xss_html() -> str:
    return xss_page_html()


@pytest.fixture(scope="session")
def site_url(site_root: Path, xss_html: str) -> Iterator[str]:
    extra = {
        f"/{XSS_PAGE}": xss_html.encode("utf-8"),
    }
    with serve(site_root, extra=extra) as url:
        yield url


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright import sync_api as playwright_api

    require("chromium")
    with playwright_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
