"""SmolLM2-135M generating in Chromium (chapter 7's writer widget), against our Python model.

* ``test_the_worker_equals_python_on_20_prompts`` (``-m browser_model``, ``make
  test-browser-model``; run by ``.ci/run`` after ``make test``, a few minutes): the browser's worker
  (WebAssembly kernels, deflated streams, the Cache API) on 20 fixed prompts, 5 in Chinese and
  several over 100 tokens, 32 new tokens each, some with heads knocked out: its greedy tokens equal
  :func:`course_utils.causal.generate`'s (with knocked-out heads too:
  ``tests/smollm2_reference.py``),
  the logits of its top-5 candidates at
  every step and the attention weights of every layer and head at three steps are within 1e-3 of
  the Python model's.
* ``test_the_writer_on_the_chapter_page`` (``make test``'s browser phase): on chapter 7's page,
  nothing of the model is fetched before Generate; the prompt box's name says "prompt"; one
  prompt's tokens (``data-token-ids``) and the shown head's weights (``data-weights``,
  ``data-layer``, ``data-head``) equal Python's; knocking the head out and generating again runs
  with that head silenced; no request leaves the site; no console error.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from course_site import SMOLLM2_MODEL_DIR
from course_site.browser import SMOLLM2_HARNESS_HTML, block_outside, serve
from course_utils.pretrained.smollm2 import load_smollm2
from course_utils.pretrained.smollm2_web import (
    download_bytes,
    phone_estimate,
    prepare_export,
    write_browser_files,
)
from tests.smollm2_reference import greedy_run

TOLERANCE = 1e-3
N_NEW = 32
#: (prompt, knocked-out heads): 20 prompts, 5 in Chinese, several over 100 tokens.
LONG_EN = (
    "The attention mechanism lets every token of a sentence look at every other token and decide "
    "how much of each to take. A query is compared with every key; the scores are scaled by the "
    "square root of the key's dimension, turned into weights by a softmax, and the values are "
    "summed with those weights. Many heads do this side by side, each with its own projections, "
    "and their outputs are joined and projected once more. In a decoder the mask hides the future, "
    "so that a model trained to predict the next token cannot peek at it. "
    "Summarise this in one line:"
)
LONG_ZH = (
    "注意力机制让句子中的每个词都能看到其他所有的词，并决定从每个词那里取多少信息。查询与每个键比较，"
    "得分除以键维度的平方根，再经过 softmax 变成权重，"
    "最后用这些权重对值加权求和。多个注意力头并行地"
    "做这件事，每个头有自己的投影矩阵。请用一句话总结："
)
PROMPTS: list[tuple[str, list[str]]] = [
    ("The capital of France is", []),
    ("Once upon a time, there was a little cat who", []),
    ("Once upon a time, there was a little cat who", ["0:3", "12:5"]),
    ("def fibonacci(n):", []),
    ("The three primary colours are", []),
    ("Water boils at", []),
    (
        "<|im_start|>user\nWhat is attention in a neural network?<|im_end|>\n"
        "<|im_start|>assistant\n",
        [],
    ),
    (
        "<|im_start|>user\nName three fruits.<|im_end|>\n<|im_start|>assistant\n",
        ["3:0", "3:1", "3:2"],
    ),
    ("Q: What is 12 plus 7?\nA:", []),
    ("The quick brown fox", ["29:8"]),
    (LONG_EN, []),
    (LONG_EN, ["5:4"]),
    ("Here is a short poem about the sea:\n", []),
    ("In 1969, the first humans", []),
    ("Python lists and tuples differ in that", []),
    ("我喜欢看书，因为", []),
    ("<|im_start|>user\n用一句话解释注意力机制。<|im_end|>\n<|im_start|>assistant\n", []),
    ("北京是中国的", []),
    (LONG_ZH, []),
    ("春天来了，", ["1:1"]),
]
KEEP_STEPS = (0, N_NEW // 2, N_NEW - 1)  # steps whose every attention weight is compared


def _python_runs(prompts: list[tuple[str, list[str]]], n_new: int) -> list[dict[str, Any]]:
    model = load_smollm2()
    runs = []
    for prompt, knockout in prompts:
        heads = [tuple(int(x) for x in k.split(":")) for k in knockout]
        runs.append(
            {"prompt": prompt, "knockout": knockout, "ref": greedy_run(model, prompt, n_new, heads)}
        )
    return runs


def _compare(run: dict[str, Any], messages: list[dict[str, Any]], keep: tuple[int, ...]) -> dict:
    ref = run["ref"]
    tokens = [m for m in messages if m["type"] == "token"]
    assert messages[-1]["type"] == "done", messages[-1]
    prompt = next(m for m in messages if m["type"] == "prompt")
    assert prompt["ids"] == ref.ids, run["prompt"]
    got = [m["token"] for m in tokens]
    assert got == ref.tokens, (
        f"{run['prompt'][:40]!r} knockout {run['knockout']}: {got} != {ref.tokens}"
    )
    worst_logit = worst_weight = 0.0
    for m in tokens:
        i = m["index"]
        for c in m["top"]:
            worst_logit = max(worst_logit, abs(c["logit"] - float(ref.logits[i, c["id"]])))
        if i in keep:
            w = np.asarray(m["weights"], dtype=np.float64)
            worst_weight = max(worst_weight, float(np.abs(w - ref.weights(i).ravel()).max()))
    ms = [m["at"] for m in messages]
    return {"logits": worst_logit, "weights": worst_weight, "first_token_ms": ms[2] - ms[0]}


@pytest.mark.browser
@pytest.mark.browser_model
def test_the_worker_equals_python_on_20_prompts(browser: Any, tmp_path: Path) -> None:
    write_browser_files(tmp_path / "smollm2")
    (tmp_path / "index.html").write_text(SMOLLM2_HARNESS_HTML, encoding="utf-8")
    runs = _python_runs(PROMPTS, N_NEW)
    assert sum(1 for p, _ in PROMPTS if any("\u4e00" <= ch <= "\u9fff" for ch in p)) == 5
    assert sum(1 for r in runs if len(r["ref"].ids) > 100) >= 2
    problems: list[str] = []
    with serve(tmp_path) as url:
        context = browser.new_context()
        blocked: list[str] = []
        block_outside(context, (url,), blocked)
        page = context.new_page()
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("console", lambda m: m.type in ("error", "warning") and problems.append(m.text))
        page.goto(url + "index.html")
        ready = page.evaluate("() => window.smollm2Ready")
        assert ready["simd"], "the WebAssembly SIMD kernels did not load"
        worst = {"logits": 0.0, "weights": 0.0}
        for i, run in enumerate(runs):
            request = {
                "id": i + 1,
                "prompt": run["prompt"],
                "nNew": N_NEW,
                "temperature": 0,
                "knockout": run["knockout"],
            }
            messages = page.evaluate(
                "([r, k]) => window.smollm2(r, k)", [request, list(KEEP_STEPS)]
            )
            found = _compare(run, messages, KEEP_STEPS)
            worst = {k: max(worst[k], found[k]) for k in worst}
        context.close()
    print(json.dumps(worst))
    assert not blocked and not problems, (blocked, problems)
    assert worst["logits"] <= TOLERANCE and worst["weights"] <= TOLERANCE, worst


#: The widget's state, read from its elements.
WIDGET_JS = """
() => {
  const w = document.querySelector('.cu-smollm2-writer');
  const strip = w.querySelector('.cu-sw-strip');
  const out = w.querySelector('.cu-sw-output');
  return {run: w.dataset.cuRun || '', ids: JSON.parse(out.dataset.tokenIds),
          weights: JSON.parse(strip.dataset.weights), layer: Number(strip.dataset.layer),
          head: Number(strip.dataset.head)};
}
"""


@functools.lru_cache(maxsize=4)
def _reference(prompt: str, n_new: int, knockout: tuple[tuple[int, int], ...]) -> Any:
    """The Python model's greedy run, computed once per test session."""
    return greedy_run(load_smollm2(), prompt, n_new, list(knockout))


