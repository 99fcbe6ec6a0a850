"""Long-context positions of course_utils.positions against transformers, formulas and properties.

Oracles (none of them ours):

- :func:`rope_inverse_frequencies`: ``transformers``' own RoPE initialisation,
  ``ROPE_INIT_FUNCTIONS[rope_type](config, device, seq_len=...)``, on a ``LlamaConfig`` that
  carries the same ``rope_parameters`` (for ``"default"``,
  ``LlamaRotaryEmbedding.compute_default_rope_parameters``), and ``LlamaRotaryEmbedding`` itself
  (its ``inv_freq`` buffer after a forward pass, which is where dynamic NTK rescales).
- :func:`t5_relative_bucket`: ``T5Attention._relative_position_bucket``, on every relative
  position in ``[-4096, 4096]``.
- :func:`shaw_relative_positions`: the formula of Shaw et al. (2018), ``clip(j - i, -k, k) + k``,
  written as a loop over ``i`` and ``j``.

How the RoPE comparison is made honest. ``transformers`` builds the frequencies in float32
(``torch.arange(...).to(dtype=torch.float)``, ``torch.arange(dim, dtype=torch.float32)`` for
YaRN's ramp); compared with that, any error below ~1e-7 would go unseen. So its unmodified
functions are run a second time with their module's global ``torch`` replaced by
:data:`TORCH_FLOAT64`, a proxy that is ``torch`` in every respect except that ``torch.float`` and
``torch.float32`` name float64: every line of transformers' code runs as written, only in double
precision (its Python-float parts, the bases, the ramp's ends and YaRN's attention factor, are
float64 already). Each comparison checks that the proxy took effect (the result is float64) and
that it changed nothing but precision (the plain float32 run agrees to float32 rounding,
``rtol=1e-5``); ours must then agree with the float64 run to a *relative* 1e-12 on every
frequency (they span 1 down to ~1e-7, so an absolute 1e-12 would say little about the slow pairs)
and on the attention factor.
"""

from __future__ import annotations

import math
import types
from typing import Any
from unittest import mock

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers import LlamaConfig, modeling_rope_utils
from transformers.models.llama import modeling_llama
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
from transformers.models.t5.modeling_t5 import T5Attention

from course_utils.positions import (
    ROPE_TYPES,
    rope_frequencies,
    rope_inverse_frequencies,
    shaw_relative_positions,
    t5_relative_bucket,
)

#: The relative tolerance of every comparison with transformers run in float64.
RTOL = 1e-12

FACTORS = (2.0, 4.0, 8.0, 16.0, 32.0)
HEAD_DIMS = (64, 128)
BASES = (10000.0, 500000.0)
GRID = [(f, d, b) for f in FACTORS for d in HEAD_DIMS for b in BASES]
GRID_IDS = [f"s{f:g}-d{d}-base{b:g}" for f, d, b in GRID]


class _TorchInFloat64(types.ModuleType):
    """``torch``, but ``torch.float`` and ``torch.float32`` are float64 (module docstring)."""

    float = torch.float64
    float32 = torch.float64

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)


TORCH_FLOAT64 = _TorchInFloat64("torch_in_float64")


def llama_config(head_dim: int, base: float, scaling: dict[str, Any] | None, max_pos: int):
    """A LlamaConfig whose rope_parameters are ``scaling`` plus ``rope_theta = base``."""
    params = {"rope_type": "default"} if scaling is None else dict(scaling)  # transformers edits it
    return LlamaConfig(
        hidden_size=2 * head_dim,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=head_dim,
        intermediate_size=8,
        num_hidden_layers=1,
        vocab_size=16,
        max_position_embeddings=max_pos,
        rope_parameters={**params, "rope_theta": base},
    )


