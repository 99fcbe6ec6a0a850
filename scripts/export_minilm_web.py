"""Export all-MiniLM-L6-v2 for the reader's browser into a built site (or any folder).

The site's Sphinx extension runs this at the end of every HTML build (``course_site``,
``build-finished``), so ``make book`` needs nothing more; run it by hand to refresh a site::

    python scripts/export_minilm_web.py --site _build/html            # _static/minilm/ of the site
    python scripts/export_minilm_web.py --out /tmp/minilm --dtype float32

The files are generated from the package's ``model.safetensors`` and are never committed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "_ext")]

from course_site import write_browser_model  # noqa: E402
from course_utils.pretrained.minilm_web import DTYPES, download_sizes, export_weights  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--site", type=Path, help="a built site: writes <site>/_static/minilm/")
    where.add_argument("--out", type=Path, help="a folder for the weight files only")
    parser.add_argument("--dtype", choices=DTYPES, default="float16", help="with --out only")
    args = parser.parse_args(argv)
    if args.site is not None:
        print(f"wrote {write_browser_model(args.site)}")
        dtype = "float16"
    else:
        export_weights(args.out, args.dtype)
        print(f"wrote {args.out}")
        dtype = args.dtype
    print(json.dumps(download_sizes(dtype), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
