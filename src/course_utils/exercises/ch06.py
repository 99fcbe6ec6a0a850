"""Checkers for the exercises of chapter 6, "Attention inside a Transformer block".

The learner writes a *function*; the checker calls it on its own seeded cases and compares with the
package (:mod:`course_utils.norms`, :class:`course_utils.transformer.TransformerBlock`,
:func:`course_utils.transformer_cost.block_parameter_count`). A checker never raises on a wrong
answer, and names the typical mistake when it recognises one.

- :func:`check_layer_norm`: ``layer_norm(x, gamma, beta, eps)``;
- :func:`check_rms_norm`: ``rms_norm(x, gamma, eps)``;
- :func:`check_pre_ln_block`: ``pre_ln_block(x, attn, ffn, norm1, norm2)``, the pre-LN wiring;
- :func:`check_block_parameters`: ``count(d_model, d_ff, bias)``, the parameters of a block.

>>> def rms_norm(x, gamma, eps):
...     return x / (x ** 2).mean(-1, keepdim=True).add(eps).sqrt() * gamma
>>> bool(check_rms_norm(rms_norm))
True
>>> print(check_rms_norm(lambda x, gamma, eps: x / (x ** 2).mean(-1, keepdim=True).sqrt()).hints)
('multiply by the gain gamma',)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..i18n import t
from ..norms import layer_norm as _layer_norm
from ..norms import rms_norm as _rms_norm
from ..transformer import TransformerBlock
from ..transformer_cost import block_parameter_count
from ._checks import Mistake, check_array
from ._feedback import Feedback
from ._learner import run_cases

__all__ = ["check_block_parameters", "check_layer_norm", "check_pre_ln_block", "check_rms_norm"]

_SEED = 2020


def _norm_cases(seed: int) -> list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    cases = []
    for shape in [(1, 4), (3, 8), (2, 5, 6)]:
        x = torch.randn(shape, generator=g, dtype=torch.float64) * 2 + 1  # mean != 0 on purpose
        gamma = torch.rand(shape[-1], generator=g, dtype=torch.float64) + 0.5
        beta = torch.randn(shape[-1], generator=g, dtype=torch.float64)
        cases.append((t("x of shape {shape}", shape=shape), x, gamma, beta))
    return cases


# --- exercise 6.1: LayerNorm ---------------------------------------------------------------------


def check_layer_norm(layer_norm: Callable[..., Any]) -> Feedback:
    """Check ``layer_norm(x, gamma, beta, eps)`` (torch tensors, normalise the last axis) against
    ``torch.nn.functional.layer_norm``.

    >>> def layer_norm(x, gamma, beta, eps):
    ...     mean = x.mean(-1, keepdim=True)
    ...     var = ((x - mean) ** 2).mean(-1, keepdim=True)
    ...     return (x - mean) / torch.sqrt(var + eps) * gamma + beta
    >>> bool(check_layer_norm(layer_norm))
    True
    >>> def unbiased(x, gamma, beta, eps):
    ...     y = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps)
    ...     return y * gamma + beta
    >>> print(check_layer_norm(unbiased).hints[0])  # doctest: +ELLIPSIS
    LayerNorm divides by d_model, not d_model - 1: ...
    """
    title = "LayerNorm"

    def compare(result: Any, x: torch.Tensor, gamma: Any, beta: Any, eps: float) -> Feedback:
        expected = torch.nn.functional.layer_norm(x, (x.shape[-1],), gamma, beta, eps)
        centred = x - x.mean(-1, keepdim=True)
        mistakes = [
            Mistake(
                "LayerNorm divides by d_model, not d_model - 1: use the biased variance, "
                "((x - mean) ** 2).mean(-1) or x.var(-1, unbiased=False)",
                centred / torch.sqrt(x.var(-1, keepdim=True) + eps) * gamma + beta,
            ),
            Mistake(
                "put eps inside the square root: (x - mean) / sqrt(var + eps)",
                centred / (torch.sqrt(centred.pow(2).mean(-1, keepdim=True)) + eps) * gamma + beta,
            ),
            Mistake(
                "normalise over the last axis (each token's own vector), not over the tokens",
                _layer_norm(x.transpose(-1, -2), eps=eps).transpose(-1, -2) * gamma + beta,
            ),
            Mistake("apply the gain gamma and the bias beta", _layer_norm(x, eps=eps)),
            Mistake(
                "multiply by gamma, then add beta (not the other way round)",
                (_layer_norm(x, eps=eps) + beta) * gamma,
            ),
            Mistake(
                "that is RMSNorm: LayerNorm subtracts the mean first",
                _rms_norm(x, gamma, eps) + beta,
            ),
        ]
        return check_array(title, result, expected, atol=1e-6, mistakes=mistakes)

    cases = [
        (described, (x, gamma, beta, 1e-5)) for described, x, gamma, beta in _norm_cases(_SEED)
    ]
    passed = "all {n} test cases match torch.nn.functional.layer_norm"
    return run_cases(title, layer_norm, "layer_norm", cases, compare, passed)


# --- exercise 6.2: RMSNorm -----------------------------------------------------------------------


def check_rms_norm(rms_norm: Callable[..., Any]) -> Feedback:
    """Check ``rms_norm(x, gamma, eps)`` (torch tensors, last axis) against ``torch.nn.RMSNorm``.

    >>> print(check_rms_norm(lambda x, gamma, eps: x / (x ** 2).mean(-1, keepdim=True) * gamma))
    ... # doctest: +ELLIPSIS
    ✗ RMSNorm: not yet right
    ...
      hint: take the square root: divide by sqrt(mean(x²) + eps), the root mean square
    """
    title = "RMSNorm"

    def compare(result: Any, x: torch.Tensor, gamma: torch.Tensor, eps: float) -> Feedback:
        ref = torch.nn.RMSNorm(x.shape[-1], eps=eps, dtype=torch.float64)
        with torch.no_grad():
            ref.weight.copy_(gamma)
            expected = ref(x)
        ms = (x**2).mean(-1, keepdim=True)  # (..., 1)
        mistakes = [
            Mistake(
                "RMSNorm does not subtract the mean (that is LayerNorm): x / sqrt(mean(x²) + eps)",
                _layer_norm(x, gamma, eps=eps),
            ),
            Mistake(
                "take the square root: divide by sqrt(mean(x²) + eps), the root mean square",
                x / (ms + eps) * gamma,
            ),
            Mistake("multiply by the gain gamma", _rms_norm(x, eps=eps)),
            Mistake(
                "mean(x²), not sum(x²): divide the sum of squares by d_model",
                x / torch.sqrt((x**2).sum(-1, keepdim=True) + eps) * gamma,
            ),
        ]
        return check_array(title, result, expected, atol=1e-6, mistakes=mistakes)

    cases = [(described, (x, gamma, 1e-6)) for described, x, gamma, _ in _norm_cases(_SEED + 1)]
    passed = "all {n} test cases match torch.nn.RMSNorm"
    return run_cases(title, rms_norm, "rms_norm", cases, compare, passed)


# --- exercise 6.3: the pre-LN wiring -------------------------------------------------------------


def _block_cases() -> list[tuple[str, tuple[Any, ...], TransformerBlock]]:
    """``(described, (x, attn, ffn, norm1, norm2), block)``: the learner gets the block's parts."""
    g = torch.Generator().manual_seed(_SEED + 2)
    cases = []
    for B, T, d_model, n_heads in [(1, 3, 4, 1), (2, 5, 8, 2)]:
        torch.manual_seed(_SEED + T)
        block = TransformerBlock(d_model, n_heads, 4 * d_model).double().eval()
        with torch.no_grad():  # move LayerNorm away from (1, 0), so skipping it shows
            for p in (*block.norm1.parameters(), *block.norm2.parameters()):
                p.normal_(0.5, 0.5, generator=g)
        x = torch.randn(B, T, d_model, generator=g, dtype=torch.float64)
        parts = (x, block.self_attention, block.ffn, block.norm1, block.norm2)
        cases.append(
            (
                t(
                    "x of shape {shape}, n_heads = {n_heads}",
                    shape=(B, T, d_model),
                    n_heads=n_heads,
                ),
                parts,
                block,
            )
        )
    return cases


