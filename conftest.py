"""Repository-wide pytest configuration, loaded for ``pytest tests`` and ``pytest --nbval chapters``
alike (tests/conftest.py is not loaded when pytest is given only notebooks)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest


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
