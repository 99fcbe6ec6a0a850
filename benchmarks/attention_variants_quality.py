"""MHA, GQA, MQA and MLA in chapter 7's tiny LM: validation loss over seeds, same parameter budget.

Chapter 7's model (:class:`course_utils.causal.TinyCausalLM`: learned token and position
embeddings, pre-LN blocks, character-level) with the attention of every block swapped:

- MHA: :class:`course_utils.multihead.MultiHeadAttention`, 4 heads of width 16;
- GQA: the same with 2 k/v heads; MQA: with 1 k/v head (chapter 10);
- MLA: :class:`course_utils.mla.MultiHeadLatentAttention` (chapter 11), 4 heads, ``d_h = 16``,
  ``d_h^R = 8`` (DeepSeek-V2's ``d_h^R = d_h / 2``), the latent width ``d_c`` chosen so that the
  whole model has MHA's parameter count.

Same parameter budget: GQA and MQA have fewer attention weights, so their FFN is widened until the
model's total matches MHA's; MLA's total is matched through ``d_c``. Every variant is within 2 %
of MHA (the counts are printed and saved). The other differences are stated, not hidden: MLA has no
biases in its projections, RMSNorms on its latent, and its decoupled RoPE adds rotary positions to
the learned position embeddings that all four share.

Data: sentences from a small seeded grammar whose second clause repeats the first clause's subject
("the red fox saw a cow, then the red fox ran to a log."), so that predicting it needs attention
to the earlier words. Training text and validation text come from different seeds (no sentence
is shared on purpose; some coincide by chance, as the grammar is small). Every variant sees the same
batches (seeded by the run's seed) for the same number of steps with the same Adam settings, in
float64 on one thread with the weights snapped to float32's grid after each step
(:mod:`course_utils._determinism`), so a run is reproducible on this machine and the seeds differ
only in the initial weights and the batch order.

Saved to ``benchmarks/results/attention_variants_quality.json`` with the machine and its load:
per variant and seed the validation loss (nats per character) at the end, the curve, the
parameter count, the KV cache values per token per layer, and the training time (wall and
CPU, on a shared machine: read the losses, not the seconds). Chapter 11 (section 11.6) plots it
with :func:`course_utils.plotting.plot_attention_variants`.

Run: ``PYTHONPATH=src python benchmarks/attention_variants_quality.py`` (about 10 min on the
course's loaded 2-core machine; ``--steps`` and ``--seeds`` to change, ``--jobs 2`` to run two
at a time).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch
from _floor import load, machine, save_results
from torch import Tensor, nn

from course_utils import kv_cache
from course_utils._determinism import deterministic
from course_utils._training import held_out_loss, token_cross_entropy, train_adam
from course_utils.causal import CharTokenizer, TinyCausalLM
from course_utils.mla import MultiHeadLatentAttention
from course_utils.multihead import MultiHeadAttention

RESULTS = Path(__file__).resolve().parent / "results" / "attention_variants_quality.json"

D_MODEL, N_HEADS, D_HEAD, N_LAYERS, D_FF, CONTEXT = 64, 4, 16, 2, 128, 64
D_ROPE = 8  # MLA's d_h^R = d_h / 2, as DeepSeek-V2
VARIANTS = ("MHA", "GQA", "MQA", "MLA")
KV_HEADS = {"MHA": 4, "GQA": 2, "MQA": 1}

ADJ = ("red", "big", "old", "shy", "tall", "small")
NOUN = ("cat", "dog", "fox", "cow", "hen", "owl", "pig", "rat")
VERB = ("sat on", "saw", "ran to", "slept on", "looked at", "sat by")
PLACE = ("mat", "log", "rug", "box", "bed", "hill", "cow", "dog")


def grammar_text(n_sentences: int, seed: int) -> str:
    """``n_sentences`` sentences of the grammar, seeded; the subject comes back after "then"."""
    rng = random.Random(seed)
    out = []
    for _ in range(n_sentences):
        subject = f"{rng.choice(ADJ)} {rng.choice(NOUN)}"
        first = f"{rng.choice(('the', 'a'))} {subject} {rng.choice(VERB)} the {rng.choice(PLACE)}"
        second = f"then the {subject} {rng.choice(VERB)} a {rng.choice(PLACE)}"
        out.append(f"{first}, {second}. ")
    return "".join(out)


class MLASelfAttention(nn.Module):
    """:class:`MultiHeadLatentAttention` behind the call a :class:`TransformerBlock` makes of its
    attention (``attn(h, h, h, mask, return_weights, dropout=...)``); MLA is causal by itself, so
    the block's causal mask is checked and not applied twice."""

    def __init__(self, d_latent_kv: int) -> None:
        super().__init__()
        self.mla = MultiHeadLatentAttention(
            D_MODEL,
            N_HEADS,
            d_latent_kv=d_latent_kv,
            d_head_nope=D_HEAD,
            d_head_rope=D_ROPE,
            d_head_v=D_HEAD,
        )

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        return_weights: bool = False,
        dropout: nn.Module | None = None,
    ) -> Tensor:
        T = query.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=query.device).tril()
        if return_weights or mask is None or not torch.equal(mask, causal):
            raise ValueError("MLASelfAttention runs causal self-attention only, without weights")
        return self.mla(query)  # (B, T, d_model)


