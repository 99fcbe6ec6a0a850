"""course_utils._settings: the experiments' settings, grouped dataclasses behind flat keywords."""

from __future__ import annotations

import dataclasses

import pytest

from course_utils._settings import Sequences, configure, setting_names
from course_utils._training import Schedule
from course_utils.experiments.counting import CountingConfig, CountingSettings, train_counting
from course_utils.experiments.neighbours import HeadsConfig, HeadsSettings, run_heads_experiment
from course_utils.experiments.previous_token import (
    PositionsConfig,
    PositionsSettings,
    run_positions_experiment,
)
from course_utils.experiments.reversal import ReversalConfig, ReversalSettings, train_reversal
from course_utils.topic_focus.classifier import (
    ClassifierConfig,
    ClassifierSettings,
    make_split,
    train_classifier,
)

EXPERIMENTS = {  # config, its typed keywords, a small call taking settings as keywords
    "counting": (CountingConfig, CountingSettings, lambda **s: train_counting((0,), **s)),
    "reversal": (ReversalConfig, ReversalSettings, lambda **s: train_reversal((0,), **s)),
    "positions": (
        PositionsConfig,
        PositionsSettings,
        lambda **s: run_positions_experiment(("rope",), (0,), **s),
    ),
    "heads": (HeadsConfig, HeadsSettings, lambda **s: run_heads_experiment((2,), (0,), **s)),
    "classifier": (
        ClassifierConfig,
        ClassifierSettings,
        lambda **s: train_classifier(make_split(40, 10), **s),
    ),
}


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_the_typed_keywords_are_the_configs_settings(name):
    config, keywords, _ = EXPERIMENTS[name]
    names = setting_names(config())
    assert len(names) == len(set(names))  # every flat name finds one place
    allowed = keywords.__required_keys__ | keywords.__optional_keys__
    assert allowed - {"batch"} == set(names) - {"batch"}  # batch: see the classifier test


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_unknown_setting_is_a_type_error_listing_the_settings(name):
    config, _, call = EXPERIMENTS[name]
    with pytest.raises(TypeError, match=r"unknown setting 'step'; the settings are: .*eval_every"):
        call(step=3)
    with pytest.raises(TypeError, match=f"config must be a {config.__name__}; got dict"):
        call(config={"steps": 3})


@pytest.mark.parametrize("name", EXPERIMENTS)
@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"steps": 0}, ValueError, "steps must be >= 1; got 0"),
        ({"steps": 2.0}, TypeError, "steps must be an int; got float"),
        ({"lr": "fast"}, TypeError, "lr must be a number; got str"),
        ({"lr": -0.1}, ValueError, "lr must be a finite number > 0"),
        ({"eval_every": True}, TypeError, "eval_every must be an int; got bool"),
    ],
)
def test_bad_schedule_is_named_before_training(name, settings, error, message):
    with pytest.raises(error, match=message):
        EXPERIMENTS[name][2](**settings)


def test_the_classifier_trains_on_the_full_batch():
    assert ClassifierConfig().schedule.batch is None
    with pytest.raises(ValueError, match="batch must be None"):
        train_classifier(make_split(40, 10), batch=8)


def test_keywords_and_a_config_give_the_same_run():
    flat = train_counting((0,), steps=3, eval_every=1, batch=4, d_model=8, dropout=0.1)
    config = CountingConfig(
        size=dataclasses.replace(CountingConfig().size, d_model=8),
        dropout=0.1,
        schedule=Schedule(steps=3, batch=4, lr=5e-3, eval_every=1),
    )
    (a,), (b,) = flat, train_counting((0,), config=config)
    assert (a.steps, a.losses, a.accuracy) == (b.steps, b.losses, b.accuracy)
    # keywords change the given config, not the defaults
    (c,) = train_counting((0,), config=config, steps=2)
    assert c.steps == [0, 1, 2] and c.model.blocks[0].d_model == 8


def test_configure_puts_each_keyword_in_its_group_and_keeps_the_rest():
    got = configure(HeadsConfig, None, {"T": 6, "lr": 0.1, "d_model": 4}, "f")
    assert got == HeadsConfig(
        d_model=4,
        data=Sequences(V=8, T=6),
        schedule=Schedule(steps=600, batch=64, lr=0.1, eval_every=100),
    )
    default = HeadsConfig()
    assert configure(HeadsConfig, default, {}, "f") is default
    assert setting_names(default) == ["d_model", "V", "T", "steps", "batch", "lr", "eval_every"]
