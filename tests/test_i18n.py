"""course_utils.i18n: the package speaks Chinese under COURSE_LANG=zh (issue 20).

* the language setting (``COURSE_LANG``, :func:`set_language`) and the one lookup ``t`` (with
  ``t_literal``, its pass-through of finished text by exact key);
* the rule "no untranslated English" and the glossary rule, each tested on its own;
* the catalogue, extracted statically: every literal first argument of ``t(...)`` in the package
  and the chapters has a zh entry with the same fields, ``t`` is given nothing but literals outside
  the documented pass-throughs, no entry is unused; every entry follows the glossary and has no
  English left;
* widgets: under ``set_language("zh")`` every widget of every chapter, created as the notebooks
  create it, has Chinese text traits, and its ES module carries the Chinese of every ``CU.t``
  string of its JavaScript (checked in Node as well, where it runs);
* feedback: every checker's feedback for right, wrong and broken answers is Chinese under zh;
* figures: matplotlib text from notebook cells is drawn in Chinese, tick labels (data) are not;
* English is unchanged: the English ES module is the shared prelude plus the widget file, and
  English feedback is the English text.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_site.zh_lint import glossary_terms, glossary_violations, untranslated_english
from course_utils import i18n
from course_utils.i18n import (
    catalogue,
    get_language,
    js_messages,
    set_language,
    t,
    t_literal,
)

from .system_tools import require

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "course_utils"
WIDGET_DIR = SRC / "widgets"
JS_FILES = sorted(WIDGET_DIR.glob("*.js"))


@pytest.fixture
def zh():
    set_language("zh")
    yield
    set_language(None)


@pytest.fixture
def en():
    set_language("en")
    yield
    set_language(None)


# ---- the language setting ---------------------------------------------------------------------


def _stable_id(value: object, width: int) -> str:
    """A test id that is the same in every pytest-xdist worker: no memory addresses."""
    name = getattr(value, "__qualname__", None)
    text = name if callable(value) and name else str(value)
    return re.sub(r" at 0x[0-9a-f]+", "", text)[:width]


@pytest.mark.parametrize(
    ("value", "lang"),
    [
        ("zh", "zh"),
        ("zh_CN", "zh"),
        ("zh-CN", "zh"),
        ("zh_CN.UTF-8", "zh"),
        ("ZH", "zh"),
        ("", "en"),
        ("en", "en"),
        ("fr", "en"),
        ("zh_TW", "en"),
    ],
)
def test_course_lang_chooses_the_language(monkeypatch, value, lang):
    set_language(None)
    monkeypatch.setenv("COURSE_LANG", value)
    assert get_language() == lang


def test_unset_course_lang_is_english(monkeypatch):
    set_language(None)
    monkeypatch.delenv("COURSE_LANG", raising=False)
    assert get_language() == "en"


def test_set_language_overrides_the_environment(monkeypatch):
    monkeypatch.setenv("COURSE_LANG", "zh")
    set_language("en")
    try:
        assert get_language() == "en"
        set_language("zh-CN")
        assert get_language() == "zh"
    finally:
        set_language(None)
    assert get_language() == "zh"  # back to COURSE_LANG


@pytest.mark.parametrize(("bad", "error"), [("klingon", ValueError), (3, TypeError)])
def test_set_language_rejects_unknown_languages(bad, error):
    with pytest.raises(error, match="lang must be"):
        set_language(bad)


# ---- t and t_literal -----------------------------------------------------------------------------


def test_t_formats_named_fields_in_both_languages(en):
    key = "all {n} cases match kv_cache.max_batch"
    assert t(key, n=3) == "all 3 cases match kv_cache.max_batch"
    set_language("zh")
    assert t(key, n=3) == "全部 3 个用例都与 kv_cache.max_batch 一致"


def test_missing_message_falls_back_to_english(zh):
    assert t("a message nobody translated: {x}", x=1.5) == "a message nobody translated: 1.5"
    assert t_literal("a message nobody translated") == "a message nobody translated"


def test_t_formats_the_same_values_in_chinese(zh):
    text = t("entry {where} is {w}: weights are never negative", where="[0, 1]", w=-1.11)
    assert text == "元素 [0, 1] 为 -1.11：权重永远不会是负数"
    # a message inside a message is made with t itself ("row 2" -> "第 2 行"), no space left
    # between Chinese characters ("第 2 行 之和" -> "第 2 行之和")
    row = t("row {row}", row=2)
    text = t(
        "{label} sums to {total}, expected {want}{reason}", label=row, total=1.37, want=1, reason=""
    )
    assert text == "第 2 行之和为 1.37，应为 1"
    # a field that is a label of the catalogue is translated, unless the Chinese quotes it as code
    assert t(
        "{name} has shape {got}, expected {want}", name="weights", got="(2,)", want="(3,)"
    ) == ("权重的形状为 (2,)，应为 (3,)")
    assert t("{name} is still {answer!r}", name="weights", answer=None) == "`weights` 仍然是 None"
    assert t_literal("  correct\n") == "  正确\n"  # white space around is kept
    assert t_literal(r"measured, after dividing by $\sqrt{d_k}$") == (
        catalogue("zh", "messages")[r"measured, after dividing by $\sqrt{{d_k}}$"].format()
    )


def test_t_is_str_format_in_english(en):
    for key in list(catalogue("zh", "messages"))[:50]:
        assert t_literal(key.replace("{{", "{").replace("}}", "}")) == key.replace(
            "{{", "{"
        ).replace("}}", "}")
    assert t("{name} is still {answer!r}", name="x", answer=None) == "x is still None"


# ---- the rules themselves ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "分数 = Q Kᵀ，d_k = 64；用 np.tril(...) 和 PyTorch",
        "查询（Query）与键（Key）",
        "填充掩码（key-padding mask）",
        "你的函数抛出了 ZeroDivisionError: division by zero",
        "测试用例：q_sat = (2, 0, 0), k_cat = (2, 0, 0)",
        "'the cat' 和 “the dog” 是数据",
        "MHA、GQA、MQA、RoPE、GiB、LayerNorm、FLOPs",
        "权重 = softmax(缩放)；weights @ V；x.var(-1)",
        "True 表示“可以关注”；dtype 为 int64",
        "在 $\\sqrt{d_k}$ 处",
        "已发表的配置（Touvron et al., 2023）",  # a citation names people
        "已发表的配置（Llama Team, AI @ Meta, 2024）",
        "见 (Dao and Gu, 2024) 与 (Ainslie et al., 2023a)",
    ],
)
def test_rule_allows_code_names_symbols_and_quoted_data(text):
    assert untranslated_english(text) == []


@pytest.mark.parametrize(
    ("text", "runs"),
    [
        ("第 2 步 not yet right：权重", ["not yet right"]),
        ("hint: 用 np.tril", ["hint"]),
        ("Query angle", ["Query angle"]),
        ("查询 weights of one example row", ["weights of one example row"]),
        ("键（the key）", ["the key"]),  # parentheses hide only glossary terms
        ("your code raised ZeroDivisionError: division by zero", ["your code raised"]),
        ("cache; expected", ["cache; expected"]),
        ("一个 cache，两个 layers", ["cache", "layers"]),
        ("（see the paper, 2023）", ["see the paper"]),  # a year alone does not make a citation
    ],
)
def test_rule_finds_english_that_should_be_chinese(text, runs):
    assert untranslated_english(text) == runs


def test_glossary_rule():
    # softmax stays softmax in running text (d2l-zh); its long name is the glossary's alias only
    assert glossary_violations("apply softmax to each row", "对每一行应用 softmax") == []
    assert glossary_violations("apply softmax to each row", "对每一行应用归一化指数函数") == [
        ("Softmax", "softmax")
    ]
    assert glossary_violations("the keys are masked", "这些键被屏蔽了") == []  # the verb
    assert glossary_violations("Keys and values", "键和数") == [("Value", "值")]
    # code is not prose: softmax(...), ~mask, `window`, d_key
    assert (
        glossary_violations("softmax(logits / temperature)", "softmax(logits / temperature)") == []
    )
    assert glossary_violations("flip it with ~mask", "用 ~mask 翻转") == []
    assert glossary_violations("the key-padding mask", "填充掩码") == []
    assert glossary_terms()["Query"] == "查询"


# ---- the catalogue -----------------------------------------------------------------------------


def _entries():
    return [
        (section, key, value)
        for section in ("messages", "widgets_js")
        for key, value in catalogue("zh", section).items()
    ]


def _sample(value: str) -> str:
    """A zh value with its placeholders filled with a number (what a reader sees)."""
    return re.sub(r"\{[^{}]*\}", "0", value.replace("{{", "{").replace("}}", "}"))


def test_catalogue_file_is_valid_and_sorted():
    data = json.loads((SRC / "i18n" / "zh.json").read_text(encoding="utf-8"))
    assert set(data) == {"//", "messages", "widgets_js"}
    for section in ("messages", "widgets_js"):
        assert list(data[section]) == sorted(data[section]), f"{section} is not sorted"
        assert len(data[section]) > 100


@pytest.mark.parametrize(("section", "key", "value"), _entries(), ids=lambda x: _stable_id(x, 40))
def test_entry_is_chinese_follows_the_glossary_and_formats(section, key, value):
    # Chinese, unless the English is itself only names and symbols (RoPE, LayerNorm, τ -> inf)
    assert re.search(r"[\u4e00-\u9fff]", value) or not untranslated_english(_sample(key)), value
    assert untranslated_english(_sample(value)) == [], (key, value)
    assert glossary_violations(key, value) == [], (key, value)
    assert re.sub(r"\{[^{}]*\}|\{\{|\}\}", "", key).strip(), f"{key!r}: a key needs literal text"


# ---- the keys, extracted statically -------------------------------------------------------------

#: Where ``t`` may be given something other than a literal: (file, function) of the documented
#: pass-throughs. ``t_literal`` looks finished text up by exact key; ``run_cases`` formats its
#: ``passed`` argument (``run_array_cases`` hands its own on to it), ``check_number`` its
#: ``wrong`` template and ``described_cases`` its ``template``, which every call site gives as a
#: literal (collected below).
PASS_THROUGH = {
    ("i18n/__init__.py", "t_literal"),
    ("exercises/_learner.py", "run_cases"),
    ("exercises/_checks.py", "run_array_cases"),
    ("exercises/_checks.py", "described_cases"),
    ("exercises/_checks.py", "check_number"),
}


def _code_cells() -> list[tuple[str, ast.Module]]:
    out = []
    notebooks = sorted((ROOT / "chapters").glob("*.ipynb")) + sorted(
        (ROOT / "appendix").glob("*.ipynb")
    )
    for nb_path in notebooks:
        for i, cell in enumerate(json.loads(nb_path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] == "code":
                code = "".join(cell["source"])
                code = "\n".join(x for x in code.splitlines() if x.lstrip()[:1] not in "%!")
                out.append((f"{nb_path.name}[{i}]", ast.parse(code)))
    return out


@functools.cache
def _sources() -> tuple[tuple[str, ast.Module], ...]:
    """The package's modules (from the package imported, so a copy can be checked) and the
    chapters' code cells, parsed."""
    package = Path(i18n.__file__).resolve().parents[1]
    out = [
        (path.relative_to(package).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(package.rglob("*.py"))
    ]
    return tuple(out + _code_cells())


def _t_calls() -> list[tuple[str, str, ast.Call]]:
    """Every call ``t(...)`` (and ``run_cases(...)``'s ``passed``, ``described_cases(...)``'s
    template, ``check_number(...)``'s ``wrong`` when it is a template) as (file, enclosing
    function, the argument node that is the template)."""
    out = []

    def argument(call: ast.Call, index: int, name: str) -> ast.AST | None:
        given = call.args[index] if len(call.args) > index else None
        return next((k.value for k in call.keywords if k.arg == name), given)

    def visit(where: str, node: ast.AST, func: str, has_t: bool, defs: set[str]) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef) else func
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
                if child.func.id == "t" and has_t:
                    out.append((where, func, child.args[0] if child.args else child))
                elif child.func.id in ("run_cases", "run_array_cases"):
                    out.append((where, func, argument(child, 5, "passed")))
                elif child.func.id == "described_cases":
                    out.append((where, func, argument(child, 0, "template")))
                elif child.func.id == "check_number":
                    wrong = argument(child, 4, "wrong")
                    # a lambda or a def of the answer builds its own message with t
                    if isinstance(wrong, ast.Constant) or (
                        isinstance(wrong, ast.Name) and wrong.id not in defs
                    ):
                        out.append((where, func, wrong))
            visit(where, child, inner, has_t, defs)

    for where, tree in _sources():
        defs = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
        visit(where, tree, "", where == "i18n/__init__.py" or _imports_t(tree), defs)
    return out


