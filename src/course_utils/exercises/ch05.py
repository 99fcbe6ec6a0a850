"""Checkers for the exercises of chapter 5, "Where is each word? Positional information".

The learner writes a function; the checker calls it on its own cases (sizes the chapter never used,
so a hard-coded answer fails) and compares with :mod:`course_utils.positions`. Answers may be numpy
arrays, torch tensors (also with ``requires_grad``), float32 or lists. A checker never raises.

- :func:`check_sinusoidal`: ``sinusoid(n_positions, d_model)``, the encoding matrix;
- :func:`check_rope`: ``rope(x, positions, base)``, rotate-half RoPE of ``x`` ``(T, d)``;
- :func:`check_alibi`: ``alibi(n_heads, T)``, the ALiBi bias ``(n_heads, T, T)``;
- :func:`check_learned_parameters`: ``count(max_positions, d_model)``, the size of a learned table.

>>> from course_utils.positions import sinusoidal_encoding
>>> bool(check_sinusoidal(lambda n, d: sinusoidal_encoding(n, d)))
True
>>> print(check_learned_parameters(lambda n, d: n + d).hints[0])
one vector of d_model numbers per position: multiply, don't add
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..i18n import t
from ..positions import alibi_bias, alibi_slopes, apply_rope, sinusoidal_encoding
from ._checks import Mistake, check_array, described_cases
from ._feedback import Feedback
from ._learner import run_cases

__all__ = ["check_alibi", "check_learned_parameters", "check_rope", "check_sinusoidal"]

_SEED = 2021
_ATOL = 1e-5  # float32 answers round at about 1e-7 relative; entries here are of order 1


# --- exercise 5.1: the sinusoidal encoding -------------------------------------------------------


def _sinusoid_variant(
    n: int, d: int, *, swap=False, exponent=2.0, halves=False, start=0, per_column=False
):
    p = np.arange(start, start + n, dtype=np.float64)[:, None]  # (n, 1)
    i = np.arange(d // 2)[None, :]  # (1, d/2)
    angle = p / 10000.0 ** (exponent * i / d)  # (n, d/2)
    if per_column:  # column c uses c / d_model: the cosine of a pair gets its own frequency
        c = np.arange(d)[None, :]  # (1, d)
        angle_c = p / 10000.0 ** (c / d)  # (n, d)
        out = np.empty((n, d))
        out[:, 0::2], out[:, 1::2] = np.sin(angle_c[:, 0::2]), np.cos(angle_c[:, 1::2])
        return out
    first, second = (np.cos(angle), np.sin(angle)) if swap else (np.sin(angle), np.cos(angle))
    if halves:
        return np.concatenate([first, second], axis=1)  # (n, d)
    out = np.empty((n, d))
    out[:, 0::2], out[:, 1::2] = first, second
    return out


def check_sinusoidal(sinusoid: Callable[[int, int], Any]) -> Feedback:
    """Check ``sinusoid(n_positions, d_model)`` against :func:`sinusoidal_encoding` (base 10000).

    >>> print(check_sinusoidal(lambda n, d: sinusoidal_encoding(n, d)[:, ::-1]))
    ... # doctest: +ELLIPSIS
    ✗ sinusoidal encoding: not yet right
      - test case: n_positions = 4, d_model = 2
      ...
    """
    title = "sinusoidal encoding"

    def compare(result: Any, n: int, d: int) -> Feedback:
        mistakes = [
            Mistake(
                "sine and cosine are swapped: even columns 2i hold sin, odd columns 2i+1 hold cos",
                _sinusoid_variant(n, d, swap=True),
            ),
            Mistake(
                "the exponent is 2i/d_model with i the index of the PAIR (0 .. d_model/2 - 1), "
                "not of the column",
                _sinusoid_variant(n, d, exponent=4.0),
            ),
            Mistake(
                "the exponent is 2i/d_model, not i/d_model",
                _sinusoid_variant(n, d, exponent=1.0),
            ),
            Mistake(
                "you put all sines in the first half and all cosines in the second; the paper "
                "interleaves them: column 2i is sin, column 2i+1 is cos",
                _sinusoid_variant(n, d, halves=True),
            ),
            Mistake("positions start at 0, not 1", _sinusoid_variant(n, d, start=1)),
            Mistake(
                "sin and cos of a pair share one frequency: column 2i+1 uses the same angle "
                "p / 10000^(2i/d_model) as column 2i, not p / 10000^((2i+1)/d_model)",
                _sinusoid_variant(n, d, per_column=True),
            ),
        ]
        expected = sinusoidal_encoding(n, d)  # (n, d)
        return check_array(title, result, expected, mistakes=mistakes, atol=_ATOL)

    sizes = ((4, 2), (10, 8), (50, 16), (7, 6))
    cases = [(f"n_positions = {n}, d_model = {d}", (n, d)) for n, d in sizes]
    passed = "all {n} cases equal PE(p, 2i) = sin, PE(p, 2i+1) = cos"
    return run_cases(title, sinusoid, "sinusoid", cases, compare, passed)


# --- exercise 5.2: RoPE, rotate-half ------------------------------------------------------------


def _rope_cases() -> list[tuple[str, tuple[np.ndarray, np.ndarray, float]]]:
    rng = np.random.default_rng(_SEED)
    cases = [
        (rng.normal(size=(3, 2)).round(2), np.array([0, 1, 2]), 10000.0),
        (rng.normal(size=(5, 8)).round(2), np.array([0, 1, 2, 3, 4]), 10000.0),
        (rng.normal(size=(4, 6)).round(2), np.array([7, 3, 100, 0]), 100.0),
    ]
    return [
        (
            t(
                "x of shape {shape}, positions {p}, base {base:g}",
                shape=x.shape,
                p=p.tolist(),
                base=base,
            ),
            (x, p, base),
        )
        for x, p, base in cases
    ]


def check_rope(rope: Callable[[np.ndarray, np.ndarray, float], Any]) -> Feedback:
    """Check ``rope(x, positions, base)`` (``x`` a numpy ``(T, d)``, ``positions`` ints ``(T,)``).

    The expected answer is :func:`course_utils.positions.apply_rope` with the rotate-half pairing.

    >>> def rope(x, positions, base):
    ...     return apply_rope(torch.from_numpy(x), torch.from_numpy(positions), base=base)
    >>> bool(check_rope(rope))
    True
    """
    title = "RoPE"

    def compare(result: Any, x: np.ndarray, positions: np.ndarray, base: float) -> Feedback:
        xt, pt = torch.from_numpy(x), torch.from_numpy(positions)
        d = x.shape[1]
        expected = apply_rope(xt, pt, base=base).numpy()  # (T, d)
        theta_wrong = base ** (-np.arange(d // 2) / d)  # (d/2,): exponent i/d instead of 2i/d
        a, b = x[:, : d // 2], x[:, d // 2 :]
        ang = positions[:, None] * theta_wrong  # (T, d/2)
        half_wrong = np.concatenate(
            [a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)], axis=1
        )
        mistakes = [
            Mistake(
                "you paired dimension 2i with 2i+1 (the RoFormer paper's interleaved pairing); "
                "this exercise uses rotate-half, as GPT-NeoX and Hugging Face transformers do: "
                "dimension i with i + d/2",
                apply_rope(xt, pt, base=base, interleaved=True),
            ),
            Mistake(
                "the rotation goes the wrong way: (a, b) -> (a cos - b sin, a sin + b cos)",
                apply_rope(xt, -pt, base=base),
            ),
            Mistake("theta_i = base^(-2i/d), not base^(-i/d)", half_wrong),
            Mistake(
                "the angle is position × theta_i: did you leave out the position?",
                apply_rope(xt, torch.ones_like(pt), base=base),
            ),
        ]
        return check_array(title, result, expected, mistakes=mistakes, atol=_ATOL)

    passed = "all {n} cases equal apply_rope (rotate-half pairing)"
    return run_cases(title, rope, "rope", _rope_cases(), compare, passed)


# --- exercise 5.3: ALiBi ------------------------------------------------------------------------


def check_alibi(alibi: Callable[[int, int], Any]) -> Feedback:
    """Check ``alibi(n_heads, T)`` -> ``(n_heads, T, T)`` with ``-m_h |i - j|`` (power-of-2 heads).

    >>> bool(check_alibi(lambda n, T: alibi_bias(n, T)))
    True
    >>> print(check_alibi(lambda n, T: -alibi_bias(n, T)))
    ✗ ALiBi: not yet right
      - test case: n_heads = 2, T = 3
      - entry [0, 0, 1] is 0.0625, expected -0.0625
      - 12 of 18 entries differ
      hint: the bias is a penalty: it must be negative (or zero), -m_h × distance
    """
    title = "ALiBi"

    def compare(result: Any, n_heads: int, T: int) -> Feedback:
        expected = alibi_bias(n_heads, T).double().numpy()  # (n_heads, T, T)
        slopes = alibi_slopes(n_heads).numpy()  # (n_heads,)
        i, j = np.arange(T)[:, None], np.arange(T)[None, :]
        mistakes = [
            Mistake(
                "the bias is a penalty: it must be negative (or zero), -m_h × distance",
                -expected,
            ),
            Mistake(
                "use the distance |i - j|: -m_h × (i - j) rewards keys to the right of the query",
                -slopes[:, None, None] * (i - j),
            ),
            Mistake(
                "the slopes go down from head 0: m_0 = 2^(-8/n) is the largest, the last is 2^-8",
                expected[::-1],
            ),
            Mistake(
                "the first slope is 2^(-8/n), not 1: m_h = 2^(-8(h+1)/n) for h = 0 .. n-1",
                -(2.0 ** (-8.0 * np.arange(n_heads) / n_heads))[:, None, None] * np.abs(i - j),
            ),
        ]
        return check_array(title, result, expected, mistakes=mistakes, atol=_ATOL)

    cases = [(f"n_heads = {h}, T = {T}", (h, T)) for h, T in ((2, 3), (8, 5), (4, 6), (16, 4))]
    return run_cases(title, alibi, "alibi", cases, compare, "all {n} cases equal alibi_bias")


# --- exercise 5.4: the cost of a learned table ---------------------------------------------------


def check_learned_parameters(count: Callable[[int, int], Any]) -> Feedback:
    """Check ``count(max_positions, d_model)``: parameters of a learned position table.

    >>> bool(check_learned_parameters(lambda n, d: n * d))
    True
    """
    title = "learned position parameters"

    def compare(result: Any, n: int, d: int) -> Feedback:
        expected = n * d  # = torch.nn.Embedding(n, d).weight.numel(), one row per position
        mistakes = [
            Mistake("one vector of d_model numbers per position: multiply, don't add", n + d),
            Mistake("the table has one row per position, not per pair of dimensions", n * d // 2),
        ]
        return check_array(title, result, np.array(expected), mistakes=mistakes, rtol=0)

    sizes = ((512, 384), (512, 768), (1024, 768), (1024, 1600))  # MiniLM, BERT, GPT-2, GPT-2 XL
    cases = [(f"max_positions = {n}, d_model = {d}", (n, d)) for n, d in sizes]
    return run_cases(title, count, "count", cases, compare, "all {n} tables counted right")


# --- exercise 5.6: derive the shift block M_k ----------------------------------------------------

__all__ += ["check_shift_block", "check_slow_pairs"]


def check_shift_block(shift_block: Callable[[int, float], Any]) -> Feedback:
    """Check ``shift_block(k, theta)``: the 2 × 2 block ``B`` with ``B @ (sin pθ, cos pθ) =
    (sin (p+k)θ, cos (p+k)θ)`` for every ``p``, against :func:`sinusoid_shift_matrix`.

    >>> def shift_block(k, theta):
    ...     c, s = np.cos(k * theta), np.sin(k * theta)
    ...     return np.array([[c, s], [-s, c]])
    >>> bool(check_shift_block(shift_block))
    True
    >>> print(check_shift_block(lambda k, th: shift_block(k, th).T).hints[0])  # doctest: +ELLIPSIS
    that block turns the pair the wrong way: ...
    """
    title = "shift block M_k"
    from ..positions import rope_frequencies, sinusoid_shift_matrix

    def rotation(angle: float, sign: float) -> np.ndarray:
        c, s = np.cos(angle), np.sin(angle)
        return np.array([[c, sign * s], [-sign * s, c]])  # (2, 2)

    def compare(result: Any, k: int, theta: float, expected: np.ndarray) -> Feedback:
        mistakes = [
            Mistake(
                "that block turns the pair the wrong way: expand sin((p+k)θ) = sin(pθ)cos(kθ) + "
                "cos(pθ)sin(kθ) and read the first row off it (the pair is (sin, cos), not "
                "(cos, sin))",
                rotation(k * theta, -1.0),
            ),
            Mistake(
                "the angle is the offset times the frequency, k·θ, not θ alone",
                rotation(theta, 1.0),
            ),
            Mistake("the angle is k·θ, not k alone: multiply by the frequency", rotation(k, 1.0)),
            Mistake(
                "the block moves the pair k positions on: it is a rotation, not the identity",
                np.eye(2),
            ),
        ]
        return check_array(title, result, expected, atol=_ATOL, mistakes=mistakes)

    cases = []
    for k, d, base, i in [
        (3, 8, 10000.0, 0),
        (5, 8, 10000.0, 1),
        (-2, 16, 100.0, 3),
        (7, 4, 10.0, 1),
    ]:
        theta = float(rope_frequencies(d, base=base)[i])
        expected = sinusoid_shift_matrix(k, d, base=base)[2 * i : 2 * i + 2, 2 * i : 2 * i + 2]
        cases.append((t("k = {k}, theta = {theta:.4g}", k=k, theta=theta), (k, theta), expected))
    passed = "all {n} test cases equal the block of sinusoid_shift_matrix"
    return run_cases(title, shift_block, "shift_block", cases, compare, passed)


# --- exercise 5.7: how many pairs never complete a turn -------------------------------------------


def check_slow_pairs(count: Callable[[int, float, int], Any]) -> Feedback:
    """Check ``count(d, base, context)``: how many of the ``d/2`` RoPE pairs turn by less than one
    full circle (``2π``) over ``context`` positions, i.e. ``context · θ_i < 2π``.

    >>> def count(d, base, context):
    ...     theta = base ** (-2 * np.arange(d // 2) / d)
    ...     return int((context * theta < 2 * np.pi).sum())
    >>> bool(check_slow_pairs(count))
    True
    >>> print(check_slow_pairs(lambda d, b, c: d // 2 - count(d, b, c)).hints[0])
    you counted the pairs that do complete a turn (the fast ones); count the others
    """
    title = "slow pairs"
    from ..positions import rope_frequencies
    from ._checks import check_number

    def slow(d: int, base: float, context: int, *, exponent: float = 2.0, turn: float = 2 * np.pi):
        theta = base ** (-exponent * np.arange(d // 2) / d)  # (d/2,)
        return int((context * theta < turn).sum())

    def compare(result: Any, d: int, base: float, context: int) -> Feedback:
        theta = rope_frequencies(d, base=base)  # (d/2,)
        expected = int((context * theta < 2 * np.pi).sum())
        mistakes = [
            (
                d // 2 - expected,
                "you counted the pairs that do complete a turn (the fast ones); count the others",
            ),
            (2 * expected, "count pairs (there are d/2), not dimensions"),
            (
                slow(d, base, context, turn=1.0),
                "a full turn is 2π radians, not 1: a pair completes one when context · θ_i ≥ 2π",
            ),
            (
                slow(d, base, context, exponent=1.0),
                "θ_i = base^(-2i/d): the exponent has 2i, because pair i holds dimensions 2i and "
                "2i + 1",
            ),
        ]
        wrong = "got {value:g} pairs, expected {expected}"
        return check_number(title, result, expected, mistakes, wrong)

    sizes = [(64, 10000.0, 4096), (64, 100000.0, 8192), (128, 500000.0, 8192), (64, 10000.0, 100)]
    cases = described_cases("d = {d}, base = {base:g}, context = {context}", sizes)
    passed = "all {n} cases right"
    return run_cases(title, count, "count", cases, compare, passed)


# --- exercise 5.8: the angle after position interpolation -----------------------------------------

__all__ += ["check_interpolated_angle"]


def check_interpolated_angle(angle: Callable[[int, int, int, float, float], Any]) -> Feedback:
    """Check ``angle(m, i, d, base, factor)``: the angle by which pair ``i`` turns at position
    ``m`` under linear position interpolation with factor ``s`` (Chen et al. 2023),
    ``m · θ_i / s`` with ``θ_i = base^(-2i/d)``, against
    :func:`~course_utils.positions.rope_inverse_frequencies` (``"linear"``).

    >>> bool(check_interpolated_angle(lambda m, i, d, b, s: m * b ** (-2 * i / d) / s))
    True
    >>> print(check_interpolated_angle(lambda m, i, d, b, s: m * b ** (-2 * i / d) * s).hints[0])
    ... # doctest: +ELLIPSIS
    interpolation squeezes the positions, m becomes m/s: divide by the factor, ...
    """
    title = "interpolated angle"
    from ..positions import rope_inverse_frequencies
    from ._checks import check_number

    def compare(result: Any, m: int, i: int, d: int, base: float, factor: float) -> Feedback:
        inv_freq, _ = rope_inverse_frequencies(d, base, {"rope_type": "linear", "factor": factor})
        expected = m * float(inv_freq[i])

        def theta(exponent: float = 2.0, first: int = 0) -> float:
            return base ** (-exponent * (i + first) / d)

        mistakes = [
            (
                m * theta() * factor,
                "interpolation squeezes the positions, m becomes m/s: divide by the factor, "
                "do not multiply",
            ),
            (
                m * theta(),
                "that is plain RoPE's angle m·θ_i: position interpolation divides it by the "
                "factor s",
            ),
            (
                m * theta(exponent=1.0) / factor,
                "θ_i = base^(-2i/d): the exponent has 2i, because pair i holds dimensions 2i and "
                "2i + 1",
            ),
            (
                m * theta(first=1) / factor,
                "pairs are counted from 0: pair 0 has θ_0 = base^0 = 1",
            ),
            (
                (m // factor) * theta(),
                "the interpolated position m/s is not rounded: it may fall between two integers",
            ),
            (
                m * theta() / factor**2,
                "divide by the factor once: the angle is (m/s)·θ_i",
            ),
        ]
        wrong = "got {value:.6g} radians, expected {expected:.6g}"
        # 1e-6 relative: the angle computed in float32 (as transformers computes the
        # frequencies) and returned as a Python float is right; every mistake is off by more
        return check_number(title, result, expected, mistakes, wrong, atol=1e-6 * abs(expected))

    sizes = [
        (12000, 0, 128, 10000.0, 4.0),
        (100, 5, 64, 10000.0, 4.0),
        (50001, 30, 64, 500000.0, 8.0),
        (7, 2, 16, 100.0, 2.0),
    ]
    cases = [
        (
            t(
                "m = {m}, i = {i}, d = {d}, base = {base:g}, factor = {factor:g}",
                m=m,
                i=i,
                d=d,
                base=b,
                factor=s,
            ),
            (m, i, d, b, s),
        )
        for m, i, d, b, s in sizes
    ]
    passed = "all {n} cases right"
    return run_cases(title, angle, "angle", cases, compare, passed)
