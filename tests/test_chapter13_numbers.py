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
from course_utils.topic_focus.measures import minilm_measures

from .notebook_runner import CHAPTERS

NOTEBOOK = CHAPTERS / "13_topic_words.ipynb"


@pytest.fixture(scope="module")
def prose() -> str:
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def test_topic_share_over_five_seeds(prose):
    split = make_split(n_train=400, n_test=200, seed=0)
    real = list(real_sentences())
    masks = [topic_mask(word_tokens(s.text)[1], s.topic_spans) for s in real]
    english = np.array([s.lang == "en" for s in real])
    means = []
    for seed in range(5):
        result = train_classifier(split, seed=seed, steps=40, eval_every=2)
        _, weights = result.predict(real)
        share = np.array([w[m].sum() for w, m in zip(weights, masks, strict=True)])
        means.append(share.mean())
        if seed == 0:
            by_language = "(0.94 for seed 0) than on English (0.97)"
            assert (
                f"({share[~english].mean():.2f} for seed 0) than on English "
                f"({share[english].mean():.2f})" == by_language
            )
            assert by_language in prose
    assert f"{min(means):.2f} to {max(means):.2f}" == "0.86 to 0.97" and "0.86 to 0.97" in prose
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
