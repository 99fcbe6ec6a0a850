"""The cache of sliding-window and local/global models (chapter 10, section 10.6): the formula
``Σ_layers 2 · n_kv · d_head · min(T, window) · bytes`` (:func:`course_utils.kv_cache.
layers_cache_bytes`) equals the bytes of the tensors real caches hold after ``T`` tokens
(:func:`course_utils.kv_cache.layer_caches`: ``KVCache`` and the rolling ``StreamingKVCache``),
and both agree with oracles we did not write: the caches of ``transformers``' Mistral and Gemma 3
models, and the Mistral paper's "8x" at 32k tokens."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.kv_cache import (
    AttentionLayer,
    KVCache,
    StreamingKVCache,
    cache_nbytes,
    layer_caches,
    layers_cache_bytes,
)
from course_utils.model_configs import MODEL_CONFIGS


def _stack(pattern: str, n_layers: int, n_kv: int, d_head: int, window: int):
    """``"mistral"``: every layer sliding; ``"gemma3"``: 5 sliding then 1 full, cut at
    ``n_layers`` (Gemma 3's pattern); ``"global"``: every layer full."""
    local = AttentionLayer(
        "sliding", n_heads=2 * n_kv, n_kv_heads=n_kv, d_head=d_head, window=window
    )
    full = AttentionLayer("full", n_heads=2 * n_kv, n_kv_heads=n_kv, d_head=d_head)
    cycle = {"mistral": [local], "gemma3": [local] * 5 + [full], "global": [full]}[pattern]
    return [cycle[i % len(cycle)] for i in range(n_layers)]


def _feed(caches, n_kv: int, d_head: int, T: int, chunk: int, dtype, seed: int) -> None:
    """Append ``T`` tokens' random keys and values to every cache, ``chunk`` tokens at a time."""
    g = torch.Generator().manual_seed(seed)
    done = 0
    while done < T:
        n = min(chunk, T - done)
        for c in caches:
            k = torch.randn(1, n_kv, n, d_head, generator=g).to(dtype)  # (B, n_kv, n, d)
            v = torch.randn(1, n_kv, n, d_head, generator=g).to(dtype)  # (B, n_kv, n, d)
            c.append(k, v)
        done += n


CASES = [
    # pattern, layers, n_kv, d_head, window, T, chunk, dtype
    ("mistral", 4, 2, 8, 16, 5, 1, torch.float32),  # before the window fills
    ("mistral", 4, 2, 8, 16, 16, 1, torch.float32),  # exactly full
    ("mistral", 4, 2, 8, 16, 100, 1, torch.float32),  # long past it: the rolling buffer
    ("mistral", 3, 1, 4, 7, 50, 7, torch.float16),  # prompt pieces of a whole window
    ("gemma3", 6, 2, 8, 16, 100, 1, torch.float32),  # Gemma 3's 5:1
    ("gemma3", 8, 4, 4, 10, 64, 3, torch.bfloat16),  # cut mid-cycle: 7 sliding, 1 full
    ("gemma3", 12, 1, 16, 32, 20, 5, torch.float32),  # T < window: nothing evicted yet
    ("global", 5, 2, 8, 16, 40, 4, torch.float32),  # plain chapter-10 cache
]


@pytest.mark.parametrize(
    ("pattern", "n_layers", "n_kv", "d_head", "window", "T", "chunk", "dtype"), CASES
)
def test_the_formula_is_the_bytes_real_caches_hold(
    pattern, n_layers, n_kv, d_head, window, T, chunk, dtype
):
    layers = _stack(pattern, n_layers, n_kv, d_head, window)
    caches = layer_caches(layers)
    _feed(caches, n_kv, d_head, T, chunk, dtype, seed=T)
    held = layers_cache_bytes(layers, T, bytes_per_value=dtype.itemsize)
    assert cache_nbytes(caches) == held
    # the formula written out, as the chapter states it
    by_hand = sum(
        2 * n_kv * d_head * min(T, x.window if x.kind == "sliding" else T) * dtype.itemsize
        for x in layers
    )
    assert held == by_hand
    for x, c in zip(layers, caches, strict=True):
        assert isinstance(c, StreamingKVCache if x.kind == "sliding" else KVCache)
        assert len(c) == (min(T, window) if x.kind == "sliding" else T)


@settings(max_examples=40, deadline=None)
@given(
    pattern=st.sampled_from(["mistral", "gemma3", "global"]),
    n_layers=st.integers(1, 13),
    window=st.integers(1, 12),
    T=st.integers(1, 40),
    chunk_fraction=st.floats(0.0, 1.0),
)
def test_the_cache_stops_growing_at_the_window(pattern, n_layers, window, T, chunk_fraction):
    """Property: real bytes == formula for any stack, length and append size <= window; and a
    stack with a sliding layer never holds more than its window there, whatever T."""
    chunk = max(1, round(chunk_fraction * window))
    layers = _stack(pattern, n_layers, 1, 2, window)
    caches = layer_caches(layers)
    _feed(caches, 1, 2, T, chunk, torch.float32, seed=0)
    assert cache_nbytes(caches) == layers_cache_bytes(layers, T, bytes_per_value=4)
    # once every window is full, only the full layers grow: K and V, 1 head, d 2, 4 bytes
    filled = max(T, window)
    growth = layers_cache_bytes(layers, filled + window, bytes_per_value=4) - layers_cache_bytes(
        layers, filled, bytes_per_value=4
    )
    assert growth == sum(x.kind == "full" for x in layers) * 2 * 1 * 2 * 4 * window


def _oracle_held_bytes(model, T: int) -> int:
    """Bytes of keys and values in ``transformers``' own cache after feeding ``T`` tokens one at
    a time to ``model`` (their code decides what each layer keeps)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    ids = torch.zeros(1, 1, dtype=torch.long)
    with torch.no_grad():
        for _ in range(T):
            model(input_ids=ids, cache=cache, use_cache=True)
    return sum(
        t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values)
    )


@pytest.fixture(scope="module")
def hf_models():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    # tiny random models: what their caches keep depends on the config, not on the weights
    tiny = {
        "vocab_size": 16,
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 4,
        "sliding_window": 6,
        "max_position_embeddings": 64,
    }
    mistral = transformers.MistralForCausalLM(
        transformers.MistralConfig(num_hidden_layers=3, **tiny)
    ).eval()
    gemma3_layers = ["sliding_attention"] * 5 + ["full_attention"] + ["sliding_attention"] * 2
    gemma3 = transformers.Gemma3ForCausalLM(
        transformers.Gemma3TextConfig(num_hidden_layers=8, layer_types=gemma3_layers, **tiny)
    ).eval()
    return {"mistral": mistral, "gemma3": gemma3}


@pytest.mark.parametrize("pattern", ["mistral", "gemma3"])
@pytest.mark.parametrize("T", [3, 6, 7, 15])
def test_transformers_caches_hold_what_the_formula_says(hf_models, pattern, T):
    """``transformers`` trims a sliding layer to ``window - 1`` tokens *after* each step (the
    next token is appended before it attends); our rolling buffer keeps the ``window`` tokens
    the last query read. So the oracle's cache after ``T`` tokens, plus the one token each layer
    appends next, is the formula at ``T + 1``."""
    model = hf_models[pattern]
    n_layers = model.config.num_hidden_layers
    layers = _stack(pattern, n_layers, 2, 4, 6)
    if pattern == "gemma3":
        kinds = ["full" if k == "full_attention" else "sliding" for k in model.config.layer_types]
        assert [x.kind for x in layers] == kinds  # the same 5:1 pattern, cut at 8 layers
    one_token = n_layers * 2 * 2 * 4 * 4  # every layer: K and V, 2 heads, d 4, float32
    assert _oracle_held_bytes(model, T) + one_token == layers_cache_bytes(
        layers, T + 1, bytes_per_value=4
    )


def test_mistral_paper_8x_at_32k():
    """Jiang et al. 2023, §2 (Rolling Buffer Cache): "On a sequence length of 32k tokens, this
    reduces the cache memory usage by 8x"; window 4096, Table 1."""
    mistral = MODEL_CONFIGS["Mistral 7B"]
    assert mistral.sliding_window == 4096 and set(mistral.layer_kinds()) == {"sliding"}
    assert mistral.cache_bytes(32768) == 8 * mistral.held_cache_bytes(32768)
    assert mistral.held_cache_bytes(32768) == mistral.held_cache_bytes(4096)


def test_gemma3_12b_holds_a_fifth_of_its_global_cache_at_32k():
    cfg = MODEL_CONFIGS["Gemma 3 12B"]
    assert cfg.layer_counts() == {"sliding": 40, "full": 8}
    per_token_layer = 2 * cfg.n_kv_heads * cfg.d_head * 2  # bf16
    want = per_token_layer * (40 * min(32768, 1024) + 8 * 32768)
    assert cfg.held_cache_bytes(32768) == want
    assert 0.19 < want / cfg.cache_bytes(32768) < 0.2


@pytest.mark.parametrize(
    ("layers", "error", "match"),
    [
        ([], TypeError, "non-empty sequence of AttentionLayer; got list"),
        (
            AttentionLayer("full", n_heads=2, n_kv_heads=1, d_head=2),
            TypeError,
            "got AttentionLayer",
        ),
        (["full"], TypeError, r"layers\[0\] must be an AttentionLayer; got str"),
        (
            [AttentionLayer("linear", n_heads=2, d_key=2, d_value=2)],
            ValueError,
            r"layers\[0\] is a 'linear' layer; layer_caches builds 'full' and 'sliding'",
        ),
    ],
)
def test_layer_caches_bad_input(layers, error, match):
    with pytest.raises(error, match=match):
        layer_caches(layers)
