"""course_utils.widgets.head_explorer: frames are the pretrained model's maps; bad input rejected;
the shared 50 KB budget holds for the chapter's sentences."""

from __future__ import annotations

import json

import numpy as np
import pytest

from course_utils import pretrained
from course_utils.widgets import HeadExplorer
from course_utils.widgets._base import MAX_STATE_BYTES, unpack_array

SENTENCES = ["The cat sat on the mat.", "Snow, snow and more snow."]
#: The sentences of chapter 4's explorer (the notebook's cell).
CHAPTER_SENTENCES = [
    "The cat sat on the mat.",
    "The trophy did not fit because it was too big.",
    "Snow, snow and more snow.",
]
LONG = "a longer sentence with words " * 3  # 17 tokens with [CLS] and [SEP]


@pytest.fixture(scope="module")
def explorer():
    return HeadExplorer(SENTENCES, layer=1, head=8, notes={(1, 8): "next token (0.65)"})


def test_frames_are_the_model_maps_in_percent(explorer):
    for s, text in enumerate(SENTENCES):
        tokens, maps = pretrained.attention_maps(text)
        assert explorer.tokens[s] == tokens
        assert set(explorer.maps[s]) == {"shape", "uint8"}  # base64 bytes, not a JSON list
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
    assert explorer.data_bytes() < MAX_STATE_BYTES
    assert explorer.head_notes == {"1-8": "next token (0.65)"}
    assert repr(explorer) == "HeadExplorer(2 sentences, sentence_index=0, layer=1, head=8)"
    json.dumps(explorer.get_state(), default=str)  # serialisable


def test_chapter_sentences_fit_the_shared_budget():
    w = HeadExplorer(CHAPTER_SENTENCES, layer=0, head=2)
    assert w.data_bytes() < MAX_STATE_BYTES
    # one byte per percentage, base64: 4 characters per 3 bytes (+ padding)
    n = sum(unpack_array(m).size for m in w.maps)
    assert sum(len(m["uint8"]) for m in w.maps) <= 4 * (n + 2 * len(w.maps)) / 3


def test_add_sentence_runs_the_model_and_shows_it():
    w = HeadExplorer(["A b."])
    w.add_sentence("Dogs bark.")
    assert w.labels == ["A b.", "Dogs bark."]
    assert w.sentence_index == 1
    assert w.tokens[1] == pretrained.tokenize("Dogs bark.")[0]


def test_add_sentence_over_budget_leaves_the_widget_as_it_was():
    w = HeadExplorer([LONG])
    before = (list(w.labels), list(w.tokens), list(w.maps), w.sentence_index)
    with pytest.raises(ValueError, match="more than the budget of 50000; use fewer or shorter"):
        w.add_sentence(LONG)
    assert (w.labels, w.tokens, w.maps, w.sentence_index) == before
    np.testing.assert_array_equal(w.weights, pretrained.attention_maps(LONG)[1][0, 0])


@pytest.mark.parametrize(
    ("name", "value", "error", "message"),
    [
        ("layer", 6, ValueError, r"layer must be an int in \[0, 5\]; got 6"),
        ("head", 12, ValueError, r"head must be an int in \[0, 11\]; got 12"),
        ("sentence_index", 2, ValueError, r"sentence_index must be an int in \[0, 1\]; got 2"),
        ("head", True, TypeError, r"head must be an int in \[0, 11\]; got bool True"),
    ],
)
def test_index_set_from_python_is_checked(explorer, name, value, error, message):
    with pytest.raises(error, match=message):
        setattr(explorer, name, value)
    assert (explorer.sentence_index, explorer.layer, explorer.head) == (0, 1, 8)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        (("one sentence",), {}, TypeError, "sentences must be a non-empty list of str; got str"),
        (([],), {}, TypeError, "sentences must be a non-empty list"),
        (([3],), {}, TypeError, "each sentence must be a str; got int"),
        ((["a b"],), {"layer": 6}, ValueError, r"layer must be an int in \[0, 5\]; got 6"),
        ((["a b"],), {"head": -1}, ValueError, r"head must be an int in \[0, 11\]; got -1"),
        ((["word " * 30],), {}, ValueError, "has 32 tokens; at most 24 fit"),
        (([LONG] * 2,), {}, ValueError, "more than the budget of 50000; use fewer or shorter"),
    ],
)
def test_bad_input(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        HeadExplorer(*args, **kwargs)


# --- the reader's own sentence (issue 21) ---------------------------------------------------------


def test_rollouts_are_the_chapter13_rollout_in_percent(explorer):
    from course_utils.topic_focus import attention_rollout

    for s, text in enumerate(SENTENCES):
        _, maps = pretrained.attention_maps(text)
        frames = unpack_array(explorer.rollouts[s])  # (T, T)
        np.testing.assert_array_equal(frames, np.rint(attention_rollout(maps) * 100))


def test_typed_sentence_runs_in_python_with_a_kernel():
    from course_utils.topic_focus import attention_rollout

    w = HeadExplorer(["A b."])
    w.sentence = "Dogs bark at night."
    tokens, maps = pretrained.attention_maps("Dogs bark at night.")
    assert w.custom["tokens"] == tokens and w.custom_error == ""
    np.testing.assert_array_equal(unpack_array(w.custom["maps"]), np.rint(maps * 100.0))
    np.testing.assert_array_equal(
        unpack_array(w.custom["rollout"]), np.rint(attention_rollout(maps) * 100)
    )
    assert w.labels == ["A b."]  # the typed sentence is not added to the list for good
    w.sentence = "   "
    assert w.custom == {} and w.custom_error == ""


def test_typed_sentence_over_the_cap_gets_the_message():
    from course_utils.pretrained.minilm_web import MAX_BROWSER_TOKENS
    from course_utils.widgets.head_explorer import too_long_message

    w = HeadExplorer(["A b."])
    w.sentence = "word " * 70  # 72 tokens with [CLS] and [SEP]
    assert w.custom == {}
    assert w.custom_error == too_long_message(72) and str(MAX_BROWSER_TOKENS) in w.custom_error
    w.sentence = "word " * 600  # longer than the model's 512 positions: the same message
    assert w.custom_error == too_long_message(602)


def test_download_size_and_worker_are_stated():
    from course_utils.pretrained.minilm_web import download_sizes

    w = HeadExplorer(["A b."])
    assert w.download_bytes == download_sizes("float16")["upfront_bytes"]
    assert w.worker_path == "minilm/worker.mjs"
    js = w._esm
    assert "kernelless" in js and "new Worker(" in js and 'type: "module"' in js


def test_view_chooses_head_or_rollout_and_is_checked():
    w = HeadExplorer(["A b."])
    w.view = 1
    assert w.view == 1
    with pytest.raises(ValueError, match="view"):
        w.view = 2
