"""Chapter 11's reading of the recorded quality run (attention_variants_quality.json).

The numbers section 11.6 quotes are glued from the results file by the notebook itself (nbval,
``tests/test_glue.py``). What is left here are the text's claims about the run that are not a
number to print: the same parameter budget, MHA and MLA within one standard deviation, every GQA
and MQA run above every MHA and MLA run, and every run's loss still falling at the end.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course_utils import kv_cache

from .test_facts_ch11_to_ch13 import CH11, _flat, _markdown

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "attention_variants_quality.json"


@pytest.fixture(scope="module")
def bench() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def reading() -> str:
    """The chapter's Markdown, whitespace-normalised (sentences wrap anywhere in the source)."""
    return _flat(_markdown(CH11))


def losses(bench: dict, name: str) -> list[float]:
    return [r["val_loss"] for r in bench["variants"][name]["runs"]]


def test_the_run_is_recorded_with_its_machine_load_and_at_least_three_seeds(bench):
    assert {"cpu", "cpu_count", "torch"} <= set(bench["machine"])
    assert len(bench["load_average_before"]) == 3 and len(bench["load_average_after"]) == 3
    assert bench["setup"]["seeds"] >= 3
    for v in bench["variants"].values():
        assert [r["seed"] for r in v["runs"]] == list(range(bench["setup"]["seeds"]))
        assert all(r["train_cpu_s"] > 0 for r in v["runs"])


def test_same_parameter_budget_within_two_percent(bench):
    mha = bench["variants"]["MHA"]["params"]
    for v in bench["variants"].values():
        assert abs(v["params"] / mha - 1) < 0.02


def test_cache_sizes_are_the_packages_counts(bench):
    v = bench["variants"]
    d_head = bench["setup"]["d_head"]
    assert v["MHA"]["cache_values_per_token_per_layer"] == kv_cache.values_per_token_mha(4, d_head)
    assert v["GQA"]["cache_values_per_token_per_layer"] == kv_cache.values_per_token_gqa(2, d_head)
    assert v["MQA"]["cache_values_per_token_per_layer"] == kv_cache.values_per_token_mqa(d_head)
    assert v["MLA"]["cache_values_per_token_per_layer"] == kv_cache.values_per_token_mla(
        v["MLA"]["d_latent_kv"], bench["setup"]["d_head_rope_mla"]
    )


def test_mha_and_mla_differ_by_less_than_one_standard_deviation(bench, reading):
    assert "cannot be told apart" in reading
    v = bench["variants"]
    gap = abs(v["MHA"]["val_loss_mean"] - v["MLA"]["val_loss_mean"])
    assert gap < min(v["MHA"]["val_loss_std"], v["MLA"]["val_loss_std"])


def test_every_gqa_and_mqa_run_lies_above_every_mha_and_mla_run(bench, reading):
    assert "every one of their six runs lies above every MHA and MLA run" in reading
    worse = losses(bench, "GQA") + losses(bench, "MQA")
    better = losses(bench, "MHA") + losses(bench, "MLA")
    assert len(worse) == 6 and min(worse) > max(better)


def test_gqa_and_mqa_overlap(bench, reading):
    assert "GQA and MQA cannot be told apart from each other" in reading
    gqa, mqa = losses(bench, "GQA"), losses(bench, "MQA")
    assert min(mqa) < max(gqa)  # their ranges overlap


def test_every_loss_was_still_falling_at_the_last_measurement(bench, reading):
    assert "still falling at the last measurement" in reading
    for v in bench["variants"].values():
        for r in v["runs"]:
            assert r["curve_val_loss"][-1] < r["curve_val_loss"][-2]
