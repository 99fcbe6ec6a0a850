"""course_utils.transformer against torch.nn.TransformerEncoderLayer; norms against torch.nn.RMSNorm
and the formulas; costs against counting module parameters and torch.utils.flop_counter."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from course_utils.norms import RMSNorm, layer_norm, rms_norm
from course_utils.transformer import FeedForward, TransformerBlock, sublayer_norms
from course_utils.transformer_cost import (
    block_flops_per_token,
    block_parameter_count,
    decoder_parameter_count,
)

# (B, T, d_model, n_heads, d_ff, bias)
CASES = [
    (1, 1, 4, 1, 8, True),
    (2, 5, 8, 2, 32, True),
    (3, 7, 12, 3, 20, False),
    (2, 4, 16, 4, 64, True),
]


def _pair(d_model, n_heads, d_ff, *, norm_first, activation, bias, seed):
    torch.manual_seed(seed)
    ref = nn.TransformerEncoderLayer(
        d_model, n_heads, d_ff, dropout=0.1, activation=activation, batch_first=True,
        norm_first=norm_first, bias=bias, dtype=torch.float64,
    )  # fmt: skip
    with torch.no_grad():  # PyTorch starts biases at 0 and LayerNorm at (1, 0): randomise all
        for p in ref.parameters():
            p.normal_(0, 0.5)
    ref.eval()
    return ref, TransformerBlock.from_torch(ref).eval()


def _x(B, T, d_model, seed):
    return torch.randn(
        B, T, d_model, generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    )


def _random_mask(shape, seed):
    mask = torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < 0.6
    mask[..., 0] = True  # every query sees at least one key (PyTorch gives NaN otherwise)
    return mask


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize(("B", "T", "d_model", "n_heads", "d_ff", "bias"), CASES)
def test_equals_torch_encoder_layer(B, T, d_model, n_heads, d_ff, bias, norm_first, activation):
    ref, ours = _pair(d_model, n_heads, d_ff, norm_first=norm_first, activation=activation,
                      bias=bias, seed=T)  # fmt: skip
    x = _x(B, T, d_model, seed=d_model)
    with torch.no_grad():
        want = ref(x)
        torch.testing.assert_close(ours(x), want, rtol=0, atol=1e-10)
        torch.testing.assert_close(ours.trace(x).out, want, rtol=0, atol=1e-10)  # readable path


@pytest.mark.parametrize("mask_kind", ["2d", "3d", "4d", "padding", "causal"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [True, False])
def test_equals_torch_with_masks(norm_first, activation, mask_kind):
    B, T, d_model, n_heads, d_ff = 3, 6, 8, 2, 16
    ref, ours = _pair(d_model, n_heads, d_ff, norm_first=norm_first, activation=activation,
                      bias=True, seed=7)  # fmt: skip
    x = _x(B, T, d_model, seed=8)
    if mask_kind == "padding":
        keep = _random_mask((B, T), seed=9)  # (B, T): True = a real token
        ours_mask, kwargs = keep[:, None, :], {"src_key_padding_mask": ~keep}  # PyTorch: True = pad
    elif mask_kind == "causal":
        ours_mask = torch.ones(T, T, dtype=torch.bool).tril()
        kwargs = {"src_mask": ~ours_mask}
    else:
        shape = {"2d": (T, T), "3d": (B, T, T), "4d": (B, n_heads, T, T)}[mask_kind]
        ours_mask = _random_mask(shape, seed=9)
        # PyTorch wants (T, T) or (B * n_heads, T, T), opposite polarity
        theirs = ~ours_mask
        if mask_kind == "3d":
            theirs = theirs[:, None].expand(B, n_heads, T, T)
        kwargs = {"src_mask": theirs.reshape(-1, T, T) if theirs.dim() == 4 else theirs}
    with torch.no_grad():
        want = ref(x, **kwargs)
        torch.testing.assert_close(ours(x, ours_mask), want, rtol=0, atol=1e-10)
        torch.testing.assert_close(ours.trace(x, ours_mask).out, want, rtol=0, atol=1e-10)


def test_causal_mask_keeps_the_past_independent_of_the_future():
    torch.manual_seed(0)
    block = TransformerBlock(8, 2, 16).double().eval()
    x = _x(1, 6, 8, seed=1)
    y = x.clone()
    y[:, 4:] += 5.0  # change the last two tokens
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    with torch.no_grad():
        torch.testing.assert_close(block(x, causal)[:, :4], block(y, causal)[:, :4])


def test_trace_parts_add_up():
    torch.manual_seed(1)
    for norm_first in (True, False):
        block = TransformerBlock(8, 2, 16, norm_first=norm_first).double().eval()
        x = _x(2, 5, 8, seed=2)
        with torch.no_grad():
            t = block.trace(x)
            torch.testing.assert_close(t.out, block(x), rtol=0, atol=1e-12)
            if norm_first:
                torch.testing.assert_close(t.mid, t.x + t.attn_out, rtol=0, atol=0)
                torch.testing.assert_close(t.out, t.mid + t.ffn_out, rtol=0, atol=0)
                torch.testing.assert_close(t.attn_in, block.norm1(x))
            else:
                torch.testing.assert_close(t.mid, block.norm1(t.x + t.attn_out))
            torch.testing.assert_close(t.weights.sum(-1), torch.ones(2, 2, 5, dtype=torch.float64))


def test_attention_matches_multihead_in_eval_and_dropout_sits_on_the_weights():
    torch.manual_seed(2)
    block = TransformerBlock(8, 2, 16, dropout=0.5).double()
    h = _x(2, 5, 8, seed=3)
    block.eval()
    with torch.no_grad():
        out, w = block.self_attention(h, return_weights=True)
        ref_out, ref_w = block.attn(h, h, h, return_weights=True)
        torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-12)
        torch.testing.assert_close(w, ref_w, rtol=0, atol=0)
        block.train()
        torch.manual_seed(3)
        dropped = block.self_attention(h)
        # the same draw by hand: zero some weights, scale the rest by 1 / (1 - p)
        torch.manual_seed(3)
        keep = torch.bernoulli(torch.full_like(ref_w, 0.5))
        v = block.attn.split_heads(block.attn.W_V(h))
        by_hand = block.attn.W_O(block.attn.merge_heads((ref_w * keep / 0.5) @ v))
        torch.testing.assert_close(dropped, by_hand, rtol=0, atol=1e-12)
    assert not torch.allclose(dropped, ref_out)  # training really drops something
    with torch.no_grad():  # eval mode: dropout is the identity, output deterministic
        block.eval()
        torch.testing.assert_close(block(h), block(h), rtol=0, atol=0)


@given(
    st.integers(1, 3), st.integers(1, 6), st.sampled_from([(4, 1), (8, 2), (12, 3)]),
    st.integers(0, 10_000),
)  # fmt: skip
def test_permuting_tokens_permutes_outputs(B, T, dims, seed):
    """Without positions, a block is permutation-equivariant (chapter 5's observation)."""
    d_model, n_heads = dims
    torch.manual_seed(seed)
    block = TransformerBlock(d_model, n_heads, 2 * d_model).double().eval()
    x = _x(B, T, d_model, seed)
    perm = torch.randperm(T)
    with torch.no_grad():
        torch.testing.assert_close(block(x[:, perm]), block(x)[:, perm], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"d_model": 10, "n_heads": 3, "d_ff": 8}, ValueError, "divisible by n_heads"),
        ({"d_model": 8, "n_heads": 2, "d_ff": 8, "activation": "swish"}, ValueError, "activation"),
        (
            {"d_model": 8, "n_heads": 2, "d_ff": 8, "bias": 1},
            TypeError,
            "bias must be True or False",
        ),
        ({"d_model": 8, "n_heads": 2, "d_ff": 8, "norm_first": "yes"}, TypeError, "norm_first"),
        ({"d_model": 8, "n_heads": 2, "d_ff": 8, "dropout": 1.0}, ValueError, "dropout"),
        ({"d_model": 8, "n_heads": 2, "d_ff": 0}, ValueError, "d_ff must be >= 1"),
        ({"d_model": 8.0, "n_heads": 2, "d_ff": 8}, TypeError, "d_model must be an int"),
    ],
)
def test_bad_construction(kwargs, error, match):
    with pytest.raises(error, match=match):
        TransformerBlock(**kwargs)


