"""Bad input a fuzzing pass found getting a raw error, a silent wrong answer or a huge allocation:
each is now refused with a message that names the argument (table-driven), and the right forms
around it still work."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils._validation import check_count
from course_utils.attention import attention_scores, default_scale
from course_utils.causal import CharTokenizer
from course_utils.kv_cache import cached_self_attention
from course_utils.masks import diagonal_offset
from course_utils.multihead import MultiHeadAttention, attention_weights
from course_utils.positions import sinusoid_shift_matrix
from course_utils.saturation import softmax_jacobian
from course_utils.softmax import softmax
from course_utils.transformer import TransformerBlock

BIG = 40_000  # a (BIG, BIG) float64 matrix is 12.8 GB


def _mha() -> MultiHeadAttention:
    torch.manual_seed(0)
    return MultiHeadAttention(8, 2)


REFUSED = [
    ("d_k = 0", lambda: default_scale(0), ValueError, r"^d_k must be >= 1; got 0"),
    ("d_k = True", lambda: default_scale(True), TypeError, r"^d_k must be an int"),
    ("a negative t_q", lambda: diagonal_offset(-3, 5, "bottom_right"), ValueError, r"^t_q must"),
    ("a fractional t_q", lambda: diagonal_offset(3.5, 5, "top_left"), TypeError, r"^t_q must"),
    ("a negative id", lambda: CharTokenizer("abc").decode([-1]), ValueError, r"^each id must"),
    ("an id past the alphabet", lambda: CharTokenizer("abc").decode([3]), ValueError,
     r"^each id must"),
    ("a fractional id", lambda: CharTokenizer("abc").decode([1.5]), TypeError, r"^each id must"),
    ("layer_norm_eps = 0", lambda: TransformerBlock(8, 2, 16, layer_norm_eps=0.0), ValueError,
     r"layer_norm_eps"),
    ("return_weights = 'no'", lambda: _mha()(*[torch.zeros(1, 3, 8)] * 3, return_weights="no"),
     TypeError, r"return_weights"),
    ("fast = 'no'", lambda: _mha()(*[torch.zeros(1, 3, 8)] * 3, fast="no"), TypeError, r"fast"),
    ("rope_base = '1e4'", lambda: cached_self_attention(_mha(), torch.zeros(1, 3, 8),
                                                         rope_base="1e4"), TypeError, r"rope_base"),
    ("rope_base = True", lambda: cached_self_attention(_mha(), torch.zeros(1, 3, 8),
                                                        rope_base=True), TypeError, r"rope_base"),
    ("numpy attention of 40,000 x 40,000", lambda: attention_scores(np.ones((BIG, 1)),
                                                                    np.ones((BIG, 1))),
     ValueError, r"would build a result of shape \(40000, 40000\)"),
    ("torch attention weights of 40,000 x 40,000",
     lambda: attention_weights(torch.zeros(BIG, 1), torch.zeros(BIG, 1)), ValueError,
     r"would build a result of shape \(40000, 40000\)"),
    ("a shift matrix of d_model = 40,000", lambda: sinusoid_shift_matrix(1, BIG), ValueError,
     r"would build a result"),
    ("a softmax Jacobian of 40,000 weights", lambda: softmax_jacobian(np.full((1, BIG), 1 / BIG)),
     ValueError, r"would build a result"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "call", "error", "match"), REFUSED, ids=[r[0] for r in REFUSED])
def test_bad_input_is_refused_with_a_message_naming_it(what, call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_the_right_forms_around_them_still_work():
    assert default_scale(np.int64(4)) == 0.5
    assert diagonal_offset(2, 5, "bottom_right") == 3
    assert CharTokenizer("abc").decode(torch.tensor([2, 0, 1])) == "cab"
    assert check_count(np.int64(8), "n_heads") == 8 and type(check_count(np.int64(8), "x")) is int
    x = torch.zeros(1, 3, 8)
    out = cached_self_attention(_mha(), x, rope_base=np.float64(1e4))  # (1, 3, 8)
    assert out.shape == (1, 3, 8)
    bf16 = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.bfloat16)  # numpy has no bfloat16
    np.testing.assert_allclose(softmax(bf16), softmax(np.array([[1.0, 2.0, 3.0]])), rtol=1e-7)
