"""Chapter 4 builds multi-head attention step by step; its results must equal the package's.

The first code cells of the chapter (up to the experiment) run in one namespace; the tensors built
by hand are compared with ``MultiHeadAttention`` and with ``torch.nn.MultiheadAttention``.
A mutation test changes one step and checks that the comparison catches it. Numbers the prose
states about the measurement and the experiment are checked against the package.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

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


def test_the_measurement_numbers_stated_in_the_prose():
    scores = measure_heads()
    assert top_heads(scores, "previous", 1)[0][:2] == (0, 2)
    assert round(top_heads(scores, "previous", 1)[0][2], 2) == 1.00
    assert top_heads(scores, "next", 1)[0][:2] == (1, 8)
    assert round(top_heads(scores, "next", 1)[0][2], 2) == 0.65
    assert top_heads(scores, "punct", 1)[0][:2] == (3, 11)
    assert top_heads(scores, "sep", 1)[0][:2] == (3, 11)
    assert top_heads(scores, "coref", 1)[0][:2] == (3, 1)
    assert round(top_heads(scores, "coref", 1)[0][2], 1) == 0.5
    assert top_heads(scores, "same", 1)[0][:2] == (0, 8)
    assert 0.4 <= scores.scores["cls"].mean() <= 0.55  # "about half"
    assert top_heads(scores, "cls", 1)[0][2] > 0.8
    assert scores.counts["coref"] == 20


def _printed(nb: Any, marker: str) -> str:
    """What the (committed, executed) code cell whose source contains ``marker`` printed."""
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def test_the_experiment_numbers_stated_in_the_prose():
    """The prose's numbers are those the chapter's experiment prints.

    The chapter runs ``run_heads_experiment((1, 2, 4, 8), (0, 1))`` itself, and nbval (``make
    test``) re-runs the chapter and compares every printed line with the committed output. So the
    committed output is the package's result, and this test compares the prose with it instead of
    training the eight models a second time (about 3 minutes).
    """
    import re

    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    prose = re.sub(r"\s+", " ", prose)
    table = _printed(nb, "run_heads_experiment(")
    printed = {}  # (n_heads, seed) -> the accuracy as printed
    last_loss = {}  # (n_heads, seed) -> the test loss at the last step, as printed
    for line in table.splitlines():
        cols = line.split()
        if len(cols) > 3 and cols[0].isdigit():
            printed[(int(cols[0]), int(cols[2]))] = cols[-1]
            last_loss[(int(cols[0]), int(cols[2]))] = cols[-2]
    assert set(printed) == {(n, s) for n in (1, 2, 4, 8) for s in (0, 1)}, table
    acc = {key: float(value) for key, value in printed.items()}
    for seed in (0, 1):
        assert abs(acc[(1, seed)] - acc[(2, seed)]) < 0.01  # "did equally well"
        assert acc[(4, seed)] < min(acc[(1, seed)], acc[(2, seed)]) and acc[(8, seed)] < 0.3
    assert acc[(1, 1)] > 0.99 and acc[(2, 1)] > 0.99  # seed 1: "both learned the task"
    assert acc[(1, 0)] < 0.95 and acc[(2, 0)] < 0.95  # seed 0: "both were still learning"
    assert "One head and two heads did equally well" in prose
    assert f"both learned the task (accuracy {printed[(1, 1)]} and {printed[(2, 1)]})" in prose
    assert (
        f"(test loss {last_loss[(1, 0)]} and {last_loss[(2, 0)]}, "
        f"accuracy {printed[(1, 0)]} and {printed[(2, 0)]})"
    ) in prose
    assert (
        f"Four heads of $d_k = 2$ learned more slowly (accuracy {printed[(4, 0)]} and "
        f"{printed[(4, 1)]}) and eight heads of $d_k = 1$ hardly at all "
        f"({printed[(8, 0)]} and {printed[(8, 1)]})"
    ) in prose

    where = {}  # (n_heads, head) -> (left, itself, right) weights as printed
    for m in re.finditer(
        r"(\d) head\(s\), head (\d): left ([\d.]+), itself ([\d.]+), right ([\d.]+)",
        _printed(nb, "r.weight_at(h, -1)"),
    ):
        where[(int(m[1]), int(m[2]))] = tuple(float(x) for x in m.group(3, 4, 5))
    left, _, right = where[(1, 0)]
    assert f"(about {left:.1f} left, {right:.1f} right)" in prose
    assert f"head 0 leans left ({where[(2, 0)][0]:.2f})" in prose