def _imports_t(tree: ast.Module) -> bool:
    """Whether this module (or notebook cell) imports ``t`` from ``course_utils.i18n`` (another
    ``t`` is another function, such as a local helper)."""
    return any(
        isinstance(n, ast.ImportFrom)
        and (n.module or "").endswith("i18n")
        and any(a.name == "t" and a.asname is None for a in n.names)
        for n in ast.walk(tree)
    )


def _literal(node: ast.AST | None, tree_of: dict[str, ast.Module], where: str, func: str):
    """The string a template argument stands for: a literal, or a name its function (or module)
    assigns one literal to (``passed = "all {n} cases right"``); else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        tree = tree_of[where]
        scope = next(
            (
                f
                for f in ast.walk(tree)
                if isinstance(f, ast.FunctionDef)
                and f.name == func
                and any(n is node for n in ast.walk(f))
            ),
            tree,
        )
        values = {
            n.value.value
            for n in ast.walk(scope)
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str)
            and any(isinstance(x, ast.Name) and x.id == node.id for x in n.targets)
        }
        if len(values) == 1:
            return values.pop()
    return None


def _t_keys() -> dict[str, list[str]]:
    """Every template given to ``t`` as a literal -> where (static extraction of the keys)."""
    trees = dict(_sources())
    keys: dict[str, list[str]] = {}
    for where, func, node in _t_calls():
        key = _literal(node, trees, where, func)
        if key:  # run_cases(..., "") shows no message
            keys.setdefault(key, []).append(where)
    return keys


def test_t_is_given_literals():
    """(c) ``t`` takes a literal template (or a name bound to one), so its key can be found."""
    trees = dict(_sources())
    bad = [
        (where, func, ast.unparse(node))
        for where, func, node in _t_calls()
        if (where, func) not in PASS_THROUGH and _literal(node, trees, where, func) is None
    ]
    assert not bad, f"t(...) given something that is not a literal template: {bad}"


def test_t_is_not_shadowed_where_it_is_called():
    """A parameter or a loop variable named ``t`` in a function that calls ``t(...)`` would make
    the call fail (``'int' object is not callable``) exactly when a message is shown."""
    bad = []
    for where, tree in _sources():
        if not _imports_t(tree):
            continue
        for f in ast.walk(tree):
            if not isinstance(f, ast.FunctionDef | ast.Lambda):
                continue
            inner = list(ast.walk(f))
            calls = any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "t"
                for n in inner
            )
            binds = any(
                (isinstance(n, ast.Name) and n.id == "t" and isinstance(n.ctx, ast.Store))
                or (isinstance(n, ast.arg) and n.arg == "t")
                for n in inner
            )
            if calls and binds:
                bad.append((where, getattr(f, "name", "lambda"), f.lineno))
    assert not bad


def test_every_t_key_has_an_entry():
    """(a) every literal template of ``t`` in the package and the chapters has a zh entry."""
    messages = catalogue("zh", "messages")
    missing = {k: v for k, v in _t_keys().items() if k not in messages}
    assert not missing, f"t(...) templates without a zh entry: {missing}"


def test_entries_have_the_fields_of_their_key():
    """(b) a zh entry formats exactly the key's named fields (same conversions and specs)."""
    bad = []
    for key, value in catalogue("zh", "messages").items():
        fields = i18n.key_fields(key)
        if any(not f or f.split("!")[0].split(":")[0].isdigit() for f in fields):
            bad.append((key, "positional field: name every field"))
        elif set(i18n.key_fields(value)) != set(fields):
            bad.append((key, value))
    assert not bad


