"""Chapter 13's numbers are the package's.

The numbers the chapter's prose quotes are glued from its executed outputs (``tests/test_glue.py``;
nbval re-computes them). Here the same quantities are computed from ``course_utils.topic_focus``
alone and compared with what the chapter glued: if the chapter's code stops using the package (or
rounds differently), this test says which value moved. What the text claims without a number
(uniform runs keep their weights) is checked here too.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from course_kit.myst import glued_values
from course_utils.topic_focus import (
    ablation_study,
    bootstrap_ci,
    make_split,
    real_sentences,
    top_k_precision,
    topic_mask,
    train_classifier,
    word_tokens,
)
from course_utils.topic_focus.measures import MEASURES, minilm_measures

from .notebook_runner import CHAPTERS

NOTEBOOK = CHAPTERS / "13_topic_words.ipynb"


@pytest.fixture(scope="module")
def glued() -> dict[str, float]:
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    return {name: float(value) for name, value in glued_values(nb).items()}


def _same(glued: dict[str, float], computed: dict[str, float], places: int) -> None:
    wrong = {
        name: (glued.get(name), round(float(value), places))
        for name, value in computed.items()
        if glued.get(name) != round(float(value), places)
    }
    assert not wrong, f"glued vs package (name: (glued, package)): {wrong}"


def test_topic_share_over_five_seeds(glued):
    split = make_split(n_train=400, n_test=200, seed=0)
    real = list(real_sentences())
    masks = [topic_mask(word_tokens(s.text)[1], s.topic_spans) for s in real]
    english = np.array([s.lang == "en" for s in real])
    means, by_language = [], {}
    for seed in range(5):
        result = train_classifier(split, seed=seed, steps=40, eval_every=2)
        _, weights = result.predict(real)
        share = np.array([w[m].sum() for w, m in zip(weights, masks, strict=True)])
        means.append(share.mean())
        if seed == 0:
            by_language = {"share_en": share[english].mean(), "share_zh": share[~english].mean()}
    _same(glued, {"share_min": min(means), "share_max": max(means), **by_language}, 2)
    _same(glued, {"token_share": np.mean([m.mean() for m in masks])}, 3)


def test_ablation_drops(glued):
    """The erasure test as the chapter runs it: three seeds, 48 hand-written sentences."""
    split = make_split(n_train=400, n_test=200, seed=0)
    real = list(real_sentences())
    results = [train_classifier(split, seed=seed, steps=40, eval_every=2) for seed in range(3)]
    computed, flips = {}, {}
    for k in (1, 2, 3):
        runs = [ablation_study(r, real, k, n_random=10, seed=0) for r in results]
        for method in ("attention", "gradient", "random"):
            drops = np.mean([getattr(a, f"drop_{method}") for a in runs], axis=0)
            computed[f"drop_{method}_{k}"] = bootstrap_ci(drops)[0]
            flips[f"flip_{method}_{k}"] = 100 * np.mean(
                [getattr(a, f"flip_{method}") for a in runs]
            )
    same = computed.pop("drop_gradient_1") - computed["drop_attention_1"]
    assert abs(same) < 5e-4  # "at k = 1 its numbers are the same" (the table's 3 decimals)
    _same(glued, computed, 2)
    _same(glued, {k: flips[k] for k in ("flip_attention_1", "flip_random_1")}, 0)


def test_minilm_precisions_on_english(glued):
    real = list(real_sentences())
    measures = [minilm_measures(s) for s in real]
    english = [m for m, s in zip(measures, real, strict=True) if s.lang == "en"]
    computed = {}
    for name in MEASURES:
        values = [
            top_k_precision(m.scores[name], m.is_topic, candidates=~m.is_special) for m in english
        ]
        for part, value in zip(("", "_low", "_high"), bootstrap_ci(values), strict=True):
            computed[f"en_{name}{part}"] = value
    _same(glued, computed, 2)


def test_uniform_attention_baseline(glued):
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
    learned, uniform = acc["learned"], acc["uniform"]
    _same(
        glued,
        {
            "learned_acc": learned[:, 0].mean(),
            "learned_std": learned[:, 0].std(),
            "learned_en": learned[:, 1].mean(),
            "learned_zh": learned[:, 2].mean(),
            "uniform_acc": uniform[:, 0].mean(),
            "uniform_std": uniform[:, 0].std(),
            "uniform_en": uniform[:, 1].mean(),
            "uniform_zh": uniform[:, 2].mean(),
        },
        3,
    )

    def at(step: int, kind: str) -> list[float]:
        i = runs[kind][0].steps.index(step)
        values = [r.test_accuracy_curve[i] for r in runs[kind]]
        return [min(values), max(values)]

    ranges = {"step4_uniform": at(4, "uniform"), "step12_learned": at(12, "learned")}
    ranges["step12_uniform"] = at(12, "uniform")
    _same(
        glued,
        {
            "accuracy_about": learned[:, 0].mean(),
            "uniform_min": uniform[:, 0].min(),
            "uniform_max": uniform[:, 0].max(),
            "uniform_en_min": uniform[:, 1].min(),
            **{f"{name}_min": low for name, (low, _) in ranges.items()},
            **{f"{name}_max": high for name, (_, high) in ranges.items()},
        },
        2,
    )
    _same(glued, {"gain_points": 100 * (learned[:, 0].mean() - uniform[:, 0].mean())}, 0)
    for r in runs["uniform"]:  # the weights never moved: the topic share stays the token share
        assert len(set(r.topic_share_curve)) == 1


def test_the_integrated_gradients_error_shrinks_as_the_text_says(glued):
    """The text: the Riemann sum's error falls from 4 to 32 to 256 steps, and from 32 to 256 steps
    (eight times as many) to about an eighth, as an error of order 1/m does once m is large."""
    errors = {m: glued[f"ig_error_{m}"] for m in (4, 32, 256)}
    for m, error in errors.items():  # each error is its sum minus f(x) - f(x'), as rounded
        assert abs(glued[f"ig_sum_{m}"] - glued["ig_change"] - error) <= 0.011, (m, glued)
    assert errors[4] > errors[32] > errors[256] > 0, errors
    assert 6 <= errors[32] / errors[256] <= 10, errors  # "about an eighth"