def test_bad_inputs():
    block = TransformerBlock(8, 2, 16)
    with pytest.raises(ValueError, match=r"x has shape \(5, 8\), expected \(B, T, d_model\)"):
        block(torch.randn(5, 8))
    with pytest.raises(ValueError, match=r"x has shape \(1, 5, 6\).*d_model = 8"):
        block(torch.randn(1, 5, 6))
    with pytest.raises(TypeError, match="floating-point"):
        block(torch.ones(1, 5, 8, dtype=torch.long))
    with pytest.raises(TypeError, match="mask must be a boolean"):
        block(torch.randn(1, 5, 8), torch.ones(5, 5))
    with pytest.raises(ValueError, match="mask has shape"):
        block(torch.randn(1, 5, 8), torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="TransformerEncoderLayer"):
        TransformerBlock.from_torch(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="batch_first"):
        TransformerBlock.from_torch(nn.TransformerEncoderLayer(8, 2, 16))
    with pytest.raises(ValueError, match="relu or gelu"):
        TransformerBlock.from_torch(
            nn.TransformerEncoderLayer(8, 2, 16, activation=torch.tanh, batch_first=True)
        )


def test_from_torch_copies_settings():
    layer = nn.TransformerEncoderLayer(
        8, 2, 24, dropout=0.2, activation="gelu", batch_first=True, norm_first=False,
        bias=False, layer_norm_eps=1e-6,
    )  # fmt: skip
    ours = TransformerBlock.from_torch(layer)
    assert (ours.d_ff, ours.p_dropout, ours.norm_first, ours.ffn.activation) == (
        24,
        0.2,
        False,
        "gelu",
    )
    assert ours.norm1.eps == 1e-6 and ours.attn.W_Q.bias is None and ours.norm1.bias is None
    assert ours.training
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in layer.parameters())


