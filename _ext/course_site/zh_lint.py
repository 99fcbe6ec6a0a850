"""The rule "no untranslated English" on a 中文 page, and the glossary's terms (lint, not runtime).

The tests of the 中文 edition use these on everything a Chinese reader sees: widget text in the
browser, checker feedback, figure text and the catalogues. They read the book's ``glossary.md``,
so they live with the site's build machinery, not in ``course_utils`` (which a learner installs
without the book).
"""

from __future__ import annotations

import functools
import re
from html.parser import HTMLParser
from pathlib import Path

__all__ = [
    "ALLOWED_WORDS",
    "FIGURE_ALLOWED_WORDS",
    "PAREN_TERMS",
    "figure_english",
    "glossary_terms",
    "glossary_violations",
    "untranslated_english",
]

REPO = Path(__file__).resolve().parents[2]


# ---- the rule "no untranslated English" (used by the tests of the zh edition) ----------------

#: Words with at most one capital letter that may stay in Chinese text: Python and numpy names the
#: messages quote as code, units, and proper nouns (names with two or more capitals, such as
#: PyTorch, MiniLM, RoPE, GiB, LayerNorm, are always allowed, and so are acronyms).
ALLOWED_WORDS = frozenset(
    [
        "True",
        "False",
        "None",
        "Ellipsis",
        "Mistral",
        "Chrome",
        "Lighthouse",
        "Gemma",
        "Falcon",
        "Python",
        "Git",
        "http",
        "ellipsis",
        "function",
        "object",
        "numpy",
        "int",
        "float",
        "bool",
        "str",
        "list",
        "tuple",
        "dict",
        "ndarray",
        "dtype",
        "inf",
        "nan",
        "exp",
        "log",
        "sqrt",
        "sin",
        "cos",
        "ln",
        "argmax",
        "softmax",
        "logit",
        "logits",
        "top-k",  # 中文 ML writing keeps it: top-k 精确率, top-k 采样
        "reshape",
        "rotate-half",
        "eps",
        "gamma",
        "beta",
        "sigma",
        "axis",
        "diag",
        "mask",
        "scores",
        "answer",
        "memory",
        "window",
        "length",
        "bias",
        "lambda",
        "Llama",
        "Transformer",
        "Sparse",
        "Vaswani",
        "Okabe",
        "Ito",
        "Adam",
        "Ainslie",
        "Shazeer",
        "et",
        "al",
        "Var",
        "torch",
        "np",
        "nn",
        "ms",
        "s",
    ]
)
#: English shown in parentheses after its Chinese term, besides the glossary's own terms.
PAREN_TERMS = frozenset(
    {"one-hot", "uptraining", "rollout", "precision at k", "softmax", "key-padding mask"}
)

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'’-]*")
_CODE_NEIGHBOUR = set("@=()[]*/~<>+×·|^−{}%√")


#: Entries whose headword keeps a long Chinese name once (the glossary's alias) while running text
#: writes another word, as d2l-zh does: softmax, not 归一化指数函数.
RUNNING_TEXT_TERMS = {"Softmax": "softmax", "ALiBi": "ALiBi"}


@functools.cache
def glossary_terms() -> dict[str, str]:
    """English -> 中文 of every entry of the book's ``glossary.md`` (``English (中文)`` lines), the
    中文 being what running text writes (:data:`RUNNING_TEXT_TERMS`)."""
    path = REPO / "glossary.md"
    if not path.is_file():
        return {}
    terms = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.fullmatch(r"([A-Z][^()]*?) \(([^()]+)\)\s*", line)
        if m:
            terms[m.group(1).strip()] = m.group(2).strip()
    return terms | {en: zh for en, zh in RUNNING_TEXT_TERMS.items() if en in terms}


