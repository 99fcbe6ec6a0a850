"""One process at a time: a lock file that works on Linux, macOS and Windows.

Several processes may prepare the same file at once (a class opening chapter 7 together, two
pytest workers, a notebook beside the site's build). The one that gets the lock writes; the
others wait, then find the file made. ``fcntl`` does not exist on Windows, where a learner's
JupyterLab may run: there the lock is ``msvcrt``'s byte-range lock on the same file.

>>> import tempfile
>>> from pathlib import Path
>>> lock = Path(tempfile.mkdtemp()) / "export.lock"
>>> with exclusive_lock(lock):
...     lock.is_file()
True
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

try:
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - Windows
    _fcntl = None  # type: ignore[assignment]
try:
    import msvcrt as _msvcrt  # type: ignore[import-not-found, unused-ignore]
except ImportError:
    _msvcrt = None

__all__ = ["exclusive_lock"]


@contextmanager
def exclusive_lock(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (created, with its folder) inside the block.

    Blocks until no other process holds it. The lock ends with the block, or with the process.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        if _fcntl is not None:
            _fcntl.flock(handle.fileno(), _fcntl.LOCK_EX)  # released when the file closes
            yield
            return
        if _msvcrt is None:  # pragma: no cover - neither POSIX nor Windows
            raise OSError("no file locking on this platform: neither fcntl nor msvcrt exists")
        _lock_windows(_msvcrt, handle.fileno())
        try:
            yield
        finally:
            os.lseek(handle.fileno(), 0, os.SEEK_SET)
            _msvcrt.locking(handle.fileno(), _msvcrt.LK_UNLCK, 1)


def _lock_windows(msvcrt: ModuleType, fd: int) -> None:
    os.lseek(fd, 0, os.SEEK_SET)  # the lock covers the file's first byte, wherever it is
    while True:
        try:
            msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
            return
        except OSError:  # LK_LOCK gives up after 10 tries a second apart: keep waiting
            continue
