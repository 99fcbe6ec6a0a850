"""RoPE scaled in a real model: :class:`course_utils.positions.ScaledRoPE` in the attention paths,
:func:`course_utils.pretrained.smollm2.scaled_rope` and :func:`~course_utils.pretrained.smollm2.
nll_in_chunks` (what ``benchmarks/smollm2_long_context.py`` measures with).

Oracles we did not write: ``transformers``' ``LlamaForCausalLM`` on the same GGUF file with its
``LlamaRotaryEmbedding`` built from a config whose ``rope_parameters`` carry the scaling (linear,
YaRN); and, for "no scaling", our own model as it was, which must come out to the last bit.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.causal import CausalSelfAttention
from course_utils.kv_cache import KVCache, PreallocatedKVCache, StreamingKVCache
from course_utils.kv_cache_fast import rope_cos_sin
from course_utils.positions import (
    ScaledRoPE,
    apply_rope,
    rope_inverse_frequencies,
    rotate_by_rope,
)

from .test_rope_scaling import SCALINGS_HF

D64 = torch.float64
SCALINGS = {
    "none": None,
    "linear": {"rope_type": "linear", "factor": 2.0},
    "dynamic": {"rope_type": "dynamic", "factor": 2.0},
    "yarn": {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 16},
    "llama3": SCALINGS_HF["llama3"],  # factor 8, trained on 512 tokens
}


def _rope(name: str, base: float = 100.0) -> ScaledRoPE:
    return ScaledRoPE.of(base, SCALINGS[name], max_position_embeddings=16, seq_len=40)


# -- ScaledRoPE itself --------------------------------------------------------------------------


@given(
    t=st.integers(1, 20),
    half=st.integers(1, 8),
    base=st.sampled_from([10.0, 100.0, 10000.0, 100000.0]),
    start=st.integers(0, 5000),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=40, deadline=None)
def test_without_scaling_it_rotates_exactly_as_the_plain_base(t, half, base, start, seed):
    x = torch.randn(2, t, 2 * half, generator=torch.Generator().manual_seed(seed), dtype=D64)
    positions = torch.arange(start, start + t)  # (t,)
    plain = apply_rope(x, positions, base=base)  # (2, t, d)
    assert torch.equal(ScaledRoPE.of(base).apply(x, positions), plain)
    assert torch.equal(rotate_by_rope(x, positions, ScaledRoPE.of(base)), plain)
    assert torch.equal(rotate_by_rope(x, positions, base), plain)


@pytest.mark.parametrize("name", sorted(SCALINGS))
def test_frequencies_and_rotation_are_those_of_rope_inverse_frequencies(name):
    rope = _rope(name)
    inv_freq, factor = rope_inverse_frequencies(
        8, 100.0, SCALINGS[name], max_position_embeddings=16, seq_len=40
    )
    got_freq, got_factor = rope.frequencies(8)
    assert torch.equal(got_freq, inv_freq) and got_factor == factor
    x = torch.randn(3, 5, 8, dtype=D64)  # (h, T, d)
    pos = torch.arange(30, 35)  # (T,)
    torch.testing.assert_close(
        rope.apply(x, pos), apply_rope(x, pos, inv_freq=inv_freq) * factor, atol=0, rtol=0
    )
    assert hash(rope) == hash(_rope(name)) and rope == _rope(name)  # a cache key


@pytest.mark.parametrize("name", sorted(SCALINGS))
def test_the_decoding_tables_rotate_as_the_readable_path(name):
    """rope_cos_sin's tables (the fast path) give the angles of apply() (the readable path)."""
    rope = _rope(name)
    cos, sin = rope_cos_sin(40, 8, rope, D64)  # (N, 4) each
    inv_freq, factor = rope.frequencies(8)
    angles = torch.arange(40, dtype=D64)[:, None] * inv_freq  # (40, 4)
    torch.testing.assert_close(cos[:40], angles.cos() * factor, atol=1e-15, rtol=0)
    torch.testing.assert_close(sin[:40], angles.sin() * factor, atol=1e-15, rtol=0)
    if name == "none":
        plain_cos, plain_sin = rope_cos_sin(40, 8, 100.0, D64)
        assert torch.equal(cos, plain_cos) and torch.equal(sin, plain_sin)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"base": 0.0}, ValueError, r"^base must be"),
        ({"base": 100.0, "scaling": "linear"}, TypeError, r"^scaling must be None or a dict"),
        (
            {"base": 100.0, "scaling": {"rope_type": "linear"}},
            ValueError,
            r"factor",
        ),
        (
            {"base": 100.0, "scaling": {"rope_type": "dynamic", "factor": 2.0}, "seq_len": 40},
            ValueError,
            r"^rope_type 'dynamic' needs max_position_embeddings",
        ),
        ({"base": 100.0, "seq_len": 0}, ValueError, r"^seq_len must be >= 1; got 0"),
    ],
)
def test_bad_arguments_are_refused_when_made(kwargs, error, match):
    base = kwargs.pop("base")
    scaling = kwargs.pop("scaling", None)
    with pytest.raises(error, match=match):
        ScaledRoPE.of(base, scaling, **kwargs)