# --- norms ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("eps", [1e-6, 1e-5, None])
@pytest.mark.parametrize("shape", [(3, 8), (2, 4, 16), (5,)])
def test_rmsnorm_equals_torch_and_formula(shape, eps, dtype):
    torch.manual_seed(0)
    ref = nn.RMSNorm(shape[-1], eps=eps, dtype=dtype)
    with torch.no_grad():
        ref.weight.normal_(1, 0.3)
    ours = RMSNorm.from_torch(ref)
    x = torch.randn(shape, dtype=dtype) * 3
    tol = {"rtol": 0, "atol": 1e-12} if dtype == torch.float64 else {"rtol": 1e-6, "atol": 1e-6}
    with torch.no_grad():
        torch.testing.assert_close(ours(x), ref(x), **tol)
        e = ours.eps
        formula = x / torch.sqrt((x**2).sum(-1, keepdim=True) / shape[-1] + e) * ref.weight
        torch.testing.assert_close(ours(x), formula, **tol)


def test_layer_norm_formula_equals_torch():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 8, generator=g, dtype=torch.float64)
    w, b = (
        torch.randn(8, generator=g, dtype=torch.float64),
        torch.randn(8, generator=g, dtype=torch.float64),
    )
    want = nn.functional.layer_norm(x, (8,), w, b, eps=1e-5)
    torch.testing.assert_close(layer_norm(x, w, b), want, rtol=0, atol=1e-12)
    # RMSNorm equals LayerNorm (no gain/bias) exactly when the vectors already have mean 0
    centred = x - x.mean(-1, keepdim=True)
    torch.testing.assert_close(rms_norm(centred, eps=1e-5), layer_norm(centred), rtol=0, atol=1e-12)


def test_norm_errors():
    with pytest.raises(ValueError, match=r"x has shape \(2, 3\).*d_model = 4"):
        RMSNorm(4)(torch.randn(2, 3))
    with pytest.raises(ValueError, match=r"weight must be a tensor of shape \(3,\)"):
        layer_norm(torch.randn(2, 3), torch.ones(4))
    with pytest.raises(TypeError, match="floating-point"):
        rms_norm([1.0, 2.0])
    with pytest.raises(ValueError, match="d_model must be an int"):
        RMSNorm(0)


