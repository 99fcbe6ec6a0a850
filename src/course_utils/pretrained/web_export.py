"""What the two browser exports share: byte planes under deflate, and an export made once and kept.

Trained weights in float16 (or float32) do not compress as they are: every number's low byte is
close to random. Their high byte (sign, exponent, top of the mantissa) repeats a lot. So the
exports store all first bytes of an array, then all second bytes, and so on (byte planes), and
deflate that (RFC 1950, what the browser's ``DecompressionStream("deflate")`` undoes). It is
lossless: the reader's browser gets back the same bits.

The compressor is libdeflate (the pinned ``deflate`` package), not Python's ``zlib``: ``zlib`` is
whatever library the machine's Python was built with, and zlib-ng (Fedora's, for one) writes
other bytes, 1.4 % larger here, so the sizes a chapter states would change with the machine
that built the site. libdeflate's output depends only on its version and level; at its top
level it is also 1.4 % smaller than zlib's best. The JavaScript side is
``joinPlanes`` in ``web/bert.mjs`` (MiniLM) and ``readStreams`` in ``web/llama.mjs`` (SmolLM2).

>>> x = np.array([1.0, -2.5, 65504.0], dtype="<f2")
>>> split_planes(x).hex(" ")        # the three low bytes, then the three high bytes
'00 00 ff 3c c1 7b'
>>> unpack(pack(x), "<f2").tolist()
[1.0, -2.5, 65504.0]
"""

from __future__ import annotations

import os
import shutil
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._file_lock import exclusive_lock

__all__ = [
    "DEFLATE_LEVEL",
    "cache_folder",
    "compress",
    "join_planes",
    "kept_export",
    "pack",
    "split_planes",
    "unpack",
]

#: libdeflate's level: its highest (zlib stops at 9). The exports are made once and kept.
DEFLATE_LEVEL = 12


def split_planes(values: ArrayLike) -> bytes:
    """The bytes of ``values`` (little-endian, row-major) as planes: byte 0 of every element,
    then byte 1 of every element, and so on."""
    a = np.asarray(values)
    a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
    size = a.dtype.itemsize
    return a.reshape(-1).view(np.uint8).reshape(-1, size).T.tobytes()  # (size, n) planes


def join_planes(raw: bytes, dtype: Any) -> NDArray[Any]:
    """Undo :func:`split_planes`: a 1-D array of ``dtype`` (read little-endian)."""
    dt = np.dtype(dtype).newbyteorder("<")
    if len(raw) % dt.itemsize:
        raise ValueError(
            f"raw holds {len(raw)} bytes, not a whole number of {dt.itemsize}-byte {dt.name} values"
        )
    planes = np.frombuffer(raw, np.uint8).reshape(dt.itemsize, -1)  # (size, n)
    return np.ascontiguousarray(planes.T).view(dt).reshape(-1)  # (n,)


def compress(data: bytes) -> bytes:
    """``data`` deflated (RFC 1950: zlib's header and checksum) by libdeflate at
    :data:`DEFLATE_LEVEL`: the same bytes on every machine. ``zlib.decompress`` reads it."""
    import deflate

    return bytes(deflate.zlib_compress(data, DEFLATE_LEVEL))


def pack(values: ArrayLike) -> bytes:
    """``values`` as deflated byte planes (what an export writes)."""
    return compress(split_planes(values))


def unpack(data: bytes, dtype: Any) -> NDArray[Any]:
    """Undo :func:`pack`: a 1-D array of ``dtype``."""
    return join_planes(zlib.decompress(data), dtype)


def cache_folder(beside: Path) -> Path:
    """Where an export is kept: the folder ``beside`` (a model package's folder) when it can be
    written to (one copy for every user of a shared environment, e.g. a JupyterHub image); else
    ``~/.cache/attention-course`` (``$XDG_CACHE_HOME`` if set)."""
    if os.access(beside, os.W_OK):
        return beside
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attention-course"


def kept_export(
    folder: Path, export: Callable[[Path], Any], *, done: str = "manifest.json"
) -> Path:
    """``folder``, made by ``export(folder)`` once and kept: a later call finds the file ``done``
    there (written last by the export) and returns at once.

    Several processes may ask at once: one exports (into a folder of its own, renamed when
    complete, so nobody reads half an export) while the others wait, then find it made.
    """
    folder = Path(folder)
    if (folder / done).is_file():
        return folder
    with exclusive_lock(folder.with_name(folder.name + ".lock")):
        if not (folder / done).is_file():  # another process may have made it while we waited
            partial = folder.with_name(f"{folder.name}.{os.getpid()}.partial")
            shutil.rmtree(partial, ignore_errors=True)
            try:
                export(partial)
            except BaseException:
                shutil.rmtree(partial, ignore_errors=True)  # no half-export left behind
                raise
            shutil.rmtree(folder, ignore_errors=True)  # a folder left half-written
            os.replace(partial, folder)
    return folder
