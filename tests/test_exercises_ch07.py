"""Chapter 7 checkers: the worked solutions pass, typical mistakes are named, nothing raises."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils.causal import top_p_filter
from course_utils.exercises import ch07


def cache_mask(t_new, t_past):
    return np.tril(np.ones((t_new, t_past + t_new), dtype=bool), k=t_past)


def cache_bytes(n_layers, n_kv_heads, d_head, seq_len, bytes_per_value):
    return 2 * n_layers * n_kv_heads * d_head * seq_len * bytes_per_value


def next_token_probs(logits, temperature):
    return torch.softmax(logits / temperature, dim=-1)


@pytest.mark.parametrize(
    ("checker", "answer"),
    [
        (ch07.check_cache_mask, cache_mask),
        (ch07.check_cache_mask, lambda n, p: torch.from_numpy(cache_mask(n, p))),
        (ch07.check_cache_mask, lambda n, p: cache_mask(n, p).tolist()),
        (ch07.check_kv_cache_bytes, cache_bytes),
        (ch07.check_kv_cache_bytes, lambda *a: float(cache_bytes(*a))),
        (ch07.check_next_token_probs, next_token_probs),
        (ch07.check_next_token_probs, lambda z, t: next_token_probs(z.float(), t)),
        (ch07.check_next_token_probs, lambda z, t: next_token_probs(z, t).numpy().tolist()),
        (ch07.check_next_token_probs, lambda z, t: next_token_probs(z.requires_grad_(), t)),
    ],
)
def test_solutions_pass(checker, answer):
    fb = checker(answer)
    assert fb, str(fb)


@pytest.mark.parametrize(
    ("checker", "answer", "hint"),
    [
        (ch07.check_kv_cache_bytes, lambda L, h, d, T, b: L * h * d * T * b, "keys AND values"),
        (ch07.check_kv_cache_bytes, lambda L, h, d, T, b: 2 * h * d * T * b, "n_layers"),
        (ch07.check_kv_cache_bytes, lambda L, h, d, T, b: 16 * L * h * d * T * b, "not bits"),
        (ch07.check_next_token_probs, lambda z, t: torch.softmax(z * t, -1), "divide the logits"),
        (ch07.check_next_token_probs, lambda z, t: z / t, "softmax"),
        (
            ch07.check_next_token_probs,
            lambda z, t: torch.exp(z / t) / torch.exp(z / t).sum(),
            "largest logit",
        ),
    ],
)
def test_mistakes_are_named(checker, answer, hint):
    fb = checker(answer)
    assert not fb
    assert any(hint in h for h in fb.hints), str(fb)


@pytest.mark.parametrize(
    "checker", [ch07.check_cache_mask, ch07.check_kv_cache_bytes, ch07.check_next_token_probs]
)
@pytest.mark.parametrize(
    "answer", [..., None, 3, lambda *a: 1 / 0, lambda *a: None, lambda *a: "x", lambda: 0]
)
def test_never_raises(checker, answer):
    fb = checker(answer)
    assert not fb
    assert str(fb)


def test_top_left_mask_is_wrong():
    fb = ch07.check_cache_mask(lambda n, p: np.tril(np.ones((n, p + n), dtype=bool)))
    assert not fb


# --- exercise 7.4: token passes with and without the cache ----------------------------------------


def passes(P, N):
    return N * P + N * (N - 1) // 2, P + N - 1


@pytest.mark.parametrize(
    "answer",
    [
        passes,
        lambda P, N: [sum(P + t for t in range(N)), P + N - 1],
        lambda P, N: np.array(passes(P, N)),
        lambda P, N: tuple(torch.tensor(x) for x in passes(P, N)),
        lambda P, N: (float(passes(P, N)[0]), float(passes(P, N)[1])),
    ],
    ids=["tuple", "list-loop", "numpy", "torch", "floats"],
)
def test_token_passes_right(answer):
    assert ch07.check_token_passes(answer)


def test_token_passes_equal_what_generate_runs():
    """The checker's count is what `generate` feeds the model, counted by a hook on the model."""
    from course_utils.causal import TinyCausalLM, generate

    model = TinyCausalLM(10, 64).eval()
    fed = []
    model.register_forward_pre_hook(
        lambda m, args, kwargs: fed.append(args[0].shape[1]), with_kwargs=True
    )
    for use_cache in (False, True):
        fed.clear()
        generate(model, [1, 2, 3, 4, 5], 9, use_cache=use_cache)
        assert sum(fed) == passes(5, 9)[use_cache]


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda P, N: (passes(P, N)[0], P + N), "never fed back in"),
        (lambda P, N: (passes(P, N)[0] + N, P + N - 1), "not P + t + 1"),
        (lambda P, N: (N * (P + N), P + N - 1), "not N times the final length"),
        (lambda P, N: passes(P, N)[::-1], "the first number is without the cache"),
    ],
)
def test_token_passes_mistakes(answer, hint):
    fb = ch07.check_token_passes(answer)
    assert not fb and hint in fb.hints[0]


