"""course_utils._training: the experiments' shared Adam loop equals the loop written out."""

import pytest
import torch

from course_utils._training import (
    Schedule,
    batch_loss,
    held_out_loss,
    token_cross_entropy,
    train_adam,
)


def _model_and_data(seed: int = 0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Embedding(5, 8), torch.nn.Dropout(0.2), torch.nn.Linear(8, 5)
    )
    x = torch.randint(0, 5, (6, 4), generator=torch.Generator().manual_seed(1))  # (B, T)
    y = (x + 1) % 5  # (B, T)
    return model, x, y


def _written_out(steps, eval_every, *, at_start, at_end, train_mode, linear_decay):
    model, x, y = _model_and_data()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    sched = (
        torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 - s / steps) if linear_decay else None
    )

    def evaluate():
        model.eval()
        with torch.no_grad():
            return float(torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten()))

    at, losses = ([0], [evaluate()]) if at_start else ([], [])
    for step in range(1, steps + 1):
        if train_mode:
            model.train()
        loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if step % eval_every == 0 or (at_end and step == steps):
            at.append(step)
            losses.append(evaluate())
    return at, losses


@pytest.mark.parametrize(
    ("at_start", "at_end", "train_mode", "linear_decay"),
    [(False, False, False, False), (True, True, True, False), (True, True, True, True)],
)
def test_train_adam_equals_the_loop_written_out(at_start, at_end, train_mode, linear_decay):
    flags = {"at_start": at_start, "at_end": at_end, "train_mode": train_mode}
    want = _written_out(7, 3, linear_decay=linear_decay, **flags)
    model, x, y = _model_and_data()

    def evaluate():
        model.eval()
        return held_out_loss(model, x, y)

    got = train_adam(
        model,
        lambda: batch_loss(model, lambda: (x, y)),
        steps=7,
        lr=0.05,
        eval_every=3,
        evaluate=evaluate,
        linear_decay=linear_decay,
        **flags,
    )
    assert got == want  # the same steps and bit-identical losses
    assert got[0] == ([0, 3, 6, 7] if at_start else [3, 6])


def test_evaluate_runs_without_autograd_and_ignore_index_is_passed_on():
    model, x, y = _model_and_data()
    grads = []
    train_adam(
        model,
        lambda: token_cross_entropy(model, x, y),
        steps=2,
        lr=0.01,
        eval_every=1,
        evaluate=lambda: grads.append(torch.is_grad_enabled()),
    )
    assert grads == [False, False]
    model.eval()
    ignored = torch.full_like(y, -1)
    ignored[:, 0] = y[:, 0]
    logits = model(x[:, :1]).flatten(0, 1)  # (B, 5): only position 0 counts
    want = torch.nn.functional.cross_entropy(logits, y[:, 0])
    assert torch.allclose(token_cross_entropy(model, x, ignored, ignore_index=-1), want)


def _train_fixed(schedule=None, **flat):
    model, x, y = _model_and_data()
    loss = lambda: batch_loss(model, lambda: (x, y))  # noqa: E731
    return train_adam(model, loss, schedule, evaluate=lambda: held_out_loss(model, x, y), **flat)


def test_train_adam_takes_a_schedule_or_the_flat_settings():
    flat = _train_fixed(steps=4, lr=0.05, eval_every=2)
    assert flat == _train_fixed(Schedule(steps=4, batch=6, lr=0.05, eval_every=2))
    with pytest.raises(TypeError, match="a schedule or steps, lr and eval_every, not both"):
        _train_fixed(Schedule(steps=4, lr=0.05, eval_every=2), lr=0.1)
    with pytest.raises(TypeError, match="steps must be an int; got NoneType"):
        _train_fixed(lr=0.1, eval_every=2)
