"""course_utils.heads: patterns (measured over a corpus) and experiment (a seeded training run)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils import pretrained
from course_utils.experiments.neighbours import make_batch, run_heads_experiment
from course_utils.heads.measure import (
    PATTERNS,
    load_corpus,
    measure_heads,
    pattern_weights,
    top_heads,
)

TOKENS = ["[CLS]", "the", "dog", "saw", "the", "cat", ".", "[SEP]"]  # T = 8


def _one_hot_maps(target) -> np.ndarray:
    """A (1, 1, T, T) map where query i puts all its weight on key target(i)."""
    T = len(TOKENS)
    maps = np.zeros((1, 1, T, T))
    for i in range(T):
        maps[0, 0, i, target(i) % T] = 1.0
    return maps


# (name of the head behaviour, where query i looks, expected mean score per pattern)
CASES = [
    ("previous", lambda i: i - 1, {"previous": 1, "next": 0, "self": 0, "cls": 1 / 6, "sep": 0}),
    ("next", lambda i: i + 1, {"previous": 0, "next": 1, "self": 0, "cls": 0, "sep": 1 / 6}),
    ("self", lambda i: i, {"previous": 0, "next": 0, "self": 1, "cls": 0, "sep": 0}),
    ("cls", lambda i: 0, {"previous": 0, "cls": 1, "sep": 0, "punct": 0}),
    ("sep", lambda i: 7, {"sep": 1, "cls": 0, "next": 0, "previous": 0}),
    ("period", lambda i: 6, {"punct": 1, "sep": 0, "next": 1 / 5, "self": 1 / 6}),
]


@pytest.mark.parametrize(("name", "target", "expected"), CASES, ids=[c[0] for c in CASES])
def test_pattern_weights_on_hand_made_heads(name, target, expected):
    out = pattern_weights(TOKENS, _one_hot_maps(target))
    for pattern, want in expected.items():
        total, count = out[pattern]
        assert total.shape == (1, 1)
        assert total[0, 0] / count == pytest.approx(want), pattern


def test_query_counts_follow_the_definitions():
    out = pattern_weights(TOKENS, _one_hot_maps(lambda i: i))
    counts = {p: c for p, (_, c) in out.items()}
    # words are positions 1..6; previous: 2..6; next: 1..5; "the" repeats (positions 1 and 4)
    assert counts == {
        "previous": 5, "next": 5, "self": 6, "cls": 6, "sep": 6, "punct": 6, "same": 2, "coref": 0
    }  # fmt: skip


def test_same_token_and_coref():
    # "the" (1) looks at the other "the" (4) and back; "saw" (3) looks at "dog" (2)
    def target(i):
        return {1: 4, 4: 1, 3: 2}.get(i, 0)

    out = pattern_weights(TOKENS, _one_hot_maps(target), coref=("saw", "dog"))
    assert out["same"][0][0, 0] / out["same"][1] == 1.0
    assert out["coref"] == (pytest.approx(np.ones((1, 1))), 1)


def test_pattern_weights_equal_a_direct_loop_on_random_maps():
    rng = np.random.default_rng(0)
    T = len(TOKENS)
    maps = rng.dirichlet(np.ones(T), size=(2, 3, T))  # (2, 3, T, T), rows sum to 1
    out = pattern_weights(TOKENS, maps)
    prev = np.mean([maps[:, :, i, i - 1] for i in range(2, T - 1)], axis=0)
    nxt = np.mean([maps[:, :, i, i + 1] for i in range(1, T - 2)], axis=0)
    cls = np.mean([maps[:, :, i, 0] for i in range(1, T - 1)], axis=0)
    punct = np.mean([maps[:, :, i, 6] for i in range(1, T - 1)], axis=0)
    for name, want in [("previous", prev), ("next", nxt), ("cls", cls), ("punct", punct)]:
        total, count = out[name]
        np.testing.assert_allclose(total / count, want, rtol=1e-12)


@pytest.mark.parametrize(
    ("tokens", "maps_shape", "coref", "message"),
    [
        (TOKENS, (1, 1, 7, 7), None, r"maps must have shape \(L, H, 8, 8\)"),
        (TOKENS, (1, 8, 8), None, r"maps must have shape"),
        (TOKENS, (1, 1, 8, 8), ("the", "dog"), "must name two tokens that occur once each"),
        (TOKENS, (1, 1, 8, 8), ("it", "dog"), "must name two tokens that occur once each"),
    ],
)
def test_pattern_weights_bad_input(tokens, maps_shape, coref, message):
    with pytest.raises(ValueError, match=message):
        pattern_weights(tokens, np.zeros(maps_shape), coref)


def test_corpus_is_varied_and_its_annotations_are_valid():
    corpus = load_corpus()
    texts = [c["text"] for c in corpus]
    assert 50 <= len(corpus) <= 100
    assert len(set(texts)) == len(texts)
    with_coref = [c for c in corpus if c["coref"]]
    assert len(with_coref) >= 10
    for c in with_coref:
        tokens, _ = pretrained.tokenize(c["text"])
        pronoun, antecedent = c["coref"]
        assert tokens.count(pronoun) == 1 and tokens.count(antecedent) == 1, c


@pytest.mark.slow  # 3 s on an idle machine; much more when the CPU is shared
def test_measure_heads_on_the_corpus():
    scores = measure_heads()
    cfg = pretrained.load_config()
    shape = (cfg["num_hidden_layers"], cfg["num_attention_heads"])
    assert set(scores.scores) == set(PATTERNS)
    for pattern in PATTERNS:
        s = scores.scores[pattern]
        assert s.shape == shape
        assert (s >= 0).all() and (s <= 1 + 1e-6).all()
    assert scores.counts["coref"] == sum(1 for c in load_corpus() if c["coref"])
    assert measure_heads() is scores  # cached


def test_measure_heads_on_a_custom_corpus_matches_a_direct_computation():
    corpus = [{"text": "The dog saw the cat."}, {"text": "Birds sing."}]
    scores = measure_heads(corpus)
    per_sentence = []
    for c in corpus:
        tokens, maps = pretrained.attention_maps(c["text"])
        per_sentence += [maps[:, :, i, 0] for i in range(1, len(tokens) - 1)]
    np.testing.assert_allclose(scores.scores["cls"], np.mean(per_sentence, axis=0), rtol=1e-6)


def test_top_heads_ranks_and_breaks_ties_by_position():
    scores = measure_heads([{"text": "A b c."}])
    s = scores.scores["cls"]
    best = top_heads(scores, "cls", k=5)
    values = [w for _, _, w in best]
    assert values == sorted(values, reverse=True)
    assert best[0][2] == pytest.approx(s.max())
    assert s[best[0][0], best[0][1]] == pytest.approx(s.max())
    with pytest.raises(ValueError, match="pattern must be one of"):
        top_heads(scores, "verbs")


# -- the one-head-or-several experiment --------------------------------------------------------


def test_make_batch_targets_are_the_neighbour_pairs():
    x, y = make_batch(3, 6, 5, torch.Generator().manual_seed(1))
    for b in range(3):
        for i in range(6):
            assert y[b, i] == 5 * x[b, (i - 1) % 6] + x[b, (i + 1) % 6]


def test_experiment_is_deterministic_and_restores_torch_settings(computed_every_time: None) -> None:
    threads = torch.get_num_threads()
    kwargs = {"n_heads_list": (1, 2), "seeds": (0,), "steps": 20, "eval_every": 10}
    a = run_heads_experiment(**kwargs)
    b = run_heads_experiment(**kwargs)
    assert a == b
    assert torch.get_num_threads() == threads
    assert not torch.are_deterministic_algorithms_enabled()
    assert a[0].n_params == a[1].n_params  # same width, same parameters
    for r in a:
        assert len(r.offset_weights) == r.n_heads
        np.testing.assert_allclose(np.sum(r.offset_weights, axis=1), 1.0, atol=1e-5)