# --- costs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(("d_model", "n_heads", "d_ff"), [(8, 2, 32), (12, 3, 20), (512, 8, 2048)])
def test_parameter_count_equals_the_module(d_model, n_heads, d_ff, bias):
    block = TransformerBlock(d_model, n_heads, d_ff, bias=bias)
    count = block_parameter_count(d_model, n_heads, d_ff, bias=bias)
    parts = {
        "attention": block.attn, "ffn": block.ffn,
        "norms": nn.ModuleList([block.norm1, block.norm2]),
    }  # fmt: skip
    for name, module in parts.items():
        assert count[name] == sum(p.numel() for p in module.parameters()), name
    assert count["total"] == sum(p.numel() for p in block.parameters())


@pytest.mark.parametrize(("d_model", "d_ff", "T"), [(8, 32, 5), (16, 64, 40), (12, 20, 1)])
def test_flops_equal_torch_flop_counter(d_model, d_ff, T):
    block = TransformerBlock(d_model, 2, d_ff).eval()
    x = torch.randn(1, T, d_model)
    cost = block_flops_per_token(d_model, d_ff, T)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        block.trace(x)  # the readable path: QKᵀ and AV are two bmm's the counter sees
    assert counter.get_total_flops() == T * cost["total"]
    # The fast path's CPU scaled_dot_product_attention kernel is not counted by FlopCounterMode
    # (torch 2.13); what it does count (the linear layers) must still agree.
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        block(x)
    assert counter.get_total_flops() == T * (cost["total"] - cost["attention_scores"])


def test_cost_errors():
    with pytest.raises(ValueError, match="divisible"):
        block_parameter_count(10, 3, 8)
    with pytest.raises(TypeError, match="T must be an int"):
        block_flops_per_token(8, 32, 2.5)
    with pytest.raises(TypeError, match="bias must be True or False"):
        block_parameter_count(8, 2, 8, bias="no")


# --- measurements ---------------------------------------------------------------------------


def test_sublayer_norms_match_the_trace():
    torch.manual_seed(4)
    blocks = [TransformerBlock(8, 2, 16).double().eval() for _ in range(2)]
    x = _x(2, 5, 8, seed=5)
    rows = sublayer_norms(blocks, x)
    with torch.no_grad():
        t0 = blocks[0].trace(x)
        t1 = blocks[1].trace(t0.out)
    assert rows[0]["attn"] == pytest.approx(float(t0.attn_out.norm(dim=-1).mean()))
    assert rows[1]["stream"] == pytest.approx(float(t0.out.norm(dim=-1).mean()))
    assert rows[1]["ffn"] == pytest.approx(float(t1.ffn_out.norm(dim=-1).mean()))


def test_feedforward_is_per_token():
    torch.manual_seed(6)
    ffn = FeedForward(8, 16, activation="gelu")
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(ffn(x)[:, 2], ffn(x[:, 2:3])[:, 0])


