"""course_utils.pretrained.minilm_web: the browser path of chapter 4's head explorer.

* Export round-trip in Python: shapes, offsets, decoding, the stated download sizes.
* The JavaScript in Node (``node --test tests/js/minilm.test.mjs``, no browser): the tokenizer
  equals the ``tokenizers`` library on tricky strings; every attention map equals the reference
  (:func:`course_utils.pretrained.attention_maps`) within 2e-3 with float16 weights and within 1e-5
  with float32 weights; the rollout equals :func:`course_utils.topic_focus.attention_rollout`.
  The expected values are computed here, in Python, and handed to Node in a JSON file.
"""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from course_utils.pretrained import attention_maps, load_tokenizer, model_dir
from course_utils.pretrained.minilm_web import (
    CHUNK_ROWS,
    MAX_BROWSER_TOKENS,
    WORD_TABLE,
    download_sizes,
    export_weights,
    prepare_export,
    read_export,
)
from course_utils.topic_focus import attention_rollout

from .system_tools import run_node_tests

ROOT = Path(__file__).resolve().parent.parent
NODE_TEST = ROOT / "tests" / "js" / "minilm.test.mjs"
TOLERANCE_FLOAT16 = 2e-3
TOLERANCE_FLOAT32 = 1e-5

#: Strings the JavaScript tokenizer must split exactly as `tokenizers` does (keep adding to it).
TRICKY = [
    "",
    " ",
    "Hello, world!",
    "The cat sat on the mat.",
    "naïve café résumé",
    "Über Straße",
    "İstanbul",
    "ΣΊΣΥΦΟΣ",
    "注意力机制很重要",
    "日本語のテキスト",
    "한국어 문장",
    "emoji 😀 and 👍🏽 thumbs",
    "tab\tnew\nline\rreturn",
    "control\u0000\u0007char\u200bzero",
    "zero\ufeffwidth \u00adsoft",
    "[MASK] is [CLS] typed [SEP] in",
    "[mask] lower and [ MASK ]",
    "un[MASK]ed[PAD][UNK]",
    "antidisestablishmentarianism",
    "x" * 101,
    "y" * 100 + " b",
    "don't stop-believing...",
    "$100 + 50% = <win> ^_^ |~`",
    "e-mail: test@example.com #tag",
    "¿Qué? ¡Sí!",
    "— dash – and “quotes” «guillemets»",
    "non\u00a0breaking\u3000space\u2028sep",
    "Ⅻ ① ﬁ ligature",
    "𝒜𝓉𝓉ℯ𝓃𝓉𝒾ℴ𝓃",
    "a\u0301e\u0301 combining",
    "\ufffdreplacement",
    "1234567890 3.14159",
    "Mixed 中文 and English words",
    "    leading and trailing   ",
    "Ǆemal ǅ ǆ",
]
#: Sentences whose 72 maps are compared with the Python reference.
SENTENCES = [
    "The cat sat on the mat.",
    "The trophy did not fit because it was too big.",
    "Snow, snow and more snow.",
    "Attention lets every token look at every other token.",
    "[MASK] naïve 注意 😀!",
]


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("minilm_web")
    return {dt: (export_weights(root / dt, dt), root / dt)[1] for dt in ("float16", "float32")}


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_export_round_trip(exports: dict[str, Path], dtype: str) -> None:
    out = exports[dtype]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    original = load_file(str(model_dir() / "model.safetensors"))
    decoded = read_export(out)
    # every encoder tensor is there, with its shape; the pooler and position ids are not needed
    expected = {k for k in original if not k.startswith(("pooler.", "embeddings.position_ids"))}
    assert set(decoded) == expected
    # offsets: aligned to 8 bytes, in order, not overlapping, inside the unpacked weights.bin
    packed = (out / "weights.bin").read_bytes()
    blob_size = len(zlib.decompress(packed))
    assert len(packed) == manifest["weights_file_bytes"]
    end = 0
    for e in manifest["tensors"]:
        assert e["offset"] % 8 == 0 and e["offset"] >= end
        assert e["length"] == math.prod(e["shape"]) * np.dtype(dtype).itemsize
        end = e["offset"] + e["length"]
        assert tuple(e["shape"]) == original[e["name"]].shape
    assert end == blob_size == manifest["weights_bytes"]
    # decoding gives back the weights: exactly, or exactly their float16 rounding
    for name, value in decoded.items():
        assert value.shape == original[name].shape, name
        np.testing.assert_array_equal(value, original[name].astype(dtype).astype(np.float32))
    words = manifest["words"]
    assert words["chunk_rows"] == CHUNK_ROWS
    assert words["chunks"] == len(list((out / "words").glob("*.bin"))) == math.ceil(30522 / 128)
    assert manifest["max_tokens"] == MAX_BROWSER_TOKENS
    chunk_files = sorted((out / "words").glob("*.bin"))
    assert words["file_bytes"] == [p.stat().st_size for p in chunk_files]
    assert WORD_TABLE not in {e["name"] for e in manifest["tensors"]}
    vocab = json.loads((out / "vocab.json").read_text(encoding="utf-8"))
    assert len(vocab) == 30522 and vocab[101] == "[CLS]" and vocab[103] == "[MASK]"


