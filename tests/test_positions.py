"""course_utils.positions against independent oracles, with properties and bad inputs.

Oracles: the paper's formulas written as loops (sinusoids, Vaswani et al. 2017 §3.5); the reference
Llama rotary embedding of ``transformers`` (``LlamaRotaryEmbedding`` + ``apply_rotary_pos_emb``);
the complex-number form of RoPE used by Meta's Llama reference code (``torch.polar`` +
``view_as_complex``, interleaved pairs); BLOOM's ALiBi (``transformers``'
``build_alibi_tensor``) and the slopes printed in Press et al. (2022).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers import LlamaConfig
from transformers.models.bloom.modeling_bloom import build_alibi_tensor
from transformers.models.llama.modeling_llama import (
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)

from course_utils.multihead import MultiHeadAttention
from course_utils.positions import (
    alibi_bias,
    alibi_slopes,
    apply_rope,
    interleaved_to_half,
    rope_frequencies,
    sinusoid_shift_matrix,
    sinusoidal_encoding,
)

#: SmolLM2-135M's rope_theta (its config.json on the Hugging Face hub: "rope_theta": 100000).
SMOLLM2_BASE = 100000.0


# --------------------------------------------------------------------------------------------
# Sinusoidal encodings
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_positions", "d_model", "base"), [(1, 2, 1e4), (7, 4, 1e4), (50, 16, 1e4), (20, 10, 100.0)]
)
def test_sinusoidal_equals_the_papers_formula(n_positions, d_model, base):
    pe = sinusoidal_encoding(n_positions, d_model, base=base)
    assert pe.shape == (n_positions, d_model) and pe.dtype == np.float64
    for p in range(n_positions):
        for i in range(d_model // 2):
            angle = p / base ** (2 * i / d_model)
            assert pe[p, 2 * i] == pytest.approx(math.sin(angle), abs=1e-12)
            assert pe[p, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-12)


@pytest.mark.parametrize("k", [-5, -1, 0, 1, 3, 17])
@pytest.mark.parametrize("d_model", [2, 8, 32])
def test_shift_matrix_maps_pe_p_to_pe_p_plus_k(k, d_model):
    pe = sinusoidal_encoding(80, d_model)  # (80, d_model)
    m = sinusoid_shift_matrix(k, d_model)  # (d_model, d_model)
    p = np.arange(10, 60)
    np.testing.assert_allclose(pe[p] @ m.T, pe[p + k], atol=1e-12)  # rows: M_k PE(p)


def test_shift_block_turns_the_sin_cos_pair_clockwise():
    """Chapter 5 prints M_3's first block as a clockwise turn by 3 radians: in the chapter's own
    convention (``rotation_matrix``, counter-clockwise for a positive angle) it is R(-3), because
    a pair is stored as (sin, cos)."""
    from course_utils.positions import rotation_matrix

    np.testing.assert_allclose(
        sinusoid_shift_matrix(3, 32)[:2, :2], rotation_matrix(-3.0), atol=1e-15
    )


def test_sinusoid_dot_product_depends_only_on_the_offset():
    pe = sinusoidal_encoding(200, 64)
    for k in (1, 5, 20):
        dots = np.einsum("pd,pd->p", pe[:-k], pe[k:])  # PE(p) · PE(p + k) for every p
        np.testing.assert_allclose(dots, dots[0], atol=1e-10)


def test_frequencies_are_a_geometric_sequence():
    theta = rope_frequencies(64, base=SMOLLM2_BASE)
    np.testing.assert_allclose(theta[0], 1.0)
    np.testing.assert_allclose(theta[1:] / theta[:-1], SMOLLM2_BASE ** (-2 / 64))


# --------------------------------------------------------------------------------------------
# RoPE against transformers' Llama implementation
# --------------------------------------------------------------------------------------------


def _llama_rope(q, k, positions, base):
    """(B, h, T, d) q and k rotated by transformers' Llama code at positions (B, T)."""
    d = q.shape[-1]
    cfg = LlamaConfig(
        hidden_size=d * q.shape[1],
        num_attention_heads=q.shape[1],
        head_dim=d,
        rope_theta=base,
        max_position_embeddings=8192,
    )
    rotary = LlamaRotaryEmbedding(cfg)
    cos, sin = rotary(q, positions)  # (B, T, d) each
    return apply_rotary_pos_emb(q, k, cos, sin)  # unsqueeze_dim=1: broadcast over heads