@pytest.mark.parametrize("answer", [..., None, "abc", lambda *a: 1 / 0, lambda *a: 5])
def test_token_passes_never_raises(answer):
    assert not ch07.check_token_passes(answer)


# --- exercise 7.5: top-p by hand --------------------------------------------------------------


def _nucleus(logits, temperature, p, *, keep_rule="right", sort=True, temp_after=False,
             renorm="sum"):  # fmt: skip
    """A learner's top-p by hand in numpy, right by default; each keyword is one typical slip."""
    z = np.asarray(logits, dtype=np.float64)
    scaled = z if temp_after else z / temperature
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    order = np.argsort(-probs, kind="stable") if sort else np.arange(z.size)
    total, keep = 0.0, np.zeros(z.size, dtype=bool)
    for j in order:
        if keep_rule == "right" and total >= p:  # the tokens before already reach p
            break
        if keep_rule == "lte" and total > p:
            break
        if keep_rule == "no_crossing" and total + probs[j] >= p:
            break
        keep[j] = True
        total += probs[j]
    if temp_after:
        probs = np.exp(z / temperature - (z / temperature).max())
        probs /= probs.sum()
    kept = np.where(keep, probs, 0.0)
    if renorm == "sum":
        return kept / kept.sum()
    if renorm == "softmax":
        return torch.softmax(torch.tensor(np.where(keep, probs, -np.inf)), -1)
    return kept


def _torch_nucleus(z, tau, p):
    """The same rule with torch and the descending cumulative sum (Holtzman et al.'s wording)."""
    probs = torch.softmax(z / tau, dim=-1)
    desc, order = probs.sort(descending=True)
    keep_sorted = desc.cumsum(-1) - desc < p  # the mass before each token is still below p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    kept = probs * keep
    return kept / kept.sum()


@pytest.mark.parametrize(
    "answer",
    [
        _nucleus,
        _torch_nucleus,
        lambda z, tau, p: _torch_nucleus(z.float(), tau, p),
        lambda z, tau, p: _nucleus(z, tau, p).tolist(),
        lambda z, tau, p: torch.softmax(top_p_filter(z / tau, p), dim=-1),
    ],
    ids=["numpy-loop", "torch", "float32", "list", "package"],
)
def test_nucleus_right(answer):
    fb = ch07.check_nucleus(answer)
    assert fb, str(fb)


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda z, tau, p: _nucleus(z, tau, p, keep_rule="no_crossing"), "crosses p"),
        (lambda z, tau, p: _nucleus(z, tau, p, keep_rule="lte"), "using <, not <="),
        (lambda z, tau, p: _nucleus(z, tau, p, sort=False), "sort the tokens"),
        (lambda z, tau, p: _nucleus(z, tau, p, temp_after=True), "temperature BEFORE"),
        (lambda z, tau, p: _nucleus(z, tau, p, renorm="none"), "renormalise: divide"),
        (lambda z, tau, p: _nucleus(z, tau, p, renorm="softmax"), "not with another softmax"),
    ],
    ids=["no-crossing", "lte", "unsorted", "temperature-after", "no-renorm", "softmax-renorm"],
)
def test_nucleus_mistakes_are_named(answer, hint):
    fb = ch07.check_nucleus(answer)
    assert not fb
    assert any(hint in h for h in fb.hints), str(fb)