def transformers_frequencies(config: Any, seq_len: int | None = None) -> tuple[torch.Tensor, float]:
    """transformers' (inv_freq, attention_factor) for ``config``, computed in float64."""
    rope_type = config.rope_parameters["rope_type"]
    if rope_type == "default":
        module, init = modeling_llama, LlamaRotaryEmbedding.compute_default_rope_parameters
    else:
        module, init = modeling_rope_utils, modeling_rope_utils.ROPE_INIT_FUNCTIONS[rope_type]
    with mock.patch.object(module, "torch", TORCH_FLOAT64):
        inv64, attention64 = init(config, device=None, seq_len=seq_len)
    inv32, attention32 = init(config, device=None, seq_len=seq_len)
    assert inv64.dtype == torch.float64 and inv32.dtype == torch.float32  # the proxy took effect
    torch.testing.assert_close(inv64.to(torch.float32), inv32, rtol=1e-5, atol=0)  # same formula
    assert attention64 == pytest.approx(attention32, rel=1e-6)
    return inv64, float(attention64)


def relative_error(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    return float(((ours - theirs).abs() / theirs.abs()).max())


def assert_matches_transformers(
    head_dim: int,
    base: float,
    scaling: dict[str, Any] | None,
    *,
    max_pos: int,
    seq_len: int | None = None,
) -> float:
    """Ours equals transformers' float64 run to RTOL; returns the worst relative error."""
    theirs, their_attention = transformers_frequencies(
        llama_config(head_dim, base, scaling, max_pos), seq_len
    )
    ours, attention = rope_inverse_frequencies(
        head_dim, base, scaling, max_position_embeddings=max_pos, seq_len=seq_len
    )
    assert ours.dtype == torch.float64 and ours.shape == (head_dim // 2,)
    assert isinstance(attention, float)
    error = relative_error(ours, theirs)
    assert error <= RTOL, f"worst relative error {error:.3g} for {scaling}"
    assert abs(attention - their_attention) <= RTOL * their_attention
    return error


# --------------------------------------------------------------------------------------------
# rope_inverse_frequencies against transformers (float64)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("scaling", [None, {"rope_type": "default"}], ids=["None", "default"])
def test_default_equals_transformers(head_dim, base, scaling):
    assert_matches_transformers(head_dim, base, scaling, max_pos=4096)
    assert rope_inverse_frequencies(head_dim, base, scaling)[1] == 1.0


@pytest.mark.parametrize(("factor", "head_dim", "base"), GRID, ids=GRID_IDS)
def test_linear_equals_transformers(factor, head_dim, base):
    assert_matches_transformers(
        head_dim, base, {"rope_type": "linear", "factor": factor}, max_pos=4096
    )


@pytest.mark.parametrize(("factor", "head_dim", "base"), GRID, ids=GRID_IDS)
def test_dynamic_equals_transformers_at_every_length(factor, head_dim, base):
    """Before, at and beyond the trained length L = 4096 (None = the value at load time)."""
    for seq_len in (None, 100, 4096, 4097, 6000, 3 * 4096, int(factor * 4096), 100_000):
        assert_matches_transformers(
            head_dim,
            base,
            {"rope_type": "dynamic", "factor": factor},
            max_pos=4096,
            seq_len=seq_len,
        )


@pytest.mark.parametrize(("factor", "head_dim", "base"), GRID, ids=GRID_IDS)
def test_yarn_equals_transformers(factor, head_dim, base):
    scaling = {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": 4096}
    assert_matches_transformers(head_dim, base, scaling, max_pos=int(factor * 4096))


YARN_VARIANTS = {
    # DeepSeek-V3's config.json: factor 40, mscale = mscale_all_dim = 1 (attention factor 1)
    "deepseek-v3": (128, 10000.0, {"factor": 40.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                                   "beta_fast": 32, "beta_slow": 1,
                                   "original_max_position_embeddings": 4096}),
    # DeepSeek-V2's: mscale = mscale_all_dim = 0.707
    "deepseek-v2": (64, 10000.0, {"factor": 40.0, "mscale": 0.707, "mscale_all_dim": 0.707,
                                  "original_max_position_embeddings": 4096}),
    "mscale-only": (64, 10000.0, {"factor": 8.0, "mscale": 0.5,
                                  "original_max_position_embeddings": 4096}),
    "mscale-differ": (128, 10000.0, {"factor": 16.0, "mscale": 1.0, "mscale_all_dim": 0.5,
                                     "original_max_position_embeddings": 2048}),
    "attention-factor": (64, 500000.0, {"factor": 4.0, "attention_factor": 1.5,
                                        "original_max_position_embeddings": 8192}),
    "betas": (128, 10000.0, {"factor": 8.0, "beta_fast": 16.0, "beta_slow": 2.0,
                             "original_max_position_embeddings": 4096}),
    "no-truncate": (128, 500000.0, {"factor": 4.0, "truncate": False,
                                    "original_max_position_embeddings": 8192}),
    "equal-betas": (64, 10000.0, {"factor": 4.0, "beta_fast": 4.0, "beta_slow": 4.0,
                                  "truncate": False, "original_max_position_embeddings": 4096}),
    # Qwen2.5's documented long-context setting (the older "type" key), base 1e6
    "qwen2.5-type-key": (128, 1000000.0, {"type": "yarn", "factor": 4.0,
                                          "original_max_position_embeddings": 32768}),
    "factor-1": (64, 10000.0, {"factor": 1.0, "original_max_position_embeddings": 4096}),
}  # fmt: skip


@pytest.mark.parametrize("name", list(YARN_VARIANTS))
def test_yarn_variants_equal_transformers(name):
    head_dim, base, params = YARN_VARIANTS[name]
    scaling = {"rope_type": "yarn", **params} if "type" not in params else dict(params)
    max_pos = int(params["factor"] * params["original_max_position_embeddings"])
    assert_matches_transformers(head_dim, base, scaling, max_pos=max_pos)


def test_yarn_original_length_falls_back_to_max_position_embeddings():
    """Without original_max_position_embeddings both read max_position_embeddings."""
    assert_matches_transformers(128, 10000.0, {"rope_type": "yarn", "factor": 4.0}, max_pos=4096)


@pytest.mark.parametrize(("factor", "head_dim", "base"), GRID, ids=GRID_IDS)
def test_llama3_equals_transformers(factor, head_dim, base):
    scaling = {
        "rope_type": "llama3",
        "factor": factor,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    }
    assert_matches_transformers(head_dim, base, scaling, max_pos=131072)


LLAMA3_VARIANTS = {
    "llama-3.2": (64, 500000.0, 32.0, 1.0, 4.0, 8192),  # Llama 3.2 1B/3B: factor 32
    "other-bands": (128, 500000.0, 8.0, 2.0, 8.0, 8192),
    "short-original": (128, 10000.0, 4.0, 1.0, 4.0, 2048),
    "factor-1": (128, 500000.0, 1.0, 1.0, 4.0, 8192),
}


@pytest.mark.parametrize("name", list(LLAMA3_VARIANTS))
def test_llama3_variants_equal_transformers(name):
    head_dim, base, factor, low, high, original = LLAMA3_VARIANTS[name]
    scaling = {
        "rope_type": "llama3",
        "factor": factor,
        "low_freq_factor": low,
        "high_freq_factor": high,
        "original_max_position_embeddings": original,
    }
    assert_matches_transformers(head_dim, base, scaling, max_pos=131072)


def test_transformers_4_style_rope_scaling_gives_the_same_config():
    """The older config layout (rope_scaling + rope_theta outside, key "type") is read alike."""
    scaling = {"type": "linear", "factor": 4.0}
    config = LlamaConfig(
        hidden_size=128,
        num_attention_heads=2,
        head_dim=64,
        max_position_embeddings=4096,
        rope_theta=500000.0,
        rope_scaling=dict(scaling),
    )
    theirs, _ = transformers_frequencies(config)
    ours, _ = rope_inverse_frequencies(64, 500000.0, scaling)
    assert relative_error(ours, theirs) <= RTOL


@pytest.mark.parametrize(
    "scaling",
    [
        {"rope_type": "linear", "factor": 8.0},
        {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096},
        {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
         "original_max_position_embeddings": 4096},
    ],
    ids=["linear", "yarn", "llama3"],
)  # fmt: skip
def test_the_rotary_module_of_llama_uses_these_frequencies(scaling):
    """End to end: LlamaRotaryEmbedding's buffer and cos/sin scale (float32) are ours."""
    max_pos = 8 * 4096
    rotary = LlamaRotaryEmbedding(llama_config(64, 10000.0, scaling, max_pos))
    ours, attention = rope_inverse_frequencies(
        64, 10000.0, scaling, max_position_embeddings=max_pos
    )
    torch.testing.assert_close(rotary.inv_freq, ours.to(torch.float32), rtol=1e-5, atol=0)
    assert rotary.attention_scaling == pytest.approx(attention, rel=1e-12)


def test_the_rotary_module_rescales_dynamic_ntk_with_the_sequence_length():
    """Dynamic NTK recomputes inv_freq in the forward pass once positions exceed L."""
    scaling = {"rope_type": "dynamic", "factor": 4.0}
    rotary = LlamaRotaryEmbedding(llama_config(64, 10000.0, scaling, 1024))
    x = torch.zeros(1, 1, 64)  # (B, T, d): only its dtype and device are read
    for length in (512, 3000, 5000):
        rotary(x, torch.arange(length)[None, :])  # position_ids (1, T)
        ours, _ = rope_inverse_frequencies(
            64, 10000.0, scaling, max_position_embeddings=1024, seq_len=length
        )
        torch.testing.assert_close(rotary.inv_freq, ours.to(torch.float32), rtol=1e-5, atol=0)


# --------------------------------------------------------------------------------------------
# rope_inverse_frequencies: properties
# --------------------------------------------------------------------------------------------

head_dims = st.sampled_from([8, 16, 32, 64, 128, 256])
bases = st.sampled_from([100.0, 10000.0, 500000.0, 1e6])
factors = st.floats(min_value=1.0, max_value=64.0)
lengths = st.integers(min_value=16, max_value=2**17)


def _scalings(factor: float, original: int) -> list[dict[str, Any]]:
    return [
        {"rope_type": "linear", "factor": factor},
        {"rope_type": "dynamic", "factor": factor},
        {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": original},
        {"rope_type": "llama3", "factor": factor, "low_freq_factor": 1.0,
         "high_freq_factor": 4.0, "original_max_position_embeddings": original},
    ]  # fmt: skip


@given(head_dims, bases, factors, lengths, st.integers(min_value=1, max_value=2**20))
def test_every_frequency_is_positive_decreasing_and_at_most_plain(
    head_dim, base, factor, original, seq_len
):
    """Any scaling slows pairs down (never speeds them up) and keeps their order; linear, YaRN
    and llama3 slow each pair by at most the factor s (dynamic NTK by its own s_T)."""
    plain = torch.from_numpy(rope_frequencies(head_dim, base=base))  # (d/2,)
    for scaling in _scalings(factor, original):
        inv_freq, attention = rope_inverse_frequencies(
            head_dim, base, scaling, max_position_embeddings=original, seq_len=seq_len
        )
        assert torch.isfinite(inv_freq).all() and (inv_freq > 0).all()
        assert (inv_freq[1:] < inv_freq[:-1]).all(), scaling
        assert (inv_freq <= plain * (1 + 1e-13)).all(), scaling  # s_T - 1 rounds
        if scaling["rope_type"] != "dynamic":
            assert (inv_freq >= plain / factor * (1 - 1e-15)).all(), scaling
        assert attention >= 1.0


@given(head_dims, bases, factors, lengths)
def test_factor_one_and_short_sequences_change_nothing(head_dim, base, factor, original):
    """Linear and YaRN with s = 1 are plain RoPE; dynamic NTK is plain RoPE up to L, any s."""
    plain = torch.from_numpy(rope_frequencies(head_dim, base=base))  # (d/2,)
    for scaling in _scalings(1.0, original)[::2]:  # linear and YaRN
        inv_freq, attention = rope_inverse_frequencies(head_dim, base, scaling)
        # YaRN blends theta / 1 and theta with weights summing to 1: exact up to rounding
        torch.testing.assert_close(inv_freq, plain, rtol=1e-15, atol=0)
        assert attention == 1.0, scaling
    for seq_len in (1, original // 2, original):
        inv_freq, _ = rope_inverse_frequencies(
            head_dim,
            base,
            {"rope_type": "dynamic", "factor": factor},
            max_position_embeddings=original,
            seq_len=seq_len,
        )
        torch.testing.assert_close(inv_freq, plain, rtol=1e-13, atol=0)


@given(
    head_dims,
    bases,
    factors,
    lengths,
    st.floats(min_value=0.5, max_value=4.0),
    st.floats(min_value=1.5, max_value=16.0),
)
def test_llama3_keeps_fast_pairs_and_divides_slow_ones(head_dim, base, factor, original, lo, gain):
    high = lo * gain  # high_freq_factor > low_freq_factor
    scaling = {
        "rope_type": "llama3",
        "factor": factor,
        "low_freq_factor": lo,
        "high_freq_factor": high,
        "original_max_position_embeddings": original,
    }
    inv_freq, _ = rope_inverse_frequencies(head_dim, base, scaling)
    plain = torch.from_numpy(rope_frequencies(head_dim, base=base))  # (d/2,)
    wavelength = 2 * math.pi / plain  # (d/2,)
    fast = wavelength < original / high
    slow = wavelength > original / lo
    assert torch.equal(inv_freq[fast], plain[fast])
    torch.testing.assert_close(inv_freq[slow], plain[slow] / factor, rtol=1e-15, atol=0)
    between = ~fast & ~slow
    assert (inv_freq[between] <= plain[between] * (1 + 1e-15)).all()
    assert (inv_freq[between] >= plain[between] / factor * (1 - 1e-15)).all()


@given(head_dims, bases, factors, lengths)
def test_yarn_keeps_the_fastest_pair_and_interpolates_the_slowest(head_dim, base, factor, original):
    """Pair 0 turns ~L/(2 pi) times in L tokens: kept when that is >= 32 (beta_fast) turns;
    the last pair turns less than once in L: divided by s. Attention factor 0.1 ln s + 1."""
    scaling = {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": original}
    inv_freq, attention = rope_inverse_frequencies(head_dim, base, scaling)
    plain = torch.from_numpy(rope_frequencies(head_dim, base=base))  # (d/2,)
    if original / (2 * math.pi) >= 32 * 2:  # pair 0 well above beta_fast (ramp rounded down)
        assert float(inv_freq[0]) == 1.0
    if original * float(plain[-1]) / (2 * math.pi) < 0.5 and head_dim >= 16:
        assert float(inv_freq[-1]) == pytest.approx(float(plain[-1]) / factor, rel=1e-15)
    assert attention == pytest.approx(0.1 * math.log(factor) + 1.0, rel=1e-15)


def test_yarn_on_chapter_5s_task_keeps_pair_0_because_the_ramp_is_rounded():
    """Chapter 5's table: one head of d = 16, base 10^4, trained on T = 12 tokens. Pair 0 turns
    12 / 2 pi = 1.9 times, inside the paper's ramp (alpha = 1 < r < beta = 32), whose blend
    gamma = (r - alpha) / (beta - alpha) would interpolate it almost wholly; `transformers` rounds
    the ramp's ends to whole pairs (0 and 1 here), so pair 0 is kept and the other seven divided
    by s, as the chapter says."""
    from course_utils.experiments.previous_token import PositionsConfig, rope_scaling_for

    cfg = PositionsConfig()
    assert (cfg.d_model, cfg.T) == (16, 12)
    plain = torch.from_numpy(rope_frequencies(cfg.d_model, base=10_000.0))  # (8,)
    turns = cfg.T * plain / (2 * math.pi)  # (8,)
    assert float(turns[0]) > 1 > float(turns[1])  # only pair 0 makes more than one turn
    assert (float(turns[0]) - 1) / (32 - 1) < 0.05  # the paper's gamma: almost all interpolated
    for factor in (2, 4):
        inv_freq, _ = rope_inverse_frequencies(
            cfg.d_model, 10_000.0, rope_scaling_for("yarn", factor, cfg.T)
        )
        slowdown = (plain / inv_freq).tolist()  # (8,)
        assert slowdown == pytest.approx([1.0] + [factor] * 7, rel=1e-12)
        config = LlamaConfig(
            hidden_size=cfg.d_model,
            num_attention_heads=1,
            max_position_embeddings=factor * cfg.T,
            rope_theta=10_000.0,
            rope_scaling=rope_scaling_for("yarn", factor, cfg.T),
        )
        reference, _ = modeling_rope_utils.ROPE_INIT_FUNCTIONS["yarn"](config, "cpu")
        torch.testing.assert_close(inv_freq.float(), reference.float(), rtol=1e-6, atol=0)


# --------------------------------------------------------------------------------------------
# rope_inverse_frequencies: bad input
# --------------------------------------------------------------------------------------------

LINEAR = {"rope_type": "linear", "factor": 2.0}
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"head_dim": 63}, ValueError, r"^head_dim must be even .* got head_dim = 63"),
        ({"head_dim": 64.0}, TypeError, r"^head_dim must be an int; got float 64.0"),
        ({"head_dim": True}, TypeError, r"^head_dim must be an int; got bool"),
        ({"base": -1.0}, ValueError, r"^base must be a finite number > 0; got -1.0"),
        ({"scaling": "linear"}, TypeError, r"^scaling must be None or a dict .* got str 'linear'"),
        ({"scaling": {"factor": 2.0}}, ValueError, r"'rope_type' \(or the older 'type'\)"),
        (
            {"scaling": {"rope_type": "longrope", "factor": 2.0}},
            ValueError,
            r"^scaling\['rope_type'\] must be one of \['default', 'linear', 'dynamic', 'yarn', "
            r"'llama3'\]; got 'longrope'",
        ),
        (
            {"scaling": {"rope_type": "linear", "type": "yarn", "factor": 2.0}},
            ValueError,
            r"rope_type 'linear' and type 'yarn'; they must agree",
        ),
        (
            {"scaling": {"rope_type": "linear", "factor": 0.5}},
            ValueError,
            r"^scaling\['factor'\] must be a finite number >= 1; got 0.5",
        ),
        (
            {"scaling": {"rope_type": "linear", "factor": float("inf")}},
            ValueError,
            r"^scaling\['factor'\] must be a finite number >= 1; got inf",
        ),
        (
            {"scaling": {"rope_type": "linear", "factor": "2"}},
            TypeError,
            r"^scaling\['factor'\] must be a number; got str '2'",
        ),
        (
            {"scaling": {"rope_type": "linear"}},
            ValueError,
            r"rope_type 'linear' needs the keys \['factor'\]; missing \['factor'\]",
        ),
        (
            {"scaling": {"rope_type": "yarn", "factor": 4.0}},
            ValueError,
            r"missing \['original_max_position_embeddings'\] \(or pass max_position_embeddings",
        ),
        (
            {"scaling": {**LLAMA3, "low_freq_factor": None}},
            ValueError,
            r"rope_type 'llama3' needs the keys .*; missing \['low_freq_factor'\]",
        ),
        (
            {"scaling": {**LLAMA3, "low_freq_factr": 1.0}},
            ValueError,
            r"keys \['low_freq_factr'\] that rope_type 'llama3' does not read; it reads \[",
        ),
        (
            {"scaling": {**LLAMA3, "high_freq_factor": 1.0}},
            ValueError,
            r"high_freq_factor'\] must be > scaling\['low_freq_factor'\]; got high_freq_factor "
            r"= 1.0",
        ),
        (
            {"scaling": {**LLAMA3, "original_max_position_embeddings": 8192.0}},
            TypeError,
            r"^scaling\['original_max_position_embeddings'\] must be an int; got float 8192.0",
        ),
        (
            {"scaling": {**LINEAR, "rope_theta": 500000.0}},
            ValueError,
            r"^scaling\['rope_theta'\] = 500000.0 differs from base = 10000.0; pass base=500000.0",
        ),
        (
            {"scaling": {"rope_type": "dynamic", "factor": 2.0}, "seq_len": 9000},
            ValueError,
            r"^rope_type 'dynamic' needs max_position_embeddings .* got None",
        ),
        (
            {"head_dim": 2, "scaling": {"rope_type": "dynamic", "factor": 2.0},
             "max_position_embeddings": 16},
            ValueError,
            r"^rope_type 'dynamic' needs head_dim >= 4 .* got head_dim = 2",
        ),
        (
            {"scaling": {**YARN, "beta_fast": 1.0, "beta_slow": 32.0}},
            ValueError,
            r"^scaling\['beta_fast'\] must be >= scaling\['beta_slow'\] .* got beta_fast = 1.0",
        ),
        (
            {"scaling": {**YARN, "truncate": "yes"}},
            TypeError,
            r"^scaling\['truncate'\] must be True or False; got str 'yes'",
        ),
        (
            {"scaling": {**YARN, "attention_factor": -1.0}},
            ValueError,
            r"^scaling\['attention_factor'\] must be a finite number > 0; got -1.0",
        ),
        ({"seq_len": 0}, ValueError, r"^seq_len must be >= 1; got 0"),
        ({"max_position_embeddings": 4096.0}, TypeError, r"^max_position_embeddings must be an in"),
    ],
)  # fmt: skip
def test_bad_input_is_named(kwargs, error, match):
    call = {"head_dim": 64, "base": 10000.0, "scaling": LINEAR, **kwargs}
    with pytest.raises(error, match=match):
        rope_inverse_frequencies(**call)


def test_rope_types_are_what_transformers_knows():
    known = set(modeling_rope_utils.ROPE_INIT_FUNCTIONS) | {"default"}
    assert set(ROPE_TYPES) <= known


def test_the_callers_dict_is_left_alone():
    scaling = {"rope_type": "yarn", "factor": 4.0}
    rope_inverse_frequencies(64, 10000.0, scaling, max_position_embeddings=4096)
    assert scaling == {"rope_type": "yarn", "factor": 4.0}


# --------------------------------------------------------------------------------------------
# T5's relative buckets and Shaw et al.'s clipped distances
# --------------------------------------------------------------------------------------------

ALL_DISTANCES = torch.arange(-4096, 4097)  # (8193,)
BUCKETS = [(32, 128), (64, 256), (16, 64), (32, 1024), (128, 2048), (8, 16), (33, 128)]


@pytest.mark.parametrize("bidirectional", [True, False], ids=["encoder", "decoder"])
@pytest.mark.parametrize(("num_buckets", "max_distance"), BUCKETS)
def test_t5_bucket_equals_transformers_everywhere(bidirectional, num_buckets, max_distance):
    theirs = T5Attention._relative_position_bucket(
        ALL_DISTANCES,
        bidirectional=bidirectional,
        num_buckets=num_buckets,
        max_distance=max_distance,
    )
    ours = t5_relative_bucket(ALL_DISTANCES, bidirectional, num_buckets, max_distance)
    assert ours.dtype == torch.int64 and ours.shape == ALL_DISTANCES.shape
    assert torch.equal(ours, theirs)
    assert int(ours.min()) >= 0 and int(ours.max()) <= num_buckets - 1


def test_t5_bucket_of_a_score_matrix_as_t5_builds_it():
    """T5's compute_bias: relative_position = memory_position - query_position, (T_q, T_k);
    int32, numpy and list inputs give the same int64 buckets."""
    query = torch.arange(7)[:, None]  # (T_q, 1)
    key = torch.arange(300)[None, :]  # (1, T_k)
    relative = key - query  # (T_q, T_k)
    theirs = T5Attention._relative_position_bucket(relative)
    assert torch.equal(t5_relative_bucket(relative), theirs)
    assert torch.equal(t5_relative_bucket(relative.to(torch.int32)), theirs)
    assert torch.equal(t5_relative_bucket(relative.numpy()), theirs)
    assert torch.equal(t5_relative_bucket(relative.tolist()), theirs)


@given(st.integers(min_value=-(10**9), max_value=10**9), st.booleans())
def test_t5_buckets_grow_with_distance_on_each_side(n, bidirectional):
    """A farther key never gets a closer bucket, on either side of the query."""
    step = 1 if n >= 0 else -1
    a, b = t5_relative_bucket(torch.tensor([n, n + step]), bidirectional).tolist()
    if bidirectional and n == 0 and step == 1:
        return  # 0 and +1 are on two different sides
    assert b >= a if (n < 0 or bidirectional) else (a, b) == (0, 0)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: t5_relative_bucket(torch.tensor([1.0])), TypeError,
         r"^relative_position must be an integer tensor .* got dtype torch.float32"),
        (lambda: t5_relative_bucket(torch.tensor([True])), TypeError,
         r"^relative_position must be an integer tensor .* got dtype torch.bool"),
        (lambda: t5_relative_bucket("3"), TypeError,
         r"^relative_position must be an integer torch.Tensor .* got str"),
        (lambda: t5_relative_bucket(np.array([0.5])), TypeError,
         r"^relative_position must hold integers .* got dtype float64"),
        (lambda: t5_relative_bucket(torch.tensor([1]), bidirectional=1), TypeError,
         r"^bidirectional must be True or False; got int 1"),
        (lambda: t5_relative_bucket(torch.tensor([1]), num_buckets=3), ValueError,
         r"^num_buckets must be >= 4; got 3"),
        (lambda: t5_relative_bucket(torch.tensor([1]), num_buckets=32, max_distance=8),
         ValueError, r"^max_distance must be > 8 .* got 8"),
    ],
)  # fmt: skip
def test_t5_bucket_bad_input_is_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    ("t_q", "t_k", "k"), [(1, 1, 0), (3, 4, 1), (5, 5, 2), (6, 3, 4), (4, 9, 16), (10, 10, 3)]
)
def test_shaw_equals_the_papers_clip(t_q, t_k, k):
    """Shaw et al. (2018), section 3.2: w_clip(j - i, k), clip(x, k) = max(-k, min(k, x)), + k."""
    got = shaw_relative_positions(t_q, t_k, k)
    assert got.dtype == torch.int64 and got.shape == (t_q, t_k)
    for i in range(t_q):
        for j in range(t_k):
            assert int(got[i, j]) == max(-k, min(k, j - i)) + k


