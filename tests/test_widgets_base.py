"""Unit tests of course_utils.widgets._base and of what every widget shares, without a browser.

Frames must equal the course_utils maths (and an independent torch oracle), bad inputs must raise
clear errors, learner text must never reach an HTML sink in the JavaScript, and each widget's data
must stay under the 50 KB budget.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import traitlets

from course_utils.softmax import softmax
from course_utils.widgets import QueryKeyPlane
from course_utils.widgets._base import (
    CourseWidget,
    check_drawable,
    check_grid_size,
    check_qkv,
    check_tokens,
    check_vectors,
    pack_array,
    pack_uint8,
    unpack_array,
    widget_esm,
)

from .system_tools import require

WIDGET_DIR = Path(__file__).resolve().parents[1] / "src" / "course_utils" / "widgets"
WIDGET_STEMS = sorted(p.stem for p in WIDGET_DIR.glob("[a-z]*.js"))


# ---- the base ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "decimals", "expected"),
    [
        ([[0.12345, -0.0]], 2, {"shape": [1, 2], "data": [0.12, 0.0]}),
        ([1.5, 2.25, -3.0], 1, {"shape": [3], "data": [1.5, 2.2, -3.0]}),
        (np.zeros((2, 0)), 3, {"shape": [2, 0], "data": []}),
        (
            np.arange(6).reshape(1, 2, 3),
            0,
            {"shape": [1, 2, 3], "data": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]},
        ),
    ],
)
def test_pack_array(x, decimals, expected) -> None:
    assert pack_array(x, decimals) == expected
    np.testing.assert_allclose(unpack_array(expected), np.round(np.asarray(x, float), decimals))


def test_pack_array_rejects_non_finite() -> None:
    with pytest.raises(ValueError, match=r"NaN or inf \(shape \(2,\)\)"):
        pack_array([1.0, np.nan])


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        ([0, 1, 255], {"shape": [3], "uint8": "AAH/"}),
        (np.array([[100.0, 0.0], [-0.0, 42.0]]), {"shape": [2, 2], "uint8": "ZAAAKg=="}),
        (np.zeros((2, 0)), {"shape": [2, 0], "uint8": ""}),
        (np.arange(24, dtype=np.int64).reshape(2, 3, 4), None),
    ],
)
def test_pack_uint8_round_trips(x, expected) -> None:
    packed = pack_uint8(x, "x")
    if expected is not None:
        assert packed == expected
    json.dumps(packed)  # plain JSON (a str), as the widget state needs
    out = unpack_array(packed)
    assert out.shape == np.shape(x)
    np.testing.assert_array_equal(out, np.asarray(x, dtype=float))


@pytest.mark.parametrize(
    ("x", "error", "match"),
    [
        ([0.5, 1.0], ValueError, r"percent must hold whole numbers in 0\.\.255; got shape \(2,\)"),
        ([-1, 3], ValueError, r"got shape \(2,\) with values in \[-1, 3\]"),
        ([[256]], ValueError, r"got shape \(1, 1\) with values in \[256, 256\]"),
        ([np.nan], ValueError, "percent must hold whole numbers"),
        ([True, False], TypeError, r"percent must be an array of whole numbers .*dtype bool"),
        (["1"], TypeError, r"dtype <U1 \(shape \(1,\)\)"),
    ],
)
def test_pack_uint8_errors(x, error, match) -> None:
    with pytest.raises(error, match=match):
        pack_uint8(x, "percent")


#: A minimal DOM for the node tests: elements record their attributes, children, text and style.
FAKE_DOM = (
    "const element = (tag) => ({ tag, attrs: {}, kids: [], style: {}, textContent: '',"
    " setAttribute(k, v) { this.attrs[k] = v; }, appendChild(c) { this.kids.push(c); } });\n"
    "const document = { createElement: element, createElementNS: (ns, tag) => element(tag) };\n"
)


def run_shared_js(script: str, *, dom: bool = False) -> Any:
    """Run ``_shared.js`` then ``script`` in node (with :data:`FAKE_DOM` first if ``dom``); return
    the JSON the script printed with ``console.log(JSON.stringify(...))``."""
    code = (FAKE_DOM if dom else "") + (WIDGET_DIR / "_shared.js").read_text() + "\n" + script
    run = subprocess.run([require("node"), "-e", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_shared_js_decodes_what_python_packs() -> None:
    """CU.bytes + CU.offset (JavaScript) read the same numbers as unpack_array (Python)."""
    x = np.random.default_rng(0).integers(0, 256, size=(2, 3, 4, 5))  # (L, H, T, T)
    packed = pack_uint8(x, "x")
    out = run_shared_js(
        f"const p = {json.dumps(packed)};\n"
        "const all = CU.bytes(p);\n"
        "const [start, size] = CU.offset(p.shape, 1, 2);\n"
        "console.log(JSON.stringify({all: Array.from(all), start, size,"
        " sub: Array.from(all.subarray(start, start + size))}));\n"
    )
    assert out["all"] == x.ravel().tolist()
    assert (out["start"], out["size"]) == ((1 * 3 + 2) * 20, 20)
    assert out["sub"] == x[1, 2].ravel().tolist()


def test_shared_js_listen_unsubscribes_exactly_what_it_subscribed() -> None:
    """CU.listen subscribes every named event and its cleanup removes each of them again."""
    script = (
        "const log = [];\n"
        "const model = { on: (e, f) => log.push(['on', e, f.name]),"
        " off: (e, f) => log.push(['off', e, f.name]) };\n"
        "function draw() {}\nfunction rebuild() {}\n"
        "const cleanup = CU.listen(model, [['change:a  change:b', draw], ['change:c', rebuild]]);\n"
        "const subscribed = log.length;\ncleanup();\n"
        "console.log(JSON.stringify({log, subscribed}));\n"
    )
    out = run_shared_js(script)
    pairs = [["change:a", "draw"], ["change:b", "draw"], ["change:c", "rebuild"]]
    assert out["subscribed"] == 3
    assert out["log"] == [["on", *p] for p in pairs] + [["off", *p] for p in pairs]


def test_shared_js_live_draws_once_after_subscribing_and_save_sets_then_saves() -> None:
    """CU.live = CU.listen + one first draw; CU.save sets every trait, in order, then saves once."""
    script = (
        "const log = [];\n"
        "const model = { on: (e) => log.push(['on', e]), off: (e) => log.push(['off', e]),"
        " set: (k, v) => log.push(['set', k, v]), save_changes: () => log.push(['save']) };\n"
        "function draw() { log.push(['draw']); }\n"
        "const cleanup = CU.live(model, [['change:a change:b', draw]], draw);\n"
        "cleanup();\n"
        "CU.save(model, { example_index: 2, step_index: 0 });\n"
        "CU.sync({ sync: () => log.push(['sync', 1]) }, { sync: () => log.push(['sync', 2]) });\n"
        "console.log(JSON.stringify(log));\n"
    )
    assert run_shared_js(script) == [
        ["on", "change:a"],
        ["on", "change:b"],
        ["draw"],
        ["off", "change:a"],
        ["off", "change:b"],
        ["set", "example_index", 2],
        ["set", "step_index", 0],
        ["save"],
        ["sync", 1],
        ["sync", 2],
    ]


@pytest.mark.parametrize(
    ("tokens", "error", "match"),
    [
        ("the cat", TypeError, r"tokens must be a list of strings, not a single str"),
        ([], ValueError, r"at least 1 token"),
        (["a", 3], TypeError, r"tokens\[1\] must be a str; got int 3"),
        (["a", "  "], ValueError, r"tokens\[1\] is empty or only whitespace"),
        (["x" * 41], ValueError, r"tokens\[0\] has 41 characters; at most 40"),
        (42, TypeError, r"tokens must be a list of strings; got int"),
    ],
)
def test_check_tokens_errors(tokens, error, match) -> None:
    with pytest.raises(error, match=match):
        check_tokens(tokens, "tokens")


@pytest.mark.parametrize(
    ("tokens", "limits", "match"),
    [
        (["a", "b"], {"count": 3}, r"tokens must have 3 labels \(one per row\); got 2"),
        (
            ["a", "b"],
            {"count": 1, "per": "one per key"},
            r"must have 1 label \(one per key\); got 2",
        ),
        (["a"] * 5, {"max_len": 4}, r"tokens must have 1 to 4 tokens; got 5"),
        (["a"] * 2, {"min_len": 3, "max_len": 4}, r"tokens must have 3 to 4 tokens; got 2"),
    ],
)
def test_check_tokens_counts(tokens, limits, match) -> None:
    with pytest.raises(ValueError, match=match):
        check_tokens(tokens, "tokens", **limits)
    fitting = {"count": len(tokens)} if "count" in limits else {"max_len": len(tokens) + 1}
    assert check_tokens(tokens, "tokens", **fitting) == tokens


@pytest.mark.parametrize(
    ("t_q", "t_k", "d_v", "max_d_v", "fits"),
    [
        (12, 12, 12, 12, True),
        (13, 12, 2, 12, False),  # 156 query-key pairs
        (1, 144, 2, 12, True),
        (2, 73, 2, 12, False),
        (4, 4, 9, 8, False),
        (4, 4, 8, 8, True),
    ],
)
def test_check_drawable(t_q, t_k, d_v, max_d_v, fits) -> None:
    q, k, v = np.ones((t_q, 2)), np.ones((t_k, 2)), np.ones((t_k, d_v))
    if fits:
        assert check_drawable("W", q, k, v, max_d_v=max_d_v) is None
    else:
        shapes = rf"got q \({t_q}, 2\), k \({t_k}, 2\), v \({t_k}, {d_v}\)"
        with pytest.raises(
            ValueError, match=rf"W draws every number: .*{max_d_v} value .*{shapes}"
        ):
            check_drawable("W", q, k, v, max_d_v=max_d_v)


def test_check_tokens_keeps_html_like_text_verbatim() -> None:
    hostile = ["<img src=x onerror=alert(1)>", "&amp;", "猫"]
    assert check_tokens(hostile) == hostile  # no escaping in Python: JS uses textContent


@pytest.mark.parametrize(
    ("x", "kwargs", "error", "match"),
    [
        (
            [1.0, 2.0],
            {"dim": 2},
            ValueError,
            r"keys must have at least 2 dimensions \(T, 2\); got shape \(2,\)",
        ),
        (
            [[1.0, 2.0, 3.0]],
            {"dim": 2},
            ValueError,
            r"keys must have shape \(T, 2\); got shape \(1, 3\)",
        ),
        (
            [[1.0, 2.0]],
            {"rows": 2},
            ValueError,
            r"keys must have shape \(2, d\); got shape \(1, 2\)",
        ),
        (
            np.zeros((2, 2, 2)),
            {},
            ValueError,
            r"keys must have shape \(T, d\); got shape \(2, 2, 2\)",
        ),
        ([["a", "b"]], {}, TypeError, r"keys must be a numeric array"),
        ([[np.nan, 1.0]], {}, ValueError, r"keys contains NaN"),
        ([[-np.inf, 1.0]], {}, ValueError, r"keys must be finite"),
    ],
)
def test_check_vectors_errors(x, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        check_vectors(x, "keys", **kwargs)


@pytest.mark.parametrize(
    ("n", "error"), [(1, ValueError), (500, ValueError), (3.0, TypeError), (True, TypeError)]
)
def test_check_grid_size_errors(n, error) -> None:
    with pytest.raises(error, match="n_angles must be an int in"):
        check_grid_size(n, "n_angles")


def test_esm_is_shared_prelude_plus_widget_file() -> None:
    esm = widget_esm("query_key_plane")
    shared = (WIDGET_DIR / "_shared.js").read_text()
    own = (WIDGET_DIR / "query_key_plane.js").read_text()
    assert esm.startswith(shared) and esm.endswith(own)
    assert QueryKeyPlane._esm == esm
    assert "export default" in own and "import " not in own  # no relative imports (blob URL)


# ---- safety: no HTML sinks in any widget JavaScript --------------------------------------------

HTML_SINKS = re.compile(
    r"\.innerHTML\b|\.outerHTML\s*=|insertAdjacentHTML|document\.write|\.srcdoc\b|"
    r"createContextualFragment|DOMParser|\bnew\s+Function\b|\beval\s*\("
)


@pytest.mark.parametrize("js", sorted(WIDGET_DIR.glob("*.js")), ids=lambda p: p.name)
def test_widget_js_has_no_html_sinks(js: Path) -> None:
    code = "\n".join(
        line for line in js.read_text().splitlines() if not line.lstrip().startswith("//")
    )
    sinks = HTML_SINKS.findall(code)
    assert not sinks, f"{js.name} uses HTML sinks {sinks}: set learner text with textContent"


def test_sink_pattern_catches_the_usual_mistakes() -> None:
    for bad in ["el.innerHTML = t", "el.insertAdjacentHTML('beforeend', t)", "document.write(t)"]:
        assert HTML_SINKS.search(bad), bad
    assert not HTML_SINKS.search("el.textContent = t")


# ---- the example in src/course_utils/widgets/README.md works as written ---------------------


def test_api_note_example(tmp_path, monkeypatch) -> None:
    """The minimal widget of the how-to note, built on the base with its own JS file."""
    import course_utils.widgets._base as base

    (tmp_path / "_shared.js").write_text((WIDGET_DIR / "_shared.js").read_text())
    (tmp_path / "_shared.css").write_text((WIDGET_DIR / "_shared.css").read_text())
    (tmp_path / "temperature_bars.js").write_text(
        "function render() {}\nexport default { render };\n"
    )
    monkeypatch.setattr(base, "HERE", tmp_path)

    class TemperatureBars(CourseWidget):
        _widget_file = "temperature_bars"
        scores = traitlets.List(traitlets.Float()).tag(sync=True)
        temperatures = traitlets.List(traitlets.Float()).tag(sync=True)
        frames = traitlets.Dict().tag(sync=True)
        t_index = traitlets.Int(0).tag(sync=True)

        def __init__(self, scores, temperatures=(0.25, 0.5, 1.0, 2.0, 4.0), **kw):
            super().__init__(**kw)
            with self.hold_trait_notifications():  # observers run once both are set
                self.temperatures = [float(t) for t in temperatures]
                self.scores = check_vectors([scores], "scores")[0].tolist()

        @traitlets.observe("scores", "temperatures")
        def _on_input(self, _change):
            self._recompute()

        def _recompute(self):
            s = np.asarray(self.scores)  # (T_k,)
            t = np.asarray(self.temperatures)[:, None]  # (n_T, 1)
            self.frames = pack_array(softmax(s[None, :] / t, axis=-1))  # (n_T, T_k)
            self._check_budget()

    w = TemperatureBars([2.0, 1.0, 0.0])
    assert "export default { render }" in w._esm and "const CU" in w._esm
    np.testing.assert_allclose(unpack_array(w.frames)[2], softmax([2.0, 1.0, 0.0]), atol=5e-4)


@pytest.mark.parametrize("stem", WIDGET_STEMS)
def test_js_does_no_maths_and_no_html_sinks(stem: str) -> None:
    js = (WIDGET_DIR / f"{stem}.js").read_text(encoding="utf-8")
    # No softmax / entropy in JS. Math.log10 / Math.log2 may place numbers on a log-scale axis:
    # that is drawing, not the course's maths.
    assert "Math.exp" not in js and "Math.log(" not in js
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write", js)
    assert "export default { render }" in js
    # render returns the cleanup that CU.live (CU.listen, then the first draw) built from the same
    # subscriptions, or a function that calls CU.listen's cleanup first, then stops what else the
    # widget started (e.g. a Web Worker)
    if not re.search(r"return CU\.live\(model,", js):
        assert re.search(r"const cleanup = CU\.listen\(model,", js)
        assert re.search(r"return \(\) => \{\s*cleanup\(\);", js)
    assert "model.on(" not in js  # every subscription goes through CU.listen


# ---- the shared repr (deterministic text for nbval) ----------------------------------------------


def test_repr_is_built_from_the_class_format_and_repr_values() -> None:
    """One __repr__ for every widget: the class name around ``_repr_format``, whose fields are
    ``_repr_values()`` first, then attributes; by default the title."""

    class Plain(CourseWidget):
        pass

    class Counted(CourseWidget):
        tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
        step_index = traitlets.Int(0).tag(sync=True)
        _repr_format = "{n_tokens} tokens, step={step}, title={title!r}, first={tokens[0]!r}"

        def _repr_values(self) -> dict[str, object]:
            return {"n_tokens": len(self.tokens), "step": self.step_index + 1}

    assert repr(Plain(title="A <b> title")) == "Plain(title='A <b> title')"
    w = Counted(tokens=["the", "cat"], step_index=1, title="t")
    assert repr(w) == "Counted(2 tokens, step=2, title='t', first='the')"
    assert "0x" not in repr(w)  # no memory address


def test_shared_js_traits_and_handler_lists() -> None:
    """CU.traits reads several traits at once; a handler of CU.listen/CU.live may be a list of
    functions, called in order with the event (e.g. [build, update] when the data change)."""
    script = (
        "const log = [];\nconst handlers = {};\n"
        "const model = { get: (k) => ({ a: 1, b: [2] })[k], on: (e, f) => { handlers[e] = f; },"
        " off: () => {} };\n"
        "const build = (ev) => log.push(['build', ev]);\n"
        "const update = (ev) => log.push(['update', ev]);\n"
        "CU.live(model, [['change:a', update], ['change:b', [build, update]]], [build, update]);\n"
        "handlers['change:b']('e');\n"
        "console.log(JSON.stringify({ log, traits: CU.traits(model, 'a', 'b') }));\n"
    )
    out = run_shared_js(script)
    assert out["traits"] == {"a": 1, "b": [2]}
    assert out["log"] == [["build", None], ["update", None], ["build", "e"], ["update", "e"]]


def test_shared_js_weight_column() -> None:
    """CU.weightColumn: number, well and bar with the caller's class prefix; set(w) shows w."""
    out = run_shared_js(
        "const parent = document.createElement('div');\n"
        "const c = CU.weightColumn(parent, 'cu-sa', 90);\n"
        "c.set(0.25);\n"
        "const [num, well] = c.col.kids;\n"
        "console.log(JSON.stringify({ col: c.col.attrs.class, num: [num.attrs.class,"
        " num.textContent], well: well.attrs, bar: [c.bar.attrs.class, c.bar.style],"
        " inParent: parent.kids[0] === c.col }));\n",
        dom=True,
    )
    assert out["col"] == "cu-sa-col" and out["inParent"]
    assert out["num"] == ["cu-sa-num", "0.25"]
    assert out["well"] == {"class": "cu-sa-well", "style": "height:90px"}
    bar_class, bar_style = out["bar"]
    assert bar_class == "cu-sa-bar" and bar_style["height"] == "23px"  # round(90 * 0.25)
    assert bar_style["background"].startswith("rgb(")


