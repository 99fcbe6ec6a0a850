"""Numbers that chapter 13's prose states (nbval compares the outputs, not the Markdown) are the
package's numbers: if the package changes, this test says which sentence of the chapter to fix."""

from __future__ import annotations

import json

import numpy as np
import pytest

from course_utils.topic_focus import (
    bootstrap_ci,
    make_split,
    real_sentences,
    top_k_precision,
    topic_mask,
    train_classifier,
    word_tokens,
)
from course_utils.topic_focus.minilm import minilm_measures

from .notebook_runner import CHAPTERS

NOTEBOOK = CHAPTERS / "13_topic_words.ipynb"


@pytest.fixture(scope="module")
def prose() -> str:
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def test_topic_share_of_seed_0(prose):
    result = train_classifier(
        make_split(n_train=400, n_test=200, seed=0), seed=0, steps=40, eval_every=2
    )
    real = list(real_sentences())
    _, weights = result.predict(real)
    masks = [topic_mask(word_tokens(s.text)[1], s.topic_spans) for s in real]
    share = np.array([w[m].sum() for w, m in zip(weights, masks, strict=True)])
    assert f"{share.mean():.2f}" == "0.96" and "0.84 to 0.96" in prose
    assert f"{np.mean([m.mean() for m in masks]):.3f}" == "0.245" and "(0.245)" in prose


def test_minilm_precisions_on_english(prose):
    english = [s for s in real_sentences() if s.lang == "en"]
    measures = [minilm_measures(s) for s in english]
    stated = {
        "cls_raw": "0.74 [0.61, 0.86]",
        "cls_rollout": "0.07 [0.02, 0.14]",
        "saliency": "0.82 [0.71, 0.92]",
    }
    for name, text in stated.items():
        values = [
            top_k_precision(m.scores[name], m.is_topic, candidates=~m.is_special) for m in measures
        ]
        mean, low, high = bootstrap_ci(values)
        assert f"{mean:.2f} [{low:.2f}, {high:.2f}]" == text, name
        assert text in prose, name
