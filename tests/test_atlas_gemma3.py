"""course_utils.atlas.from_hf on Gemma 3 (``gemma3_text``): ``transformers`` is the oracle.

Tiny random models (hidden 64, vocab 128, sliding window 8) on sequences of 24-40 tokens, longer
than the window: the local layers really drop keys. The RMSNorm gains (zero at initialisation in
``transformers``, i.e. a gain of 1) are randomised so that every norm matters.
"""

from __future__ import annotations

import pytest
import torch
import transformers

from course_utils.atlas import from_hf
from course_utils.atlas.gemma3 import Gemma3Text

from .atlas_helpers import (
    TINY_WINDOWED,
    WINDOW_CHUNKS,
    assert_ours_never_calls_theirs,
    chunked_prefill_error,
    full_and_decoded_errors,
)

BASE = {**TINY_WINDOWED, "intermediate_size": 128, "query_pre_attn_scalar": 16}

# name -> (settings over BASE, T): the interleave by default and by layer_types, MHA, biases,
# eager attention, a final soft-cap, a linear RoPE scaling on the global layers
CASES = {
    "5 local + 1 global + 1 local, soft-cap": (
        {"num_hidden_layers": 7, "final_logit_softcapping": 3.0},
        37,
    ),
    "global first, MHA, biases": (
        {
            "num_hidden_layers": 3,
            "layer_types": ["full_attention", "sliding_attention", "sliding_attention"],
            "num_key_value_heads": 4,
            "attention_bias": True,
            "hidden_activation": "gelu",
        },
        24,
    ),
    "eager, scaled global RoPE, 1 kv head": (
        {
            "num_hidden_layers": 2,
            "layer_types": ["sliding_attention", "full_attention"],
            "num_key_value_heads": 1,
            "head_dim": 32,
            "query_pre_attn_scalar": 24,
            "attn_implementation": "eager",
            "rope_parameters": {
                "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
                "full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1e6},
            },
        },
        40,
    ),
}
TOLERANCE = {torch.float32: 1e-4, torch.float64: 1e-9}


def make_model(settings: dict, seed: int, dtype: torch.dtype) -> transformers.Gemma3ForCausalLM:
    torch.manual_seed(seed)
    config = transformers.Gemma3TextConfig(**{**BASE, **settings})
    model = transformers.Gemma3ForCausalLM(config).to(dtype).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.normal_(0.0, 0.5)  # gains 1 + w away from 1
            elif name.endswith("bias"):
                p.normal_(0.0, 0.1)
    return model


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("case", CASES)
def test_logits_equal_transformers_and_cached_decoding(case, seed, dtype) -> None:
    settings, T = CASES[case]
    model = make_model(settings, seed, dtype)
    ours = from_hf(model)
    assert isinstance(ours, Gemma3Text)
    ids = torch.randint(0, 128, (2, T), generator=torch.Generator().manual_seed(seed))
    full, decoded = full_and_decoded_errors(ours, model, ids, prompt=5)
    assert full <= TOLERANCE[dtype]
    # the float32 softmax of transformers' eager Gemma rounds differently over shorter rows
    decode_tol = 1e-5 if settings.get("attn_implementation") == "eager" else TOLERANCE[dtype]
    assert decoded <= max(decode_tol, TOLERANCE[dtype])


def test_ours_is_made_of_our_modules_and_never_calls_theirs() -> None:
    model = make_model({"num_hidden_layers": 2}, 0, torch.float32)
    assert_ours_never_calls_theirs(from_hf(model), model, cached=False)


def test_the_window_and_the_two_bases_really_bite() -> None:
    """Without its window, or with one RoPE base for both kinds, the rebuild no longer agrees."""
    model = make_model(CASES["5 local + 1 global + 1 local, soft-cap"][0], 0, torch.float64)
    ids = torch.randint(0, 128, (1, 37), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = model(ids).logits
        ours = from_hf(model)
        assert (ours(ids) - want).abs().max() <= 1e-9
        assert [layer.attn.window for layer in ours.layers] == [8, 8, 8, 8, 8, None, 8]
        for layer in ours.layers:
            layer.attn.window = None
        assert (ours(ids) - want).abs().max() > 1e-4
        ours = from_hf(model)
        global_freq = ours.layers[5].attn.inv_freq
        for layer in ours.layers:
            layer.attn.inv_freq = global_freq
        assert (ours(ids) - want).abs().max() > 1e-4


def test_a_local_layer_caches_at_most_its_window() -> None:
    model = make_model(
        {"num_hidden_layers": 2, "layer_types": ["sliding_attention"] * 2}, 0, torch.float32
    )
    ours = from_hf(model)
    cache = ours.new_cache()
    with torch.no_grad():
        for t in range(30):
            ours(torch.tensor([[t % 128]]), cache=cache)
    assert all(len(layer) == 8 for layer in cache.layers)  # w - 1 old keys + the newest
    assert cache.layers[0].positions.tolist() == list(range(22, 30))


@pytest.mark.parametrize(
    ("ids", "error", "match"),
    [
        ([[1, 2]], TypeError, "input_ids must be an integer torch.Tensor"),
        (torch.tensor([[1.0, 2.0]]), TypeError, "got dtype torch.float32"),
        (torch.tensor([1, 2]), ValueError, r"shape \(B, T\).*got shape \(2,\)"),
        (torch.tensor([[1, 128]]), ValueError, r"\[0, 128\) \(vocab_size\); got values from 1"),
        (torch.zeros(1, 0, dtype=torch.long), ValueError, "B, T >= 1"),
    ],
)
def test_bad_input_ids_are_named(ids, error, match) -> None:
    ours = from_hf(make_model({"num_hidden_layers": 1}, 0, torch.float32))
    with pytest.raises(error, match=match):
        ours(ids)


def test_a_cache_of_another_batch_or_model_is_refused() -> None:
    ours = from_hf(make_model({"num_hidden_layers": 1}, 0, torch.float32))
    cache = ours.new_cache()
    with torch.no_grad():
        ours(torch.zeros(2, 3, dtype=torch.long), cache=cache)
        with pytest.raises(ValueError, match="the cache holds 2 sequence"):
            ours(torch.zeros(1, 1, dtype=torch.long), cache=cache)
        with pytest.raises(TypeError, match="cache must be a DecodeCache"):
            ours(torch.zeros(1, 1, dtype=torch.long), cache=[])


def test_a_bidirectional_gemma_is_refused() -> None:
    model = make_model(
        {"num_hidden_layers": 1, "use_bidirectional_attention": True}, 0, torch.float32
    )
    with pytest.raises(ValueError, match="use_bidirectional_attention must be False"):
        from_hf(model)


@pytest.mark.parametrize("chunks", WINDOW_CHUNKS)
def test_chunked_prefill_equals_the_full_pass(chunks) -> None:
    """Pieces longer than the window, shorter, and exactly the window: the same logits."""
    model = make_model(CASES["5 local + 1 global + 1 local, soft-cap"][0], 3, torch.float64)
    assert chunked_prefill_error(model, chunks) <= 1e-9