#: Fields a message shows after the code changed them ("top_left".replace("_", "-")).
DERIVED = {"top-left": "top_left", "bottom-right": "bottom_right"}


def test_no_entry_is_unused():
    """(d) an entry is a template ``t`` is given; an entry without fields may also be finished
    text the code passes through ``t_literal`` (a string literal of the package or of a chapter,
    a topic name, a pattern name, a note of model_configs.json, the ``what`` of a saved benchmark
    a chapter prints and the model names of its rows)."""
    from course_utils.heads.measure import PATTERNS
    from course_utils.model_configs import MODEL_CONFIGS
    from course_utils.topic_focus.dataset import TOPICS

    literals = {
        n.value
        for _, tree in _sources()
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }
    literals |= set(TOPICS) | set(PATTERNS) | {c.note for c in MODEL_CONFIGS.values() if c.note}
    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    for path in results.glob("*.json"):
        saved = json.loads(path.read_text(encoding="utf-8"))
        literals.add(saved.get("what", ""))
        # the model names of a saved table's rows (chapter 7 prints them through t_literal)
        rows = saved.get("rows", [])
        literals |= {r["model"] for r in rows if isinstance(r, dict) and "model" in r}
    literals = {x.replace("{", "{{").replace("}", "}}") for x in literals}
    used = set(_t_keys())
    stale = [
        k
        for k in catalogue("zh", "messages")
        if k not in used
        and (i18n.key_fields(k) or (k not in literals and DERIVED.get(k) not in literals))
    ]
    assert not stale, f"catalogue entries no code uses: {stale}"