def test_the_sizes_the_widget_states_are_those_of_the_sites_files(
    exports: dict[str, Path],
) -> None:
    """download_sizes reads the kept export (the one the site's build copies); an export made
    afresh is the same, byte for byte, so its files have the stated sizes."""
    out = exports["float16"]
    sizes = download_sizes("float16")
    upfront = sum((out / f).stat().st_size for f in ("manifest.json", "vocab.json", "weights.bin"))
    chunk_files = [p.stat().st_size for p in (out / "words").glob("*.bin")]
    assert sizes["upfront_bytes"] == upfront
    assert sizes["weights_bytes"] == (out / "weights.bin").stat().st_size
    assert sizes["words_bytes"] == sum(chunk_files)
    assert sizes["chunk_bytes"] == max(chunk_files)
    assert sizes["chunks"] == len(chunk_files) == 239
    kept = prepare_export("float16")
    for name in ("manifest.json", "weights.bin", "words/00000.bin", "words/00238.bin"):
        assert (kept / name).read_bytes() == (out / name).read_bytes(), name


def test_packing_is_lossless_and_saves_a_tenth(exports: dict[str, Path]) -> None:
    """Byte planes under deflate: the float16 weights come back bit for bit (checked in
    test_export_round_trip) and the download shrinks by more than 10 %: the raw float16 files
    would be 2 bytes a number (measured: 15 % smaller)."""
    out = exports["float16"]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    raw = manifest["weights_bytes"] + manifest["words"]["rows"] * manifest["d_model"] * 2
    packed = manifest["weights_file_bytes"] + sum(manifest["words"]["file_bytes"])
    assert packed < 0.9 * raw, (packed, raw)


def test_export_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="dtype must be one of"):
        export_weights(tmp_path, "int8")
    with pytest.raises(ValueError, match="chunk_rows must be a positive int"):
        export_weights(tmp_path, "float16", chunk_rows=0)
    with pytest.raises(ValueError, match="dtype must be one of"):
        prepare_export("bfloat16")  # refused before any folder is made


def _cases() -> dict:
    tok = load_tokenizer()
    tokenizer = []
    for text in TRICKY:
        enc = tok.encode(text)
        tokenizer.append({"text": text, "ids": list(enc.ids), "tokens": list(enc.tokens)})
    maps = []
    for text in SENTENCES:
        tokens, m = attention_maps(text)  # (L, H, T, T)
        maps.append(
            {
                "text": text,
                "tokens": tokens,
                "maps": m.astype(np.float64).ravel().tolist(),
                "rollout": attention_rollout(m).ravel().tolist(),  # (T, T)
            }
        )
    erf = [
        [x, math.erf(x)]
        for x in (-5.0, -3.2, -1.0, -1e-3, 0.0, 0.3, 1.7, 2.49, 2.5, 2.99, 3.0, 4.5, 7.0)
    ]
    return {
        "tokenizer": tokenizer,
        "maps": maps,
        "erf": erf,
        "tolerance_float16": TOLERANCE_FLOAT16,
        "tolerance_float32": TOLERANCE_FLOAT32,
    }


def test_javascript_in_node(exports: dict[str, Path], tmp_path: Path) -> None:
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(_cases(), ensure_ascii=False), encoding="utf-8")
    report = tmp_path / "report.json"
    env = {
        "MINILM_CASES": str(cases),
        "MINILM_F16": str(exports["float16"]),
        "MINILM_F32": str(exports["float32"]),
        "MINILM_REPORT": str(report),
    }
    run_node_tests(NODE_TEST, env, timeout=600)
    measured = json.loads(report.read_text(encoding="utf-8"))
    print(json.dumps(measured))
    assert measured["float16"]["max_abs_diff_maps"] <= TOLERANCE_FLOAT16
    assert measured["float32"]["max_abs_diff_maps"] <= TOLERANCE_FLOAT32
    assert measured["float32"]["max_abs_diff_rollout"] <= TOLERANCE_FLOAT32


def test_chapter4_states_the_download_size_and_the_cap() -> None:
    """The sizes are glued from the chapter's outputs (``tests/test_glue.py``); the cap is a
    constant the text states."""
    import nbformat

    from course_kit.myst import glued_values

    path = ROOT / "chapters" / "04_multi_head_attention.ipynb"
    nb = nbformat.read(path, as_version=4)
    prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown").replace("\n", " ")
    glued = glued_values(json.loads(path.read_text(encoding="utf-8")))
    sizes = download_sizes("float16")
    assert float(glued["download_mb"]) == round(sizes["upfront_bytes"] / 1e6, 1)
    assert int(glued["chunk_kb"]) == round(sizes["chunk_bytes"] / 1e3)
    assert "{glue:text}`download_mb:.1f` MB" in prose
    assert "{glue:text}`chunk_kb:d` KB" in prose
    assert f"at most {MAX_BROWSER_TOKENS} tokens" in prose


def test_build_writes_the_browser_model_only_for_pages_that_need_it(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from course_site import BROWSER_MODEL_DIR, _build_finished

    app = SimpleNamespace(
        outdir=str(tmp_path),
        builder=SimpleNamespace(format="html"),
        config=SimpleNamespace(language=None),
    )
    (tmp_path / "a.html").write_text("<p>no widget</p>", encoding="utf-8")
    _build_finished(app, None)
    assert not (tmp_path / BROWSER_MODEL_DIR).exists()
    saved = '{"state": {"_anywidget_id": "course_utils.widgets.head_explorer.HeadExplorer"}}'
    (tmp_path / "b.html").write_text(f"<script>{saved}</script>", encoding="utf-8")
    _build_finished(app, None)
    folder = tmp_path / BROWSER_MODEL_DIR
    assert sorted(p.name for p in folder.glob("*.mjs")) == [
        "bert.mjs",
        "wordpiece.mjs",
        "worker.mjs",
    ]
    manifest = json.loads((folder / "model" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["dtype"] == "float16" and manifest["words"]["chunks"] == 239
