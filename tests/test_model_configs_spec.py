"""Chapter 14's spec sheets: the sourced registry (course_utils.model_configs), the cache each kind
of layer holds (course_utils.kv_cache.AttentionLayer) and the FLOPs of a decoded token
(course_utils.transformer_cost).

Three kinds of check: numbers a paper states (DeepSeek-V2's KV cache per token), the bytes of the
tensors our own rebuilt models (course_utils.atlas) really hold after decoding past their window,
and hypothesis properties (the cache never shrinks as T grows, a window never holds more than full
attention, a linear layer's state does not grow). Bad input gets a clear error.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.atlas import from_hf
from course_utils.kv_cache import (
    LAYER_KINDS,
    AttentionLayer,
    kv_cache_bytes,
    layers_cache_bytes,
    mla_cache_bytes,
)
from course_utils.model_configs import (
    CONFIGS_PATH,
    MODEL_CONFIGS,
    SPEC_SEQ_LENS,
    ModelConfig,
    configs_in_chapter,
    load_model_configs,
)
from course_utils.transformer_cost import attention_decode_flops, decode_flops_per_token

from .atlas_helpers import TINY_WINDOWED, decode_ours, one_torch_thread

pytestmark = pytest.mark.usefixtures(one_torch_thread.__name__)

REPO = Path(__file__).resolve().parents[1]
SPEC = {name: cfg for name, cfg in MODEL_CONFIGS.items() if cfg.has_spec}


# -- the registry ------------------------------------------------------------------------------


def test_the_registry_has_at_least_25_sourced_spec_sheets_from_2023_to_2026():
    assert len(SPEC) >= 25
    assert {cfg.year for cfg in SPEC.values()} <= set(range(2023, 2027))
    assert min(cfg.year for cfg in SPEC.values()) == 2023
    assert max(cfg.year for cfg in SPEC.values()) >= 2025


def test_chapter_10_keeps_its_seven_rows_in_its_order():
    # Gemma 3 12B (issue 35): a 5:1 local/global model in section 10.6's calculator
    assert list(configs_in_chapter(10)) == [
        "Llama 2 7B",
        "Llama 2 70B",
        "Mistral 7B",
        "Llama 3 8B",
        "Falcon 7B",
        "SmolLM2-135M",
        "Gemma 3 12B",
    ]


def test_every_citation_is_in_the_bibliography_and_shown_as_the_book_cites_it():
    from course_site.bibstyle import author_year

    bib = (REPO / "references.bib").read_text(encoding="utf-8")
    for cfg in MODEL_CONFIGS.values():
        for key in (cfg.citation, *cfg.extra_citations):
            assert "{" + key + "," in bib, (cfg.name, key)
        assert cfg.cite == author_year(cfg.citation), cfg.name
        assert list(cfg.extra_cites) == [author_year(k) for k in cfg.extra_citations], cfg.name
        assert cfg.source, cfg.name


def test_every_guess_is_named_in_its_source_line():
    """A guessed value is labelled in the data and said to be a guess where its source is."""
    guessed = {name: cfg for name, cfg in MODEL_CONFIGS.items() if cfg.guessed}
    assert set(guessed) == {"DeepSeek-V3.2-Exp", "gpt-oss-20b", "Kimi K2"}
    for cfg in guessed.values():
        assert "guess" in cfg.source, cfg.name


@pytest.mark.parametrize("name", list(SPEC))
def test_every_layer_has_a_kind_and_a_shape(name):
    cfg = SPEC[name]
    kinds = cfg.layer_kinds()
    assert len(kinds) == len(cfg.layers()) == cfg.n_layers
    assert sum(cfg.layer_counts().values()) == cfg.n_layers
    assert cfg.active_params_b <= cfg.total_params_b
    assert (cfg.n_experts is None) == (cfg.n_active_experts is None)


# Which layer is global, as each model's own code decides it (cited in its source line).
PATTERNS = {
    # google-deepmind/gemma make_attention_layers_types: 5 LOCAL_SLIDING, 1 GLOBAL, cut at n
    "Gemma 3 27B": lambda i: "full" if i % 6 == 5 else "sliding",
    "Gemma 3 1B": lambda i: "full" if i % 6 == 5 else "sliding",
    # gemma Gemma2_*: (LOCAL_SLIDING, GLOBAL) * n/2
    "Gemma 2 9B": lambda i: "sliding" if i % 2 == 0 else "full",
    # gpt-oss AttentionBlock: sliding_window if layer_idx % 2 == 0
    "gpt-oss-120b": lambda i: "sliding" if i % 2 == 0 else "full",
    # transformers Qwen3NextConfig: linear unless (i + 1) % 4 == 0
    "Qwen3-Next-80B-A3B": lambda i: "full" if (i + 1) % 4 == 0 else "deltanet",
    # MiniMax-M1 config.json attn_type_list: 1 (softmax) at every 8th layer
    "MiniMax-M1": lambda i: "full" if (i + 1) % 8 == 0 else "linear",
}


@pytest.mark.parametrize("name", list(PATTERNS))
def test_the_layer_pattern_is_the_models_own(name):
    cfg = MODEL_CONFIGS[name]
    assert cfg.layer_kinds() == tuple(PATTERNS[name](i) for i in range(cfg.n_layers))


def test_gemma_3_has_five_local_layers_per_global_one():
    for name in ("Gemma 3 4B", "Gemma 3 12B"):
        counts = MODEL_CONFIGS[name].layer_counts()
        assert counts["sliding"] == 5 * counts["full"] + (MODEL_CONFIGS[name].n_layers % 6)


# -- numbers a paper states --------------------------------------------------------------------


def test_deepseek_v2_caches_34_6k_elements_per_token():
    """DeepSeek-V2, Table 1: MLA caches (d_c + d_h^R) l elements per token, "equal to GQA with
    only 2.25 groups"; Table 9 measures 34.6K elements per token for the large MLA model."""
    cfg = MODEL_CONFIGS["DeepSeek-V2"]
    per_token = cfg.held_cache_bytes(1, bytes_per_value=1)  # one byte a value: elements
    assert per_token == (512 + 64) * 60 == 34_560
    assert round(per_token / 1000, 1) == 34.6
    assert per_token == kv_cache_bytes(60, 1, 128, 1, bytes_per_value=1) * 2.25  # 2.25 groups
    assert cfg.held_cache_bytes(131072) == mla_cache_bytes(60, 512, 64, 131072)


