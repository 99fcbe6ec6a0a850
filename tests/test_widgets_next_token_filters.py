"""course_utils.widgets.next_token_filters: what the bars show (the frames looked up as the
JavaScript does) equals the distribution ``generate`` samples from, computed by transformers'
own warpers (temperature, top-k, top-p); bad input is rejected clearly."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers.generation.logits_process import (
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from course_utils.widgets import NextTokenFilters
from course_utils.widgets._base import MAX_STATE_BYTES

from .system_tools import run_widget_dom

IDS = torch.zeros(1, 1, dtype=torch.long)  # the warpers take input_ids and ignore them


def _random(seed: int, n_prompts: int, vocab: int) -> NextTokenFilters:
    g = torch.Generator().manual_seed(seed)
    logits = 3 * torch.randn(n_prompts, vocab, generator=g, dtype=torch.float64)
    return NextTokenFilters([f"prompt {i}" for i in range(n_prompts)], logits, lambda i: f"t{i}")


def _transformers(logits: torch.Tensor, temperature: float, k: int, p: float) -> torch.Tensor:
    """transformers' sampling distribution: its warpers in generate's order, then softmax."""
    warpers = LogitsProcessorList([TemperatureLogitsWarper(temperature)])
    if k:
        warpers.append(TopKLogitsWarper(k))
    if p < 1:
        warpers.append(TopPLogitsWarper(p))
    return warpers(IDS, logits[None].clone())[0].softmax(-1)  # (vocab,)


@pytest.mark.parametrize(("seed", "n_prompts", "vocab"), [(0, 1, 60), (1, 2, 500), (2, 3, 41)])
def test_every_frame_equals_transformers_warpers(seed, n_prompts, vocab):
    w = _random(seed, n_prompts, vocab)
    logits = torch.as_tensor(w._logits)  # (n_prompts, vocab)
    grid = itertools.product(
        range(n_prompts), range(len(w.temperatures)), range(len(w.top_ks)), range(len(w.top_ps))
    )
    for i, t, k, p in grid:
        w.prompt_index, w.t_index, w.k_index, w.p_index = i, t, k, p
        oracle = _transformers(logits[i], w.temperatures[t], w.top_ks[k], w.top_ps[p])
        order = logits[i].topk(40).indices  # the tokens drawn, most probable first
        np.testing.assert_allclose(w.shown_probabilities, oracle[order].numpy(), atol=1e-4)
        assert w.kept_count == int((oracle > 0).sum())
        assert torch.equal(w.distribution(i, t, k, p), oracle)  # the package, bit for bit
        assert w.kept_mass == pytest.approx(
            float(torch.softmax(logits[i] / w.temperatures[t], -1)[oracle > 0].sum()), rel=1e-4
        )


def test_example_starts_with_top_p_only_and_fits_the_budget():
    w = NextTokenFilters.example()
    assert (w.top_k, w.top_p, w.temperature) == (None, 0.9, 1.0)
    assert w.kept_mass >= 0.9
    assert w.shown_probabilities.sum() == pytest.approx(1.0, abs=1e-4)
    assert w.data_bytes() < MAX_STATE_BYTES
    assert repr(w) == (
        "NextTokenFilters(prompt='the cat sat on the', temperature=1.0, top_k=None, top_p=0.9)"
    )


def test_top_k_1_keeps_one_token_and_a_cold_temperature_sharpens():
    w = _random(3, 1, 200)
    w.k_index = w.top_ks.index(1)
    assert w.kept_count == 1
    np.testing.assert_allclose(w.shown_probabilities[0], 1.0, atol=1e-6)
    w.k_index, w.p_index = 0, w.top_ps.index(0.9)
    counts = []
    for t in range(len(w.temperatures)):
        w.t_index = t
        counts.append(w.kept_count)
    assert counts == sorted(counts) and counts[0] < counts[-1]  # hotter: more tokens for 90 %


def test_spaces_are_shown_and_the_drawn_tokens_are_the_most_probable():
    logits = np.array([[0.0, 3.0, 1.0, 2.0, -1.0]])
    w = NextTokenFilters(["x"], logits, lambda i: f" w{i}\n", n_top=3)
    assert w.labels == [["␣w1↵", "␣w3↵", "␣w2↵"]]


def test_tied_logits_among_the_drawn_tokens_are_refused_when_they_break_the_order():
    logits = np.array([[2.0, 1.0, 1.0, 1.0, 0.0] + [-5.0] * 20])
    with pytest.raises(ValueError, match=r"out of the order of their logits \(tied logits"):
        NextTokenFilters(["x"], logits, str, n_top=5, top_ks=(0, 2), top_ps=(0.5, 1.0))


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((["a"], np.zeros((2, 5)), str), {}, ValueError, r"^logits must have shape \(n_prompts"),
        ((["a"], np.zeros(5), str), {}, ValueError, r"got \(5,\)"),
        ((["a"], [[0.0, np.inf]], str), {}, ValueError, r"^logits must be finite"),
        ((["a"], np.zeros((1, 5)), "labels"), {}, TypeError, r"^labels must be a function"),
        (("abc", np.zeros((1, 5)), str), {}, TypeError, r"prompts"),
        ((["a"] * 5, np.zeros((5, 5)), str), {}, ValueError, r"^prompts must be 1 to 4"),
        ((["a"], np.zeros((1, 5)), str), {"n_top": 9}, ValueError, r"n_top must be an int in"),
        (
            (["a"], np.zeros((1, 5)), str),
            {"n_top": 5, "temperatures": (1.0, 0.5)},
            ValueError,
            r"^temperatures must be increasing",
        ),
        (
            (["a"], np.zeros((1, 5)), str),
            {"n_top": 5, "top_ps": (0.0, 1.0)},
            ValueError,
            r"^top_ps must be 2 to 12 values, each a number in \(0, 1\]",
        ),
        (
            (["a"], np.arange(5.0)[None], str),
            {"n_top": 5, "top_p": 0.33},
            ValueError,
            r"^top_p = 0.33 is not on its slider's grid",
        ),
    ],
)
def test_bad_input(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        NextTokenFilters(*args, **kwargs)


def test_indices_are_checked():
    w = NextTokenFilters.example()
    with pytest.raises(ValueError, match=r"k_index"):
        w.k_index = len(w.top_ks)


def test_the_javascript_draws_what_python_computes(tmp_path):
    """The widget's own ES module, run in Node on a minimal fake DOM at every position of its
    controls: the kept count it shows and each kept bar's renormalised probability equal
    ``kept_count`` and ``shown_probabilities`` (the same division in IEEE doubles), which the test
    above holds to transformers' warpers."""
    w = _random(4, 2, 300)
    runner = Path(__file__).parent / "js" / "next_token_filters.dom.mjs"
    frames = run_widget_dom(w, runner, tmp_path)
    assert len(frames) == 2 * len(w.temperatures) * len(w.top_ks) * len(w.top_ps)
    for f in frames:
        w.prompt_index, w.t_index, w.k_index, w.p_index = f["i"], f["t"], f["k"], f["p"]
        assert f["kept"] == w.kept_count
        shown = w.shown_probabilities
        assert len(f["bars"]) == int((shown > 0).sum())
        np.testing.assert_allclose(f["bars"], shown[: len(f["bars"])], rtol=1e-12, atol=0)


