"""What chapter 5's prose says about the numbers it quotes holds for the numbers it glued.

The numbers themselves are glued from the executed outputs (``tests/test_glue.py``; nbval
re-computes them), so no test retypes them. Here the glued values are compared with what the
chapter prints (the positions experiment's table, MiniLM's position table) and with what they are
made of (``max_positions × d_model``), and the claims the words make about them are checked, in
both editions (the 中文 notebook is executed on its own).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from course_kit.myst import glued_values

REPO = Path(__file__).resolve().parents[1]
STEM = "05_positions"
NOTEBOOKS = {
    "en": REPO / "chapters" / f"{STEM}.ipynb",
    "zh": REPO / "locale" / "zh_CN" / "notebooks" / "chapters" / f"{STEM}.ipynb",
}


def _notebook(edition: str) -> dict:
    return json.loads(NOTEBOOKS[edition].read_text(encoding="utf-8"))


def _printed(nb: dict, marker: str) -> str:
    """The text the code cell containing ``marker`` printed."""
    (cell,) = [
        c for c in nb["cells"] if c["cell_type"] == "code" and marker in "".join(c["source"])
    ]
    return "".join(
        "".join(o.get("text", "")) for o in cell["outputs"] if o["output_type"] == "stream"
    )


@pytest.fixture(scope="module", params=sorted(NOTEBOOKS))
def edition(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def glued(edition: str) -> dict[str, float]:
    return {name: float(value) for name, value in glued_values(_notebook(edition)).items()}


def test_minilm_position_table(glued: dict[str, float], edition: str) -> None:
    """ "position 512 has no row", "196,608 in MiniLM": the table the cell loads and prints."""
    printed = _printed(_notebook(edition), "table = pretrained.load_model()")
    shape = re.search(r"\((\d+), (\d+)\)", printed)
    assert shape, printed
    n_positions, d_model = int(shape[1]), int(shape[2])
    assert glued["minilm_positions"] == n_positions
    assert glued["minilm_position_params"] == n_positions * d_model  # max_positions × d_model
    assert f"{n_positions * d_model:,}" in printed


def _experiment(edition: str) -> dict[str, list[tuple[float, float | None]]]:
    """kind -> [(accuracy at T = 12, accuracy at T = 24 or None)] over the seeds, as printed."""
    table = _printed(_notebook(edition), "results = run_positions_experiment(")
    rows: dict[str, list[tuple[float, float | None]]] = {}
    for m in re.finditer(
        r"^(\w+)\s+\d+\s+\d+\s+\(\s*(\d+)\)\s+[\d. ]+?\s+([\d.]+)\s+(\S+)$", table, re.M
    ):
        long = None if m[4] == "n/a" else float(m[4])
        rows.setdefault(m[1], []).append((float(m[3]), long))
    assert sorted(rows) == ["learned", "none", "rope", "sinusoidal"], table
    return rows


def test_the_experiment_numbers_are_the_printed_table(
    glued: dict[str, float], edition: str
) -> None:
    rows = _experiment(edition)
    for kind in ("sinusoidal", "rope"):
        long = [acc for _, acc in rows[kind]]
        assert glued[f"{kind}_long_min"] == min(long)
        assert glued[f"{kind}_long_max"] == max(long)
        mean = sum(long) / len(long)
        assert glued[f"{kind}_long_mean"] == pytest.approx(mean, abs=0.0015)
    none = [acc for acc, _ in rows["none"]]
    assert glued["none_accuracy"] == pytest.approx(sum(none) / len(none), abs=0.005)
    trained = [acc for kind in ("sinusoidal", "learned", "rope") for acc, _ in rows[kind]]
    assert glued["positions_accuracy_min"] == round(min(trained), 1)
    # the learned table: one d_model = 16 vector for each of the T = 12 trained positions
    assert glued["learned_position_params"] == 12 * 16


def test_the_claims_about_the_experiment(glued: dict[str, float], edition: str) -> None:
    rows = _experiment(edition)
    # "No positions: about 0.29 accuracy ... better than the 1/8 of pure guessing"
    assert 1 / 8 < glued["none_accuracy"] < 0.5
    # "any positional information solves it": every run with positions, at the trained length
    trained = [acc for kind in ("sinusoidal", "learned", "rope") for acc, _ in rows[kind]]
    assert min(trained) == 1.0 and glued["positions_accuracy_min"] == 1.0
    # "the learned table ... cannot even be run (n/a)"
    assert all(long is None for _, long in rows["learned"])
    # "both do better than no positions"
    none_long = max(long for _, long in rows["none"])
    assert glued["sinusoidal_long_min"] > none_long and glued["rope_long_min"] > none_long
    # "RoPE does better than sinusoids in each of the three seeds, and the ranges do not overlap"
    assert all(r > s for (_, r), (_, s) in zip(rows["rope"], rows["sinusoidal"], strict=True))
    assert glued["rope_long_min"] > glued["sinusoidal_long_max"]
    # "Neither is perfect"
    assert glued["rope_long_max"] < 1 and glued["sinusoidal_long_max"] < 1
    # the spreads are small beside the gap between the two
    gap = glued["rope_long_mean"] - glued["sinusoidal_long_mean"]
    assert gap > 5 * max(glued["rope_long_sd"], glued["sinusoidal_long_sd"])


def _stretched(edition: str) -> dict[str, list[tuple[float, float, float]]]:
    """scaling -> [(mean, min, max) at 2x, then at 4x], as the stretched-RoPE cell printed."""
    table = _printed(_notebook(edition), "scaled = run_rope_scaling_experiment(")
    rows = {}
    for m in re.finditer(r"^(\w+)\s+((?:[\d.]+ \([\d.]+–[\d.]+\)\s*){2})$", table, re.M):
        cells = re.findall(r"([\d.]+) \(([\d.]+)–([\d.]+)\)", m[2])
        rows[m[1]] = [tuple(float(x) for x in c) for c in cells]
    assert sorted(rows) == ["dynamic", "linear", "none", "yarn"], table
    return rows


def test_the_stretched_rope_numbers_are_the_printed_table(
    glued: dict[str, float], edition: str
) -> None:
    rows = _stretched(edition)
    for scaling, cells in rows.items():
        for (mean, low, high), factor in zip(cells, (2, 4), strict=True):
            assert glued[f"scaled_{scaling}_{factor}x_mean"] == pytest.approx(mean, abs=0.0051)
            assert low <= mean <= high


def test_the_claims_about_the_stretched_rope_experiment(
    glued: dict[str, float], edition: str
) -> None:
    rows = _stretched(edition)
    # the "none" row at 24 tokens repeats the RoPE column of the first experiment
    rope_long = [long for _, long in _experiment(edition)["rope"]]
    none_2x = rows["none"][0]
    assert none_2x[1] == min(rope_long) and none_2x[2] == max(rope_long)
    for i in (0, 1):  # 2x, then 4x
        low = {s: cells[i][1] for s, cells in rows.items()}
        high = {s: cells[i][2] for s, cells in rows.items()}
        # "position interpolation ... the worst by far", in every seed, "below plain RoPE"
        assert high["linear"] < min(low[s] for s in ("none", "dynamic", "yarn"))
        # "dynamic NTK does best", in every seed
        assert low["dynamic"] > max(high[s] for s in ("none", "linear", "yarn"))
    two, four = ({s: c[i][0] for s, c in rows.items()} for i in (0, 1))
    # "YaRN helps at twice the length and hardly at four times"
    assert two["yarn"] - two["none"] > 0.03 and 0 <= four["yarn"] - four["none"] < 0.03