def test_deepseek_v32_reads_2048_tokens_and_adds_the_indexers_keys():
    """DeepSeek-V3.2-Exp (§2): each query attends to the 2048 tokens its indexer picks; the
    cache keeps MLA's latent plus one indexer key (index_head_dim 128) per token."""
    v3, v32 = MODEL_CONFIGS["DeepSeek-V3"], MODEL_CONFIGS["DeepSeek-V3.2-Exp"]
    T = 131072
    assert v32.held_cache_bytes(T) == v3.held_cache_bytes(T) * (576 + 128) // 576
    (dsa,) = set(v32.layers())
    assert dsa.reads(T) == 2048 and dsa.reads(1000) == 1000
    flops = attention_decode_flops(dsa, T)
    assert flops == 2 * 128 * (576 + 512) * 2048 + 2 * 64 * 128 * T


def test_a_three_to_one_hybrid_caches_a_quarter_at_long_context():
    """Kimi Linear (§1, README): a 3:1 ratio of linear to global layers cuts the KV cache by up
    to 75 %; Qwen3-Next has the same ratio: past a few thousand tokens its cache tends to what
    its 12 full layers of 48 hold."""
    cfg = MODEL_CONFIGS["Qwen3-Next-80B-A3B"]
    full_only = kv_cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.d_head, 2**20)
    ratio = cfg.held_cache_bytes(2**20) / full_only
    assert 0.25 < ratio < 0.251


