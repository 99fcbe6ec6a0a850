"""Content corrections of issue 8, section 4, checked on the sources (nothing is executed).

Each test names the item it guards: the translation of 位置专家, the 银行边 pun explained once, the
positional embeddings of the heads experiment, the initialisation caveat of chapter 2, the citation
of Britz et al., the glossary's terms, the PyTorch version of chapter 3's summary, τ for the
temperature, the instructor guide's two corrections, notation.md's seeds, MiniLM's embeddings, the
prerequisites and their appendix, forward references, the order of the references, and the
MultiHeadAttention source shown on chapter 4's page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
import yaml

from course_kit.myst import glued_values
from course_utils.data import bank_example
from course_utils.experiments.neighbours import NeighboursModel
from course_utils.topic_focus.dataset import real_sentences

REPO = Path(__file__).resolve().parents[1]
CH = {int(p.name[:2]): p for p in sorted((REPO / "chapters").glob("*.ipynb"))}
APPENDIX = [
    "variance",
    "derivatives",
    "pytorch",
    "rotations",
    "log_log_slopes",
    "bootstrap_precision",
    "memory",
]


def _nb(n: int) -> dict:
    return json.loads(CH[n].read_text(encoding="utf-8"))


def _src(cell: dict) -> str:
    s = cell["source"]
    return "".join(s) if isinstance(s, list) else s


def _markdown(n: int) -> str:
    return "\n".join(_src(c) for c in _nb(n)["cells"] if c["cell_type"] == "markdown")


def _outputs(n: int) -> str:
    text = []
    for c in _nb(n)["cells"]:
        for o in c.get("outputs", []):
            text.append("".join(o.get("text", "")))
            text.append("".join(o.get("data", {}).get("text/plain", "")))
    return "\n".join(text)


def _read(name: str) -> str:
    return (REPO / name).read_text(encoding="utf-8")


# --- ch4: 位置专家 ---


def test_weizhi_zhuanjia_is_a_location_expert_not_a_position_head():
    md = _markdown(4)
    assert "位置专家 (location expert)" in md
    assert "position expert" not in md
    assert "closer to the seed's" not in md  # no comparison with previous/next-token heads


# --- 银行边: the pun explained once, in chapter 1 ---


def test_bank_pun_is_explained_once_in_chapter_1_and_referred_to_elsewhere():
    assert "river" not in bank_example().translation
    ch1 = _markdown(1)
    assert "(bank-pun)=" in ch1 and "only in English" in ch1
    for n in (3, 4):
        md = _markdown(n)
        assert "[river bank]" not in md, f"chapter {n} repeats the pun as a translation"
        assert "bank-pun" in md, f"chapter {n} should point to chapter 1's explanation"
    for n in (2, 3, 4):
        assert "only in English" not in _markdown(n)
    # later chapters quote the sentence with chapter 1's plain translation, not the pun's reading
    for n in (9, 13):
        md = _markdown(n)
        assert "小明在银行边的长椅上看书" in md
        assert "river bank" not in md, f"chapter {n} translates 银行边 as a river bank"
    seed_sentences = [s for s in real_sentences() if s.text == "小明在银行边的长椅上看书"]
    assert seed_sentences and all("river" not in s.translation for s in seed_sentences)


# --- ch4: the heads experiment uses learned positional embeddings ---


def test_heads_experiment_says_it_uses_learned_positional_embeddings():
    model = NeighboursModel(V=8, T=12, d_model=8, n_heads=2)
    assert isinstance(model.pos, torch.nn.Parameter) and model.pos.requires_grad  # learned
    md = _markdown(4)
    assert "learned positional embedding" in md
    assert "{doc}`05_positions`" in md  # chapter 5, positions: a working link


# --- ch2: "almost one-hot at the start of training" is qualified and measured ---


def test_chapter_2_qualifies_the_one_hot_claim_and_measures_both_inits():
    md = _markdown(2)
    assert "Xavier" in md and "nn.Linear" in md and "1/3" in md
    rows = {
        m.group(1): (float(m.group(2)), float(m.group(3)))
        for m in re.finditer(r"^\s*(default|Xavier) \|\s+([\d.]+)\s+([\d.]+)", _outputs(2), re.M)
    }
    assert set(rows) == {"default", "Xavier"}, rows
    assert 0.25 < rows["default"][0] < 0.45  # Var(q_i) ≈ 1/3 with PyTorch's default init
    assert 0.9 < rows["Xavier"][0] < 1.1  # Var(q_i) ≈ 1 with Xavier
    assert 50 < rows["Xavier"][1] < 80 and 5 < rows["default"][1] < 10  # Var(q·k): 64 vs 64/9


def test_chapter_2_cites_britz_for_additive_vs_dot_product():
    assert "{cite:t}`britz2017massive`" in _markdown(2)
    assert "@inproceedings{britz2017massive," in _read("references.bib")


# --- glossary ---


def test_attention_sink_term_does_not_collide_with_attention_pooling():
    texts = [_read("glossary.md"), *(_markdown(n) for n in CH)]
    assert not any("注意力汇聚点" in t for t in texts)
    glossary = _read("glossary.md")
    # 注意力汇 (attention sink) beside 注意力池化 (attention pooling): two entries, told apart
    assert "Attention sink (注意力汇)" in glossary and "Attention pooling (注意力池化)" in glossary
    pooling = glossary[glossary.index("Attention pooling (注意力池化)") :][:400]
    assert "attention sink" in pooling


def test_glossary_separates_softmax_normalisation_from_layernorm():
    glossary = _read("glossary.md")
    entry = glossary[glossary.index("Normalisation (归一化)") :][:600]
    assert "层归一化" in entry and "LayerNorm" in entry
    assert len(re.findall(r"^Layer normali[sz]ation", glossary, re.M)) == 1  # listed once
    assert "Layer normalization (层归一化)" in glossary


# --- ch3: the summary's fully-masked-row claim has its version; τ for the temperature ---


def test_chapter_3_summary_states_the_pytorch_version_it_measured():
    """The version is glued from the executed notebook (``tests/test_glue.py``), so it is the
    version the fully masked row was measured with, the one the cell prints."""
    md = _markdown(3)
    summary = md[md.index("## Summary") :]
    assert re.search(r"measured with\s+PyTorch \{glue:text\}`torch_version`", summary), (
        "the summary must say which PyTorch version the fully masked row was measured with"
    )
    printed = re.search(r"PyTorch version\s*: (\d+\.\d+)", _outputs(3))
    assert printed and glued_values(_nb(3))["torch_version"] == repr(printed.group(1))


_T_IN_MATH = re.compile(r"\$[^$\n]*(?<![A-Za-z\\])T(?![_A-Za-z])[^$\n]*\$")


@pytest.mark.parametrize("where", ["ch2", "ch3", "glossary"])
def test_temperature_is_tau_not_T(where):
    text = {"ch2": lambda: _markdown(2), "ch3": lambda: _markdown(3)}.get(
        where, lambda: _read("glossary.md")
    )()
    for sentence in re.split(r"(?<=[.;:])\s", text):
        if "temperature" in sentence.lower():
            bad = [m.group(0) for m in _T_IN_MATH.finditer(sentence) if "tokens" not in sentence]
            assert not bad, f"{where}: temperature written as T in {bad}: {sentence[:160]!r}"


def test_temperature_widget_and_checker_say_tau():
    js = _read("src/course_utils/widgets/temperature_mix.js")
    assert 'label: CU.t("Temperature τ")' in js and "`τ = ${" in js
    from course_utils.exercises import ch03

    text = str(ch03.check_temperature_limits([0, 1, 0, 0], [0.25] * 4))
    assert "τ -> 0" in text and "T -> 0" not in text


# --- instructor guide ---


def test_instructor_guide_symmetry_and_dict_lookup():
    """The chapter-1 lesson plan, in instructor_guide.md or instructor/01_*.md."""
    pages = [REPO / "instructor_guide.md", *sorted((REPO / "instructor").glob("*.md"))]
    guide = "\n".join(p.read_text(encoding="utf-8") for p in pages if p.is_file())
    assert "Only if $W_Q = W_K$." not in guide
    assert re.search(r"W_Q W_K\^\\top\$\s+is symmetric", guide)
    assert "(a `KeyError`)" not in guide and 'capitals.get("china")' in guide


def _plan(name: str) -> str:
    return " ".join((REPO / name).read_text(encoding="utf-8").split())  # line breaks as spaces


def test_the_teachers_pages_quote_the_chapters_numbers():
    """What a review of the lesson plans found quoted wrong, held to the chapters' own outputs."""
    exercises = sum(
        "exercise" in cell.get("metadata", {}).get("tags", [])
        for n in range(1, 15)
        for cell in _nb(n)["cells"]
    )
    assert f"The {exercises} checked exercises of the 14 chapters" in _plan("instructor_guide.md")
    sink = glued_values(_nb(7))
    assert f"in {sink['sink_layers']} of the 30 layers token 0" in _plan(
        "instructor/07_causal_attention.md"
    )
    pad = glued_values(_nb(8))
    plan8 = _plan("instructor/08_cross_attention.md")
    assert "output step 0 (`h`)" in plan8
    assert f"the widget shows {pad['pad_first_step_cab']};" in plan8
    assert f"the mean over all steps, {pad['pad_weight_cab']})" in plan8
    from course_utils.widgets.sparse_patterns import N_LAYERS, SparsePatterns

    view = SparsePatterns("sliding window", t=32, param=4)
    heard = int(view.reach[-1].sum())  # tokens the last one heard after the view's last layer
    needed = -(-(32 - 1) // (4 - 1))  # each layer reaches w - 1 = 3 tokens further back
    plan9 = _plan("instructor/09_sparse_attention.md")
    assert needed > N_LAYERS and heard < 32
    assert f"({needed}, more than the {N_LAYERS} layers the right-hand view shows" in plan9
    assert f"after layer {N_LAYERS} it has heard {heard} of 32" in plan9


# --- notation.md agrees with the chapters ---


def test_notation_seeds_and_rounding_match_the_chapters():
    notation = _read("notation.md")
    assert (
        "Random numbers always come from a seeded generator, `rng = np.random.default_rng(0)`"
        not in (notation)
    )
    rows = re.findall(r"^\s*\|\s*(\d+)\s*\|\s*`([^`]+)`", notation, re.M)
    assert {1, 2, 3, 4} <= {int(n) for n, _ in rows}, rows  # later chapters may be listed too
    for n, snippet in rows:
        assert int(n) in CH, f"notation.md lists a seed for chapter {n}, which does not exist"
        first_code = next(_src(c) for c in _nb(int(n))["cells"] if c["cell_type"] == "code")
        assert snippet in first_code, f"notation.md says chapter {n} seeds with {snippet!r}"
    assert "4" in notation[notation.index("rounded") :][:200]  # chapter 2 prints 4 decimals


# --- ch4: MiniLM's embeddings ---


def test_minilm_description_includes_token_type_embeddings_and_layernorm():
    md = _markdown(4)
    cell = md[md.index("## Opening a real model") :][:1500]
    assert "token-type" in cell and "LayerNorm" in cell
    code = _read("src/course_utils/pretrained/minilm.py")
    assert "token_type_embeddings" in code and "ln_embeddings" in code


# --- prerequisites: the appendix ---


def test_intro_states_the_prerequisites_and_links_the_appendix():
    intro = _read("intro.md")
    assert "You do not need to know what a neural network is" not in intro
    assert "{doc}`appendix/index`" in intro


def test_appendix_pages_are_in_the_toc_executed_and_tested_by_nbval():
    toc = _read("_toc.yml")
    back = yaml.safe_load(toc)["parts"][-1]
    assert back["caption"] == "Back matter"
    appendix = next(c for c in back["chapters"] if c["file"] == "appendix/index")
    assert [s["file"] for s in appendix["sections"]] == [f"appendix/{p}" for p in APPENDIX]
    for page in APPENDIX:
        nb = json.loads((REPO / "appendix" / f"{page}.ipynb").read_text(encoding="utf-8"))
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), page
        assert all(c["outputs"] for c in code[1:]), f"{page}: a code cell has no output"
    makefile = _read("Makefile")
    assert re.search(r"--nbval\b[^\n]* chapters appendix\b", makefile)