def test_shared_js_cell_grid_geometry() -> None:
    """CU.cellGrid: the labelled matrix of the four-steps and tiling widgets, one geometry."""
    out = run_shared_js(
        "const g = CU.cellGrid({ cell: 52, row: 30, left: 70, top: 34, text: 19 });\n"
        "const p = { appendChild() {} };\n"
        "const col = g.colLabel(p, 1, 'cat'), row = g.rowLabel(p, 2, 'sat');\n"
        "const rect = g.rect(p, 2, 1, { fill: 'red' }), num = g.num(p, 2, 1, { class: 'n' });\n"
        "console.log(JSON.stringify({ x: g.x(3), y: g.y(2), col: [col.attrs, col.textContent],"
        " row: [row.attrs, row.textContent], rect: rect.attrs, num: num.attrs }));\n",
        dom=True,
    )
    assert (out["x"], out["y"]) == (70 + 3 * 52, 34 + 2 * 30)
    label = {"text-anchor": "middle", "class": "cu-label"}
    assert out["col"] == [{"x": "148", "y": "24", **label}, "cat"]  # 70 + 1.5 * 52, 34 - 10
    assert out["row"] == [{"x": "64", "y": "113", "text-anchor": "end", "class": "cu-label"}, "sat"]
    assert out["rect"] == {"x": "123", "y": "95", "width": "50", "height": "28", "fill": "red"}
    assert out["num"] == {"x": "148", "y": "113", "text-anchor": "middle", "class": "n"}


