"""The chapter 13 widget: its frames are the topic_focus package's numbers, removing nothing changes
nothing, the chapter's sentences fit the 50 KB budget, bad input is rejected."""

from __future__ import annotations

import json

import numpy as np
import pytest

from course_utils.topic_focus import (
    ablate,
    classifier_gradient_x_input,
    make_split,
    real_sentences,
    train_classifier,
    word_tokens,
)
from course_utils.topic_focus.measures import minilm_measures, to_words
from course_utils.widgets import TopicWordFocus
from course_utils.widgets._base import MAX_STATE_BYTES, unpack_array

#: Indices into real_sentences() of the chapter's widget (English and Chinese, every topic).
CHAPTER_SENTENCES = (0, 3, 9, 13, 16, 21, 27, 29, 32, 38, 40, 44)


@pytest.fixture(scope="module")
def result():
    return train_classifier(make_split(n_train=300, n_test=60, seed=0), seed=0, steps=40)


@pytest.fixture(scope="module")
def widget(result):
    return TopicWordFocus(result, [real_sentences()[i] for i in (0, 44)], k_max=2)


def test_measures_are_the_package_numbers(result, widget):
    for s, i in enumerate((0, 44)):
        sentence = real_sentences()[i]
        words, spans = word_tokens(sentence.text)
        assert widget.tokens[s] == words
        _, weights = result.predict([sentence])
        expected = np.stack(
            [
                weights[0],
                to_words(minilm_measures(sentence), "mean_rollout", spans),
                classifier_gradient_x_input(result, sentence),
            ]
        )
        np.testing.assert_allclose(unpack_array(widget.measures[s]), expected, atol=5e-4)


def test_removing_nothing_gives_the_original_prediction(result, widget):
    for s, i in enumerate((0, 44)):
        probs, _ = result.predict([real_sentences()[i]])
        packed = unpack_array(widget.probs[s])  # (options, k, C)
        removed = unpack_array(widget.removed[s])  # (options, k, T)
        assert (removed[0] == 0).all()
        for k in range(widget.k_max):
            np.testing.assert_allclose(packed[0, k], probs[0], atol=5e-4)


def test_removal_frames_follow_the_rankings(result, widget):
    sentence = real_sentences()[0]
    _, weights = result.predict([sentence])
    widget.sentence_index, widget.option_index, widget.k_index = 0, 1, 1
    words = word_tokens(sentence.text)[0]
    top2 = [words[j] for j in np.argsort(-weights[0], kind="stable")[:2]]
    assert sorted(widget.removed_words) == sorted(top2)
    mask = np.array([w in top2 for w in words])
    np.testing.assert_allclose(widget.probabilities, ablate(result, sentence, mask), atol=5e-4)
    widget.option_index = 3  # random: exactly k words
    assert len(widget.removed_words) == 2
    widget.option_index, widget.k_index = 0, 0


def test_chapter_sentences_fit_the_budget(result):
    w = TopicWordFocus(result, [real_sentences()[i] for i in CHAPTER_SENTENCES], option_index=1)
    assert w.data_bytes() < MAX_STATE_BYTES
    assert w.option_index == 1
    json.dumps(w.get_state(), default=str)
    assert repr(w) == "TopicWordFocus(title='')"


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda r: TopicWordFocus("model", real_sentences()[:1]), TypeError, "TrainResult"),
        (lambda r: TopicWordFocus(r, []), TypeError, "non-empty"),
        (lambda r: TopicWordFocus(r, ["a sentence"]), TypeError, "TopicSentence"),
        (lambda r: TopicWordFocus(r, real_sentences()[:1], k_max=9), ValueError, "k_max"),
        (lambda r: TopicWordFocus(r, [real_sentences()[45]], k_max=4), ValueError, "words"),
    ],
)
def test_bad_input(result, make, error, match):
    with pytest.raises(error, match=match):
        make(result)


def test_bad_indices(widget):
    with pytest.raises(ValueError, match="option_index"):
        widget.option_index = 4
    with pytest.raises(ValueError, match="k_index"):
        widget.k_index = 2
    with pytest.raises(ValueError, match="sentence_index"):
        widget.sentence_index = 2
