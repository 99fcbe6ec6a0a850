"""The experiments' settings: one flat frozen dataclass per experiment, keywords put in with
``dataclasses.replace`` (``course_utils._training.with_settings``)."""

from __future__ import annotations

import dataclasses

import pytest

from course_utils._training import Schedule, with_settings
from course_utils.experiments.counting import CountingConfig, train_counting
from course_utils.experiments.neighbours import HeadsConfig, run_heads_experiment
from course_utils.experiments.previous_token import PositionsConfig, run_positions_experiment
from course_utils.experiments.reversal import ReversalConfig, train_reversal
from course_utils.topic_focus.classifier import ClassifierConfig, make_split, train_classifier
from course_utils.transformer import TransformerSize

EXPERIMENTS = {  # config, a small call taking settings as keywords
    "counting": (CountingConfig, lambda **s: train_counting((0,), **s)),
    "reversal": (ReversalConfig, lambda **s: train_reversal((0,), **s)),
    "positions": (PositionsConfig, lambda **s: run_positions_experiment(("rope",), (0,), **s)),
    "heads": (HeadsConfig, lambda **s: run_heads_experiment((2,), (0,), **s)),
    "classifier": (ClassifierConfig, lambda **s: train_classifier(make_split(40, 10), **s)),
}


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_a_config_is_one_flat_frozen_dataclass(name):
    """Every setting is a field of the config itself (no groups to look into), the schedule's
    four among them; the config cannot be changed in place, only replaced."""
    config, _ = EXPERIMENTS[name]
    default = config()
    names = [f.name for f in dataclasses.fields(default)]
    assert {"steps", "batch", "lr", "eval_every"} <= set(names)
    assert not any(dataclasses.is_dataclass(getattr(default, n)) for n in names), names
    with pytest.raises(dataclasses.FrozenInstanceError):
        default.steps = 3  # type: ignore[misc]
    assert default.schedule == Schedule(
        steps=default.steps, batch=default.batch, lr=default.lr, eval_every=default.eval_every
    )
    assert dataclasses.replace(default, lr=0.5).schedule.lr == 0.5


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_unknown_setting_is_a_type_error_listing_the_settings(name):
    config, call = EXPERIMENTS[name]
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
    """A wrong schedule value fails when the config is made, by keyword or by replace."""
    config, call = EXPERIMENTS[name]
    with pytest.raises(error, match=message):
        call(**settings)
    with pytest.raises(error, match=message):
        dataclasses.replace(config(), **settings)


def test_the_classifier_trains_on_the_full_batch():
    assert ClassifierConfig().batch is None
    with pytest.raises(ValueError, match="batch must be None"):
        train_classifier(make_split(40, 10), batch=8)


def test_the_sizes_are_the_configs_own_fields():
    assert TransformerSize.of(CountingConfig(d_model=8)) == TransformerSize(
        d_model=8, n_heads=4, d_ff=64, n_layers=2
    )
    assert TransformerSize.of(ReversalConfig()) == TransformerSize(
        d_model=32, n_heads=2, d_ff=64, n_layers=2
    )


def test_keywords_and_a_config_give_the_same_run():
    flat = train_counting((0,), steps=3, eval_every=1, batch=4, d_model=8, dropout=0.1)
    config = CountingConfig(d_model=8, dropout=0.1, steps=3, batch=4, eval_every=1)
    (a,), (b,) = flat, train_counting((0,), config=config)
    assert (a.steps, a.losses, a.accuracy) == (b.steps, b.losses, b.accuracy)
    # keywords change the given config, not the defaults
    (c,) = train_counting((0,), config=config, steps=2)
    assert c.steps == [0, 1, 2] and c.model.blocks[0].d_model == 8


def test_with_settings_replaces_and_keeps_the_rest():
    got = with_settings(HeadsConfig, None, {"T": 6, "lr": 0.1, "d_model": 4}, "f")
    assert got == HeadsConfig(d_model=4, V=8, T=6, steps=600, batch=64, lr=0.1, eval_every=100)
    default = HeadsConfig()
    assert with_settings(HeadsConfig, default, {}, "f") is default