def build(variant: str, vocab: int, d_ff: int, d_latent_kv: int) -> TinyCausalLM:
    """Chapter 7's tiny LM with ``variant``'s attention in every block."""
    model = TinyCausalLM(
        vocab, CONTEXT, d_model=D_MODEL, n_heads=N_HEADS, d_ff=d_ff, n_layers=N_LAYERS
    )
    for block in model.blocks:
        if variant == "MLA":
            block.attn = MLASelfAttention(d_latent_kv)
        else:
            block.attn = MultiHeadAttention(D_MODEL, N_HEADS, KV_HEADS[variant])
    return model


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def matched_sizes(vocab: int) -> dict[str, dict[str, int]]:
    """Per variant, the FFN width and latent width that bring its parameter count closest to
    MHA's (``d_ff`` for GQA and MQA, ``d_latent_kv`` for MLA; MHA keeps ``D_FF``)."""
    target = n_params(build("MHA", vocab, D_FF, 1))
    sizes = {"MHA": {"d_ff": D_FF, "d_latent_kv": 0}}
    for variant in ("GQA", "MQA"):
        d_ff = min(
            range(D_FF, 4 * D_FF), key=lambda f: abs(n_params(build(variant, vocab, f, 1)) - target)
        )
        sizes[variant] = {"d_ff": d_ff, "d_latent_kv": 0}
    d_c = min(
        range(2, 4 * D_MODEL), key=lambda c: abs(n_params(build("MLA", vocab, D_FF, c)) - target)
    )
    sizes["MLA"] = {"d_ff": D_FF, "d_latent_kv": d_c}
    return sizes


def cache_values(variant: str, d_latent_kv: int) -> int:
    """KV cache values per token per layer (the package's counts, chapter 10 and 11)."""
    if variant == "MLA":
        return kv_cache.values_per_token_mla(d_latent_kv, D_ROPE)
    return kv_cache.values_per_token_gqa(KV_HEADS[variant], D_HEAD)


def windows(data: Tensor, stride: int) -> tuple[Tensor, Tensor]:
    """All windows of ``CONTEXT + 1`` characters every ``stride``: inputs and next characters."""
    starts = torch.arange(0, len(data) - CONTEXT - 1, stride)
    idx = starts[:, None] + torch.arange(CONTEXT + 1)  # (n, CONTEXT + 1)
    w = data[idx]
    return w[:, :-1], w[:, 1:]  # (n, CONTEXT) each


def run(
    variant: str,
    sizes: dict[str, int],
    seed: int,
    train: Tensor,
    val: tuple[Tensor, Tensor],
    vocab: int,
    steps: int,
    batch: int,
    lr: float,
    eval_every: int,
) -> dict[str, object]:
    with deterministic():  # float64, one thread
        torch.manual_seed(seed)
        model = build(variant, vocab, sizes["d_ff"], sizes["d_latent_kv"])
        g = torch.Generator().manual_seed(seed)

        def batch_loss() -> Tensor:
            starts = torch.randint(0, len(train) - CONTEXT - 1, (batch,), generator=g)
            w = train[starts[:, None] + torch.arange(CONTEXT + 1)]  # (batch, CONTEXT + 1)
            return token_cross_entropy(model, w[:, :-1], w[:, 1:])

        def evaluate() -> float:
            model.eval()
            loss = held_out_loss(model, *val)
            model.train()
            return loss

        wall, cpu = time.perf_counter(), time.process_time()
        model.train()
        at, losses = train_adam(
            model,
            batch_loss,
            steps=steps,
            lr=lr,
            eval_every=eval_every,
            evaluate=evaluate,
            at_start=True,
        )
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "seed": seed,
        "val_loss": losses[-1],
        "curve_steps": at,
        "curve_val_loss": losses,
        "train_wall_s": round(wall, 1),
        "train_cpu_s": round(cpu, 1),
    }


