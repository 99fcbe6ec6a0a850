"""A catalogue of what real learners hand to the checkers of chapters 1-4 (issue 8, section 1).

For every exercise: right answers in other styles (torch or numpy, tensors that require grad,
float32, einsum, lists) are accepted; typical wrong answers are rejected with their specific hint;
odd answers (ragged lists, strings, ``None``, a pair in the wrong order) get feedback, never a
traceback; and a function that never returns is stopped by the shared runner's time limit.
"""

from __future__ import annotations

import math
import re
import threading

import numpy as np
import pytest
import torch

import course_utils.exercises as exercises
from course_utils.exercises import Feedback, _learner, ch01, ch02, ch03, ch04
from course_utils.softmax import softmax

T = torch.as_tensor


def _grad(x) -> torch.Tensor:
    """A float64 tensor that requires grad, as a learner's autograd experiment produces."""
    return torch.tensor(np.asarray(x, dtype=np.float64), requires_grad=True)


def _check(checker, answer) -> Feedback:
    fb = checker(*answer) if isinstance(answer, tuple) else checker(answer)
    assert isinstance(fb, Feedback), type(fb)
    return fb


# --- the time limit ------------------------------------------------------------------------------


def _endless_list(*args):
    return [0 for _ in iter(int, 1)]  # the example: never returns


def _endless_loop(*args):
    while True:
        pass


@pytest.fixture
def short_time_limit(monkeypatch):
    monkeypatch.setattr(_learner, "TIME_LIMIT", 0.3)


@pytest.mark.parametrize("endless", [_endless_list, _endless_loop], ids=["iter", "while"])
@pytest.mark.parametrize(
    "checker",
    [
        ch01.check_dot_product,
        ch01.check_all_scores,
        ch01.check_attend_one,
        ch02.check_jacobian,
        lambda f: ch02.check_score_variance(f, f),
        ch03.check_stable_softmax,
        ch03.check_attention,
        ch04.check_split_heads,
        ch04.check_parameter_count,
        ch04.check_head_weights,
        ch04.check_torch_mask,
    ],
)
def test_a_function_that_never_returns_is_stopped(checker, endless, short_time_limit):
    fb = checker(endless)
    assert not fb.passed
    assert any("did not return within 0.3 s" in m for m in fb.messages), str(fb)
    assert any("never ends" in h for h in fb.hints), str(fb)
    # The worker thread was really stopped, not left spinning in the background.
    for thread in threading.enumerate():
        if thread.name == "course-utils-learner":
            thread.join(2.0)
            assert not thread.is_alive(), "the learner's endless loop is still running"


def test_one_time_limit_for_all_checkers():
    assert exercises.TIME_LIMIT == _learner.TIME_LIMIT > 0
    assert "Windows" in _learner.__doc__ and "Jupyter" in _learner.__doc__


def test_time_limit_works_outside_the_main_thread(short_time_limit):
    """ipykernel may run code outside the main thread; signal.alarm would fail there."""
    result = {}
    thread = threading.Thread(
        target=lambda: result.setdefault("fb", ch01.check_dot_product(_endless_loop))
    )
    thread.start()
    thread.join(10)
    assert "did not return within" in str(result["fb"])


def test_first_failure_helper_is_shared():
    """One runner: the chapter modules no longer carry their own copy of the loop, and no chapter
    module defines its own "first failing test case" helper."""
    import importlib
    import pkgutil

    for module in (ch01, ch02, ch03, ch04):
        assert not hasattr(module, "_first_failure") and not hasattr(module, "_fail")
        assert module.run_cases is _learner.run_cases
    for info in pkgutil.iter_modules(exercises.__path__):
        if re.fullmatch(r"ch\d\d", info.name):
            module = importlib.import_module(f"course_utils.exercises.{info.name}")
            for helper in ("_fail", "_first_failure"):
                if hasattr(module, helper):
                    assert getattr(module, helper) is _learner.fail_on, (info.name, helper)


# --- chapter 1 -----------------------------------------------------------------------------------