@given(st.integers(2, 16), st.floats(0.1, 100.0), st.floats(-50.0, 50.0), st.integers(0, 10_000))
def test_norm_invariances(d, scale, shift, seed):
    """LayerNorm ignores a shift and a positive scale of x; RMSNorm ignores only the scale."""
    x = torch.randn(3, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    x = x + 0.1  # keep the vectors away from all-equal entries, where LayerNorm is 0/eps
    tol = {"rtol": 1e-6, "atol": 1e-6}
    torch.testing.assert_close(rms_norm(scale * x, eps=0.0), rms_norm(x, eps=0.0), **tol)
    torch.testing.assert_close(
        layer_norm(scale * x + shift, eps=0.0), layer_norm(x, eps=0.0), **tol
    )
    y = rms_norm(x, eps=0.0)
    torch.testing.assert_close(y.pow(2).mean(-1), torch.ones(3, dtype=torch.float64), **tol)


# --- a float64 input to a float32 block: a clear error, as MultiHeadAttention's -------------------

_F64 = torch.float64


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize(
    ("make_x", "match"),
    [
        (
            lambda: torch.randn(1, 3, 8, dtype=_F64),
            r"^x has dtype torch.float64, expected torch.float32 .*\.double\(\)",
        ),
        (
            lambda: torch.randn(1, 3, 8, dtype=torch.float16),
            r"^x has dtype torch.float16, expected torch.float32",
        ),
    ],
)
def test_block_refuses_an_input_of_another_dtype(make_x, match, norm_first):
    block = TransformerBlock(8, 2, 16, norm_first=norm_first)
    with pytest.raises(TypeError, match=match):
        block(make_x())
    with pytest.raises(TypeError, match=match):
        block.trace(make_x())
    assert block.double()(torch.randn(1, 3, 8, dtype=_F64)).dtype == _F64  # the fix it names


@pytest.mark.parametrize("causal", ["yes", 1, None])
def test_block_causal_must_be_a_bool(causal):
    with pytest.raises(TypeError, match=r"^causal must be True or False"):
        TransformerBlock(8, 2, 16)(torch.randn(1, 3, 8), causal=causal)


# --- SwiGLU, the gated FFN of Llama-family models (chapter 6, used by SmolLM2 in chapter 10) ------


@pytest.mark.parametrize(("d_model", "d_ff", "seed"), [(8, 16, 0), (6, 10, 1), (32, 96, 2)])
def test_swiglu_equals_transformers_llama_mlp(d_model, d_ff, seed):
    """The oracle is `transformers`' own LlamaMLP (code we did not write), with the same weights."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaMLP

    from course_utils.transformer import SwiGLU

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        hidden_size=d_model, intermediate_size=d_ff, hidden_act="silu", num_attention_heads=2
    )
    ref = LlamaMLP(cfg).double().eval()
    ours = SwiGLU(d_model, d_ff).double().eval()
    with torch.no_grad():
        ours.gate.weight.copy_(ref.gate_proj.weight)
        ours.up.weight.copy_(ref.up_proj.weight)
        ours.down.weight.copy_(ref.down_proj.weight)
        x = torch.randn(2, 5, d_model, dtype=torch.float64)  # (B, T, d_model)
        assert (ours(x) - ref(x)).abs().max().item() < 1e-12
    assert sum(p.numel() for p in ours.parameters()) == 3 * d_model * d_ff


def test_swiglu_hidden_size_convention():
    from course_utils.transformer import SwiGLU

    assert SwiGLU.hidden_size(768) == 2048
    assert SwiGLU.hidden_size(4096, multiple_of=256) == 11008  # Llama 7B's intermediate size
    for d in (64, 768, 4096):  # the same parameters as a ReLU FFN of width 4 d
        assert abs(3 * d * SwiGLU.hidden_size(d) - 2 * d * 4 * d) <= 3 * d
    with pytest.raises(ValueError, match="d_ff"):
        SwiGLU(4, 0)


def test_smollm2_uses_the_one_swiglu():
    from course_utils.pretrained import smollm2
    from course_utils.transformer import SwiGLU

    assert smollm2.SwiGLU is SwiGLU


# --- a whole Llama-style decoder: decoder_parameter_count ---------------------------------------

DECODERS = [  # (vocab, d_model, n_layers, n_heads, n_kv_heads, d_ff, tied)
    (49152, 576, 2, 9, 3, 1536, True),  # SmolLM2-135M's widths, two blocks
    (100, 32, 3, 4, 4, 48, False),  # MHA (as many KV heads as query heads), own LM head
    (64, 48, 1, 6, 1, 20, True),  # MQA
    (500, 64, 4, 8, 2, 172, False),
]


@pytest.mark.parametrize(("v", "d", "n", "h", "kv", "f", "tied"), DECODERS)
def test_decoder_count_equals_transformers_llama(v, d, n, h, kv, f, tied):
    """Oracle: transformers' own LlamaForCausalLM of the same configuration, its parameters
    counted once each (a tied LM head shares the embedding's storage)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=v,
        hidden_size=d,
        intermediate_size=f,
        num_hidden_layers=n,
        num_attention_heads=h,
        num_key_value_heads=kv,
        tie_word_embeddings=tied,
    )
    with torch.device("meta"):  # shapes only, no memory
        model = LlamaForCausalLM(config)
    parts = decoder_parameter_count(v, d, n, h, kv, f, tied=tied)
    assert parts["total"] == sum(p.numel() for p in model.parameters())
    assert parts["embedding"] == model.model.embed_tokens.weight.numel()
    own_head = model.lm_head.weight is not model.model.embed_tokens.weight
    assert parts["lm_head"] == (model.lm_head.weight.numel() if own_head else 0)
    attention = sum(p.numel() for layer in model.model.layers for p in layer.self_attn.parameters())
    ffn = sum(p.numel() for layer in model.model.layers for p in layer.mlp.parameters())
    assert (parts["attention"], parts["ffn"]) == (attention, ffn)


@given(
    v=st.integers(1, 5000),
    d_head=st.integers(1, 16),
    groups=st.integers(1, 4),
    n_kv=st.integers(1, 4),
    n=st.integers(1, 6),
    f=st.integers(1, 200),
)
def test_decoder_count_parts(v, d_head, groups, n_kv, n, f):
    """The parts add up; untying adds exactly one embedding table; fewer KV heads, fewer
    parameters; the blocks are n_layers equal blocks plus one final norm."""
    h = groups * n_kv
    d = h * d_head
    tied = decoder_parameter_count(v, d, n, h, n_kv, f)
    untied = decoder_parameter_count(v, d, n, h, n_kv, f, tied=False)
    parts = ("embedding", "attention", "ffn", "norms", "lm_head")
    assert tied["total"] == sum(tied[p] for p in parts)
    assert untied["total"] - tied["total"] == untied["lm_head"] == v * d
    mha = decoder_parameter_count(v, d, n, h, h, f)
    assert mha["attention"] >= tied["attention"]
    one = decoder_parameter_count(v, d, 1, h, n_kv, f)
    assert tied["total"] - tied["embedding"] - d == n * (one["total"] - one["embedding"] - d)


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"d_model": 577}, ValueError, "d_model must be divisible by n_heads"),
        ({"n_kv_heads": 2}, ValueError, "n_heads must be a multiple of n_kv_heads"),
        ({"n_layers": 0}, ValueError, "n_layers"),
        ({"vocab_size": 4.5}, TypeError, "vocab_size"),
        ({"tied": "yes"}, TypeError, "tied must be True or False"),
    ],
)
def test_decoder_count_bad_input(kwargs, error, words):
    args = dict(vocab_size=49152, d_model=576, n_layers=30, n_heads=9, n_kv_heads=3, d_ff=1536)
    with pytest.raises(error, match=words):
        decoder_parameter_count(**(args | kwargs))