def test_shared_js_drawing() -> None:
    """CU.drawing: the <svg> with the caller's attributes in its parent, its <title>, one <g>."""
    out = run_shared_js(
        "const parent = document.createElement('div');\n"
        "const d = CU.drawing(parent, { viewBox: '0 0 10 5', role: 'img', class: 'cu-plot' });\n"
        "const only = parent.kids.length === 1 && parent.kids[0] === d.svg;\n"
        "console.log(JSON.stringify({ inParent: only,"
        " tag: d.svg.tag, attrs: d.svg.attrs, kids: d.svg.kids.map((k) => k.tag),"
        " mine: d.svg.kids[0] === d.title && d.svg.kids[1] === d.g }));\n",
        dom=True,
    )
    assert out["inParent"] and out["mine"] and out["tag"] == "svg"
    assert out["attrs"] == {"viewBox": "0 0 10 5", "role": "img", "class": "cu-plot"}
    assert out["kids"] == ["title", "g"]


def test_shared_js_slider_keeps_space_from_scrolling_the_page() -> None:
    """CU.slider: Space on the focused slider is not the page's (it scrolled the page away);
    the arrow keys stay the slider's own."""
    out = run_shared_js(
        "const element = (tag) => ({ tag, attrs: {}, kids: [], style: {}, on: {},"
        " setAttribute(k, v) { this.attrs[k] = v; }, appendChild(c) { this.kids.push(c); },"
        " addEventListener(type, f) { (this.on[type] = this.on[type] || []).push(f); } });\n"
        "globalThis.document = { createElement: element,"
        " createElementNS: (ns, t) => element(t) };\n"
        "const s = CU.slider({ label: 'step', n: 5, value: 0, onInput() {} });\n"
        "const press = (key) => { const ev = { key, prevented: false, stopPropagation() {},"
        " preventDefault() { this.prevented = true; } };"
        " for (const f of s.input.on.keydown) f(ev); return ev.prevented; };\n"
        "console.log(JSON.stringify({ space: press(' '), right: press('ArrowRight') }));\n"
    )
    assert out == {"space": True, "right": False}