def untranslated_english(text: str) -> list[str]:
    """The runs of English words in Chinese ``text`` that should have been translated.

    The rule, in order:

    1. Removed first, as not prose: code in backticks, quoted text (``'...'``, ``"..."``, “...”,
       ‘...’: a learner's value or a token), ``$...$`` maths, and a Python exception's own message
       (``ZeroDivisionError: division by zero``, to the end of the text).
    2. Removed: parentheses holding a glossary term or a :data:`PAREN_TERMS` term in English
       (``注意力（Attention）``), and an author-year citation, which names people and is never
       translated (``（Touvron et al., 2023）``, ``（Llama Team, AI @ Meta, 2024）``).
    3. A word (letters, then letters, digits, ``_``, ``'`` or ``-``) is allowed when it is code or
       a name: it has a digit or ``_`` (``d_k``, ``float32``), it is one letter (a maths symbol),
       it has two or more capitals (``PyTorch``, ``GQA``, ``RoPE``, ``GiB``), it is in
       :data:`ALLOWED_WORDS`, it is an attribute (``np.tril``, ``x.var``), or it touches an
       operator or bracket (``weights @ V``, ``softmax(...)``), ignoring spaces.
    4. Every other word is English that should be Chinese; neighbouring ones (separated only by
       spaces and ``, ; -``) form one run. The result lists the runs, in order.

    >>> untranslated_english("分数 = Q Kᵀ，d_k = 64；用 np.tril(...) 和 PyTorch")
    []
    >>> untranslated_english("查询（Query）的权重：'the cat'")
    []
    >>> untranslated_english("第 2 步 not yet right：weights @ V")
    ['not yet right']
    >>> untranslated_english("your code raised ZeroDivisionError: division by zero")
    ['your code raised']
    >>> untranslated_english("已发表的配置（Touvron et al., 2023），上下文 4k")
    []
    >>> untranslated_english("（see the paper, 2023）")
    ['see the paper']
    """
    s = str(text)
    s = re.sub(r"`[^`]*`", " ", s)
    s = re.sub(r"\$[^$]*\$", " ", s)
    s = re.sub(r"\b[A-Z]\w*(?:Error|Exception|Warning|Interrupt)\b: .*", " ", s, flags=re.S)
    s = re.sub(r"“[^”]*”|‘[^’]*’", " ", s)
    s = re.sub(r"(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])", " ", s)
    s = re.sub(r'"[^"\n]*"', " ", s)
    terms = {t.lower() for t in glossary_terms()} | PAREN_TERMS

    def paren(m: re.Match[str]) -> str:
        inner = m.group(1).strip().lower()
        return " " if inner in terms or inner.rstrip("s") in terms else m.group(0)

    s = re.sub(r"[（(]([A-Za-z][A-Za-z \-–]*)[)）]", paren, s)
    s = re.sub(_CITATION, " ", s)

    def allowed(m: re.Match[str]) -> bool:
        word = m.group(0).rstrip("'’-")
        if len(word) == 1 or re.search(r"[0-9_]", word) or sum(c.isupper() for c in word) >= 2:
            return True
        if word in ALLOWED_WORDS or word.lower() in ALLOWED_WORDS:
            return True
        if s[m.start() - 1 : m.start()] == "." or re.match(r"\.[A-Za-z_(]", s[m.end() :]):
            return True  # x.var, np.tril: attribute access, not the end of a sentence
        return _near_code(s, m.start(), m.end())

    runs: list[str] = []
    current: list[re.Match[str]] = []
    for m in _WORD.finditer(s):
        if allowed(m):
            if current:
                runs.append(s[current[0].start() : current[-1].end()])
                current = []
            continue
        if current and not re.fullmatch(r"[\s,;\-]*", s[current[-1].end() : m.start()]):
            runs.append(s[current[0].start() : current[-1].end()])
            current = []
        current.append(m)
    if current:
        runs.append(s[current[0].start() : current[-1].end()])
    return runs


# (Surname et al., 2023), (Surname and Other, 2019a), (Llama Team, AI @ Meta, 2024): capitalised
# names, "et al." / "and" / "&" / "@" between them, then a comma and a four-digit year.
_NAME = r"[A-Z][A-Za-z\-']*(?:\s+[A-Z@][A-Za-z\-']*|\s+@)*"
_CITATION = re.compile(
    rf"[（(]{_NAME}(?:\s+et al\.?|(?:,?\s+(?:and|&)\s+|,\s+){_NAME})*,\s*\d{{4}}[a-z]?[)）]"
)


def _near_code(text: str, start: int, end: int) -> bool:
    before = text[:start].rstrip()
    after = text[end:].lstrip()
    return before[-1:] in _CODE_NEIGHBOUR or after[:1] in _CODE_NEIGHBOUR


