"""Unit tests of the KVCacheCalculator widget (chapter 10): frames equal the package's maths
(course_utils.kv_cache, course_utils.model_configs); bad input is rejected clearly."""

from __future__ import annotations

import pytest

from course_utils.kv_cache import kv_cache_bytes, max_batch
from course_utils.model_configs import configs_in_chapter
from course_utils.widgets import KVCacheCalculator
from course_utils.widgets._base import unpack_array
from course_utils.widgets.kv_cache_calculator import (
    CONTEXTS,
    D_HEADS,
    DTYPES,
    KV_HEADS,
    LAYERS,
    MEMORIES_GIB,
)

MODEL_CONFIGS = configs_in_chapter(10)  # the calculator's models: chapter 10's rows


def test_calculator_frames_equal_kv_cache_bytes():
    w = KVCacheCalculator()
    per_token = unpack_array(w.frames["per_token"])  # (L, K, D, dtype)
    assert per_token.shape == (len(LAYERS), len(KV_HEADS), len(D_HEADS), len(DTYPES))
    for a, n_layers in enumerate(LAYERS):
        for b, n_kv in enumerate(KV_HEADS):
            for c, d_head in enumerate(D_HEADS):
                for d, (_, nbytes) in enumerate(DTYPES):
                    want = kv_cache_bytes(n_layers, n_kv, d_head, 1, bytes_per_value=nbytes)
                    assert per_token[a, b, c, d] == want
    assert w.data_bytes() < 50_000


@pytest.mark.parametrize("name", list(MODEL_CONFIGS))
def test_calculator_presets_set_the_knobs(name):
    cfg = MODEL_CONFIGS[name]
    w = KVCacheCalculator(name, context=4096, memory_gib=24)
    assert w.model_name == name
    assert w.bytes_per_token() == cfg.bytes_per_token()
    assert [len(g) for g in w.groups()] == [cfg.group_size] * cfg.n_kv_heads
    for i, T in enumerate(CONTEXTS):  # a sliding layer stops at its window (layers_cache_bytes)
        w.context_index = i
        assert w.total_bytes() == cfg.held_cache_bytes(T)
        assert w.batch_that_fits() == (24 * 2**30) // cfg.held_cache_bytes(T)
    counts = cfg.layer_counts()
    assert w.models[w.model_index]["n_sliding"] == counts.get("sliding", 0)


def test_calculator_windowed_presets_stop_growing():
    w = KVCacheCalculator("Mistral 7B", context=4096)
    at_4k = w.total_bytes()
    w.context_index = CONTEXTS.index(131072)
    assert w.total_bytes() == at_4k == 32 * 2 * 8 * 128 * 4096 * 2  # the rolling buffer
    w = KVCacheCalculator("Gemma 3 12B", context=32768)
    assert w.total_bytes() == 2 * 8 * 256 * 2 * (40 * 1024 + 8 * 32768)
    w.layers_index = LAYERS.index(48)  # a moved knob: custom, every layer keeps every token
    w.model_index = len(MODEL_CONFIGS)
    assert w.total_bytes() == kv_cache_bytes(48, 8, 256, 32768)


def test_calculator_switching_model_and_custom():
    w = KVCacheCalculator()
    w.model_index = list(MODEL_CONFIGS).index("Falcon 7B")
    assert KV_HEADS[w.kv_index] == 1 and LAYERS[w.layers_index] == 32
    w.model_index = len(MODEL_CONFIGS)  # custom: knobs stay
    assert w.model_name == "custom" and KV_HEADS[w.kv_index] == 1
    w.kv_index, w.dtype_index = KV_HEADS.index(8), 0
    w.context_index, w.memory_index = CONTEXTS.index(131072), MEMORIES_GIB.index(16)
    assert w.total_bytes() == kv_cache_bytes(32, 8, 64, 131072, bytes_per_value=4)
    assert w.batch_that_fits() == max_batch(16 * 2**30, 32, 8, 64, 131072, bytes_per_value=4)
    assert "custom" in repr(w)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "GPT-5"}, "model must be one of"),
        ({"context": 5000}, "context must be one of"),
        ({"memory_gib": 33}, "memory_gib must be one of"),
    ],
)
def test_calculator_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        KVCacheCalculator(**kwargs)


def test_calculator_bad_index():
    w = KVCacheCalculator()
    with pytest.raises((ValueError, TypeError), match="kv_index"):
        w.kv_index = len(KV_HEADS)
    with pytest.raises((ValueError, TypeError), match="model_index"):
        w.model_index = -1


def test_calculator_groups_reject_a_non_divisor():
    w = KVCacheCalculator("SmolLM2-135M")
    w.kv_index = KV_HEADS.index(2)  # 9 query heads, 2 k/v heads
    with pytest.raises(ValueError, match="n_kv_heads must divide n_heads"):
        w.groups()


def test_the_javascript_draws_the_held_cache_python_computes(tmp_path):
    """The widget's own ES module, run in Node on a minimal fake DOM for every preset at every
    context: the total it draws is ``total_bytes()`` (a sliding layer stops at its window), and
    its "sliding-window layers" row names the count and the window of the model's config."""
    from pathlib import Path

    from .system_tools import run_widget_dom

    runner = Path(__file__).parent / "js" / "kv_cache_calculator.dom.mjs"
    frames = run_widget_dom(KVCacheCalculator(), runner, tmp_path)
    assert len(frames) == len(MODEL_CONFIGS) * len(CONTEXTS)
    for f in frames:
        cfg = list(MODEL_CONFIGS.values())[f["m"]]
        w = KVCacheCalculator(cfg.name, context=CONTEXTS[f["c"]])
        assert f["total"] == w.total_bytes() == cfg.held_cache_bytes(CONTEXTS[f["c"]])
        n_sliding = cfg.layer_counts().get("sliding", 0)
        if n_sliding:
            want = f"{n_sliding} of {cfg.n_layers}, window {cfg.sliding_window:,} tokens"
            assert f["sliding"].endswith(want), f["sliding"]
        else:
            assert f["sliding"].endswith("none: every layer keeps every token"), f["sliding"]
