"""The chapter 6 counting task: data, model and a short training run that must learn."""

from __future__ import annotations

import pytest
import torch

from course_utils.experiments.counting import (
    CountingModel,
    decode,
    encode,
    make_batch,
    train_counting,
)


@pytest.mark.parametrize(("B", "T", "V"), [(1, 1, 1), (4, 10, 6), (3, 7, 26)])
def test_targets_are_counts(B, T, V):
    x, y = make_batch(B, T, V, torch.Generator().manual_seed(T))
    assert x.shape == y.shape == (B, T) and int(x.max()) < V
    for b in range(B):
        row = x[b].tolist()
        assert y[b].tolist() == [row.count(t) for t in row]


def test_encode_decode_round_trip():
    x = encode("abca")
    assert x.tolist() == [[0, 1, 2, 0]]
    assert decode(x[0]) == ["a", "b", "c", "a"]
    with pytest.raises(ValueError, match="lowercase letters"):
        encode("ab1")


def test_model_is_permutation_equivariant():
    torch.manual_seed(0)
    model = CountingModel(6, 8).eval()
    x, _ = make_batch(2, 8, 6, torch.Generator().manual_seed(1))
    perm = torch.randperm(8)
    with torch.no_grad():
        torch.testing.assert_close(model(x[:, perm]), model(x)[:, perm])
    assert len(model.traces(x)) == 2


def test_runs_are_deterministic(computed_every_time: None) -> None:
    a = train_counting(seeds=(3,), steps=4, eval_every=2, batch=8)[0]
    b = train_counting(seeds=(3,), steps=4, eval_every=2, batch=8)[0]
    assert a.losses == b.losses and a.steps == [0, 2, 4]


def test_a_short_run_learns_to_count():
    """200 steps of seed 0 (a few seconds): the loss falls from about ln(T + 1) to below 0.2."""
    run = train_counting(seeds=(0,), steps=200)[0]
    assert run.losses[0] > 2.0  # about ln 11 = 2.4, a uniform guess over the 11 counts
    assert run.losses[1] > 1.0  # step 50
    assert run.losses[-1] < 0.2
    assert run.accuracy > 0.9
