"""The package behaves the same on any machine a learner might have (issue 8, section 3).

Each test runs a short probe in a fresh Python process whose environment imitates one kind of
machine, so that nothing leaks into (or from) this test process:

- a system font with the same family name as the package's CJK font ("Noto Sans CJK SC"), as
  Debian's ``fonts-noto-cjk`` installs on many Linux desktops. The directory is made visible only to
  the probe, through its own fontconfig file and a fresh matplotlib cache. Two variants: a renamed
  copy of the package's own font file (always available), and Debian's real
  ``NotoSansCJK-Regular.ttc`` when it can be found (system-wide, or unpacked somewhere named by
  ``COURSE_TEST_CJK_FONT_DIR``, e.g. ``apt-get download fonts-noto-cjk && dpkg-deb -x ...``);
- a read-only home directory, the C locale, an unusual timezone, and a hostile ``matplotlibrc``.

The probe draws the chapter-1 heatmap of 小明在银行边的长椅上看书 and reports, for every Chinese
character, the font file matplotlib draws it with; that must be the package's file everywhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from course_utils.fonts import cjk_font_path

from .system_tools import require

REPO = Path(__file__).resolve().parents[1]

PROBE = textwrap.dedent(
    """
    import json, sys, warnings
    warnings.simplefilter("error")  # a missing glyph or a config problem fails the probe
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import font_manager as fm
    from matplotlib.ft2font import FT2Font
    import os
    if os.environ.get("COURSE_PROBE_HIDE_SYSTEM_CJK"):
        # matplotlib scans /usr/share/fonts itself, past fontconfig, so a fontconfig file cannot
        # hide an installed CJK font from it: drop those fonts from its list instead, which is
        # exactly what matplotlib sees on a machine without one (nothing was looked up yet).
        fm.fontManager.ttflist = [f for f in fm.fontManager.ttflist if "CJK" not in f.name]
        getattr(fm.FontManager._findfont_cached, "cache_clear", lambda: None)()
    import course_utils.plotting as plotting
    from course_utils.data import bank_example
    from course_utils.fonts import cjk_font_path, contains_cjk
    from course_utils.exercises import ch01

    package_font = str(cjk_font_path())
    names = lambda: {f.name for f in fm.fontManager.ttflist}
    registered = lambda: any(f.fname == package_font for f in fm.fontManager.ttflist)
    before = registered()
    system_same_name = sorted(
        f.fname for f in fm.fontManager.ttflist if f.name == "Noto Sans CJK SC"
    )
    ex = bank_example()
    _, w = ex.attention()
    ax = plotting.plot_attention(w, ex.tokens, title="银行 (bank)")
    used = {}
    for label in [*ax.get_xticklabels(), ax.title]:
        paths = fm.fontManager._find_fonts_by_props(label.get_fontproperties())
        for ch in label.get_text():
            if contains_cjk(ch):
                used[ch] = next(
                    str(p) for p in paths if FT2Font(str(p)).get_char_index(ord(ch)) != 0
                )
    import io
    for fmt in ("png", "svg", "pdf"):
        ax.figure.savefig(io.BytesIO(), format=fmt)
    feedback = str(ch01.check_dot_product(lambda q, k: sum(a * b for a, b in zip(q, k))))
    print(json.dumps({
        "registered_before_first_use": before,
        "registered_after": registered(),
        "system_same_name": system_same_name,
        "fonts_used": sorted(set(used.values())),
        "package_font": package_font,
        "cmap": ax.images[0].get_cmap().name,
        "feedback": feedback,
    }))
    """
)


def _run_probe(env_changes: dict[str, str], tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPL", "LC_"))}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    env.setdefault("MPLCONFIGDIR", str(tmp_path / "mplconfig"))  # a fresh, private font cache
    env.update(env_changes)
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _fontconfig_with(font_dir: Path, tmp_path: Path) -> Path:
    """A fontconfig file: the machine's usual fonts plus ``font_dir``, with a private cache."""
    conf = tmp_path / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n'
        '  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n'
        f"  <dir>{font_dir}</dir>\n  <cachedir>{tmp_path / 'fc-cache'}</cachedir>\n"
        "</fontconfig>\n",
        encoding="utf-8",
    )
    return conf


def _debian_noto_cjk_dir() -> Path | None:
    candidates = [
        os.environ.get("COURSE_TEST_CJK_FONT_DIR", ""),
        "/usr/share/fonts/opentype/noto",
        "/tmp/noto-cjk-sys/usr/share/fonts/opentype/noto",
    ]
    for candidate in filter(None, candidates):
        hits = sorted(Path(candidate).rglob("NotoSansCJK-Regular.ttc"))
        if hits:
            return hits[0].parent
    return None


def _assert_package_font_everywhere(report: dict) -> None:
    assert not report["registered_before_first_use"], "importing registered a font"
    assert report["registered_after"], "first use did not register the package's font"
    assert report["fonts_used"] == [report["package_font"]], report
    assert report["feedback"].startswith("✓ dot product: correct"), report["feedback"]


