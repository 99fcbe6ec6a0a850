"""Checkers of chapter 5: worked solutions pass (numpy, torch, float32, lists), typical mistakes get
their specific hint, and nothing raises."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch

from course_utils.exercises import ch05
from course_utils.positions import rope_inverse_frequencies


def sinusoid(n_positions, d_model, *, swap=False, exponent=2.0, halves=False, start=0):
    p = np.arange(start, start + n_positions)[:, None]
    i = np.arange(d_model // 2)[None, :]
    angle = p / 10000 ** (exponent * i / d_model)
    a, b = (np.cos(angle), np.sin(angle)) if swap else (np.sin(angle), np.cos(angle))
    if halves:
        return np.concatenate([a, b], axis=1)
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2], pe[:, 1::2] = a, b
    return pe


def rope(x, positions, base, *, sign=1.0, interleaved=False, exponent=2.0, use_pos=True):
    T, d = x.shape
    theta = base ** (-exponent * np.arange(d // 2) / d)
    pos = positions if use_pos else np.ones_like(positions)
    ang = sign * pos[:, None] * theta
    if interleaved:
        a, b = x[:, 0::2], x[:, 1::2]
    else:
        a, b = x[:, : d // 2], x[:, d // 2 :]
    ra, rb = a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)
    if interleaved:
        return np.stack([ra, rb], axis=-1).reshape(T, d)
    return np.concatenate([ra, rb], axis=1)


def rope_torch_f32(x, positions, base):
    """A torch float32 answer with requires_grad, as a learner might write it."""
    xt = torch.tensor(x, dtype=torch.float32, requires_grad=True)
    d = x.shape[1]
    theta = base ** (-2 * torch.arange(d // 2) / d)
    ang = torch.tensor(positions)[:, None] * theta
    a, b = xt[:, : d // 2], xt[:, d // 2 :]
    return torch.cat([a * ang.cos() - b * ang.sin(), a * ang.sin() + b * ang.cos()], dim=1)


def alibi(n_heads, T, *, sign=-1.0, absolute=True, reverse=False, first_one=False):
    h = np.arange(n_heads)
    m = 2.0 ** (-8.0 * (h if first_one else h + 1) / n_heads)
    if reverse:
        m = m[::-1]
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    dist = np.abs(i - j) if absolute else (i - j)
    return sign * m[:, None, None] * dist


SOLUTIONS = [
    (ch05.check_sinusoidal, sinusoid),
    (ch05.check_sinusoidal, lambda n, d: sinusoid(n, d).astype(np.float32).tolist()),
    (ch05.check_rope, rope),
    (ch05.check_rope, rope_torch_f32),
    (ch05.check_alibi, alibi),
    (ch05.check_alibi, lambda n, T: torch.tensor(alibi(n, T), dtype=torch.float32)),
    (ch05.check_learned_parameters, lambda n, d: n * d),
    (ch05.check_learned_parameters, lambda n, d: torch.nn.Embedding(n, d).weight.numel()),
]


@pytest.mark.parametrize(("checker", "solution"), SOLUTIONS)
def test_worked_solutions_pass(checker, solution):
    fb = checker(solution)
    assert fb, str(fb)
    assert "✗" not in str(fb)


@pytest.mark.parametrize(
    "checker",
    [ch05.check_sinusoidal, ch05.check_rope, ch05.check_alibi, ch05.check_learned_parameters],
)
def test_starter_code_gets_feedback_not_an_exception(checker):
    def starter(*args): ...

    fb = checker(starter)
    assert not fb and "returned None" in str(fb)
    assert not checker(...)
    assert "expected the function" in str(checker(42))

    def boom(*args):
        raise RuntimeError("oops")

    fb = checker(boom)
    assert not fb and "RuntimeError: oops" in str(fb)


MISTAKES = [
    (ch05.check_sinusoidal, lambda n, d: sinusoid(n, d, swap=True), "swapped"),
    (ch05.check_sinusoidal, lambda n, d: sinusoid(n, d, exponent=1.0), "not i/d_model"),
    (ch05.check_sinusoidal, lambda n, d: sinusoid(n, d, exponent=4.0), "index of the PAIR"),
    (ch05.check_sinusoidal, lambda n, d: sinusoid(n, d, halves=True), "interleaves them"),
    (ch05.check_sinusoidal, lambda n, d: sinusoid(n, d, start=1), "start at 0"),
    (ch05.check_sinusoidal, lambda n, d: sinusoid(n, d)[:, :-1], "has shape"),
    (ch05.check_rope, lambda x, p, b: rope(x, p, b, interleaved=True), "interleaved pairing"),
    (ch05.check_rope, lambda x, p, b: rope(x, p, b, sign=-1.0), "wrong way"),
    (ch05.check_rope, lambda x, p, b: rope(x, p, b, exponent=1.0), "not base^(-i/d)"),
    (ch05.check_rope, lambda x, p, b: rope(x, p, b, use_pos=False), "leave out the position"),
    (ch05.check_alibi, lambda n, T: alibi(n, T, sign=1.0), "penalty"),
    (ch05.check_alibi, lambda n, T: alibi(n, T, absolute=False), "|i - j|"),
    (ch05.check_alibi, lambda n, T: alibi(n, T, reverse=True), "go down from head 0"),
    (ch05.check_alibi, lambda n, T: alibi(n, T, first_one=True), "not 1"),
    (ch05.check_learned_parameters, lambda n, d: n + d, "multiply"),
    (ch05.check_learned_parameters, lambda n, d: n * d // 2, "one row per position"),
]


@pytest.mark.parametrize(("checker", "wrong", "hint"), MISTAKES)
def test_typical_mistakes_get_their_hint(checker, wrong, hint):
    fb = checker(wrong)
    assert not fb
    assert hint in str(fb), str(fb)


def test_nan_and_non_numeric_answers_get_feedback():
    fb = ch05.check_rope(lambda x, p, b: np.full_like(x, np.nan))
    assert not fb and "NaN" in str(fb)
    fb = ch05.check_alibi(lambda n, T: "bias")
    assert not fb and "numeric" in str(fb)


# --- exercises 5.6 and 5.7: derive M_k's block, count the pairs that never complete a turn --------


def shift_block(k, theta, *, sign=1.0, angle=None):
    a = k * theta if angle is None else angle
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, sign * s], [-sign * s, c]])


@pytest.mark.parametrize(
    "answer",
    [
        shift_block,
        lambda k, th: torch.tensor(shift_block(k, th)),
        lambda k, th: shift_block(k, th).astype(np.float32),
        lambda k, th: shift_block(k, th).tolist(),
    ],
    ids=["numpy", "torch", "float32", "list"],
)
def test_shift_block_right(answer):
    assert ch05.check_shift_block(answer)


def test_shift_block_equals_the_package_matrix():
    from course_utils.positions import sinusoid_shift_matrix, sinusoidal_encoding

    pe = sinusoidal_encoding(20, 2)  # pair 0: theta = 1
    assert np.allclose(shift_block(4, 1.0) @ pe[3], pe[7])
    assert np.allclose(sinusoid_shift_matrix(4, 2), shift_block(4, 1.0))


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda k, th: shift_block(k, th, sign=-1.0), "turns the pair the wrong way"),
        (lambda k, th: shift_block(k, th, angle=th), "k·θ, not θ alone"),
        (lambda k, th: shift_block(k, th, angle=k), "not k alone"),
        (lambda k, th: np.eye(2), "not the identity"),
    ],
)
def test_shift_block_mistakes(answer, hint):
    fb = ch05.check_shift_block(answer)
    assert not fb and hint in fb.hints[0]


def slow_pairs(d, base, context, *, exponent=2.0, turn=2 * np.pi):
    theta = base ** (-exponent * np.arange(d // 2) / d)
    return int((context * theta < turn).sum())


@pytest.mark.parametrize(
    "answer",
    [
        slow_pairs,
        lambda d, b, c: np.int64(slow_pairs(d, b, c)),
        lambda d, b, c: torch.tensor(float(slow_pairs(d, b, c))),
        lambda d, b, c: sum(1 for i in range(d // 2) if 2 * np.pi / b ** (-2 * i / d) > c),
    ],
    ids=["int", "numpy", "torch", "wavelengths"],
)
def test_slow_pairs_right(answer):
    assert ch05.check_slow_pairs(answer)


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda d, b, c: d // 2 - slow_pairs(d, b, c), "do complete a turn"),
        (lambda d, b, c: 2 * slow_pairs(d, b, c), "not dimensions"),
        (lambda d, b, c: slow_pairs(d, b, c, turn=1.0), "2π radians, not 1"),
        (lambda d, b, c: slow_pairs(d, b, c, exponent=1.0), "the exponent has 2i"),
    ],
)
def test_slow_pairs_mistakes(answer, hint):
    fb = ch05.check_slow_pairs(answer)
    assert not fb and hint in fb.hints[0]


@pytest.mark.parametrize("checker", [ch05.check_shift_block, ch05.check_slow_pairs])
@pytest.mark.parametrize("answer", [..., None, "abc", lambda *a: 1 / 0, lambda *a: None])
def test_new_checkers_never_raise(checker, answer):
    assert not checker(answer)


def interpolated_angle(m, i, d, base, factor, *, exponent=2.0, first=0, mode="divide"):
    theta = base ** (-exponent * (i + first) / d)
    if mode == "multiply":
        return m * theta * factor
    if mode == "plain":
        return m * theta
    if mode == "floor":
        return (m // factor) * theta
    if mode == "twice":
        return m * theta / factor**2
    return m * theta / factor


@pytest.mark.parametrize(
    "answer",
    [
        interpolated_angle,
        lambda m, i, d, b, s: np.float32(interpolated_angle(m, i, d, b, s)),
        lambda m, i, d, b, s: torch.tensor(interpolated_angle(m, i, d, b, s)),
        lambda m, i, d, b, s: (m / s) / b ** (2 * i / d),
        lambda m, i, d, b, s: (
            float(rope_inverse_frequencies(d, b, {"type": "linear", "factor": s})[0][i]) * m
        ),
    ],
    ids=["float", "float32", "torch", "position-over-s", "package"],
)
def test_interpolated_angle_right(answer):
    assert ch05.check_interpolated_angle(answer)


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (partial(interpolated_angle, mode="multiply"), "divide by the factor, do not multiply"),
        (partial(interpolated_angle, mode="plain"), "plain RoPE's angle"),
        (partial(interpolated_angle, exponent=1.0), "the exponent has 2i"),
        (partial(interpolated_angle, first=1), "pairs are counted from 0"),
        (partial(interpolated_angle, mode="floor"), "not rounded"),
        (partial(interpolated_angle, mode="twice"), "divide by the factor once"),
    ],
    ids=["multiplied", "plain", "exponent", "from-1", "floor", "twice"],
)
def test_interpolated_angle_mistakes(answer, hint):
    fb = ch05.check_interpolated_angle(answer)
    assert not fb and hint in fb.hints[0], fb


@pytest.mark.parametrize(
    "answer",
    [
        lambda m, i, d, b, s: ...,
        lambda m, i, d, b, s: 1 / 0,
        lambda m, i, d, b, s: "3.0",
        lambda m, i, d, b, s: [1.0, 2.0],
        lambda m, i, d, b, s: float("nan"),
        lambda m, i, d, b, s: None,
        "not a function",
    ],
    ids=["stub", "raises", "text", "array", "nan", "none", "not-callable"],
)
def test_interpolated_angle_broken_answers_get_feedback(answer):
    fb = ch05.check_interpolated_angle(answer)
    assert not fb and fb.messages