@pytest.mark.parametrize(("chapter", "page"), [(2, "variance"), (2, "derivatives"), (4, "pytorch")])
def test_chapters_link_the_appendix_where_the_idea_is_used(chapter, page):
    assert f"{{doc}}`../appendix/{page}`" in _markdown(chapter)


# --- forward references ---


def _rendered_texts() -> list[tuple[str, str]]:
    texts = [
        (n, _read(n)) for n in ("intro.md", "glossary.md", "notation.md", "instructor_guide.md")
    ]
    texts += [(CH[n].name, _markdown(n)) for n in CH]
    return texts


def test_no_forward_reference_by_number_to_a_chapter_that_does_not_exist():
    last = max(CH)
    problems = []
    for where, text in _rendered_texts():
        for m in re.finditer(r"\b[Cc]hapters?\s+(\d+)(?:\s*(?:–|-|to|and)\s*(\d+))?", text):
            numbers = [int(g) for g in m.groups() if g]
            if max(numbers) > last:
                problems.append(f"{where}: {text[max(0, m.start() - 40) : m.end() + 20]!r}")
    intro = _read("intro.md")
    for m in re.finditer(r"^\|[^|\n]*\|\s*(\d+)\s*[–-]\s*(\d+)\s*\|", intro, re.M):
        if int(m.group(2)) > last:
            problems.append(f"intro.md table: chapters {m.group(1)}–{m.group(2)}")
    assert not problems, "\n".join(problems)