@pytest.mark.parametrize("base", [10000.0, SMOLLM2_BASE])
@pytest.mark.parametrize(
    ("first", "last", "atol"),
    [(0, 64, 2e-5), (30, 63, 2e-5), (0, 4096, 1e-3), (4000, 4096, 1e-3)],
)
@pytest.mark.parametrize("d", [8, 64])
def test_rope_equals_transformers_llama(base, first, last, atol, d):
    g = torch.Generator().manual_seed(first + d)
    T = last - first
    q = torch.randn(2, 3, T, d, generator=g)  # (B, h, T, d)
    k = torch.randn(2, 3, T, d, generator=g)
    positions = torch.arange(first, last).expand(2, T)  # (B, T), as Llama's position_ids
    q_ref, k_ref = _llama_rope(q, k, positions, base)
    q_ours = apply_rope(q, positions[:, None, :], base=base)  # (B, 1, T) broadcasts over heads
    k_ours = apply_rope(k, torch.arange(first, last), base=base)  # (T,) shared
    assert q_ours.dtype == torch.float32
    torch.testing.assert_close(q_ours, q_ref, atol=atol, rtol=0)
    torch.testing.assert_close(k_ours, k_ref, atol=atol, rtol=0)


def test_rope_at_large_positions_is_closer_to_float64_than_transformers_is():
    """transformers forms the angles in float32; ours in float64 (so only the output is rounded)."""
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 1, 96, 64, generator=g)
    positions = torch.arange(4000, 4096)[None]  # (1, T)
    exact = apply_rope(q.double(), positions[:, None], base=10000.0)  # float64 throughout
    ours = apply_rope(q, positions[:, None], base=10000.0)
    ref, _ = _llama_rope(q, q, positions, 10000.0)
    ours_err = float((ours.double() - exact).abs().max())
    ref_err = float((ref.double() - exact).abs().max())
    assert ours_err < 2e-6 < ref_err


def _rope_complex(x, positions, base):
    """Meta's Llama reference form: pairs (2i, 2i+1) as complex numbers times e^{i p theta_i}."""
    d = x.shape[-1]
    theta = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    freqs = torch.polar(
        torch.ones(len(positions), d // 2, dtype=torch.float64), positions.double()[:, None] * theta
    )  # (T, d/2) complex
    xc = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2))  # (..., T, d/2)
    return torch.view_as_real(xc * freqs).flatten(-2)  # (..., T, d)


@pytest.mark.parametrize(("T", "d", "base"), [(5, 2, 1e4), (16, 8, 1e4), (40, 64, SMOLLM2_BASE)])
def test_interleaved_rope_equals_the_complex_form(T, d, base):
    x = torch.randn(3, T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(T))
    positions = torch.arange(T) * 7
    ours = apply_rope(x, positions, base=base, interleaved=True)
    torch.testing.assert_close(ours, _rope_complex(x, positions, base), atol=1e-12, rtol=0)


@pytest.mark.parametrize("d", [2, 4, 10, 64])
def test_interleaved_equals_rotate_half_after_the_permutation(d):
    g = torch.Generator().manual_seed(d)
    x = torch.randn(2, 9, d, dtype=torch.float64, generator=g)
    perm = interleaved_to_half(d)
    assert sorted(perm.tolist()) == list(range(d))
    positions = torch.tensor([0, 1, 2, 5, 8, 13, 100, 1000, 4095])
    inter = apply_rope(x, positions, interleaved=True)
    half = apply_rope(x[..., perm], positions)
    torch.testing.assert_close(inter[..., perm], half, atol=1e-12, rtol=0)
    # and so the scores are the same: q_m · k_n does not care which pairing was used
    q, k = x[0], x[1]
    s_inter = (
        apply_rope(q, positions, interleaved=True) @ apply_rope(k, positions, interleaved=True).T
    )
    s_half = apply_rope(q[:, perm], positions) @ apply_rope(k[:, perm], positions).T
    torch.testing.assert_close(s_inter, s_half, atol=1e-10, rtol=0)