def check_pre_ln_block(pre_ln_block: Callable[..., Any]) -> Feedback:
    """Check ``pre_ln_block(x, attn, ffn, norm1, norm2)`` against :class:`TransformerBlock`.

    ``attn``, ``ffn``, ``norm1`` and ``norm2`` are functions ``(B, T, d_model) -> (B, T, d_model)``
    taken from a real block; the answer must wire them as a pre-LN block.

    >>> bool(check_pre_ln_block(lambda x, attn, ffn, n1, n2: (h := x + attn(n1(x))) + ffn(n2(h))))
    True
    >>> print(check_pre_ln_block(lambda x, attn, ffn, n1, n2: n2((h := n1(x + attn(x))) + ffn(h))))
    ... # doctest: +ELLIPSIS
    ✗ pre-LN block: not yet right
    ...
      hint: that is the post-LN block (normalise after the add); pre-LN normalises ...
    """
    title = "pre-LN block"

    def compare(result: Any, x: Any, attn: Any, ffn: Any, n1: Any, n2: Any, block: Any) -> Feedback:
        with torch.no_grad():
            expected = block(x)
            h = x + attn(n1(x))  # (B, T, d_model)
            post = n1(x + attn(x))  # (B, T, d_model)
            mistakes = [
                Mistake(
                    "that is the post-LN block (normalise after the add); pre-LN normalises each "
                    "sublayer's input",
                    n2(post + ffn(post)),
                ),
                Mistake(
                    "keep the residual connections: add each sublayer's output to its input x",
                    ffn(n2(attn(n1(x)))),
                ),
                Mistake(
                    "the residual stream carries x itself, not LN(x): x + attn(norm1(x))",
                    (n1(x) + attn(n1(x))) + ffn(n2(n1(x) + attn(n1(x)))),
                ),
                Mistake(
                    "the FFN reads the stream after the attention add (h = x + attn(...)), "
                    "not the block's input x",
                    h + ffn(n2(x)),
                ),
                Mistake("use norm2 (the FFN's own LayerNorm) before the FFN", h + ffn(n1(h))),
            ]
        return check_array(title, result, expected, atol=1e-6, mistakes=mistakes)

    passed = "all {n} test cases equal TransformerBlock's output"
    return run_cases(title, pre_ln_block, "pre_ln_block", _block_cases(), compare, passed)