@pytest.mark.browser
@pytest.mark.parametrize("edition", ["", "zh/"])
def test_the_writer_on_the_chapter_page(
    browser: Any, site_url: str, site_root: Path, edition: str
) -> None:
    page_rel = edition + "chapters/07_causal_attention.html"
    assert (site_root / SMOLLM2_MODEL_DIR / "manifest.json").is_file(), "the build wrote no model"
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    blocked: list[str] = []
    block_outside(context, (site_url,), blocked)
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    problems: list[str] = []
    page = context.new_page()
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("console", lambda m: m.type in ("error", "warning") and problems.append(m.text))
    try:
        page.goto(site_url + page_rel)
        page.wait_for_selector(".cu-smollm2-writer .cu-sw-go")
        page.wait_for_load_state("networkidle")
        assert not [u for u in requests if "/smollm2/" in u], "the model loaded before Generate"
        box = page.get_by_role("textbox", name="prompt")
        box.scroll_into_view_if_needed()
        prompt = "The capital of France is"
        box.fill(prompt)
        page.select_option(".cu-smollm2-writer select >> nth=1", index=0)  # 8 new tokens
        page.click(".cu-smollm2-writer .cu-sw-go")
        page.wait_for_function(f"() => ({WIDGET_JS})().run === 'done'", timeout=300_000)
        shown = page.evaluate(WIDGET_JS)
        ref = _reference(prompt, 8, ())
        assert shown["ids"] == ref.tokens
        want = ref.weights(7)[shown["layer"], shown["head"]]
        assert np.abs(np.asarray(shown["weights"]) - want).max() <= TOLERANCE
        # knock the shown head out and run again: the worker silences it (checked in Python);
        # the same code in both editions, so once
        if not edition:
            page.click(".cu-smollm2-writer .cu-sw-knock")
            page.click(".cu-smollm2-writer .cu-sw-go")
            page.wait_for_function(
                f"() => ({WIDGET_JS})().run === 'done' && document.querySelector('.cu-sw-knock')"
                ".getAttribute('aria-pressed') === 'true'",
                timeout=300_000,
            )
            page.wait_for_function(f"() => ({WIDGET_JS})().run === 'done'", timeout=300_000)
            again = page.evaluate(WIDGET_JS)
            silenced = ((shown["layer"], shown["head"]),)
            assert again["ids"] == _reference(prompt, 8, silenced).tokens
    finally:
        context.close()
    assert not blocked, blocked
    assert not problems, problems