#: A glossary noun whose verb has its own Chinese word: "masked" is 被屏蔽/被遮蔽 (d2l-zh),
#: while the noun "mask" stays 掩码.
VERB_TERMS = {"Mask": ("屏蔽", "遮蔽")}


def glossary_violations(english: str, chinese: str) -> list[tuple[str, str]]:
    """The glossary terms of ``english`` whose Chinese term is missing from ``chinese``.

    A term counts where it is prose: as whole words (a plural ``s`` allowed; ``key`` in
    ``key-padding`` or ``d_key`` is not the term Key), not in backticks and not touching an
    operator or bracket (``softmax(logits / temperature)`` is code).

    >>> glossary_violations("apply softmax to each row", "对每一行做 softmax")
    []
    >>> glossary_violations("the keys are masked", "这些键被遮住了")
    [('Mask', '掩码')]
    >>> glossary_violations("the keys are masked", "这些键被屏蔽了")  # the verb: 屏蔽/遮蔽
    []
    >>> glossary_violations("flip it with ~mask", "用 ~mask 翻转")
    []
    """
    text = re.sub(r"`[^`]*`", " ", english)
    missing = []
    for term, zh in glossary_terms().items():
        words = r"[\s-]+".join(re.escape(w) for w in re.split(r"[\s-]+", term))
        rx = re.compile(rf"(?<![\w.\-]){words}(?:s|es|ed)?(?![\w(\-])", re.IGNORECASE)
        hits = [m for m in rx.finditer(text) if not _near_code(text, m.start(), m.end())]
        if hits and zh not in chinese:
            verbs = VERB_TERMS.get(term, ())
            as_verb = all(m.group(0).lower().endswith("ed") for m in hits)
            if not (as_verb and any(v in chinese for v in verbs)):
                missing.append((term, zh))
    return missing


# ---- figures: the texts a figure's PNG records (course_utils.plotting.TEXTS_KEY) --------------

#: Words a 中文 figure may show besides :data:`ALLOWED_WORDS` (identifiers such as Q, K, V, d_k,
#: RoPE, GQA, MLA, KV, LayerNorm pass by the general rule: one letter, a digit or ``_``, or two
#: capitals): the tokens of the course's English example sentences, which are data, not prose
#: (chapter 1's toy keys, chapter 7's "reading is good", the sentences of the English half of
#: chapter 13's hand-labelled set are drawn as tokens), and names kept in English.
FIGURE_ALLOWED_WORDS = frozenset(
    [
        "cat", "tiger", "bicycle", "truck", "dog", "bank", "river", "the", "a", "sat", "on",
        "mat", "reading", "is", "good", "love", "you", "pad", "cls", "sep", "eos", "bos",
        "softmax", "top-k", "argmax", "Perceiver", "Longformer", "BigBird", "FlashAttention",
        "MiniLM", "SmolLM2", "Transformer", "max", "min", "mean", "exp", "log",
        # chapter 4's coreference sentence (Winograd), drawn as the English model's tokens
        "trophy", "did", "not", "fit", "in", "suitcase", "because", "it", "was", "too", "big",
    ]
)  # fmt: skip


def figure_english(texts: list[str]) -> list[str]:
    """The runs of English prose left on a 中文 figure, from the texts its PNG records.

    Each text is checked with :func:`untranslated_english`; a run made only of
    :data:`FIGURE_ALLOWED_WORDS` (example tokens, names) is not prose. Each run is listed once.

    >>> figure_english(["位置", "Q", "d_k", "cat", "GQA（分组）", "reading is good", "0.5"])
    []
    >>> figure_english(["largest weight", "attention adds", "权重", "largest weight"])
    ['largest weight', 'attention adds']
    """
    allowed = {w.lower() for w in FIGURE_ALLOWED_WORDS}
    runs: list[str] = []
    for text in texts:
        for run in untranslated_english(text):
            words = [w.lower() for w in _WORD.findall(run)]
            if words and all(w in allowed for w in words):
                continue
            if run not in runs:
                runs.append(run)
    return runs


# ---- the built 中文 pages: English a reader meets (tests/test_built_site_zh.py) ----------------