def prepare() -> tuple[str, str, CharTokenizer, Tensor, tuple[Tensor, Tensor]]:
    """The texts (training, validation), their tokenizer, the training ids ``(N,)`` and the
    validation windows: the same for every run, and for a test that trains one run again."""
    train_text, val_text = grammar_text(3000, seed=0), grammar_text(400, seed=1)
    tok = CharTokenizer(train_text + val_text)
    train = torch.tensor(tok.encode(train_text))  # (N,)
    val = windows(torch.tensor(tok.encode(val_text)), CONTEXT)  # (n, CONTEXT) x 2
    return train_text, val_text, tok, train, val


def compare_with_mha(variants: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Welch's t-test (unequal variances) of each variant's final losses against MHA's: ``t``
    (positive: the variant's mean loss is higher), the degrees of freedom and the two-sided
    ``p``. With five runs a side, a real but small difference often gives ``p`` above 0.05."""
    from scipy import stats  # a benchmark-only dependency (pinned in requirements.txt)

    mha = [r["val_loss"] for r in variants["MHA"]["runs"]]
    out = {}
    for name, v in variants.items():
        if name == "MHA":
            continue
        test = stats.ttest_ind([r["val_loss"] for r in v["runs"]], mha, equal_var=False)
        out[name] = {"t": float(test.statistic), "df": float(test.df), "p": float(test.pvalue)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--jobs", type=int, default=1, help="runs side by side (processes)")
    args = parser.parse_args()
    load_before = load()
    train_text, val_text, tok, train, val = prepare()
    sizes = matched_sizes(len(tok))
    params = {
        v: n_params(build(v, len(tok), s["d_ff"], s["d_latent_kv"])) for v, s in sizes.items()
    }
    for v in VARIANTS:
        print(
            f"{v}: {params[v]:,} parameters ({params[v] / params['MHA'] - 1:+.2%} vs MHA), "
            f"d_ff {sizes[v]['d_ff']}, d_c {sizes[v]['d_latent_kv']}, "
            f"cache {cache_values(v, sizes[v]['d_latent_kv'])} values/token/layer"
        )
    started = time.perf_counter()
    jobs = [(v, seed) for v in VARIANTS for seed in range(args.seeds)]
    common = (train, val, len(tok), args.steps, args.batch, args.lr, args.eval_every)
    # Each run is seeded and single-threaded, so running them side by side in processes gives the
    # same losses as one after the other (only the seconds change).
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {job: pool.submit(run, job[0], sizes[job[0]], job[1], *common) for job in jobs}
        done = {}
        for (v, seed), future in futures.items():
            r = done[v, seed] = future.result()
            print(
                f"{v} seed {seed}: val loss {r['val_loss']:.4f} ({r['train_wall_s']} s wall, "
                f"{r['train_cpu_s']} s CPU)",
                flush=True,
            )
    variants = {}
    for v in VARIANTS:
        runs = [done[v, seed] for seed in range(args.seeds)]
        losses = [r["val_loss"] for r in runs]
        variants[v] = {
            "params": params[v],
            **sizes[v],
            "cache_values_per_token_per_layer": cache_values(v, sizes[v]["d_latent_kv"]),
            "val_loss_mean": statistics.fmean(losses),
            "val_loss_std": statistics.stdev(losses) if len(losses) > 1 else 0.0,
            "runs": runs,
        }
        print(f"{v}: {variants[v]['val_loss_mean']:.4f} ± {variants[v]['val_loss_std']:.4f}")
    save_results(
        args.out,
        {
            "what": "chapter 7's tiny LM with MHA, GQA, MQA or MLA; validation loss (nats/char)",
            "machine": machine(),
            "load_average_before": load_before,
            "load_average_after": load(),
            "total_wall_s": round(time.perf_counter() - started, 1),
            "setup": {
                "d_model": D_MODEL,
                "n_heads": N_HEADS,
                "d_head": D_HEAD,
                "n_layers": N_LAYERS,
                "context": CONTEXT,
                "d_head_rope_mla": D_ROPE,
                "steps": args.steps,
                "batch": args.batch,
                "lr": args.lr,
                "seeds": args.seeds,
                "optimizer": "Adam",
                "dtype": "float64, weights snapped to float32 each step",
                "train_chars": len(train_text),
                "val_chars": len(val_text),
                "val_windows": int(val[0].shape[0]),
                "vocab": len(tok),
            },
            "variants": variants,
            "welch_vs_mha": compare_with_mha(variants),
        },
    )


if __name__ == "__main__":
    main()