def test_nucleus_boundary_case_is_exact_in_floating_point():
    """The exact-boundary case only tells < from <= if its sums are exact: 1/2 + 1/4 is 3/4."""
    _, z, tau, p = ch07.nucleus_cases()[1]
    probs = torch.softmax(torch.tensor(z) / tau, -1)
    assert probs.tolist() == [0.125, 0.5, 0.125, 0.25]
    assert float(probs[1] + probs[3]) == p


@pytest.mark.parametrize(
    "answer",
    [..., None, 3, lambda *a: 1 / 0, lambda *a: None, lambda *a: "x", lambda: 0,
     lambda z, tau, p: [float("nan")] * len(z), lambda z, tau, p: z[:2]],
)  # fmt: skip
def test_nucleus_never_raises(answer):
    fb = ch07.check_nucleus(answer)
    assert not fb
    assert str(fb)


# --- exercise 7.6: what a streaming cache holds -----------------------------------------------


def _view(n, window, n_sink, *, sinks=True, extra=0, query="cache"):
    """A learner's answer, right by default; each keyword is one typical slip."""
    first = list(range(min(n_sink, n))) if sinks else []
    start = max(len(first), n - window - extra)
    held = first + list(range(start, n))
    pos = {"cache": len(held) - 1, "text": n - 1, "from one": len(held)}[query]
    return held, pos


def _view_independent(n, window, n_sink):
    """StreamingLLM's rule written as a filter over the stream (the paper's figure 1 (d)):
    token j is held iff it is a sink or among the last `window`."""
    held = [j for j in range(n) if j < n_sink or j >= n - window]
    return held, len(held) - 1


@pytest.mark.parametrize(
    "answer",
    [
        _view,
        _view_independent,
        lambda n, w, s: tuple(np.array(x) for x in _view(n, w, s)),
        lambda n, w, s: (torch.tensor(_view(n, w, s)[0]), torch.tensor(_view(n, w, s)[1])),
        lambda n, w, s: [_view(n, w, s)[0], float(_view(n, w, s)[1])],
    ],
    ids=["lists", "filter", "numpy", "torch", "float-position"],
)
def test_streaming_view_right(answer):
    fb = ch07.check_streaming_view(answer)
    assert fb, str(fb)


def test_streaming_view_cases_agree_with_the_rule_written_independently():
    """The checker's expected values (read off StreamingKVCache) equal the paper's rule."""
    for n, w, s in [(1000, 124, 4), (10, 3, 2), (20, 6, 0), (5, 8, 4), (3, 2, 4), (7, 1, 1)]:
        assert ch07._streaming_view(n, w, s) == _view_independent(n, w, s)


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda n, w, s: _view(n, w, s, sinks=False), "the first n_sink tokens stay as well"),
        (lambda n, w, s: _view(n, w, s, extra=1), "the window counts the newest token itself"),
        (lambda n, w, s: _view(n, w, s, extra=-1), "not only window - 1 of them"),
        (lambda n, w, s: ([p + 1 for p in _view(n, w, s)[0]], 0), "the first token is position 0"),
        (lambda n, w, s: _view(n, w, s, query="text"), "by place in the cache, not in the text"),
        (lambda n, w, s: _view(n, w, s, query="from one"), "not L"),
        (lambda n, w, s: (_view(n, w, s)[0], min(w, n) - 1), "the sinks are in the cache too"),
    ],
    ids=["no-sinks", "window+1", "window-1", "from-one", "text-position", "L", "no-sink-offset"],
)
def test_streaming_view_mistakes_are_named(answer, hint):
    fb = ch07.check_streaming_view(answer)
    assert not fb
    assert any(hint in h for h in fb.hints), str(fb)


@pytest.mark.parametrize(
    "answer",
    [..., None, 3, lambda *a: 1 / 0, lambda *a: None, lambda *a: "x", lambda: 0,
     lambda n, w, s: ([float("nan")], 0), lambda n, w, s: ([0, 1], "a"),
     lambda n, w, s: ([0, 1], [1, 2]), lambda n, w, s: (1, 2, 3)],
)  # fmt: skip
def test_streaming_view_never_raises(answer):
    fb = ch07.check_streaming_view(answer)
    assert not fb
    assert str(fb)
