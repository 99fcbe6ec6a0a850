"""A tiny Transformer built from our blocks learns to count: "how many times does my token occur?"

Task ("histogram", Weiss et al., 2021): a sequence of ``T`` random letters from a vocabulary of
``V``; at every position the model outputs how often that position's letter occurs in the whole
sequence (1 to ``T``). For ``a b a c a`` the answer is ``3 1 3 1 3``. A token cannot answer
alone: it has to find the other copies of itself, which is what attention is for. The answer does
not depend on the order of the tokens, so the model needs no positional information (chapter 5):
token embeddings -> ``n_layers`` :class:`~course_utils.transformer.TransformerBlock` s ->
LayerNorm -> a linear layer over the counts.

Runs are seeded and deterministic (one thread, deterministic algorithms): the same call returns
the same numbers on the same machine and PyTorch version.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

import torch
from torch import Tensor, nn

from .._determinism import deterministic as _deterministic
from .._shared_results import shared_result
from .._training import ExperimentConfig, batch_loss, held_out_loss, train_adam, with_settings
from ..transformer import BlockTrace, TransformerBlock, TransformerSize

__all__ = [
    "CountingConfig",
    "CountingModel",
    "CountingRun",
    "decode",
    "encode",
    "make_batch",
    "train_counting",
]

LETTERS = string.ascii_lowercase


@dataclass(frozen=True, kw_only=True)
class CountingConfig(ExperimentConfig):
    """Everything :func:`train_counting` can be told, with its defaults (the chapter's run).

    Sequences of ``T`` letters out of ``V``; the blocks' size; dropout and pre-LN (``norm_first``)
    of the blocks; the training schedule. Change one setting with :func:`dataclasses.replace`, or
    pass it to :func:`train_counting` as a keyword.

    >>> config = CountingConfig()
    >>> config.d_model, config.steps, config.norm_first
    (16, 300, True)
    >>> from dataclasses import replace
    >>> TransformerSize.of(replace(config, d_model=8))
    TransformerSize(d_model=8, n_heads=4, d_ff=64, n_layers=2)
    """

    V: int = 6  # letters
    T: int = 10  # letters per sequence
    d_model: int = 16
    n_heads: int = 4
    d_ff: int = 64
    n_layers: int = 2
    dropout: float = 0.0
    norm_first: bool = True
    steps: int = 300
    batch: int | None = 64
    lr: float = 5e-3
    eval_every: int = 50


def make_batch(batch: int, T: int, V: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Tokens ``(batch, T)`` in ``0..V-1`` and targets ``(batch, T)``: the count of each token.

    >>> x, y = make_batch(1, 6, 3, torch.Generator().manual_seed(0))
    >>> bool((y == (x[:, :, None] == x[:, None, :]).sum(-1)).all())
    True
    """
    x = torch.randint(0, V, (batch, T), generator=generator)  # (B, T)
    y = (x[:, :, None] == x[:, None, :]).sum(dim=-1)  # (B, T): copies of x[i] in the row, >= 1
    return x, y


def encode(text: str) -> Tensor:
    """``"abca"`` -> ``tensor([[0, 1, 2, 0]])`` (B = 1); letters only."""
    if not isinstance(text, str) or not text or any(c not in LETTERS for c in text):
        raise ValueError(f"text must be a non-empty string of lowercase letters; got {text!r}")
    return torch.tensor([[LETTERS.index(c) for c in text]])  # (1, T)


def decode(x: Tensor) -> list[str]:
    """Token ids ``(T,)`` -> letters."""
    return [LETTERS[int(i)] for i in x]


class CountingModel(nn.Module):
    """Embeddings -> ``n_layers`` blocks (pre-LN by default) -> LayerNorm -> logits over counts."""

    def __init__(
        self, V: int, T: int, *, d_model: int = 16, n_heads: int = 4, d_ff: int = 64,
        n_layers: int = 2, dropout: float = 0.0, norm_first: bool = True,
    ) -> None:  # fmt: skip
        super().__init__()
        if not 1 <= V <= len(LETTERS):
            raise ValueError(f"V must be between 1 and {len(LETTERS)}; got {V}")
        self.V, self.T = V, T
        self.embed = nn.Embedding(V, d_model)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, T + 1)  # class c = "occurs c times" (0 never happens)

    def forward(self, x: Tensor) -> Tensor:
        h = self.embed(x)  # (B, T, d_model)
        for block in self.blocks:
            h = block(h)  # (B, T, d_model)
        return self.head(self.norm(h))  # (B, T, T + 1)

    def traces(self, x: Tensor) -> list[BlockTrace]:
        """Every block's intermediates (:meth:`TransformerBlock.trace`) for tokens ``x``."""
        h = self.embed(x)  # (B, T, d_model)
        out = []
        for block in self.blocks:
            out.append(block.trace(h))
            h = out[-1].out  # (B, T, d_model)
        return out

    def predict(self, x: Tensor) -> Tensor:
        """The predicted count at every position, ``(B, T)``."""
        with torch.no_grad():
            return self(x).argmax(dim=-1)  # (B, T)