# --- exercise 6.4: count the parameters -----------------------------------------------------------


def check_block_parameters(count: Callable[[int, int, bool], Any]) -> Feedback:
    """Check ``count(d_model, d_ff, bias)`` against the parameters of ``TransformerBlock``.

    >>> bool(check_block_parameters(lambda d, f, b: 4*d*d + 2*d*f + (7*d + f) * b + 2*d))
    True
    """
    title = "block parameters"

    def compare(result: Any, d: int, f: int, bias: bool) -> Feedback:
        parts = block_parameter_count(d, 1, f, bias=bias)
        b = int(bias)
        mistakes = [
            Mistake(
                "you counted only the weight matrices: add the biases and the LayerNorms' gains",
                4 * d * d + 2 * d * f,
            ),
            Mistake(
                "don't forget the two LayerNorms (a gain, and a bias if bias is True)",
                parts["attention"] + parts["ffn"],
            ),
            Mistake(
                "don't forget the attention's four d_model × d_model matrices",
                parts["ffn"] + parts["norms"],
            ),
            Mistake(
                "the FFN has two matrices, d_model × d_ff and d_ff × d_model",
                parts["total"] - d * f - d * b,
            ),
            Mistake(
                "count the biases: 4·d_model (attention), d_ff + d_model (FFN), 2·d_model "
                "(LayerNorm β)",
                parts["total"] - b * (4 * d + f + d + 2 * d),
            ),
        ]
        return check_array(title, result, np.array(parts["total"]), rtol=0, mistakes=mistakes)

    sizes = ((512, 2048, True), (768, 3072, True), (64, 256, False), (6, 10, True))
    cases = [(f"d_model = {d}, d_ff = {f}, bias = {b}", (d, f, b)) for d, f, b in sizes]
    passed = "all {n} cases equal the parameters of TransformerBlock"
    return run_cases(title, count, "count", cases, compare, passed)


