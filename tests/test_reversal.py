"""The toy encoder–decoder of chapter 8: data, a short training run, alignment measure."""

from __future__ import annotations

import pytest
import torch

from course_utils.experiments.reversal import (
    EOS,
    ReversalModel,
    alignment_accuracy,
    decode,
    encode,
    make_batch,
    train_reversal,
)


def test_batch_targets_are_reversed_words():
    src, lengths, tgt = make_batch(50, 2, 8, torch.Generator().manual_seed(3))
    assert src.shape == (50, 8) and tgt.shape == (50, 9)
    for s, n, t in zip(src, lengths, tgt, strict=True):
        assert decode(t) == decode(s[:n])[::-1]
        assert int(t[n]) == EOS and bool((s[n:] == 0).all())


def test_short_run_reaches_the_expected_loss():
    run = train_reversal(seeds=(0,), steps=150, eval_every=150)[0]
    assert run.losses[0] > 2.0  # about ln(13) before training
    assert run.losses[-1] < 0.5
    assert run.steps == [0, 150]


def test_runs_are_deterministic(computed_every_time: None) -> None:
    a = train_reversal(seeds=(1,), steps=5, eval_every=5, batch=8)[0]
    b = train_reversal(seeds=(1,), steps=5, eval_every=5, batch=8)[0]
    assert a.losses == b.losses


def test_padding_does_not_change_the_output_when_masked():
    torch.manual_seed(0)
    model = ReversalModel().eval()
    long_src, lengths = encode(["cab"], t_k=8)
    noisy = long_src.clone()
    noisy[0, 3:] = 5  # padding positions hold letters: the mask must hide them anyway
    a, _ = model.generate(long_src, lengths)
    b, _ = model.generate(noisy, lengths)
    assert torch.equal(a, b)
    c, _ = model.generate(noisy, lengths, use_padding_mask=False)
    assert c.shape == a.shape


def test_alignment_accuracy_of_a_perfect_anti_diagonal():
    lengths = torch.tensor([3, 2])
    cross = torch.zeros(2, 1, 4, 3)
    for b, n in enumerate(lengths.tolist()):
        for i in range(n):
            cross[b, 0, i, n - 1 - i] = 1.0
    assert alignment_accuracy(cross, lengths) == 1.0
    cross[0, 0, 0] = torch.tensor([1.0, 0, 0])
    assert alignment_accuracy(cross, lengths) == pytest.approx(4 / 5)


@pytest.mark.parametrize("bad", [[], "abc", ["abz"], [""]])
def test_encode_rejects_bad_words(bad):
    with pytest.raises(ValueError, match="word"):
        encode(bad)


def test_encoder_mask_switch_changes_only_the_encoder():
    """With the encoder's mask, the memory at real positions ignores how much padding follows;
    without it (chapter 8, exercise 8.4) the padding leaks into it."""
    from course_utils.experiments.reversal import ReversalModel, encode

    torch.manual_seed(0)
    model = ReversalModel().eval()
    short, n = encode(["cab"], t_k=3)
    padded, _ = encode(["cab"], t_k=8)
    with torch.no_grad():
        a, _ = model.encode(short, n)
        b, _ = model.encode(padded, n)
        c, keep = model.encode(padded, n, use_encoder_mask=False)
    assert torch.allclose(a, b[:, :3], atol=1e-6)
    assert not torch.allclose(a, c[:, :3], atol=1e-3)
    assert keep[0, 0].tolist() == [True] * 3 + [False] * 5  # the mask is returned either way


def test_exact_match_by_padding_groups_by_padding():
    from course_utils.experiments.reversal import ReversalModel, exact_match_by_padding, held_out

    src, lengths, tgt = held_out(40)
    torch.manual_seed(0)
    share = exact_match_by_padding(ReversalModel(), src, lengths, tgt, use_encoder_mask=False)
    assert sorted(share) == sorted(set((src.size(1) - lengths).tolist()))
    assert all(0.0 <= v <= 1.0 for v in share.values())


# --- greedy decoding with a cached source -------------------------------------------------------


