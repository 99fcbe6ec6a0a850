"""Moved to :mod:`course_utils.heads.experiment` (kept until chapter 4 imports it from there)."""

from ..heads.experiment import *  # noqa: F403
from ..heads.experiment import __all__  # noqa: F401
