"""course_utils.experiments.previous_token: the task, the model variants, a short run's ordering."""

from __future__ import annotations

import pytest
import torch

from course_utils.experiments.previous_token import (
    IGNORE,
    KINDS,
    PreviousTokenModel,
    make_previous_token_batch,
    run_positions_experiment,
)


def test_targets_are_the_previous_tokens():
    x, y = make_previous_token_batch(5, 9, 4, torch.Generator().manual_seed(1))
    assert x.shape == y.shape == (5, 9)
    assert (y[:, 0] == IGNORE).all()
    assert torch.equal(y[:, 1:], x[:, :-1])


def test_without_positions_the_model_is_permutation_equivariant():
    """The 'none' model sees a set: shuffling the input shuffles its outputs the same way."""
    torch.manual_seed(0)
    model = PreviousTokenModel("none", V=8, T=10, d_model=16)
    x, _ = make_previous_token_batch(3, 10, 8, torch.Generator().manual_seed(2))
    perm = torch.randperm(10)
    with torch.no_grad():
        torch.testing.assert_close(model(x[:, perm]), model(x)[:, perm], atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ["sinusoidal", "learned", "rope"])
def test_with_positions_it_is_not(kind):
    torch.manual_seed(0)
    model = PreviousTokenModel(kind, V=8, T=10, d_model=16)
    x, _ = make_previous_token_batch(3, 10, 8, torch.Generator().manual_seed(2))
    perm = torch.randperm(10)
    with torch.no_grad():
        assert not torch.allclose(model(x[:, perm]), model(x)[:, perm], atol=1e-3)


def test_learned_table_stops_at_the_trained_length():
    model = PreviousTokenModel("learned", V=8, T=10, d_model=16)
    assert sum(p.numel() for p in model.pos.parameters()) == 10 * 16
    with pytest.raises(ValueError, match=r"positions 0..9 only; got a sequence of T = 11"):
        model(torch.zeros(1, 11, dtype=torch.long))
    PreviousTokenModel("rope", V=8, T=10, d_model=16)(torch.zeros(1, 30, dtype=torch.long))


def test_bad_kind_is_rejected():
    with pytest.raises(ValueError, match="kind must be one of"):
        PreviousTokenModel("alibi", V=8, T=10, d_model=16)
    with pytest.raises(ValueError, match="kinds must hold names"):
        run_positions_experiment(("none", "absolute"), steps=1)


@pytest.mark.slow  # about 3 s on an idle machine; much more when the CPU is shared
def test_short_run_orders_none_below_every_kind_of_position():
    results = run_positions_experiment(KINDS, seeds=(0,), steps=150, eval_every=50)
    acc = {r.kind: r.accuracy for r in results}
    assert acc["none"] < 0.5, acc  # a set of tokens cannot say which came just before
    for kind in ("sinusoidal", "learned", "rope"):
        assert acc[kind] > 0.95, acc
    long = {r.kind: r.accuracy_long for r in results}
    assert long["learned"] is None  # no table rows past the trained length
    assert long["none"] < 0.5 and long["rope"] > long["none"] and long["sinusoidal"] > long["none"]
    params = {r.kind: (r.n_params, r.n_position_params) for r in results}
    assert params["learned"][0] - params["none"][0] == params["learned"][1] == 12 * 16
    assert params["sinusoidal"] == params["rope"] == params["none"]


def test_same_call_gives_the_same_numbers(computed_every_time: None) -> None:
    a = run_positions_experiment(("rope",), seeds=(3,), steps=5, eval_every=5)
    b = run_positions_experiment(("rope",), seeds=(3,), steps=5, eval_every=5)
    assert a == b
