"""all-MiniLM-L6-v2 for the reader's browser: weight export, and the JavaScript that runs it.

The static site has no Python kernel, so the head explorer (chapter 4) runs the model in the
reader's browser when the reader types a sentence. This module exports the package's
``model.safetensors`` at build time (``scripts/export_minilm_web.py``, called by the site's Sphinx
extension when the build finishes) into a folder of the built site; the files are generated, never
committed. The JavaScript beside it, in ``web/`` (ES modules, ``.mjs``, never swept into every page
as plain scripts), is our WordPiece tokenizer (``wordpiece.mjs``), BERT encoder and attention
rollout (``bert.mjs``) and the Web Worker that loads the files and runs them (``worker.mjs``).

Files written by :func:`export_weights` into ``out_dir``:

* ``manifest.json``: the model's sizes, the dtype, and for each tensor its name, shape, byte
  offset and byte length in the unpacked ``weights.bin``; the word-embedding table's chunking;
  each packed file's size;
* ``weights.bin``: every tensor the encoder needs except the word embeddings, row-major,
  little-endian, each starting at a multiple of 8 bytes; stored packed (below);
* ``vocab.json``: the WordPiece vocabulary, a list indexed by token id;
* ``words/NNNNN.bin``: the word-embedding table in chunks of ``chunk_rows`` rows, each packed,
  fetched only for the tokens a sentence uses.

Packed means byte planes under deflate (:mod:`course_utils.pretrained.web_export`): lossless,
and 15 % smaller for these float16 weights (45.4 MB in all, 38.6 MB packed); the browser's own
``DecompressionStream`` unpacks them.
Float16 halves the download (the maps stay within 2e-3 of the float32 reference; int8 was tried
and is too far off). The up-front download is ``manifest.json + vocab.json + weights.bin``
(:func:`download_sizes`); the word table is never downloaded whole. The site's export is made
once and kept (:func:`prepare_export`), so the sizes a widget states are those of the files.

>>> sizes = download_sizes("float16")
>>> sizes["chunks"]                  # 30522 rows in chunks of 128 rows
239
>>> sizes["chunk_bytes"] < 128 * 384 * 2  # the largest chunk file, packed
True
>>> 17e6 < sizes["upfront_bytes"] < 20e6
True
"""

from __future__ import annotations

import json
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .minilm import load_config, model_dir
from .web_export import cache_folder, kept_export, pack, unpack

__all__ = [
    "CHUNK_ROWS",
    "DTYPES",
    "MAX_BROWSER_TOKENS",
    "WEB_DIR",
    "WORD_TABLE",
    "copy_export",
    "download_sizes",
    "export_weights",
    "prepare_export",
    "read_export",
    "web_files",
]

#: The JavaScript of the browser path (copied into the site next to the exported weights).
WEB_DIR = Path(__file__).parent / "web"
#: Rows of the word-embedding table per chunk file (30522 rows -> 239 files).
CHUNK_ROWS = 128
#: Exported dtypes: float16 for the site, float32 for the tests that catch arithmetic bugs.
DTYPES = ("float16", "float32")
#: The tensor split into chunks rather than downloaded up front.
WORD_TABLE = "embeddings.word_embeddings.weight"
#: Longest typed sentence the browser path accepts (tokens, with ``[CLS]`` and ``[SEP]``).
MAX_BROWSER_TOKENS = 64
_ALIGN = 8
#: The export's layout; another layout, another kept export (:func:`prepare_export`).
EXPORT_FORMAT = "v2"
_SKIP = ("embeddings.position_ids", "pooler.")  # not used by the encoder's attention maps


def web_files() -> list[Path]:
    """The ES modules of the browser path, in ``WEB_DIR`` (SmolLM2's, beside them, are
    :func:`course_utils.pretrained.smollm2_web.web_files`).

    >>> [p.name for p in web_files()]
    ['bert.mjs', 'wordpiece.mjs', 'worker.mjs']
    """
    return [WEB_DIR / name for name in ("bert.mjs", "wordpiece.mjs", "worker.mjs")]


def _check_dtype(dtype: str) -> np.dtype:
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}; got {dtype!r}")
    return np.dtype(dtype).newbyteorder("<")


