"""Live widgets of the course: anywidget classes, "Python computes, JavaScript draws".

Each widget precomputes its frames in Python with ``course_utils`` maths; its ES module only draws
and switches frames, so the widgets stay live on the static website and are backed by Python in
JupyterLab.
See ``_base.py`` for the shared base and the rules (text only via ``textContent``).
"""

from ._base import CourseWidget
from .block_tracer import BlockTracer
from .cross_attention_view import CrossAttentionView
from .four_steps import FourSteps
from .generation_stepper import GenerationStepper
from .head_explorer import HeadExplorer
from .head_grouping import HeadGrouping
from .kv_cache_calculator import KVCacheCalculator
from .kv_cache_compare import KVCacheCompare
from .logit_lens_view import LogitLensView
from .next_token_filters import NextTokenFilters
from .query_key_plane import QueryKeyPlane
from .rope_dial import RopeDial
from .scaling_explorer import ScalingExplorer
from .sentence_attention import SentenceAttention
from .smollm2_writer import SmolLM2Writer
from .sparse_patterns import SparsePatterns
from .spec_sheet import SpecSheet
from .temperature_mix import TemperatureMix
from .tiling_explorer import TilingExplorer
from .topic_word_focus import TopicWordFocus

__all__ = [
    "BlockTracer",
    "CourseWidget",
    "CrossAttentionView",
    "FourSteps",
    "GenerationStepper",
    "HeadExplorer",
    "HeadGrouping",
    "KVCacheCalculator",
    "KVCacheCompare",
    "LogitLensView",
    "NextTokenFilters",
    "QueryKeyPlane",
    "RopeDial",
    "ScalingExplorer",
    "SentenceAttention",
    "SmolLM2Writer",
    "SparsePatterns",
    "SpecSheet",
    "TemperatureMix",
    "TilingExplorer",
    "TopicWordFocus",
]
