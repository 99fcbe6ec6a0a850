"""Does the model need positions? The same tiny model with none, sinusoidal, learned or RoPE.

Task ("previous token"): a sequence of ``T`` random tokens from a vocabulary of ``V``; at every
position ``i >= 1`` the model must output the token at position ``i - 1`` (position 0 has no
target). The answer is fixed by word order alone: without positional information a bidirectional
self-attention layer sees a *set* of tokens (it is permutation-equivariant), so it cannot know
which token came just before.

The model: token embedding (+ positions, for ``"sinusoidal"`` and ``"learned"``) -> one
single-head self-attention layer (for ``"rope"`` the queries and keys are rotated with
:func:`course_utils.positions.apply_rope`) -> residual -> LayerNorm -> linear read-out to ``V``
classes. No causal mask: a causal mask alone leaks position information (a token can count how many
tokens it sees), which would blur the comparison.

After training on length ``T`` every model is also tested on longer sequences (``T_long``). A
learned table has no row for positions past ``T - 1``, so that test is not possible for it
(reported as ``None``): the reason learned absolute embeddings cannot go past the trained length.

:func:`run_rope_scaling_experiment` takes the RoPE model further: trained on ``T`` tokens, it is
tested on ``s T`` tokens with its frequencies left alone or changed the way a model config's
``rope_scaling`` changes them (:func:`course_utils.positions.rope_inverse_frequencies`: position
interpolation, dynamic NTK, YaRN), with no further training.

The run is seeded and deterministic (``torch.use_deterministic_algorithms``, one thread).
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
from ..attention import default_scale
from ..positions import apply_rope, rope_inverse_frequencies, sinusoidal_encoding

__all__ = [
    "KINDS",
    "SCALINGS",
    "PositionResult",
    "PositionsConfig",
    "PreviousTokenModel",
    "ScalingResult",
    "make_previous_token_batch",
    "rope_scaling_for",
    "run_positions_experiment",
    "run_rope_scaling_experiment",
]

#: The four variants, in the order the chapter reports them.
KINDS = ("none", "sinusoidal", "learned", "rope")
IGNORE = -100  # target of position 0 (no previous token); cross_entropy skips it


@dataclass(frozen=True, kw_only=True)
class PositionsConfig(ExperimentConfig):
    """Everything :func:`run_positions_experiment` can be told, with its defaults.

    Training sequences of ``T`` tokens out of ``V``, the longer test sequences' ``T_long``, the
    model's width ``d_model`` (one head), and the training schedule.

    >>> PositionsConfig().schedule
    Schedule(steps=300, batch=64, lr=0.01, eval_every=50)
    """

    steps: int = 300
    batch: int | None = 64
    lr: float = 1e-2
    eval_every: int = 50
    V: int = 8  # vocabulary
    T: int = 12  # tokens per training sequence
    T_long: int = 24  # tokens per longer test sequence
    d_model: int = 16


def make_previous_token_batch(
    batch: int, T: int, V: int, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    """Tokens and targets, both ``(batch, T)``: ``y[:, i] = x[:, i - 1]``; ``y[:, 0]`` is ignored.

    >>> x, y = make_previous_token_batch(1, 4, 5, torch.Generator().manual_seed(0))
    >>> bool((y[0, 1:] == x[0, :-1]).all()), int(y[0, 0])
    (True, -100)
    """
    x = torch.randint(0, V, (batch, T), generator=generator)  # (B, T)
    y = torch.full_like(x, IGNORE)  # (B, T)
    y[:, 1:] = x[:, :-1]  # (B, T-1): the previous token
    return x, y


class PreviousTokenModel(nn.Module):
    """Embedding (+ positions) -> one self-attention head (RoPE optional) -> LayerNorm -> ``V``."""

    def __init__(self, kind: str, V: int, T: int, d_model: int) -> None:
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
        self.kind, self.T, self.d_model = kind, T, d_model
        self.tok = nn.Embedding(V, d_model)
        if kind == "learned":
            self.pos = nn.Embedding(T, d_model)  # one trained row per position 0..T-1
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)
        self.W_O = nn.Linear(d_model, d_model)
        self.norm = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, V)
        # RoPE's frequencies (None: base 10000, as trained) and YaRN's attention factor; set only
        # to test a trained "rope" model with scaled frequencies
        self.rope_inv_freq: Tensor | None = None
        self.rope_attention_factor = 1.0

    def embed(self, x: Tensor) -> Tensor:
        T = x.size(1)
        h = self.tok(x)  # (B, T, d_model)
        if self.kind == "sinusoidal":
            pe = torch.from_numpy(sinusoidal_encoding(T, self.d_model)).float()  # (T, d_model)
            h = h + pe
        elif self.kind == "learned":
            if T > self.T:
                raise ValueError(
                    f"a learned position table has rows for positions 0..{self.T - 1} only; "
                    f"got a sequence of T = {T}"
                )
            h = h + self.pos(torch.arange(T))  # (B, T, d_model)
        return h

    def weights(self, x: Tensor) -> Tensor:
        """Attention weights ``(B, T, T)`` of the single head."""
        h = self.embed(x)  # (B, T, d_model)
        q, k = self.W_Q(h), self.W_K(h)  # (B, T, d_model) each
        if self.kind == "rope":
            # positions 0..T-1; the attention factor multiplies cos and sin, so q and k alike
            factor, inv_freq = self.rope_attention_factor, self.rope_inv_freq
            q = apply_rope(q, inv_freq=inv_freq) * factor  # (B, T, d_model)
            k = apply_rope(k, inv_freq=inv_freq) * factor  # (B, T, d_model)
        scores = q @ k.transpose(-2, -1) * default_scale(self.d_model)  # (B, T, T)
        return torch.softmax(scores, dim=-1)  # (B, T, T)

    def forward(self, x: Tensor) -> Tensor:
        h = self.embed(x)  # (B, T, d_model)
        mixed = self.weights(x) @ self.W_V(h)  # (B, T, d_model)
        h = h + self.W_O(mixed)  # (B, T, d_model)
        return self.out(self.norm(h))  # (B, T, V)


@dataclass(frozen=True)
class PositionResult:
    kind: str
    seed: int
    n_params: int  # all parameters of the model
    n_position_params: int  # parameters spent on positions (the learned table), else 0
    losses: list[float]  # test loss every ``eval_every`` steps
    accuracy: float  # test accuracy at the trained length (positions 1..T-1)
    accuracy_long: float | None  # test accuracy on length ``T_long``; None for "learned"


def _accuracy(model: PreviousTokenModel, x: Tensor, y: Tensor) -> float:
    keep = y != IGNORE  # (B, T)
    pred = model(x).argmax(-1)  # (B, T)
    return float((pred[keep] == y[keep]).float().mean())


@shared_result  # trained once per test session (see _shared_results)
def run_positions_experiment(
    kinds: Sequence[str] = KINDS,
    seeds: Sequence[int] = (0, 1),
    *,
    config: PositionsConfig | None = None,
    **settings: Any,
) -> list[PositionResult]:
    """Train one model per ``(kind, seed)`` on the previous-token task; return test results.

    Settings: ``config``, a :class:`PositionsConfig` (the defaults if omitted), with any of
    ``V``, ``T``, ``T_long``, ``d_model``, ``steps``, ``batch``, ``lr``, ``eval_every`` given as a
    keyword in its place.

    >>> r = run_positions_experiment(("none", "learned"), seeds=(0,), steps=2, eval_every=1)
    >>> [(x.kind, len(x.losses), x.accuracy_long is None) for x in r]
    [('none', 2, False), ('learned', 2, True)]
    """
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"kinds must hold names from {KINDS}; got {kind!r}")
    cfg = with_settings(PositionsConfig, config, settings, "run_positions_experiment")
    V, T, d_model = cfg.V, cfg.T, cfg.d_model
    results = []
    with _deterministic():
        test_x, test_y = make_previous_token_batch(1024, T, V, torch.Generator().manual_seed(99))
        long_x, long_y = make_previous_token_batch(
            512, cfg.T_long, V, torch.Generator().manual_seed(7)
        )
        for kind in kinds:
            for seed in seeds:
                torch.manual_seed(seed)
                model = PreviousTokenModel(kind, V, T, d_model)
                data = torch.Generator().manual_seed(1000 + seed)  # same batches for every kind
                next_batch = partial(make_previous_token_batch, cfg.schedule.batch, T, V, data)
                _, losses = train_adam(
                    model,
                    partial(batch_loss, model, next_batch, IGNORE),  # (B, T) x 2 a step
                    cfg.schedule,
                    evaluate=partial(held_out_loss, model, test_x, test_y, IGNORE),
                )
                with torch.no_grad():
                    accuracy = _accuracy(model, test_x, test_y)
                    long = None if kind == "learned" else _accuracy(model, long_x, long_y)
                results.append(
                    PositionResult(
                        kind=kind,
                        seed=seed,
                        n_params=sum(p.numel() for p in model.parameters()),
                        n_position_params=T * d_model if kind == "learned" else 0,
                        losses=losses,
                        accuracy=accuracy,
                        accuracy_long=long,
                    )
                )
    return results


# --------------------------------------------------------------------------------------------
# Longer than trained: RoPE with the scaled frequencies of a model config's rope_scaling
# --------------------------------------------------------------------------------------------

#: What :func:`run_rope_scaling_experiment` compares: RoPE left alone, and three ``rope_type``s.
SCALINGS = ("none", "linear", "dynamic", "yarn")


def rope_scaling_for(scaling: str, factor: float, T: int) -> dict[str, Any] | None:
    """The ``rope_scaling`` dict of a config that stretches a context of ``T`` by ``factor``.

    As configs write them: ``factor`` for every type and, for YaRN, the trained length ``T`` as
    ``original_max_position_embeddings`` (its ``beta_fast`` and ``beta_slow`` are left at the
    paper's 32 and 1). ``"none"`` is ``None``: plain RoPE.

    >>> rope_scaling_for("yarn", 2.0, 12)
    {'rope_type': 'yarn', 'factor': 2.0, 'original_max_position_embeddings': 12}
    >>> rope_scaling_for("none", 2.0, 12) is None
    True
    """
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}; got {scaling!r}")
    if scaling == "none":
        return None
    params: dict[str, Any] = {"rope_type": scaling, "factor": float(factor)}
    if scaling == "yarn":
        params["original_max_position_embeddings"] = T
    return params


@dataclass(frozen=True)
class ScalingResult:
    seed: int
    scaling: str  # one of SCALINGS
    factor: int  # the test sequences are factor * T tokens long
    accuracy: float  # previous-token accuracy on them (positions 1..factor*T - 1)


@shared_result  # trained once per test session (see _shared_results)
def run_rope_scaling_experiment(
    seeds: Sequence[int] = (0, 1, 2),
    factors: Sequence[int] = (2, 4),
    scalings: Sequence[str] = SCALINGS,
    *,
    config: PositionsConfig | None = None,
    **settings: Any,
) -> list[ScalingResult]:
    """Train the ``"rope"`` model on ``T`` tokens, test it on ``s T`` tokens with each scaling.

    One model per seed, trained exactly as :func:`run_positions_experiment` trains its ``"rope"``
    model (same seeds, batches and settings, so the same weights). Each is then tested, without
    any further training, on 512 sequences of ``s T`` tokens for every ``s`` in ``factors``: with
    plain RoPE (``"none"``) and with the frequencies (and YaRN's attention factor) that
    :func:`rope_scaling_for` gives, from :func:`~course_utils.positions.rope_inverse_frequencies`
    (dynamic NTK computed for the test length ``s T``, the trained length being ``T``). With
    ``s = 2`` the test sequences are those of ``run_positions_experiment``'s default
    ``T_long = 2 T``. Settings as in :func:`run_positions_experiment`; ``T_long`` is not read.

    >>> r = run_rope_scaling_experiment(seeds=(0,), factors=(2,), steps=2, eval_every=1)
    >>> [(x.scaling, x.factor) for x in r]
    [('none', 2), ('linear', 2), ('dynamic', 2), ('yarn', 2)]
    """
    for scaling in scalings:
        if scaling not in SCALINGS:
            raise ValueError(f"scalings must hold names from {SCALINGS}; got {scaling!r}")
    for factor in factors:
        if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
            raise ValueError(
                f"factors must hold whole numbers >= 1 (test length / T); got {factor!r}"
            )
    cfg = with_settings(PositionsConfig, config, settings, "run_rope_scaling_experiment")
    V, T, d_model = cfg.V, cfg.T, cfg.d_model
    results = []
    with _deterministic():
        test_x, test_y = make_previous_token_batch(1024, T, V, torch.Generator().manual_seed(99))
        tests = {  # the same long sequences for every seed and scaling
            s: make_previous_token_batch(512, s * T, V, torch.Generator().manual_seed(7))
            for s in factors
        }
        for seed in seeds:
            torch.manual_seed(seed)
            model = PreviousTokenModel("rope", V, T, d_model)
            data = torch.Generator().manual_seed(1000 + seed)  # as run_positions_experiment's
            next_batch = partial(make_previous_token_batch, cfg.schedule.batch, T, V, data)
            train_adam(
                model,
                partial(batch_loss, model, next_batch, IGNORE),  # (B, T) x 2 a step
                cfg.schedule,
                evaluate=partial(held_out_loss, model, test_x, test_y, IGNORE),
            )
            for s, (long_x, long_y) in tests.items():
                for scaling in scalings:
                    inv_freq, attention_factor = rope_inverse_frequencies(
                        d_model,
                        10000.0,  # the base apply_rope's default gave the model in training
                        rope_scaling_for(scaling, s, T),
                        max_position_embeddings=T,
                        seq_len=s * T,
                    )
                    model.rope_inv_freq = inv_freq
                    model.rope_attention_factor = attention_factor
                    with torch.no_grad():
                        accuracy = _accuracy(model, long_x, long_y)
                    results.append(ScalingResult(seed, scaling, s, accuracy))
    return results
