"""Attention at work: does an attention-pooling classifier focus on topic words, and is its
attention an explanation? (主题词聚焦)

Submodules, one job each:

* :mod:`~course_utils.topic_focus.dataset`: topic vocabulary, template and hand-written sentences
  (English and Chinese, shipped as ``topic_sentences.json``), ground-truth masks for any tokens;
* :mod:`~course_utils.topic_focus.classifier`: the attention-pooling classifier and its seeded
  training loop;
* :mod:`~course_utils.topic_focus.attribution`: attention rollout, gradient × input, ablation,
  top-k precision and bootstrap intervals;
* :mod:`~course_utils.topic_focus.measures`: the same questions asked of all-MiniLM-L6-v2.
"""

# The package exports what each submodule lists as public: every name is listed once, in its module.
from . import attribution, classifier, dataset
from .attribution import *  # noqa: F403
from .classifier import *  # noqa: F403
from .dataset import *  # noqa: F403

__all__ = [*attribution.__all__, *classifier.__all__, *dataset.__all__]