def test_sliding_layers_stop_at_the_window():
    """Mistral 7B (§2): a rolling buffer of W = 4096 tokens; Gemma 3: local layers of 1024."""
    mistral = MODEL_CONFIGS["Mistral 7B"]
    assert mistral.held_cache_bytes(2**20) == mistral.held_cache_bytes(4096)
    assert mistral.held_cache_bytes(4096) == mistral.cache_bytes(4096)  # chapter 10's formula
    gemma = MODEL_CONFIGS["Gemma 3 27B"]
    local = 2 * 16 * 128 * 2  # bytes per token of one local layer
    assert gemma.held_cache_bytes(2**20) == 52 * local * 1024 + 10 * local * 2**20


def test_a_linear_layers_state_is_heads_times_dk_times_dv():
    minimax = MODEL_CONFIGS["MiniMax-M1"]
    (linear,) = {layer for layer in minimax.layers() if layer.kind == "linear"}
    assert linear.held_values(1) == linear.held_values(10**6) == 64 * 128 * 128
    qwen = MODEL_CONFIGS["Qwen3-Next-80B-A3B"]
    (delta,) = {layer for layer in qwen.layers() if layer.kind == "deltanet"}
    conv = 3 * (2 * 16 * 128 + 32 * 128)  # kernel - 1 inputs of q, k and v
    assert delta.held_values(5) == 32 * 128 * 128 + conv


def test_decode_flops_are_twice_the_active_weights_plus_attention():
    cfg = MODEL_CONFIGS["Llama 3 8B"]
    T = 1024
    assert cfg.decode_flops(T) == pytest.approx(2 * 8e9 + 32 * 4 * 32 * 128 * T, rel=1e-12)
    moe = MODEL_CONFIGS["Qwen3-30B-A3B"]  # 3B of 30B: the experts a token skips cost nothing
    assert moe.decode_flops(T) == pytest.approx(2 * 3e9 + 48 * 4 * 32 * 128 * T, rel=1e-12)


def test_spec_rows_mark_contexts_beyond_training():
    rows = MODEL_CONFIGS["Llama 3 8B"].spec()
    assert [r["seq_len"] for r in rows] == list(SPEC_SEQ_LENS)
    assert [r["beyond_context"] for r in rows] == [False, True, True]  # trained for 8k
    assert rows[1]["bytes_per_token"] == rows[1]["held_bytes"] / 131072
    assert [r["beyond_context"] for r in MODEL_CONFIGS["MiniMax-M1"].spec()] == [False] * 3


# -- against the cache our own models really hold ------------------------------------------------


def _bytes(cache) -> int:
    """Bytes of every tensor a decode cache holds for the model (a window's key positions are
    bookkeeping, not cache)."""
    from course_utils.atlas.deepseek_v32 import SparseMLACache
    from course_utils.atlas.qwen3_next import DeltaNetState

    total = 0
    for state in cache.layers:
        if isinstance(state, DeltaNetState):
            tensors = [state.conv, state.state]
        elif isinstance(state, SparseMLACache):
            tensors = [state.latents.c_kv, state.latents.k_rope, state.index_keys]
        else:
            tensors = [state.keys, state.values]
        total += sum(t.numel() * t.element_size() for t in tensors)
    return total


#: Our AttentionLayer's sizes <- the names a transformers config gives them, by kind.
HF_NAMES = {
    "full": {"n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads",
             "d_head": "head_dim"},
    "deltanet": {"n_heads": "linear_num_value_heads", "n_key_heads": "linear_num_key_heads",
                 "d_key": "linear_key_head_dim", "d_value": "linear_value_head_dim",
                 "conv_kernel": "linear_conv_kernel_dim"},
    "dsa": {"n_heads": "num_attention_heads", "d_latent_kv": "kv_lora_rank",
            "d_head_rope": "qk_rope_head_dim", "index_n_heads": "index_n_heads",
            "index_head_dim": "index_head_dim", "index_topk": "index_topk"},
}  # fmt: skip