# --- cross_kv_multiplies: the cross-attention's K/V projections while decoding ------------------


@pytest.mark.parametrize(
    ("d_model", "t_src", "n_steps", "n_layers", "naive", "cached"),
    [
        (32, 8, 9, 2, 294_912, 32_768),  # chapter 8's model, an 8-letter word
        (512, 256, 32, 6, 32 * 6 * 2 * 256 * 512**2, 6 * 2 * 256 * 512**2),  # base Transformer
        (1, 1, 1, 1, 2, 2),  # one step: the cache saves nothing
    ],
)
def test_cross_kv_multiplies_table(d_model, t_src, n_steps, n_layers, naive, cached):
    from course_utils.transformer_cost import cross_kv_multiplies

    args = (d_model, t_src, n_steps, n_layers)
    assert cross_kv_multiplies(*args, cached=False) == naive
    assert cross_kv_multiplies(*args, cached=True) == cached


@given(d=st.integers(1, 64), t=st.integers(1, 64), n=st.integers(1, 64), layers=st.integers(1, 8))
def test_cross_kv_cache_saves_exactly_a_factor_n_steps(d, t, n, layers):
    from course_utils.transformer_cost import cross_kv_multiplies

    cached = cross_kv_multiplies(d, t, n, layers, cached=True)
    assert cross_kv_multiplies(d, t, n, layers, cached=False) == n * cached
    assert cached == cross_kv_multiplies(d, t, 1, layers, cached=False)  # independent of n


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((32, 0, 9, 2), {"cached": True}, ValueError, "t_src"),
        ((32, 8, 9, 2.5), {"cached": True}, TypeError, "n_layers"),
        ((32, 8, 9, 2), {"cached": 1}, TypeError, "cached must be True or False; got int 1"),
    ],
)
def test_cross_kv_multiplies_bad_input(args, kwargs, error, match):
    from course_utils.transformer_cost import cross_kv_multiplies

    with pytest.raises(error, match=match):
        cross_kv_multiplies(*args, **kwargs)
