"""SmolLM2-135M in headless Chromium (chapter 7's writer): download, first token, tokens per second.
Not a test: run by hand.

    PYTHONPATH=src:_ext .venv/bin/python benchmarks/bench_browser_smollm2.py \
        [--reps 3] [--save PATH]

The browser path (:mod:`course_utils.pretrained.smollm2_web`: the worker, its WebAssembly SIMD
kernels, the deflated model files) is written into a temporary folder and served on 127.0.0.1 with
the page ``course_site.browser.SMOLLM2_HARNESS_HTML``, which drives the worker as the widget does.
The worker is one thread: every time below is one core's.

* **download**: bytes of the first load (the manifest's ``download_bytes``), and the seconds from
  the page's start to a ready model, first with an empty cache and then from the browser's cache
  (a second page of the same browser context);
* **first token**: from the request to the first new token, for a 16-token prompt (tokenizing,
  the prompt's pass, the first step), after the download;
* **tokens per second at 100 tokens of context**: a prompt of about 90 tokens, 24 new tokens;
  the rate over new tokens 5 to 24 (context 95 to 114), by the worker's own clock.

Each measure is the best of ``--reps`` runs (the machine's other work only slows a run down).
Writes ``benchmarks/results/browser_smollm2.json`` with the machine and the load average.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _floor import load, machine, save_results

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "_ext")]

from course_site.browser import SMOLLM2_HARNESS_HTML, launch, serve  # noqa: E402
from course_utils.pretrained.smollm2 import load_smollm2  # noqa: E402
from course_utils.pretrained.smollm2_web import write_browser_files  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "browser_smollm2.json"
SHORT = "Attention lets every token of a sentence look at every other token, and so it"  # 16 tokens
LONG = (
    "The attention mechanism lets every token of a sentence look at every other token and decide "
    "how much of each to take. A query is compared with every key; the scores are scaled by the "
    "square root of the key's dimension, turned into weights by a softmax, and the values are "
    "summed with those weights. Many heads do this side by side, each with its own projections. "
    "Summarise the idea for a child:"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--save", type=Path, default=RESULTS)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    tok = load_smollm2().tokenizer
    n_short, n_long = len(tok.encode(SHORT)), len(tok.encode(LONG))
    assert n_short == 16, f"the short prompt is {n_short} tokens, not 16"
    before = load()
    first, rates, cold, warm = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        site = Path(tmp)
        write_browser_files(site / "smollm2")
        (site / "index.html").write_text(SMOLLM2_HARNESS_HTML, encoding="utf-8")
        with serve(site) as url:
            browser = launch(p)
            for rep in range(args.reps):
                context = browser.new_context()
                for kind in ("cold", "warm"):
                    page = context.new_page()
                    start = time.perf_counter()
                    page.goto(url + "index.html")
                    ready = page.evaluate("() => window.smollm2Ready")
                    (cold if kind == "cold" else warm).append(time.perf_counter() - start)
                    assert ready["cached"] == (kind == "warm"), ready
                    download = ready["bytes"]
                    simd = ready["simd"]
                short = page.evaluate(
                    "(r) => window.smollm2(r)",
                    {"id": 1, "prompt": SHORT, "nNew": 2, "temperature": 0, "knockout": []},
                )
                asked = short[0]["at"]
                first.append(next(m["at"] for m in short if m["type"] == "token") - asked)
                long = page.evaluate(
                    "(r) => window.smollm2(r)",
                    {"id": 2, "prompt": LONG, "nNew": 24, "temperature": 0, "knockout": []},
                )
                ms = [m["ms"] for m in long if m["type"] == "token"][4:]
                rates.append(1000 * len(ms) / sum(ms))
                context.close()
                print(f"rep {rep}: first token {first[-1]:.0f} ms, {rates[-1]:.1f} tokens/s")
            browser.close()
    result = {
        "what": "SmolLM2-135M-Instruct in headless Chromium (one Web Worker thread), the course's "
        "WebAssembly SIMD kernels on the GGUF's Q4_1/Q8_0 blocks; best of reps",
        **machine(),
        "browser": "Debian chromium (Playwright, headless)",
        "load_average_before": before,
        "load_average_after": load(),
        "reps": args.reps,
        "simd": simd,
        "download_bytes": download,
        "ready_seconds_empty_cache": min(cold),
        "ready_seconds_from_cache": min(warm),
        "short_prompt_tokens": n_short,
        "first_token_ms": min(first),
        "first_token_ms_median": statistics.median(first),
        "long_prompt_tokens": n_long,
        "context_for_rate": [n_long + 5, n_long + 24],
        "tokens_per_s": max(rates),
        "tokens_per_s_median": statistics.median(rates),
    }
    for key in ("download_bytes", "first_token_ms", "tokens_per_s", "ready_seconds_empty_cache"):
        print(f"{key}: {result[key]}")
    save_results(args.save, result)


if __name__ == "__main__":
    main()
