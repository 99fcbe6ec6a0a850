"""Chapter 6 checkers: the worked solutions pass, typical mistakes are named, nothing raises."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils.exercises import ch06


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def rms_norm(x, gamma, eps):
    return x / torch.sqrt((x**2).mean(-1, keepdim=True) + eps) * gamma


def pre_ln_block(x, attn, ffn, norm1, norm2):
    h = x + attn(norm1(x))
    return h + ffn(norm2(h))


def count(d_model, d_ff, bias):
    b = 1 if bias else 0
    return 4 * d_model**2 + 2 * d_model * d_ff + 2 * d_model + b * (7 * d_model + d_ff)


@pytest.mark.parametrize(
    ("checker", "answer"),
    [
        (ch06.check_layer_norm, layer_norm),
        (ch06.check_layer_norm, lambda x, g, b, eps: layer_norm(x.float(), g, b, eps)),  # float32
        (ch06.check_layer_norm, lambda x, g, b, eps: layer_norm(x, g, b, eps).numpy()),  # numpy
        (ch06.check_rms_norm, rms_norm),
        (ch06.check_pre_ln_block, pre_ln_block),
        (ch06.check_block_parameters, count),
        (ch06.check_block_parameters, lambda d, f, b: float(count(d, f, b))),
    ],
)
def test_solutions_pass(checker, answer):
    fb = checker(answer)
    assert fb, str(fb)


def unbiased(x, g, b, eps):
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) * g + b


@pytest.mark.parametrize(
    ("checker", "answer", "hint"),
    [
        (ch06.check_layer_norm, unbiased, "not d_model - 1"),
        (ch06.check_layer_norm, lambda x, g, b, eps: layer_norm(x, 1.0, 0.0, eps), "gain gamma"),
        (ch06.check_layer_norm, lambda x, g, b, eps: rms_norm(x, g, eps) + b, "that is RMSNorm"),
        (
            ch06.check_rms_norm,
            lambda x, g, eps: layer_norm(x, g, 0.0, eps),
            "not subtract the mean",
        ),
        (
            ch06.check_rms_norm,
            lambda x, g, eps: x / ((x**2).mean(-1, keepdim=True) + eps) * g,
            "square root",
        ),
        (
            ch06.check_pre_ln_block,
            lambda x, attn, ffn, n1, n2: n2((h := n1(x + attn(x))) + ffn(h)),
            "post-LN",
        ),
        (
            ch06.check_pre_ln_block,
            lambda x, attn, ffn, n1, n2: ffn(n2(attn(n1(x)))),
            "residual connections",
        ),
        (
            ch06.check_pre_ln_block,
            lambda x, attn, ffn, n1, n2: x + attn(n1(x)) + ffn(n2(x)),
            "after the attention add",
        ),
        (
            ch06.check_block_parameters,
            lambda d, f, b: count(d, f, b) - 2 * d * (1 + b),
            "LayerNorms",
        ),
        (ch06.check_block_parameters, lambda d, f, b: 4 * d * d + 2 * d * f, "weight matrices"),
        (
            ch06.check_block_parameters,
            lambda d, f, b: count(d, f, b) - (b and 7 * d + f),
            "count the biases",
        ),
    ],
)
def test_typical_mistakes_are_named(checker, answer, hint):
    fb = checker(answer)
    assert not fb
    assert any(hint in h for h in fb.hints), str(fb)


@pytest.mark.parametrize(
    "checker",
    [
        ch06.check_layer_norm,
        ch06.check_rms_norm,
        ch06.check_pre_ln_block,
        ch06.check_block_parameters,
    ],
)
def test_starters_and_crashes_give_feedback(checker):
    assert "Ellipsis" in str(checker(...))
    fb = checker(lambda *args: 1 / 0)
    assert not fb and "ZeroDivisionError" in str(fb)
    assert not checker(lambda *args: "text")


# --- exercise 6.6: the T at which attention is half of the block ----------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        lambda d, f: f - 2 * d,
        lambda d, f: float(f - 2 * d),
        lambda d, f: np.int64(f - 2 * d),
        lambda d, f: torch.tensor(f - 2.0 * d, dtype=torch.float32),
        lambda d, f: (4 * d * f - 8 * d * d) / (4 * d),
    ],
    ids=["int", "float", "numpy", "torch-float32", "solved"],
)
def test_attention_half_length_right(answer):
    assert ch06.check_attention_half_length(answer)


def test_attention_half_length_is_the_package_count():
    from course_utils.transformer_cost import block_flops_per_token

    c = block_flops_per_token(768, 3072, 1536)
    assert c["attention_projections"] + c["attention_scores"] == c["ffn"] == c["total"] / 2


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda d, f: f, "the scores alone equal the FFN"),
        (lambda d, f: f + 2 * d, "equal all the rest of the block"),
        (lambda d, f: f - d, "not 4·d_model²"),
        (lambda d, f: f / 2, "solve for T"),
    ],
)
def test_attention_half_length_mistakes(answer, hint):
    fb = ch06.check_attention_half_length(answer)
    assert not fb and hint in fb.hints[0]


@pytest.mark.parametrize("answer", [..., None, "abc", lambda *a: 1 / 0, lambda *a: [1, 2]])
def test_attention_half_length_never_raises(answer):
    assert not ch06.check_attention_half_length(answer)


# --- exercise 6.7: SmolLM2-135M's parameters ------------------------------------------------------

SMOLLM2_PARAMETERS = 134_515_008  # also the real model's count: tests/test_logit_lens.py


@pytest.mark.parametrize(
    "answer",
    [
        SMOLLM2_PARAMETERS,
        float(SMOLLM2_PARAMETERS),
        np.int64(SMOLLM2_PARAMETERS),
        torch.tensor(SMOLLM2_PARAMETERS),
        "134515008",
        "134,515,008",
        "134.5M",
        "134.5 million",
        134.5,
        134.515008,
        135,  # the name's rounding, within 0.5%
        np.float32(134.5),
        0.1345,  # billions
    ],
    ids=lambda a: f"{type(a).__name__}-{a}",
)
def test_smollm2_parameters_right(answer):
    fb = ch06.check_smollm2_parameters(answer)
    assert fb, str(fb)


@pytest.mark.parametrize(
    ("answer", "hints"),
    [
        (SMOLLM2_PARAMETERS + 49152 * 576, ["count it once, not twice"]),
        (SMOLLM2_PARAMETERS + 30 * 2 * 576 * (576 - 192), ["not d_model = 576"]),
        (SMOLLM2_PARAMETERS - 30 * 576 * 1536, ["not two"]),
        (SMOLLM2_PARAMETERS - 61 * 576, ["count the RMSNorm gains"]),
        (162.8, ["count it once, not twice"]),  # millions
        (147.8, ["not d_model = 576"]),
        (108.0, ["not two"]),
        # two slips at once: both named
        (SMOLLM2_PARAMETERS + 49152 * 576 - 61 * 576, ["count it once", "RMSNorm gains"]),
        (121.2, ["not d_model = 576", "not two"]),
    ],
)
def test_smollm2_parameters_names_each_mistake(answer, hints):
    fb = ch06.check_smollm2_parameters(answer)
    assert not fb
    assert len(fb.hints) == len(hints)
    for hint, want in zip(fb.hints, hints, strict=True):
        assert want in hint


def test_smollm2_parameters_exact_counts_are_exact():
    """A whole count must be exact (forgetting the norms is 0.03% off: named, not accepted)."""
    assert not ch06.check_smollm2_parameters(SMOLLM2_PARAMETERS + 1)
    fb = ch06.check_smollm2_parameters(10**9)
    assert not fb and "per block" in fb.hints[0]  # no mistake explains it: how to count


@pytest.mark.parametrize(
    "answer", [..., None, "abc", "12 apples", [1, 2], -5, 0, float("nan"), float("inf"), lambda: 1]
)
def test_smollm2_parameters_never_raises(answer):
    fb = ch06.check_smollm2_parameters(answer)
    assert not fb and fb.messages


def test_smollm2_parameters_counts_from_the_package():
    from course_utils.transformer_cost import decoder_parameter_count

    cfg = ch06.SMOLLM2_CONFIG
    assert decoder_parameter_count(**cfg)["total"] == SMOLLM2_PARAMETERS
