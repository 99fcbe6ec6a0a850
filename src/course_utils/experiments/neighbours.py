"""One head or several? A small synthetic task that needs two relations at once.

Task ("neighbours"): a sequence of ``T`` random tokens from a vocabulary of ``V``; at every position
``i`` the model must output the ordered pair ``(x[i-1], x[i+1])`` (cyclic), one class out of ``V²``.
The only way information moves between positions is one attention layer, so each position has to
fetch two different tokens: its left and its right neighbour. ``h`` heads can give one neighbour
to each head; a single head has one softmax and must mix both into one weighted average.

Every model has the same width ``d_model`` and hence exactly the same number of parameters; only
``n_heads`` (and so ``d_k = d_model / n_heads``) changes, as in Vaswani et al. (2017), Table 3 (A).

The run is seeded and deterministic (``torch.use_deterministic_algorithms``, one thread): the same
call returns the same numbers on the same machine and PyTorch version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from torch import Tensor, nn

from .._determinism import deterministic as _deterministic
from .._shared_results import shared_result
from .._training import ExperimentConfig, batch_loss, held_out_loss, train_adam, with_settings
from ..multihead import MultiHeadAttention

__all__ = [
    "HeadsConfig",
    "HeadsResult",
    "NeighboursModel",
    "make_batch",
    "run_heads_experiment",
]


@dataclass(frozen=True, kw_only=True)
class HeadsConfig(ExperimentConfig):
    """Everything :func:`run_heads_experiment` can be told besides the head counts and seeds.

    The width ``d_model`` shared by every head count, the sequences (``T`` tokens out of ``V``),
    and the training schedule (Adam's fused kernel).

    >>> HeadsConfig().d_model, HeadsConfig().steps
    (8, 600)
    """

    steps: int = 600
    batch: int | None = 64
    lr: float = 3e-3
    eval_every: int = 100
    d_model: int = 8
    V: int = 8  # vocabulary
    T: int = 12  # tokens per sequence


def make_batch(batch: int, T: int, V: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Tokens ``(batch, T)`` and targets ``(batch, T)`` = ``V * x[i-1] + x[i+1]`` (cyclic).

    >>> x, y = make_batch(1, 4, 3, torch.Generator().manual_seed(0))
    >>> bool((y == 3 * x.roll(1, dims=1) + x.roll(-1, dims=1)).all())
    True
    """
    x = torch.randint(0, V, (batch, T), generator=generator)  # (B, T)
    y = V * x.roll(1, dims=1) + x.roll(-1, dims=1)  # (B, T): (left, right) neighbour pair
    return x, y


class NeighboursModel(nn.Module):
    """Embedding + position -> one multi-head self-attention layer -> MLP -> ``V²`` classes."""

    def __init__(self, V: int, T: int, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(V, d_model)
        self.pos = nn.Parameter(torch.randn(T, d_model) * 0.5)
        self.attn = MultiHeadAttention(d_model, n_heads)
        self.mlp = nn.Sequential(
            nn.LayerNorm(d_model),
            nn.Linear(d_model, 4 * d_model),
            nn.ReLU(),
            nn.Linear(4 * d_model, V * V),
        )

    def forward(self, x: Tensor) -> Tensor:
        h = self.tok(x) + self.pos  # (B, T, d_model)
        h = h + self.attn(h, h, h)  # (B, T, d_model)
        return self.mlp(h)  # (B, T, V*V)


@dataclass(frozen=True)
class HeadsResult:
    n_heads: int
    d_k: int
    seed: int
    n_params: int
    losses: list[float]  # test loss every ``eval_every`` steps
    accuracy: float  # final test accuracy over all positions
    offset_weights: list[list[float]]  # (n_heads, T): mean weight on key i + offset, offset 0..T-1

    def weight_at(self, head: int, offset: int) -> float:
        """Mean weight that ``head`` puts on the key ``offset`` positions away (-1 = left)."""
        return self.offset_weights[head][offset % len(self.offset_weights[head])]


def _offset_weights(model: NeighboursModel, x: Tensor) -> Tensor:
    """Mean attention weight of each head on the key ``(i + offset) mod T``: ``(n_heads, T)``."""
    h = model.tok(x) + model.pos  # (B, T, d_model)
    _, w = model.attn(h, h, h, return_weights=True)  # (B, n_heads, T, T)
    T = x.size(1)
    i = torch.arange(T)[:, None]  # (T, 1)
    offset = torch.arange(T)[None, :]  # (1, T)
    cols = (i + offset) % T  # (T, T): key index of query i at each offset
    rolled = w.gather(-1, cols.expand(*w.shape[:2], T, T))  # (B, n_heads, T, T) by offset
    return rolled.mean(dim=(0, 2))  # (n_heads, T)


@shared_result  # trained once per test session (see _shared_results)
def run_heads_experiment(
    n_heads_list: Sequence[int] = (1, 2, 4, 8),
    seeds: Sequence[int] = (0, 1),
    *,
    config: HeadsConfig | None = None,
    **settings: Any,
) -> list[HeadsResult]:
    """Train one model per ``(n_heads, seed)`` on the neighbours task; return their test results.

    ``config`` is a :class:`HeadsConfig` (the defaults if None); a keyword changes one of its
    settings (``d_model``, ``V``, ``T``, ``steps``, ``batch``, ``lr`` or ``eval_every``), as in
    ``run_heads_experiment(n_heads_list=(1, 4), seeds=(0,), d_model=32)``.

    >>> r = run_heads_experiment((1, 2), seeds=(0,), steps=2, eval_every=1, batch=4)
    >>> [(x.n_heads, x.d_k, x.n_params == r[0].n_params, len(x.losses)) for x in r]
    [(1, 8, True, 2), (2, 4, True, 2)]
    """
    cfg = with_settings(HeadsConfig, config, settings, "run_heads_experiment")
    V, T = cfg.V, cfg.T  # vocabulary, tokens per sequence
    results = []
    with _deterministic():
        test_x, test_y = make_batch(2048, T, V, torch.Generator().manual_seed(12345))
        for n_heads in n_heads_list:
            for seed in seeds:
                torch.manual_seed(seed)
                model = NeighboursModel(V, T, cfg.d_model, n_heads)
                data = torch.Generator().manual_seed(1000 + seed)  # same batches for every n_heads
                next_batch = partial(make_batch, cfg.schedule.batch, T, V, data)  # (B, T) x 2
                _, losses = train_adam(
                    model,
                    partial(batch_loss, model, next_batch),
                    cfg.schedule,
                    evaluate=partial(held_out_loss, model, test_x, test_y),  # logits (2048, T, V*V)
                    fused=True,
                )
                with torch.no_grad():
                    accuracy = float((model(test_x).argmax(-1) == test_y).float().mean())
                    offsets = _offset_weights(model, test_x)  # (n_heads, T)
                results.append(
                    HeadsResult(
                        n_heads=n_heads,
                        d_k=cfg.d_model // n_heads,
                        seed=seed,
                        n_params=sum(p.numel() for p in model.parameters()),
                        losses=losses,
                        accuracy=accuracy,
                        offset_weights=offsets.tolist(),
                    )
                )
    return results
