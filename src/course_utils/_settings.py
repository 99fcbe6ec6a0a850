"""An experiment's settings: small frozen dataclasses grouped by meaning, composed into one config.

Every seeded experiment of the course has one ``...Config`` (``CountingConfig``, ``HeadsConfig``,
...) that holds its defaults in one place. Its fields are either its own settings or groups shared
between experiments, each defined once: the training :class:`~course_utils._training.Schedule`
(steps, batch, lr, eval_every), the :class:`~course_utils.transformer.TransformerSize` (d_model,
n_heads, d_ff, n_layers) and the :class:`Sequences` of a token task (V, T). The chapters call the
experiments with flat keywords (``train_counting(seeds=(0,), dropout=0.1)``); :func:`configure`
puts each keyword in the group that holds it, and names an unknown one. Each group has a
``TypedDict`` twin (``SequenceSettings``, ...) that types those keywords
(``**settings: Unpack[...]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, TypedDict, TypeVar

__all__ = ["SequenceSettings", "Sequences", "configure", "setting_names"]

C = TypeVar("C")


@dataclass(frozen=True)
class Sequences:
    """The data of a token task: random sequences of ``T`` tokens from a vocabulary of ``V``.

    >>> Sequences(V=6, T=10)
    Sequences(V=6, T=10)
    """

    V: int
    T: int


class SequenceSettings(TypedDict, total=False):
    """The :class:`Sequences` fields as flat keywords."""

    V: int
    T: int


def setting_names(config: Any) -> list[str]:
    """The flat names of a settings dataclass: its own fields, and those of its groups (fields that
    are dataclasses themselves), in order.

    >>> from course_utils._training import Schedule
    >>> setting_names(Schedule(steps=10, lr=0.1, eval_every=5))
    ['steps', 'batch', 'lr', 'eval_every']
    """
    names: list[str] = []
    for f in fields(config):
        value = getattr(config, f.name)
        names += setting_names(value) if is_dataclass(value) else [f.name]
    return names


def _replaced(config: C, settings: Mapping[str, object]) -> C:
    changes: dict[str, object] = {}
    for f in fields(config):  # type: ignore[arg-type]
        value = getattr(config, f.name)
        if is_dataclass(value):
            group = {k: v for k, v in settings.items() if k in setting_names(value)}
            if group:
                changes[f.name] = _replaced(value, group)
        elif f.name in settings:
            changes[f.name] = settings[f.name]
    return replace(config, **changes)  # type: ignore[type-var]


def configure(kind: type[C], config: C | None, settings: Mapping[str, object], caller: str) -> C:
    """``config`` (default ``kind()``, the experiment's defaults) with the flat ``settings`` put in
    the group that holds each name; an unknown name is a ``TypeError`` that lists the valid ones.

    >>> @dataclass(frozen=True)
    ... class Toy:
    ...     width: int = 8
    ...     data: Sequences = Sequences(V=6, T=10)
    >>> configure(Toy, None, {"T": 20, "width": 4}, "train_toy")
    Toy(width=4, data=Sequences(V=6, T=20))
    >>> configure(Toy, None, {"t": 20}, "train_toy")
    Traceback (most recent call last):
    ...
    TypeError: train_toy() got an unknown setting 't'; the settings are: width, V, T
    """
    if config is None:
        config = kind()
    elif not isinstance(config, kind):
        raise TypeError(f"{caller}() config must be a {kind.__name__}; got {type(config).__name__}")
    names = setting_names(config)
    for name in settings:
        if name not in names:
            raise TypeError(
                f"{caller}() got an unknown setting {name!r}; the settings are: " + ", ".join(names)
            )
    return _replaced(config, settings) if settings else config