# --- exercise 6.6: when is attention half of the block? -------------------------------------------

__all__ += ["check_attention_half_length"]


def check_attention_half_length(T_half: Callable[[int, int], Any]) -> Feedback:
    """Check ``T_half(d_model, d_ff)``: the sequence length at which attention (projections and
    scores) costs as many FLOPs per token as the FFN, i.e. half of the block's matrix products,
    against :func:`course_utils.transformer_cost.block_flops_per_token`.

    ``8 d² + 4 T d = 4 d d_ff`` gives ``T = d_ff - 2 d_model``.

    >>> bool(check_attention_half_length(lambda d, f: f - 2 * d))
    True
    >>> print(check_attention_half_length(lambda d, f: f).hints[0])  # doctest: +ELLIPSIS
    at T = d_ff the scores alone equal the FFN; ...
    """
    title = "attention at half the block"
    from ..transformer_cost import block_flops_per_token
    from ._checks import check_number

    def compare(result: Any, d: int, f: int) -> Feedback:
        expected = f - 2 * d
        cost = block_flops_per_token(d, f, expected)
        attention = cost["attention_projections"] + cost["attention_scores"]
        assert attention == cost["ffn"]  # the formula above is the package's count
        mistakes = [
            (
                f,
                "at T = d_ff the scores alone equal the FFN; attention also pays for its "
                "projections W_Q, W_K, W_V, W_O (8·d_model² per token)",
            ),
            (
                f + 2 * d,
                "that is where the scores equal all the rest of the block; here attention as a "
                "whole (projections and scores) is compared with the FFN",
            ),
            (
                f - d,
                "four d_model × d_model projections at 2 FLOPs per multiply-add cost 8·d_model² "
                "per token, not 4·d_model²",
            ),
            (f / 2, "set attention's FLOPs equal to the FFN's and solve for T"),
        ]
        wrong = "got T = {value:g}, expected {expected}"
        return check_number(title, result, expected, mistakes, wrong, atol=0.5)

    sizes = ((768, 3072), (512, 2048), (4096, 11008), (64, 1000))
    cases = [(t("d_model = {d}, d_ff = {f}", d=d, f=f), (d, f)) for d, f in sizes]
    passed = "all {n} cases right"
    return run_cases(title, T_half, "T_half", cases, compare, passed)


# --- exercise 6.7: count SmolLM2-135M's parameters ------------------------------------------------

__all__ += ["check_smollm2_parameters"]

#: SmolLM2-135M's configuration, as the exercise gives it (and its GGUF file holds).
SMOLLM2_CONFIG = {
    "vocab_size": 49152,
    "d_model": 576,
    "n_layers": 30,
    "n_heads": 9,
    "n_kv_heads": 3,
    "d_ff": 1536,
}

_SMOLLM2_MISTAKES = (
    ("tied", "the LM head is the embedding matrix (tied weights): count it once, not twice"),
    (
        "gqa",
        "W_K and W_V are only n_kv_heads · d_head = 192 wide (grouped-query attention: 9 query "
        "heads share 3 key/value heads), not d_model = 576",
    ),
    ("swiglu", "SwiGLU has three matrices, W_gate, W_up and W_down, not two"),
    ("norms", "count the RMSNorm gains: two per block (576 each) and the final one"),
)


def _smollm2_count(mistakes: frozenset[str]) -> int:
    """SmolLM2-135M's parameters, or what a learner gets with the given mistakes."""
    from ..transformer_cost import decoder_parameter_count

    c = SMOLLM2_CONFIG
    parts = decoder_parameter_count(
        c["vocab_size"],
        c["d_model"],
        c["n_layers"],
        c["n_heads"],
        c["n_heads"] if "gqa" in mistakes else c["n_kv_heads"],
        c["d_ff"],
        tied="tied" not in mistakes,
    )
    total = parts["total"]
    if "swiglu" in mistakes:
        total -= parts["ffn"] // 3  # one matrix of the three fewer
    if "norms" in mistakes:
        total -= parts["norms"]
    return total