# --- references ---


def test_references_are_in_alphabetical_order():
    from pybtex.database import parse_file
    from pybtex.plugin import find_plugin

    import course_site.bibstyle  # noqa: F401  (registers the style the book uses)

    config = yaml.safe_load(_read("_config.yml"))
    style_name = config["sphinx"]["config"].get("bibtex_default_style", "alpha")
    assert "course_site.bibstyle" in config["sphinx"]["local_extensions"]  # _ext/
    data = parse_file(str(REPO / "references.bib"))
    style = find_plugin("pybtex.style.formatting", style_name)()
    keys = [entry.key for entry in style.format_bibliography(data).entries]

    def first_author(key: str) -> str:
        person = data.entries[key].persons["author"][0]
        return " ".join(person.last_names).replace("{", "").replace("}", "").lower()

    authors = [first_author(k) for k in keys]
    assert authors == sorted(authors), list(zip(keys, authors, strict=True))


# --- ch4: the seed's class as code to read ---


def test_chapter_4_shows_the_class_source_and_heads_equal_the_fused_module():
    md = _markdown(4)
    assert "```{literalinclude} ../src/course_utils/multihead.py" in md
    assert ":pyobject: MultiHeadAttention" in md
    assert "class MultiHeadAttention(" in _read("src/course_utils/multihead.py")
    assert "mixed by W_O == the fused module: True" in _outputs(4)