def _shapes(config) -> list[AttentionLayer]:
    """Every layer's shape, read from a transformers config as our rebuild reads it."""

    def shape(kind: str, **more) -> AttentionLayer:
        names = HF_NAMES["full" if kind == "sliding" else kind]
        return AttentionLayer(kind, **{ours: getattr(config, theirs) for ours, theirs in
                                       names.items()}, **more)  # fmt: skip

    if config.model_type == "deepseek_v32":  # every layer sparse
        return [shape("dsa") for _ in range(config.num_hidden_layers)]
    kinds = {"linear_attention": "deltanet", "sliding_attention": "sliding"}
    return [
        shape("sliding", window=config.sliding_window)
        if kind == "sliding_attention"
        else shape(kinds.get(kind, "full"))
        for kind in config.layer_types
    ]


#: Tiny transformers models of the four atlas types: (model class, config class, settings).
TINY = {
    "gemma3": ("Gemma3ForCausalLM", "Gemma3TextConfig", {
        **TINY_WINDOWED, "intermediate_size": 128, "query_pre_attn_scalar": 16,
        "num_hidden_layers": 3,
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention"]}),
    "gpt_oss": ("GptOssForCausalLM", "GptOssConfig", {
        **TINY_WINDOWED, "intermediate_size": 32, "num_local_experts": 4,
        "num_experts_per_tok": 2, "num_hidden_layers": 2,
        "layer_types": ["sliding_attention", "full_attention"]}),
    "qwen3_next": ("Qwen3NextForCausalLM", "Qwen3NextConfig", {
        "vocab_size": 128, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
        "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
        "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4, "num_experts": 4,
        "num_experts_per_tok": 2, "moe_intermediate_size": 16,
        "shared_expert_intermediate_size": 16,
        "layer_types": ["linear_attention", "full_attention"]}),
    "dsv32": ("DeepseekV32ForCausalLM", "DeepseekV32Config", {
        "vocab_size": 128, "hidden_size": 32, "intermediate_size": 48,
        "moe_intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
        "num_key_value_heads": 2, "kv_lora_rank": 16, "q_lora_rank": 24, "qk_rope_head_dim": 8,
        "qk_nope_head_dim": 8, "v_head_dim": 8, "n_routed_experts": 4, "num_experts_per_tok": 2,
        "n_group": 2, "topk_group": 1, "first_k_dense_replace": 1, "index_topk": 4,
        "index_head_dim": 16, "index_n_heads": 8}),
}  # fmt: skip


def _tiny(name: str):
    """A freshly made (seeded by the caller) tiny model of one atlas type."""
    import transformers

    model_class, config_class, settings = TINY[name]
    config = getattr(transformers, config_class)(**settings, experts_implementation="eager")
    return getattr(transformers, model_class)(config)


KINDS = {
    "gemma3": ["sliding", "sliding", "full"],
    "gpt_oss": ["sliding", "full"],
    "qwen3_next": ["deltanet", "full"],
    "dsv32": ["dsa", "dsa"],
}


@pytest.mark.parametrize("name", list(TINY))
@pytest.mark.parametrize(("prompt", "n_tokens"), [(1, 5), (11, 20)])  # window 8 / top-k 4
def test_the_formula_is_what_our_decode_cache_holds(name, prompt, n_tokens):
    """A prompt, then one token at a time; the formula counts what is held after a decoded token
    (a sliding layer then keeps its last ``window`` keys), here in float32 (4 bytes a value)."""
    torch.manual_seed(0)
    model = _tiny(name)
    layers = _shapes(model.config)
    assert [layer.kind for layer in layers] == KINDS[name]
    ours = from_hf(model.eval().requires_grad_(False))
    ids = torch.randint(0, 128, (2, n_tokens), generator=torch.Generator().manual_seed(1))
    _, cache = decode_ours(ours, ids, prompt)
    assert cache.seen == n_tokens
    want = layers_cache_bytes(layers, n_tokens, batch=2, bytes_per_value=4)
    assert _bytes(cache) == want


def test_past_the_window_a_sliding_layer_holds_the_window_and_a_full_one_everything():
    torch.manual_seed(0)
    model = _tiny("gemma3")
    layers = _shapes(model.config)
    ours = from_hf(model.eval().requires_grad_(False))
    ids = torch.randint(0, 128, (1, 30), generator=torch.Generator().manual_seed(2))
    _, cache = decode_ours(ours, ids, 4)
    held = [len(state) for state in cache.layers]
    assert held == [8, 8, 30] == [layer.reads(30) for layer in layers]


# -- properties --------------------------------------------------------------------------------

sizes = st.integers(1, 64)


@st.composite
def layers_of_every_kind(draw) -> AttentionLayer:
    kind = draw(st.sampled_from(LAYER_KINDS))
    heads = draw(st.integers(1, 8))
    key_heads = draw(st.sampled_from([d for d in range(1, heads + 1) if heads % d == 0]))
    return AttentionLayer(
        kind,
        n_heads=heads,
        n_kv_heads=draw(st.integers(1, 8)),
        d_head=draw(sizes),
        window=draw(st.integers(1, 4096)),
        d_latent_kv=draw(sizes),
        d_head_rope=draw(st.integers(0, 64)),
        index_n_heads=draw(st.integers(1, 8)),
        index_head_dim=draw(sizes),
        index_topk=draw(st.integers(1, 4096)),
        n_key_heads=key_heads,
        d_key=draw(sizes),
        d_value=draw(sizes),
        conv_kernel=draw(st.integers(0, 5)),
    )


@settings(max_examples=200, deadline=None)
@given(layers_of_every_kind(), st.integers(1, 10**6), st.integers(1, 10**6))
def test_cache_and_flops_never_shrink_as_the_context_grows(layer, a, b):
    short, long = sorted((a, b))
    assert layer.held_values(short) <= layer.held_values(long)
    assert attention_decode_flops(layer, short) <= attention_decode_flops(layer, long)
    assert 0 <= layer.reads(short) <= layer.reads(long) <= long


@settings(max_examples=200, deadline=None)
@given(layers_of_every_kind(), st.integers(1, 10**6))
def test_a_window_never_holds_more_than_full_attention_and_a_state_never_grows(layer, T):
    full = AttentionLayer("full", n_heads=layer.n_heads, n_kv_heads=layer.n_kv_heads,
                          d_head=layer.d_head)  # fmt: skip
    window = AttentionLayer("sliding", n_heads=layer.n_heads, n_kv_heads=layer.n_kv_heads,
                            d_head=layer.d_head, window=layer.window)  # fmt: skip
    assert window.held_values(T) <= full.held_values(T)
    assert (window.held_values(T) == full.held_values(T)) == (layer.window >= T)
    if layer.kind in ("linear", "deltanet"):
        assert layer.held_values(T) == layer.held_values(1)
        assert attention_decode_flops(layer, T) == attention_decode_flops(layer, 1)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(sorted(SPEC)), st.integers(1, 2**21))
def test_every_models_cache_per_token_is_at_most_chapter_10s(name, T):
    """Chapter 10's formula treats every layer as full attention; the per-kind cache of a model
    with full (or sliding) attention layers is never larger than that."""
    cfg = SPEC[name]
    if set(cfg.layer_kinds()) <= {"full", "sliding"}:
        assert cfg.held_cache_bytes(T) <= cfg.cache_bytes(T)
        assert (cfg.held_cache_bytes(T) == cfg.cache_bytes(T)) == (
            "sliding" not in cfg.layer_kinds() or (cfg.sliding_window or 0) >= T
        )


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "window", "n_heads": 2}, r"kind must be one of \['full', .*got 'window'"),
        ({"kind": "full", "n_heads": 2, "d_head": 4}, r"'full' layer needs n_kv_heads"),
        ({"kind": "sliding", "n_heads": 2, "n_kv_heads": 1, "d_head": 4}, "needs window"),
        ({"kind": "dsa", "n_heads": 2, "d_latent_kv": 4}, "needs index_n_heads"),
        ({"kind": "full", "n_heads": 0, "n_kv_heads": 1, "d_head": 4}, "n_heads must be"),
        (
            {"kind": "deltanet", "n_heads": 3, "n_key_heads": 2, "d_key": 4, "d_value": 4},
            "n_key_heads = 2 must divide",
        ),
    ],
)
def test_a_layer_with_a_missing_or_bad_size_is_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AttentionLayer(**kwargs)