def test_js_scanner_reads_literals_and_templates():
    src = 'CU.t(`Step ${i + 1}: ${a.map((x) => `${x}`).join(", ")}` + "!"); CU.t("A {b}")'
    assert js_messages(src) == ["Step {}: {}!", "A {{b}}"]
    with pytest.raises(ValueError, match="literals"):
        js_messages("CU.t(name)")


def test_visible_js_strings_go_through_cu_t():
    """A capitalised English phrase passed to a label, a caption or textContent must be wrapped."""
    sinks = re.compile(
        r"(label:|setText\([^,]+,|textContent =|\"aria-label\",|CU\.html\([^)]*,)\s*"
        r"[`\"]([A-Z][a-z]+( [a-z]+)+)"
    )
    found = [(js.name, m.group(2)) for js in JS_FILES for m in sinks.finditer(js.read_text())]
    assert not found


# ---- widgets -------------------------------------------------------------------------------------


def _chapter_widgets():
    """Every widget of every chapter, with the notebooks' own titles and text arguments."""
    import torch

    from course_utils.data import bank_example, english_example, query_plane_example
    from course_utils.experiments.reversal import cross_attention_rows, train_reversal
    from course_utils.transformer import TransformerBlock
    from course_utils.widgets import (
        BlockTracer,
        CrossAttentionView,
        FourSteps,
        GenerationStepper,
        HeadGrouping,
        KVCacheCalculator,
        KVCacheCompare,
        QueryKeyPlane,
        RopeDial,
        ScalingExplorer,
        SentenceAttention,
        SparsePatterns,
        TemperatureMix,
        TilingExplorer,
    )

    bank, cat, plane = bank_example(), english_example(), query_plane_example()
    out = [
        QueryKeyPlane(
            plane.keys,
            plane.values,
            key_labels=list(plane.labels),
            title="Soft lookup in a plane: move the query",
        ),
        SentenceAttention(
            [
                ("".join(bank.tokens), list(bank.tokens), bank.X),
                (cat.translation, list(cat.tokens), cat.X),
            ],
            w_q=bank.W_Q,
            w_k=bank.W_K,
            title="Self-attention over a sentence: pick a query token",
        ),
        ScalingExplorer(
            seed=0,
            title="Scores and softmax as d_k grows: without scaling (left), with 1/√d_k (right)",
        ),
        TemperatureMix(
            plane.keys @ plane.query / np.sqrt(2),
            plane.values,
            labels=list(plane.labels),
            title="One row of scores at different temperatures: weights (left) and output (right)",
        ),
        FourSteps.example(),
        RopeDial(title="RoPE: one dial per pair of dimensions"),
        GenerationStepper(
            [
                {"name": "看书真好 (the seed's table)", "tokens": list("看书真好")},
                {"name": "the cat sat. (tiny model, block 0, head 0)", "tokens": list("thecat")},
            ],
            step=2,
        ),
        SparsePatterns(
            "window + global",
            t=24,
            param=3,
            extra=1,
            title="Sparse patterns: the mask, its cost, and the receptive field of the last token",
        ),
        KVCacheCalculator("Llama 3 8B", context=32768, memory_gib=40),
        HeadGrouping(
            12,
            measured=[0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
            measured_label="MiniLM, output change of mean-pooling alone (mean of 6 layers)",
        ),
        KVCacheCompare(),
        TilingExplorer.example(),
    ]
    torch.manual_seed(0)
    blocks = [TransformerBlock(16, 4, 64).double().eval() for _ in range(2)]
    text = "abcab"
    out.append(
        BlockTracer(
            blocks,
            torch.randn(len(text), 16, dtype=torch.float64),
            list(text),
            answers=[
                t("model: '{c}' occurs {p} time(s); true count: {n}", c=c, p=2, n=2) for c in text
            ],
            title="One token's vector through the two trained blocks",
        )
    )
    (run,) = train_reversal(seeds=(0,), steps=2, eval_every=1, batch=4)
    examples = cross_attention_rows(run.model, ["abc"])
    examples += cross_attention_rows(run.model, ["deaf", "cab"], t_k=8)
    examples += cross_attention_rows(run.model, ["deaf", "cab"], t_k=8, use_padding_mask=False)
    out.append(
        CrossAttentionView(
            examples, title="Cross-attention: where each output step looks in the source"
        )
    )
    return out


@pytest.fixture(scope="module")
def zh_widgets():
    set_language("zh")
    try:
        yield _chapter_widgets()
    finally:
        set_language(None)


def _text_values(widget) -> list[str]:
    """Every value of the widget's reader-facing text traits (Text, and lists of Text)."""
    import traitlets

    from course_utils.widgets._base import Text

    values = []
    for name, trait in widget.traits(sync=True).items():
        value = getattr(widget, name)
        if isinstance(trait, Text):
            values.append(value)
        elif isinstance(trait, traitlets.List) and isinstance(trait._trait, Text):
            values.extend(value)
    return [v for v in values if v]


# Both tests of the zh_widgets fixture on one xdist worker (--dist loadgroup): it takes 15-18 s.
@pytest.mark.xdist_group("zh_widgets")
def test_widget_text_traits_are_chinese(zh_widgets):
    bad = {}
    for w in zh_widgets:
        for value in _text_values(w):
            runs = untranslated_english(value)
            if runs:
                bad.setdefault(type(w).__name__, []).append((value, runs))
        if w.title or w.description:
            assert re.search(r"[\u4e00-\u9fff]", w.title + w.description), type(w).__name__
    assert not bad


def test_widgets_of_the_pretrained_models_are_chinese(zh):
    """Chapter 4's head explorer (MiniLM) and chapter 13's topic widget, as in the notebooks."""
    from course_utils.heads.measure import PATTERNS
    from course_utils.topic_focus import make_split, real_sentences, train_classifier
    from course_utils.widgets import HeadExplorer, TopicWordFocus

    found = [
        t("highest {pattern} score ({w:.2f})", pattern=p, w=w)
        for p, w in zip(PATTERNS[:2], (0.93, 0.88), strict=True)
    ]
    notes = {(0, 2): "; ".join(found)}  # as chapter 4 writes them
    explorer = HeadExplorer(
        ["The cat sat on the mat.", "Snow, snow and more snow."],
        layer=0,
        head=2,
        notes=notes,
        title="all-MiniLM-L6-v2: one head's attention map",
    )
    result = train_classifier(make_split(n_train=300, n_test=60, seed=0), seed=0, steps=40)
    focus = TopicWordFocus(
        result,
        [real_sentences()[i] for i in (0, 44)],
        k_max=2,
        option_index=1,
        title="Which words does the decision rest on?",
    )
    assert explorer.head_notes["0-2"] == "前一个词元分数最高（0.93）; 后一个词元分数最高（0.88）"
    values = {explorer: [*_text_values(explorer), *explorer.head_notes.values()]}
    values[focus] = _text_values(focus)
    for w in (explorer, focus):
        for value in values[w]:
            assert untranslated_english(value) == [], (type(w).__name__, value)
        shipped = _messages_in_esm(w._esm)
        own = (WIDGET_DIR / f"{w._widget_file}.js").read_text(encoding="utf-8")
        assert set(js_messages(own)) <= set(shipped)


SHARED_JS = (WIDGET_DIR / "_shared.js").read_text(encoding="utf-8")


def _messages_in_esm(esm: str) -> dict[str, str]:
    m = re.search(r"\nCU\.addMessages\((\{.*?\n\})\);\n", esm, flags=re.S)
    assert m, "the zh ES module has no CU.addMessages"
    return json.loads(m.group(1))


@pytest.mark.xdist_group("zh_widgets")
def test_every_widget_js_string_has_chinese_in_its_module(zh_widgets):
    for w in zh_widgets:
        stem = w._widget_file
        own = (WIDGET_DIR / f"{stem}.js").read_text(encoding="utf-8")
        shipped = _messages_in_esm(w._esm)
        used = set(js_messages(own))
        assert used and used <= set(shipped), (stem, used - set(shipped))
        # only what this widget uses, its own strings and the shared prelude's (the scroll hint)
        assert set(shipped) <= used | set(js_messages(SHARED_JS)), (stem, set(shipped) - used)
        for value in shipped.values():
            assert untranslated_english(_sample(value)) == [], (stem, value)


def test_english_widgets_keep_the_english_module(en):
    from course_utils.widgets import RopeDial
    from course_utils.widgets._base import widget_esm

    w = RopeDial(title="RoPE: one dial per pair of dimensions")
    assert w._esm == widget_esm("rope_dial")
    assert "\nCU.addMessages(" not in w._esm
    assert w.title == "RoPE: one dial per pair of dimensions"


def test_a_learner_can_switch_to_chinese_before_creating_a_widget(en):
    from course_utils.widgets import RopeDial

    set_language("zh")
    w = RopeDial(title="RoPE: one dial per pair of dimensions")
    assert w.title == "RoPE：每对维度一个表盘"
    assert "\nCU.addMessages(" in w._esm


def test_cu_t_translates_formatted_text_in_javascript(zh, tmp_path):
    from course_utils.widgets._base import widget_esm

    module = tmp_path / "w.mjs"
    module.write_text(widget_esm("temperature_mix", "zh") + "\nexport { CU };\n", encoding="utf-8")
    probe = [
        "Temperature τ",
        "Softmax weights at temperature 1.00: 0.66, 0.24, 0.09",
        "τ = 0.50: weights 0.87, 0.12, 0.02; output = Σ weight × value = (0.48, 0.05)",
        "something not in the catalogue",
    ]
    script = (
        f"import({json.dumps(module.as_uri())}).then((m) => "
        f"console.log(JSON.stringify({json.dumps(probe)}.map((s) => m.CU.t(s)))));"
    )
    run = subprocess.run(
        [require("node"), "-e", script], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == [
        "温度 τ",
        "温度 1.00 下的 softmax 权重：0.66, 0.24, 0.09",
        "τ = 0.50：权重 0.87, 0.12, 0.02；输出 = Σ 权重 × 值 = (0.48, 0.05)",
        "something not in the catalogue",
    ]


# ---- exercise feedback ---------------------------------------------------------------------------


def _feedback_texts(fb) -> list[str]:
    return [fb.headline, *fb.messages, *fb.hints, str(fb)]


def _checkers():
    import importlib

    out = []
    for stem in [*(f"ch{n:02d}" for n in range(1, 14)), "appendix"]:
        module = importlib.import_module(f"course_utils.exercises.{stem}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("check_") and fn.__module__ == module.__name__:
                out.append((f"{stem}.{name}", fn))
    return out


def _raises(*args):
    return 1 / 0


BROKEN = {
    "starter": ...,
    "none": None,
    "text": "abc",
    "crashes": _raises,
    "returns None": lambda *a: None,
    "ragged": lambda *a: [[1, 2], [3]],
    "zeros": lambda *a: np.zeros(3),
    "number": 7,
}


@pytest.mark.parametrize(("name", "checker"), _checkers(), ids=[c[0] for c in _checkers()])
def test_feedback_for_broken_answers_is_chinese(zh, name, checker):
    required = [
        p
        for p in inspect.signature(checker).parameters.values()
        if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD
    ]
    for label, answer in BROKEN.items():
        fb = checker(*[answer] * len(required))
        for text in _feedback_texts(fb):
            assert untranslated_english(text) == [], (name, label, text)


def _catalogue_cases():
    import tests.test_exercises_catalogue as cat

    cases = []
    for n in ("01", "02", "03", "04"):
        cases += [(f"right {c[0]}", c[1], c[2]) for c in getattr(cat, f"RIGHT_CH{n}")]
        cases += [(f"wrong {c[0]}", c[1], c[2]) for c in getattr(cat, f"WRONG_CH{n}")]
    import tests.test_exercise_catalogue_ch05_13 as cat513

    cases += [(f"right {c[0]}", c[1], c[2]) for c in cat513.RIGHT]
    cases += [(f"wrong {c[0]}", c[1], c[2]) for c in cat513.WRONG]
    return [c for c in cases if not isinstance(c[2], str)]  # "floats"/"string": built in the test


@pytest.mark.parametrize(
    ("name", "checker", "answer"), _catalogue_cases(), ids=lambda x: _stable_id(x, 30)
)
def test_feedback_for_right_and_wrong_answers_is_chinese(zh, name, checker, answer):
    fb = checker(*answer) if isinstance(answer, tuple) else checker(answer)
    for text in _feedback_texts(fb):
        assert untranslated_english(text) == [], (name, text)


def test_english_feedback_is_unchanged(en):
    from course_utils.exercises import ch01

    fb = ch01.check_dot_product(lambda q, k: q * k)
    assert fb.headline == "✗ dot product: not yet right"
    set_language("zh")
    fb = ch01.check_dot_product(lambda q, k: q * k)
    assert fb.headline == "✗ 点积：还不对"
    assert str(fb).count("提示：") == len(fb.hints)


# ---- figures ------------------------------------------------------------------------------------


def test_figure_text_from_a_notebook_cell_is_drawn_in_chinese(zh):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course_utils.i18n.figures import drawn_texts

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="attention weight")
    ax.set_title("training step")
    ax.set_xlabel("layer")
    ax.set_xticks([0, 1], ["next", "self"])  # tick labels are data (tokens): not translated
    ax.legend()
    fig.suptitle("a title nobody translated")
    drawn = drawn_texts(fig)
    assert {"训练步数", "层", "注意力权重", "a title nobody translated"} <= set(drawn)
    assert {"next", "self"} <= set(drawn) and "后一个词元" not in drawn
    assert ax.get_title() == "training step"  # the figure keeps its English text
    set_language("en")
    assert "training step" in drawn_texts(fig) and "训练步数" not in drawn_texts(fig)
    plt.close(fig)


def test_a_chinese_tick_label_is_drawn_in_the_cjk_font(zh):
    """A tick label a cell wrote in Chinese (``t("block {i}")``: 第 0 块) is drawn with the CJK
    font: in the default font it was a row of empty boxes (tofu). Tick labels stay untranslated."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import RendererAgg

    from course_utils.fonts import COURSE_CJK_FAMILY

    fig, ax = plt.subplots()
    ax.set_xticks([0, 1], [i18n.t("block {i}", i=i) for i in (0, 1)])
    ax.set_yticks([0], ["next"])
    families: dict[str, list[str]] = {}
    draw_text = RendererAgg.draw_text

    def spy(self, gc, x, y, s, prop, *args, **kwargs):
        families[s] = prop.get_family()
        return draw_text(self, gc, x, y, s, prop, *args, **kwargs)

    RendererAgg.draw_text = spy
    try:
        fig.canvas.draw()
    finally:
        RendererAgg.draw_text = draw_text
        plt.close(fig)
    assert "第 0 块" in families and COURSE_CJK_FAMILY in families["第 0 块"], families
    assert "next" in families and "后一个词元" not in families  # data: not translated


def test_alt_text_of_a_heatmap_is_chinese(zh):
    from course_utils.plotting import describe_attention

    text = describe_attention([[0.75, 0.25], [0.5, 0.5]], ["看", "书"])
    want = "注意力权重的热力图，2 个查询（行）× 2 个键（列）。"
    assert text == want + "每个查询最强的键：看 → 看 (0.75); 书 → 看 (0.50)。"
    assert untranslated_english(text) == []


# ---- table columns that line up in both languages (text_columns, pad_to_columns) ----------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "sliding window, w = 4",
        "滑动窗口，w = 4",
        "块稀疏窗口，b = w = 4",
        "“边”能看到",
        "（1 个线程）",
        "MiniLM 第 0 层：",
        "e\u0301",  # a combining accent takes no column
        "ｗｉｄｅ",  # full-width Latin
    ],
)
def test_text_columns_agree_with_wcwidth(text):
    """Oracle: wcwidth (prompt_toolkit's and IPython's measure of a terminal's columns)."""
    import wcwidth

    assert i18n.text_columns(text) == wcwidth.wcswidth(text)


@pytest.mark.parametrize(
    ("text", "width", "align", "want"),
    [
        ("window", 10, "<", "window    "),
        ("窗口", 10, "<", "窗口      "),
        ("窗口", 6, ">", "  窗口"),
        ("滑动窗口，w = 4", 38, "<", "滑动窗口，w = 4" + " " * 23),
        ("too wide for it", 4, "<", "too wide for it"),
        ("宽", 1, ">", "宽"),
        ("", 3, ">", "   "),
    ],
)
def test_pad_to_columns_pads_by_columns(text, width, align, want):
    got = i18n.pad_to_columns(text, width, align)
    assert got == want
    assert i18n.text_columns(got) == max(width, i18n.text_columns(text))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: i18n.pad_to_columns("x", 4, "^"),
            ValueError,
            r"align must be '<' or '>'; got '\^'",
        ),
        (lambda: i18n.pad_to_columns("x", -1), ValueError, "width must be >= 0; got -1"),
        (lambda: i18n.pad_to_columns("x", 2.0), TypeError, "width must be an int; got float 2.0"),
        (lambda: i18n.pad_to_columns(3, 2), TypeError, "text must be a str; got int 3"),
        (lambda: i18n.text_columns(None), TypeError, "text must be a str; got NoneType None"),
    ],
)
def test_pad_to_columns_rejects_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_pad_to_columns_examples_in_its_docstring():
    import doctest

    for func in (i18n.text_columns, i18n.pad_to_columns):
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        for test in doctest.DocTestFinder().find(func, globs=vars(i18n)):
            runner.run(test)
        assert runner.failures == 0 and runner.tries > 0, func.__name__


@given(
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
    st.integers(0, 40),
)
def test_pad_to_columns_is_str_format_for_english(text, width):
    """The English edition prints exactly what ``f"{text:<width}"`` printed before."""
    assert i18n.pad_to_columns(text, width) == f"{text:<{width}}"
    assert i18n.pad_to_columns(text, width, ">") == f"{text:>{width}}"


@given(st.text(alphabet="窗口滑动，ab 1", max_size=20), st.integers(0, 50))
def test_padded_text_is_at_least_width_columns_and_starts_with_text(text, width):
    padded = i18n.pad_to_columns(text, width)
    assert padded.startswith(text) and set(padded[len(text) :]) <= {" "}
    assert i18n.text_columns(padded) == max(width, i18n.text_columns(text))