@pytest.mark.browser
def test_the_writer_on_a_phone(browser: Any, site_url: str) -> None:
    """390 px wide, touch: nothing sticks out sideways, a tap on the grid picks a head, a tap on
    Generate runs the model, and the widget says how long a phone may take (in numbers)."""
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    blocked: list[str] = []
    block_outside(context, (site_url,), blocked)
    page = context.new_page()
    try:
        page.goto(site_url + "chapters/07_causal_attention.html")
        page.wait_for_selector(".cu-smollm2-writer .cu-sw-go")
        width = page.evaluate("() => document.scrollingElement.scrollWidth")
        assert width <= 390, f"the page is {width} px wide at 390 px"
        note = page.inner_text(".cu-smollm2-writer .cu-sw-phone")
        # how long a phone may take, in numbers: the download's minutes and the tokens per second
        estimate = phone_estimate(download_bytes(prepare_export()))
        for value in (estimate["minutes"] + " min", estimate["mid"] + " tokens/s"):
            assert value in note, (value, note)
        grid = page.locator(".cu-smollm2-writer .cu-sw-grid")
        grid.scroll_into_view_if_needed()
        box = grid.bounding_box()
        # the cell of layer 2, head 5: 9 columns of 42 px, 30 rows of 11 px in the canvas' units
        grid.tap(position={"x": box["width"] * (5.5 / 9), "y": box["height"] * (2.5 / 30)})
        shown = page.evaluate(WIDGET_JS)
        assert (shown["layer"], shown["head"]) == (2, 5)
        page.select_option(".cu-smollm2-writer select >> nth=1", index=0)  # 8 new tokens
        page.locator(".cu-smollm2-writer .cu-sw-go").tap()
        page.wait_for_function(f"() => ({WIDGET_JS})().run === 'done'", timeout=300_000)
        ref = _reference("The capital of France is", 8, ())
        assert page.evaluate(WIDGET_JS)["ids"] == ref.tokens
    finally:
        context.close()
    assert not blocked, blocked
