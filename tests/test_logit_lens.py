"""The logit lens (course_utils.pretrained.logit_lens) against transformers' LlamaForCausalLM.

The oracle is transformers' own Llama code on the same GGUF weights (the session fixture of
``tests/conftest.py``): with ``output_hidden_states=True`` it returns the residual stream before
each of its 30 layers and, as its last entry, the stream after the last layer *already normalised*
by the final RMSNorm. Our stream after block ``l`` must equal its entry ``l`` (``l < 30``), our
final norm of the stream after block 30 its last entry, and the lens after block 30 the model's
real logits (ours and transformers').
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from course_utils.pretrained.logit_lens import (
    LogitLens,
    lens_logits,
    logit_lens,
    residual_stream,
)
from course_utils.pretrained.smollm2 import SmolLM2, SmolLM2Config

# Our model and transformers' (smollm2_ours, smollm2_reference: model and tokenizer) are session
# fixtures of tests/conftest.py, loaded once for this module, test_smollm2.py and test_decoding.py.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("smollm2")]

PROMPTS = [
    "The capital of France is",
    "One, two, three, four,",
    "小明在银行边的长椅上看书",
]


@pytest.fixture(scope="module")
def tiny() -> SmolLM2:
    """A SmolLM2-shaped model with random weights: fast, for the properties."""
    cfg = SmolLM2Config(n_layers=3, d_model=16, n_heads=4, n_kv_heads=2, d_ff=24, vocab_size=37)
    with torch.random.fork_rng():
        torch.manual_seed(7)
        return SmolLM2(cfg).eval()


@pytest.mark.parametrize("text", PROMPTS)
def test_residual_stream_equals_transformers_hidden_states(smollm2_ours, smollm2_reference, text):
    ids = torch.tensor([smollm2_ours.tokenizer.encode(text)])  # (1, T)
    with torch.no_grad():
        hidden = smollm2_reference[0](
            ids, output_hidden_states=True
        ).hidden_states  # 31 x (1, T, 576)
    stream = residual_stream(smollm2_ours, ids)  # (31, 1, T, 576)
    assert len(hidden) == stream.shape[0] == 31
    for layer in range(30):  # transformers' entry l: the input of its layer l
        scale = hidden[layer].abs().max().item()
        torch.testing.assert_close(stream[layer], hidden[layer], atol=2e-5 * scale, rtol=0)
    # its last entry is normalised: our final RMSNorm of the stream after block 30
    with torch.no_grad():
        torch.testing.assert_close(smollm2_ours.norm(stream[30]), hidden[30], atol=1e-3, rtol=0)


@pytest.mark.parametrize("text", PROMPTS)
def test_the_lens_after_the_last_block_is_the_model(smollm2_ours, smollm2_reference, text):
    ids = torch.tensor([smollm2_ours.tokenizer.encode(text)])  # (1, T)
    with torch.no_grad():
        real = smollm2_ours(ids)  # (1, T, vocab)
        theirs = smollm2_reference[0](ids).logits  # (1, T, vocab)
    last = lens_logits(smollm2_ours, residual_stream(smollm2_ours, ids)[-1])  # (1, T, vocab)
    torch.testing.assert_close(last, real, atol=1e-5, rtol=0)  # same float32 products
    torch.testing.assert_close(last, theirs, atol=1e-3, rtol=0)  # another implementation
    lens = logit_lens(smollm2_ours, ids, k=5)
    top = theirs[0, -1].softmax(-1).topk(5)
    assert torch.equal(lens.top_ids[-1], top.indices)
    torch.testing.assert_close(lens.top_probs[-1], top.values, atol=1e-4, rtol=0)


def test_the_lens_reads_each_block_through_the_final_norm_and_the_embedding(
    smollm2_ours, smollm2_reference
):
    """An independent read-out: transformers' own final norm and lm_head (the tied embedding) on
    its own hidden state before layer 15 gives our lens after block 15."""
    ids = torch.tensor([smollm2_ours.tokenizer.encode(PROMPTS[0])])  # (1, T)
    with torch.no_grad():
        hidden = smollm2_reference[0](ids, output_hidden_states=True).hidden_states
        theirs = smollm2_reference[0].lm_head(smollm2_reference[0].model.norm(hidden[15]))[
            0, -1
        ]  # (vocab,)
    lens = logit_lens(smollm2_ours, ids, k=3)
    assert torch.equal(lens.top_ids[15], theirs.softmax(-1).topk(3).indices)
    # tied weights in transformers' model too: one storage for the embedding and the LM head
    assert (
        smollm2_reference[0].lm_head.weight.data_ptr()
        == smollm2_reference[0].model.embed_tokens.weight.data_ptr()
    )


@pytest.mark.parametrize("position", [0, 2, -1])
def test_a_position_of_the_lens_is_that_position_of_the_stream(tiny, position):
    ids = torch.tensor([[1, 5, 9, 2, 30]])  # (1, T)
    lens = logit_lens(tiny, ids, k=4, position=position)
    stream = residual_stream(tiny, ids)[:, 0, position]  # (n_layers + 1, d_model)
    probs = lens_logits(tiny, stream).softmax(-1)  # (n_layers + 1, vocab)
    assert isinstance(lens, LogitLens)
    assert lens.top_ids.shape == lens.top_probs.shape == (4, 4)
    torch.testing.assert_close(lens.norms, stream.norm(dim=-1))
    torch.testing.assert_close(lens.top_probs, probs.topk(4, dim=-1).values)


@given(ids=st.lists(st.integers(0, 36), min_size=1, max_size=8), k=st.integers(1, 37))
def test_lens_properties(tiny, ids, k):
    """Block 0 is the embedding; probabilities sorted, at most 1 in all; the last block is the
    model's own output."""
    x = torch.tensor([ids])  # (1, T)
    stream = residual_stream(tiny, x)
    with torch.no_grad():
        assert torch.equal(stream[0], tiny.embed(x))
        real = tiny(x)[0, -1].softmax(-1)  # (vocab,)
    lens = logit_lens(tiny, x, k=k)
    assert (lens.top_probs[:, :-1] >= lens.top_probs[:, 1:]).all()
    assert (lens.top_probs.sum(-1) <= 1 + 1e-5).all()
    torch.testing.assert_close(lens.top_probs[-1], real.topk(k).values, atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda m: residual_stream("model", torch.tensor([[1]])), TypeError, "model must be"),
        (lambda m: residual_stream(m, torch.tensor([1, 2])), ValueError, "shape (B, T); got (2,)"),
        (lambda m: residual_stream(m, torch.tensor([[0.5]])), ValueError, "integer tensor"),
        (lambda m: residual_stream(m, torch.tensor([[37]])), ValueError, "[0, 37)"),
        (lambda m: lens_logits(m, torch.zeros(3, 5)), ValueError, "(..., 16); got (3, 5)"),
        (lambda m: logit_lens(m, torch.tensor([[1], [2]])), ValueError, "one sequence"),
        (lambda m: logit_lens(m, torch.tensor([[1, 2]]), k=0), ValueError, "k must be"),
        (lambda m: logit_lens(m, torch.tensor([[1, 2]]), position=2), ValueError, "position"),
    ],
)
def test_bad_input_is_named(tiny, call, error, words):
    with pytest.raises(error) as info:
        call(tiny)
    assert words in str(info.value)


