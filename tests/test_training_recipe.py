"""course_utils.training_recipe against what we did not write.

* The warm-up schedule against the Annotated Transformer's ``rate`` (Rush et al., its line of
  code copied below as the oracle) and against the paper's numbers (peak at ``warmup``).
* Label smoothing against PyTorch's ``F.cross_entropy(label_smoothing=ε)`` and
  ``nn.CrossEntropyLoss``, seeded and table-driven, and as a hypothesis property.
* The best logit gap: the smoothed loss is smallest there (autograd's derivative is 0 and the
  softmax equals the target), and keeps falling without smoothing.
* Bad input: a clear error naming the argument.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.training_recipe import (
    best_logit_gap,
    label_smoothed_cross_entropy,
    noam_learning_rate,
    smoothed_targets,
)


def annotated_transformer_rate(step: int, model_size: int, factor: float, warmup: int) -> float:
    """The Annotated Transformer's learning rate (Harvard NLP, 2022 version), as written there."""
    if step == 0:
        step = 1
    return factor * (model_size ** (-0.5) * min(step ** (-0.5), step * warmup ** (-1.5)))


@pytest.mark.parametrize(
    ("d_model", "warmup", "factor"), [(512, 4000, 1.0), (512, 3000, 1.0), (32, 100, 2.0)]
)
def test_noam_schedule_equals_the_annotated_transformer(d_model, warmup, factor):
    steps = np.array([1, 2, 10, warmup - 1, warmup, warmup + 1, 5 * warmup, 100_000])
    ours = noam_learning_rate(steps, d_model=d_model, warmup=warmup, factor=factor)
    theirs = [annotated_transformer_rate(int(s), d_model, factor, warmup) for s in steps]
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_noam_schedule_peaks_at_warmup_with_the_papers_value():
    steps = np.arange(1, 20_001)
    lr = noam_learning_rate(steps, d_model=512, warmup=4000)
    assert int(steps[lr.argmax()]) == 4000
    assert lr.max() == pytest.approx(1 / math.sqrt(512 * 4000))  # 6.99e-4
    assert (np.diff(lr[:3999]) > 0).all() and (np.diff(lr[4000:]) < 0).all()
    # in PyTorch's scheduler, as a learner would use it: the same rates, step by step
    opt = torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=1.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: float(noam_learning_rate(s + 1, d_model=512, warmup=4000))
    )
    seen = []
    for _ in range(5):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    np.testing.assert_allclose(seen, lr[:5], rtol=1e-12)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: noam_learning_rate(0, d_model=512, warmup=10), ValueError, "step must be whole"),
        (lambda: noam_learning_rate(1.5, d_model=512, warmup=10), ValueError, "got 1.5"),
        (lambda: noam_learning_rate([True], d_model=512, warmup=10), ValueError, "step"),
        (lambda: noam_learning_rate([], d_model=512, warmup=10), ValueError, "step"),
        (lambda: noam_learning_rate(1, d_model=0, warmup=10), ValueError, "d_model"),
        (lambda: noam_learning_rate(1, d_model=512, warmup=2.0), TypeError, "warmup"),
        (lambda: noam_learning_rate(1, d_model=8, warmup=1, factor=0), ValueError, "factor"),
        (
            lambda: noam_learning_rate(1, d_model=8, warmup=1, factor=math.inf),
            ValueError,
            "factor",
        ),
    ],
)
def test_noam_schedule_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.5, 0.9])
@pytest.mark.parametrize(("n", "c", "seed"), [(1, 2, 0), (7, 5, 1), (32, 37, 2)])
def test_label_smoothing_equals_pytorch(n, c, epsilon, seed):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, c, generator=g, dtype=torch.float64) * 4  # (N, C)
    target = torch.randint(0, c, (n,), generator=g)  # (N,)
    ours = label_smoothed_cross_entropy(logits, target, epsilon=epsilon)
    theirs = F.cross_entropy(logits, target, label_smoothing=epsilon)
    module = torch.nn.CrossEntropyLoss(label_smoothing=epsilon)(logits, target)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ours, module, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 6),
    c=st.integers(2, 9),
    epsilon=st.floats(0.0, 0.99),
    scale=st.floats(0.0, 1e4),
    seed=st.integers(0, 2**16),
)
def test_label_smoothing_property(n, c, epsilon, scale, seed):
    """Any logits, even huge ones: finite, equal to PyTorch's, at least the target's entropy."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, c, generator=g, dtype=torch.float64) * scale
    target = torch.randint(0, c, (n,), generator=g)
    q = smoothed_targets(target, n_classes=c, epsilon=epsilon, dtype=torch.float64)  # (N, C)
    torch.testing.assert_close(q.sum(-1), torch.ones(n, dtype=torch.float64))
    loss = label_smoothed_cross_entropy(logits, target, epsilon=epsilon)
    assert torch.isfinite(loss)
    expected = F.cross_entropy(logits, target, label_smoothing=epsilon)
    torch.testing.assert_close(loss, expected, rtol=1e-9, atol=1e-9)
    entropy = -(q * q.clamp_min(1e-300).log()).sum(-1).mean()
    assert float(loss) >= float(entropy) - 1e-9


@pytest.mark.parametrize(("c", "epsilon"), [(5, 0.1), (37000, 0.1), (2, 0.3), (10, 0.01)])
def test_the_best_logit_gap_minimises_the_smoothed_loss(c, epsilon):
    gap = best_logit_gap(n_classes=c, epsilon=epsilon)
    g = torch.tensor(gap, dtype=torch.float64, requires_grad=True)
    logits = torch.cat([g.view(1), torch.zeros(c - 1, dtype=torch.float64)])[None]  # (1, C)
    loss = F.cross_entropy(logits, torch.tensor([0]), label_smoothing=epsilon)  # PyTorch's
    (grad,) = torch.autograd.grad(loss, g)
    assert abs(float(grad)) < 1e-12  # a stationary point of the loss in the gap
    probs = logits.softmax(-1)[0].detach()
    target = smoothed_targets(torch.tensor([0]), n_classes=c, epsilon=epsilon, dtype=g.dtype)[0]
    torch.testing.assert_close(probs, target, rtol=1e-12, atol=1e-15)  # softmax = the target
    for other in (gap - 0.5, gap + 0.5):  # and a minimum: both sides are higher
        worse = torch.tensor([[other] + [0.0] * (c - 1)], dtype=torch.float64)
        assert F.cross_entropy(worse, torch.tensor([0]), label_smoothing=epsilon) > loss


def test_without_smoothing_the_loss_keeps_falling():
    gaps = torch.tensor([1.0, 5.0, 10.0, 20.0, 40.0], dtype=torch.float64)
    logits = torch.zeros(5, 5, dtype=torch.float64)
    logits[:, 2] = gaps
    losses = [
        float(label_smoothed_cross_entropy(row[None], torch.tensor([2]), epsilon=0.0))
        for row in logits
    ]
    assert all(a > b for a, b in itertools.pairwise(losses))
    assert best_logit_gap(n_classes=5, epsilon=0.0) == math.inf


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: label_smoothed_cross_entropy(
                torch.zeros(3, 4), torch.tensor([0, 1]), epsilon=0.1
            ),
            ValueError,
            r"target has 2 entries and logits 3 rows",
        ),
        (
            lambda: label_smoothed_cross_entropy(
                torch.zeros(2, 4), torch.tensor([0, 4]), epsilon=0.1
            ),
            ValueError,
            r"expected 0 to 3",
        ),
        (
            lambda: label_smoothed_cross_entropy(
                torch.zeros(2, 4), torch.tensor([0, 1]), epsilon=1.0
            ),
            ValueError,
            r"epsilon must be in \[0, 1\)",
        ),
        (
            lambda: label_smoothed_cross_entropy(torch.zeros(4), torch.tensor([0]), epsilon=0.1),
            ValueError,
            r"logits",
        ),
        (
            lambda: label_smoothed_cross_entropy(
                torch.zeros(2, 4), torch.tensor([0.0, 1.0]), epsilon=0.1
            ),
            ValueError,
            r"integer class indices",
        ),
        (
            lambda: label_smoothed_cross_entropy(torch.zeros(2, 4), [0, 1], epsilon=0.1),
            TypeError,
            r"target must be a torch tensor",
        ),
        (
            lambda: smoothed_targets(torch.tensor([0]), n_classes=1, epsilon=0.1),
            ValueError,
            r"n_classes",
        ),
        (
            lambda: best_logit_gap(n_classes=5, epsilon=True),
            TypeError,
            r"epsilon must be a number",
        ),
    ],
)
def test_label_smoothing_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