def test_rope_position_zero_is_the_identity_and_dtypes_are_kept():
    x = torch.randn(4, 6)
    torch.testing.assert_close(apply_rope(x, torch.zeros(4, dtype=torch.long)), x)
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        assert apply_rope(x.to(dtype)).dtype == dtype


def test_rope_accepts_numpy_and_keeps_gradients():
    x = np.random.default_rng(0).normal(size=(3, 4))
    out = apply_rope(x, np.array([0, 1, 2]))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    torch.testing.assert_close(out, apply_rope(torch.from_numpy(x)))
    t = torch.randn(3, 4, requires_grad=True)
    apply_rope(t).sum().backward()
    assert t.grad is not None and t.grad.shape == (3, 4)


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------

pairs = st.integers(1, 16).map(lambda n: 2 * n)
positions_st = st.integers(0, 2000)


@given(
    d=pairs,
    m=positions_st,
    n=positions_st,
    shift=st.integers(-500, 3000),
    seed=st.integers(0, 2**16),
    interleaved=st.booleans(),
    base=st.sampled_from([100.0, 10000.0, SMOLLM2_BASE]),
)
def test_rope_score_depends_only_on_the_distance(d, m, n, shift, seed, interleaved, base):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 1, d, dtype=torch.float64, generator=g)  # (T=1, d) each

    def score(a, b):
        qa = apply_rope(q, torch.tensor([a]), base=base, interleaved=interleaved)
        kb = apply_rope(k, torch.tensor([b]), base=base, interleaved=interleaved)
        return float(qa[0] @ kb[0])

    assert score(m + shift, n + shift) == pytest.approx(score(m, n), abs=1e-9)


@given(d=pairs, T=st.integers(1, 12), seed=st.integers(0, 2**16), interleaved=st.booleans())
def test_rope_preserves_norms(d, T, seed, interleaved):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, d, dtype=torch.float64, generator=g)
    positions = torch.randint(0, 10_000, (T,), generator=g)
    out = apply_rope(x, positions, interleaved=interleaved)
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1), atol=1e-12, rtol=0)


@given(T=st.integers(2, 9), seed=st.integers(0, 2**16))
def test_self_attention_without_positions_is_permutation_equivariant(T, seed):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_model=8, n_heads=2).double()
    x = torch.randn(1, T, 8, dtype=torch.float64)  # (B, T, d_model)
    perm = torch.randperm(T)
    with torch.no_grad():
        out = mha(x, x, x)  # (1, T, 8)
        out_perm = mha(x[:, perm], x[:, perm], x[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm], atol=1e-12, rtol=0)


def test_rope_breaks_the_equivariance():
    """With RoPE on q and k, shuffling the tokens changes more than the order of the outputs."""
    torch.manual_seed(0)
    x = torch.randn(6, 8, dtype=torch.float64)  # (T, d)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])

    def attend(h):
        q = k = apply_rope(h)  # positions 0..T-1 go with the slots, not with the tokens
        w = torch.softmax(q @ k.T / math.sqrt(8), dim=-1)  # (T, T)
        return w @ h

    assert not torch.allclose(attend(x[perm]), attend(x)[perm], atol=1e-3)


# --------------------------------------------------------------------------------------------
# ALiBi
# --------------------------------------------------------------------------------------------


def test_alibi_slopes_of_the_paper():
    # Press et al. (2022), section 3: 8 heads -> 1/2^1 ... 1/2^8
    assert alibi_slopes(8).tolist() == [2.0**-i for i in range(1, 9)]
    # 12 heads (reference code): the 8 slopes of 8 heads, then 16-head slopes 1, 3, 5, 7
    expected_12 = [2.0**-i for i in range(1, 9)] + [2.0 ** -(i / 2) for i in (1, 3, 5, 7)]
    np.testing.assert_allclose(alibi_slopes(12).numpy(), expected_12, rtol=1e-15)
    # 16 heads: 1/2^0.5 ... 1/2^8
    np.testing.assert_allclose(alibi_slopes(16).numpy(), [2 ** -(i / 2) for i in range(1, 17)])


