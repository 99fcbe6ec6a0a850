"""Chapter 11's reading of the recorded quality run (attention_variants_quality.json).

The numbers section 11.6 quotes are glued from the results file by the notebook itself (nbval,
``tests/test_glue.py``). What is left here are the text's claims about the run that are not a
number to print: the same parameter budget, the order of the means, the overlap of the runs, the
Welch tests (recomputed with SciPy), the cleaner story three seeds would have told, and every run's
loss still falling at the end.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from scipy import stats

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


def test_the_run_is_recorded_with_its_machine_load_and_five_seeds(bench):
    assert {"cpu", "cpu_count", "torch"} <= set(bench["machine"])
    assert len(bench["load_average_before"]) == 3 and len(bench["load_average_after"]) == 3
    assert bench["setup"]["seeds"] == 5
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


def test_the_means_rank_mla_mha_gqa_mqa(bench, reading):
    assert "the order of DeepSeek-V2's ablations: MLA lowest" in reading
    means = {name: v["val_loss_mean"] for name, v in bench["variants"].items()}
    assert sorted(means, key=means.get) == ["MLA", "MHA", "GQA", "MQA"]
    for name, v in bench["variants"].items():  # the stored summary is the runs' own
        assert v["val_loss_mean"] == pytest.approx(statistics.fmean(losses(bench, name)), abs=1e-15)
        assert v["val_loss_std"] == pytest.approx(statistics.stdev(losses(bench, name)), abs=1e-15)


def test_the_runs_overlap_best_and_worst_mqa(bench, reading):
    assert "The best MQA run" in reading and "is better than every MHA run" in reading
    assert "is the worst of all" in reading
    mqa = losses(bench, "MQA")
    every = [x for name in bench["variants"] for x in losses(bench, name)]
    assert min(mqa) < min(losses(bench, "MHA"))
    assert max(mqa) == max(every)
    mha_std = bench["variants"]["MHA"]["val_loss_std"]
    assert bench["variants"]["MQA"]["val_loss_std"] > max(
        bench["variants"][name]["val_loss_std"] for name in ("MHA", "GQA", "MLA")
    )
    assert bench["variants"]["MQA"]["val_loss_std"] / mha_std > 1  # "varied more"


def test_welch_p_values_are_scipys_and_none_is_below_005(bench, reading):
    """The stored tests against MHA, recomputed by SciPy from the runs (an oracle we did not
    write), and the text's reading of them."""
    assert "None is below the usual 0.05" in reading
    mha = losses(bench, "MHA")
    assert set(bench["welch_vs_mha"]) == {"MLA", "GQA", "MQA"}
    for name, stored in bench["welch_vs_mha"].items():
        test = stats.ttest_ind(losses(bench, name), mha, equal_var=False)
        assert stored["p"] == pytest.approx(float(test.pvalue), rel=1e-12)
        assert stored["t"] == pytest.approx(float(test.statistic), rel=1e-12)
        assert 0.05 < stored["p"] < 1
        # the sign says which side: MLA below MHA, GQA and MQA above
        assert (stored["t"] < 0) == (name == "MLA")


def test_three_seeds_alone_told_a_cleaner_story_than_five(bench, reading):
    assert "Had we stopped at three seeds (0, 1 and 2), every GQA and MQA run" in reading

    def first(name: str, n: int) -> list[float]:
        return [r["val_loss"] for r in bench["variants"][name]["runs"] if r["seed"] < n]

    def separated(n: int) -> bool:
        worse = first("GQA", n) + first("MQA", n)
        return min(worse) > max(first("MHA", n) + first("MLA", n))

    assert separated(3)
    assert not separated(5)


def test_every_loss_was_still_falling_at_the_last_measurement(bench, reading):
    assert "still falling at the last measurement" in reading
    for v in bench["variants"].values():
        for r in v["runs"]:
            assert r["curve_val_loss"][-1] < r["curve_val_loss"][-2]