RIGHT_CH01 = [
    ("dot torch", ch01.check_dot_product, lambda q, k: torch.dot(T(q), T(k))),
    ("dot requires_grad", ch01.check_dot_product, lambda q, k: _grad(q) @ _grad(k)),
    ("dot float32", ch01.check_dot_product, lambda q, k: np.float32(np.dot(q, k))),
    ("dot einsum", ch01.check_dot_product, lambda q, k: np.einsum("i,i->", q, k)),
    (
        "dot list input",
        ch01.check_dot_product,
        lambda q, k: sum(a * b for a, b in zip(q, k, strict=True)),
    ),
    ("scores einsum", ch01.check_all_scores, lambda Q, K: np.einsum("id,jd->ij", Q, K)),
    ("scores torch grad", ch01.check_all_scores, lambda Q, K: _grad(Q) @ _grad(K).T),
    ("scores float32", ch01.check_all_scores, lambda Q, K: Q.astype(np.float32) @ K.T),
    ("scores list", ch01.check_all_scores, lambda Q, K: (Q @ K.T).tolist()),
    (
        "attend torch grad",
        ch01.check_attend_one,
        lambda q, K, V: (
            (w := torch.softmax(_grad(K) @ _grad(q) / math.sqrt(len(q)), -1)),
            w @ _grad(V),
        ),
    ),
    (
        "attend float32 lists",
        ch01.check_attend_one,
        lambda q, K, V: [
            (w := softmax((K @ q / np.sqrt(len(q))).astype(np.float32))).tolist(),
            (w @ V.astype(np.float32)).tolist(),
        ],
    ),
    ("shapes torch.Size", ch01.check_shapes, None),
]


@pytest.mark.parametrize(("name", "checker", "fn"), RIGHT_CH01, ids=[c[0] for c in RIGHT_CH01])
def test_ch01_right_answers_in_other_styles(name, checker, fn):
    if fn is None:  # the shapes exercise takes a dict, here of torch.Size and numpy ints
        fn = {
            "Q": torch.Size([6, 4]),
            "K": (np.int64(6), np.int64(4)),
            "V": [6, 5],
            "scores": (6, 6),
            "weights": torch.zeros(6, 6).shape,
            "output": np.zeros((6, 5)).shape,
        }
    fb = _check(checker, fn)
    assert fb.passed, str(fb)


def _unscaled_grad(q, K, V):
    w = torch.softmax(_grad(K) @ _grad(q), -1)
    return w, w @ _grad(V)


WRONG_CH01 = [
    # (name, checker, answer, text in a message, text in a hint)
    ("dot products", ch01.check_dot_product, lambda q, k: q * k, "shape", "add them up"),
    ("dot string", ch01.check_dot_product, lambda q, k: "4", "numeric array", None),
    ("dot ragged", ch01.check_dot_product, lambda q, k: [[1, 2], [3]], "not rectangular", None),
    ("dot strings in a list", ch01.check_dot_product, lambda q, k: ["a", 4], "numeric", None),
    ("scores K Qᵀ", ch01.check_all_scores, lambda Q, K: K @ Q.T, "entry", "K·Qᵀ"),
    ("scores None in list", ch01.check_all_scores, lambda Q, K: [None, 1], "numeric", None),
    ("attend wrong order", ch01.check_attend_one, None, "wrong order", "weights first"),
    (
        "attend by d_k",
        ch01.check_attend_one,
        lambda q, K, V: ((w := softmax(K @ q / len(q))), w @ V),
        "entry",
        "not by d_k",
    ),
    ("attend unscaled, grad", ch01.check_attend_one, _unscaled_grad, "entry", "divide the scores"),
    ("attend not a pair", ch01.check_attend_one, lambda q, K, V: 3.0, "pair", "return weights"),
    ("attend None item", ch01.check_attend_one, lambda q, K, V: (None, 1.0), "None", None),
    ("shapes floats", ch01.check_shapes, "floats", "tuple of ints", "whole numbers"),
    ("shapes string", ch01.check_shapes, "string", "tuple of ints", "whole numbers"),
    ("shapes list", ch01.check_shapes, [(6, 4)], "expected a dict", None),
]


def _swapped(q, K, V):
    w = softmax(K @ q / np.sqrt(len(q)))  # (T_k,)
    return w @ V, w  # the pair in the wrong order


_RIGHT_SHAPES = {
    "Q": (6, 4),
    "K": (6, 4),
    "V": (6, 5),
    "scores": (6, 6),
    "weights": (6, 6),
    "output": (6, 5),
}


@pytest.mark.parametrize(
    ("name", "checker", "answer", "message", "hint"), WRONG_CH01, ids=[c[0] for c in WRONG_CH01]
)
def test_ch01_wrong_answers_get_their_hint(name, checker, answer, message, hint):
    if name == "attend wrong order":
        answer = _swapped
    elif answer == "floats":
        answer = {**_RIGHT_SHAPES, "Q": (6.7, 4.2)}  # int() would round these to (6, 4)
    elif answer == "string":
        answer = {**_RIGHT_SHAPES, "Q": "(6, 4)"}
    fb = _check(checker, answer)
    assert not fb.passed, str(fb)
    assert any(message in m for m in fb.messages), str(fb)
    if hint is not None:
        assert any(hint in h for h in fb.hints), str(fb)


