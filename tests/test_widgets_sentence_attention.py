"""course_utils.widgets.sentence_attention: frames equal the package's maths (and torch); bad
input rejected; learner text stays text; the data stays under the 50 KB budget."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from course_utils.widgets import SentenceAttention
from course_utils.widgets._base import MAX_STATE_BYTES

EN = ["the", "cat", "sat", "on", "the", "mat"]
ZH = ["猫", "坐", "在", "垫子", "上"]


def _sentences(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [("English", EN, rng.normal(size=(6, 4))), ("中文", ZH, rng.normal(size=(5, 4)))]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("projected", [False, True])
def test_sentence_frames_equal_the_package_maths(seed, projected) -> None:
    rng = np.random.default_rng(seed + 50)
    w_q = rng.normal(size=(4, 3)) if projected else None
    w_k = rng.normal(size=(4, 3)) if projected else None
    sentences = _sentences(seed)
    w = SentenceAttention(sentences, w_q=w_q, w_k=w_k)
    for i, (_, _, x) in enumerate(sentences):
        q = x if w_q is None else x @ w_q  # (T, d_k)
        k = x if w_k is None else x @ w_k  # (T, d_k)
        oracle = torch.softmax(
            torch.tensor(q) @ torch.tensor(k).T / np.sqrt(q.shape[1]), dim=-1
        ).numpy()  # (T, T)
        np.testing.assert_allclose(w.frame(i), oracle, atol=5e-4)
        np.testing.assert_allclose(w.weight_matrix(i), oracle, atol=1e-10)


def test_sentence_reads_the_indices_javascript_sets() -> None:
    w = SentenceAttention(_sentences())
    w.set_state({"sentence_index": 1, "query_index": 3})
    assert w.query_token == "垫子" and w.sentence == ZH
    np.testing.assert_allclose(w.weights, w.weight_matrix(1)[3])
    w.set_state({"sentence_index": 0})
    assert w.query_index == 3 and w.query_token == "on"


def test_sentence_clamps_query_when_sentence_is_shorter() -> None:
    w = SentenceAttention(_sentences(), query_index=5)
    w.sentence_index = 1  # 5 tokens: index 5 no longer exists
    assert w.query_index == 4


@pytest.mark.parametrize(
    ("sentences", "kwargs", "error", "match"),
    [
        ([], {}, ValueError, r"at least one sentence; got 0"),
        ("the cat", {}, TypeError, r"sentences must be a list of \(label, tokens, vectors\)"),
        (
            [("s", ["a", "b"], np.zeros((3, 2)))],
            {},
            ValueError,
            r"sentences\[0\] vectors must have shape \(2, d\); got shape \(3, 2\)",
        ),
        (
            [("s", "a b", np.zeros((2, 2)))],
            {},
            TypeError,
            r"sentences\[0\] tokens must be a list of strings",
        ),
        ([{"label": "s", "tokens": ["a"]}], {}, ValueError, r"missing \['vectors'\]"),
        ([("", ["a"], np.zeros((1, 2)))], {}, TypeError, r"label must be a non-empty str"),
        (
            [("a", ["x"], np.zeros((1, 2))), ("b", ["y"], np.zeros((1, 3)))],
            {},
            ValueError,
            r"all sentences must share d_model = 2",
        ),
        (
            [("a", ["x"], np.zeros((1, 2)))],
            {"w_q": np.zeros((3, 2))},
            ValueError,
            r"w_q must have shape \(2, d\); got shape \(3, 2\)",
        ),
        (
            [("a", ["x"], np.zeros((1, 2)))],
            {"w_q": np.zeros((2, 3)), "w_k": np.zeros((2, 2))},
            ValueError,
            r"w_k must have shape \(2, 3\)",
        ),
        (
            [("a", ["x"], np.zeros((1, 2)))],
            {"query_index": 1},
            ValueError,
            r"query_index must be an int in \[0, 0\]; got 1",
        ),
    ],
)
def test_sentence_bad_inputs(sentences, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        SentenceAttention(sentences, **kwargs)


def test_sentence_keeps_hostile_tokens_as_plain_text() -> None:
    hostile = ["<img src=x onerror=alert(1)>", "<script>alert(2)</script>", "ok"]
    w = SentenceAttention([("x", hostile, np.eye(3))])
    assert w.tokens == [hostile]  # synced verbatim; the JS shows them with textContent


def test_sentence_recomputes_when_sentences_change() -> None:
    w = SentenceAttention(_sentences(0))
    old = json.dumps(w.frames)
    x = np.random.default_rng(9).normal(size=(3, 4))  # (T, d_model)
    w.set_sentences([("new", ["a", "b", "c"], x)])
    assert json.dumps(w.frames) != old and w.labels == ["new"] and w.tokens == [["a", "b", "c"]]
    oracle = torch.softmax(torch.tensor(x) @ torch.tensor(x).T / 2.0, dim=-1).numpy()  # (T, T)
    np.testing.assert_allclose(w.weights, oracle[0], atol=1e-10)


def test_state_size_under_budget() -> None:
    w = SentenceAttention(_sentences())
    assert w.data_bytes() < MAX_STATE_BYTES
    assert w.state_bytes() < MAX_STATE_BYTES + len(w._esm) + len(w._css) + 2_000
