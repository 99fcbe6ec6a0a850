"""The chapter 6 block tracer: its frames are the blocks' traces, bad input is rejected, the state
fits the shared budget."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from course_utils.transformer import TransformerBlock
from course_utils.widgets import BlockTracer
from course_utils.widgets._base import MAX_STATE_BYTES, unpack_array
from course_utils.widgets.block_tracer import STEPS

TOKENS = ["a", "b", "a", "c", "a", "b"]


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    blocks = [TransformerBlock(16, 4, 64).double().eval() for _ in range(2)]
    x = torch.randn(len(TOKENS), 16, dtype=torch.float64)
    return blocks, x


@pytest.fixture
def tracer(setup):
    blocks, x = setup
    return BlockTracer(blocks, x, TOKENS, answers=[f"answer {i}" for i in range(6)], token=2)


def test_frames_are_the_traces(setup, tracer):
    blocks, x = setup
    vectors = unpack_array(tracer.vectors)  # (L, T, S, d)
    attention = unpack_array(tracer.attention)  # (L, T, H, T) percent
    assert vectors.shape == (2, 6, len(STEPS), 16) and attention.shape == (2, 6, 4, 6)
    h = x[None]
    with torch.no_grad():
        for layer, block in enumerate(blocks):
            t = block.trace(h)
            for s, (field, _) in enumerate(STEPS):
                want = getattr(t, field)[0].numpy()  # (T, d)
                np.testing.assert_allclose(vectors[layer, :, s], want, atol=0.005 + 1e-9)
            w = t.weights[0].transpose(0, 1).numpy()  # (T, H, T)
            np.testing.assert_array_equal(attention[layer], np.rint(100 * w))
            h = t.out
    norms = unpack_array(tracer.norms)
    np.testing.assert_allclose(norms, np.linalg.norm(vectors, axis=-1), atol=0.05)
    # the residual adds, as the drawing shows them: mid = x + attn_out, out = mid + ffn_out
    np.testing.assert_allclose(vectors[:, :, 3], vectors[:, :, 0] + vectors[:, :, 2], atol=0.011)
    np.testing.assert_allclose(vectors[:, :, 6], vectors[:, :, 3] + vectors[:, :, 5], atol=0.011)


def test_properties_follow_the_indices(tracer):
    tracer.layer, tracer.token = 1, 4
    assert tracer.steps.shape == (len(STEPS), 16)
    np.testing.assert_allclose(tracer.weights.sum(-1), 1.0)
    assert tracer.weights.shape == (4, 6)
    with pytest.raises(Exception, match=r"layer must be an int in \[0, 1\]"):
        tracer.layer = 2


def test_state_is_small_and_serialisable(tracer):
    assert tracer.data_bytes() < MAX_STATE_BYTES
    json.dumps(tracer.get_state(), default=str)
    assert repr(tracer) == "BlockTracer(2 layers, 6 tokens, token=2, layer=0)"
    assert tracer.description  # screen-reader text


def test_bad_inputs(setup):
    blocks, x = setup
    with pytest.raises(TypeError, match="blocks must be a non-empty list"):
        BlockTracer(blocks[0], x, TOKENS)
    with pytest.raises(TypeError, match=r"blocks\[1\] must be a TransformerBlock"):
        BlockTracer([blocks[0], torch.nn.Linear(2, 2)], x, TOKENS)
    with pytest.raises(ValueError, match=r"x must have shape \(6, 16\)"):
        BlockTracer(blocks, x[:, :8], TOKENS)
    with pytest.raises(TypeError, match="single str"):
        BlockTracer(blocks, x, "abacab")
    with pytest.raises(ValueError, match="answers needs one line per token"):
        BlockTracer(blocks, x, TOKENS, answers=["1"])
    with pytest.raises(ValueError, match=r"token must be an int in \[0, 5\]"):
        BlockTracer(blocks, x, TOKENS, token=6)


def test_the_js_only_looks_values_up():
    from pathlib import Path

    import course_utils.widgets as widgets

    js = (Path(widgets.__file__).parent / "block_tracer.js").read_text(encoding="utf-8")
    assert "export default { render }" in js
    for maths in ("Math.exp", "softmax", "Math.sqrt"):  # weights and norms come from Python
        assert maths not in js


def test_post_ln_blocks_get_their_own_labels(setup):
    _, x = setup
    torch.manual_seed(1)
    post = [TransformerBlock(16, 4, 64, norm_first=False).double().eval() for _ in range(2)]
    w = BlockTracer(post, x, TOKENS)
    assert w.step_labels[1] == "attention reads the stream itself"
    vectors = unpack_array(w.vectors)
    np.testing.assert_allclose(vectors[:, :, 1], vectors[:, :, 0], atol=0.006)  # attn_in = x
    with pytest.raises(ValueError, match="all pre-LN or all post-LN"):
        BlockTracer([post[0], TransformerBlock(16, 4, 64).double()], x, TOKENS)
