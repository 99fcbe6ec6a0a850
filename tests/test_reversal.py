"""The toy encoder–decoder of chapter 8: data, a short training run, alignment measure."""

from __future__ import annotations

import pytest
import torch

from course_utils.experiments.reversal import (
    EOS,
    ReversalModel,
    alignment_accuracy,
    decode,
    encode,
    make_batch,
    train_reversal,
)


def test_batch_targets_are_reversed_words():
    src, lengths, tgt = make_batch(50, 2, 8, torch.Generator().manual_seed(3))
    assert src.shape == (50, 8) and tgt.shape == (50, 9)
    for s, n, t in zip(src, lengths, tgt, strict=True):
        assert decode(t) == decode(s[:n])[::-1]
        assert int(t[n]) == EOS and bool((s[n:] == 0).all())


def test_short_run_reaches_the_expected_loss():
    run = train_reversal(seeds=(0,), steps=150, eval_every=150)[0]
    assert run.losses[0] > 2.0  # about ln(13) before training
    assert run.losses[-1] < 0.5
    assert run.steps == [0, 150]


def test_runs_are_deterministic(computed_every_time: None) -> None:
    a = train_reversal(seeds=(1,), steps=5, eval_every=5, batch=8)[0]
    b = train_reversal(seeds=(1,), steps=5, eval_every=5, batch=8)[0]
    assert a.losses == b.losses


def test_padding_does_not_change_the_output_when_masked():
    torch.manual_seed(0)
    model = ReversalModel().eval()
    long_src, lengths = encode(["cab"], t_k=8)
    noisy = long_src.clone()
    noisy[0, 3:] = 5  # padding positions hold letters: the mask must hide them anyway
    a, _ = model.generate(long_src, lengths)
    b, _ = model.generate(noisy, lengths)
    assert torch.equal(a, b)
    c, _ = model.generate(noisy, lengths, use_padding_mask=False)
    assert c.shape == a.shape


def test_alignment_accuracy_of_a_perfect_anti_diagonal():
    lengths = torch.tensor([3, 2])
    cross = torch.zeros(2, 1, 4, 3)
    for b, n in enumerate(lengths.tolist()):
        for i in range(n):
            cross[b, 0, i, n - 1 - i] = 1.0
    assert alignment_accuracy(cross, lengths) == 1.0
    cross[0, 0, 0] = torch.tensor([1.0, 0, 0])
    assert alignment_accuracy(cross, lengths) == pytest.approx(4 / 5)


@pytest.mark.parametrize("bad", [[], "abc", ["abz"], [""]])
def test_encode_rejects_bad_words(bad):
    with pytest.raises(ValueError, match="word"):
        encode(bad)


def test_encoder_mask_switch_changes_only_the_encoder():
    """With the encoder's mask, the memory at real positions ignores how much padding follows;
    without it (chapter 8, exercise 8.4) the padding leaks into it."""
    from course_utils.experiments.reversal import ReversalModel, encode

    torch.manual_seed(0)
    model = ReversalModel().eval()
    short, n = encode(["cab"], t_k=3)
    padded, _ = encode(["cab"], t_k=8)
    with torch.no_grad():
        a, _ = model.encode(short, n)
        b, _ = model.encode(padded, n)
        c, keep = model.encode(padded, n, use_encoder_mask=False)
    assert torch.allclose(a, b[:, :3], atol=1e-6)
    assert not torch.allclose(a, c[:, :3], atol=1e-3)
    assert keep[0, 0].tolist() == [True] * 3 + [False] * 5  # the mask is returned either way


def test_exact_match_by_padding_groups_by_padding():
    from course_utils.experiments.reversal import ReversalModel, exact_match_by_padding, held_out

    src, lengths, tgt = held_out(40)
    torch.manual_seed(0)
    share = exact_match_by_padding(ReversalModel(), src, lengths, tgt, use_encoder_mask=False)
    assert sorted(share) == sorted(set((src.size(1) - lengths).tolist()))
    assert all(0.0 <= v <= 1.0 for v in share.values())