# A Worker that records what it is given; the test plays the worker's side by calling onmessage.
FAKE_WORKER = (
    "const made = [];\n"
    "class Worker { constructor(url, opts) { this.url = String(url); this.opts = opts;"
    " this.posted = []; made.push(this); } postMessage(m) { this.posted.push(m); } }\n"
    "globalThis.window = { Worker };\nglobalThis.location = { protocol: 'https:' };\n"
    "const said = [];\nconst status = { set textContent(v) { said.push(v); } };\n"
    "const bar = { hidden: true, max: 0, value: 0 };\n"
    "const text = { noWorker: 'no worker here', loading: (a, b) => `${a} of ${b} MB` };\n"
    "const got = [];\nconst failed = [];\n"
    "const start = (staticUrl) => CU.modelWorker("
    "{ static_url: staticUrl, get: (k) => ({ worker_path: 'm/worker.js' })[k] },"
    " { bar, status, text, onMessage: (m) => got.push(m), onFail: (why) => failed.push(why) });\n"
)


def test_shared_js_model_worker_without_a_site_says_so() -> None:
    """CU.modelWorker starts no worker in JupyterLab (no static_url) or on a file:// page."""
    out = run_shared_js(
        FAKE_WORKER + "const none = start(undefined);\n"
        "location.protocol = 'file:';\nconst local = start('file:///book/_static/');\n"
        "const hidden = bar.hidden;\n"
        "console.log(JSON.stringify({ none, local, made: made.length, said, hidden }));\n"
    )
    assert out == {
        "none": None,
        "local": None,
        "made": 0,
        "said": ["no worker here", "no worker here"],
        "hidden": True,
    }


