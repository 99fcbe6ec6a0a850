"""Chapter 14's checkers: right answers in every form pass, typical mistakes get their hint."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils.exercises import ch14


def cache_ratio(n_local, n_global, window, T):
    return (n_local + n_global) * T / (n_global * T + n_local * min(T, window))


def cache_ratio_numpy(n_local, n_global, window, T):
    held = np.array([T] * n_global + [min(T, window)] * n_local)  # per layer
    return np.float32((n_local + n_global) * T / held.sum())


def sink_weights(scores, sinks):
    e = np.exp(scores)
    return e / (e.sum(-1, keepdims=True) + np.exp(sinks)[:, None, None])


def sink_weights_torch_f32(scores, sinks):
    s = torch.tensor(scores, dtype=torch.float32, requires_grad=True)
    k = torch.tensor(sinks, dtype=torch.float32)
    full = torch.cat([s, k[:, None, None].expand(*s.shape[:-1], 1)], dim=-1)
    return torch.softmax(full, dim=-1)[..., :-1]


def sink_weights_logsumexp(scores, sinks):
    # the stable way: subtract log(sum exp) computed with the sink included
    both = np.concatenate(
        [scores, np.broadcast_to(sinks[:, None, None], (*scores.shape[:-1], 1))], -1
    )
    top = both.max(-1, keepdims=True)
    lse = top + np.log(np.exp(both - top).sum(-1, keepdims=True))
    return np.exp(scores - lse).tolist()


def route(logits, k):
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    keep = np.argsort(-p, axis=-1)[:, :k]
    out = np.zeros_like(p)
    np.put_along_axis(out, keep, np.take_along_axis(p, keep, -1), -1)
    return out / out.sum(-1, keepdims=True)


def route_lowest(logits, k):
    # the k lowest experts' probabilities, renormalised
    keep = np.argsort(logits, axis=-1)[:, :k]
    out = np.zeros_like(logits)
    np.put_along_axis(out, keep, np.exp(np.take_along_axis(logits, keep, -1)), -1)
    return out / out.sum(-1, keepdims=True)


def route_gpt_oss_order(logits, k):
    x = torch.tensor(logits, dtype=torch.float32)
    top, idx = x.topk(k, dim=-1)
    return torch.zeros_like(x).scatter(-1, idx, torch.softmax(top, dim=-1))


def route_loops(logits, k):
    out = []
    for row in logits.tolist():
        order = sorted(range(len(row)), key=lambda e: -row[e])[:k]
        z = sum(np.exp(row[e]) for e in order)
        out.append([np.exp(row[e]) / z if e in order else 0.0 for e in range(len(row))])
    return out


@pytest.mark.parametrize(
    ("checker", "fn"),
    [
        (ch14.check_cache_ratio, cache_ratio),
        (ch14.check_cache_ratio, cache_ratio_numpy),
        (ch14.check_cache_ratio, lambda *a: torch.tensor(cache_ratio(*a))),
        (ch14.check_sink_weights, sink_weights),
        (ch14.check_sink_weights, sink_weights_torch_f32),
        (ch14.check_sink_weights, sink_weights_logsumexp),
        (ch14.check_route, route),
        (ch14.check_route, route_gpt_oss_order),
        (ch14.check_route, route_loops),
    ],
)
def test_right_answers_pass(checker, fn):
    fb = checker(fn)
    assert fb, str(fb)


def _renormalised_softmax(x):
    return np.exp(x) / np.exp(x).sum(-1, keepdims=True)


@pytest.mark.parametrize(
    ("checker", "fn", "hint"),
    [
        (
            ch14.check_cache_ratio,
            lambda n_l, n_g, w, T: 1 / cache_ratio(n_l, n_g, w, T),
            "how many times SMALLER",
        ),
        (ch14.check_cache_ratio, lambda n_l, n_g, w, T: (n_l + n_g) / n_g, "hold a cache too"),
        (ch14.check_cache_ratio, lambda n_l, n_g, w, T: T / min(T, w), "still keep every token"),
        (
            ch14.check_cache_ratio,
            lambda n_l, n_g, w, T: (n_l + n_g) * T / (n_g * T + n_l * w),
            "min(T, window), not window",
        ),
        (
            ch14.check_cache_ratio,
            lambda n_l, n_g, w, T: 100 * (1 - 1 / cache_ratio(n_l, n_g, w, T)),
            "not a percentage",
        ),
        (ch14.check_sink_weights, lambda s, k: _renormalised_softmax(s), "WITHOUT renormalising"),
        (
            ch14.check_sink_weights,
            lambda s, k: np.exp(s) / (np.exp(s).sum(-1, keepdims=True) + k[:, None, None]),
            "exp(sink)",
        ),
        (
            ch14.check_sink_weights,
            lambda s, k: np.exp(s) / (np.exp(s).sum(-1, keepdims=True) + np.exp(k[0])),
            "its own sink",
        ),
        (
            ch14.check_sink_weights,
            lambda s, k: np.concatenate(
                [s, np.broadcast_to(k[:, None, None], (*s.shape[:-1], 1))], -1
            ),
            "drop the sink's column",
        ),
        (
            ch14.check_route,
            lambda x, k: (
                route(x, k)
                * np.take_along_axis(_renormalised_softmax(x), np.argsort(-x, -1)[:, :k], -1).sum(
                    -1, keepdims=True
                )
            ),
            "renormalise",
        ),
        (ch14.check_route, lambda x, k: _renormalised_softmax(x), "keep only the k highest"),
        (ch14.check_route, lambda x, k: route_lowest(x, k), "LOWEST"),
        (
            ch14.check_route,
            lambda x, k: np.where(route(x, k) > 0, x, 0.0),
            "not the raw logits",
        ),
    ],
)
def test_mistakes_get_hints(checker, fn, hint):
    fb = checker(fn)
    assert not fb
    assert hint in str(fb), str(fb)


@pytest.mark.parametrize(
    "checker", [ch14.check_cache_ratio, ch14.check_sink_weights, ch14.check_route]
)
def test_starter_and_broken_answers_get_feedback(checker):
    def starter(*args): ...

    def broken(*args):
        raise ValueError("oops")

    for fn in (starter, broken, lambda *a: "text", lambda *a: [[1.0]]):
        fb = checker(fn)  # never raises
        assert not fb and fb.messages, str(fb)
    assert "replace the `...`" in str(checker(starter))


def test_hard_coded_answers_fail():
    # the values the chapter prints, returned whatever the input: the other cases catch them
    assert not ch14.check_cache_ratio(lambda *a: 5.77)
    assert not ch14.check_route(lambda x, k: np.full(np.shape(x), 1 / np.shape(x)[1]))


def test_the_cache_ratio_of_gemma_3_at_128k_is_the_chapters():
    # 6 T / (T + 5 · 1024) at T = 131072: what the chapter prints and glues as 5.77
    assert cache_ratio(5, 1, 1024, 131_072) == pytest.approx(5.7744, abs=1e-4)
    assert ch14.check_cache_ratio(lambda *a: cache_ratio(*a) + 0.004)  # three decimals suffice
    assert not ch14.check_cache_ratio(lambda *a: cache_ratio(*a) + 0.05)
