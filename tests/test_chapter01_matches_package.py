"""Chapter 1 computes attention step by step in cells; its results must equal ``course_utils``'s.

The chapter's code cells are run in one namespace (IPython magics dropped, figures on the Agg
backend, widgets created without a kernel), and the variables the chapter builds by hand
(``scores``, ``scaled``, ``weights``, ``output``, ...) are compared with the package's functions
applied to the example data. Mutation tests change one step of the chapter's code and check that the
comparison catches it, so this test can fail. The numbers the prose quotes are glued from the
executed outputs (``tests/test_glue.py``); here the glued values, in both editions, are compared
with the chapter's results, and the claims the prose makes about them are checked.
"""

from __future__ import annotations

import json
import re
from typing import Any

import nbformat
import numpy as np
import pytest

from course_kit.myst import glued_values
from course_utils import attention_scores, scaled_dot_product_attention, softmax
from course_utils.data import bank_example, by_hand_example, query_plane_example
from course_utils.plotting import describe_attention

from .notebook_runner import CHAPTERS, run_notebook_cells

NOTEBOOK = CHAPTERS / "01_queries_keys_values.ipynb"
ZH_NOTEBOOK = CHAPTERS.parent / "locale" / "zh_CN" / "notebooks" / "chapters" / NOTEBOOK.name


def run_chapter(
    mutate: tuple[str, str] | None = None, *, skip_own_checks: bool = False
) -> dict[str, Any]:
    """Run the chapter; ``skip_own_checks`` drops its in-cell ``assert_allclose`` lines."""
    drop = ("np.testing.assert_allclose",) if skip_own_checks else ()
    return run_notebook_cells(NOTEBOOK, mutate=mutate, drop_lines_starting_with=drop)


def compare_with_package(ns: dict[str, Any]) -> None:
    """Raise AssertionError if any step-by-step result of the chapter differs from the package's."""
    ex = by_hand_example()  # the data, taken fresh from the package, not from the notebook
    np.testing.assert_allclose(ns["Q"], ex.X @ ex.W_Q, err_msg="Q")
    np.testing.assert_allclose(ns["K"], ex.X @ ex.W_K, err_msg="K")
    np.testing.assert_allclose(ns["V"], ex.X @ ex.W_V, err_msg="V")
    raw = attention_scores(ex.Q, ex.K, scale=1.0)  # (T, T)
    np.testing.assert_allclose(ns["scores"], raw, err_msg="step 1: scores")
    np.testing.assert_allclose(ns["scores_by_hand"], raw[2], err_msg="scores of 'sat' by hand")
    np.testing.assert_allclose(ns["scaled"], attention_scores(ex.Q, ex.K), err_msg="step 2: scaled")
    output, weights = scaled_dot_product_attention(ex.Q, ex.K, ex.V)  # (T, d_v), (T, T)
    np.testing.assert_allclose(ns["weights"], weights, err_msg="step 3: weights")
    np.testing.assert_allclose(ns["output"], output, err_msg="step 4: output")

    plane = query_plane_example()
    plane_scores = plane.keys @ plane.query  # (T_k,)
    np.testing.assert_allclose(ns["scores_plane"], plane_scores, err_msg="plane scores")
    _, plane_weights = plane.attention(plane.query, scale=1.0)  # (T_k,)
    np.testing.assert_allclose(ns["weights_plane"], plane_weights, err_msg="plane weights")
    np.testing.assert_allclose(ns["answer"], plane_weights @ plane.values, err_msg="plane answer")

    bank = bank_example()
    bank_output, bank_weights = bank.attention()
    np.testing.assert_allclose(ns["bank_weights"], bank_weights, err_msg="bank weights")
    np.testing.assert_allclose(ns["bank_output"], bank_output, err_msg="bank output")


@pytest.fixture(scope="module")
def chapter() -> dict[str, Any]:
    return run_chapter()


def test_chapter_step_by_step_equals_package(chapter):
    compare_with_package(chapter)


def test_widgets_show_what_the_chapter_computed(chapter):
    plane_widget = chapter["plane_widget"]
    q = plane_widget.query  # (2,)
    np.testing.assert_allclose(plane_widget.weights, softmax(query_plane_example().keys @ q))
    sentence_widget = chapter["sentence_widget"]
    bank = bank_example()
    assert sentence_widget.query_token == "看书"
    np.testing.assert_allclose(
        sentence_widget.weights, bank.attention()[1][bank.tokens.index("看书")]
    )


MUTATIONS = [
    # (what the chapter does, a plausible slip)
    ("scaled = scores / np.sqrt(d_k)", "scaled = scores / d_k"),
    ("weights = softmax(scaled, axis=-1)", "weights = softmax(scaled, axis=0)"),
    ("output = weights @ V", "output = weights @ K"),
    ("scores = Q @ K.T", "scores = K @ Q.T"),
    ("K = X @ W_K", "K = X @ W_Q"),
    ("weights_plane = softmax(scores_plane)", "weights_plane = softmax(2 * scores_plane)"),
]


@pytest.mark.parametrize(("original", "slip"), MUTATIONS, ids=[m[1] for m in MUTATIONS])
def test_comparison_catches_a_diverging_chapter(original, slip):
    ns = run_chapter(mutate=(original, slip), skip_own_checks=True)
    with pytest.raises(AssertionError):
        compare_with_package(ns)


def test_chapter_own_check_catches_a_diverging_chapter():
    """The notebook's in-cell ``assert_allclose`` against the package also fails on a slip."""
    with pytest.raises(AssertionError):
        run_chapter(mutate=("scaled = scores / np.sqrt(d_k)", "scaled = scores / d_k"))


