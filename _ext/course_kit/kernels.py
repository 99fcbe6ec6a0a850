"""Kernels that talk to their client over Unix sockets, so that kernels started side by side cannot
take each other's ports.

jupyter_client picks a TCP kernel's five ports by binding port 0 and closing the socket; the kernel
binds them a moment later. When two processes start kernels at once (nbval under pytest-xdist,
the learner-copy tests, a CI machine running several suites), a port can be handed out twice in
that moment. The kernel then fails to bind, exits, and the test sees "Kernel died before replying
to kernel_info" (jupyter/nbconvert#1066, treebeardtech/nbmake#129). Unix sockets have no shared
port space: each kernel's five sockets are files with a fresh name in a private directory.

>>> manager = socket_kernel_manager_class()(kernel_name="python3")
>>> manager.transport if unix_sockets_fit() else "ipc"
'ipc'
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import uuid
from functools import cache
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager, KernelManager
from traitlets import CaselessStrEnum, HasTraits, default

#: AF_UNIX paths are at most 107 bytes on Linux and 103 on macOS; a kernel's sockets are named
#: ``<directory>/<12 hex digits>-<n>``.
_MAX_SOCKET_PATH = 100


@cache
def _socket_directory() -> Path:
    """One short private directory per process (``mkdtemp`` is mode 0700), removed at exit."""
    directory = Path(tempfile.mkdtemp(prefix="cu-kernels-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


def unix_sockets_fit() -> bool:
    """Unix sockets exist here (not on Windows) and the temporary folder's path is short enough."""
    if os.name != "posix":
        return False
    return len(str(Path(tempfile.gettempdir()) / "cu-kernels-xxxxxxxx" / ("0" * 12))) + 3 <= (
        _MAX_SOCKET_PATH
    )


class _OverUnixSockets(HasTraits):
    """The two traits that make a kernel manager use Unix sockets (mixed into both managers)."""

    transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

    @default("ip")
    def _fresh_socket_name(self) -> str:
        # jupyter_client's own default is "kernel-ipc" in the working directory: shared by every
        # kernel started there, which is the race this module exists to avoid.
        return str(_socket_directory() / uuid.uuid4().hex[:12])


class UnixSocketKernelManager(_OverUnixSockets, KernelManager):
    """A :class:`jupyter_client.manager.KernelManager` over Unix sockets (nbval's kind)."""


class AsyncUnixSocketKernelManager(_OverUnixSockets, AsyncKernelManager):
    """An :class:`~jupyter_client.manager.AsyncKernelManager` over Unix sockets (nbclient's)."""


def socket_kernel_manager_class(asynchronous: bool = False) -> type[KernelManager]:
    """The manager class to start kernels with: over Unix sockets where they fit, else TCP."""
    if not unix_sockets_fit():
        return AsyncKernelManager if asynchronous else KernelManager
    return AsyncUnixSocketKernelManager if asynchronous else UnixSocketKernelManager


def use_unix_sockets_in_nbval() -> None:
    """Make nbval start its kernels with :func:`socket_kernel_manager_class` (it names
    ``KernelManager`` from its own module when it starts one)."""
    import nbval.kernel

    nbval.kernel.KernelManager = socket_kernel_manager_class()  # type: ignore[misc]
    if getattr(nbval.kernel.start_new_kernel, "_closes_its_stderr", False):
        return
    start_new_kernel = nbval.kernel.start_new_kernel

    def start_with_stderr_discarded(*args: Any, **kwargs: Any) -> Any:
        # nbval passes ``stderr=open(os.devnull, "w")`` and never closes it; the kernel manager
        # keeps it in its launch arguments, so the file is closed by the garbage collector at
        # whatever test runs then, where the ResourceWarning is an error (this failed a CI run).
        # Close it here and let the kernel write to DEVNULL instead: the same, with no file.
        stderr = kwargs.get("stderr")
        if stderr is not None and hasattr(stderr, "close"):
            stderr.close()
            kwargs["stderr"] = subprocess.DEVNULL
        return start_new_kernel(*args, **kwargs)

    start_with_stderr_discarded._closes_its_stderr = True  # type: ignore[attr-defined]
    nbval.kernel.start_new_kernel = start_with_stderr_discarded
