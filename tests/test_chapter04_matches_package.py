"""Chapter 4 builds multi-head attention step by step; its results must equal the package's.

The first code cells of the chapter (up to the experiment) run in one namespace; the tensors built
by hand are compared with ``MultiHeadAttention`` and with ``torch.nn.MultiheadAttention``.
A mutation test changes one step and checks that the comparison catches it. The numbers the prose
quotes about the measurement and the experiment are glued from the executed outputs
(``tests/test_glue.py``); here the glued values are compared with the package's measurement and
the printed table, and the claims the prose makes about them are checked.
"""

from __future__ import annotations

import json
import re
from typing import Any

import nbformat
import pytest
import torch

from course_kit.myst import glued_values
from course_utils.heads.measure import measure_heads, top_heads

from .notebook_runner import CHAPTERS, run_notebook_cells

NOTEBOOK = CHAPTERS / "04_multi_head_attention.ipynb"


def run_first_cells(mutate: tuple[str, str] | None = None) -> dict[str, Any]:
    """Run the chapter up to the (slow) heads experiment."""
    return run_notebook_cells(NOTEBOOK, mutate=mutate, stop_before="run_heads_experiment")


def _matches(ns: dict[str, Any]) -> bool:
    mha, x = ns["mha"], ns["x"]
    with torch.no_grad():
        want_out, want_w = mha(x, x, x, return_weights=True)
    return torch.allclose(ns["out"], want_out, atol=1e-6) and torch.allclose(
        ns["weights"], want_w, atol=1e-6
    )


def test_step_by_step_equals_the_module():
    ns = run_first_cells()
    assert _matches(ns)
    assert ns["concat"].shape == (1, 3, 8) and ns["q"].shape == (1, 2, 3, 4)
    # and the PyTorch comparison cell really compared equal layers
    assert torch.allclose(ns["ours_out"], ns["theirs_out"], atol=1e-10)


@pytest.mark.parametrize(
    "mutation",
    [
        ("weights = attention_weights(q, k)", "weights = attention_weights(k, q)"),
        ("concat = mha.merge_heads(context)", "concat = context.reshape(1, 3, 8)"),
    ],
)
def test_a_wrong_step_is_caught(mutation):
    assert not _matches(run_first_cells(mutation))


@pytest.fixture(scope="module")
def glued() -> dict[str, float]:
    """The values the chapter glued (``tests/test_glue.py``: its prose shows exactly these)."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    return {name: float(value) for name, value in glued_values(nb).items()}


def test_the_measurement_numbers_the_prose_quotes(glued: dict[str, float]) -> None:
    """The heads and weights the prose names are the package's measurement, and its claims hold."""
    scores = measure_heads()
    places = {"previous": 2, "next": 2, "punct": 1, "same": 1, "coref": 1}
    for pattern, digits in places.items():
        ((layer, head, weight),) = top_heads(scores, pattern, 1)
        assert (glued[f"{pattern}_layer"], glued[f"{pattern}_head"]) == (layer, head), pattern
        assert glued[f"{pattern}_weight"] == round(weight, digits), pattern
    assert glued["n_sentences"] == scores.n_sentences
    assert glued["n_coref"] == scores.counts["coref"]
    assert glued["even_spread"] == round(1 / scores.mean_length, 2)
    # "puts essentially all of its weight on the previous token"
    assert glued["previous_weight"] >= 0.99
    # "[the punctuation head] is also the strongest [SEP] head"
    sep_layer, sep_head, _ = top_heads(scores, "sep", 1)[0]
    assert (glued["punct_layer"], glued["punct_head"]) == (sep_layer, sep_head)
    # "well above the [weight] of an even spread"
    assert glued["same_weight"] > 2 * glued["even_spread"]
    assert 0.4 <= scores.scores["cls"].mean() <= 0.55  # "about half"
    assert top_heads(scores, "cls", 1)[0][2] > 0.8  # "over 0.8"