# -- in the attention layer: every path, every cache ------------------------------------------


@pytest.mark.parametrize("name", sorted(SCALINGS))
@pytest.mark.parametrize("cache_kind", ["none", "plain", "preallocated", "streaming"])
def test_fast_and_readable_paths_agree_with_a_scaled_rope(name, cache_kind):
    """Without weights asked for, attention takes the fused path (tables of rope_cos_sin); with
    weights, the readable one (rotate_by_rope): the same numbers, token by token or at once."""
    torch.manual_seed(3)
    attn = CausalSelfAttention(8, 2, n_kv_heads=1, rope_base=_rope(name)).double().eval()
    x = torch.randn(1, 12, 8, dtype=D64)  # (B, T, d_model)

    def run(fast: bool) -> torch.Tensor:
        cache = {
            "none": None,
            "plain": KVCache(),
            "preallocated": PreallocatedKVCache(4),
            "streaming": StreamingKVCache(window=5, n_sink=2),
        }[cache_kind]
        with torch.no_grad():
            if cache is None:
                out = attn(x) if fast else attn(x, return_weights=True)[0]
                return out  # (B, T, d_model)
            steps = []
            for t in range(12):
                piece = x[:, t : t + 1]  # (B, 1, d_model)
                steps.append(
                    attn(piece, cache) if fast else attn(piece, cache, return_weights=True)[0]
                )
            return torch.cat(steps, dim=1)  # (B, T, d_model)

    torch.testing.assert_close(run(True), run(False), atol=1e-12, rtol=0)


def test_no_scaling_leaves_the_layer_exactly_as_it_was():
    torch.manual_seed(4)
    plain = CausalSelfAttention(8, 2, rope_base=100.0).double().eval()
    scaled = copy.deepcopy(plain)
    scaled.rope_base = ScaledRoPE.of(100.0)
    x = torch.randn(2, 9, 8, dtype=D64)  # (B, T, d_model)
    with torch.no_grad():
        assert torch.equal(scaled(x), plain(x))
        assert torch.equal(scaled(x, return_weights=True)[1], plain(x, return_weights=True)[1])


# -- SmolLM2 ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.xdist_group("smollm2")
def test_no_scaling_is_the_model_as_shipped_to_the_last_bit(smollm2_ours):
    from course_utils.pretrained.smollm2 import scaled_rope

    model = smollm2_ours
    ids = torch.tensor([model.tokenizer.encode("Attention lets every token look back.")])
    with torch.no_grad():
        before = model(ids)  # (1, T, vocab)
        with scaled_rope(model, None):
            same = model(ids)
        with scaled_rope(model, SCALINGS["linear"]):
            stretched = model(ids)
        after = model(ids)
    assert torch.equal(same, before) and torch.equal(after, before)  # restored on exit
    assert not torch.equal(stretched, before)
    assert all(layer.attn.rope_base == 100000.0 for layer in model.layers)


