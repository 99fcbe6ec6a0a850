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


FLOOR_SAVED = REPO / "benchmarks" / "results" / "decode_floor.json"


def test_the_memory_floor_numbers_are_the_saved_measurement(glued: dict[str, float]) -> None:
    """The floor ratios are recomputed here from the raw saved bytes, times and bandwidths (not
    with ``DecodeFloor``, which the chapter used), and the words' claims hold for them: the cached
    step is "not far from" its floor (under 2x) and the full pass costs many cached steps."""
    saved = json.loads(FLOOR_SAVED.read_text(encoding="utf-8"))
    bandwidth = max(b["wall"] for b in saved["read_bandwidth_bytes_per_s"])
    rows = {r["context"]: r for r in saved["rows"] if r["layout"] == "as-built"}
    assert sorted(rows) == [1024, 4096]
    for context, r in rows.items():
        floor_ms = 1e3 * (r["weight_bytes"] + r["cache_bytes"]) / bandwidth
        ratio = r["step_ms_wall"] / floor_ms
        assert glued[f"floor_ratio_{context}"] == round(ratio, 1)
        assert glued[f"floor_full_{context}"] == round(r["full_pass_ms_wall"] / r["step_ms_wall"])
        assert 1 < ratio < 2, ratio  # "not far from the time it takes merely to read"
        # the stack's bytes: 12 blocks of 4 d² + 2 d d_ff weights (+ biases, norms), float32,
        # and 2 · 12 · (context + 1) · d cached numbers
        assert r["cache_bytes"] == 2 * 12 * (context + 1) * 768 * 4
        assert (
            12 * (4 * 768**2 + 2 * 768 * 3072) * 4
            < r["weight_bytes"]
            < 1.01 * 12 * (4 * 768**2 + 2 * 768 * 3072) * 4
        )
    # "each new token costs a whole pass": many cached steps, more at the longer context
    assert 50 < glued["floor_full_1024"] < glued["floor_full_4096"]