def test_token_pieces_spell_what_the_tokenizer_decodes(smollm2_ours):
    """``piece`` shows a whole token as its text (space and line break made visible) and a
    fragment of a UTF-8 character as its bytes, which decode to the tokenizer's own text when
    joined with the bytes of the tokens that complete the character."""
    tok = smollm2_ours.tokenizer
    ids = tok.encode("小明 is\nhere")
    pieces = [tok.piece(i) for i in ids]
    assert pieces[-3:] == ["␣is", "↵", "here"]
    raw = b"".join(bytes.fromhex(p[1:-1]) if p.startswith("<") else p.encode() for p in pieces[:-3])
    assert raw.decode("utf-8") == tok.decode(ids[:-3]) == "小明"


def test_the_parameter_count_is_the_real_model_s(smollm2_ours, smollm2_reference):
    """decoder_parameter_count on SmolLM2's configuration is the number of parameters of our
    model and of transformers' (each counted once: the LM head is the embedding)."""
    from course_utils.transformer_cost import decoder_parameter_count

    cfg = smollm2_ours.config
    parts = decoder_parameter_count(
        cfg.vocab_size, cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.d_ff
    )
    assert parts["total"] == 134_515_008
    assert parts["total"] == sum(p.numel() for p in smollm2_ours.parameters())
    assert parts["total"] == sum(p.numel() for p in smollm2_reference[0].parameters())
