"""course_utils.widgets.scaling_explorer: frames equal course_utils.scaling; bad input rejected;
the synced data stays under the 50 KB budget."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from course_utils.scaling import sample_scores, saturation_stats
from course_utils.widgets import ScalingExplorer
from course_utils.widgets._base import MAX_STATE_BYTES, unpack_array


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
        ({"d_ks": [0, 2]}, ValueError, r"every entry of d_ks \[0, 2\] must be >= 1; got 0"),
        ({"t_k": 1}, ValueError, r"t_k must be an int in \[2, 16\]; got 1"),
        ({"n_rows": 5}, ValueError, r"n_rows must be an int in \[10, 2000\]"),
        ({"seed": -1}, ValueError, r"seed must be >= 0; got -1"),
        ({"d_k_index": 99}, ValueError, r"d_k_index must be an int in"),
    ],
)
def test_scaling_widget_bad_input(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        ScalingExplorer(**kwargs)