def test_ch01_shapes_scenario_cannot_change_the_right_answer(monkeypatch):
    with pytest.raises(TypeError):
        ch01.SHAPES_SCENARIO["T"] = 7  # read-only
    monkeypatch.setattr(ch01, "SHAPES_SCENARIO", {"T": 7, "d": 8, "d_k": 4, "d_v": 5})
    assert ch01.check_shapes(_RIGHT_SHAPES).passed


# --- chapter 2 -----------------------------------------------------------------------------------


def _var(d, a, b):
    return d * a**2 * b**2


def _scale(d, a, b):
    return 1 / (a * b * math.sqrt(d))


RIGHT_CH02 = [
    (
        "variance float32",
        ch02.check_score_variance,
        (lambda *a: np.float32(_var(*a)), lambda *a: np.float32(_scale(*a))),
    ),
    (
        "variance torch",
        ch02.check_score_variance,
        (lambda *a: torch.tensor(_var(*a)), lambda *a: torch.tensor(_scale(*a))),
    ),
    (
        "jacobian torch grad",
        ch02.check_jacobian,
        lambda p: torch.diag(_grad(p)) - torch.outer(_grad(p), _grad(p)),
    ),
    (
        "jacobian float32",
        ch02.check_jacobian,
        lambda p: (np.diag(p) - np.outer(p, p)).astype(np.float32),
    ),
    ("jacobian einsum", ch02.check_jacobian, lambda p: np.diag(p) - np.einsum("i,j->ij", p, p)),
    ("jacobian list", ch02.check_jacobian, lambda p: (np.diag(p) - np.outer(p, p)).tolist()),
    ("threshold numpy int", ch02.check_saturation_threshold, np.int64(128)),
    ("threshold torch int", ch02.check_saturation_threshold, torch.tensor(128)),
]


@pytest.mark.parametrize(("name", "checker", "answer"), RIGHT_CH02, ids=[c[0] for c in RIGHT_CH02])
def test_ch02_right_answers_in_other_styles(name, checker, answer):
    fb = _check(checker, answer)
    assert fb.passed, str(fb)


WRONG_CH02 = [
    (
        "variance sigma not squared",
        ch02.check_score_variance,
        (lambda d, a, b: d * a * b, _scale),
        "score_var",
        "sigma**2",
    ),
    (
        "variance string",
        ch02.check_score_variance,
        (lambda *a: "64", _scale),
        "one number",
        None,
    ),
    (
        "jacobian p@p with grad",
        ch02.check_jacobian,
        lambda p: torch.diag(_grad(p)) - _grad(p) @ _grad(p),
        "entry",
        "np.outer",
    ),
    (
        "jacobian ragged",
        ch02.check_jacobian,
        lambda p: [[1.0], [1.0, 2.0]],
        "not rectangular",
        None,
    ),
    ("jacobian None inside", ch02.check_jacobian, lambda p: [None], "numeric", None),
    ("threshold float", ch02.check_saturation_threshold, 128.5, "must be an int", None),
    ("threshold string", ch02.check_saturation_threshold, "128", "numeric", None),
    ("threshold list", ch02.check_saturation_threshold, [64, 128], "must be an int", None),
]


@pytest.mark.parametrize(
    ("name", "checker", "answer", "message", "hint"), WRONG_CH02, ids=[c[0] for c in WRONG_CH02]
)
def test_ch02_wrong_answers_get_their_hint(name, checker, answer, message, hint):
    fb = _check(checker, answer)
    assert not fb.passed, str(fb)
    assert any(message in m for m in fb.messages), str(fb)
    if hint is not None:
        assert any(hint in h for h in fb.hints), str(fb)


def test_ch02_float32_answer_of_exercise_2_1_is_accepted():
    """The issue's case: "got 0.0666667, expected 0.0666667" was a rejection of a right answer."""
    fb = ch02.check_score_variance(_var, lambda *a: np.float32(_scale(*a)))
    assert fb.passed, str(fb)


# --- chapter 3 -----------------------------------------------------------------------------------


def _torch_attention(Q, K, V, mask=None):
    q, k, v = T(Q), T(K), T(V)
    m = None if mask is None else T(mask)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)