@pytest.mark.parametrize("n_heads", [1, 2, 3, 5, 6, 8, 12, 16, 20, 32])
def test_alibi_slopes_equal_bloom(n_heads):
    alibi = build_alibi_tensor(torch.ones(1, 5), n_heads, torch.float32)  # (h, 1, 5): m_h * j
    torch.testing.assert_close(alibi_slopes(n_heads).float(), alibi[:, 0, 1])


@pytest.mark.parametrize(("n_heads", "T"), [(8, 6), (12, 10), (5, 3)])
def test_alibi_gives_the_same_causal_weights_as_bloom(n_heads, T):
    """BLOOM adds +m*j (shift invariance of softmax); the paper and we add -m*(i - j)."""
    scores = torch.randn(n_heads, T, T, generator=torch.Generator().manual_seed(T))
    visible = torch.ones(T, T).tril().bool()
    bloom = build_alibi_tensor(torch.ones(1, T), n_heads, torch.float32)  # (h, 1, T)

    def weights(bias):
        return torch.softmax((scores + bias).masked_fill(~visible, float("-inf")), dim=-1)

    torch.testing.assert_close(weights(alibi_bias(n_heads, T)), weights(bloom), atol=1e-6, rtol=0)


def test_alibi_bias_values_and_alignment():
    b = alibi_bias(12, 4, 7)
    assert b.shape == (12, 4, 7) and b.dtype == torch.float32
    slopes = alibi_slopes(12).float()
    i, j = torch.arange(4)[:, None], torch.arange(7)[None, :]
    torch.testing.assert_close(b, -slopes[:, None, None] * (i - j).abs().float())
    br = alibi_bias(2, 2, 5, align="bottom_right")
    assert br[0, -1, -1] == 0 and br[0, 0, 3] == 0  # last query sits on the last key
    assert torch.equal(alibi_bias(3, 4), alibi_bias(3, 4, 4))
    assert not (alibi_bias(4, 5) > 0).any()


# --------------------------------------------------------------------------------------------
# Bad inputs: clear errors naming the argument and the shapes
# --------------------------------------------------------------------------------------------

BAD = [
    (lambda: sinusoidal_encoding(4, 5), ValueError, r"d_model must be even.*d_model = 5"),
    (lambda: sinusoidal_encoding(0, 4), ValueError, r"n_positions must be >= 1"),
    (lambda: sinusoidal_encoding(4.0, 4), TypeError, r"n_positions must be an int"),
    (lambda: sinusoidal_encoding(4, 4, base=-1.0), ValueError, r"base must be a finite number"),
    (lambda: sinusoid_shift_matrix(1.5, 4), TypeError, r"k must be an int"),
    (lambda: apply_rope(torch.randn(3, 5)), ValueError, r"even last dimension.*\(3, 5\)"),
    (lambda: apply_rope(torch.randn(4)), ValueError, r"at least 2 dimensions.*\(4,\)"),
    (lambda: apply_rope(torch.ones(3, 4, dtype=torch.long)), TypeError, r"x must be a floating"),
    (lambda: apply_rope([[1.0, 2.0]]), TypeError, r"x must be a torch.Tensor.*list"),
    (
        lambda: apply_rope(torch.randn(3, 4), torch.tensor([0.0, 1.0, 2.0])),
        TypeError,
        r"positions must be an integer tensor.*float32",
    ),
    (
        lambda: apply_rope(torch.randn(3, 4), torch.tensor([True, False, True])),
        TypeError,
        r"positions must be an integer tensor.*bool",
    ),
    (
        lambda: apply_rope(torch.randn(3, 4), [0.5, 1.5, 2.5]),
        TypeError,
        r"positions must hold integers.*float64",
    ),
    (
        lambda: apply_rope(torch.randn(3, 4), torch.arange(4)),
        ValueError,
        r"positions must have shape \(T,\) = \(3,\).*got shape \(4,\)",
    ),
    (
        lambda: apply_rope(torch.randn(2, 5, 3, 4), torch.zeros(2, 3, dtype=torch.long)),
        ValueError,
        r"got shape \(2, 3\); for \(B, T\) position ids.*positions\[:, None, :\]",
    ),
    (
        lambda: apply_rope(torch.randn(2, 3, 4), torch.zeros(3, 3, dtype=torch.long)),
        ValueError,
        r"x.shape\[:-1\] = \(2, 3\).*got shape \(3, 3\)",
    ),
    (lambda: apply_rope(torch.randn(3, 4), interleaved=1), TypeError, r"interleaved must be"),
    (lambda: apply_rope(torch.randn(3, 4), base=0.0), ValueError, r"base must be a finite"),
    (lambda: alibi_slopes(0), ValueError, r"n_heads must be >= 1"),
    (lambda: alibi_bias(8, 0), ValueError, r"t_q must be >= 1"),
    (lambda: alibi_bias(8, 3, 2.0), TypeError, r"t_k must be an int"),
    (lambda: alibi_bias(8, 3, align="left"), ValueError, r"align must be"),
]


