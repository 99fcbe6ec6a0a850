"""Benchmark the head explorer's browser path: MiniLM in Chromium (not a timed test).

Usage: python benchmarks/bench_browser_minilm.py [--site _build/html] [--repeats 5]
       [--json benchmarks/results/browser_minilm.json]

* Time to the first map after the first edit, through the widget on chapter 4's page, in a fresh
  browser context (empty cache): the sentence is typed into the text box and Enter pressed; the
  clock runs (``performance.now()`` in the page) from just before the edit until the widget says
  its map is drawn. Once on localhost, once throttled to 20 Mbit/s (Chromium DevTools network
  emulation through CDP: ``Network.emulateNetworkConditions``, 20 ms latency), which the worker's
  fetches obey too (the download time is reported to check it).
* Time per sentence at 10, 20, 50 and 100 tokens: a Web Worker of the site (the widget's own
  ``_static/minilm/worker.mjs``) with the model loaded runs each sentence ``--repeats`` times after
  one warm-up run (word chunks then cached); reported: the worker's own time (tokenizer + encoder +
  rollout) as median, min and max, and the round trip seen by the page. 100 tokens is over the
  widget's cap of 64; the worker is asked with a higher cap to measure it.
* Download sizes (from the built files) and the machine's load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "_ext")]
from course_site import BROWSER_MODEL_DIR  # noqa: E402
from course_site.browser import block_outside, launch, serve, site_dir  # noqa: E402

PAGE = "chapters/04_multi_head_attention.html"
SENTENCE = "Readers type their own sentence, and every head of the model looks at it."
LENGTHS = (10, 20, 50, 100)
WORDS = [
    "the",
    "model",
    "reads",
    "every",
    "word",
    "of",
    "this",
    "sentence",
    "and",
    "each",
    "head",
    "looks",
    "at",
    "other",
    "words",
]

READY_JS = "() => document.querySelector('.cu-head-explorer').dataset.cuOwn === 'ready'"

WORKER_JS = """
async ([url, texts, repeats]) => {
  const w = new Worker(url, {type: 'module'});
  const ask = (msg) => new Promise((resolve, reject) => {
    const on = (ev) => {
      if (ev.data.type === 'progress') return;
      w.removeEventListener('message', on);
      ev.data.type === 'error' ? reject(new Error(ev.data.message)) : resolve(ev.data);
    };
    w.addEventListener('message', on);
    w.postMessage(msg);
  });
  await ask({type: 'load'});
  const out = [];
  let id = 0;
  for (const text of texts) {
    await ask({type: 'run', id: ++id, text, maxTokens: 512});  // warm-up: fetches the word chunks
    const worker = [];
    const page = [];
    for (let r = 0; r < repeats; r++) {
      const t0 = performance.now();
      const res = await ask({type: 'run', id: ++id, text, maxTokens: 512});
      page.push(performance.now() - t0);
      worker.push(res.ms);
      if (r === 0) out.push({tokens: res.tokens.length});
    }
    Object.assign(out[out.length - 1], {worker_ms: worker, round_trip_ms: page});
  }
  w.terminate();
  return out;
}
"""


def sentence_of(n_tokens: int) -> str:
    """A sentence of exactly ``n_tokens`` tokens, [CLS] and [SEP] included (checked)."""
    from course_utils.pretrained import tokenize

    words = [WORDS[i % len(WORDS)] for i in range(n_tokens - 2)]
    text = " ".join(words)
    assert len(tokenize(text)[0]) == n_tokens, text
    return text


def first_map(browser: Any, url: str, mbit: float | None) -> dict[str, Any]:
    """Fresh context; type the sentence, press Enter; ms until the widget's map is drawn."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    blocked: list[str] = []
    block_outside(context, (url,), blocked)
    page = context.new_page()
    fetched: list[tuple[float, str]] = []
    context.on("requestfinished", lambda r: fetched.append((time.monotonic(), r.url)))
    if mbit is not None:
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        rate = mbit * 1e6 / 8  # bytes per second
        cdp.send(
            "Network.emulateNetworkConditions",
            {"offline": False, "latency": 20, "downloadThroughput": rate, "uploadThroughput": rate},
        )
    page.goto(url + PAGE, wait_until="load")
    page.evaluate("() => window.courseWidgetLoader && window.courseWidgetLoader.ready")
    box = page.locator(".cu-head-explorer .cu-he-input")
    box.wait_for()
    t0 = page.evaluate("() => performance.now()")
    start = time.monotonic()
    box.fill(SENTENCE)
    box.press("Enter")
    page.wait_for_function(READY_JS, timeout=600_000, polling=20)
    t1 = page.evaluate("() => performance.now()")
    model = [t for t, u in fetched if f"/{BROWSER_MODEL_DIR}/model/weights.bin" in u]
    worker_ms = page.evaluate("() => document.querySelector('.cu-head-explorer').cuHeadExplorer.ms")
    context.close()
    assert not blocked, blocked
    return {
        "network": f"throttled to {mbit:g} Mbit/s, 20 ms latency" if mbit else "localhost",
        "first_map_ms": round(t1 - t0, 1),
        "weights_downloaded_after_ms": round((model[0] - start) * 1000, 1) if model else None,
        "sentence_worker_ms": round(worker_ms, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=site_dir())
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--json", type=Path, default=ROOT / "benchmarks/results/browser_minilm.json"
    )
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    model = args.site / BROWSER_MODEL_DIR / "model"
    manifest = json.loads((model / "manifest.json").read_text(encoding="utf-8"))
    upfront = sum(
        (model / f).stat().st_size for f in ("manifest.json", "vocab.json", "weights.bin")
    )
    texts = [sentence_of(n) for n in LENGTHS]
    result: dict[str, Any] = {
        "setup": {
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, shared",
            "browser": "Debian Chromium, headless (Playwright)",
            "load_before": list(os.getloadavg()),
        },
        "download": {
            "upfront_bytes": upfront,
            "packing": manifest["packing"],
            "word_chunk_bytes_max": max(manifest["words"]["file_bytes"]),
            "word_chunk_bytes_unpacked": manifest["words"]["chunk_bytes"],
            "word_chunks": manifest["words"]["chunks"],
            "dtype": manifest["dtype"],
        },
    }
    with serve(args.site) as url, sync_playwright() as p:
        browser = launch(p)
        result["first_map"] = [first_map(browser, url, None), first_map(browser, url, 20.0)]
        context = browser.new_context()
        page = context.new_page()
        page.goto(url + PAGE, wait_until="load")
        rows = page.evaluate(WORKER_JS, [url + "_static/minilm/worker.mjs", texts, args.repeats])
        context.close()
        browser.close()
    result["per_sentence"] = [
        {
            "tokens": r["tokens"],
            "worker_ms_median": round(statistics.median(r["worker_ms"]), 1),
            "worker_ms_min": round(min(r["worker_ms"]), 1),
            "worker_ms_max": round(max(r["worker_ms"]), 1),
            "round_trip_ms_median": round(statistics.median(r["round_trip_ms"]), 1),
            "repeats": len(r["worker_ms"]),
        }
        for r in rows
    ]
    result["setup"]["load_after"] = list(os.getloadavg())
    text = json.dumps(result, indent=1)
    print(text)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
