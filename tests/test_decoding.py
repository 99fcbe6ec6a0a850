"""Decoding strategies of course_utils.causal against transformers.

- ``top_k_filter`` / ``top_p_filter`` must EQUAL transformers' ``TopKLogitsWarper`` /
  ``TopPLogitsWarper`` (``transformers.generation.logits_process``), also on tied logits and at
  the ``p`` boundary (seeded table + hypothesis);
- ``generate``'s sampling step equals transformers' warper pipeline (temperature, top-k, top-p)
  followed by ``torch.multinomial`` with the same seed; seeded sampling is reproducible;
- beam search: exact on a tiny model when the beams cover the vocabulary (brute force over every
  continuation), and the same tokens as transformers' ``generate(num_beams=4, do_sample=False)``
  on SmolLM2;
- bad arguments get clear errors.
"""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from transformers import GenerationConfig
from transformers.generation.logits_process import (
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from course_utils.causal import (
    TinyCausalLM,
    generate,
    sequence_log_prob,
    top_k_filter,
    top_p_filter,
)
from course_utils.kv_cache import KVCache

IDS = torch.zeros(1, 1, dtype=torch.long)  # the warpers take input_ids and ignore them


def _logits(seed: int, shape: tuple[int, ...], dtype: torch.dtype, ties: bool) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if ties:  # few distinct values: many ties, also at the k-th value and the p boundary
        return torch.randint(0, 4, shape, generator=g).to(dtype)
    return (3 * torch.randn(shape, generator=g)).to(dtype)


# -- top-k and top-p against transformers' warpers -------------------------------------------

CASES = [  # (seed, (B, vocab), dtype, ties)
    (0, (1, 10), torch.float32, False),
    (1, (4, 50), torch.float32, False),
    (2, (3, 1000), torch.float64, False),
    (3, (5, 12), torch.float32, True),
    (4, (2, 7), torch.float64, True),
    (5, (6, 40), torch.float32, True),
]


@pytest.mark.parametrize(("seed", "shape", "dtype", "ties"), CASES)
@pytest.mark.parametrize("k", [1, 2, 3, 7, 10_000])
def test_top_k_equals_transformers(seed, shape, dtype, ties, k):
    logits = _logits(seed, shape, dtype, ties)
    expected = TopKLogitsWarper(top_k=k)(IDS, logits.clone())
    assert torch.equal(top_k_filter(logits, k), expected)


@pytest.mark.parametrize(("seed", "shape", "dtype", "ties"), CASES)
@pytest.mark.parametrize("p", [1e-6, 0.1, 0.5, 0.9, 0.95, 1.0])
def test_top_p_equals_transformers(seed, shape, dtype, ties, p):
    logits = _logits(seed, shape, dtype, ties)
    expected = TopPLogitsWarper(top_p=p)(IDS, logits.clone())
    assert torch.equal(top_p_filter(logits, p), expected)


@pytest.mark.parametrize(
    ("probs", "p", "kept"),
    [
        # four equal tokens, p = 0.5: the ascending cumulative sums are 0.25, 0.5, 0.75, 1 and
        # those <= 1 - p = 0.5 go: the two lower indices (torch.sort keeps short rows stable)
        ([0.25, 0.25, 0.25, 0.25], 0.5, [False, False, True, True]),
        ([0.5, 0.25, 0.25], 0.5, [True, False, False]),  # 0.5 alone reaches p
        ([0.1, 0.6, 0.3], 0.7, [False, True, True]),
        ([0.1, 0.6, 0.3], 1.0, [True, True, True]),
        ([0.1, 0.6, 0.3], 1e-9, [False, True, False]),  # the most probable token always stays
    ],
)
def test_top_p_boundary_and_ties(probs, p, kept):
    logits = torch.tensor([probs], dtype=torch.float64).log()  # (1, vocab)
    got = top_p_filter(logits, p)
    assert torch.equal(got, TopPLogitsWarper(top_p=p)(IDS, logits.clone()))
    assert torch.isfinite(got)[0].tolist() == kept


def test_top_k_keeps_every_tie_at_the_kth_value():
    logits = torch.tensor([[1.0, 3.0, 2.0, 2.0, 0.0]])
    assert torch.isfinite(top_k_filter(logits, 2))[0].tolist() == [False, True, True, True, False]


def test_filters_keep_any_leading_shape():
    logits = _logits(7, (2, 3, 9), torch.float32, ties=True)  # (2, 3, vocab)
    for got, rows in (
        (top_k_filter(logits, 3), TopKLogitsWarper(3)(IDS, logits.reshape(6, 9).clone())),
        (top_p_filter(logits, 0.6), TopPLogitsWarper(0.6)(IDS, logits.reshape(6, 9).clone())),
    ):
        assert got.shape == logits.shape
        assert torch.equal(got.reshape(6, 9), rows)


@given(
    values=st.lists(st.integers(-3, 3), min_size=1, max_size=30),
    k=st.integers(1, 35),
    p=st.floats(1e-6, 1.0),
    scale=st.sampled_from([0.5, 1.0, 3.0]),
)
def test_filters_equal_transformers_and_keep_the_best_property(values, k, p, scale):
    """Small integer logits (many ties): both filters equal the warpers; what survives is a set of
    largest logits (nothing removed beats anything kept) holding at least min(k, vocab) tokens /
    at least probability p."""
    logits = scale * torch.tensor([values], dtype=torch.float64)  # (1, vocab)
    by_k, by_p = top_k_filter(logits, k), top_p_filter(logits, p)
    assert torch.equal(by_k, TopKLogitsWarper(top_k=k)(IDS, logits.clone()))
    assert torch.equal(by_p, TopPLogitsWarper(top_p=p)(IDS, logits.clone()))
    for kept in (torch.isfinite(by_k), torch.isfinite(by_p)):
        if (~kept).any():
            assert logits[~kept].max() <= logits[kept].min()
    assert int(torch.isfinite(by_k).sum()) >= min(k, len(values))
    assert float(logits.softmax(-1)[torch.isfinite(by_p)].sum()) >= p - 1e-9


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: top_k_filter(torch.zeros(1, 4), 0), ValueError, r"^k must be >= 1; got 0"),
        (lambda: top_k_filter(torch.zeros(1, 4), 2.0), TypeError, r"^k must be an int"),
        (lambda: top_k_filter(torch.zeros(1, 4), True), TypeError, r"^k must be an int"),
        (lambda: top_p_filter(torch.zeros(1, 4), 0.0), ValueError, r"^p must be a number in"),
        (lambda: top_p_filter(torch.zeros(1, 4), 1.5), ValueError, r"got 1.5"),
        (lambda: top_p_filter(torch.zeros(1, 4), True), TypeError, r"^p must be a number in"),
        (lambda: top_p_filter(torch.zeros(1, 4), "0.5"), TypeError, r"got str '0.5'"),
        (lambda: top_p_filter(torch.zeros(1, 4), float("nan")), ValueError, r"got nan"),
        (lambda: top_k_filter(torch.zeros(1, 4, dtype=torch.long), 1), TypeError, r"^logits"),
        (lambda: top_p_filter([[0.0, 1.0]], 0.5), TypeError, r"^logits must be a torch.Tensor"),
        (lambda: top_k_filter(torch.tensor(1.0), 1), ValueError, r"at least 1 dimensions"),
        (lambda: top_k_filter(torch.zeros(2, 0), 1), ValueError, r"got shape \(2, 0\)"),
        (
            lambda: top_p_filter(torch.tensor([0.0, float("nan")]), 0.5),
            ValueError,
            r"^logits contain NaN",
        ),
    ],
)
def test_filter_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# -- generate: sampling ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return TinyCausalLM(vocab_size=10, max_len=16, d_model=16, n_heads=2, d_ff=32).eval()