@pytest.mark.parametrize("variant", ["renamed-copy", "debian-fonts-noto-cjk"])
def test_package_cjk_font_wins_over_a_system_font_of_the_same_name(variant, tmp_path):
    require("fc-list")
    if variant == "renamed-copy":
        font_dir = tmp_path / "system-fonts"
        font_dir.mkdir()
        shutil.copy(cjk_font_path(), font_dir / "SystemNotoSansCJKsc-Regular.otf")
    else:
        font_dir = _debian_noto_cjk_dir()
        if font_dir is None:
            pytest.skip(
                "Debian's NotoSansCJK-Regular.ttc not found (install fonts-noto-cjk, or unpack it "
                "and set COURSE_TEST_CJK_FONT_DIR); the renamed-copy variant covers the same case"
            )
    report = _run_probe({"FONTCONFIG_FILE": str(_fontconfig_with(font_dir, tmp_path))}, tmp_path)
    # The probe really saw a competing font of the same name: otherwise this test proves nothing.
    assert report["system_same_name"], "the system font was not visible to the probe"
    assert report["package_font"] not in report["system_same_name"]
    _assert_package_font_everywhere(report)


def test_package_cjk_font_without_any_system_cjk_font(tmp_path):
    empty = tmp_path / "no-fonts"
    empty.mkdir()
    conf = tmp_path / "fonts.conf"
    conf.write_text(
        f'<?xml version="1.0"?>\n<fontconfig>\n  <dir>{empty}</dir>\n'
        f"  <cachedir>{tmp_path / 'fc-cache'}</cachedir>\n</fontconfig>\n",
        encoding="utf-8",
    )
    report = _run_probe(
        {"FONTCONFIG_FILE": str(conf), "COURSE_PROBE_HIDE_SYSTEM_CJK": "1"}, tmp_path
    )
    assert report["system_same_name"] == []
    _assert_package_font_everywhere(report)


def test_read_only_home_c_locale_odd_timezone_and_hostile_matplotlibrc(tmp_path):
    """No writable home, no UTF-8 locale, TZ far from UTC, and a user matplotlibrc that changes the
    font, colour map and style: the figure still uses viridis and the package's CJK font, and the
    checker's feedback still prints ✓ and Chinese."""
    home = tmp_path / "home"
    (home / ".config" / "matplotlib").mkdir(parents=True)
    (home / ".config" / "matplotlib" / "matplotlibrc").write_text(
        "font.family: serif\nimage.cmap: jet\naxes.prop_cycle: cycler('color', ['r', 'g'])\n"
        "figure.dpi: 33\nsavefig.format: svg\naxes.unicode_minus: False\n",
        encoding="utf-8",
    )
    home.chmod(0o555)
    (home / ".config").chmod(0o555)
    try:
        report = _run_probe(
            {
                "HOME": str(home),
                "XDG_CONFIG_HOME": str(home / ".config"),
                "XDG_CACHE_HOME": str(home / ".cache"),
                "MPLCONFIGDIR": str(home / ".config" / "matplotlib"),  # read-only, with the rc
                "LC_ALL": "C",
                "LANG": "C",
                "TZ": "Pacific/Kiritimati",
            },
            tmp_path,
        )
    finally:
        (home / ".config").chmod(0o755)
        home.chmod(0o755)
    assert report["cmap"] == "viridis"
    _assert_package_font_everywhere(report)


def test_a_users_ipython_startup_file_does_not_change_notebook_outputs(tmp_path):
    """nbval's kernels get an empty IPython/Jupyter configuration (the repository's conftest.py), so
    a learner's ``~/.ipython`` startup file (here one that changes numpy's print options, a common
    habit) cannot change what the notebooks print and fail the tests."""
    home = tmp_path / "home"
    startup = home / ".ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-numpy.py").write_text(
        "import numpy\nnumpy.set_printoptions(precision=1)\n", encoding="utf-8"
    )
    (home / ".jupyter").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("IPYTHONDIR", "JUPYTER_CONFIG_DIR")}
    env.update(HOME=str(home), PYTHONPATH=str(REPO / "src"))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--nbval",
            str(REPO / "appendix" / "derivatives.ipynb"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:]


@pytest.mark.parametrize(
    "path",
    ["Makefile", "conftest.py", "scripts/execute_notebooks.py", ".ci/run", "tests/conftest.py"],
)
def test_no_file_pins_torchs_cpu_kernels(path):
    """The committed outputs hold on any processor and kernel set (the seeded experiments train in
    float64: ``course_utils._determinism.deterministic``), so nothing pins torch's kernels: the
    tests and ``make execute`` run in the environment a learner has.
    ``tests/test_cross_machine.py`` runs nbval under each kernel set and thread count."""
    text = (REPO / path).read_text(encoding="utf-8")
    assert "ATEN_CPU_CAPABILITY" not in text, f"{path} pins torch's CPU kernels"


def test_xdist_group_keeps_a_group_on_one_worker(tmp_path):
    """`make test` relies on ``--dist loadgroup`` to run an expensive module on one worker (the
    SmolLM2 reference, JupyterLab's server, the PDFs read back). pytest 9.2 stores node ids in a
    way pytest-xdist 3.8 cannot tag, and every group was silently split across both workers (each
    loaded its own 25-60 s fixtures): requirements.txt pins pytest 9.1.1 for that reason."""
    (tmp_path / "test_grouped.py").write_text(
        textwrap.dedent(
            """
            import os
            import pathlib
            import pytest

            pytestmark = pytest.mark.xdist_group("together")

            @pytest.mark.parametrize("i", range(6))
            def test_here(i):
                with open(pathlib.Path(__file__).with_name("workers.txt"), "a") as out:
                    out.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
            """
        )
    )
    # Only xdist is loaded (no other plugin autoloads): starting three pytest processes with every
    # installed plugin (nbval, Jupyter, hypothesis...) took 16-23 s, this takes a few.
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "xdist", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "-o", "addopts=", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:]
    workers = set((tmp_path / "workers.txt").read_text().split())
    assert len(workers) == 1, f"one group ran on {sorted(workers)}"
