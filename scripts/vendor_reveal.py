"""Refresh the vendored reveal.js of the classroom kit's slide decks (no CDN): `make vendor-reveal`.

Writes ``_ext/course_kit/static/course_kit_vendor/reveal/`` from the npm registry at the
pinned version (``npm pack``: downloads the tarball, runs no package scripts):

* ``dist/reveal.js`` (UMD), ``dist/reveal.css``, ``dist/theme/white.css`` and the theme's
  Source Sans Pro fonts (``dist/theme/fonts/source-sans-pro/``, SIL OFL 1.1, licence shipped);
* ``plugin/notes/notes.js`` (the speaker view: press ``s`` in a deck);
* ``LICENSE`` (MIT) and ``VERSIONS.json`` (version, source and sha256 of every file).

``//# sourceMappingURL=`` comments are removed (the maps are not shipped).

Usage: python scripts/vendor_reveal.py [--check]   (--check: verify hashes, download nothing)
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEST = ROOT / "_ext" / "course_kit" / "static" / "course_kit_vendor" / "reveal"
PIN = "5.2.1"
FILES = [
    "LICENSE",
    "dist/reveal.js",
    "dist/reveal.css",
    "dist/theme/white.css",
    "plugin/notes/notes.js",
]
FONT_DIR = "dist/theme/fonts/source-sans-pro"
SOURCE_MAP = re.compile(rb"^//# sourceMappingURL=.*$", re.MULTILINE)


def file_hashes() -> dict[str, str]:
    return {
        p.relative_to(DEST).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(DEST.rglob("*"))
        if p.is_file() and p.name != "VERSIONS.json"
    }


def vendor(workdir: Path) -> None:
    out = subprocess.run(
        ["npm", "pack", f"reveal.js@{PIN}", "--silent", "--pack-destination", str(workdir)],
        check=True,
        capture_output=True,
        text=True,
        cwd=workdir,
    )
    tgz = workdir / out.stdout.strip().splitlines()[-1]
    with tarfile.open(tgz) as tar:
        tar.extractall(workdir, filter="data")
    pkg = workdir / "package"
    if DEST.exists():
        shutil.rmtree(DEST)
    names = FILES + [
        f.relative_to(pkg).as_posix()
        for f in sorted((pkg / FONT_DIR).iterdir())
        if f.suffix in {".woff", ".css"} or f.name == "LICENSE"
    ]
    for name in names:
        data = (pkg / name).read_bytes()
        if name.endswith((".js", ".css")):
            data = SOURCE_MAP.sub(b"", data)
        target = DEST / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    # The theme's font CSS also lists .eot/.ttf sources; browsers take the first format they
    # support (woff), so only the woff files are shipped. Point the other formats at the woff too,
    # so that no URL in the CSS names a missing file.
    font_css = DEST / FONT_DIR / "source-sans-pro.css"
    text = font_css.read_text(encoding="utf-8")
    text = re.sub(
        r"""url\((['"]?)([^)'"]*?)\.(eot|ttf)(\?#iefix)?\1\)""", r"url(\1\2.woff\1)", text
    )
    font_css.write_text(text, encoding="utf-8")
    manifest = {
        "package": "reveal.js",
        "version": PIN,
        "source": f"npm pack reveal.js@{PIN}",
        "licence": "MIT (LICENSE); Source Sans Pro: SIL OFL 1.1 (dist/theme/fonts/*/LICENSE)",
        "files": file_hashes(),
    }
    (DEST / "VERSIONS.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="verify VERSIONS.json hashes only")
    args = parser.parse_args(argv)
    if args.check:
        manifest = json.loads((DEST / "VERSIONS.json").read_text(encoding="utf-8"))
        if manifest["files"] != file_hashes():
            print("vendored reveal.js differs from VERSIONS.json: run scripts/vendor_reveal.py")
            return 1
        print(f"ok: reveal.js {manifest['version']}, {len(manifest['files'])} files")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        vendor(Path(tmp))
    total = sum(p.stat().st_size for p in DEST.rglob("*") if p.is_file())
    print(f"vendored reveal.js {PIN}: {total / 1024:.0f} KiB into {DEST.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