@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 50))
def test_shaw_indices_fit_the_table_and_depend_on_j_minus_i_only(t_q, t_k, k):
    got = shaw_relative_positions(t_q, t_k, k)  # (t_q, t_k)
    assert int(got.min()) >= 0 and int(got.max()) <= 2 * k  # rows of a (2k + 1, d) table
    assert torch.equal(got[1:, 1:], got[:-1, :-1])  # constant along each diagonal


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((0, 3, 1), ValueError, r"^t_q must be >= 1; got 0"),
        ((3, 3, -1), ValueError, r"^max_relative must be >= 0; got -1"),
        ((3, 2.0, 1), TypeError, r"^t_k must be an int; got float 2.0"),
        ((10**6, 10**6, 1), ValueError, r"would build a result of shape \(1000000, 1000000\)"),
    ],
)
def test_shaw_bad_input_is_named(args, error, match):
    with pytest.raises(error, match=match):
        shaw_relative_positions(*args)


def test_dynamic_with_no_length_is_plain_rope_as_transformers_loads_it() -> None:
    """With no sequence length yet, dynamic NTK's base has not grown: transformers' init gives
    the plain frequencies, and so do we, with or without the trained length."""
    plain, _ = rope_inverse_frequencies(64, 10000.0)
    for kwargs in ({}, {"max_position_embeddings": 8192}):
        got, factor = rope_inverse_frequencies(
            64, 10000.0, {"rope_type": "dynamic", "factor": 4.0}, **kwargs
        )
        assert factor == 1.0 and torch.equal(got, plain)
