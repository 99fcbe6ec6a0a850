"""course_utils.widgets.smollm2_writer: the Python engine behind the writer widget in JupyterLab.

Its messages are the browser worker's (prompt, one token per new token, done); its greedy tokens
are :func:`course_utils.causal.generate`'s; a knocked-out head's output is zero (checked against a
model whose W_O columns for that head are zeroed); bad input gets a message, never a traceback.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

from course_utils.causal import generate
from course_utils.pretrained.smollm2 import knocked_out_heads, load_smollm2, writer_steps
from course_utils.widgets import SmolLM2Writer
from course_utils.widgets._base import MAX_STATE_BYTES
from course_utils.widgets.smollm2_writer import DECODING, NEW_TOKENS


@pytest.fixture(scope="module")
def writer() -> SmolLM2Writer:
    return SmolLM2Writer.example()


def test_the_saved_state_is_small_and_holds_no_model_output(writer):
    state = writer.get_state()
    data = {k: v for k, v in state.items() if not k.startswith("_") and k not in ("layout",)}
    assert len(json.dumps(data)) < MAX_STATE_BYTES
    assert writer.download_bytes > 50_000_000  # the export's size, stated on the button
    assert writer.decoding_settings == [[t, k, p] for _, t, k, p in DECODING]
    assert writer.new_tokens == list(NEW_TOKENS)


def test_the_messages_and_tokens_equal_generate(writer):
    model = load_smollm2()
    prompt = "The capital of France is"
    sent = writer.run(writer.request_from_settings(prompt) | {"nNew": 5, "id": 7})
    kinds = [m["type"] for m in sent]
    assert kinds == ["prompt", "token", "token", "token", "token", "token", "done"]
    assert all(m["id"] == 7 for m in sent)
    ids = model.tokenizer.encode(prompt)
    expected = generate(model, torch.tensor([ids]), 5)[0, len(ids) :].tolist()
    assert sent[-1]["ids"] == expected == [m["token"] for m in sent[1:-1]]
    last = sent[-2]
    n = len(ids) + 5 - 1  # the query of the 5th token sees the prompt and 4 new tokens
    # n is what the page slices the weights by (L x H rows of n), as the worker's message says
    assert last["n"] == n and len(last["weights"]) == 30 * 9 * n
    rows = np.array(last["weights"]).reshape(30, 9, n)
    np.testing.assert_allclose(rows.sum(-1), 1.0, atol=1e-5)
    assert last["top"][0]["id"] == expected[-1]  # the token chosen is the top candidate (greedy)
    assert "".join(m["label"] for m in sent[1:-1]) == model.tokenizer.decode(expected)


def test_a_knocked_out_head_is_a_zeroed_w_o_slice():
    model = load_smollm2()
    ids = torch.tensor([model.tokenizer.encode("Snow, snow and more snow.")])
    zeroed = copy.deepcopy(model)
    with torch.no_grad():
        zeroed.layers[4].attn.mha.W_O.weight[:, 2 * 64 : 3 * 64] = 0  # head 2's columns of W_O
        expected = zeroed(ids)
        with knocked_out_heads(model, [(4, 2)]):
            got = model(ids)
        plain = model(ids)
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=0)
    assert float((plain - got).abs().max()) > 1e-3  # it changed something, and the hook is gone
    torch.testing.assert_close(model(ids), plain, atol=0, rtol=0)


@pytest.mark.parametrize(
    "heads, message",
    [
        ([(30, 0)], "layer must be an int in"),
        ([(0, 9)], "head must be an int in"),
        ([(1,)], "pair"),
    ],
)
def test_bad_knockouts_are_named(heads, message):
    with pytest.raises(ValueError, match=message), knocked_out_heads(load_smollm2(), heads):
        pass


def test_sampling_is_seeded_and_bad_requests_get_a_message(writer):
    model = load_smollm2()
    ids = model.tokenizer.encode("Once upon a time")
    a = [s.token for s in writer_steps(model, ids, 4, temperature=0.7, top_p=0.9, seed=3)]
    b = [s.token for s in writer_steps(model, ids, 4, temperature=0.7, top_p=0.9, seed=3)]
    assert a == b
    too_long = writer.run(writer.request_from_settings("word " * 300))
    assert [m["type"] for m in too_long] == ["too-long"] and too_long[0]["max"] == 256
    empty = writer.run(writer.request_from_settings(""))
    assert empty[0]["type"] == "too-long" and empty[0]["tokens"] == 0
    bad = writer.run(writer.request_from_settings("Hi") | {"temperature": -1})
    assert bad[-1]["type"] == "error" and "temperature" in bad[-1]["message"]


@pytest.mark.parametrize(
    "trait, value, message",
    [
        ("layer", 30, "layer must be an int in"),
        ("head", -1, "head must be an int in"),
        ("knockout", ["3-4"], "layer:head"),
        ("knockout", ["3:9"], "outside"),
    ],
)
def test_bad_settings_are_rejected(writer, trait, value, message):
    import traitlets

    with pytest.raises(traitlets.TraitError, match=message):
        setattr(writer, trait, value)


def test_bad_prompts_list():
    with pytest.raises(TypeError, match="prompts must be a non-empty list"):
        SmolLM2Writer("just one string")
    with pytest.raises(ValueError, match="non-empty str"):
        SmolLM2Writer(["ok", "  "])


def test_chapter7_knockout_answer():
    """Chapter 7's answer to its knockout question, as the text states it (16 greedy tokens after
    "The capital of France is"): layer 0, head 4 keeps the first five tokens and changes the
    sixth; layer 29, head 0 changes none; " Paris" stays first either way."""
    model = load_smollm2()
    ids = torch.tensor([model.tokenizer.encode("The capital of France is")])

    def run(heads):
        with knocked_out_heads(model, heads):
            return generate(model, ids, 16)[0, ids.size(1) :].tolist()

    base, early, late = run([]), run([(0, 4)]), run([(29, 0)])
    assert model.tokenizer.decode(base).startswith(" Paris.\n\nThe answer is: 2018-01")
    assert early[:5] == base[:5] and early[5] != base[5]
    assert model.tokenizer.decode(early).startswith(" Paris.\n\nThe French language is a language")
    assert late == base