@pytest.mark.slow
@pytest.mark.xdist_group("smollm2")
@pytest.mark.parametrize(
    "scaling",
    [
        {"rope_type": "linear", "factor": 2.0},
        {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 8192},
    ],
    ids=["linear", "yarn"],
)
def test_scaled_smollm2_matches_transformers_with_the_same_rope_scaling(
    smollm2_ours, smollm2_reference, scaling
):
    """transformers' LlamaForCausalLM, its rotary embedding rebuilt from a config whose
    rope_parameters carry the scaling, gives the logits our scaled model gives."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    from course_utils.pretrained.smollm2 import scaled_rope

    ref, _ = smollm2_reference
    config = copy.deepcopy(ref.config)
    config.rope_parameters = {**scaling, "rope_theta": 100000.0}
    rotary = LlamaRotaryEmbedding(config)
    text = "A language model writes one token at a time, and each token looks back."
    ids = torch.tensor([smollm2_ours.tokenizer.encode(text)])  # (1, T)
    plain_rotary = ref.model.rotary_emb
    try:
        ref.model.rotary_emb = rotary
        with torch.no_grad(), scaled_rope(smollm2_ours, scaling):
            expected = ref(ids).logits  # (1, T, vocab)
            got = smollm2_ours(ids)  # (1, T, vocab)
    finally:
        ref.model.rotary_emb = plain_rotary
    ours_factor = rope_inverse_frequencies(64, 100000.0, scaling, max_position_embeddings=8192)[1]
    assert float(rotary.attention_scaling) == pytest.approx(ours_factor, rel=1e-6)
    torch.testing.assert_close(got, expected, atol=1e-3, rtol=0)
    with torch.no_grad():
        assert (got - smollm2_ours(ids)).abs().max() > 1e-2  # the scaling changed something


@pytest.mark.slow
@pytest.mark.xdist_group("smollm2")
def test_nll_in_chunks_equals_one_causal_pass(smollm2_ours):
    from course_utils.pretrained.smollm2 import nll_in_chunks

    model = smollm2_ours
    text = "The cat sat on the mat. The dog sat on the log. 看书真好，小明在银行边的长椅上看书。"
    ids = torch.tensor(model.tokenizer.encode(text))  # (N,)
    with torch.no_grad():
        whole = F.cross_entropy(model(ids[None])[0, :-1], ids[1:], reduction="none")  # (N - 1,)
        for chunk in (1, 4, 7, len(ids)):
            got = nll_in_chunks(model, ids, chunk=chunk)  # (N - 1,)
            assert got.shape == whole.shape
            torch.testing.assert_close(got, whole, atol=1e-4, rtol=0)


@pytest.mark.slow
@pytest.mark.xdist_group("smollm2")
@pytest.mark.parametrize(
    ("ids", "kwargs", "match"),
    [
        ([5], {}, r"^ids must be the integer token ids of one text"),
        ([[1, 2], [3, 4]], {}, r"^ids must be the integer token ids of one text"),
        ([1.0, 2.0], {}, r"^ids must be the integer token ids of one text"),
        ([1, 2, 3], {"chunk": 0}, r"^chunk must be >= 1; got 0"),
        (list(range(20000)), {}, r"^ids of 20000 tokens in chunks of 512 need about"),
    ],
)
def test_nll_in_chunks_refuses_bad_input_and_texts_that_do_not_fit(
    smollm2_ours, ids, kwargs, match
):
    from course_utils.pretrained.smollm2 import nll_in_chunks

    with pytest.raises(ValueError, match=match):
        nll_in_chunks(smollm2_ours, torch.tensor(ids), max_bytes=2**30, **kwargs)