@pytest.mark.parametrize(("call", "error", "match"), BAD)
def test_bad_inputs_get_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- sizes that cannot fit are refused, bad sizes named (issue 33, §4) ----------------------------


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: alibi_bias(8, 10**6),
            ValueError,
            r"^alibi_bias\(8, t_q=1000000, t_k=1000000\) would build a result of shape "
            r"\(8, 1000000, 1000000\) and need about 192,000,000,000,000 bytes",
        ),
        (lambda: alibi_bias(1, 2, 10**9), ValueError, r"^alibi_bias\(1, t_q=2, t_k=1000000000\)"),
        (
            lambda: sinusoidal_encoding(10**9, 512),
            ValueError,
            r"^sinusoidal_encoding\(1000000000, d_model=512\) would build .*8,192,000,000,000",
        ),
        (lambda: alibi_bias(8, 0), ValueError, r"^t_q must be >= 1; got 0"),
        (lambda: alibi_bias(8, -3), ValueError, r"^t_q must be >= 1; got -3"),
        (lambda: alibi_bias(8, 4, 2.0), TypeError, r"^t_k must be an int"),
        (lambda: alibi_bias(0, 4), ValueError, r"^n_heads must be >= 1"),
        (lambda: alibi_bias(8, 4, align="middle"), ValueError, r"^align must be"),
        (lambda: sinusoidal_encoding(0, 4), ValueError, r"^n_positions must be >= 1"),
        (lambda: sinusoidal_encoding(4.0, 4), TypeError, r"^n_positions must be an int"),
        (lambda: sinusoidal_encoding(4, -2), ValueError, r"^d_model must be >= 2"),
        (lambda: apply_rope(torch.randn(3, 4), interleaved="yes"), TypeError, r"^interleaved"),
    ],
)
def test_bad_and_huge_sizes_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- the 2-D rotation matrix (appendix page "rotations") ------------------------------------


@pytest.mark.parametrize("angle", [0.0, 0.3, -2.0, 7.5])
def test_rotation_matrix_is_multiplication_by_a_unit_complex_number(angle: float) -> None:
    from course_utils.positions import rotation_matrix

    z = complex(0.6, -1.3)  # the vector (0.6, -1.3) as a complex number
    turned = z * np.exp(1j * angle)  # oracle: rotation = multiplication by e^{i angle}
    np.testing.assert_allclose(
        rotation_matrix(angle) @ [z.real, z.imag], [turned.real, turned.imag]
    )


def test_rotation_matrix_is_ropes_rotation_for_one_pair() -> None:
    from course_utils.positions import rotation_matrix

    q = torch.tensor([[0.3, -1.1]], dtype=torch.float64)  # (T=1, d=2): theta_0 = 1
    for p in (0, 1, 5, -3):
        rope = apply_rope(q, torch.tensor([p]))[0].numpy()  # (2,)
        np.testing.assert_allclose(rope, rotation_matrix(p) @ q[0].numpy(), atol=1e-12)


def test_rotation_matrix_rejects_non_finite_angles() -> None:
    from course_utils.positions import rotation_matrix

    with pytest.raises(ValueError, match="finite"):
        rotation_matrix(float("nan"))