def _naive_softmax(s):
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def _reversed_mask_own_softmax(Q, K, V, mask=None):
    s = Q @ K.T / np.sqrt(K.shape[1])  # (T_q, T_k)
    if mask is not None:
        s = np.where(mask, -np.inf, s)  # reversed polarity
    with np.errstate(all="ignore"):
        return _naive_softmax(s - s.max(axis=-1, keepdims=True)) @ V


def _over_d_k(Q, K, V, mask=None):
    s = Q @ K.T / K.shape[1]  # divided by d_k, not its square root
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s) @ V


RIGHT_CH03 = [
    ("softmax torch", ch03.check_stable_softmax, lambda x: torch.softmax(T(x), dim=-1)),
    ("softmax grad", ch03.check_stable_softmax, lambda x: torch.softmax(_grad(x), dim=-1)),
    ("limits tuple", ch03.check_temperature_limits, ((0, 0.5, 0.5, 0), (0.25,) * 4)),
    (
        "limits float32 torch",
        ch03.check_temperature_limits,
        (torch.tensor([0, 0.5, 0.5, 0]), np.full(4, 0.25, dtype=np.float32)),
    ),
    ("attention torch", ch03.check_attention, _torch_attention),
    (
        "attention einsum",
        ch03.check_attention,
        lambda Q, K, V, mask=None: np.einsum(
            "ij,jd->id",
            softmax(
                np.where(
                    True if mask is None else mask,
                    np.einsum("id,jd->ij", Q, K) / np.sqrt(Q.shape[1]),
                    -np.inf,
                )
            ),
            V,
        ),
    ),
    (
        "attention float32",
        ch03.check_attention,
        lambda Q, K, V, mask=None: _torch_attention(
            Q.astype(np.float32), K.astype(np.float32), V.astype(np.float32), mask
        ),
    ),
]


@pytest.mark.parametrize(("name", "checker", "answer"), RIGHT_CH03, ids=[c[0] for c in RIGHT_CH03])
def test_ch03_right_answers_in_other_styles(name, checker, answer):
    fb = _check(checker, answer)
    assert fb.passed, str(fb)


WRONG_CH03 = [
    ("attention over d_k", ch03.check_attention, _over_d_k, "entry", "divided by d_k = "),
    (
        "reversed mask, own softmax",
        ch03.check_attention,
        _reversed_mask_own_softmax,
        "contains NaN",
        "polarity reversed",
    ),
    (
        "limits argmax, grad",
        ch03.check_temperature_limits,
        (_grad([0, 1, 0, 0]), _grad([0.25] * 4)),
        "τ -> 0",
        "share the weight",
    ),
    (
        "limits ragged",
        ch03.check_temperature_limits,
        ([[0, 1], [0]], [0.25] * 4),
        "rectangular",
        None,
    ),
    ("limits strings", ch03.check_temperature_limits, (["a", "b"], [0.25] * 4), "numeric", None),
    ("limits None", ch03.check_temperature_limits, (None, [0.25] * 4), "None", None),
    ("softmax string", ch03.check_stable_softmax, lambda x: "softmax", "numeric", None),
]


@pytest.mark.parametrize(
    ("name", "checker", "answer", "message", "hint"), WRONG_CH03, ids=[c[0] for c in WRONG_CH03]
)
def test_ch03_wrong_answers_get_their_hint(name, checker, answer, message, hint):
    fb = _check(checker, answer)
    assert not fb.passed, str(fb)
    assert any(message in m for m in fb.messages), str(fb)
    if hint is not None:
        assert any(hint in h for h in fb.hints), str(fb)


# --- chapter 4 -----------------------------------------------------------------------------------


def _head_weights_torch32(X, W_Q, W_K, n_heads):
    x, wq, wk = (torch.tensor(a, dtype=torch.float32) for a in (X, W_Q, W_K))
    d_k = x.shape[1] // n_heads
    q = (x @ wq).view(len(x), n_heads, d_k).transpose(0, 1)  # (h, T, d_k)
    k = (x @ wk).view(len(x), n_heads, d_k).transpose(0, 1)  # (h, T, d_k)
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)


def _head_weights_einsum(X, W_Q, W_K, n_heads):
    d_k = X.shape[1] // n_heads
    q = (X @ W_Q).reshape(len(X), n_heads, d_k)  # (T, h, d_k)
    k = (X @ W_K).reshape(len(X), n_heads, d_k)  # (T, h, d_k)
    return softmax(np.einsum("thd,shd->hts", q, k) / np.sqrt(d_k))


