"""What chapter 7's prose says about the KV-cache timings it quotes holds for the numbers it glued.

The numbers are glued from the executed outputs (``tests/test_glue.py``; nbval re-computes them):
the chapter reads ``benchmarks/results/kv_cache.json`` (saved by ``benchmarks/bench_kv_cache.py``)
and times nothing itself. Here the glued values are compared with that file, and the claims the
words make about them are checked, in both editions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course_kit.myst import glued_values

REPO = Path(__file__).resolve().parents[1]
STEM = "07_causal_attention"
NOTEBOOKS = {
    "en": REPO / "chapters" / f"{STEM}.ipynb",
    "zh": REPO / "locale" / "zh_CN" / "notebooks" / "chapters" / f"{STEM}.ipynb",
}
SAVED = REPO / "benchmarks" / "results" / "kv_cache.json"


@pytest.fixture(scope="module", params=sorted(NOTEBOOKS))
def glued(request: pytest.FixtureRequest) -> dict[str, float]:
    nb = json.loads(NOTEBOOKS[request.param].read_text(encoding="utf-8"))
    return {name: float(value) for name, value in glued_values(nb).items()}


def _rows() -> dict[tuple[str, int], dict]:
    """(tiny | stack, context) -> the saved row."""
    rows = json.loads(SAVED.read_text(encoding="utf-8"))["rows"]
    return {("tiny" if r["model"].startswith("tiny") else "stack", r["context"]): r for r in rows}


def _speedup(row: dict) -> float:
    return row["ms_no_cache"] / row["ms_cache"]


def test_the_glued_timings_are_the_saved_measurement(glued: dict[str, float]) -> None:
    rows = _rows()
    assert glued["speedup_tiny_64"] == round(_speedup(rows["tiny", 64]), 1)
    for which, context in [("stack", 64), ("tiny", 1024), ("stack", 1024)]:
        assert glued[f"speedup_{which}_{context}"] == round(_speedup(rows[which, context]))
    for context in (64, 1024):
        assert glued[f"ms_cache_stack_{context}"] == round(rows["stack", context]["ms_cache"])


def test_the_claims_about_the_timings(glued: dict[str, float]) -> None:
    rows = _rows()
    # "The longer the context, the more a full pass recomputes": the speed-up grows with the
    # context, for both models, at every saved context
    for which in ("tiny", "stack"):
        contexts = sorted(c for w, c in rows if w == which)
        speedups = [_speedup(rows[which, c]) for c in contexts]
        assert speedups == sorted(speedups), (which, speedups)
    assert glued["speedup_tiny_1024"] > glued["speedup_tiny_64"] > 1
    assert glued["speedup_stack_1024"] > glued["speedup_stack_64"] > 1
    # "A cached step is not free either ... gets slower as the context grows"
    assert glued["ms_cache_stack_1024"] > glued["ms_cache_stack_64"]
