"""Unit tests of the SpecSheet widget (chapter 14): every number it shows is the registry's own
(course_utils.model_configs, course_utils.kv_cache, course_utils.transformer_cost), the state fits
the budget, the select moves the drawing's data, bad input is rejected clearly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from course_utils.kv_cache import LAYER_KINDS
from course_utils.model_configs import MODEL_CONFIGS, SPEC_SEQ_LENS, ModelConfig
from course_utils.widgets import SpecSheet

WITH_SPEC = [name for name, cfg in MODEL_CONFIGS.items() if cfg.has_spec]
JS = Path(__file__).resolve().parents[1] / "src" / "course_utils" / "widgets" / "spec_sheet.js"


def test_by_default_it_shows_every_model_with_a_spec_sheet_in_the_registrys_order():
    w = SpecSheet()
    assert [m["name"] for m in w.models] == WITH_SPEC
    assert len(WITH_SPEC) >= 25
    assert w.seq_lens == list(SPEC_SEQ_LENS) == [1024, 131072, 1048576]
    assert w.kind_order == list(LAYER_KINDS)
    assert w.data_bytes() < 50_000


@pytest.mark.parametrize("name", WITH_SPEC)
def test_each_models_numbers_are_the_registrys(name):
    cfg = MODEL_CONFIGS[name]
    w = SpecSheet(model=name)
    record = w.models[w.model_index]
    assert w.model_name == name == record["name"]
    assert tuple(LAYER_KINDS[int(c)] for c in record["layers"]) == cfg.layer_kinds() == w.kinds()
    assert dict(record["counts"]) == cfg.layer_counts()
    rows = cfg.spec(SPEC_SEQ_LENS, bytes_per_value=2)
    assert w.rows() == rows
    for shown, row in zip(record["rows"], rows, strict=True):
        per_token, held, flops, beyond = shown  # KiB, MiB, GFLOP: rounded for the drawing
        assert per_token == round(row["bytes_per_token"] / 1024, 2)
        assert held == round(row["held_bytes"] / 2**20, 1)
        assert flops == round(row["decode_flops"] / 1e9, 1)
        assert beyond is row["beyond_context"] is (row["seq_len"] > cfg.context_length)
    assert record["cites"] == [cfg.cite, *cfg.extra_cites]
    assert record["source"] == cfg.source and record["guessed"] == list(cfg.guessed)
    assert (record["experts"] is None) == (cfg.n_experts is None)


def test_the_sizes_each_kind_needs_are_sent_only_where_the_model_has_that_kind():
    w = SpecSheet(["Gemma 3 27B", "DeepSeek-V3.2-Exp", "Qwen3-Next-80B-A3B", "gpt-oss-20b"])
    gemma, dsv32, qwen, oss = w.models
    assert gemma["window"] == 1024 and gemma["mla"] is None and gemma["indexer"] is None
    assert dsv32["mla"] == [512, 64] and dsv32["indexer"] == [64, 128, 2048]
    assert dsv32["window"] is None and dsv32["params"] == ["671B", "37B"]
    assert qwen["linear"] == [32, 128, 128] and qwen["gated"] and not qwen["sinks"]
    assert oss["sinks"] and oss["params"] == ["20.9B", "3.6B"]
    assert oss["guessed"] == ["d_model", "d_head", "sliding_window"]
    kimi = SpecSheet(["Kimi K2", "SmolLM2-135M"]).models
    assert kimi[0]["params"] == ["1T", "32B"] and kimi[1]["params"] == ["135M", "135M"]


def test_the_select_picks_the_model_and_python_sees_it():
    w = SpecSheet.example()
    assert w.model_name == "Gemma 3 27B"
    first = w.rows()
    w.model_index = WITH_SPEC.index("MiniMax-M1")
    assert w.model_name == "MiniMax-M1" and w.rows() != first
    assert repr(w) == f"SpecSheet(model='MiniMax-M1', models={len(WITH_SPEC)})"


def test_a_subset_keeps_the_order_given():
    w = SpecSheet(["Phi-4", "Llama 2 7B"], model="Llama 2 7B")
    assert [m["name"] for m in w.models] == ["Phi-4", "Llama 2 7B"]
    assert w.model_index == 1


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        (("Gemma 3 27B",), {}, TypeError, "models must be a list of model names"),
        ((["Gemma 4"],), {}, ValueError, "models: unknown model 'Gemma 4'"),
        (([],), {}, ValueError, "models must name at least one model"),
        ((["Phi-4", "Phi-4"],), {}, ValueError, "lists a model twice"),
        ((["Phi-4"],), {"model": "Llama 2 7B"}, ValueError, "model must be one of the models"),
    ],
)
def test_bad_input_is_refused_by_name(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        SpecSheet(*args, **kwargs)


def test_a_model_without_a_spec_sheet_is_refused(monkeypatch):
    bare = ModelConfig("Bare", 2, 8, 2, 1, 4, 16, "k", "s")
    monkeypatch.setitem(MODEL_CONFIGS, "Bare", bare)
    with pytest.raises(ValueError, match="'Bare' has no spec sheet"):
        SpecSheet(["Bare"])
    assert "Bare" not in [m["name"] for m in SpecSheet().models]  # the default skips it


def test_the_model_index_is_checked():
    w = SpecSheet(["Phi-4", "Llama 2 7B"])
    with pytest.raises(Exception, match="model_index"):
        w.model_index = 2


def test_the_drawing_names_every_kind_it_can_meet_and_draws_text_safely():
    """Each layer kind has a colour and a legend label in the JavaScript; text goes in through
    textContent only (the base test greps every widget for innerHTML too)."""
    js = JS.read_text(encoding="utf-8")
    for kind in LAYER_KINDS:
        assert re.search(rf"\b{kind}: {{ colour: \"#[0-9a-f]{{6}}\", grows: (true|false)", js), kind
    assert "innerHTML" not in js


def test_under_zh_the_title_and_description_are_chinese():
    from course_utils.i18n import set_language

    set_language("zh")
    try:
        w = SpecSheet(["Phi-4"])
        assert w.title == "规格表解读器：一个模型的注意力要花多少"
        assert w.description.startswith("选择一个模型")
    finally:
        set_language(None)
