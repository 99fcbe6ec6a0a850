"""Moved to :mod:`course_utils.heads.patterns` (kept until chapter 4 imports it from there)."""

from .heads.patterns import *  # noqa: F403
from .heads.patterns import __all__  # noqa: F401
