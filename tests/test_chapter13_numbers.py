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


def test_uniform_attention_baseline(prose):
    """Wiegreffe and Pinter's first test, as the chapter states it: the same model trained with
    uniform weights, five seeds, against the learned attention of the chapter's runs."""
    split = make_split(n_train=400, n_test=200, seed=0)
    real = list(real_sentences())
    labels = np.array([s.label for s in real])
    english = np.array([s.lang == "en" for s in real])
    runs = {
        kind: [
            train_classifier(split, seed=seed, steps=40, eval_every=2, attention=kind)
            for seed in range(5)
        ]
        for kind in ("learned", "uniform")
    }
    acc = {}
    for kind, results in runs.items():
        rows = []
        for r in results:
            correct = r.predict(real)[0].argmax(axis=1) == labels
            rows.append((r.test_accuracy, correct[english].mean(), correct[~english].mean()))
        acc[kind] = np.array(rows)  # (5 seeds, 3 test sets)
    (lm, ls), (um, us) = ((a[:, 0].mean(), a[:, 0].std()) for a in (acc["learned"], acc["uniform"]))
    stated = (
        f"reaches {um:.3f} ± {us:.3f} on new template sentences ({acc['uniform'][:, 0].min():.2f} "
        f"to {acc['uniform'][:, 0].max():.2f} over the seeds), against {lm:.3f} ± {ls:.3f}"
    )
    assert stated == (
        "reaches 0.936 ± 0.010 on new template sentences (0.92 to 0.95 over the seeds), "
        "against 0.977 ± 0.007"
    )
    flat = " ".join(prose.split())
    assert stated in flat
    en = f"{acc['uniform'][:, 1].mean():.3f} against {acc['learned'][:, 1].mean():.3f} in English"
    zh = f"{acc['uniform'][:, 2].mean():.3f} against {acc['learned'][:, 2].mean():.3f} in Chinese"
    assert (en, zh) == ("0.919 against 0.981 in English", "0.988 against 1.000 in Chinese")
    assert en in flat and zh in flat
    assert (
        f"falls to {acc['uniform'][:, 1].min():.2f}" == "falls to 0.84" and "falls to 0.84" in flat
    )
    assert f"{um:.3f} vs {lm:.3f}" == "0.936 vs 0.977" and "0.936 vs 0.977" in flat  # table
    assert f"about {round(100 * (lm - um))} points" == "about 4 points"
    assert "ends about 4 points higher" in flat

    def at(step: int, kind: str) -> str:
        i = runs[kind][0].steps.index(step)
        values = [r.test_accuracy_curve[i] for r in runs[kind]]
        return f"{min(values):.2f} to {max(values):.2f}"

    assert at(4, "uniform") == "0.47 to 0.56" and "(accuracy 0.47 to 0.56)" in flat
    step12 = f"{at(12, 'learned')} against {at(12, 'uniform')} at step 12"
    assert step12 == "0.89 to 0.93 against 0.74 to 0.79 at step 12" and step12 in flat
    for r in runs["uniform"]:  # the weights never moved: the topic share stays the token share
        assert len(set(r.topic_share_curve)) == 1
