"""Errors of fact in the prose of chapters 11 to 13 and the appendix (content review 2026-12,
section A, items E3, E6 to E10), checked on the sources (nothing is executed).

Each test names its item, asserts the corrected English wording is in the Markdown and the wrong one
is gone, and that the 中文 catalogue has the corrected paragraph as a translated msgid. Where the
corrected text states numbers, the test recomputes them with the package's own formulas; where the
prose quotes a number the chapter computes, it shows the glued value (``{glue:text}`` role) and the
test checks the value the executed notebooks glued.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import polib

from course_kit.myst import glued_values
from course_utils import kv_cache
from course_utils.flash import io_cost_tiled, tile_schedule
from course_utils.mla import decode_cost

REPO = Path(__file__).resolve().parents[1]
LOCALE = REPO / "locale" / "zh_CN" / "LC_MESSAGES"
CH11 = "chapters/11_multi_head_latent_attention"
CH12 = "chapters/12_efficient_attention"
CH13 = "chapters/13_topic_words"
VARIANCE = "appendix/variance"


def _markdown(page: str) -> str:
    nb = json.loads((REPO / f"{page}.ipynb").read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def _flat(text: str) -> str:
    """Whitespace-normalised: a paragraph as Sphinx extracts it (line breaks become spaces)."""
    return re.sub(r"\s+", " ", text).strip()


def _msgstr(page: str, fragment: str) -> str:
    """The translation of the one translated msgid of ``page``'s catalogue containing
    ``fragment`` (whitespace-normalised)."""
    po = polib.pofile(str(LOCALE / f"{page}.po"))
    hits = [e for e in po if not e.obsolete and _flat(fragment) in _flat(e.msgid)]
    assert len(hits) == 1, f"{page}.po: {len(hits)} msgids contain {fragment!r}"
    entry = hits[0]
    assert entry.msgstr and "fuzzy" not in entry.flags, f"{page}.po: untranslated {fragment!r}"
    return entry.msgstr


def _glued(page: str) -> tuple[dict[str, str], dict[str, str]]:
    """The values the English and the zh-executed notebook of ``page`` glued."""
    en = json.loads((REPO / f"{page}.ipynb").read_text(encoding="utf-8"))
    zh = json.loads((LOCALE.parent / "notebooks" / f"{page}.ipynb").read_text(encoding="utf-8"))
    return glued_values(en), glued_values(zh)


def _msgids(page: str) -> str:
    po = polib.pofile(str(LOCALE / f"{page}.po"))
    return "\n".join(_flat(e.msgid) for e in po)


# --- E3: the topic-word link is the seed's second link ---


def test_e3_topic_words_is_the_seeds_second_link():
    md = _flat(_markdown(CH13))
    assert "Their second link asks the question this chapter answers" in md
    assert "Their last link" not in md
    assert "笔记的第二个链接" in _msgstr(CH13, "Their second link asks the question")
    assert "Their last link" not in _msgids(CH13)


# --- E6: the asymptote of absorption's saving has d_c, not n_h ---


def test_e6_absorption_ratio_tends_to_d_c_times_head_widths_over_latent_width():
    md = _flat(_markdown(CH11))
    formula = r"$d_c(d_h+d_h^v)/(2 d_c + d_h^R)$"
    assert f"grows towards about {formula}" in md
    assert r"$n_h(d_h+d_h^v)/(2 d_c + d_h^R)$" not in md
    assert "about {glue:text}`absorb_ratio_128k:d` for DeepSeek-V2's shape" in md
    zh = _msgstr(CH11, "The counts above predict a ratio that grows towards about")
    assert formula in zh and "{glue:text}`absorb_ratio_128k:d`" in zh and "n_h(d_h" not in zh
    # the ratio the prose shows is the one the chapter computed at 128k tokens, in both editions
    assert all(g["absorb_ratio_128k"] == "121" for g in _glued(CH11))
    # The package's counts: n_h cancels and the ratio tends to d_c (d_h + d_h^v) / (2 d_c + d_h^R).
    cfg = kv_cache.DEEPSEEK_V2
    h, dc, dh, dr = cfg["n_heads"], cfg["d_latent_kv"], cfg["d_head"], cfg["d_head_rope"]
    shape = (h, dc, dh, dr, dh)
    big = 10**9
    ratio = (
        decode_cost(big, *shape, mode="naive")["macs"]
        / decode_cost(big, *shape, mode="absorbed")["macs"]
    )
    assert round(ratio) == 121
    assert abs(dc * (dh + dh) / (2 * dc + dr) - ratio) < 0.5
    assert abs(h * (dh + dh) / (2 * dc + dr) - ratio) > 90  # the old formula: about 30


# --- E7: DeepSeek-V2's 93.3 % includes its 6-bit KV quantization ---


def test_e7_the_93_percent_needs_six_bit_kv_quantization_mla_alone_gives_82():
    md = _flat(_markdown(CH11))
    for text in (
        "quantizes each element of its KV cache to about 6 bits (section 3.2.3 of the paper)",
        "The 93.3% needs that quantization: MLA alone, with a 16-bit cache, gives about "
        "{glue:text}`mla_alone_saving:d`% (exercise 11.4 computes both",
        "### Exercise 11.4: what the 93.3% measures",
        "95 layers, 8 KV heads of width $d_h = 128$, its cache in bf16",
        "stores each cached number in about 6 bits (section 3.2.3 of the paper)",
    ):
        assert text in md, text
    zh = _msgstr(CH11, "The 93.3% needs that quantization")
    for text in ("6 位", "3.2.3", "93.3%", "{glue:text}`mla_alone_saving:d`%", "练习 11.4"):
        assert text in zh, text
    # the 82% the prose shows is the saving the chapter computed (MLA alone, 16-bit caches)
    assert all(g["mla_alone_saving"] == "82" for g in _glued(CH11))
    assert "3.2.3" in _msgstr(CH11, "DeepSeek-V2 reports a KV cache 93.3% smaller")
    # The exercise's worked solution prints both numbers, in both editions.
    # The 中文 edition prints the same line through t() in Chinese (zh.json).
    for nb_path, lines in (
        (REPO / f"{CH11}.ipynb", ("16-bit cache: 82.2% smaller", "6-bit cache: 93.3% smaller")),
        (
            LOCALE.parent / "notebooks" / f"{CH11}.ipynb",
            ("16 位缓存：小 82.2%", "6 位缓存：小 93.3%"),
        ),
    ):
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        printed = "".join(
            "".join(o.get("text", ""))
            for c in nb["cells"]
            if "solution" in c["metadata"].get("tags", [])
            and "kv_reduction" in "".join(c["source"])
            for o in c["outputs"]
        )
        for line in lines:
            assert line in printed, (nb_path, line)
    # The arithmetic, with the chapter's formulas: DeepSeek 67B (95 layers, 8 KV heads × 128, bf16).
    ds67 = kv_cache.kv_cache_bytes(95, 8, 128, 1)
    v2 = kv_cache.DEEPSEEK_V2
    mla = v2["n_layers"] * kv_cache.values_per_token_mla(v2["d_latent_kv"], v2["d_head_rope"])
    assert (ds67, mla) == (389_120, 60 * 576)
    assert mla * 6 / 8 == 25_920 and mla * 2 == 69_120
    assert f"{1 - 25_920 / ds67:.1%}" == "93.3%" and f"{1 - 69_120 / ds67:.1%}" == "82.2%"


# --- E8: the query-outer loop is FlashAttention-2's; FA1 loops over K/V outside ---


def test_e8_query_outer_loop_is_flashattention_2_and_section_12_5_names_its_order():
    md = _flat(_markdown(CH12))
    assert "This is the forward pass of FlashAttention (algorithm 1 of" not in md
    assert (
        "This is the forward pass of FlashAttention-2 (algorithm 1 of "
        "{cite:t}`dao2023flashattention2`)"
    ) in md
    assert (
        "runs the two loops the other way round, key blocks outside and query blocks inside" in md
    )
    assert "in the order of the paper's algorithm 1 (key blocks outside, query blocks inside)" in md
    assert "`io_cost_tiled` counts this order" in md
    assert r"with blocks of $\Theta(M/d)$ queries that is the same $\Theta(N^2 d^2 / M)$" in md
    assert "FlashAttention-2" in _msgstr(CH12, "This is the forward pass of FlashAttention-2")
    assert r"\Theta(M/d)" in _msgstr(CH12, "`io_cost_tiled` counts this order")
    # tiled_attention's loop: query blocks outside, key blocks inside.
    assert tile_schedule(4, 4, block_q=2, block_k=2) == [
        (0, 2, 0, 2),
        (0, 2, 2, 4),
        (2, 4, 0, 2),
        (2, 4, 2, 4),
    ]

    # Both orders: Θ(N² d² / M). K/V outside (io_cost_tiled) and Q outside with M/(4d) queries
    # per block (Q, O once; K, V once per query block) grow alike in N and in d²/M.
    def q_outside(n: int, d: int, m: int) -> float:
        return 2 * n * d + math.ceil(n / math.ceil(m / (4 * d))) * 2 * n * d

    for n, d, m in [(4096, 64, 100_000), (16_384, 64, 100_000), (16_384, 128, 400_000)]:
        bound = n * n * d * d / m
        assert 1 <= io_cost_tiled(n, d, m) / bound <= 20
        assert 1 <= q_outside(n, d, m) / bound <= 20


# --- E9: Wiegreffe & Pinter's tests; the erasure test is Serrano & Smith's ---


def test_e9_wiegreffe_pinter_tests_described_and_erasure_attributed_to_serrano_smith():
    md = _flat(_markdown(CH13))
    assert "for instance against a random baseline" not in md
    assert "the answer to Wiegreffe and Pinter's question is measurable" not in md
    assert "the kind of test {cite:t}`wiegreffe2019attention` asked for" not in md
    assert "Here attention passes the test {cite:p}" not in md
    for text in (
        "They proposed four tests",
        "train the same model with uniform weights instead of learned attention",
        "the spread of the weights over random seeds",
        "frozen",
        "adversarial",
        "the erasure test of {cite:t}`serrano2019attention`",
        "not run here",
    ):
        assert text in md, text
    bib = (REPO / "references.bib").read_text(encoding="utf-8")
    entry = bib[bib.index("@inproceedings{serrano2019attention,") :].split("\n}\n")[0]
    assert "Is Attention Interpretable?" in entry and "Serrano, Sofia and Smith, Noah A." in entry
    assert "2931--2951" in entry and "2019" in entry
    zh = _msgstr(CH13, "They proposed four tests")
    assert "四种检验" in zh and "均匀权重" in zh and "对抗" in zh
    assert "serrano2019attention" in _msgstr(CH13, "For this model, then, the weights pass")
    assert "Wiegreffe and Pinter's question" not in _msgids(CH13)


def test_e9_the_uniform_attention_baseline_is_run_and_reported_in_both_editions():
    """W&P's first test was described as 'not run here'; the chapter now runs it (both editions)."""
    md = _flat(_markdown(CH13))
    for gone in (
        "would be the next control; this chapter does not run it",
        "Wiegreffe and Pinter's own tests, starting with a model trained with uniform weights, are "
        "not run here",
        "whose tests (uniform weights, spread over seeds",
    ):
        assert gone not in md and gone not in _msgids(CH13), gone
    for text in (
        "**Wiegreffe and Pinter's first test: uniform weights.**",
        '`attention="uniform"` keeps the query at zero',
        # the two accuracies are the run's own (glued; tests/test_chapter13_numbers.py checks them)
        "By the latter's first test, uniform weights ({glue:text}`uniform_acc:.3f` against "
        "{glue:text}`learned_acc:.3f`), attention adds a few",
        "| a model with uniform weights does worse |",
        "Their other three tests",
    ):
        assert text in md, text
    assert "均匀权重" in _msgstr(CH13, "Wiegreffe and Pinter's first test: uniform weights.")
    assert "{glue:text}`uniform_acc:.3f`" in _msgstr(CH13, "By the latter's first test, uniform")
    gain = _msgstr(CH13, "The learned attention adds a few points")
    assert "{glue:text}`gain_points`" in gain and "个百分点" in gain
    # The 中文 edition names the row in Chinese (t_literal("uniform"), zh.json).
    for nb_path, row in (
        (REPO / f"{CH13}.ipynb", "uniform     0.936 ± 0.010"),
        (LOCALE.parent / "notebooks" / f"{CH13}.ipynb", "均匀        0.936 ± 0.010"),
    ):
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        cells = [
            c
            for c in nb["cells"]
            if c["cell_type"] == "code" and 'attention="uniform"' in "".join(c["source"])
        ]
        assert len(cells) == 1, nb_path
        printed = "".join("".join(o.get("text", "")) for o in cells[0]["outputs"])
        assert row in printed, nb_path


# --- E10: √(2/n) holds for normal data; q·k at d_k = 1 is heavier-tailed ---


def test_e10_sample_variance_error_is_for_normal_data_and_heavier_tails_vary_more():
    md = _flat(_markdown(VARIANCE))
    normal = r"for normally distributed data, with $n$ samples it is off by roughly $\sqrt{2/n}$"
    assert normal in md
    assert r"about $\sqrt{8/n}$, 2% here" in md
    old = r"it is off by roughly $\sqrt{2/n}$ of its value (about 1% for $n = 20{,}000$), which"
    assert old not in md
    zh = _msgstr(VARIANCE, "for normally distributed data")
    assert "正态分布" in zh and r"\sqrt{8/n}" in zh and "2%" in zh
    # E[(qk)^4] = E[q^4] E[k^4] = 9 for independent standard normals: relative SD √((9 − 1)/n).
    n = 20_000
    assert f"{math.sqrt(2 / n):.0%}" == "1%" and f"{math.sqrt((9 - 1) / n):.0%}" == "2%"
