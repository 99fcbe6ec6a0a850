"""course_utils.atlas.from_hf on gpt-oss (``gpt_oss``): ``transformers`` is the oracle.

Tiny random models (hidden 64, vocab 128, sliding window 8, 3-8 experts) on sequences of 24-40
tokens, longer than the window. The sinks and biases are randomised (``transformers`` starts the
expert biases at zero and the sinks near zero) so that each of them matters; one case clamps the
SwiGLU hard. ``transformers``' default expert kernel (``grouped_mm``) has no float64, so the float64
models run its ``eager`` experts (the same maths).
"""

from __future__ import annotations

import pytest
import torch
import transformers

from course_utils.atlas import from_hf
from course_utils.atlas.blocks import AttentionCache
from course_utils.atlas.gpt_oss import GptOss

from .atlas_helpers import (
    TINY_WINDOWED,
    WINDOW_CHUNKS,
    assert_ours_never_calls_theirs,
    chunked_prefill_error,
    full_and_decoded_errors,
)

BASE = {**TINY_WINDOWED, "intermediate_size": 32, "num_local_experts": 4, "num_experts_per_tok": 2}

# name -> (settings over BASE, T)
CASES = {
    "sliding/full/sliding, YaRN x32": ({"num_hidden_layers": 3}, 37),
    "full first, MHA, no biases, hard clamp, plain RoPE": (
        {
            "num_hidden_layers": 4,
            "layer_types": ["full_attention", "sliding_attention"] * 2,
            "num_key_value_heads": 4,
            "attention_bias": False,
            "num_local_experts": 3,
            "num_experts_per_tok": 1,
            "swiglu_limit": 0.05,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10_000.0},
        },
        24,
    ),
    "YaRN x8 truncated, 8 experts top 4, 1 kv head": (
        {
            "num_hidden_layers": 2,
            "num_key_value_heads": 1,
            "head_dim": 32,
            "num_local_experts": 8,
            "num_experts_per_tok": 4,
            "rope_parameters": {
                "rope_type": "yarn",
                "factor": 8.0,
                "beta_fast": 16.0,
                "beta_slow": 2.0,
                "truncate": True,
                "original_max_position_embeddings": 64,
                "rope_theta": 5_000.0,
            },
        },
        40,
    ),
}
TOLERANCE = {torch.float32: 1e-4, torch.float64: 1e-9}


def make_model(
    settings: dict, seed: int, dtype: torch.dtype, experts: str = "eager"
) -> transformers.GptOssForCausalLM:
    torch.manual_seed(seed)
    config = transformers.GptOssConfig(**{**BASE, **settings}, experts_implementation=experts)
    model = transformers.GptOssForCausalLM(config).to(dtype).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("sinks"):
                p.normal_(0.0, 2.0)  # heads that often prefer the sink
            elif "norm" in name:
                p.normal_(1.0, 0.3)
            elif "bias" in name:
                p.normal_(0.0, 0.1)
    return model


def _compare(model: transformers.GptOssForCausalLM, T: int, seed: int) -> tuple[float, float]:
    """(max |ours - transformers|, max |cached decoding - ours' full pass|) on 2 sequences."""
    ours = from_hf(model)
    assert isinstance(ours, GptOss)
    ids = torch.randint(0, 128, (2, T), generator=torch.Generator().manual_seed(seed))
    return full_and_decoded_errors(ours, model, ids, prompt=6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("case", CASES)
def test_logits_equal_transformers_and_cached_decoding(case, seed, dtype) -> None:
    settings, T = CASES[case]
    full, decoded = _compare(make_model(settings, seed, dtype), T, seed)
    assert full <= TOLERANCE[dtype]
    assert decoded <= TOLERANCE[dtype]


def test_transformers_default_expert_kernel_agrees_too() -> None:
    settings, T = CASES["sliding/full/sliding, YaRN x32"]
    full, decoded = _compare(make_model(settings, 2, torch.float32, "grouped_mm"), T, 2)
    assert full <= 1e-4 and decoded <= 1e-4


def test_ours_is_made_of_our_modules_and_never_calls_theirs() -> None:
    model = make_model({"num_hidden_layers": 2}, 0, torch.float32)
    assert_ours_never_calls_theirs(from_hf(model), model, cached=False)


def test_sinks_window_and_clamp_really_bite() -> None:
    """Without the sinks, the window or the clamp, the rebuild no longer agrees."""
    settings, T = CASES["full first, MHA, no biases, hard clamp, plain RoPE"]
    model = make_model(settings, 0, torch.float64)
    ids = torch.randint(0, 128, (1, T), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = model(ids).logits
        assert (from_hf(model)(ids) - want).abs().max() <= 1e-9
        for change in ("sinks", "window", "clamp"):
            ours = from_hf(model)
            for layer in ours.layers:
                if change == "sinks":
                    layer.attn.sinks.fill_(-1e4)  # a sink nobody attends to = plain softmax
                elif change == "window":
                    layer.attn.window = None
                else:
                    layer.moe.limit = 7.0
            assert (ours(ids) - want).abs().max() > 1e-4, change


def test_caches_are_bounded_on_sliding_layers_only() -> None:
    model = make_model({"num_hidden_layers": 2}, 0, torch.float32)
    ours = from_hf(model)
    cache = ours.new_cache()
    assert all(isinstance(state, AttentionCache) for state in cache.layers)
    with torch.no_grad():
        ours(torch.arange(20)[None], cache=cache)
        ours(torch.tensor([[5]]), cache=cache)
    assert [len(state) for state in cache.layers] == [8, 21]  # sliding w = 8, then full
    assert cache.seen == 21


def test_bad_input_ids_are_named() -> None:
    ours = from_hf(make_model({"num_hidden_layers": 1}, 0, torch.float32))
    with pytest.raises(ValueError, match=r"\[0, 128\) \(vocab_size\); got values from -1"):
        ours(torch.tensor([[-1, 3]]))
    with pytest.raises(TypeError, match=r"got dtype torch\.bool"):
        ours(torch.ones(1, 2, dtype=torch.bool))


@pytest.mark.parametrize("chunks", WINDOW_CHUNKS)
def test_chunked_prefill_equals_the_full_pass(chunks) -> None:
    """Pieces longer than the window, shorter, and exactly the window: the same logits."""
    model = make_model(CASES["sliding/full/sliding, YaRN x32"][0], 3, torch.float64)
    assert chunked_prefill_error(model, chunks) <= 1e-9
