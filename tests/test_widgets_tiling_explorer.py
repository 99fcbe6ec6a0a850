"""Chapter 12's tile stepper: its frames are course_utils.flash's running state and converge to
the exact output (torch SDPA as the oracle), the memory view is the analytic model, bad input is
rejected, and the state fits the 50 KB budget."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_utils.data import bank_example
from course_utils.flash import attention_memory_bytes, tile_schedule
from course_utils.widgets import TilingExplorer
from course_utils.widgets._base import MAX_STATE_BYTES, unpack_array
from course_utils.widgets.tiling_explorer import MEMORY_LENGTHS


@pytest.fixture(scope="module")
def bank():
    return bank_example()


@pytest.fixture
def widget(bank):
    return TilingExplorer(bank.Q, bank.K, bank.V, tokens=list(bank.tokens), block_q=4, block_k=2)


@pytest.mark.parametrize("causal", [False, True])
def test_frames_follow_the_schedule_and_converge_to_sdpa(bank, widget, causal):
    mode = "causal" if causal else "plain"
    f = widget.frames[mode]
    assert [tuple(t) for t in f["tiles"]] == tile_schedule(
        8, 8, block_q=4, block_k=2, causal=causal
    )
    out = unpack_array(f["out"])  # (n_steps, T, d_v)
    ref = F.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (bank.Q, bank.K, bank.V)), is_causal=causal
    ).numpy()
    np.testing.assert_allclose(out[-1], ref, atol=1e-3)  # rounded to 3 decimals
    np.testing.assert_allclose(unpack_array(f["exact"]), ref, atol=1e-3)
    err = unpack_array(f["err"])  # (n_steps, T)
    assert err[-1].max() < 1e-3 and err[0].max() > 0.01  # converges, from far away
    reached = unpack_array(f["reached"])
    assert reached[-1].all() and not reached[0].all()  # first tile: only the first query block
    m = unpack_array(f["m"])
    assert (np.diff(m, axis=0)[reached[1:] == 1] >= -1e-9).all()  # running max never decreases


def test_properties_match_frames(widget):
    widget.step_index = 3
    f = widget.frames["plain"]
    np.testing.assert_allclose(widget.output, unpack_array(f["out"])[3], atol=5e-4)
    np.testing.assert_allclose(widget.running_sum, unpack_array(f["l"])[3], atol=5e-4)
    assert widget.tile == tuple(f["tiles"][3])
    widget.step_index = widget.n_steps - 1
    np.testing.assert_allclose(widget.output, widget.exact, atol=1e-12)


def test_causal_toggle_clamps_the_step(widget):
    widget.step_index = 7
    widget.causal = True
    assert widget.n_steps == 6 and widget.step_index == 5
    assert "causal=True" in repr(widget) and "tile=6/6" in repr(widget)


def test_memory_view_is_the_model(widget):
    mem = widget.frames["memory"]
    assert mem["T"] == list(MEMORY_LENGTHS)
    for t, naive, tiled in zip(mem["T"], mem["naive_mib"], mem["tiled_mib"], strict=True):
        b = attention_memory_bytes(t)
        assert naive == pytest.approx(b["naive"] / 2**20, abs=0.051)
        assert tiled == pytest.approx(b["tiled"] / 2**20, abs=0.051)
    widget.memory_index = MEMORY_LENGTHS.index(8192)
    assert widget.memory_mib["naive"] / widget.memory_mib["tiled"] > 50


def test_block_change_recomputes(widget):
    widget.step_index = 2
    widget.block_k = 4
    assert widget.step_index == 0 and widget.n_steps == 4
    assert widget.frames["plain"]["tiles"][1] == [0, 4, 4, 8]


def test_state_size_under_budget(widget):
    assert widget.data_bytes() < MAX_STATE_BYTES
    big = TilingExplorer(
        np.ones((12, 4)), np.ones((12, 4)), np.ones((12, 8)), tokens=list("abcdefghijkl"),
        block_q=2, block_k=2,
    )  # fmt: skip
    assert big.data_bytes() < MAX_STATE_BYTES


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"block_q": 0}, ValueError, r"block_q must be an int in \[1, 8\]; got 0"),
        ({"block_k": 9}, ValueError, r"block_k must be an int in \[1, 8\]; got 9"),
        ({"block_k": 2.0}, TypeError, r"block_k must be an int in \[1, 8\]; got float 2.0"),
        ({"tokens": ["a"] * 7}, ValueError, r"tokens must have 8 labels"),
        ({"step_index": 8}, Exception, r"step_index"),
        ({"block_q": 1, "block_k": 1}, ValueError, r"64 tiles; at most 36"),
    ],
)
def test_bad_inputs(bank, kwargs, error, match):
    args = {"tokens": list(bank.tokens), **kwargs}
    with pytest.raises(error, match=match):
        TilingExplorer(bank.Q, bank.K, bank.V, **args)


def test_too_big_and_bad_shapes_are_rejected():
    with pytest.raises(ValueError, match=r"at most 144 query-key pairs \(12 tokens\)"):
        TilingExplorer(np.ones((13, 2)), np.ones((13, 2)), np.ones((13, 2)), tokens=["t"] * 13)
    with pytest.raises(ValueError, match=r"k"):
        TilingExplorer(np.ones((4, 2)), np.ones((4, 3)), np.ones((4, 2)), tokens=["t"] * 4)


def test_rejects_bad_index_from_python(widget):
    with pytest.raises(Exception, match="memory_index"):
        widget.memory_index = len(MEMORY_LENGTHS)