@pytest.mark.parametrize(
    ("seed", "words", "n_steps", "size"),
    [
        (0, ["cab", "jihgfedc"], None, {}),
        (1, ["a", "bbbbbbbb", "dea"], 4, {}),
        (2, ["abcdefgh"], 9, {"n_layers": 1, "n_heads": 4}),
        (3, ["hij", "fe"], 1, {"d_model": 16, "d_ff": 32, "n_layers": 3}),
    ],
)
def test_naive_and_cached_decoding_match_the_full_forward_pass(seed, words, n_steps, size):
    """Same tokens, and logits within 1e-6 of teacher forcing on the decoded sequence."""
    torch.manual_seed(seed)
    model = ReversalModel(**size).eval()
    src, lengths = encode(words)
    ids_naive, logits_naive = model.greedy_decode(src, lengths, n_steps=n_steps, cached=False)
    ids_cached, logits_cached = model.greedy_decode(src, lengths, n_steps=n_steps, cached=True)
    steps = model.max_len + 1 if n_steps is None else n_steps
    assert ids_naive.shape == (len(words), steps) and logits_cached.shape == (len(words), steps, 13)
    assert torch.equal(ids_naive, ids_cached)
    with torch.no_grad():
        full = model(src, lengths, ids_cached)  # (B, steps, vocab): one pass, teacher forcing
    assert torch.equal(full.argmax(-1), ids_cached)
    # the benchmark's third path: self-attention cached, the memory projected at every step
    with torch.no_grad():
        memory, keep = model.encode(src, lengths)
        ids_self, logits_self = model._greedy(memory, keep, steps, cached=True, cross_once=False)
    assert torch.equal(ids_self, ids_cached)
    for logits in (logits_naive, logits_cached, logits_self):
        assert (logits - full).abs().max().item() < 1e-6


def test_generate_is_the_naive_greedy_decoding_of_a_trained_model():
    (run,) = train_reversal(seeds=(0,), steps=150, eval_every=150)
    src, lengths = encode(["abcdefgh", "cab", "jihgf"])
    out, _ = run.model.generate(src, lengths)
    ids_naive, _ = run.model.greedy_decode(src, lengths, cached=False)
    ids_cached, _ = run.model.greedy_decode(src, lengths, cached=True)
    assert torch.equal(out, ids_naive) and torch.equal(out, ids_cached)


@pytest.mark.parametrize(("word", "n_steps"), [("abcdefgh", 9), ("cab", 4), ("jihgfe", 2)])
def test_cross_kv_multiplies_against_torch_flop_counter(word, n_steps):
    """Oracle: torch.utils.flop_counter (2 FLOPs per multiply-add) on the cross-attention's W_K
    and W_V during naive decoding, and on the once-per-source projections of the cached one."""
    from torch.utils.flop_counter import FlopCounterMode

    from course_utils.transformer_cost import cross_kv_multiplies

    torch.manual_seed(0)
    model = ReversalModel().eval()
    src, lengths = encode([word])
    t_src, d, layers = len(word), model.d_model, len(model.decoder)
    with FlopCounterMode(display=False) as naive:
        model.greedy_decode(src, lengths, n_steps=n_steps, cached=False)
    counts = naive.get_flop_counts()
    flops = sum(sum(counts[f"DecoderBlock.cross_attn.{w}"].values()) for w in ("W_K", "W_V"))
    assert flops == 2 * cross_kv_multiplies(d, t_src, n_steps, layers, cached=False)

    # the cached decoding projects the memory in cross_kv only, once per block ...
    calls = []
    for block in model.decoder:
        for w in (block.cross_attn.W_K, block.cross_attn.W_V):
            w.register_forward_hook(lambda m, inp, out: calls.append(inp[0].shape[1]))
    model.greedy_decode(src, lengths, n_steps=n_steps, cached=True)
    assert calls == [t_src] * (2 * layers)
    # ... and that is what the formula counts
    with torch.no_grad():
        memory, keep = model.encode(src, lengths)
        with FlopCounterMode(display=False) as once:
            for block in model.decoder:
                block.cross_kv(memory, keep)
    assert once.get_total_flops() == 2 * cross_kv_multiplies(d, t_src, n_steps, layers, cached=True)


def test_greedy_decode_bad_arguments():
    model = ReversalModel().eval()
    src, lengths = encode(["cab"])
    with pytest.raises(ValueError, match="n_steps"):
        model.greedy_decode(src, lengths, n_steps=10)  # positions run out at max_len + 1 = 9
    with pytest.raises(ValueError, match="n_steps"):
        model.greedy_decode(src, lengths, n_steps=0)
    with pytest.raises(TypeError, match="cached"):
        model.greedy_decode(src, lengths, cached="yes")