def _number_in_text(text: str) -> Any:
    """A count typed as text, as a number: ``"134,515,008"`` as it is, ``"134.5M"`` (or
    ``million``) and ``"0.1345B"`` (or ``billion``) in millions, as the checker reads a number
    under 100,000; the text itself when it is not a number (the checker then says so)."""
    words = text.strip().lower().replace(",", "").replace("_", "").replace(" ", "")
    for suffix, scale in (("million", 1), ("billion", 1e3), ("m", 1), ("b", 1e3), ("", 1)):
        if words.endswith(suffix):
            try:
                return float(words.removesuffix(suffix) if suffix else words) * scale
            except ValueError:
                continue
    return text


def check_smollm2_parameters(n_params: Any) -> Feedback:
    """Check a count of SmolLM2-135M's parameters from its configuration
    (:data:`SMOLLM2_CONFIG`), against :func:`course_utils.transformer_cost.decoder_parameter_count`
    (which the tests hold to the real model's and ``transformers``' counts).

    Accepted: the exact count (134,515,008), or a rounded count within 0.5%: in millions (or
    billions, ``134.5``, ``0.1345``) or whole (``134.5e6``, ``1.345e8``: at most 4 significant
    digits). A wrong count that one or more typical mistakes explain is named.

    >>> bool(check_smollm2_parameters(134_515_008)), bool(check_smollm2_parameters(134.5))
    (True, True)
    >>> bool(check_smollm2_parameters(134.5e6)), bool(check_smollm2_parameters(134_515_009))
    (True, False)
    >>> print(check_smollm2_parameters(162_826_560).hints[0])  # doctest: +ELLIPSIS
    the LM head is the embedding matrix (tied weights): ...
    """
    from itertools import combinations

    from ._checks import as_answer_array

    title = "SmolLM2-135M's parameters"
    if isinstance(n_params, str):  # typed as text: "134,515,008", "134.5M", "0.13 B"
        n_params = _number_in_text(n_params)
    try:
        arr = as_answer_array(n_params, "n_params")
    except TypeError as err:
        return Feedback(False, title, (t("expected one number; {err}", err=err),))
    if arr.size != 1:
        shape = tuple(arr.shape)
        return Feedback(
            False, title, (t("expected one number; got an array of shape {shape}", shape=shape),)
        )
    value = float(arr.reshape(()))
    if not np.isfinite(value) or value <= 0:
        return Feedback(False, title, (t("expected a positive count; got {value}", value=value),))
    expected = _smollm2_count(frozenset())
    # a whole count is compared exactly, unless it is rounded (134.5e6: 4 significant digits at
    # most); a number under 100,000 is read as millions (or billions under 1), rounded as a
    # person types it: within 0.5%
    if value >= 1e5:
        scale, rtol = 1.0, (5e-3 if value == float(f"{value:.4g}") else 0.0)
    elif value >= 1:
        scale, rtol = 1e6, 5e-3
    else:
        scale, rtol = 1e9, 5e-3

    def same(count: int) -> bool:
        return abs(value * scale - count) <= rtol * count

    if same(expected):
        return Feedback(True, title)
    keys = [key for key, _ in _SMOLLM2_MISTAKES]
    hints: tuple[str, ...] = ()
    for size in range(1, len(keys) + 1):  # the fewest mistakes that explain the answer
        for combo in combinations(keys, size):
            if same(_smollm2_count(frozenset(combo))):
                hints = tuple(h for key, h in _SMOLLM2_MISTAKES if key in combo)
                break
        if hints:
            break
    message = t(
        "got {count:,} parameters, expected {expected:,} (about {millions:.1f} million)",
        count=round(value * scale),
        expected=expected,
        millions=expected / 1e6,
    )
    if not hints:
        hints = (
            t(
                "add up, per block: W_Q and W_O (d_model × d_model), W_K and W_V (d_model × "
                "n_kv_heads·d_head), three SwiGLU matrices, two RMSNorm gains; then the "
                "embedding once and the final RMSNorm"
            ),
        )
    return Feedback(False, title, (message,), hints)
