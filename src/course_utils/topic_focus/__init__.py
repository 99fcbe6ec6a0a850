"""Attention at work: does an attention-pooling classifier focus on topic words, and is its
attention an explanation? (主题词聚焦)

Submodules, one job each:

* :mod:`~course_utils.topic_focus.dataset`: topic vocabulary, template and hand-written sentences
  (English and Chinese, shipped as ``topic_sentences.json``), ground-truth masks for any tokens;
* :mod:`~course_utils.topic_focus.classifier`: the attention-pooling classifier and its seeded
  training loop;
* :mod:`~course_utils.topic_focus.attribution`: attention rollout, gradient × input, ablation,
  top-k precision and bootstrap intervals;
* :mod:`~course_utils.topic_focus.minilm`: the same questions asked of all-MiniLM-L6-v2.
"""

from .attribution import (
    AblationResult,
    ablate,
    ablation_study,
    attention_rollout,
    bootstrap_ci,
    classifier_gradient_x_input,
    gradient_x_input,
    top_k_precision,
)
from .classifier import (
    AttentionPoolingClassifier,
    Split,
    TrainResult,
    Vocabulary,
    make_batch,
    make_split,
    train_classifier,
)
from .dataset import (
    TOPICS,
    TopicSentence,
    real_sentences,
    template_sentences,
    topic_mask,
    word_tokens,
)

__all__ = [
    "TOPICS",
    "AblationResult",
    "AttentionPoolingClassifier",
    "Split",
    "TopicSentence",
    "TrainResult",
    "Vocabulary",
    "ablate",
    "ablation_study",
    "attention_rollout",
    "bootstrap_ci",
    "classifier_gradient_x_input",
    "gradient_x_input",
    "make_batch",
    "make_split",
    "real_sentences",
    "template_sentences",
    "top_k_precision",
    "topic_mask",
    "train_classifier",
    "word_tokens",
]