#: English that stays on a 中文 page, as runs :func:`page_english` reports them. Each is a name, a
#: datum or a term Chinese technical writing keeps in English; anything else is a finding.
PAGE_ENGLISH_ALLOWED = frozenset(
    [
        # people, named in running text (citations themselves are links, not checked)
        *[
            "Bahdanau",
            "Cho",
            "Bengio",
            "Britz",
            "Glorot",
            "Xavier",
            "Xiong",
            "Xiao",
            "Haviv",
            "He",
            "Ba",
            "Wang",
            "Weiss",
            "Welch",
            "Srivastava",
            "Devlin",
            "Radford",
            "Brown",
            "Michel",
            "Clark",
            "Jain",
            "Wallace",
            "Wiegreffe",
            "Pinter",
            "Serrano",
            "Smith",
            "Abnar",
            "Zuidema",
            "Beltagy",
            "Zaheer",
            "Child",
            "Jiang",
            "Dao",
            "Shazeer",
            "Milakov",
            "Gimelshein",
            "Shaw",
            "Sundararajan",
            "Liu",
            "Kwon",
        ],
        "Jain and",
        "Wiegreffe and",
        "Serrano and",
        "Milakov and",
        "Baevski and",
        # products, models, projects, companies, tools
        *[
            "Gemma",
            "Longformer",
            "Perceiver",
            "Binder",
            "Meta",
            "Adam",
            "Swish",
            "Corporation",
            "Code",
            "nbgitpuller",
        ],
        "Hugging Face",
        "Gated",  # of "Gated DeltaNet", Qwen3-Next's layer type: a name (chapter 14)
        *["Mixtral", "Qwen", "gpt-oss"],  # model names (chapter 14)
        *["Performer", "Linformer"],  # linear-attention models (chapter 9)
        # tools a teacher installs or meets (the instructor guide's classroom and grading)
        *["Jupyter", "Markdown", "Otter", "otter", "otter-grader", "nbgrader", "npm"],
        "configurable-http-proxy",
        "Helm",
        "The Littlest",  # of "The Littlest JupyterHub", a product (the instructor guide)
        "Web Worker",
        "Show, Attend and",
        "sentence-transformers",
        "GPT-2 small",
        "small",
        # JupyterLab's menu words and keys (its interface is English), tools a teacher installs,
        # colour maps, notebook file names in a table
        "Kernel",
        "Restart Kernel and Run All Cells",
        "Restart and Run All",
        "Shut Down Kernel",
        "Tab",
        "Ctrl",
        *[
            "Chromium",
            "Debian",
            "Kubernetes",
            "Linux",
            "Docker",
            "pip",
            "wheel",
            "viridis",
            "cividis",
        ],
        "Zero to",
        "scaling",
        "positions",
        # terms Chinese deep-learning writing keeps in English (d2l-zh does too)
        *[
            "notebook",
            "dropout",
            "Dropout",
            "autograd",
            "hub",
            "zip",
            "token",
            "bug",
            "top-k",
            "sigmoid",
            "top-",
            "log-sum-exp",
            "flash",
            "math",
            "hypothesis",
            "tau",
            "interleaved",
            "dilated",
            "strided",
        ],
        # English glosses after the Chinese term, in parentheses
        "feed-forward network",
        "latent vector",
        "residual connection",
        "multi-head attention",
        "multi-query attention",
        "grouped-query attention",
        "multi-head latent attention",
        "attention with linear biases",
        "rotary position embedding",
        "layer normalization",
        "normalization",
        "cache",
        "high-bandwidth",
        "flash attention",
        "ablation",
        "attribution",
        "attention rollout",
        "bootstrap",
        "saliency",
        "teacher forcing",
        "attention pooling",
        "transformers",
        "speculation",
        # the glossary's and the language switch's name of the other edition
        "English",
        # chapter 1 keeps the English edition's rendering of the learning notes' Chinese beside
        # it (the seed's definition, the three questions, the four steps), for bilingual readers
        "Let every element of",
        "sequence   all the other elements, and decide which of them to pay attention to",
        "Xiao Ming is reading on",
        "bench by the bank",
        "What information am",
        "looking for",
        "What features do",
        "have that can be matched",
        "If matched, what content do",
        "provide",
        "compute the similarities",
        "scale",
        "normalise",
        "weighted sum",
        # example data: English tokens and words the chapters' sentences and topics use
        *[
            "it",
            "fit",
            "in",
            "the",
            "big",
            "trophy",
            "suitcase",
            "snow",
            "rain",
            "thunder",
            "tomorrow",
            "bookshop",
            "cat",
            "tiger",
            "bicycle",
            "truck",
            "bank",
            "scored",
            "reach",
            "id",
            "million",
            "billion",
            "vs",
        ],
    ]
)

