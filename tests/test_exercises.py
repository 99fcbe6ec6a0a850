"""The generic exercise checkers: a right answer passes, each typical wrong answer gets its message.

The right answers come from PyTorch (an oracle we did not write), not from the package the checkers
use, so a bug shared by the checker and the package would show up here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from course_utils.exercises import (
    Feedback,
    Mistake,
    as_answer_array,
    check_array,
    check_attention_output,
    check_causal_mask,
    check_scores,
    check_softmax,
    check_weights,
    format_index,
    format_pair,
    merge,
    not_a_pair,
    run_cases,
)

RNG = np.random.default_rng(2024)
Q = RNG.normal(size=(4, 3))  # (T_q, d_k)
K = RNG.normal(size=(5, 3))  # (T_k, d_k)
V = RNG.normal(size=(5, 2))  # (T_k, d_v)
SQRT_DK = math.sqrt(3)
CAUSAL = np.tril(np.ones((4, 5), dtype=bool))  # (T_q, T_k), top-left aligned


def _t(a):
    return torch.from_numpy(np.asarray(a, dtype=np.float64))


RAW = (_t(Q) @ _t(K).T).numpy()  # (T_q, T_k)
SCORES = RAW / SQRT_DK
WEIGHTS = torch.softmax(_t(SCORES), dim=-1).numpy()
OUTPUT = F.scaled_dot_product_attention(_t(Q), _t(K), _t(V)).numpy()
MASKED_SCORES = np.where(CAUSAL, SCORES, -np.inf)
MASKED_WEIGHTS = torch.softmax(_t(MASKED_SCORES), dim=-1).numpy()
MASKED_OUTPUT = F.scaled_dot_product_attention(
    _t(Q), _t(K), _t(V), attn_mask=torch.from_numpy(CAUSAL)
).numpy()


def _softmax(x, axis=-1):
    return torch.softmax(_t(x), dim=axis).numpy()


def _assert_fails_with(fb: Feedback, message: str | None = None, hint: str | None = None):
    assert isinstance(fb, Feedback)
    assert fb.passed is False and not fb
    assert fb.messages, "a failed check must say what is wrong"
    if message is not None:
        assert any(message in m for m in fb.messages), fb.messages
    if hint is not None:
        assert any(hint in h for h in fb.hints), fb.hints


def _assert_passes(fb: Feedback):
    assert fb.passed is True and fb, str(fb)
    assert fb.hints == ()
    assert fb.messages  # also says what is right


# --- Feedback ------------------------------------------------------------------------------------


def test_feedback_text_and_html_are_readable_and_deterministic():
    fb = Feedback(False, "weights", ("row 2 sums to 1.37, expected 1",), ("softmax <axis>?",))
    text = str(fb)
    assert text == repr(fb)
    assert text.splitlines() == [
        "✗ weights: not yet right",
        "  - row 2 sums to 1.37, expected 1",
        "  hint: softmax <axis>?",
    ]
    html = fb._repr_html_()
    assert "&lt;axis&gt;" in html and "<axis>" not in html  # escaped
    assert "not yet right" in html  # not colour alone
    assert html == Feedback(False, "weights", fb.messages, fb.hints)._repr_html_()
    ok = Feedback(True, "scores", ("all 16 entries match",))
    assert str(ok).startswith("✓ scores: correct")
    assert "correct" in ok._repr_html_()


def test_feedback_is_frozen_and_assert_passed():
    fb = Feedback(False, "x", ["a"])
    assert fb.messages == ("a",)
    with pytest.raises(AttributeError):
        fb.passed = True  # type: ignore[misc]
    with pytest.raises(AssertionError, match="✗ x: not yet right"):
        fb.assert_passed()
    Feedback(True, "x").assert_passed()


def test_merge():
    a = Feedback(True, "scores", ("ok",))
    b = Feedback(False, "weights", ("row 0 sums to 2, expected 1",), ("h",))
    c = Feedback(False, "output", ("bad",), ("h",))
    merged = merge("exercise", [a, b, c])
    assert not merged.passed
    assert merged.messages == ("scores: ok", "weights: row 0 sums to 2, expected 1", "output: bad")
    assert merged.hints == ("h",)  # de-duplicated
    assert merge("all", [a, a]).passed


# --- helpers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (0.5234, 0.6123, ("0.523", "0.612")),
        (1.00001, 1.0, ("1.00001", "1")),
        (1.37, 1, ("1.37", "1")),
        (-0.0, 0.1, ("0", "0.1")),
        (-np.inf, 0.5, ("-inf", "0.5")),
    ],
)
def test_format_pair(a, b, expected):
    assert format_pair(a, b) == expected


def test_format_index():
    assert format_index((1, 2)) == "[1, 2]"
    assert format_index(np.array([3])) == "[3]"


def test_as_answer_array_accepts_torch_and_rejects_non_numbers():
    arr = as_answer_array(torch.ones(2, 3, requires_grad=True), "w")
    assert arr.shape == (2, 3)
    for bad, match in [
        (None, "w is None"),
        ("abc", "w must be a numeric array"),
        ([1j], "w must be real"),
        ([[1], [1, 2]], "w could not be turned into an array"),
    ]:
        with pytest.raises(TypeError, match=match):
            as_answer_array(bad, "w")


# --- check_array ---------------------------------------------------------------------------------


def test_check_array_messages():
    expected = np.array([[0.61, 0.39], [0.5, 0.5]])
    _assert_passes(check_array("w", expected + 1e-9, expected))
    _assert_passes(check_array("w", torch.from_numpy(expected), expected))
    _assert_fails_with(
        check_array("w", [[0.52, 0.39], [0.5, 0.5]], expected),
        "entry [0, 0] is 0.52, expected 0.61",
    )
    _assert_fails_with(
        check_array("w", [[0.52, 0.39], [0.5, 0.5]], expected), "1 of 4 entries differ"
    )
    _assert_fails_with(
        check_array("w", np.ones((4, 3)), np.ones((4, 4))), "w has shape (4, 3), expected (4, 4)"
    )
    _assert_fails_with(
        check_array("w", [[np.nan, 1.0]], [[1.0, 1.0]], nan_hint="overflow?"),
        "w contains NaN, first at entry [0, 0]",
        "overflow?",
    )
    _assert_fails_with(check_array("w", "abc", expected), "w must be a numeric array")
    _assert_fails_with(
        check_array("w", expected.T, expected), hint="w is the transpose of the expected result"
    )
    _assert_fails_with(
        check_array("w", np.ones((3, 2)), np.ones((2, 3))),
        "w has shape (3, 2), expected (2, 3)",
        "transpose",
    )


def test_check_array_mistake_hooks():
    expected = np.array([1.0, 2.0])
    wrong = np.array([2.0, 4.0])
    fb = check_array(
        "x", wrong, expected, mistakes=[Mistake("doubled?", wrong), Mistake("never", [9.0, 9.0])]
    )
    assert fb.hints == ("doubled?",)
    # A "mistake" that equals the right answer must not produce a hint.
    fb = check_array("x", wrong, expected, mistakes=[Mistake("same as right", expected)])
    assert fb.hints == ()
    # A right answer never gets a hint, even if it matches a listed value.
    assert check_array("x", expected, expected, mistakes=[Mistake("h", expected)]).hints == ()


def test_check_array_takes_torch_for_the_expected_value_and_the_mistakes():
    expected = torch.tensor([1.0, 2.0], requires_grad=True)
    wrong = torch.tensor([2.0, 4.0], requires_grad=True)
    _assert_passes(check_array("x", expected * 1.0, expected))
    fb = check_array("x", wrong.detach().numpy(), expected, mistakes=[Mistake("doubled?", wrong)])
    assert not fb.passed and fb.hints == ("doubled?",)


def test_run_cases_gives_extra_values_to_compare_only_and_names_the_case_its_way():
    seen = []

    def learner(x):
        seen.append(x)
        return x + 1

    def compare(result, x, want):
        return Feedback(result == want, "inc", (f"got {result}, expected {want}",))

    cases = [("x = 1", (1,), 2), ("x = 2", (2,), 4)]  # the second case's extra value is wrong
    fb = run_cases("inc", learner, "inc", cases, compare, "all {n} right")
    assert seen == [1, 2]  # the learner never got the extra value
    assert fb.messages == ("test case: x = 2", "got 3, expected 4")

    def on_case(title, described, fb):
        return Feedback(False, title, (f"on {described}: {fb.messages[0]}",), fb.hints)

    fb = run_cases("inc", learner, "inc", cases, compare, "all {n} right", fail=on_case)
    assert fb.messages == ("on x = 2: got 3, expected 4",)
    assert run_cases("inc", learner, "inc", cases[:1], compare, "all {n} right").passed


def test_not_a_pair_names_what_came_back():
    assert not_a_pair("t", [1, 2], "a, b") is None
    for result, got in ((1, "int"), ((1, 2, 3), "tuple"), (None, "NoneType")):
        fb = not_a_pair("t", result, "a, b")
        assert not fb.passed
        assert fb.messages == (f"expected a pair (a, b); got a {got}",)
        assert fb.hints == ("end the function with `return a, b`",)


def test_check_array_infinities_compare_equal():
    _assert_passes(check_array("s", [[0.0, -np.inf]], [[0.0, -np.inf]]))
    _assert_fails_with(
        check_array("s", [[0.0, 0.0]], [[0.0, -np.inf]]), "entry [0, 1] is 0, expected -inf"
    )


# --- check_scores --------------------------------------------------------------------------------


def test_check_scores_right_answers():
    _assert_passes(check_scores(SCORES, Q, K))
    _assert_passes(check_scores(RAW, Q, K, scaled=False))
    _assert_passes(check_scores(RAW * 0.25, Q, K, scale=0.25))
    _assert_passes(check_scores(torch.from_numpy(SCORES), Q, K))
    _assert_passes(check_scores(SCORES.astype(np.float32), Q, K, rtol=1e-5, atol=1e-6))


@pytest.mark.parametrize(
    ("answer", "kwargs", "message", "hint"),
    [
        (
            RAW,
            {},
            f"entry [0, 0] is {RAW[0, 0]:.3g}, expected {SCORES[0, 0]:.3g}",
            "did you forget to divide by √d_k = √3 ≈ 1.73?",
        ),
        (
            RAW / 3,
            {},
            "entries differ",
            "you divided by d_k = 3; divide by √d_k = √3 ≈ 1.73 instead",
        ),
        (RAW * SQRT_DK, {}, "entries differ", "you multiplied by √d_k"),
        (
            SCORES.T,
            {},
            "scores has shape (5, 4), expected (4, 5)",
            "this is K·Qᵀ (one row per key)",
        ),
        (RAW.T, {}, "scores has shape (5, 4), expected (4, 5)", "not scaled either"),
        (
            SCORES,
            {"scaled": False},
            "entries differ",
            "already divided by √d_k; this step asks for the raw Q·Kᵀ",
        ),
        (SCORES[:, :4], {}, "scores has shape (4, 4), expected (4, 5)", None),
    ],
)
def test_check_scores_typical_mistakes(answer, kwargs, message, hint):
    _assert_fails_with(check_scores(answer, Q, K, **kwargs), message, hint)


def test_check_scores_forgot_to_transpose_k_when_shapes_allow_it():
    q = RNG.normal(size=(3, 3))  # T_q = d_k = T_k = 3, so Q @ K runs without an error
    k = RNG.normal(size=(3, 3))
    _assert_fails_with(
        check_scores(q @ k / SQRT_DK, q, k), hint="did you forget to transpose K? use Q @ K.T"
    )


# --- check_weights -------------------------------------------------------------------------------


def test_check_weights_right_answers():
    _assert_passes(check_weights(WEIGHTS, Q, K))
    _assert_passes(check_weights(WEIGHTS))  # structure only
    _assert_passes(check_weights(MASKED_WEIGHTS, Q, K, mask=CAUSAL))
    _assert_passes(check_weights(MASKED_WEIGHTS, mask=CAUSAL))
    _assert_passes(check_weights(WEIGHTS.round(2), Q, K, atol=0.006))


@pytest.mark.parametrize(
    ("answer", "mask", "message", "hint"),
    [
        (_softmax(RAW), None, "entries differ", "did you forget to divide by √d_k = √3 ≈ 1.73?"),
        (
            _softmax(SCORES, axis=0),
            None,
            "row 0 sums to",
            "softmax over the wrong axis (use axis=-1)",
        ),
        (
            SCORES,
            None,
            "weights are never negative",
            "these are the scaled scores; apply softmax to each row",
        ),
        (RAW, None, "entries differ", "these are the raw scores Q·Kᵀ"),
        (WEIGHTS.T, None, "weights has shape (5, 4), expected (4, 5)", None),
        (
            WEIGHTS,
            CAUSAL,
            "but that key is masked: masked weights must be exactly 0",
            "the mask was not applied",
        ),
        (
            _softmax(np.where(~CAUSAL, SCORES, -np.inf)),
            CAUSAL,
            "entries differ",
            "the mask's polarity is inverted",
        ),
        (
            np.where(CAUSAL, WEIGHTS, 0.0),
            CAUSAL,
            "row 0 sums to",
            "masked weights were zeroed after the softmax",
        ),
    ],
)
def test_check_weights_typical_mistakes(answer, mask, message, hint):
    _assert_fails_with(check_weights(answer, Q, K, mask=mask), message, hint)


def test_check_weights_row_sum_message_is_exact():
    w = np.array([[0.5, 0.5], [0.9, 0.47]])
    fb = check_weights(w)
    assert fb.messages[0] == "row 1 sums to 1.37, expected 1"


def test_check_weights_structure_only_messages():
    _assert_fails_with(
        check_weights([0.5, 0.5]), "weights has shape (2,), expected (..., T_q, T_k)"
    )
    _assert_fails_with(
        check_weights([[np.nan, 1.0]]), "weights contains NaN, first at entry [0, 0]", "0/0"
    )
    _assert_fails_with(
        check_weights([[1.2, -0.2]]), "entry [0, 1] is -0.2: weights are never negative"
    )
    _assert_fails_with(
        check_weights(np.ones((2, 3)) / 3, mask=np.ones((3, 3), bool)),
        "but the mask has shape (3, 3)",
    )
    batched = np.stack([WEIGHTS, WEIGHTS * 2])  # (2, T_q, T_k): the second batch is wrong
    _assert_fails_with(check_weights(batched), "row 0 of batch [1] sums to 2, expected 1")


def test_check_weights_fully_masked_row_should_sum_to_zero():
    mask = np.array([[True, False], [False, False]])
    _assert_passes(check_weights([[1.0, 0.0], [0.0, 0.0]], mask=mask))
    _assert_fails_with(
        check_weights([[1.0, 0.0], [0.5, 0.5]], mask=mask),
        "row 1 sums to 1, expected 0 (every key is masked for this query)",
    )


def test_check_weights_needs_both_q_and_k():
    with pytest.raises(TypeError, match="needs both q and k"):
        check_weights(WEIGHTS, Q)


# --- check_attention_output ----------------------------------------------------------------------


def test_check_attention_output_right_answers():
    _assert_passes(check_attention_output(OUTPUT, Q, K, V))
    _assert_passes(check_attention_output(MASKED_OUTPUT, Q, K, V, CAUSAL))
    _assert_passes(check_attention_output(torch.from_numpy(OUTPUT), Q, K, V))


@pytest.mark.parametrize(
    ("answer", "mask", "message", "hint"),
    [
        (_softmax(RAW) @ V, None, "entries differ", "did you forget to divide by √d_k"),
        (_softmax(SCORES, axis=0) @ V, None, "entries differ", "softmax over the wrong axis"),
        (
            SCORES @ V,
            None,
            "entries differ",
            "you multiplied the scores by V; apply softmax to the scores first",
        ),
        (RAW @ V, None, "entries differ", "you multiplied the raw scores Q·Kᵀ by V"),
        (
            WEIGHTS,
            None,
            "output has shape (4, 5), expected (4, 2)",
            "these are the attention weights; the output is weights @ V",
        ),
        (V, None, "output has shape (5, 2), expected (4, 2)", "this is V unchanged"),
        (OUTPUT, CAUSAL, "entries differ", "the mask was not applied"),
        (
            _softmax(np.where(~CAUSAL, SCORES, -np.inf)) @ V,
            CAUSAL,
            "entries differ",
            "polarity is inverted",
        ),
    ],
)
def test_check_attention_output_typical_mistakes(answer, mask, message, hint):
    _assert_fails_with(check_attention_output(answer, Q, K, V, mask), message, hint)


def test_check_attention_output_transposed_weights_when_square():
    q, k, v = RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2)), RNG.normal(size=(3, 4))
    w = torch.softmax(_t(q) @ _t(k).T / math.sqrt(2), dim=-1).numpy()
    _assert_fails_with(check_attention_output(w.T @ v, q, k, v), hint="transposed weights")


# --- check_softmax -------------------------------------------------------------------------------

X = RNG.normal(size=(3, 4)) * 3


def test_check_softmax_right_answers():
    _assert_passes(check_softmax(_softmax(X), X))
    _assert_passes(check_softmax(_softmax(X / 2.0), X, temperature=2.0))
    _assert_passes(check_softmax(_softmax(X, axis=0), X, axis=0))


@pytest.mark.parametrize(
    ("answer", "kwargs", "hint"),
    [
        (
            _softmax(X, axis=0),
            {},
            "normalised over axis 0, expected axis -1: softmax over the wrong axis",
        ),
        (_softmax(X), {"axis": 0}, "normalised over axis 1, expected axis 0"),
        (
            _softmax(X),
            {"temperature": 2.0},
            "the temperature was ignored; divide the scores by τ = 2 first",
        ),
        (_softmax(X * 2.0), {"temperature": 2.0}, "you multiplied by the temperature"),
        (np.exp(X), {}, "you computed exp(x) but did not divide by the sum"),
        (X / X.sum(axis=-1, keepdims=True), {}, "you divided by the sum without exp"),
    ],
)
def test_check_softmax_typical_mistakes(answer, kwargs, hint):
    _assert_fails_with(check_softmax(answer, X, **kwargs), "entries differ", hint)


def test_check_softmax_naive_overflow_gives_the_max_subtraction_hint():
    x = np.array([1000.0, 1001.0])
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(x) / np.exp(x).sum()  # inf / inf = nan
    _assert_fails_with(
        check_softmax(naive, x), "softmax contains NaN, first at entry [0]", "subtract the maximum"
    )


# --- check_causal_mask ---------------------------------------------------------------------------


def test_check_causal_mask_right_answers():
    _assert_passes(check_causal_mask(np.tril(np.ones((4, 4), dtype=bool)), 4))
    _assert_passes(check_causal_mask(torch.ones(4, 4, dtype=torch.bool).tril(), 4))
    _assert_passes(
        check_causal_mask(
            torch.ones(2, 5, dtype=torch.bool).tril(diagonal=3), 2, 5, align="bottom_right"
        )
    )


LOWER = np.tril(np.ones((4, 4), dtype=bool))


@pytest.mark.parametrize(
    ("answer", "args", "kwargs", "message", "hint"),
    [
        (
            np.triu(np.ones((4, 4), dtype=bool)),
            (4,),
            {},
            "entry [0, 1] is True, expected False",
            "use np.tril, not np.triu",
        ),
        (
            np.tril(np.ones((4, 4), dtype=bool), -1),
            (4,),
            {},
            "entry [0, 0] is False, expected True",
            "a token must be allowed to attend to itself",
        ),
        (~LOWER, (4,), {}, "16 of 16 entries differ", "polarity is inverted"),
        (np.ones((4, 4), dtype=bool), (4,), {}, "6 of 16 entries differ", "nothing is masked"),
        (
            LOWER.astype(int),
            (4,),
            {},
            "mask has dtype int64, expected bool (True = may attend)",
            "use a boolean mask",
        ),
        (LOWER.astype(float) * 2, (4,), {}, "mask has dtype float64, expected bool", None),
        (np.ones((3, 4), dtype=bool), (4,), {}, "mask has shape (3, 4), expected (4, 4)", None),
        (
            np.tril(np.ones((2, 5), dtype=bool)),
            (2, 5),
            {"align": "bottom_right"},
            "entries differ",
            "anchored top-left; expected bottom-right",
        ),
        (
            np.tril(np.ones((2, 5), dtype=bool), 3),
            (2, 5),
            {},
            "entries differ",
            "anchored bottom-right; expected top-left",
        ),
        (
            np.tril(np.ones((2, 5), dtype=bool), 2),
            (2, 5),
            {"align": "bottom_right"},
            "entries differ",
            "the diagonal is False",
        ),
    ],
)
def test_check_causal_mask_typical_mistakes(answer, args, kwargs, message, hint):
    _assert_fails_with(check_causal_mask(answer, *args, **kwargs), message, hint)


def test_check_causal_mask_right_pattern_wrong_dtype_says_so():
    fb = check_causal_mask(LOWER.astype(int), 4)
    assert "the pattern of 0s and 1s is right; only the dtype is wrong" in fb.messages


def test_check_scores_gives_one_diagnosis_not_two():
    """K·Qᵀ unscaled, when raw scores were asked for: one hint, without 'not scaled either'."""
    fb = check_scores(RAW.T, Q, K, scaled=False)
    assert len(fb.hints) == 1
    assert fb.hints[0].startswith("this is K·Qᵀ (one row per key); compute Q @ K.T")
    fb = check_scores(RAW.T, Q, K)  # scaled scores were asked for: both mistakes at once
    assert fb.hints == (
        "this is K·Qᵀ (one row per key), not scaled either; compute Q @ K.T / √d_k",
    )


# --- properties: right answers always pass, a single wrong entry is always named ----------------

_elements = st.floats(-3, 3, allow_nan=False, allow_infinity=False)


@st.composite
def _qk_and_entry(draw):
    t_q, t_k, d_k = draw(st.integers(1, 5)), draw(st.integers(2, 5)), draw(st.integers(1, 4))
    q = draw(hnp.arrays(np.float64, (t_q, d_k), elements=_elements))
    k = draw(hnp.arrays(np.float64, (t_k, d_k), elements=_elements))
    i, j = draw(st.integers(0, t_q - 1)), draw(st.integers(0, t_k - 1))
    return q, k, (i, j)


@given(_qk_and_entry(), st.sampled_from([0.05, -0.05, 0.3]))
def test_property_weights_right_passes_and_one_changed_entry_is_named(args, delta):
    q, k, (i, j) = args
    right = torch.softmax(_t(q) @ _t(k).T / math.sqrt(q.shape[1]), dim=-1).numpy()
    _assert_passes(check_weights(right, q, k))
    wrong = right.copy()
    wrong[i, j] += delta
    fb = check_weights(wrong, q, k)
    _assert_fails_with(fb, f"entry [{i}, {j}] is ")
    assert f"row {i} sums to" in " ".join(fb.messages)


@given(_qk_and_entry(), st.floats(0.01, 5))
def test_property_scores_right_passes_and_one_changed_entry_is_named(args, delta):
    q, k, (i, j) = args
    right = (_t(q) @ _t(k).T).numpy() / math.sqrt(q.shape[1])
    _assert_passes(check_scores(right, q, k))
    wrong = right.copy()
    wrong[i, j] += delta
    _assert_fails_with(check_scores(wrong, q, k), f"entry [{i}, {j}] is ", None)
