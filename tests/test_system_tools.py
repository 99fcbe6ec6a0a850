"""A test that needs a program from outside Python (Node, Chromium, pdftotext, fontconfig, a CJK
font) skips on a developer's machine and **fails in CI**, naming the Debian package either way; CI
and the README install and list every one of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import system_tools
from .system_tools import SYSTEM_TOOLS, require

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def nothing_installed(monkeypatch):
    monkeypatch.setattr(system_tools.shutil, "which", lambda name: None)
    absent = {name: tool.__class__(f"/nonexistent/{name}", tool.package, tool.used_for)
              for name, tool in SYSTEM_TOOLS.items()}  # fmt: skip
    monkeypatch.setattr(system_tools, "SYSTEM_TOOLS", absent)


@pytest.mark.parametrize(
    ("name", "package"),
    [("node", "nodejs"), ("npm", "npm"), ("chromium", "chromium"),
     ("pdftotext", "poppler-utils"), ("fc-list", "fontconfig")],
)  # fmt: skip
@pytest.mark.parametrize("ci", ["true", ""])
def test_a_missing_tool_names_its_package_and_fails_in_ci(
    name, package, ci, nothing_installed, monkeypatch
):
    monkeypatch.setenv("CI", ci)
    expected = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(expected) as caught:
        require(name)
    assert f"apt-get install {package}" in str(caught.value)


def test_a_missing_cjk_font_names_fonts_noto_cjk(monkeypatch, tmp_path):
    empty = tmp_path / "fc-list"
    empty.write_text("#!/bin/sh\nexit 0\n")
    empty.chmod(0o755)
    tool = SYSTEM_TOOLS["fc-list"]
    stand_in = tool.__class__(str(empty), tool.package, tool.used_for)
    monkeypatch.setitem(system_tools.SYSTEM_TOOLS, "fc-list", stand_in)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="apt-get install fonts-noto-cjk"):
        system_tools.require_cjk_font()


def test_every_tool_is_installed_by_ci_and_listed_in_the_readme():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    for package in ("nodejs", "npm", "chromium", "poppler-utils", "fonts-noto-cjk"):
        assert f'missing="$missing {package}"' in ci, package
        assert f'still="$still {package}"' in ci, package
        assert f"`{package}`" in readme, package
        assert package in makefile.split("BROWSER_PACKAGES :=")[1].splitlines()[0], package


def test_no_test_skips_for_a_missing_tool_except_through_system_tools():
    """A bare ``skipif(shutil.which(...) is None)`` would skip in CI too: every such check goes
    through :func:`system_tools.require`."""
    offenders = []
    for path in (REPO / "tests").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for needle in ('which("node") is None', 'which("pdftotext")', 'which("fc-list") is None'):
            if needle in text and path.name not in {"system_tools.py", "test_system_tools.py"}:
                offenders.append(f"{path.relative_to(REPO)}: {needle}")
    assert not offenders, offenders


def test_every_browser_test_file_is_collected_by_make_test():
    """The browser phase of ``make test`` collects only ``BROWSER_TEST_FILES`` (collecting every
    test file costs each worker 6 CPU-s more): a browser, JupyterLab or in-browser-model test in
    any other file would never run, without a word. Each file that marks one is listed."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    line = next(s for s in makefile.splitlines() if s.startswith("BROWSER_TEST_FILES :="))
    listed = [REPO / p for p in line.split(":=", 1)[1].split()]
    assert listed and all(p.exists() for p in listed), listed
    marks = ("mark.browser", "mark.jupyterlab")  # the first finds mark.browser_model too
    marking = [
        p for p in (REPO / "tests").rglob("*.py") if any(m in p.read_text("utf-8") for m in marks)
    ]
    outside = sorted(
        str(p.relative_to(REPO)) for p in marking
        if not any(p == q or q in p.parents for q in listed) and p.name != Path(__file__).name
    )  # fmt: skip
    assert len(marking) >= 5, marking
    assert not outside, f"browser tests that `make test` does not collect: {outside}"


def test_every_handout_test_runs_in_ci_after_make_test():
    """The handouts' end-to-end tests (learner copies Run All, the PDFs read back) are left out of
    ``make test`` by their mark and run by ``make test-handouts``, which collects only
    ``HANDOUT_TEST_FILES``: each file that marks one is listed, and CI runs the target."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    line = next(s for s in makefile.splitlines() if s.startswith("HANDOUT_TEST_FILES :="))
    listed = [REPO / p for p in line.split(":=", 1)[1].split()]
    assert listed and all(p.is_file() for p in listed), listed
    marking = sorted(
        p for p in (REPO / "tests").rglob("*.py")
        if "mark.handouts" in p.read_text("utf-8") and p.name != Path(__file__).name
    )  # fmt: skip
    assert marking == sorted(listed), (marking, listed)
    # make test leaves them out in both of its pytest runs, and CI runs them after it
    assert makefile.count("and not handouts") >= 2
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.index("make test-handouts") > ci.index("make test\n")
