"""Attention sinks, measured: SmolLM2's perplexity on a long text with a bounded KV cache.

    PYTHONPATH=src .venv/bin/python benchmarks/streaming_sinks.py [--tokens 640 --cache 128]

StreamingLLM (Xiao et al. 2023, "Efficient Streaming Language Models with Attention Sinks")
observes that a language model whose KV cache is a plain rolling window falls apart as soon as
the first tokens leave the window, and that keeping just those first few tokens (4 "attention
sinks") beside the window restores it. Three runs of SmolLM2-135M-Instruct
(:func:`course_utils.pretrained.load_smollm2`, float32, one thread) over the same text:

(a) **full cache**: every token attends to all earlier ones (one causal forward pass; equal to a
    full :class:`~course_utils.kv_cache.KVCache` fed token by token, tests/test_smollm2.py);
(b) **rolling window**: ``StreamingKVCache(window=cache, n_sink=0)``, fed one token at a time;
(c) **window + 4 sinks**: ``StreamingKVCache(window=cache - 4, n_sink=4)``, the same cache size.

Both bounded caches number positions within the cache, as the paper does (see
:class:`~course_utils.kv_cache.StreamingKVCache`). The text is the course's own: the prose
(markdown cells) of chapter 7, ``chapters/07_causal_attention.ipynb``, first ``--tokens`` tokens
(no BOS token is added: the text's first tokens are the sinks). Perplexity is ``exp`` of the mean
negative log-likelihood of each next token; "after eviction" counts only the predictions made
by tokens ``t >= cache``, each appended to a full cache, so that something was evicted (before
that the three runs compute the same thing; for the full cache it is the same range of tokens).

Writes ``benchmarks/results/streaming_sinks.json``. The recorded run took 2 min 55 s of wall time
(model load included) on 2 shared cores at load average 3.3 (an earlier run at 4.3: 4 min 8 s);
shrink ``--tokens`` to go faster.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from course_utils._determinism import one_thread
from course_utils.kv_cache import StreamingKVCache
from course_utils.pretrained import load_smollm2

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "streaming_sinks.json"
TEXT = ROOT / "chapters" / "07_causal_attention.ipynb"
BLOCK = 64  # tokens per point of the NLL curve


def chapter_prose(path: Path) -> str:
    """The markdown cells of a notebook, joined by blank lines."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def nll_full(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """Negative log-likelihood of tokens 1..N-1, full causal attention: ``(N - 1,)``."""
    logits = model(ids)[0, :-1]  # (N - 1, vocab)
    return F.cross_entropy(logits, ids[0, 1:], reduction="none")  # (N - 1,)


def nll_streaming(
    model: torch.nn.Module, ids: torch.Tensor, window: int, n_sink: int
) -> torch.Tensor:
    """The same, one token at a time through a StreamingKVCache per layer: ``(N - 1,)``."""
    caches = [StreamingKVCache(window=window, n_sink=n_sink) for _ in model.layers]
    out = []
    for t in range(ids.size(1) - 1):
        logits = model(ids[:, t : t + 1], cache=caches)[0, -1]  # (vocab,)
        out.append(F.cross_entropy(logits[None], ids[0, t + 1 : t + 2]))
    return torch.stack(out)  # (N - 1,)


def summary(name: str, nll: torch.Tensor, cache: int, seconds: float, **extra: int) -> dict:
    after = nll[cache:]  # predictions of tokens t >= cache, appended to a full cache
    blocks = [float(b.mean()) for b in nll.split(BLOCK)]
    return {
        "config": name,
        **extra,
        "perplexity": math.exp(float(nll.mean())),
        "perplexity_after_eviction": math.exp(float(after.mean())),
        "predictions_after_eviction": len(after),
        f"mean_nll_per_{BLOCK}_tokens": blocks,
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=640)
    parser.add_argument("--cache", type=int, default=128, help="tokens a bounded cache holds")
    parser.add_argument("--sinks", type=int, default=4)
    args = parser.parse_args()
    model = load_smollm2()
    all_ids = model.tokenizer.encode(chapter_prose(TEXT))
    if len(all_ids) < args.tokens:
        raise SystemExit(f"the text has {len(all_ids)} tokens, fewer than --tokens {args.tokens}")
    ids = torch.tensor([all_ids[: args.tokens]])  # (1, N)
    rows = []
    with one_thread(), torch.no_grad():
        runs = [
            ("full cache", None, None),
            ("rolling window", args.cache, 0),
            (f"window + {args.sinks} sinks", args.cache - args.sinks, args.sinks),
        ]
        for name, window, n_sink in runs:
            t0 = time.perf_counter()
            if window is None:
                nll = nll_full(model, ids)
                extra = {}
            else:
                nll = nll_streaming(model, ids, window, n_sink)
                extra = {"window": window, "n_sink": n_sink}
            row = summary(name, nll, args.cache, time.perf_counter() - t0, **extra)
            rows.append(row)
            print(
                f"{name:>20}: perplexity {row['perplexity']:8.2f}, after eviction "
                f"{row['perplexity_after_eviction']:8.2f} ({row['seconds']} s)"
            )
    result = {
        "what": "SmolLM2-135M-Instruct perplexity (float32, one thread) on the first tokens of "
        "chapter 7's prose, with a full KV cache, a rolling-window cache and a window + attention "
        "sinks cache of the same size (StreamingLLM, positions within the cache)",
        "text": str(TEXT.relative_to(ROOT)) + " (markdown cells)",
        "tokens": args.tokens,
        "cache_tokens": args.cache,
        "torch": torch.__version__,
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "rows": rows,
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print("wrote", RESULTS)


if __name__ == "__main__":
    main()
