"""Refresh the vendored JavaScript the website serves itself (no CDN): `make vendor`.

Writes ``_ext/course_site/static/course_vendor/`` from pinned sources:

* ``anywidget/index.js``: copied from the INSTALLED anywidget wheel
  (``anywidget/nbextension/index.js``, MIT), so the front-end always matches the Python package
  that wrote the widget state;
* ``mathjax/``: npm ``mathjax`` 3 (Apache-2.0): ``tex-mml-chtml.js``, the CHTML woff fonts, the TeX
  extensions it may autoload, ``ui/`` and ``a11y/`` (the speech-rule maps ``sre/`` are left out:
  3.9 MB, only loaded if a reader turns speech on in the MathJax menu).

Each folder gets the package's licence text; ``VERSIONS.json`` records versions, sources and sha256
of every file. The only change made to upstream files: ``//# sourceMappingURL=`` comments are
removed (the maps are not shipped, so DevTools would otherwise request missing files).

Needs ``npm`` (only ``npm pack``: downloads the tarball, runs no package scripts).
Usage: python scripts/vendor_static.py [--check]   (--check: verify hashes, download nothing)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib import metadata
from pathlib import Path

import anywidget

ROOT = Path(__file__).resolve().parents[1]
DEST = ROOT / "_ext" / "course_site" / "static" / "course_vendor"

#: Tests only (never served by the site): axe-core runs in the browser tests and the site audit.
TEST_DEST = ROOT / "tests" / "browser" / "vendor"

PINS = {
    "axe-core": "4.14.1",
    "mathjax": "3.2.2",
}

SOURCE_MAP = re.compile(rb"^//# sourceMappingURL=.*$", re.MULTILINE)


def npm_pack(spec: str, workdir: Path) -> Path:
    """Download ``spec`` with ``npm pack`` (runs no install scripts), unpack it, return package/."""
    out = subprocess.run(
        ["npm", "pack", spec, "--silent", "--pack-destination", str(workdir)],
        check=True,
        capture_output=True,
        text=True,
        cwd=workdir,
    )
    tgz = workdir / out.stdout.strip().splitlines()[-1]
    target = workdir / tgz.stem
    with tarfile.open(tgz) as tar:
        tar.extractall(target, filter="data")
    return target / "package"


def copy(src: Path, dst: Path, *, strip_maps: bool = False) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    data = src.read_bytes()
    if strip_maps and src.suffix == ".js":
        data = SOURCE_MAP.sub(b"", data)
    dst.write_bytes(data)


def vendor(workdir: Path) -> dict[str, object]:
    if DEST.exists():
        shutil.rmtree(DEST)
    versions: dict[str, object] = {}

    # anywidget front-end from the installed wheel
    wheel_js = Path(anywidget.__file__).parent / "nbextension" / "index.js"
    copy(wheel_js, DEST / "anywidget" / "index.js", strip_maps=True)
    dist_info = metadata.distribution("anywidget")
    licence = next(
        (f for f in dist_info.files or [] if f.name.startswith("LICENSE")),
        None,
    )
    if licence is None:
        raise SystemExit("anywidget's wheel has no LICENSE file; cannot vendor it without one")
    copy(Path(dist_info.locate_file(licence)), DEST / "anywidget" / "LICENSE")
    versions["anywidget"] = {
        "version": dist_info.version,
        "source": "installed wheel: anywidget/nbextension/index.js",
        "license": "MIT",
    }

    # MathJax 3
    pkg = npm_pack(f"mathjax@{PINS['mathjax']}", workdir)
    es5 = pkg / "es5"
    copy(es5 / "tex-mml-chtml.js", DEST / "mathjax" / "tex-mml-chtml.js", strip_maps=True)
    for sub in ["input/tex/extensions", "output/chtml/fonts/woff-v2", "ui", "a11y"]:
        for f in sorted((es5 / sub).rglob("*")):
            if f.is_file():
                copy(f, DEST / "mathjax" / f.relative_to(es5), strip_maps=True)
    copy(pkg / "LICENSE", DEST / "mathjax" / "LICENSE")
    versions["mathjax"] = {
        "version": PINS["mathjax"],
        "source": "npm (es5/)",
        "license": "Apache-2.0",
    }
    return versions


def vendor_tests(workdir: Path) -> dict[str, object]:
    """axe-core for the accessibility tests: ``tests/browser/vendor/axe-core/`` (MPL-2.0)."""
    dest = TEST_DEST / "axe-core"
    if dest.exists():
        shutil.rmtree(dest)
    pkg = npm_pack(f"axe-core@{PINS['axe-core']}", workdir)
    for name in ("axe.min.js", "LICENSE", "LICENSE-3RD-PARTY.txt"):
        copy(pkg / name, dest / name, strip_maps=True)
    version = {"version": PINS["axe-core"], "source": "npm", "license": "MPL-2.0"}
    hashes = {
        p.relative_to(dest).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(dest.rglob("*"))
        if p.is_file()
    }
    manifest = {"note": "Written by scripts/vendor_static.py; tests only, not served by the site."}
    manifest |= {"packages": {"axe-core": version}, "files": hashes}
    (TEST_DEST / "VERSIONS.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return version


def file_hashes() -> dict[str, str]:
    return {
        p.relative_to(DEST).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(DEST.rglob("*"))
        if p.is_file() and p.name != "VERSIONS.json"
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="verify VERSIONS.json hashes only")
    parser.add_argument(
        "--tests-only", action="store_true", help="refresh only the test-only axe-core"
    )
    args = parser.parse_args(argv)
    manifest_path = DEST / "VERSIONS.json"
    if args.check:
        manifest = json.loads(manifest_path.read_text())
        bad = [k for k, v in file_hashes().items() if manifest["files"].get(k) != v]
        missing = sorted(set(manifest["files"]) - set(file_hashes()))
        installed = metadata.version("anywidget")
        if manifest["packages"]["anywidget"]["version"] != installed:
            print(
                f"anywidget front-end is {manifest['packages']['anywidget']['version']}, "
                f"installed wheel is {installed}: run make vendor"
            )
            return 1
        if bad or missing:
            print(f"changed: {bad}\nmissing: {missing}")
            return 1
        print(f"ok: {len(manifest['files'])} vendored files match VERSIONS.json")
        return 0
    with tempfile.TemporaryDirectory(prefix="vendor-") as tmp:
        if args.tests_only:
            vendor_tests(Path(tmp))
            print(f"vendored axe-core {PINS['axe-core']} into {TEST_DEST.relative_to(ROOT)}")
            return 0
        versions = vendor(Path(tmp))
        vendor_tests(Path(tmp))
    manifest = {
        "note": "Written by scripts/vendor_static.py; do not edit. sourceMappingURL lines removed.",
        "packages": versions,
        "files": file_hashes(),
    }
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    total = sum(p.stat().st_size for p in DEST.rglob("*") if p.is_file())
    print(
        f"vendored {len(manifest['files'])} files, {total / 1e6:.1f} MB "
        f"into {DEST.relative_to(ROOT)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