def test_from_model_runs_in_float64_and_leaves_the_model_alone(smollm2_ours):
    """SmolLM2's logits come from a float64 copy: the widget's equal a float64 pass to 1e-12,
    stay within float32's rounding of the model's own float32 pass, and the model stays float32."""
    prompts = ["The capital of France is", "中国的首都是"]
    w = NextTokenFilters.from_model(smollm2_ours, prompts)
    assert w._logits.dtype == torch.float64
    assert {p.dtype for p in smollm2_ours.parameters()} == {torch.float32}
    exact = copy.deepcopy(smollm2_ours).double()
    tok = smollm2_ours.tokenizer
    with torch.no_grad():
        for i, prompt in enumerate(prompts):
            ids = torch.tensor([tok.encode(prompt)])  # (1, T)
            want = exact(ids)[0, -1]  # (vocab,) float64
            single = smollm2_ours(ids)[0, -1].double()  # (vocab,) the float32 pass
            assert torch.allclose(w._logits[i], want, rtol=0, atol=1e-12)
            assert 0 < (single - want).abs().max() < 1e-3  # float32 rounds; float64 does not


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_saved_frames_ignore_float64_noise_but_not_float32_noise(seed):
    """Why from_model passes float64 logits: noise of float64's size (1e-13) leaves every saved
    5-digit number as it is, while noise of float32's size (SmolLM2's float32 logits are up to
    4.7e-5 away from a float64 pass, measured) moves some of them."""
    w = _random(seed, 2, 400)
    g = torch.Generator().manual_seed(100 + seed)
    noise = torch.randn(w._logits.shape, generator=g, dtype=torch.float64)
    names, label = list(w.prompts), (lambda i: f"t{i}")
    tiny = NextTokenFilters(names, w._logits + 1e-13 * noise, label)
    assert tiny.frames == w.frames
    float32_sized = NextTokenFilters(names, w._logits + 4.7e-5 * noise, label)
    assert float32_sized.frames != w.frames