@pytest.mark.parametrize("T", [0, -1])
def test_a_context_of_no_tokens_is_refused(T):
    layer = AttentionLayer("full", n_heads=2, n_kv_heads=1, d_head=4)
    with pytest.raises(ValueError, match=f"seq_len must be an int >= 1; got {T}"):
        layer.held_values(T)
    with pytest.raises(ValueError, match="seq_len must be an int >= 1"):
        attention_decode_flops(layer, T)
    with pytest.raises(ValueError, match="seq_len must be an int >= 1"):
        MODEL_CONFIGS["Gemma 3 1B"].spec((T,))


def test_sums_and_flops_want_layers():
    with pytest.raises(TypeError, match="non-empty sequence of AttentionLayer"):
        layers_cache_bytes([], 10)
    with pytest.raises(TypeError, match="non-empty sequence of AttentionLayer"):
        decode_flops_per_token(1e9, ["full"], 10)
    with pytest.raises(TypeError, match="layer must be an AttentionLayer; got str"):
        attention_decode_flops("full", 10)
    with pytest.raises(ValueError, match="active_params must be"):
        decode_flops_per_token(-1.0, [AttentionLayer("linear", 1, d_key=2, d_value=2)], 10)


BASE = json.loads(CONFIGS_PATH.read_text(encoding="utf-8"))[0]  # Llama 2 7B's record


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"layer_cycle": [["window", 1]]}, ValueError, "layer kind must be one of"),
        ({"layer_cycle": [["sliding", 1]]}, ValueError, "'sliding' needs sliding_window, which"),
        ({"layer_cycle": [["mla", 1]]}, ValueError, "'mla' needs d_latent_kv, which is missing"),
        ({"layer_cycle": [["full"]]}, ValueError, r"\[kind, count\] pairs; got \['full'\]"),
        ({"layer_cycle": [["full", 0]]}, ValueError, "count of 'full' layers must be"),
        ({"sliding_window": "4096"}, TypeError, "sliding_window must be an int"),
        ({"total_params_b": 0}, ValueError, "total_params_b must be a number > 0"),
        ({"guessed": ["n_kv_head"]}, ValueError, r"guessed names unknown fields \['n_kv_head'\]"),
        ({"sinks": "yes"}, ValueError, "sinks must be True or False"),
    ],
)
def test_a_bad_record_is_refused_naming_the_model_and_the_field(tmp_path, change, error, message):
    path = tmp_path / "configs.json"
    path.write_text(json.dumps([BASE | change]), encoding="utf-8")
    with pytest.raises(error, match=message) as err:
        load_model_configs(path)
    assert "Llama 2 7B" in str(err.value)


def test_decode_flops_need_the_active_parameters():
    cfg = ModelConfig("x", 2, 8, 2, 1, 4, 16, "k", "s")
    assert not cfg.has_spec and cfg.layer_kinds() == ("full", "full")
    with pytest.raises(ValueError, match="x: active_params_b is missing"):
        cfg.decode_flops(4)
    assert math.isclose(cfg.held_cache_bytes(4), kv_cache_bytes(2, 1, 4, 4))
