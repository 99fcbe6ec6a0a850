"""What chapter 6's prose says about the numbers it quotes holds for the numbers it glued.

The numbers themselves are glued from the executed outputs (``tests/test_glue.py``; nbval
re-computes them), so no test retypes them. The words around them make claims a number alone
does not ("seeds 1 and 2 learn the task", "the loss jumped back up", "head 2 puts almost twice
that", "nothing on them"): each is checked here on the glued values, in both editions (the 中文
notebook is executed on its own). The expected number of copies of a letter is also checked
against its closed form, ``1 + (T - 1) / V``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course_kit.myst import glued_values

REPO = Path(__file__).resolve().parents[1]
STEM = "06_transformer_block"
NOTEBOOKS = {
    "en": REPO / "chapters" / f"{STEM}.ipynb",
    "zh": REPO / "locale" / "zh_CN" / "notebooks" / "chapters" / f"{STEM}.ipynb",
}


@pytest.fixture(scope="module", params=sorted(NOTEBOOKS))
def glued(request: pytest.FixtureRequest) -> dict[str, float]:
    nb = json.loads(NOTEBOOKS[request.param].read_text(encoding="utf-8"))
    return {name: float(value) for name, value in glued_values(nb).items()}


def test_two_seeds_learn_and_seed_0_ends_on_a_spike(glued: dict[str, float]) -> None:
    assert glued["accuracy_seed_1"] > 97 and glued["accuracy_seed_2"] > 97  # "learn the task"
    assert glued["accuracy_seed_0"] < min(glued["accuracy_seed_1"], glued["accuracy_seed_2"])
    # learned too (low loss at steps 250 and 290), then "jumped back up" in the last ten steps
    assert glued["loss_seed_0_step_250"] < 0.1 and glued["loss_seed_0_step_290"] < 0.1
    assert glued["loss_seed_0_step_300"] > 3 * glued["loss_seed_0_step_290"]


def test_the_stream_grows_and_attention_adds_less_than_the_ffn(glued: dict[str, float]) -> None:
    # "grows from block to block": the ranges over the seeds do not overlap
    assert glued["stream_in_block_0_max"] < glued["stream_in_block_1_min"]
    assert glued["stream_in_block_1_max"] < glued["out_block_1_min"]
    # "the smaller correction" / "the FFN adds more"
    assert glued["attn_adds_min"] < glued["ffn_adds_min"]
    assert glued["attn_adds_max"] < glued["ffn_adds_max"]


def test_the_heads_weights_on_the_copies(glued: dict[str, float]) -> None:
    T, V = 10, 6  # the chapter's sequences: 10 letters from an alphabet of 6
    assert glued["copies_per_token"] == pytest.approx(1 + (T - 1) / V, abs=0.1)
    even = glued["even_share"]
    assert even == pytest.approx(glued["copies_per_token"] / T, abs=0.01)
    # block 0: head 2 "almost twice" the even share, heads 0 and 1 "somewhat more than even"
    assert 1.5 < glued["on_copies_block_0_head_2"] / even < 2
    for head in (0, 1):
        assert even < glued[f"on_copies_block_0_head_{head}"] < glued["on_copies_block_0_head_2"]
    # block 1: every head "near the even share"
    assert abs(glued["on_copies_block_1_min"] - even) <= 0.07
    assert abs(glued["on_copies_block_1_max"] - even) <= 0.07


def test_the_tracer_weights_of_a_and_c(glued: dict[str, float]) -> None:
    assert glued["a_on_a_head_0"] >= 10  # head 0: the first a looks for its own letter
    assert glued["a_on_a_head_2"] == 0  # head 2: "looks *away* from its own letter"
    # c's largest weights are on itself and d, "not on the a's"
    assert min(glued["c_on_c_head_0"], glued["c_on_d_head_0"]) > 3 * glued["c_on_a_head_0"]


def test_exercise_6_5_dropout_and_post_ln(glued: dict[str, float]) -> None:
    assert glued["dropout_higher_from"] < glued["dropout_higher_to"]
    # higher than without at step 250, lower at 300 where the run without dropout spiked
    assert glued["dropout_loss_step_250"] > glued["loss_seed_0_step_250"]
    assert glued["dropout_loss_step_300"] < glued["loss_seed_0_step_300"]
    # post-LN "started later", then was ahead, and its loss "jumped back up at the end"
    assert glued["post_ln_loss_step_100"] > glued["loss_seed_0_step_100"]
    assert glued["post_ln_ahead_from"] > 100
    assert glued["post_ln_loss_step_250"] < glued["loss_seed_0_step_250"]
    assert glued["post_ln_loss_step_300"] > 2 * glued["post_ln_loss_step_250"]


def _logit_lens_state(edition: str) -> dict:
    """The saved state of the chapter's LogitLensView (the numbers the site's widget shows)."""
    nb = json.loads(NOTEBOOKS[edition].read_text(encoding="utf-8"))
    states = nb["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    (state,) = [s["state"] for s in states.values() if "prompt_index" in s["state"]]
    return state


def test_the_whole_model_s_shares_and_the_logit_lens(glued: dict[str, float]) -> None:
    # "the embedding table is a fifth", the FFNs and attention the rest, the norms a rounding error
    assert 19 <= glued["embedding_share"] <= 22
    assert glued["embedding_share"] + glued["ffn_share"] + glued["attention_share"] == 100
    assert glued["params_millions"] == 134.5
    # "only in the last few": Paris enters the five late and is the top guess at the end
    assert 25 <= glued["paris_first_block"] <= glued["paris_top1_from"] <= 30
    # "grows more than a hundredfold"
    assert glued["norm_block_30"] > 100 * glued["norm_block_0"]


@pytest.mark.parametrize("edition", sorted(NOTEBOOKS))
def test_the_logit_lens_claims_hold_for_the_saved_widget(edition: str) -> None:
    state = _logit_lens_state(edition)
    prompts, tokens = state["prompts"], state["tokens"]
    assert prompts[0] == "The capital of France is"
    # block 0, the embedding alone: the lens guesses the prompt's own last token (English prompts)
    assert [tokens[p][0][0] for p in range(3)] == ["␣is", "␣is", ","]
    # "the answers appear in the last few blocks": each English answer enters the five late
    for p, answer in enumerate(["␣Paris", "␣cold", "␣five"]):
        assert tokens[p][-1][0] == answer
        first = min(b for b, guesses in enumerate(tokens[p]) if answer in guesses)
        assert first >= 25, (answer, first)
