"""Widgets of chapters 2 and 3: frames equal the course_utils maths (and torch), bad input is
rejected, and the synced data stays under the 50 KB budget."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from course_utils.attention import scaled_dot_product_attention
from course_utils.data import bank_example, by_hand_example
from course_utils.masks import causal_mask
from course_utils.scaling import sample_scores, saturation_stats
from course_utils.softmax import softmax
from course_utils.widgets import FourSteps, ScalingExplorer, TemperatureMix
from course_utils.widgets._base import MAX_STATE_BYTES, unpack_array
from course_utils.widgets.temperature_mix import convex_hull

WIDGET_DIR = Path(__file__).parents[1] / "src" / "course_utils" / "widgets"


# ---- ScalingExplorer -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def explorer() -> ScalingExplorer:
    return ScalingExplorer(seed=3)


def test_scaling_frames_equal_saturation_stats(explorer: ScalingExplorer) -> None:
    stats = unpack_array(explorer.frames["stats"])  # (n_d, 2, 3)
    assert stats.shape == (len(explorer.d_ks), 2, 3)
    for i, d_k in enumerate(explorer.d_ks):
        raw = sample_scores(d_k, explorer.t_k, 400, np.random.default_rng([3, d_k]))  # (400, 8)
        for m, scale in enumerate((1.0, 1.0 / math.sqrt(d_k))):
            st = saturation_stats(raw, scale=scale)
            expected = [st.max_weight, st.entropy, st.jacobian_norm]
            np.testing.assert_allclose(stats[i, m], expected, atol=5e-4)


def test_scaling_example_row_and_histogram(explorer: ScalingExplorer) -> None:
    example = unpack_array(explorer.frames["example"])  # (n_d, 2, t_k)
    hist = unpack_array(explorer.frames["hist"])  # (n_d, 2, n_bins)
    np.testing.assert_allclose(hist.sum(axis=-1), 1.0, atol=0.02)  # fractions (rounded)
    for i, d_k in enumerate(explorer.d_ks):
        raw = explorer.raw_scores(d_k)  # (n_rows, t_k)
        oracle = torch.softmax(torch.tensor(raw[0]), dim=-1).numpy()  # (t_k,)
        np.testing.assert_allclose(example[i, 0], oracle, atol=5e-4)
        oracle_scaled = torch.softmax(torch.tensor(raw[0] / math.sqrt(d_k)), dim=-1).numpy()
        np.testing.assert_allclose(example[i, 1], oracle_scaled, atol=5e-4)
        lo, hi = explorer.ranges["scaled"]
        counts, _ = np.histogram(
            np.clip(raw / math.sqrt(d_k), lo, hi), bins=hist.shape[-1], range=(lo, hi)
        )
        np.testing.assert_allclose(hist[i, 1], counts / counts.sum(), atol=5e-4)


def test_scaling_widget_tells_the_chapter_story(explorer: ScalingExplorer) -> None:
    stats = unpack_array(explorer.frames["stats"])  # (n_d, 2, 3)
    assert stats[-1, 0, 0] > 0.9  # unscaled, d_k = 1024: nearly one-hot
    assert stats[-1, 1, 0] < 0.5  # scaled: not
    assert stats[-1, 0, 2] < 0.3 * stats[-1, 1, 2]  # gradient norm collapses only without scaling


def test_scaling_widget_state(explorer: ScalingExplorer) -> None:
    assert explorer.d_k_index == len(explorer.d_ks) // 2
    explorer.d_k_index = 0
    assert explorer.d_k == 1
    assert (
        explorer.stats["unscaled"] == explorer.stats["scaled"]
    )  # d_k = 1: scaling is the identity
    assert explorer.data_bytes() < MAX_STATE_BYTES
    with pytest.raises(ValueError, match=r"d_k_index must be an int in \[0, 10\]; got 11"):
        explorer.d_k_index = 11


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"d_ks": [4]}, ValueError, r"d_ks must be a sequence of 2 to 16 ints"),
        ({"d_ks": [4, 2]}, ValueError, r"strictly increasing; got \[4, 2\]"),
        ({"d_ks": [0, 2]}, ValueError, r"int >= 1; got 0"),
        ({"t_k": 1}, ValueError, r"t_k must be an int in \[2, 16\]; got 1"),
        ({"n_rows": 5}, ValueError, r"n_rows must be an int in \[10, 2000\]"),
        ({"seed": -1}, TypeError, r"seed must be a non-negative int"),
        ({"d_k_index": 99}, ValueError, r"d_k_index must be an int in"),
    ],
)
def test_scaling_widget_bad_input(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        ScalingExplorer(**kwargs)


# ---- TemperatureMix -----------------------------------------------------------------------------

SCORES = [1.2, 0.3, -0.5, 2.0]
VALUES = [[0.0, 0.0], [3.0, 0.5], [1.0, 2.5], [2.5, 2.0]]


def test_temperature_frames_equal_softmax_and_torch() -> None:
    w = TemperatureMix(SCORES, VALUES, labels=["a", "b", "c", "d"])
    weights = unpack_array(w.frames["weights"])  # (n_T, T_k)
    output = unpack_array(w.frames["output"])  # (n_T, 2)
    for i, t in enumerate(w.temperatures):
        oracle = torch.softmax(torch.tensor(SCORES, dtype=torch.float64) / t, dim=-1).numpy()
        np.testing.assert_allclose(weights[i], oracle, atol=5e-4)
        np.testing.assert_allclose(weights[i], softmax(SCORES, temperature=t), atol=5e-4)
        np.testing.assert_allclose(output[i], oracle @ np.array(VALUES), atol=2e-3)
    assert w.temperature == 1.0
    np.testing.assert_allclose(w.weights, softmax(SCORES))
    assert w.data_bytes() < MAX_STATE_BYTES


def test_temperature_limits_argmax_and_uniform() -> None:
    w = TemperatureMix(SCORES, VALUES, temperatures=[0.01, 1.0, 1000.0])
    w.t_index = 0
    np.testing.assert_allclose(w.weights, [0, 0, 0, 1], atol=1e-12)  # T -> 0: argmax
    np.testing.assert_allclose(w.output, VALUES[3], atol=1e-12)
    w.t_index = 2
    np.testing.assert_allclose(w.weights, 0.25, atol=1e-3)  # T -> inf: uniform
    np.testing.assert_allclose(w.output, np.mean(VALUES, axis=0), atol=1e-2)


def _inside_hull(point: np.ndarray, hull: np.ndarray) -> bool:
    edges = np.roll(hull, -1, axis=0) - hull  # (n, 2)
    rel = point - hull  # (n, 2)
    cross = edges[:, 0] * rel[:, 1] - edges[:, 1] * rel[:, 0]  # (n,)
    return bool(np.all(cross >= -1e-9))  # counter-clockwise: point left of every edge


def test_every_output_is_inside_the_convex_hull() -> None:
    w = TemperatureMix(SCORES, VALUES)
    hull = np.array(w.hull)  # (n_hull, 2)
    for i in range(len(w.temperatures)):
        w.t_index = i
        assert _inside_hull(w.output, hull)
    assert not _inside_hull(np.array([3.5, 3.5]), hull)  # the check can fail


@pytest.mark.parametrize(
    "points,expected",
    [
        ([[0, 0], [1, 0], [0, 1]], [[0, 0], [1, 0], [0, 1]]),
        ([[0, 0], [2, 0], [1, 1], [0, 2], [2, 2]], [[0, 0], [2, 0], [2, 2], [0, 2]]),
        ([[0, 0], [1, 1], [2, 2]], [[0, 0], [2, 2]]),  # collinear: the two ends
    ],
)
def test_convex_hull(points, expected) -> None:
    assert convex_hull(points).tolist() == expected


@pytest.mark.parametrize(
    "args,kwargs,error,match",
    [
        (
            (SCORES, VALUES[:3]),
            {},
            ValueError,
            r"values must have shape \(4, 2\); got shape \(3, 2\)",
        ),
        ((SCORES, [[1, 2, 3]] * 4), {}, ValueError, r"values must have shape \(4, 2\)"),
        (
            (SCORES, VALUES),
            {"labels": ["a"]},
            ValueError,
            r"one label per score: expected 4, got 1",
        ),
        ((SCORES, VALUES), {"temperatures": [1.0, 0.5]}, ValueError, r"increasing"),
        ((SCORES, VALUES), {"temperatures": [0.0, 1.0]}, ValueError, r"positive"),
        ((SCORES, VALUES), {"t_index": 7.0}, TypeError, r"t_index must be an int"),
        (([np.nan, 1, 2, 3], VALUES), {}, ValueError, r"NaN"),
    ],
)
def test_temperature_widget_bad_input(args, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        TemperatureMix(*args, **kwargs)


# ---- FourSteps ----------------------------------------------------------------------------------


@pytest.mark.parametrize("masked", [False, True])
def test_four_steps_frames_equal_package_and_torch(masked: bool) -> None:
    ex = bank_example()
    mask = causal_mask(ex.T) if masked else None
    w = FourSteps(ex.Q, ex.K, ex.V, tokens=list(ex.tokens), mask=mask)
    out_pkg, weights_pkg = scaled_dot_product_attention(ex.Q, ex.K, ex.V, mask)
    q, k, v = (torch.tensor(a) for a in (ex.Q, ex.K, ex.V))
    out_torch = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=masked).numpy()
    np.testing.assert_allclose(unpack_array(w.frames["scores"]), ex.Q @ ex.K.T, atol=5e-4)
    scaled = unpack_array(w.frames["scaled"])  # (T, T); masked cells stored as 0
    expected_scaled = ex.Q @ ex.K.T / math.sqrt(ex.d_k)
    keep = causal_mask(ex.T) if masked else np.ones((ex.T, ex.T), bool)
    np.testing.assert_allclose(scaled[keep], expected_scaled[keep], atol=5e-4)
    np.testing.assert_allclose(unpack_array(w.frames["weights"]), weights_pkg, atol=5e-4)
    np.testing.assert_allclose(unpack_array(w.frames["output"]), out_torch, atol=5e-4)
    np.testing.assert_allclose(unpack_array(w.frames["output"]), out_pkg, atol=5e-4)
    np.testing.assert_array_equal(unpack_array(w.frames["mask"]) == 1, keep)
    assert w.data_bytes() < MAX_STATE_BYTES


def test_four_steps_current_follows_the_step() -> None:
    ex = by_hand_example()
    w = FourSteps(ex.Q, ex.K, ex.V, tokens=list(ex.tokens))
    steps = w.steps()
    for i in range(4):
        w.step_index = i
        np.testing.assert_array_equal(w.current, steps[i])
    np.testing.assert_allclose(steps[2].sum(axis=-1), 1.0)
    with pytest.raises(ValueError, match=r"step_index must be an int in \[0, 3\]; got 4"):
        w.step_index = 4


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"k": np.zeros((4, 2))}, ValueError, r"k must have shape \(T, 3\); got shape \(4, 2\)"),
        ({"v": np.zeros((3, 3))}, ValueError, r"v must have shape \(4, d\); got shape \(3, 3\)"),
        ({"tokens": ["a", "b"]}, ValueError, r"tokens must have 4 labels \(one per row\); got 2"),
        ({"mask": np.ones((4, 4))}, TypeError, r"mask must be a boolean array"),
        (
            {"mask": np.ones((4, 3), bool)},
            ValueError,
            r"mask has shape \(4, 3\), expected \(4, 4\)",
        ),
        ({"q": np.zeros((40, 3)), "query_tokens": ["x"] * 40}, ValueError, r"at most 144"),
    ],
)
def test_four_steps_bad_input(kwargs, error, match) -> None:
    ex = by_hand_example()
    args = {"q": ex.Q, "k": ex.K, "v": ex.V, "tokens": list(ex.tokens)} | kwargs
    with pytest.raises(error, match=match):
        FourSteps(args.pop("q"), args.pop("k"), args.pop("v"), **args)


# ---- JavaScript only looks values up -------------------------------------------------------------


@pytest.mark.parametrize("stem", ["scaling_explorer", "temperature_mix", "four_steps"])
def test_js_does_no_maths_and_no_html_sinks(stem: str) -> None:
    js = (WIDGET_DIR / f"{stem}.js").read_text(encoding="utf-8")
    assert "Math.exp" not in js and "Math.log" not in js  # no softmax / entropy in JS
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write", js)
    assert "export default { render }" in js
    # render returns the cleanup that CU.listen built from the same subscriptions
    assert re.search(r"const cleanup = CU\.listen\(model,", js) and "return cleanup;" in js
    assert "model.on(" not in js  # every subscription goes through CU.listen