#: Tags whose text is one block to check (a paragraph, an item, a heading, a cell, a label).
_PAGE_BLOCKS = frozenset(
    [
        "p",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "dt",
        "dd",
        "td",
        "th",
        "summary",
        "button",
        "label",
        "caption",
        "figcaption",
        "title",
    ]
)
#: Elements whose text is not prose: code, maths, scripts, pictures; and (by class) a cell's
#: code or output (printed output is checked in the notebooks), a citation, the language switch.
_PAGE_SKIP_TAGS = frozenset(["pre", "code", "script", "style", "svg", "math", "kbd", "samp"])
_PAGE_SKIP_CLASSES = frozenset(
    [
        "math",
        "notranslate",
        "citation",
        "cu-lang-switch",
        "cell_input",
        "cell_output",
        "output",
        "highlight",
        "pasted-text",  # a value glued from the executed notebook (myst_nb.glue): output, not prose
    ]
)
_VOID = frozenset(
    [
        "br",
        "img",
        "input",
        "meta",
        "link",
        "hr",
        "wbr",
        "source",
        "area",
        "col",
        "embed",
        "param",
        "track",
    ]
)
#: A gloss: English in parentheses right after Chinese, 注意力（attention）.
_GLOSS = re.compile(r"(?<=[\u4e00-\u9fff）])[（(][A-Za-z][A-Za-z0-9 ,.'’\-–&/:]*[)）]")


class _PageProse(HTMLParser):
    """The text blocks of a page a reader reads, and the attributes a screen reader speaks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, str]] = []
        self._open: list[tuple[str, bool]] = []  # (tag, skipped)
        self._skipped = 0
        self._buffer: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = set(a.get("class", "").split())
        cite = tag == "a" and "references.html#" in a.get("href", "")
        if not self._skipped:
            for name in ("aria-label", "title", "placeholder", "alt"):
                if a.get(name) and not cite:
                    self.blocks.append((f"@{name}", a[name]))
        if tag in _VOID:
            return
        skip = tag in _PAGE_SKIP_TAGS or cite or bool(classes & _PAGE_SKIP_CLASSES)
        self._open.append((tag, skip))
        self._skipped += skip

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i][0] == tag:
                self._skipped -= sum(skip for _, skip in self._open[i:])
                del self._open[i:]
                break
        if tag in _PAGE_BLOCKS:
            text = " ".join("".join(self._buffer).split())
            if text:
                self.blocks.append((tag, text))
            self._buffer = []

    def handle_data(self, data: str) -> None:
        if not self._skipped:
            self._buffer.append(data)


def page_english(html: str) -> list[tuple[str, str, str]]:
    """The English a reader meets on a built 中文 page that is not in
    :data:`PAGE_ENGLISH_ALLOWED`: ``(where, run, the block's text)`` per run, ``where`` a tag or
    ``@attribute``. Code, maths, cell outputs, citations and glosses in parentheses are skipped;
    the rest goes through :func:`untranslated_english`.

    >>> page_english('<p>分数是 <code>q @ k</code>，PyTorch 和 Gemma。</p>')
    []
    >>> page_english('<p>没做对的那个：<span class="pasted-text">eaddggd</span>。</p>')  # glued
    []
    >>> page_english('<p>注意力（attention）让 every token look back。</p>')[0][:2]
    ('p', 'every token look back')
    >>> page_english('<a title="Link to this heading" href="#x">#</a>')[0][:2]
    ('@title', 'Link to this heading')
    """
    parser = _PageProse()
    parser.feed(html)
    found = []
    for where, text in parser.blocks:
        for run in untranslated_english(_GLOSS.sub(" ", text)):
            if run not in PAGE_ENGLISH_ALLOWED:
                found.append((where, run, text[:120]))
    return found
