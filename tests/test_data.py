"""The example data: shapes, determinism, read-only arrays, the patterns the docstrings promise."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_utils.data import (
    FEATURES,
    PlaneExample,
    ToyExample,
    bank_example,
    by_hand_example,
    english_example,
    example_names,
    get_example,
    query_plane_example,
    reading_example,
)
from course_utils.masks import causal_mask
from course_utils.plotting import OKABE_ITO

NAMES = ["by_hand", "cat", "bank", "reading"]


def test_registry_lists_every_example():
    assert example_names() == tuple(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_example_is_consistent(name):
    ex = get_example(name)
    assert isinstance(ex, ToyExample)
    assert ex.name == name
    assert ex.embeddings.shape == (ex.T, ex.d_model) == (len(ex.tokens), ex.d_model)
    assert ex.W_Q.shape == ex.W_K.shape == (ex.d_model, ex.d_k)
    assert ex.W_V.shape == (ex.d_model, ex.d_v)
    np.testing.assert_array_equal(ex.Q, ex.X @ ex.W_Q)
    np.testing.assert_array_equal(ex.K, ex.X @ ex.W_K)
    np.testing.assert_array_equal(ex.V, ex.X @ ex.W_V)
    assert all(a.dtype == np.float64 for a in (ex.X, ex.W_Q, ex.W_K, ex.W_V))
    assert ex.translation and ex.description
    assert repr(ex).startswith(f"ToyExample(name={name!r}")


@pytest.mark.parametrize("name", NAMES)
def test_example_is_deterministic(name):
    a, b = get_example(name), get_example(name)
    for attr in ("embeddings", "W_Q", "W_K", "W_V"):
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))


@pytest.mark.parametrize("name", NAMES)
def test_arrays_are_read_only(name):
    ex = get_example(name)
    for attr in ("embeddings", "W_Q", "W_K", "W_V"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(ex, attr)[0, 0] = 99.0
    with pytest.raises(AttributeError):
        ex.tokens = ("x",)  # frozen dataclass


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("causal", [False, True])
def test_example_attention_matches_torch(name, causal):
    ex = get_example(name)
    mask = causal_mask(ex.T) if causal else None
    out, w = ex.attention(mask)
    tq, tk, tv = (torch.from_numpy(np.array(a)) for a in (ex.Q, ex.K, ex.V))
    tm = None if mask is None else torch.from_numpy(mask)
    ref = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm).numpy()
    np.testing.assert_allclose(out, ref, atol=1e-12)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0)


@pytest.mark.parametrize("name", NAMES)
def test_scores_scaled_and_raw(name):
    ex = get_example(name)
    np.testing.assert_allclose(ex.scores(scaled=False), ex.Q @ ex.K.T)
    np.testing.assert_allclose(ex.scores(), ex.Q @ ex.K.T / np.sqrt(ex.d_k))


def test_get_example_unknown_name_lists_the_names():
    with pytest.raises(
        KeyError, match=r"unknown example 'nope'; expected one of: 'by_hand', 'cat'"
    ):
        get_example("nope")
    with pytest.raises(KeyError, match="unknown example"):
        get_example(None)  # type: ignore[arg-type]


def test_by_hand_numbers_are_small_integers():
    ex = by_hand_example()
    assert ex.tokens == ("the", "cat", "sat", "down")
    assert (ex.d_model, ex.d_k, ex.d_v) == (4, 3, 3)
    for arr in (ex.X, ex.W_Q, ex.W_K, ex.W_V, ex.Q, ex.K, ex.Q @ ex.K.T):
        np.testing.assert_array_equal(arr, np.round(arr))
        assert np.abs(arr).max() <= 4


def test_by_hand_pattern_from_the_docstring():
    ex = by_hand_example()
    _, w = ex.attention()
    top = [ex.tokens[j] for j in w.argmax(axis=1)]
    assert top == ["cat", "sat", "cat", "sat"]


def test_bank_tokens_are_the_seed_sentence():
    ex = bank_example()
    assert "".join(ex.tokens) == "小明在银行边的长椅上看书"
    assert ex.tokens == ("小明", "在", "银行", "边", "的", "长椅", "上", "看书")
    assert ex.translation == "Xiao Ming is reading on a bench by the bank"  # no pun: see ch. 1
    assert ex.language == "zh"
    assert ex.feature_names == FEATURES


def test_bank_attention_pattern_from_the_docstring():
    ex = bank_example()
    _, w = ex.attention()  # (8, 8)
    i = {t: n for n, t in enumerate(ex.tokens)}
    assert w[i["看书"]].argmax() == i["小明"]  # who reads?
    assert w[i["小明"]].argmax() == i["看书"]
    assert w[i["银行"]].argmax() == i["长椅"]  # 银行 looks at its context, the bench
    bench = w[i["长椅"]]
    top_two = set(np.argsort(-bench)[:2])
    assert top_two == {i["银行"], i["边"]}  # where is the bench?
    assert bench[i["银行"]] == pytest.approx(bench[i["边"]])


def test_english_example_pattern_and_identical_the_rows():
    ex = english_example()
    assert ex.tokens == ("the", "cat", "sat", "on", "the", "mat")
    _, w = ex.attention()
    i = {t: n for n, t in enumerate(ex.tokens)}
    assert w[2].argmax() == i["cat"]  # sat -> cat
    assert w[1].argmax() == i["sat"]  # cat -> sat
    assert w[3].argmax() == i["mat"]  # on -> mat
    np.testing.assert_array_equal(w[0], w[4])  # no position information: the two "the" agree
    np.testing.assert_array_equal(ex.W_Q, bank_example().W_Q)  # one toy feature space


def test_reading_example():
    ex = reading_example()
    assert "".join(ex.tokens) == "看书真好"
    assert ex.translation == "Reading is really nice"
    for arr in (ex.X, ex.W_Q, ex.W_K, ex.W_V):
        np.testing.assert_allclose(arr, np.round(arr, 1), atol=0)  # one decimal
        assert not np.signbit(arr[arr == 0]).any()  # no "-0." in printed arrays
    _, w = ex.attention(causal_mask(4))
    assert (w[np.triu_indices(4, k=1)] == 0).all()
    _, w_full = ex.attention()
    assert w_full.max() < 0.6  # the seed was chosen for weights that are not one-hot
    other = reading_example(seed=3)
    assert not np.array_equal(other.X, ex.X)


def test_toy_example_validates_its_arrays():
    good = dict(name="t", tokens=("a", "b"), translation="ab", embeddings=np.ones((2, 3)))
    w = np.ones((3, 2))
    with pytest.raises(ValueError, match=r"embeddings has shape \(3, 3\), expected \(2, d_model\)"):
        ToyExample(**{**good, "embeddings": np.ones((3, 3))}, W_Q=w, W_K=w, W_V=w)
    with pytest.raises(ValueError, match=r"W_K has shape \(4, 2\), expected \(3, d\)"):
        ToyExample(**good, W_Q=w, W_K=np.ones((4, 2)), W_V=w)
    with pytest.raises(ValueError, match=r"W_K has shape \(3, 1\), expected \(3, 2\)"):
        ToyExample(**good, W_Q=w, W_K=np.ones((3, 1)), W_V=w)
    with pytest.raises(ValueError, match=r"feature_names has 2 names, expected d_model = 3"):
        ToyExample(**good, W_Q=w, W_K=w, W_V=w, feature_names=("x", "y"))
    with pytest.raises(ValueError, match=r"embeddings contains NaN"):
        ToyExample(**{**good, "embeddings": np.full((2, 3), np.nan)}, W_Q=w, W_K=w, W_V=w)
    with pytest.raises(TypeError, match=r"mask must be a boolean array"):
        ToyExample(**good, W_Q=w, W_K=w, W_V=w).attention(np.ones((2, 2)))


def test_toy_example_copies_its_input():
    X = np.ones((2, 3))
    ex = ToyExample("t", ("a", "b"), "ab", X, np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)))
    X[0, 0] = 5.0
    assert ex.X[0, 0] == 1.0


# --- the query plane ---------------------------------------------------------------------------


def test_query_plane_example():
    ex = query_plane_example()
    assert isinstance(ex, PlaneExample)
    assert ex.keys.shape == ex.values.shape == (4, 2)
    assert ex.colors.shape == (4, 3)
    assert ((ex.colors >= 0) & (ex.colors <= 1)).all()
    assert set(ex.color_names) <= set(OKABE_ITO)
    assert ex.query.shape == (2,)
    assert len(ex.labels) == 4 and len(ex.axis_labels) == 2
    with pytest.raises(ValueError, match="read-only"):
        ex.keys[0, 0] = 1.0


@pytest.mark.parametrize("query", [[-2.0, -0.3], [3.0, 3.0], [0.0, 0.0], [0.5, -4.0]])
def test_query_plane_attention_matches_torch(query):
    ex = query_plane_example()
    out, w = ex.attention(query)
    assert out.shape == (2,) and w.shape == (4,)
    ref = F.scaled_dot_product_attention(
        torch.tensor([query], dtype=torch.float64),
        torch.from_numpy(np.array(ex.keys)),
        torch.from_numpy(np.array(ex.values)),
    ).numpy()[0]
    np.testing.assert_allclose(out, ref, atol=1e-12)
    np.testing.assert_allclose(out, w @ ex.values)


def test_query_plane_default_query_picks_the_cat():
    ex = query_plane_example()
    _, w = ex.attention(ex.query)
    assert ex.labels[int(w.argmax())] == "cat"


def test_plane_example_validates():
    ex = query_plane_example()
    with pytest.raises(ValueError, match=r"query has shape \(3,\), expected \(2,\)"):
        ex.attention([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"colors has shape \(2, 3\), expected \(4, 3\)"):
        PlaneExample(ex.labels, ex.keys, ex.values, ex.colors[:2], ex.color_names, ex.query)
    with pytest.raises(ValueError, match=r"color_names has 1 names, expected 4"):
        PlaneExample(ex.labels, ex.keys, ex.values, ex.colors, ("blue",), ex.query)
    with pytest.raises(ValueError, match=r"query has shape \(1,\), expected \(2,\)"):
        PlaneExample(ex.labels, ex.keys, ex.values, ex.colors, ex.color_names, [1.0])
    with pytest.raises(ValueError, match=r"keys has shape \(4, 3\), expected \(4, 2\)"):
        PlaneExample(ex.labels, np.ones((4, 3)), ex.values, ex.colors, ex.color_names, ex.query)