def test_the_heads_drawn_are_the_heads_the_prose_names(glued: dict[str, float]) -> None:
    """The figure cell and the worked example pick heads by hand; they must be the measured ones."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    (drawn,) = [c.source for c in nb.cells if c.cell_type == "code" and "chosen = [" in c.source]
    for pattern in ("previous", "next", "same", "punct", "coref"):
        layer, head = int(glued[f"{pattern}_layer"]), int(glued[f"{pattern}_head"])
        assert f'("{pattern}", {layer}, {head})' in drawn, pattern
    coref = int(glued["coref_layer"]), int(glued["coref_head"])
    assert 'row = maps[{}, {}, tokens.index("it")]'.format(*coref) in _source(nb, "row = maps[")
    # The explorer opens on a head that is not the answer to the question above it ("which head
    # looks at the previous token?"): the reader finds the measured one by moving the controls.
    previous = int(glued["previous_layer"]), int(glued["previous_head"])
    opening = re.search(r"layer=(\d+),\s+head=(\d+),", _source(nb, "HeadExplorer("))
    assert opening is not None
    assert (int(opening[1]), int(opening[2])) != previous


def _source(nb: Any, marker: str) -> str:
    (source,) = [c.source for c in nb.cells if c.cell_type == "code" and marker in c.source]
    return source


def _printed(nb: Any, marker: str) -> str:
    """What the (committed, executed) code cell whose source contains ``marker`` printed."""
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def test_the_experiment_numbers_the_prose_quotes(glued: dict[str, float]) -> None:
    """The glued accuracies, losses and weights are those the experiment's table prints.

    The chapter runs ``run_heads_experiment((1, 2, 4, 8), (0, 1))`` itself, and nbval re-runs the
    chapter and compares every printed line and glued value with the committed output; so this
    test reads the committed table instead of training the eight models a second time (about 3
    minutes). The claims the prose makes about the numbers are checked on the glued values.
    """
    nb = nbformat.read(NOTEBOOK, as_version=4)
    table = _printed(nb, "run_heads_experiment(")
    accuracy, last_loss = {}, {}  # (n_heads, seed) -> as printed
    for line in table.splitlines():
        cols = line.split()
        if len(cols) > 3 and cols[0].isdigit():
            accuracy[(int(cols[0]), int(cols[2]))] = float(cols[-1])
            last_loss[(int(cols[0]), int(cols[2]))] = float(cols[-2])
    assert set(accuracy) == {(n, s) for n in (1, 2, 4, 8) for s in (0, 1)}, table
    acc = {key: glued[f"accuracy_{key[0]}h_seed{key[1]}"] for key in accuracy}
    assert acc == accuracy
    assert [glued["loss_1h_seed0"], glued["loss_2h_seed0"]] == [last_loss[1, 0], last_loss[2, 0]]
    for seed in (0, 1):
        assert abs(acc[(1, seed)] - acc[(2, seed)]) < 0.01  # "did equally well"
        # "four heads learned more slowly, eight hardly at all"
        assert acc[(4, seed)] < min(acc[(1, seed)], acc[(2, seed)]) and acc[(8, seed)] < 0.3
    assert acc[(1, 1)] > 0.99 and acc[(2, 1)] > 0.99  # seed 1: "both learned the task"
    assert acc[(1, 0)] < 0.95 and acc[(2, 0)] < 0.95  # seed 0: "both were still learning"

    where = {}  # (n_heads, head) -> (left, itself, right) weights as printed
    for m in re.finditer(
        r"(\d) head\(s\), head (\d): left ([\d.]+), itself ([\d.]+), right ([\d.]+)",
        _printed(nb, "r.weight_at(h, -1)"),
    ):
        where[(int(m[1]), int(m[2]))] = tuple(float(x) for x in m.group(3, 4, 5))
    left, _, right = where[(1, 0)]
    assert (glued["one_head_left"], glued["one_head_right"]) == (round(left, 1), round(right, 1))
    assert glued["one_head_left"] != glued["one_head_right"]  # "splits its weight *unevenly*"
    assert glued["two_heads_head0_left"] == where[(2, 0)][0]
    assert glued["two_heads_head0_left"] > 0.5  # "head 0 leans left"
    # exercise "Head 3-1 puts [it_trophy] of the weight of *it* on *trophy*"
    printed = dict(re.findall(r"it -> (\S+): ([\d.]+)", _printed(nb, "row = maps[")))
    assert glued["it_trophy"] == round(float(printed["trophy"]), 1)