def _weights_path() -> Path:
    return model_dir() / "model.safetensors"


@lru_cache(maxsize=1)
def _shapes() -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape, from the safetensors header only (no weights are read)."""
    from safetensors import safe_open

    with safe_open(str(_weights_path()), framework="numpy") as f:
        names = sorted(k for k in f.keys() if not k.startswith(_SKIP))  # noqa: SIM118
        return {k: tuple(int(n) for n in f.get_slice(k).get_shape()) for k in names}


def _tokenizer_json() -> dict[str, Any]:
    return json.loads((model_dir() / "tokenizer.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _vocab_bytes() -> bytes:
    vocab: dict[str, int] = _tokenizer_json()["model"]["vocab"]
    by_id = [""] * len(vocab)
    for token, i in vocab.items():
        by_id[i] = token
    return json.dumps(by_id, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _manifest(dtype: str, chunk_rows: int) -> dict[str, Any]:
    """The layout of an export (offsets, lengths, chunks), from the tensors' shapes alone."""
    dt = _check_dtype(dtype)
    if not isinstance(chunk_rows, int) or isinstance(chunk_rows, bool) or chunk_rows < 1:
        raise ValueError(f"chunk_rows must be a positive int; got {chunk_rows!r}")
    cfg = load_config()
    entries, end = [], 0
    for name, shape in _shapes().items():
        if name == WORD_TABLE:
            continue
        offset = end + (-end % _ALIGN)  # each tensor starts at a multiple of 8 bytes
        length = int(np.prod(shape)) * dt.itemsize
        entries.append({"name": name, "shape": list(shape), "offset": offset, "length": length})
        end = offset + length
    rows, d_model = _shapes()[WORD_TABLE]
    return {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "dtype": dtype,
        "n_layers": cfg["num_hidden_layers"],
        "n_heads": cfg["num_attention_heads"],
        "d_model": cfg["hidden_size"],
        "d_ff": cfg["intermediate_size"],
        "max_len": cfg["max_position_embeddings"],
        "layer_norm_eps": float(cfg["layer_norm_eps"]),
        "max_tokens": MAX_BROWSER_TOKENS,
        "special_tokens": [t["content"] for t in _tokenizer_json()["added_tokens"]],
        "packing": "byte planes, deflate",
        "weights_bytes": end,
        "vocab_bytes": len(_vocab_bytes()),
        "tensors": entries,
        "words": {
            "rows": rows,
            "chunk_rows": chunk_rows,
            "chunks": -(-rows // chunk_rows),
            "chunk_bytes": chunk_rows * d_model * dt.itemsize,
            "pattern": "words/{index}.bin",
            "digits": 5,
        },
    }


def _manifest_bytes(manifest: dict[str, Any]) -> bytes:
    return json.dumps(manifest, indent=1).encode("utf-8")


def export_weights(
    out_dir: str | Path, dtype: str = "float16", *, chunk_rows: int = CHUNK_ROWS
) -> dict[str, Any]:
    """Write the model files of the browser path into ``out_dir``; return the manifest.

    ``out_dir`` is created; files already there are overwritten (old chunk files are removed).
    The manifest records each packed file's size: ``weights_file_bytes``, and
    ``words["file_bytes"]``, one per chunk.
    """
    from safetensors.numpy import load_file

    manifest = _manifest(dtype, chunk_rows)
    dt = _check_dtype(dtype)
    tensors = load_file(str(_weights_path()))  # name -> array, float32
    blob = np.zeros(manifest["weights_bytes"] // dt.itemsize, dtype=dt)  # gaps stay zero
    for e in manifest["tensors"]:
        start = e["offset"] // dt.itemsize  # offsets are multiples of 8 bytes
        blob[start : start + e["length"] // dt.itemsize] = tensors[e["name"]].ravel()
    words = np.ascontiguousarray(tensors[WORD_TABLE], dtype=dt)  # (vocab, d_model)
    out = Path(out_dir)
    folder = out / "words"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.bin"):
        old.unlink()
    packed_weights = pack(blob)
    (out / "weights.bin").write_bytes(packed_weights)
    (out / "vocab.json").write_bytes(_vocab_bytes())
    digits = manifest["words"]["digits"]
    file_bytes = []
    for i, start in enumerate(range(0, words.shape[0], chunk_rows)):
        packed = pack(words[start : start + chunk_rows])  # (chunk_rows, d_model), packed
        (folder / f"{i:0{digits}d}.bin").write_bytes(packed)
        file_bytes.append(len(packed))
    manifest["weights_file_bytes"] = len(packed_weights)
    manifest["words"]["file_bytes"] = file_bytes
    (out / "manifest.json").write_bytes(_manifest_bytes(manifest))  # last: the export is whole
    return manifest


def _export_cache(dtype: str, chunk_rows: int) -> Path:
    """Where an export is kept: beside the model's package (its weight file's size in the name:
    another release, another export; :data:`EXPORT_FORMAT`: another layout)."""
    size = _weights_path().stat().st_size
    name = f"minilm-web.{size}.{EXPORT_FORMAT}.{dtype}.{chunk_rows}"
    return cache_folder(model_dir().parent) / name


def prepare_export(dtype: str = "float16", *, chunk_rows: int = CHUNK_ROWS) -> Path:
    """The folder holding an export, made once (about 10 s) and kept: the site's build copies
    it, and :func:`download_sizes` reads its files' sizes. Several processes may ask at once:
    one exports while the others wait."""
    _manifest(dtype, chunk_rows)  # a bad argument is refused before anything is written
    return kept_export(
        _export_cache(dtype, chunk_rows), lambda d: export_weights(d, dtype, chunk_rows=chunk_rows)
    )


def copy_export(out_dir: str | Path, dtype: str = "float16") -> Path:
    """The kept export (:func:`prepare_export`) copied into ``out_dir`` (created); returns it."""
    return Path(shutil.copytree(prepare_export(dtype), out_dir, dirs_exist_ok=True))


@lru_cache(maxsize=4)
def download_sizes(dtype: str = "float16", chunk_rows: int = CHUNK_ROWS) -> dict[str, int]:
    """What a reader downloads: ``upfront_bytes`` on the first edit, then one chunk per new token.

    Keys: ``upfront_bytes`` (manifest + vocabulary + weights), ``weights_bytes``,
    ``vocab_bytes``, ``chunks``, ``chunk_bytes`` (the largest chunk file) and ``words_bytes``
    (all chunk files): the sizes of the files of the kept export (:func:`prepare_export`).
    """
    folder = prepare_export(dtype, chunk_rows=chunk_rows)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    size = lambda name: (folder / name).stat().st_size  # noqa: E731
    chunk_files = [p.stat().st_size for p in (folder / "words").glob("*.bin")]
    return {
        "upfront_bytes": size("manifest.json") + size("vocab.json") + size("weights.bin"),
        "weights_bytes": size("weights.bin"),
        "vocab_bytes": size("vocab.json"),
        "chunks": manifest["words"]["chunks"],
        "chunk_bytes": max(chunk_files),
        "words_bytes": sum(chunk_files),
    }


def read_export(out_dir: str | Path) -> dict[str, NDArray[np.float32]]:
    """Decode an export back into float32 arrays by tensor name (the word table reassembled).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = export_weights(d, "float16")
    ...     w = read_export(d)
    >>> w[WORD_TABLE].shape, w[WORD_TABLE].dtype
    ((30522, 384), dtype('float32'))
    """
    out = Path(out_dir)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    dt = _check_dtype(manifest["dtype"])
    blob = unpack((out / "weights.bin").read_bytes(), dt)  # (weights_bytes / itemsize,)
    arrays: dict[str, NDArray[np.float32]] = {}
    for e in manifest["tensors"]:
        start = e["offset"] // dt.itemsize
        values = blob[start : start + e["length"] // dt.itemsize]
        arrays[e["name"]] = values.astype(np.float32).reshape(e["shape"])
    w = manifest["words"]
    rows = [
        unpack((out / "words" / f"{i:0{w['digits']}d}.bin").read_bytes(), dt)
        for i in range(w["chunks"])
    ]
    table = np.concatenate(rows).astype(np.float32)  # (rows * d_model,)
    arrays[WORD_TABLE] = table.reshape(w["rows"], manifest["d_model"])  # (vocab, d_model)
    return arrays