@pytest.mark.parametrize(
    ("temperature", "top_k", "top_p"),
    [(1.0, None, None), (0.7, 3, None), (1.3, None, 0.8), (0.9, 4, 0.6), (2.0, 2, 0.99)],
)
def test_one_sampling_step_equals_transformers_warpers_then_multinomial(
    tiny, temperature, top_k, top_p
):
    """transformers' order: temperature, then top-k, then top-p; then softmax and one draw."""
    ids = torch.tensor([[1, 2, 3, 4]])
    warpers = LogitsProcessorList([TemperatureLogitsWarper(temperature)])
    if top_k is not None:
        warpers.append(TopKLogitsWarper(top_k))
    if top_p is not None:
        warpers.append(TopPLogitsWarper(top_p))
    with torch.no_grad():
        logits = tiny(ids)[:, -1].double()  # (1, vocab)
    probs = warpers(ids, logits).softmax(-1)  # (1, vocab)
    for seed in range(8):
        expected = torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(seed))
        got = generate(tiny, ids, 1, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
        assert torch.equal(got[:, -1:], expected)


def test_seeded_sampling_is_reproducible(tiny):
    args = {"temperature": 1.2, "top_k": 5, "top_p": 0.9}
    a = generate(tiny, [1, 2], 10, seed=7, **args)
    assert torch.equal(a, generate(tiny, [1, 2], 10, seed=7, **args))
    assert torch.equal(
        a, generate(tiny, [1, 2], 10, generator=torch.Generator().manual_seed(7), **args)
    )
    assert torch.equal(a, generate(tiny, [1, 2], 10, seed=7, use_cache=False, **args))
    draws = {tuple(generate(tiny, [1, 2], 10, seed=s, **args)[0].tolist()) for s in range(6)}
    assert len(draws) > 1  # the seed matters


def test_top_k_1_sampling_is_greedy_and_sampling_stays_in_the_top_k(tiny):
    greedy = generate(tiny, [3, 1], 8)
    assert torch.equal(generate(tiny, [3, 1], 8, temperature=1.0, top_k=1, seed=0), greedy)
    out = generate(tiny, [3, 1], 8, temperature=5.0, top_k=2, seed=1)
    with torch.no_grad():
        logits = tiny(out[:, :-1])[0, 1:]  # (8, vocab): the logits each new token was drawn from
    top2 = logits.topk(2, dim=-1).indices  # (8, 2)
    assert (top2 == out[0, 2:, None]).any(-1).all()


def test_max_new_tokens_is_another_name_for_n_new(tiny):
    assert torch.equal(generate(tiny, [1, 2], max_new_tokens=5), generate(tiny, [1, 2], 5))
    assert torch.equal(generate(tiny, [1, 2], n_new=5), generate(tiny, [1, 2], 5))


# -- generate: beam search ------------------------------------------------------------------


# -- sequence_log_prob: the score beam search maximises -----------------------------------


@pytest.mark.parametrize(
    ("seed", "batch", "length", "prompt_len"),
    [(0, 1, 5, 1), (1, 3, 8, 3), (2, 2, 12, 11), (3, 4, 6, 2), (4, 1, 2, 1)],
)
def test_sequence_log_prob_equals_torch_cross_entropy(tiny, seed, batch, length, prompt_len):
    """Oracle: PyTorch's ``F.cross_entropy`` (the training loss: minus the mean log-probability
    of each next token), summed over the tokens after the prompt."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 10, (batch, length), generator=g)  # (B, T)
    with torch.no_grad():
        logits = tiny(ids[:, :-1])  # (B, T - 1, vocab)
    nll = F.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")  # (B, T - 1)
    expected = -nll[:, prompt_len - 1 :].sum(-1)  # (B,)
    got = sequence_log_prob(tiny, ids, prompt_len)
    assert got.shape == (batch,)
    torch.testing.assert_close(got, expected.float(), atol=1e-5, rtol=1e-6)


@given(prompt=st.lists(st.integers(0, 9), min_size=1, max_size=5), split=st.integers(0, 3))
def test_sequence_log_prob_is_a_chain_rule_and_a_distribution(tiny, prompt, split):
    """log p(a, b | x) = log p(a | x) + log p(b | x, a); and over every next token the
    probabilities sum to 1."""
    tail = [*[3, 1, 4][:split], 7]
    ids = torch.tensor([prompt + tail])  # (1, T)
    whole = sequence_log_prob(tiny, ids, len(prompt))
    first = sequence_log_prob(tiny, ids[:, : len(prompt) + split], len(prompt))
    rest = sequence_log_prob(tiny, ids, len(prompt) + split)
    torch.testing.assert_close(whole, first + rest, atol=1e-5, rtol=0)
    assert float(whole) <= 0
    every = torch.tensor([[*prompt, v] for v in range(10)])  # (10, T0 + 1)
    total = sequence_log_prob(tiny, every, len(prompt)).exp().sum()
    torch.testing.assert_close(total, torch.tensor(1.0), atol=1e-5, rtol=0)


def test_beam_search_scores_at_least_greedy(tiny):
    for prompt in ([1, 2, 3], [9], [4, 4, 0, 7]):
        greedy = generate(tiny, prompt, 6)
        beam = generate(tiny, prompt, 6, num_beams=4)
        n = len(prompt)
        assert sequence_log_prob(tiny, beam, n) >= sequence_log_prob(tiny, greedy, n) - 1e-6


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda m: sequence_log_prob(m, [1, 2], 0), ValueError, r"^prompt_len must be an int in"),
        (lambda m: sequence_log_prob(m, [1, 2], 3), ValueError, r"in \[1, 2\]; got 3"),
        (lambda m: sequence_log_prob(m, [1, 2], 1.0), TypeError, r"^prompt_len must be an int"),
        (lambda m: sequence_log_prob(m, [1, 12], 1), ValueError, r"vocab_size = 10"),
        (lambda m: sequence_log_prob("model", [1], 1), TypeError, r"^model must be a torch"),
    ],
)
def test_sequence_log_prob_errors(tiny, call, error, match):
    with pytest.raises(error, match=match):
        call(tiny)


@pytest.mark.parametrize("use_cache", [True, False])
def test_beam_search_covering_the_vocabulary_is_exact(tiny, use_cache):
    """With num_beams = vocab_size every 2-token continuation survives the first step, so the best
    beam is the argmax over all 100 continuations (brute force, full forward passes)."""
    prompt = torch.tensor([[4, 2, 7]])
    every = torch.tensor(list(itertools.product(range(10), repeat=2)))  # (100, 2)
    seqs = torch.cat([prompt.expand(100, -1), every], dim=1)  # (100, 5)
    best = seqs[sequence_log_prob(tiny, seqs, 3).argmax()]  # (5,)
    got = generate(tiny, prompt, 2, num_beams=10, use_cache=use_cache)
    assert torch.equal(got[0], best)


def test_beam_search_cache_on_equals_off_and_beats_its_own_first_beam(tiny):
    prompt = [5, 1, 1, 0]
    on = generate(tiny, prompt, 10, num_beams=3)
    assert on.shape == (1, 14)
    assert torch.equal(on, generate(tiny, prompt, 10, num_beams=3, use_cache=False))
    assert torch.equal(generate(tiny, prompt, 10, num_beams=1), generate(tiny, prompt, 10))
    assert torch.equal(generate(tiny, prompt, 0, num_beams=3), torch.tensor([prompt]))


def test_kv_cache_reorder():
    cache = KVCache()
    k = torch.arange(3.0).reshape(3, 1, 1, 1).expand(3, 2, 4, 5)  # (B=3, 2, T=4, 5)
    cache.append(k, k + 10)
    cache.reorder(torch.tensor([2, 2, 0, 1]))
    assert cache.keys.shape == (4, 2, 4, 5)
    assert cache.keys[:, 0, 0, 0].tolist() == [2.0, 2.0, 0.0, 1.0]
    assert cache.values[:, 0, 0, 0].tolist() == [12.0, 12.0, 10.0, 11.0]
    with pytest.raises(ValueError, match=r"^indices must lie in \[0, 4\)"):
        cache.reorder(torch.tensor([4]))
    with pytest.raises(TypeError, match=r"^indices must be a 1-D integer tensor"):
        cache.reorder(torch.tensor([0.0]))
    with pytest.raises(TypeError, match=r"^indices must be a 1-D integer tensor.*list"):
        cache.reorder([0])  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.xdist_group("smollm2")
@pytest.mark.parametrize("n_new", [8, 12])  # 8: chapter 7's comparison with greedy
def test_beam_search_matches_transformers_on_smollm2(smollm2_ours, smollm2_reference, n_new):
    """``generate(num_beams=4)`` gives transformers' ``generate(num_beams=4, do_sample=False)``.

    transformers keeps the best 2 x num_beams candidates a step; a candidate ending in the
    end-of-text token among the top num_beams is set aside as finished, scored by its summed
    log-probability / length ** length_penalty (1.0), and may win in the end. This prompt's beams
    never meet that token (checked below on every beam we keep), so the only finished beams are
    those stopped by max_length, all n_new tokens long: dividing by the same n_new ** 1.0 keeps
    their order, and transformers returns the beam of largest summed log-probability, as we do.
    """
    ref, _ = smollm2_reference
    tok = smollm2_ours.tokenizer
    ids = torch.tensor([tok.encode("Once upon a time, there was a little cat who")])  # (1, T)
    with torch.no_grad():
        out = ref.generate(
            ids,
            max_new_tokens=n_new,
            num_beams=4,
            do_sample=False,
            output_scores=True,
            return_dict_in_generate=True,
        )
    expected = out.sequences  # (1, T + n_new)
    got = generate(smollm2_ours, ids, n_new, num_beams=4)  # (1, T + n_new)
    assert got.shape == expected.shape == (1, ids.size(1) + n_new)
    assert torch.equal(got, expected)
    assert tok.eos_id not in got[0].tolist()
    # transformers' score is the summed log-probability / n_new ** length_penalty: ours, by a
    # full forward pass of our model, divided the same way (our logits differ by < 1e-3)
    summed = sequence_log_prob(smollm2_ours, got, ids.size(1))  # (1,)
    # unset in the model's generation config, so transformers' global default (1.0) applies
    default = GenerationConfig._get_default_generation_params()["length_penalty"]
    assert (ref.generation_config.length_penalty or default) == 1.0
    torch.testing.assert_close(summed / n_new, out.sequences_scores, atol=1e-3, rtol=0)


def test_generate_keeps_the_old_greedy_and_temperature_paths(tiny):
    """The chapters' calls (positional third argument, temperature with a generator) unchanged:
    greedy is the argmax; temperature sampling draws from softmax(logits / t) in float64."""
    ids = torch.tensor([[2, 3]])
    out = generate(tiny, ids, 1, temperature=0.8, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        probs = torch.softmax(tiny(ids)[:, -1].double() / 0.8, dim=-1)  # (1, vocab)
    expected = torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(4))
    assert torch.equal(out[:, -1:], expected)


# -- generate: errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"top_k": 3}, ValueError, r"temperature = 0 is greedy decoding"),
        ({"top_p": 0.5}, ValueError, r"temperature = 0 is greedy decoding"),
        ({"temperature": 1.0, "top_k": 0}, ValueError, r"^top_k must be >= 1; got 0"),
        ({"temperature": 1.0, "top_p": 0.0}, ValueError, r"^top_p must be a number in \(0, 1\]"),
        ({"temperature": 1.0, "top_p": 2}, ValueError, r"got 2"),
        ({"temperature": 1.0, "top_p": "1"}, TypeError, r"^top_p must be a number in"),
        ({"num_beams": 0}, ValueError, r"^num_beams must be >= 1; got 0"),
        ({"num_beams": 2.0}, TypeError, r"^num_beams must be an int"),
        ({"num_beams": 2, "temperature": 0.5}, ValueError, r"temperature must be 0; got 0.5"),
        ({"num_beams": 11}, ValueError, r"^num_beams must be <= vocab_size = 10; got 11"),
        ({"seed": -1}, ValueError, r"^seed must be >= 0; got -1"),
        ({"seed": 1.5}, TypeError, r"^seed must be an int"),
        (
            {"seed": 1, "generator": torch.Generator()},
            ValueError,
            r"^pass seed or generator, not both",
        ),
        ({"max_new_tokens": 3}, TypeError, r"^pass n_new or its other name max_new_tokens"),
    ],
)
def test_generate_errors(tiny, kwargs, error, match):
    with pytest.raises(error, match=match):
        generate(tiny, [1, 2], 3, **kwargs)


def test_generate_needs_n_new_and_one_prompt_for_beams(tiny):
    with pytest.raises(TypeError, match=r"^generate\(\) needs n_new"):
        generate(tiny, [1, 2])
    with pytest.raises(ValueError, match=r"takes one prompt, ids of shape \(1, T\); got \(2, 2\)"):
        generate(tiny, torch.tensor([[1, 2], [3, 4]]), 3, num_beams=2)
    with pytest.raises(ValueError, match=r"^max_new_tokens must be >= 0; got -2"):
        generate(tiny, [1, 2], max_new_tokens=-2)
