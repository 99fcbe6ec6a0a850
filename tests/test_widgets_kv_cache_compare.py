"""Unit tests of the KVCacheCompare widget (chapter 11): frames equal course_utils.kv_cache."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import kv_cache as kvc
from course_utils.widgets import KVCacheCompare
from course_utils.widgets._base import unpack_array


def test_frames_equal_package_counts():
    w = KVCacheCompare()
    values = unpack_array(w.frames["values"])  # (n_lat, n_rope, 4)
    gib = unpack_array(w.frames["gib"])  # (n_lat, n_rope, n_ctx, 4)
    for i, d_c in enumerate(w.latents):
        for j, d_r in enumerate(w.ropes):
            assert values[i, j, 3] == kvc.values_per_token_mla(d_c, d_r)
            assert values[i, j, 0] == kvc.values_per_token_mha(128, 128)
            for c, T in enumerate(w.contexts):
                expected = kvc.mla_cache_bytes(60, d_c, d_r, T) / 2**30
                assert np.isclose(gib[i, j, c, 3], expected, atol=1e-3)
                assert np.isclose(
                    gib[i, j, c, 1], kvc.kv_cache_bytes(60, 8, 128, T) / 2**30, atol=1e-3
                )


def test_default_is_deepseek_v2_and_budget():
    w = KVCacheCompare()
    assert w.values_per_token() == {"MHA": 32768, "GQA": 2048, "MQA": 256, "MLA": 576}
    assert w.total_bytes()["MLA"] == kvc.mla_cache_bytes(60, 512, 64, 32768)
    assert w.data_bytes() < 50_000
    assert repr(w) == "KVCacheCompare(d_c=512, d_h^R=64, context=32768)"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"latents": [256, 128]}, "strictly increasing"),
        ({"ropes": [-1, 2]}, "ropes"),
        ({"contexts": [5]}, "contexts"),
        ({"n_groups": 3}, "n_groups"),
    ],
)
def test_bad_arguments(kwargs, words):
    with pytest.raises(ValueError, match=words):
        KVCacheCompare(**kwargs)


def test_bad_index():
    w = KVCacheCompare()
    with pytest.raises((ValueError, TypeError), match="rope_index"):
        w.rope_index = 99


def test_bytes_per_token_frame():
    w = KVCacheCompare()
    b = unpack_array(w.frames["bytes"])  # (n_lat, n_rope, 4)
    i, j = w.latent_index, w.rope_index
    assert b[i, j, 3] == kvc.mla_cache_bytes(60, 512, 64, 1)
    assert b[i, j, 0] == kvc.kv_cache_bytes(60, 128, 128, 1)