def test_shared_js_model_worker_loads_and_speaks_each_quarter() -> None:
    """CU.modelWorker: a module worker at static_url + worker_path, asked to load; the bar follows
    every progress message, the status line speaks only when the quarter changes (0, 25, 50, 75,
    100 %), other messages go to onMessage and a failed start to onFail (its default event
    prevented)."""
    out = run_shared_js(
        FAKE_WORKER + "const w = start('https://example.org/book/_static/');\n"
        "const bars = [];\n"
        "for (const loaded of [0, 2e6, 6e6, 6.5e6, 12e6, 24e6]) {\n"
        "  w.onmessage({ data: { type: 'progress', loaded, total: 24e6 } });\n"
        "  bars.push([bar.value, bar.max]);\n}\n"
        "w.onmessage({ data: { type: 'ready', simd: true } });\n"
        "let prevented = false;\n"
        "w.onerror({ message: '', preventDefault: () => { prevented = true; } });\n"
        "console.log(JSON.stringify({ same: w === made[0], url: w.url, opts: w.opts,"
        " posted: w.posted, hidden: bar.hidden, bars, said, got, failed, prevented,"
        " mb: CU.mb(86954321) }));\n"
    )
    assert out["same"] and out["url"] == "https://example.org/book/_static/m/worker.js"
    assert out["opts"] == {"type": "module"} and out["posted"] == [{"type": "load"}]
    assert out["hidden"] is False
    assert out["bars"] == [[x, 24e6] for x in (0, 2e6, 6e6, 6.5e6, 12e6, 24e6)]
    # quarters 0, 0, 1, 1, 2, 4: spoken at 0, 6, 12 and 24 MB only
    assert out["said"] == ["0.0 of 24.0 MB", "6.0 of 24.0 MB", "12.0 of 24.0 MB", "24.0 of 24.0 MB"]
    assert out["got"] == [{"type": "ready", "simd": True}]
    assert out["failed"] == ["the worker did not start"] and out["prevented"]
    assert out["mb"] == "87.0"


def test_check_qkv_shapes_and_messages() -> None:
    """check_qkv: k has q's width, v has k's rows; same_length adds T_k == T_q (self-attention)."""
    q, k, v = check_qkv([[1, 0], [0, 1]], [[1, 0]], [[1, 2, 3]])
    assert (q.shape, k.shape, v.shape) == ((2, 2), (1, 2), (1, 3)) and q.dtype == np.float64
    with pytest.raises(ValueError, match=r"k must have shape \(T, 2\); got shape \(1, 3\)"):
        check_qkv([[1, 0]], [[1, 0, 0]], [[1]])
    with pytest.raises(ValueError, match=r"v must have shape \(1, d\); got shape \(2, 1\)"):
        check_qkv([[1, 0]], [[1, 0]], [[1], [2]])
    with pytest.raises(ValueError, match=r"k must have shape \(2, 2\); got shape \(1, 2\)"):
        check_qkv([[1, 0], [0, 1]], [[1, 0]], [[1]], same_length=True)
