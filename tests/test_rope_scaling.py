"""RoPE with scaled frequencies: ``apply_rope(..., inv_freq=...)``; the stretched-RoPE experiment.

Oracles we did not write: ``transformers``' ``LlamaRotaryEmbedding`` (its ``inv_freq`` buffer and
``attention_scaling`` for each ``rope_scaling`` type) and ``apply_rotary_pos_emb``, which rotate
the queries and keys of every Llama-style checkpoint; and plain RoPE of the same module, which
``inv_freq = base^(-2i/d)`` must reproduce exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

from course_utils.experiments.previous_token import (
    SCALINGS,
    PreviousTokenModel,
    ScalingResult,
    make_previous_token_batch,
    rope_scaling_for,
    run_positions_experiment,
    run_rope_scaling_experiment,
)
from course_utils.positions import apply_rope, rope_frequencies, rope_inverse_frequencies

from .test_positions_long_context import llama_config

SCALINGS_HF = {
    "default": {"rope_type": "default"},
    "linear": {"rope_type": "linear", "factor": 4.0},
    "yarn": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 512},
    "yarn-deepseek": {
        "rope_type": "yarn",
        "factor": 40.0,
        "original_max_position_embeddings": 512,
        "mscale": 1.0,
        "mscale_all_dim": 0.707,
    },
    "llama3": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 512,
    },
}


@pytest.mark.parametrize("name", sorted(SCALINGS_HF))
@pytest.mark.parametrize(("head_dim", "base", "seed"), [(64, 10000.0, 0), (128, 500000.0, 1)])
def test_scaled_rope_rotates_as_transformers_does(name, head_dim, base, seed):
    """apply_rope with transformers' scaled inv_freq, times its attention_scaling, equals
    apply_rotary_pos_emb with the cos/sin of LlamaRotaryEmbedding (float32 angles there)."""
    rotary = LlamaRotaryEmbedding(llama_config(head_dim, base, SCALINGS_HF[name], 4096))
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, 2, 300, head_dim, generator=g)  # (B, h, T, d)
    k = torch.randn(1, 2, 300, head_dim, generator=g)  # (B, h, T, d)
    positions = torch.arange(100, 400)  # (T,): not starting at 0
    cos, sin = rotary(q, positions[None, :])  # (1, T, d) each
    q_hf, k_hf = apply_rotary_pos_emb(q, k, cos, sin)  # (B, h, T, d) each
    factor = rotary.attention_scaling
    q_ours = apply_rope(q, positions, inv_freq=rotary.inv_freq) * factor  # (B, h, T, d)
    k_ours = apply_rope(k, positions, inv_freq=rotary.inv_freq) * factor  # (B, h, T, d)
    # their angles are float32 (position 399 times a frequency <= 1: ~3e-5 of rounding)
    torch.testing.assert_close(q_ours, q_hf, rtol=0, atol=2e-4)
    torch.testing.assert_close(k_ours, k_hf, rtol=0, atol=2e-4)
    # and the frequencies they used are ours (rope_inverse_frequencies), to float32
    ours, attention = rope_inverse_frequencies(
        head_dim, base, SCALINGS_HF[name], max_position_embeddings=4096
    )
    torch.testing.assert_close(rotary.inv_freq, ours.float(), rtol=1e-5, atol=0)
    assert attention == pytest.approx(factor, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    half=st.integers(1, 16),
    base=st.floats(2.0, 1e6),
    interleaved=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_plain_frequencies_give_plain_rope_exactly(half, base, interleaved, seed):
    d = 2 * half
    x = torch.randn(3, 5, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    theta = torch.from_numpy(rope_frequencies(d, base=base))  # (d/2,)
    plain = apply_rope(x, base=base, interleaved=interleaved)
    assert torch.equal(apply_rope(x, inv_freq=theta, interleaved=interleaved), plain)


@settings(max_examples=40, deadline=None)
@given(
    half=st.integers(1, 8),
    freqs=st.lists(st.floats(1e-6, 3.0), min_size=8, max_size=8),
    m=st.integers(-50, 50),
    n=st.integers(-50, 50),
    shift=st.integers(-1000, 1000),
    seed=st.integers(0, 2**16),
)
def test_any_frequencies_keep_lengths_and_relative_scores(half, freqs, m, n, shift, seed):
    """A rotation for any frequencies: norms kept, q_m · k_n depends on m - n only."""
    d = 2 * half
    inv_freq = torch.tensor(freqs[:half], dtype=torch.float64)  # (d/2,)
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 1, d, generator=g, dtype=torch.float64)  # (1, d) each

    def rot(x, p):
        return apply_rope(x, torch.tensor([p]), inv_freq=inv_freq)[0]  # (d,)

    assert torch.allclose(rot(q, m).norm(), q.norm(), rtol=1e-12)
    here, there = rot(q, m) @ rot(k, n), rot(q, m + shift) @ rot(k, n + shift)
    assert torch.allclose(here, there, rtol=1e-9, atol=1e-9)


def test_linear_scaling_is_rope_at_the_position_divided_by_s():
    """Position interpolation (Chen et al. 2023): position m with theta / s is position m / s."""
    x = torch.randn(6, 16, dtype=torch.float64)
    inv_freq, factor = rope_inverse_frequencies(16, 10000.0, {"rope_type": "linear", "factor": 4})
    assert factor == 1.0
    positions = torch.tensor([0, 4, 8, 40, 400, 4000])
    stretched = apply_rope(x, positions, inv_freq=inv_freq)
    torch.testing.assert_close(stretched, apply_rope(x, positions // 4), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("inv_freq", "error", "match"),
    [
        ("fast", TypeError, r"inv_freq must be a tensor of shape \(d/2,\) = \(4,\).*got str"),
        (torch.ones(3), ValueError, r"must have shape \(d/2,\) = \(4,\).*got shape \(3,\)"),
        (torch.ones(2, 4), ValueError, r"got shape \(2, 4\)"),
        ([1.0, 0.5, 0.0, 0.1], ValueError, r"positive finite frequencies; got min 0.0"),
        ([1.0, float("nan"), 0.5, 0.1], ValueError, r"positive finite"),
        (["a", "b", "c", "d"], TypeError, r"inv_freq must hold numbers"),
    ],
)
def test_bad_inv_freq_is_named(inv_freq, error, match):
    with pytest.raises(error, match=match):
        apply_rope(torch.zeros(2, 8), inv_freq=inv_freq)


def test_numpy_and_list_frequencies_are_accepted():
    x = torch.randn(3, 4, dtype=torch.float64)
    theta = rope_frequencies(4)  # (2,) numpy
    assert torch.equal(apply_rope(x, inv_freq=theta), apply_rope(x))
    assert torch.equal(apply_rope(x, inv_freq=theta.tolist()), apply_rope(x))


# --------------------------------------------------------------------------------------------
# The experiment: the RoPE model of the previous-token task, stretched without training
# --------------------------------------------------------------------------------------------


def test_rope_scaling_for_gives_config_dicts_rope_inverse_frequencies_reads():
    for scaling in SCALINGS:
        params = rope_scaling_for(scaling, 3.0, 12)
        inv_freq, _ = rope_inverse_frequencies(16, 10000.0, params, max_position_embeddings=12)
        assert inv_freq.shape == (8,)
    assert rope_scaling_for("linear", 3, 12) == {"rope_type": "linear", "factor": 3.0}
    with pytest.raises(ValueError, match=r"scaling must be one of .*got 'ntk'"):
        rope_scaling_for("ntk", 2.0, 12)


def test_a_rope_model_with_plain_frequencies_is_unchanged():
    torch.manual_seed(0)
    model = PreviousTokenModel("rope", 8, 12, 16)
    x, _ = make_previous_token_batch(4, 12, 8, torch.Generator().manual_seed(0))
    before, weights = model(x), model.weights(x)
    model.rope_inv_freq, model.rope_attention_factor = rope_inverse_frequencies(16, 10000.0)
    assert torch.equal(model(x), before)
    model.rope_attention_factor = 1.5  # both q and k: the scores times 1.5^2
    q, k = model.W_Q(model.embed(x)), model.W_K(model.embed(x))  # (B, T, 16) each
    scores = apply_rope(q) @ apply_rope(k).transpose(-2, -1) / 4.0 * 1.5**2  # (B, T, T)
    torch.testing.assert_close(model.weights(x), torch.softmax(scores, -1))
    assert not torch.allclose(model.weights(x), weights)


def test_stretched_rope_experiment_on_the_chapters_settings():
    """The chapter's run: same models as run_positions_experiment's "rope" (its T = 24 accuracy
    is the "none" row at factor 2); interpolating every pair hurts; keeping the fast pair helps."""
    scaled = run_rope_scaling_experiment(seeds=(0, 1, 2), steps=150, eval_every=50)
    assert all(isinstance(r, ScalingResult) for r in scaled)
    assert len(scaled) == 3 * 2 * len(SCALINGS)
    plain = run_positions_experiment(("rope",), seeds=(0, 1, 2), steps=150, eval_every=50)
    for r in plain:
        (none2,) = [x for x in scaled if (x.seed, x.scaling, x.factor) == (r.seed, "none", 2)]
        assert none2.accuracy == r.accuracy_long

    def mean(scaling: str, factor: int) -> float:
        return float(
            np.mean([x.accuracy for x in scaled if (x.scaling, x.factor) == (scaling, factor)])
        )

    for factor in (2, 4):
        assert mean("linear", factor) < mean("none", factor) - 0.2
        assert mean("dynamic", factor) > mean("none", factor) + 0.1
        assert mean("none", factor) <= mean("yarn", factor) < mean("dynamic", factor)
    assert mean("none", 4) < mean("none", 2)


def test_stretched_rope_experiment_bad_input_is_named():
    with pytest.raises(ValueError, match=r"scalings must hold names from .*got 'pi'"):
        run_rope_scaling_experiment(scalings=("pi",), steps=1, eval_every=1)
    with pytest.raises(ValueError, match=r"factors must hold whole numbers >= 1.*got 1.5"):
        run_rope_scaling_experiment(factors=(1.5,), steps=1, eval_every=1)
    with pytest.raises(TypeError, match=r"unknown setting 'step'"):
        run_rope_scaling_experiment(step=1)


def test_stretched_rope_at_the_trained_length_is_the_same_for_every_scaling(
    computed_every_time: None,
) -> None:
    """factor 1 (test length = T): every scaling is plain RoPE, so every accuracy is equal."""
    r = run_rope_scaling_experiment(seeds=(0,), factors=(1,), steps=20, eval_every=20)
    assert len({x.accuracy for x in r}) == 1, r