# --- the prose and the figures' alt text say true things about these numbers ----------------------


def _cell_with(text: str) -> nbformat.NotebookNode:
    code_cells = [c for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
    # Compared without white space: the formatter may break a call over lines.
    matches = [c for c in code_cells if "".join(text.split()) in "".join(c.source.split())]
    assert len(matches) == 1, f"expected one code cell containing {text!r}, found {len(matches)}"
    return matches[0]


def test_heatmap_alt_text_matches_the_weights():
    cell = _cell_with("plot_attention(bank_weights")
    bank = bank_example()
    _, weights = bank.attention()
    assert cell.metadata["mystnb"]["image"]["alt"] == describe_attention(weights, bank.tokens)


def test_plane_figure_alt_text_matches_the_weights():
    cell = _cell_with("plot_query_and_keys(")
    alt = cell.metadata["mystnb"]["image"]["alt"]
    plane = query_plane_example()
    _, weights = plane.attention(plane.query, scale=1.0)
    for label, w in zip(plane.labels, weights, strict=True):
        assert re.search(rf"key {label} at \([^)]*\) with weight {w:.2f}\b", alt), (label, alt)


@pytest.fixture(scope="module", params=["en", "zh"])
def glued(request: pytest.FixtureRequest) -> dict[str, float]:
    """The values the chapter glued, in each edition (``tests/test_glue.py``: its prose shows
    exactly these, and nbval re-computes them)."""
    path = NOTEBOOK if request.param == "en" else ZH_NOTEBOOK
    nb = json.loads(path.read_text(encoding="utf-8"))
    return {name: float(value) for name, value in glued_values(nb).items()}


def test_the_glued_numbers_are_the_chapters(chapter, glued):
    """The numbers the prose quotes (glued) are the chapter's own, at the decimals it prints."""
    tokens = list(by_hand_example().tokens)
    sat, cat = tokens.index("sat"), tokens.index("cat")
    s = chapter["scores"]  # (4, 4)
    w = chapter["weights"]  # (4, 4)
    assert (glued["score_sat_cat"], glued["score_cat_sat"]) == (s[sat, cat], s[cat, sat])
    # the column "cat" as the weights cell prints it (3 decimals: 0.770 is printed 0.77)
    for token in ("the", "cat", "sat", "down"):
        assert glued[f"weight_{token}_cat"] == round(float(w[tokens.index(token), cat]), 3)
    assert glued["cat_column_sum"] == round(float(w[:, cat].sum()), 2)
    bank = bank_example()
    row = chapter["bank_weights"][bank.tokens.index("看书")]  # (T,)
    person = bank.tokens.index("小明")
    assert glued["reading_xiaoming"] == round(float(row[person]), 2)
    assert glued["reading_others"] == round(float(np.delete(row, person).mean()), 2)


def test_prose_claims_about_the_numbers(chapter, glued):
    tokens = by_hand_example().tokens
    w = chapter["weights"]  # (4, 4)
    # "scores[2, 1] ... is 4, but scores[1, 2] ... is 2": the score matrix is not symmetric
    assert glued["score_sat_cat"] != glued["score_cat_sat"]
    # "a score of 0 still gets some weight, just much less than the score of 4"
    assert glued["score_sat_cat"] > 0 and 0 < w[2, 0] < w[2, 1] / 5
    # check-your-understanding 2: column "cat" adds up to about 1.78, the sum of its four weights
    column = [glued[f"weight_{t}_cat"] for t in ("the", "cat", "sat", "down")]
    assert abs(sum(column) - glued["cat_column_sum"]) < 0.005
    assert 1 < glued["cat_column_sum"] < 2  # more than one query's worth: two queries look for it
    # "the" and "sat" look for the noun; "cat" and "down" for the verb
    assert [tokens[int(j)] for j in w.argmax(axis=1)] == ["cat", "sat", "cat", "sat"]
    # plane: cat best, tiger next, the vehicles almost nothing; a long query is almost one-hot
    wp = chapter["weights_plane"]
    labels = query_plane_example().labels
    assert labels[int(wp.argmax())] == "cat"
    assert wp[1] == sorted(wp)[-2] and wp[2] < 0.01 and wp[3] < 0.01
    long_query = softmax(chapter["keys"] @ (4.0 * chapter["query"]))
    assert long_query.max() > 0.95
    # heatmap reading: 看书 -> 小明, 小明 -> 看书, 长椅 shares between 银行 and 边
    bank = bank_example()
    bw = chapter["bank_weights"]
    t = bank.tokens
    assert t[int(bw[t.index("看书")].argmax())] == "小明"
    assert t[int(bw[t.index("小明")].argmax())] == "看书"
    row = bw[t.index("长椅")]
    assert {t[j] for j in np.argsort(row)[-2:]} == {"银行", "边"}
    assert row[t.index("银行")] == pytest.approx(row[t.index("边")])
    # "Rows of small words such as 的 are spread out"
    assert bw[t.index("的")].max() < 0.25
    # the answer: 看书 puts "about 0.51" on 小明 (the question's "about 0.5"), and the other seven
    # tokens "share the rest almost evenly, about 0.07 each"
    assert abs(glued["reading_xiaoming"] - 0.5) < 0.05
    others = np.delete(bw[t.index("看书")], t.index("小明"))  # (T - 1,)
    assert others.max() - others.min() < 0.01
    assert glued["reading_xiaoming"] + len(others) * glued["reading_others"] == pytest.approx(
        1, abs=0.05
    )


def test_projections_are_needed_claim():
    """Check-your-understanding 1: with Q = K = X, "the cat sat down" scores are the identity."""
    X = by_hand_example().X
    np.testing.assert_array_equal(X @ X.T, np.eye(4))
