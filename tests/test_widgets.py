"""Unit tests of the widget base and chapter 1's widgets, without a browser.

Frames must equal the course_utils maths (and an independent torch oracle), bad inputs must raise
clear errors, learner text must never reach an HTML sink in the JavaScript, and each widget's data
must stay under the 50 KB budget.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import traitlets

from course_utils import scaled_dot_product_attention
from course_utils.softmax import softmax
from course_utils.widgets import QueryKeyPlane, SentenceAttention
from course_utils.widgets._base import (
    MAX_STATE_BYTES,
    CourseWidget,
    check_grid_size,
    check_tokens,
    check_vectors,
    pack_array,
    pack_uint8,
    unpack_array,
    widget_esm,
)

WIDGET_DIR = Path(__file__).resolve().parents[1] / "src" / "course_utils" / "widgets"
torch = pytest.importorskip("torch")


def _keys(seed: int, t_k: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(t_k, 2))  # (T_k, 2)


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


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run _shared.js")
def test_shared_js_decodes_what_python_packs() -> None:
    """CU.bytes + CU.offset (JavaScript) read the same numbers as unpack_array (Python)."""
    x = np.random.default_rng(0).integers(0, 256, size=(2, 3, 4, 5))  # (L, H, T, T)
    packed = pack_uint8(x, "x")
    script = (WIDGET_DIR / "_shared.js").read_text() + (
        f"\nconst p = {json.dumps(packed)};\n"
        "const all = CU.bytes(p);\n"
        "const [start, size] = CU.offset(p.shape, 1, 2);\n"
        "console.log(JSON.stringify({all: Array.from(all), start, size,"
        " sub: Array.from(all.subarray(start, start + size))}));\n"
    )
    run = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["all"] == x.ravel().tolist()
    assert (out["start"], out["size"]) == ((1 * 3 + 2) * 20, 20)
    assert out["sub"] == x[1, 2].ravel().tolist()


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run _shared.js")
def test_shared_js_listen_unsubscribes_exactly_what_it_subscribed() -> None:
    """CU.listen subscribes every named event and its cleanup removes each of them again."""
    script = (WIDGET_DIR / "_shared.js").read_text() + (
        "\nconst log = [];\n"
        "const model = { on: (e, f) => log.push(['on', e, f.name]),"
        " off: (e, f) => log.push(['off', e, f.name]) };\n"
        "function draw() {}\nfunction rebuild() {}\n"
        "const cleanup = CU.listen(model, [['change:a  change:b', draw], ['change:c', rebuild]]);\n"
        "const subscribed = log.length;\ncleanup();\n"
        "console.log(JSON.stringify({log, subscribed}));\n"
    )
    run = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    pairs = [["change:a", "draw"], ["change:b", "draw"], ["change:c", "rebuild"]]
    assert out["subscribed"] == 3
    assert out["log"] == [["on", *p] for p in pairs] + [["off", *p] for p in pairs]


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


# ---- QueryKeyPlane -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("n_angles", "lengths"), [(24, (0.5, 1.0, 2.0, 3.0)), (7, (1.0, 4.0))])
def test_plane_frames_equal_the_package_maths(seed, n_angles, lengths) -> None:
    k = _keys(seed)  # (T_k, 2)
    v = np.random.default_rng(seed + 100).normal(size=(5, 3))  # (T_k, d_v)
    w = QueryKeyPlane(k, v, n_angles=n_angles, lengths=lengths)
    theta = np.deg2rad(np.arange(n_angles) * 360.0 / n_angles)  # (A,)
    q = (
        np.stack([np.cos(theta), np.sin(theta)], -1)[:, None, :]
        * np.asarray(lengths)[None, :, None]
    )
    q_rows = q.reshape(-1, 2)  # (A*L, 2)
    out, weights = scaled_dot_product_attention(q_rows, k, v)  # (A*L, d_v), (A*L, T_k)
    frames = w.frames
    np.testing.assert_allclose(unpack_array(frames["query"]).reshape(-1, 2), q_rows, atol=5e-4)
    np.testing.assert_allclose(unpack_array(frames["weights"]).reshape(-1, 5), weights, atol=5e-4)
    np.testing.assert_allclose(unpack_array(frames["output"]).reshape(-1, 3), out, atol=5e-4)
    scores = q_rows @ k.T / np.sqrt(2)  # (A*L, T_k)
    np.testing.assert_allclose(unpack_array(frames["scores"]).reshape(-1, 5), scores, atol=5e-4)


@pytest.mark.parametrize("seed", [0, 3])
def test_plane_properties_match_torch_oracle(seed) -> None:
    k = _keys(seed, 4)  # (T_k, 2)
    v = np.random.default_rng(seed).normal(size=(4, 2))  # (T_k, d_v)
    w = QueryKeyPlane(k, v, n_angles=12, lengths=(1.0, 2.0, 3.0), angle_index=5, length_index=2)
    expected_q = 3.0 * np.array([np.cos(np.deg2rad(150)), np.sin(np.deg2rad(150))])  # (2,)
    np.testing.assert_allclose(w.query, expected_q, atol=1e-12)
    tq = torch.tensor(w.query[None, None, :])  # (1, 1, 2)
    out = torch.nn.functional.scaled_dot_product_attention(
        tq, torch.tensor(k[None]), torch.tensor(v[None])
    )  # (1, 1, d_v)
    np.testing.assert_allclose(w.output, out[0, 0].numpy(), atol=1e-10)
    np.testing.assert_allclose(w.weights, softmax(w.scores), atol=1e-12)
    np.testing.assert_allclose(w.weights.sum(), 1.0)


def test_plane_reads_the_index_javascript_sets() -> None:
    w = QueryKeyPlane([[1.0, 0.0], [0.0, 1.0]], n_angles=4, lengths=(1.0, 2.0, 3.0))
    before = w.weights.copy()
    w.set_state({"angle_index": 1})  # what a model.set + save_changes from the browser does
    assert w.angle_index == 1 and w.angle == 90.0
    assert w.weights[1] > w.weights[0] and not np.allclose(before, w.weights)


def test_plane_recomputes_when_inputs_change() -> None:
    w = QueryKeyPlane([[1.0, 0.0], [0.0, 1.0]], n_angles=4)
    old = json.dumps(w.frames)
    w.set_inputs([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], key_labels=["a", "b", "c"])
    assert json.dumps(w.frames) != old
    assert unpack_array(w.frames["weights"]).shape == (4, 5, 3)
    w.lengths = [1.0, 5.0]
    assert unpack_array(w.frames["weights"]).shape == (4, 2, 3)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"keys": [[1.0, 0.0, 0.0]]},
            ValueError,
            r"keys must have shape \(T, 2\); got shape \(1, 3\)",
        ),
        (
            {"keys": [[1.0, 0.0]], "values": [[1.0], [2.0]]},
            ValueError,
            r"values must have shape \(1, d\); got shape \(2, 1\)",
        ),
        (
            {"keys": [[1.0, 0.0]], "key_labels": ["a", "b"]},
            ValueError,
            r"one label per key: expected 1, got 2",
        ),
        (
            {"keys": [[1.0, 0.0]], "key_labels": "a"},
            TypeError,
            r"key_labels must be a list of strings",
        ),
        (
            {"keys": [[1.0, 0.0]], "lengths": [1.0]},
            ValueError,
            r"lengths must be a 1-D sequence of at least 2",
        ),
        ({"keys": [[1.0, 0.0]], "lengths": [1.0, -2.0]}, ValueError, r"lengths must be positive"),
        (
            {"keys": [[1.0, 0.0]], "n_angles": 1},
            ValueError,
            r"n_angles must be an int in \[2, 121\]; got 1",
        ),
        (
            {"keys": [[1.0, 0.0]], "angle_index": 99},
            ValueError,
            r"angle_index must be an int in \[0, 23\]; got 99",
        ),
        ({"keys": [[1.0, 0.0]], "length_index": 1.5}, TypeError, r"length_index must be an int"),
    ],
)
def test_plane_bad_inputs(kwargs, error, match) -> None:
    keys = kwargs.pop("keys")
    with pytest.raises(error, match=match):
        QueryKeyPlane(keys, **kwargs)


def test_plane_rejects_bad_index_from_python() -> None:
    w = QueryKeyPlane([[1.0, 0.0]], n_angles=4)
    with pytest.raises(ValueError, match=r"angle_index must be an int in \[0, 3\]; got -1"):
        w.angle_index = -1
    assert w.angle_index == 0


def test_plane_budget_is_enforced() -> None:
    with pytest.raises(ValueError, match=r"more than the budget of 50000; use a coarser grid"):
        QueryKeyPlane(_keys(0, 30), n_angles=121, lengths=np.linspace(0.1, 4, 20))


# ---- SentenceAttention --------------------------------------------------------------------------

EN = ["the", "cat", "sat", "on", "the", "mat"]
ZH = ["猫", "坐", "在", "垫子", "上"]


def _sentences(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [("English", EN, rng.normal(size=(6, 4))), ("中文", ZH, rng.normal(size=(5, 4)))]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("projected", [False, True])
def test_sentence_frames_equal_the_package_maths(seed, projected) -> None:
    rng = np.random.default_rng(seed + 50)
    w_q = rng.normal(size=(4, 3)) if projected else None
    w_k = rng.normal(size=(4, 3)) if projected else None
    sentences = _sentences(seed)
    w = SentenceAttention(sentences, w_q=w_q, w_k=w_k)
    for i, (_, _, x) in enumerate(sentences):
        q = x if w_q is None else x @ w_q  # (T, d_k)
        k = x if w_k is None else x @ w_k  # (T, d_k)
        oracle = torch.softmax(
            torch.tensor(q) @ torch.tensor(k).T / np.sqrt(q.shape[1]), dim=-1
        ).numpy()  # (T, T)
        np.testing.assert_allclose(w.frame(i), oracle, atol=5e-4)
        np.testing.assert_allclose(w.weight_matrix(i), oracle, atol=1e-10)


def test_sentence_reads_the_indices_javascript_sets() -> None:
    w = SentenceAttention(_sentences())
    w.set_state({"sentence_index": 1, "query_index": 3})
    assert w.query_token == "垫子" and w.sentence == ZH
    np.testing.assert_allclose(w.weights, w.weight_matrix(1)[3])
    w.set_state({"sentence_index": 0})
    assert w.query_index == 3 and w.query_token == "on"


def test_sentence_clamps_query_when_sentence_is_shorter() -> None:
    w = SentenceAttention(_sentences(), query_index=5)
    w.sentence_index = 1  # 5 tokens: index 5 no longer exists
    assert w.query_index == 4


@pytest.mark.parametrize(
    ("sentences", "kwargs", "error", "match"),
    [
        ([], {}, ValueError, r"at least one sentence; got 0"),
        ("the cat", {}, TypeError, r"sentences must be a list of \(label, tokens, vectors\)"),
        (
            [("s", ["a", "b"], np.zeros((3, 2)))],
            {},
            ValueError,
            r"sentences\[0\] vectors must have shape \(2, d\); got shape \(3, 2\)",
        ),
        (
            [("s", "a b", np.zeros((2, 2)))],
            {},
            TypeError,
            r"sentences\[0\] tokens must be a list of strings",
        ),
        ([{"label": "s", "tokens": ["a"]}], {}, ValueError, r"missing \['vectors'\]"),
        ([("", ["a"], np.zeros((1, 2)))], {}, TypeError, r"label must be a non-empty str"),
        (
            [("a", ["x"], np.zeros((1, 2))), ("b", ["y"], np.zeros((1, 3)))],
            {},
            ValueError,
            r"all sentences must share d_model = 2",
        ),
        (
            [("a", ["x"], np.zeros((1, 2)))],
            {"w_q": np.zeros((3, 2))},
            ValueError,
            r"w_q must have shape \(2, d\); got shape \(3, 2\)",
        ),
        (
            [("a", ["x"], np.zeros((1, 2)))],
            {"w_q": np.zeros((2, 3)), "w_k": np.zeros((2, 2))},
            ValueError,
            r"w_k must have shape \(2, 3\)",
        ),
        (
            [("a", ["x"], np.zeros((1, 2)))],
            {"query_index": 1},
            ValueError,
            r"query_index must be an int in \[0, 0\]; got 1",
        ),
    ],
)
def test_sentence_bad_inputs(sentences, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        SentenceAttention(sentences, **kwargs)


def test_sentence_keeps_hostile_tokens_as_plain_text() -> None:
    hostile = ["<img src=x onerror=alert(1)>", "<script>alert(2)</script>", "ok"]
    w = SentenceAttention([("x", hostile, np.eye(3))])
    assert w.tokens == [hostile]  # synced verbatim; the JS shows them with textContent


# ---- sizes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: QueryKeyPlane(_keys(0, 6), n_angles=36, lengths=(0.5, 1, 1.5, 2, 3, 4)),
        lambda: SentenceAttention(_sentences()),
    ],
    ids=["QueryKeyPlane", "SentenceAttention"],
)
def test_state_size_under_budget(make) -> None:
    w = make()
    assert w.data_bytes() < MAX_STATE_BYTES
    # The whole state, code included, is what a notebook stores for one view.
    assert w.state_bytes() < MAX_STATE_BYTES + len(w._esm) + len(w._css) + 2_000


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


def test_sentence_recomputes_when_sentences_change() -> None:
    w = SentenceAttention(_sentences(0))
    old = json.dumps(w.frames)
    x = np.random.default_rng(9).normal(size=(3, 4))  # (T, d_model)
    w.set_sentences([("new", ["a", "b", "c"], x)])
    assert json.dumps(w.frames) != old and w.labels == ["new"] and w.tokens == [["a", "b", "c"]]
    oracle = torch.softmax(torch.tensor(x) @ torch.tensor(x).T / 2.0, dim=-1).numpy()  # (T, T)
    np.testing.assert_allclose(w.weights, oracle[0], atol=1e-10)


hypothesis = pytest.importorskip("hypothesis")
st = pytest.importorskip("hypothesis.strategies")
hnp = pytest.importorskip("hypothesis.extra.numpy")


@hypothesis.settings(max_examples=40, deadline=None, derandomize=True)
@hypothesis.given(
    keys=hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 6), st.just(2)),
        elements=st.floats(-5, 5, allow_nan=False, allow_infinity=False),
    ),
    n_angles=st.integers(2, 24),
)
def test_plane_frames_are_distributions(keys, n_angles) -> None:
    """Every precomputed weight row is a probability distribution (up to the 3-decimal rounding)."""
    w = QueryKeyPlane(keys, n_angles=n_angles, lengths=(0.5, 2.0))
    weights = unpack_array(w.frames["weights"])  # (A, L, T_k)
    assert weights.shape == (n_angles, 2, keys.shape[0])
    assert (weights >= 0).all() and (weights <= 1).all()
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=keys.shape[0] * 5e-4)
    assert w.data_bytes() < MAX_STATE_BYTES
