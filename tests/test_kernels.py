"""Kernels started side by side (nbval's two workers, the learner-copy tests) use Unix sockets, so
they cannot be handed the same TCP port (:mod:`course_kit.kernels`)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from jupyter_client.manager import AsyncKernelManager, KernelManager

from course_kit import kernels


def test_nbval_starts_its_kernels_over_unix_sockets() -> None:
    import nbval.kernel

    assert kernels.unix_sockets_fit()  # Linux, short /tmp: the case this suite runs in
    assert nbval.kernel.KernelManager is kernels.UnixSocketKernelManager


def test_kernels_running_at_once_each_get_their_own_sockets() -> None:
    """Four of nbval's kernels running at once: each answers, each on its own sockets (files in
    one private folder), and the files are gone once it stops. (Threads would start them at the
    same moment, but leave event loops unclosed; the sockets' names do not depend on timing.)"""
    import nbval.kernel

    with open(os.devnull, "w") as quiet:  # as nbval starts them (it leaves this file open)
        running = [
            nbval.kernel.start_new_kernel(kernel_name="python3", stderr=quiet) for _ in range(4)
        ]
    try:
        managers = [km for km, _ in running]
        assert {m.transport for m in managers} == {"ipc"}
        folders = {Path(m.ip).parent for m in managers}
        assert len(folders) == 1 and len({m.ip for m in managers}) == 4
        for _, client in running:
            reply = client.execute_interactive("x = 6 * 7", timeout=30)
            assert reply["content"]["status"] == "ok"
        (folder,) = folders
        assert len(list(folder.iterdir())) == 4 * 5  # shell, iopub, stdin, control, heartbeat
    finally:
        for manager, client in running:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    assert not [
        p for p in folder.iterdir() if any(p.name.startswith(Path(m.ip).name) for m in managers)
    ]


def test_a_long_temporary_folder_falls_back_to_tcp(monkeypatch: pytest.MonkeyPatch) -> None:
    """A socket path longer than the system allows would fail to bind: then TCP, as before."""
    monkeypatch.setattr(tempfile, "gettempdir", lambda: "/" + "d" * 90)
    assert not kernels.unix_sockets_fit()
    assert kernels.socket_kernel_manager_class() is KernelManager
    assert kernels.socket_kernel_manager_class(asynchronous=True) is AsyncKernelManager


def test_nbval_leaves_no_file_for_the_garbage_collector_to_close() -> None:
    """nbval opens ``/dev/null`` for each kernel's stderr and never closes it; when the garbage
    collector closed it during a later test, its ResourceWarning failed that test (a CI run).
    With the conftest's patch, a kernel started and stopped the nbval way leaves nothing open."""
    import gc
    import warnings

    import nbval.kernel

    kernels.use_unix_sockets_in_nbval()  # what the root conftest does (a second call is harmless)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = nbval.kernel.RunningKernel("python3")
        try:
            assert kernel.kc.execute_interactive("1 + 1", timeout=30)["content"]["status"] == "ok"
        finally:
            kernel.stop()
        del kernel
        gc.collect()
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not [m for m in unclosed if os.devnull in m], unclosed
