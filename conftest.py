"""Repository-wide pytest configuration, loaded for ``pytest tests`` and ``pytest --nbval chapters``
alike (tests/conftest.py is not loaded when pytest is given only notebooks)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
    # One torch thread per xdist worker (make test-python runs 2 workers on 2 cores, beside the book
    # build): more only fight over the cores, and torch's OpenMP threads spin while they wait
    # (measured on 2 cores with one other busy process: the torch-heavy tests took 22 % less CPU
    # time, 70 s instead of 84 s). Outputs do not depend on it: tests/test_cross_machine.py runs the
    # notebooks and the prose-number tests with 1, 2 and 4 threads. Notebook kernels that the tests
    # and nbval start inherit the variable (hence here, in the conftest every session loads; before,
    # nbval's kernels ran 2 threads each beside each other). A count set by the caller is kept.
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)


def pytest_configure(config: pytest.Config) -> None:
    """Kernels started by nbval (and JupyterLab in the browser tests) inherit this environment.

    Give them an empty IPython and Jupyter configuration, so that a learner's own startup files
    (``~/.ipython/profile_default/startup/``) or settings (``~/.jupyter``) cannot change what the
    notebooks print, and so that a read-only home directory does not matter.
    """
    clean = Path(tempfile.mkdtemp(prefix="course-utils-test-config-"))
    os.environ["IPYTHONDIR"] = str(clean / "ipython")
    os.environ["JUPYTER_CONFIG_DIR"] = str(clean / "jupyter")
    # nbval's kernels (two pytest-xdist workers start them side by side) over Unix sockets: TCP
    # kernels started at once can be handed the same port and die before they answer.
    from course_kit.kernels import use_unix_sockets_in_nbval

    use_unix_sockets_in_nbval()
    if not hasattr(config, "workerinput"):  # the session's first process; xdist workers inherit
        # The chapters' experiments train once per session: nbval's run of a chapter and the
        # Run-All of its learner copy (and the tests that quote its numbers) share the result.
        # A fresh folder each session, so nothing is ever reused from an earlier run or code.
        from course_utils._shared_results import SHARED_RESULTS_ENV

        shared = Path(tempfile.mkdtemp(prefix="course-utils-shared-results-"))
        os.environ[SHARED_RESULTS_ENV] = str(shared)
        config.add_cleanup(lambda: shutil.rmtree(shared, ignore_errors=True))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (its hook is plain)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep each notebook's cells on one pytest-xdist worker, in order (they share one kernel), when
    nbval runs in the same session as the unit tests under ``--dist loadgroup`` (``make
    test-python``): every cell of a notebook joins the xdist group named after the notebook."""
    if not getattr(config.option, "loadgroup", False):  # what pytest-xdist's own hook reads
        return
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.xdist_group(f"notebook:{item.path.name}"))
