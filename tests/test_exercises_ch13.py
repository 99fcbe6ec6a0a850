"""Checkers of chapter 13: worked solutions pass (numpy and torch), typical mistakes get their hint,
the starter and crashing answers get feedback instead of a traceback."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils.exercises import ch13


def topic_share(weights, is_topic):
    return (np.asarray(weights) * np.asarray(is_topic)).sum(axis=-1)


def rollout(maps):
    L, _, T, _ = maps.shape
    R = np.eye(T)
    for layer in range(L):
        A = 0.5 * np.eye(T) + 0.5 * maps[layer].mean(axis=0)
        A = A / A.sum(axis=-1, keepdims=True)
        R = A @ R
    return R


def rollout_torch(maps):
    m = torch.as_tensor(maps, dtype=torch.float32)
    T = m.shape[-1]
    R = torch.eye(T)
    for layer in range(m.shape[0]):
        R = (0.5 * torch.eye(T) + 0.5 * m[layer].mean(0)) @ R
    return R.requires_grad_()


def precision_at_k(scores, is_topic, k):
    top = np.argsort(-np.asarray(scores), kind="stable")[:k]
    return float(np.asarray(is_topic)[top].mean())


SOLUTIONS = [
    (ch13.check_topic_share, topic_share),
    (ch13.check_topic_share, lambda w, m: torch.as_tensor(w * m).sum(-1)),
    (ch13.check_rollout, rollout),
    (ch13.check_rollout, rollout_torch),
    (ch13.check_precision_at_k, precision_at_k),
]


@pytest.mark.parametrize(("check", "solution"), SOLUTIONS)
def test_solutions_pass(check, solution):
    fb = check(solution)
    assert fb, str(fb)


def _rollout_wrong_order(maps):
    T = maps.shape[-1]
    R = np.eye(T)
    for layer in range(maps.shape[0]):
        R = R @ (0.5 * np.eye(T) + 0.5 * maps[layer].mean(axis=0))
    return R


def _rollout_no_residual(maps):
    R = np.eye(maps.shape[-1])
    for layer in range(maps.shape[0]):
        R = maps[layer].mean(axis=0) @ R
    return R


MISTAKES = [
    (
        ch13.check_topic_share,
        lambda w, m: (w * m).sum(-1) / np.maximum(m.sum(-1), 1),
        "averaged the weights",
    ),
    (ch13.check_topic_share, lambda w, m: m.mean(-1), "share of the *tokens*"),
    (ch13.check_topic_share, lambda w, m: (w * m).mean(-1), "divided by T"),
    (ch13.check_rollout, _rollout_wrong_order, "wrong order"),
    (ch13.check_rollout, _rollout_no_residual, "no residual"),
    (
        ch13.check_precision_at_k,
        lambda s, m, k: m[np.argsort(s, kind="stable")[:k]].mean(),
        "lowest",
    ),
    (
        ch13.check_precision_at_k,
        lambda s, m, k: m[np.argsort(-s, kind="stable")[:k]].sum() / m.sum(),
        "divided by the number of topic tokens",
    ),
]


@pytest.mark.parametrize(("check", "wrong", "hint"), MISTAKES)
def test_typical_mistakes_get_their_hint(check, wrong, hint):
    fb = check(wrong)
    assert not fb
    assert any(hint in h for h in fb.hints), str(fb)


@pytest.mark.parametrize(
    "check", [ch13.check_topic_share, ch13.check_rollout, ch13.check_precision_at_k]
)
def test_starter_crash_and_value_get_feedback(check):
    assert "still Ellipsis" in str(check(...))
    crash = check(lambda *a: 1 / 0)
    assert not crash and "ZeroDivisionError" in str(crash)
    assert "returned Ellipsis" in str(check(lambda *a: ...))
    assert "expected the function" in str(check(3.0))


# --- exercise 13.5: the uniform-attention baseline ----------------------------------------------


def uniform_pool(x, keep):
    return (x * keep[..., None]).sum(axis=1) / keep.sum(axis=1, keepdims=True)


def uniform_pool_softmax(x, keep):
    # attention pooling with every score 0: softmax over the real tokens, in torch
    scores = torch.zeros(keep.shape, dtype=torch.float64)
    scores = scores.masked_fill(~torch.as_tensor(keep), float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (B, T)
    return torch.einsum("bt,btd->bd", weights, torch.as_tensor(x))


@pytest.mark.parametrize(
    "answer",
    [uniform_pool, uniform_pool_softmax, lambda x, k: uniform_pool(x, k).astype(np.float32)],
)
def test_uniform_pool_accepts_every_right_form(answer):
    fb = ch13.check_uniform_pool(answer)
    assert fb, str(fb)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x, k: x.mean(axis=1), "padding was averaged in"),
        (lambda x, k: (x * k[..., None]).sum(1) / x.shape[1], "divided by T"),
        (lambda x, k: (x * k[..., None]).sum(1), "that is a sum"),
    ],
)
def test_uniform_pool_names_the_mistake(wrong, hint):
    fb = ch13.check_uniform_pool(wrong)
    assert not fb
    assert hint in str(fb), str(fb)


@pytest.mark.parametrize("answer", [..., None, lambda x, k: ..., lambda x, k: 1 / 0, 7])
def test_uniform_pool_broken_answers_get_feedback(answer):
    fb = ch13.check_uniform_pool(answer)
    assert not fb and fb.messages


# --- exercise 13.6: comprehensiveness and sufficiency by hand ----------------------------------


def _eraser_by_formula():
    # DeYoung et al.'s definitions written out from the table, independently of the package
    tab = ch13.ERASER_TABLE
    p = tab["p_full"]
    comp = np.mean([p - q for q in tab["p_without"]])
    suff = np.mean([p - q for q in tab["p_only"]])
    return comp, suff


@pytest.mark.parametrize(
    "answer",
    [
        _eraser_by_formula(),
        [round(v, 2) for v in _eraser_by_formula()],
        np.array(_eraser_by_formula(), dtype=np.float32),
        torch.tensor(_eraser_by_formula()),
        {"comprehensiveness": 0.517, "Sufficiency": 0.09},
    ],
)
def test_eraser_by_hand_accepts_every_right_form(answer):
    fb = ch13.check_eraser_by_hand(answer)
    assert fb, str(fb)


def test_eraser_by_hand_expected_is_the_papers_formula():
    comp, suff = _eraser_by_formula()
    assert comp == pytest.approx(0.5167, abs=1e-4) and suff == pytest.approx(0.09, abs=1e-9)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        ((0.09, 0.52), "swapped"),
        ((0.70, 0.02), "only the last bin"),
        ((0.30, 0.20), "only the first bin"),
        ((1.55, 0.27), "summed over the bins"),
        ((0.667, 0.333), "attention weights"),
        ((0.233, 0.567), "attention weights"),
        ((0.52, 0.333), "attention weights"),  # one half right
        ((0.383, 0.81), "probabilities after the change"),
        ((-0.52, -0.09), "signs are reversed"),
    ],
)
def test_eraser_by_hand_names_the_mistake(wrong, hint):
    fb = ch13.check_eraser_by_hand(wrong)
    assert not fb
    assert any(hint in h for h in fb.hints), str(fb)


@pytest.mark.parametrize(
    "answer", [..., None, "0.5, 0.1", (1.0, 2.0, 3.0), (float("nan"), 0.1), {"a": 1}, len, [[]]]
)
def test_eraser_by_hand_broken_answers_get_feedback(answer):
    fb = ch13.check_eraser_by_hand(answer)
    assert not fb and fb.messages