def _test_loss(model: CountingModel, x: Tensor, y: Tensor) -> float:
    """Mean cross-entropy (nats) of ``model`` on tokens ``x`` and counts ``y``, both ``(B, T)``."""
    model.eval()
    with torch.no_grad():
        return held_out_loss(model, x, y)  # logits (B, T, T + 1)


@dataclass(frozen=True)
class CountingRun:
    seed: int
    steps: list[int]  # the steps at which the test loss was measured (0 = before training)
    losses: list[float]  # test loss (cross-entropy, nats) at those steps
    accuracy: float  # final test accuracy over all positions
    model: CountingModel


@shared_result  # trained once per test session (see _shared_results)
def train_counting(
    seeds: Sequence[int] = (0, 1, 2),
    *,
    config: CountingConfig | None = None,
    **settings: Any,
) -> list[CountingRun]:
    """Train one :class:`CountingModel` per seed with Adam; return the test curve and accuracy.

    ``config`` (a :class:`CountingConfig`; by default the chapter's) holds the settings; each
    keyword replaces one: ``V``, ``T``, ``d_model``, ``n_heads``, ``d_ff``, ``n_layers``,
    ``dropout``, ``norm_first``, ``steps``, ``batch``, ``lr``, ``eval_every``. The test set (512
    sequences) is the same for every seed; each seed has its own initialisation and batches.

    >>> runs = train_counting(seeds=(0,), steps=2, eval_every=1, batch=4)
    >>> runs[0].steps, len(runs[0].losses)            # step 0: before training
    ([0, 1, 2], 3)
    """
    cfg = with_settings(CountingConfig, config, settings, "train_counting")
    V, T, schedule = cfg.V, cfg.T, cfg.schedule
    runs = []
    with _deterministic():
        test_x, test_y = make_batch(512, T, V, torch.Generator().manual_seed(12345))
        for seed in seeds:
            torch.manual_seed(seed)
            model = CountingModel(
                V,
                T,
                **asdict(TransformerSize.of(cfg)),
                dropout=cfg.dropout,
                norm_first=cfg.norm_first,
            )
            data = torch.Generator().manual_seed(1000 + seed)
            next_batch = partial(make_batch, schedule.batch, T, V, data)  # (B, T) x 2
            at, losses = train_adam(  # at step 0 the test loss is about ln(T + 1)
                model,
                partial(batch_loss, model, next_batch),
                schedule,
                evaluate=partial(_test_loss, model, test_x, test_y),
                at_start=True,
                at_end=True,
                train_mode=True,
            )
            model.eval()
            accuracy = float((model.predict(test_x) == test_y).float().mean())
            runs.append(CountingRun(seed, at, losses, accuracy, model))
    return runs