RIGHT_CH04 = [
    (
        "split permute",
        ch04.check_split_heads,
        lambda x, h: x.reshape(x.shape[0], x.shape[1], h, -1).permute(0, 2, 1, 3),
    ),
    (
        "split numpy",
        ch04.check_split_heads,
        lambda x, h: x.numpy().reshape(x.shape[0], x.shape[1], h, -1).transpose(0, 2, 1, 3),
    ),
    (
        "split grad",
        ch04.check_split_heads,
        lambda x, h: x.clone().requires_grad_().view(x.shape[0], x.shape[1], h, -1).transpose(1, 2),
    ),
    (
        "count numpy int",
        ch04.check_parameter_count,
        lambda d, h, b: np.int64(4 * d * d + 4 * d * b),
    ),
    ("count tensor", ch04.check_parameter_count, lambda d, h, b: torch.tensor(4 * d * (d + b))),
    ("heads torch float32", ch04.check_head_weights, _head_weights_torch32),
    ("heads einsum", ch04.check_head_weights, _head_weights_einsum),
    ("mask == False", ch04.check_torch_mask, lambda m: m == False),  # noqa: E712
    ("mask logical_not", ch04.check_torch_mask, torch.logical_not),
]


@pytest.mark.parametrize(("name", "checker", "answer"), RIGHT_CH04, ids=[c[0] for c in RIGHT_CH04])
def test_ch04_right_answers_in_other_styles(name, checker, answer):
    fb = _check(checker, answer)
    assert fb.passed, str(fb)


WRONG_CH04 = [
    ("mask numpy", ch04.check_torch_mask, lambda m: ~m.numpy(), "numpy array", "torch.from_numpy"),
    ("mask int tensor", ch04.check_torch_mask, lambda m: 1 - m.int(), "integer tensor", "~mask"),
    ("mask float tensor", ch04.check_torch_mask, lambda m: (~m).float(), "float tensor", "ADDED"),
    ("mask list", ch04.check_torch_mask, lambda m: (~m).tolist(), "list", "boolean torch.Tensor"),
    ("mask same polarity", ch04.check_torch_mask, lambda m: m.clone(), "entry", "NOT attend"),
    (
        "heads √d_model",
        ch04.check_head_weights,
        lambda X, W_Q, W_K, h: (
            _head_weights_einsum(X, W_Q, W_K, h) ** 1
            if h == 1
            else softmax(
                np.einsum(
                    "thd,shd->hts",
                    (X @ W_Q).reshape(len(X), h, -1),
                    (X @ W_K).reshape(len(X), h, -1),
                )
                / np.sqrt(X.shape[1])
            )
        ),
        "entry",
        "not √d_model",
    ),
    ("count string", ch04.check_parameter_count, lambda d, h, b: "lots", "numeric", None),
    ("split ragged", ch04.check_split_heads, lambda x, h: [[1], [1, 2]], "rectangular", None),
]


@pytest.mark.parametrize(
    ("name", "checker", "answer", "message", "hint"), WRONG_CH04, ids=[c[0] for c in WRONG_CH04]
)
def test_ch04_wrong_answers_get_their_hint(name, checker, answer, message, hint):
    fb = _check(checker, answer)
    assert not fb.passed, str(fb)
    assert any(message in m for m in fb.messages), str(fb)
    if hint is not None:
        assert any(hint in h for h in fb.hints), str(fb)


# --- the package's own description of itself -----------------------------------------------------


def test_exercises_docstring_names_only_functions_that_exist():
    doc = exercises.__doc__
    modules = {"ch01": ch01, "ch02": ch02, "ch03": ch03, "ch04": ch04}
    for module_name, function in re.findall(r"\b(ch\d\d)\.(\w+)", doc):
        if module_name in modules and function != "py":  # ch01.py is the file
            assert hasattr(modules[module_name], function), f"{module_name}.{function}"
    for name in re.findall(r":(?:func|class|data):`~?([\w.]+)`", doc):
        assert hasattr(exercises, name.split(".")[-1]), name
    for name in re.findall(r"\bexercise_\d+_\d+\b", doc):
        pytest.fail(f"the docstring names {name}, which does not exist")


def test_chapter_constants_cannot_change_the_right_answers(monkeypatch):
    """A learner experimenting with ch03.TEMPERATURE_SCORES or ch02.SATURATION_GRID in the notebook
    does not change what the checkers accept."""
    monkeypatch.setattr(ch03, "TEMPERATURE_SCORES", (0.0, 0.0, 0.0, 9.0))
    assert ch03.check_temperature_limits([0, 0.5, 0.5, 0], [0.25] * 4).passed
    monkeypatch.setattr(ch02, "SATURATION_GRID", (1, 3, 5))
    assert ch02.check_saturation_threshold(128).passed
