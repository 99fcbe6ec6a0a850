"""The chapter 4 head explorer: its frames are the model's maps, bad input is rejected."""

from __future__ import annotations

import json

import numpy as np
import pytest

from course_utils import pretrained
from course_utils.widgets._base import unpack_array
from course_utils.widgets.head_explorer import MAX_BYTES, HeadExplorer

SENTENCES = ["The cat sat on the mat.", "Snow, snow and more snow."]


@pytest.fixture(scope="module")
def explorer():
    return HeadExplorer(SENTENCES, layer=1, head=8, notes={(1, 8): "next token (0.65)"})


def test_frames_are_the_model_maps_in_percent(explorer):
    for s, text in enumerate(SENTENCES):
        tokens, maps = pretrained.attention_maps(text)
        assert explorer.tokens[s] == tokens
        frames = unpack_array(explorer.maps[s])  # (L, H, T, T), ints 0..100
        assert frames.shape == maps.shape
        np.testing.assert_array_equal(frames, np.rint(maps.astype(np.float64) * 100))
        # each row of percentages still (nearly) sums to 100
        assert np.abs(frames.sum(-1) - 100).max() <= maps.shape[-1] / 2


def test_weights_follow_the_indices_javascript_sets(explorer):
    _, maps = pretrained.attention_maps(SENTENCES[1])
    explorer.sentence_index, explorer.layer, explorer.head = 1, 0, 2
    np.testing.assert_array_equal(explorer.weights, maps[0, 2])
    explorer.sentence_index, explorer.layer, explorer.head = 0, 1, 8


def test_state_is_small_and_repr_is_stable(explorer):
    assert explorer.data_bytes() < MAX_BYTES
    assert explorer.head_notes == {"1-8": "next token (0.65)"}
    assert repr(explorer) == "HeadExplorer(2 sentences, sentence_index=0, layer=1, head=8)"
    json.dumps(explorer.get_state(), default=str)  # serialisable


def test_add_sentence_runs_the_model_and_shows_it():
    w = HeadExplorer(["A b."])
    w.add_sentence("Dogs bark.")
    assert w.labels == ["A b.", "Dogs bark."]
    assert w.sentence_index == 1
    assert w.tokens[1] == pretrained.tokenize("Dogs bark.")[0]


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        (("one sentence",), {}, TypeError, "sentences must be a non-empty list of str; got str"),
        (([],), {}, TypeError, "sentences must be a non-empty list"),
        (([3],), {}, TypeError, "each sentence must be a str; got int"),
        ((["a b"],), {"layer": 6}, ValueError, r"layer must be an int in 0\.\.5; got 6"),
        ((["a b"],), {"head": -1}, ValueError, r"head must be an int in 0\.\.11; got -1"),
        ((["word " * 30],), {}, ValueError, "has 32 tokens; at most 24 fit"),
        ((["a longer sentence with words " * 3] * 6,), {}, ValueError, "more than its budget"),
    ],
)
def test_bad_input(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        HeadExplorer(*args, **kwargs)
