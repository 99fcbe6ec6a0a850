"""Chapters 9–13: claims sourced or labelled, and the furniture a reader working alone needs.

* Mistral's sliding window is v0.1's, and the W / W + 1 ambiguity is stated (ch. 9, 10);
* the models that share keys and values are named from ``course_utils.model_configs`` (ch. 10);
* the CPU decoding gap is not attributed to cache traffic alone (ch. 10);
* ``exp2`` is cited to FlashAttention-2's code, and the head-dimension remark is a labelled guess,
  and the CPU engineering sits in a dropdown (ch. 12);
* a "Predict, then move it." question with a revealable answer above every widget, in both
  editions; a prerequisites line atop each chapter; at least two checked exercises that make the
  learner predict, derive or build; the memory appendix linked where chapters 10 and 11 first
  argue from memory bandwidth; chapter 13's legend of its seven measures and its own part.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polib
import pytest
import yaml

from course_utils.model_configs import configs_in_chapter
from course_utils.topic_focus.measures import MEASURES

REPO = Path(__file__).resolve().parents[1]
STEMS = (
    "09_sparse_attention",
    "10_grouped_query_attention",
    "11_multi_head_latent_attention",
    "12_efficient_attention",
    "13_topic_words",
)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PREDICT = "**Predict, then move it.**"
PREDICT_ZH = "**先预测，再动手。**"


def _cells(stem: str) -> list[dict]:
    path = REPO / "chapters" / f"{stem}.ipynb"
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def _markdown(stem: str) -> str:
    return "\n".join(_source(c) for c in _cells(stem) if c["cell_type"] == "markdown")


def _catalogue(stem: str) -> dict[str, str]:
    po = polib.pofile(str(REPO / "locale" / "zh_CN" / "LC_MESSAGES" / "chapters" / f"{stem}.po"))
    return {" ".join(e.msgid.split()): e.msgstr for e in po if not e.obsolete}


def _cell_with(stem: str, needle: str) -> str:
    hits = [
        _source(c) for c in _cells(stem) if c["cell_type"] == "markdown" and needle in _source(c)
    ]
    assert len(hits) == 1, (stem, needle, len(hits))
    return hits[0]


# --- claims --------------------------------------------------------------------------------------


def test_mistral_window_is_v01_and_its_width_is_called_ambiguous() -> None:
    text = " ".join(_cell_with("09_sparse_attention", "So depth buys range.").split())
    assert "v0.1" in text and "{cite}`mistral2023v02card`" in text
    assert "$W + 1$ keys" in text and "at most $W$ tokens" in text
    assert "hf2024mistralwindow" in text and "mistral2023referencewindow" in text
    # every sentence of chapters 9 and 10 that gives Mistral 7B a window names the version
    for stem in ("09_sparse_attention", "10_grouped_query_attention"):
        for par in re.split(r"\n\s*\n", _markdown(stem)):
            if "Mistral 7B" in par and re.search(r"window of|sliding-window|sliding window", par):
                assert "v0.1" in par, (stem, par[:120])
    # the question on decoding accepts both readings
    answer = _cell_with("09_sparse_attention", "**3.** Mistral 7B v0.1 decodes")
    assert "`window=4096`" in answer and "both answers are right" in answer


def test_the_models_that_share_keys_and_values_match_the_sourced_configs() -> None:
    intro = " ".join(_source(_cells("10_grouped_query_attention")[0]).split())
    assert "Nearly every" not in intro
    chapter10 = configs_in_chapter(10)  # the rows section 10.2 tabulates
    kinds = {c.name: (c.n_heads, c.n_kv_heads) for c in chapter10.values()}
    grouped = ("Llama 2 70B", "Llama 3 8B", "SmolLM2-135M", "Mistral 7B", "Gemma 3 12B")
    for name in grouped:
        heads, kv = kinds[name]
        assert 1 < kv < heads, name
        assert name in intro, name
    assert kinds["Falcon 7B"][1] == 1 and "Falcon 7B" in intro
    assert kinds["Llama 2 7B"][0] == kinds["Llama 2 7B"][1] and "Llama 2 7B" in intro
    sharing = sum(1 for heads, kv in kinds.values() if kv < heads)
    tabulated = f"of the {_word(len(chapter10))} published configurations tabulated in section 10.2"
    assert f"{tabulated}, {_word(sharing)}" in intro
    assert len(chapter10) == 7
    assert "{cite}`gemmateam2024gemma`" in intro


def _word(n: int) -> str:
    return ["zero", "one", "two", "three", "four", "five", "six", "seven"][n]


def test_the_cpu_decoding_gap_is_not_put_on_the_cache_alone() -> None:
    text = " ".join(_cell_with("10_grouped_query_attention", "What this CPU shows").split())
    assert "not from arithmetic" not in text
    assert "*consistent with*" in text
    for cause in ("$W^K$ and $W^V$", "copies", "shapes", "Python overhead", "CPU's own caches"):
        assert cause in text, cause


def test_exp2_is_cited_to_the_code_and_the_head_dimension_remark_is_a_guess() -> None:
    cell = _cell_with("12_efficient_attention", "**Base 2.**")
    base2 = cell[cell.index("**Base 2.**") : cell.index("**One buffer")]
    assert "{cite}`dao2023flashattentioncode`" in base2
    assert "dao2023flashattention2" not in base2
    assert "not in\n  its paper" in base2 or "not in its paper" in " ".join(base2.split())
    panels = " ".join(_cell_with("12_efficient_attention", "Read the three panels").split())
    assert "head dimensions stay at 64–128" not in panels
    assert "Our guess, not a documented reason" in panels


def test_the_cpu_engineering_of_chapter_12_is_in_a_dropdown() -> None:
    cell = _cell_with("12_efficient_attention", "**Base 2.**")
    m = re.search(
        r"(::::|````)\{admonition\} How `tiled_attention` is made fast on a CPU\n"
        r":class: dropdown\n(.*?)\1",
        cell,
        re.S,
    )
    assert m, "no dropdown"
    for detail in ("**Base 2.**", "**One buffer", "**Matrix products", "one\nPython thread"):
        assert detail in m.group(2), detail


# --- furniture -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stem", STEMS)
def test_a_predict_question_with_an_answer_above_every_widget(stem: str) -> None:
    cells = _cells(stem)
    catalogue = _catalogue(stem)
    widgets = [
        i
        for i, c in enumerate(cells)
        if c["cell_type"] == "code"
        and any(WIDGET_VIEW in o.get("data", {}) for o in c.get("outputs", []))
    ]
    assert widgets, stem
    for i in widgets:
        above = cells[i - 1]
        assert above["cell_type"] == "markdown", (stem, i)
        text = _source(above)
        assert PREDICT in text, (stem, i)
        after = text[text.index(PREDICT) :]
        assert re.search(r"`{3,}\{admonition\} Answer\n:class: dropdown\n", after), (stem, i)
        question = " ".join(after.split("\n\n")[0].split())
        assert catalogue.get(question, "").startswith(PREDICT_ZH), (stem, question[:60])


@pytest.mark.parametrize("stem", STEMS)
def test_a_prerequisites_line_opens_the_chapter(stem: str) -> None:
    first = _source(_cells(stem)[0]).split("\n\n")
    assert first[0].startswith("# "), stem
    assert first[1].startswith("**Prerequisites:** chapter "), stem
    assert "{doc}`../appendix/" in first[1], stem
    zh = _catalogue(stem)[" ".join(first[1].split())]
    assert zh.startswith("**预备知识：**"), stem


#: The checked exercises that make the learner predict, derive or build (not copy a formula).
UNDERSTANDING = {
    "09_sparse_attention": ("check_layers_needed", "check_window_attention", "check_strided_keys"),
    "10_grouped_query_attention": (
        "check_max_batch",
        "check_gqa_attention",
        "check_local_global_cache",
    ),
    "11_multi_head_latent_attention": (
        "check_absorb_query",
        "check_latent_scores",
        "check_kv_reduction",
    ),
    "12_efficient_attention": (
        "check_streaming_softmax",
        "check_key_block_attention",
        "check_hbm_reads",
        "check_paged_blocks",
    ),
    "13_topic_words": ("check_rollout", "check_uniform_pool"),
}


@pytest.mark.parametrize("stem", STEMS)
def test_at_least_two_exercises_make_the_learner_predict_derive_or_build(stem: str) -> None:
    exercises = [
        _source(c)
        for c in _cells(stem)
        if c["cell_type"] == "code" and "exercise" in c.get("metadata", {}).get("tags", [])
    ]
    called = [name for name in UNDERSTANDING[stem] if any(name in x for x in exercises)]
    assert len(called) >= 2 and called == list(UNDERSTANDING[stem]), (stem, called)


@pytest.mark.parametrize(
    ("stem", "needle"),
    [
        ("10_grouped_query_attention", "reading it is a large part of what makes each new token"),
        ("11_multi_head_latent_attention", "and decoding is limited by memory reads"),
    ],
)
def test_the_memory_appendix_is_linked_where_the_bandwidth_argument_starts(
    stem: str, needle: str
) -> None:
    cell = _cell_with(stem, needle)
    par = next(p for p in cell.split("\n\n") if needle in " ".join(p.split()))
    assert "{doc}`../appendix/memory`" in par, stem


def test_chapter_13_has_a_legend_of_its_seven_measures() -> None:
    text = _markdown("13_topic_words")
    rows = re.findall(r"^\| `(\w+)` \| .+ \|$", text, re.M)
    assert rows == list(MEASURES)


def test_chapter_13_is_in_its_own_part_in_both_editions() -> None:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    part = next(p for p in toc["parts"] if "chapters/13_topic_words" in str(p))
    assert part["caption"] == "Part V: What attention explains"
    assert [c["file"] for c in part["chapters"]] == ["chapters/13_topic_words"]
    intro = polib.pofile(str(REPO / "locale" / "zh_CN" / "LC_MESSAGES" / "intro.po"))
    assert intro.find(part["caption"]).msgstr == "第五部分：注意力能解释什么"
