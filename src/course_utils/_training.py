"""The training loop of the chapters' seeded experiments: Adam, one batch a step, a test every k.

One home for what every small experiment of the course repeats (the previous-token and
neighbours tasks, counting, word reversal, the topic classifier): build Adam, take ``steps``
steps of ``zero_grad, backward, step``, and measure the model on held-out data every
``eval_every`` steps. What differs between them is passed in: the loss of one training batch and
the measurement. The caller seeds the model, the batches and :func:`course_utils._determinism.
deterministic` around it, so the numbers are the same on every run.

>>> import torch
>>> _ = torch.manual_seed(0)
>>> model = torch.nn.Linear(1, 1, bias=False)
>>> x = torch.ones(4, 1)
>>> loss = lambda: ((model(x) - 2.0) ** 2).mean()
>>> steps, losses = train_adam(
...     model, loss, steps=4, lr=0.1, eval_every=2, evaluate=lambda: float(loss()), at_start=True
... )
>>> steps, losses[0] > losses[-1]
([0, 2, 4], True)

How long and how fast an experiment trains is its :class:`Schedule`. Each experiment has one flat
frozen ``...Config`` dataclass holding every setting (the schedule's four among them); the chapters
call it with keywords, which :func:`with_settings` puts in with ``dataclasses.replace``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._determinism import snap_to_float32
from ._validation import check_int, check_positive_finite

__all__ = [
    "ExperimentConfig",
    "Schedule",
    "batch_loss",
    "held_out_loss",
    "token_cross_entropy",
    "train_adam",
    "with_settings",
]

M = TypeVar("M")
C = TypeVar("C")


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """How long and how fast an experiment trains: ``steps`` Adam steps of ``batch`` examples at
    learning rate ``lr``, measured on held-out data every ``eval_every`` steps.

    ``batch=None`` means the whole training set at every step (full batch). The values are checked
    when the schedule is made, so a wrong one is named before any training starts.

    >>> Schedule(steps=300, batch=64, lr=5e-3, eval_every=50).lr
    0.005
    >>> Schedule(steps=0, lr=0.1, eval_every=1)
    Traceback (most recent call last):
    ...
    ValueError: steps must be >= 1; got 0
    """

    steps: int
    batch: int | None = None
    lr: float
    eval_every: int

    def __post_init__(self) -> None:
        check_int(self.steps, "steps", low=1)
        if self.batch is not None:
            check_int(self.batch, "batch", low=1)
        check_positive_finite(self.lr, "lr")
        check_int(self.eval_every, "eval_every", low=1)


def with_settings(kind: type[C], config: C | None, settings: Mapping[str, Any], caller: str) -> C:
    """``config`` (default ``kind()``: the experiment's defaults) with each keyword of ``settings``
    replaced (``dataclasses.replace``, so the config checks itself again); an unknown name is a
    ``TypeError`` that lists the valid ones.

    >>> @dataclass(frozen=True)
    ... class Toy:
    ...     width: int = 8
    ...     steps: int = 10
    >>> with_settings(Toy, None, {"steps": 20}, "train_toy")
    Toy(width=8, steps=20)
    >>> with_settings(Toy, None, {"step": 20}, "train_toy")
    Traceback (most recent call last):
    ...
    TypeError: train_toy() got an unknown setting 'step'; the settings are: width, steps
    """
    if config is None:
        config = kind()
    elif not isinstance(config, kind):
        raise TypeError(f"{caller}() config must be a {kind.__name__}; got {type(config).__name__}")
    names = [f.name for f in fields(config)]  # type: ignore[arg-type]
    for name in settings:
        if name not in names:
            raise TypeError(
                f"{caller}() got an unknown setting {name!r}; the settings are: " + ", ".join(names)
            )
    return replace(config, **settings) if settings else config  # type: ignore[type-var]


@dataclass(frozen=True, kw_only=True)
class ExperimentConfig:
    """What every experiment's flat config has: the schedule's four fields, checked when the config
    is made (by keyword or by ``dataclasses.replace``). A subclass declares its own settings and
    the defaults of these four, all as plain fields.

    >>> @dataclass(frozen=True, kw_only=True)
    ... class Toy(ExperimentConfig):
    ...     width: int = 8
    ...     steps: int = 10
    ...     batch: int | None = 4
    ...     lr: float = 0.1
    ...     eval_every: int = 5
    >>> Toy().schedule
    Schedule(steps=10, batch=4, lr=0.1, eval_every=5)
    >>> Toy(steps=0)
    Traceback (most recent call last):
    ...
    ValueError: steps must be >= 1; got 0
    """

    steps: int
    batch: int | None
    lr: float
    eval_every: int

    def __post_init__(self) -> None:
        self.schedule  # noqa: B018 - making the schedule checks the four values

    @property
    def schedule(self) -> Schedule:
        """``steps`` Adam steps of ``batch`` examples at ``lr``, measured every ``eval_every``."""
        return Schedule(steps=self.steps, batch=self.batch, lr=self.lr, eval_every=self.eval_every)


def train_adam(
    model: nn.Module,
    batch_loss: Callable[[], Tensor],
    schedule: Schedule | None = None,
    *,
    evaluate: Callable[[], M],
    steps: int | None = None,
    lr: float | None = None,
    eval_every: int | None = None,
    at_start: bool = False,
    at_end: bool = False,
    train_mode: bool = False,
    linear_decay: bool = False,
    fused: bool = False,
    snap: bool = True,
) -> tuple[list[int], list[M]]:
    """Train ``model`` with Adam; return the steps at which it was measured, and the measurements.

    How long and how fast: a :class:`Schedule` (its ``batch`` is the caller's business: it is in
    ``batch_loss``), or ``steps``, ``lr`` and ``eval_every`` as keywords.

    Each step calls ``batch_loss()`` (the loss of the next training batch, a scalar tensor), then
    ``zero_grad``, ``backward`` and ``step``. ``evaluate()`` runs under ``torch.no_grad()`` after
    every step that is a multiple of ``eval_every``; with ``at_start`` also before the first step
    (step 0), with ``at_end`` also after the last one when ``steps`` is not a multiple.
    ``train_mode`` puts the model in ``train()`` mode before every step (for a measurement that
    switches it to ``eval()``); ``linear_decay`` lowers the learning rate linearly to 0 over the
    steps (``LambdaLR`` with ``1 - s / steps``). ``fused`` uses Adam's fused kernel: the same
    update in one kernel per step (~25% less time per step for the small models here, where the
    per-operation overhead dominates), equal to the default up to rounding. ``snap`` rounds
    float64 weights to float32's grid before the first step and after every step
    (``_determinism.snap_to_float32``), so a run under ``_determinism.deterministic`` gives
    the same numbers on every machine.
    """
    if schedule is None:
        schedule = Schedule(steps=steps, lr=lr, eval_every=eval_every)  # type: ignore[arg-type]
    elif (steps, lr, eval_every) != (None, None, None):
        raise TypeError("train_adam() takes a schedule or steps, lr and eval_every, not both")
    steps, eval_every = schedule.steps, schedule.eval_every
    opt = torch.optim.Adam(model.parameters(), lr=schedule.lr, fused=True if fused else None)
    decay = (
        torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 - s / steps) if linear_decay else None
    )
    at: list[int] = []
    measured: list[M] = []

    def measure(step: int) -> None:
        with torch.no_grad():
            measured.append(evaluate())
        at.append(step)

    if snap:
        snap_to_float32(model)  # the initial weights too
    if at_start:
        measure(0)
    for step in range(1, steps + 1):
        if train_mode:
            model.train()
        loss = batch_loss()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if snap:
            snap_to_float32(model)  # the same weights on every machine (see _determinism)
        if decay is not None:
            decay.step()
        if step % eval_every == 0 or (at_end and step == steps):
            measure(step)
    return at, measured


def token_cross_entropy(model: nn.Module, x: Tensor, y: Tensor, ignore_index: int = -100) -> Tensor:
    """Mean cross-entropy of ``model(x)`` ``(B, T, n_classes)`` against targets ``y`` ``(B, T)``.

    Targets equal to ``ignore_index`` count for nothing (-100 is PyTorch's default).
    """
    logits = model(x)  # (B, T, n_classes)
    return F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=ignore_index)


def batch_loss(
    model: nn.Module, next_batch: Callable[[], tuple[Tensor, Tensor]], ignore_index: int = -100
) -> Tensor:
    """:func:`token_cross_entropy` on the next training batch ``(x, y)`` of ``next_batch()``."""
    return token_cross_entropy(model, *next_batch(), ignore_index=ignore_index)


def held_out_loss(model: nn.Module, x: Tensor, y: Tensor, ignore_index: int = -100) -> float:
    """:func:`token_cross_entropy` of held-out data as a float (call it under ``no_grad``)."""
    return float(token_cross_entropy(model, x, y, ignore_index))
