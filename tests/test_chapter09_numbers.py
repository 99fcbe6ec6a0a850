"""Chapter 9's prose states numbers; each is recomputed here from course_utils.sparse (reading the
notebook's outputs, not re-running it), so that the text and the package cannot drift apart."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from course_utils.sparse import (
    bigbird_mask,
    dense_score_bytes,
    global_mask,
    layers_to_reach_all,
    reach,
    sliding_window_mask,
    strided_mask,
    window_layers_needed,
)
from course_utils.sparse.window import BLOCK

NOTEBOOK = Path(__file__).resolve().parents[1] / "chapters" / "09_sparse_attention.ipynb"


def _text() -> str:
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    parts = []
    for cell in nb["cells"]:
        parts.append("".join(cell["source"]))
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
    return "\n".join(parts)


def test_the_t_squared_table():
    assert dense_score_bytes(1024) == 4 * 2**20  # "4 MiB at T = 1k"
    assert dense_score_bytes(131072) == 64 * 2**30  # "64 GiB at 128k"
    text = _text()
    assert "4 MiB" in text and "64 GiB" in text


def test_receptive_field_claims():
    # "grows by w - 1 = 3 tokens per layer", "from layer 11 on every token" (T = 32, w = 4)
    heard = reach(sliding_window_mask(32, window=4), 12)[:, 31].sum(axis=-1)
    assert heard.tolist() == [4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 32, 32]
    # Mistral: 32 layers of W = 4096 (w = W + 1 keys) cover 32 * 4096 positions
    assert window_layers_needed(32 * 4096 + 1, 4097) == 32
    # "a window of 8 needs 9 layers to connect 64 tokens; strides or one global token: two"
    assert layers_to_reach_all(sliding_window_mask(64, window=8)) == 9
    assert layers_to_reach_all(strided_mask(64, stride=8)) == 2
    glob = sliding_window_mask(64, window=8, causal=False) | global_mask(64, [0])
    assert layers_to_reach_all(glob) == 2
    assert layers_to_reach_all(bigbird_mask(64, window=8, n_global=1, n_random=2, seed=0)) == 2
    # Check your understanding 2: w = 5, tokens 100 apart -> 25 layers
    assert window_layers_needed(101, 5) == 25


def test_mistral_decoding_answer():
    # Check your understanding 3: one query after 10,000 cached keys, W = 4096
    row = sliding_window_mask(1, 10_001, window=4097, align="bottom_right")[0]
    assert np.flatnonzero(row).tolist() == list(range(5904, 10_001))
    assert "5,904 .. 10,000" in _text()


def test_the_block_size_the_text_names():
    assert BLOCK == 64
    assert "$s = 64$" in _text()
