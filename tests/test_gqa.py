"""Grouped-query attention: the module against SDPA ``enable_gqa`` (float64, 1e-10), the head
grouping, the mean-pool conversion of Ainslie et al. (2023), the sourced configuration table and
the cache-size arithmetic (course_utils.gqa, course_utils.model_configs, course_utils.kv_cache)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from course_site.bibstyle import author_year
from course_utils.causal import CausalSelfAttention
from course_utils.gqa import (
    group_similarity,
    head_groups,
    kv_head_of,
    mean_pool_kv,
    relative_output_change,
)
from course_utils.kv_cache import KVCache, kv_cache_bytes, max_batch
from course_utils.model_configs import MODEL_CONFIGS, ModelConfig, kv_cache_table
from course_utils.multihead import MultiHeadAttention

D64 = torch.float64


def _module(d_model, n_heads, n_kv_heads, bias=True, seed=0):
    torch.manual_seed(seed)
    return MultiHeadAttention(d_model, n_heads, n_kv_heads, bias=bias).double().eval()


def _sdpa_reference(m: MultiHeadAttention, q_in, k_in, v_in, mask=None):
    """The same projections, attended by torch's SDPA with enable_gqa (the independent oracle)."""
    B, T_q, _ = q_in.shape
    T_k = k_in.size(1)
    q = m.W_Q(q_in).view(B, T_q, m.n_heads, m.d_k).transpose(1, 2)  # (B, h, T_q, d_k)
    k = m.W_K(k_in).view(B, T_k, m.n_kv_heads, m.d_k).transpose(1, 2)  # (B, h_kv, T_k, d_k)
    v = m.W_V(v_in).view(B, T_k, m.n_kv_heads, m.d_k).transpose(1, 2)  # (B, h_kv, T_k, d_k)
    ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    return m.W_O(ctx.transpose(1, 2).reshape(B, T_q, m.d_model))  # (B, T_q, d_model)


# -- the module against SDPA enable_gqa ----------------------------------------------------------

CASES = [  # (d_model, n_heads, n_kv_heads)
    (16, 4, 4),
    (16, 4, 2),
    (16, 4, 1),
    (24, 6, 3),
    (24, 6, 2),
    (36, 9, 3),  # SmolLM2's grouping
    (48, 12, 4),
]


@pytest.mark.parametrize(("d_model", "n_heads", "n_kv_heads"), CASES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("masked", [False, True])
def test_gqa_equals_sdpa_enable_gqa(d_model, n_heads, n_kv_heads, bias, masked):
    m = _module(d_model, n_heads, n_kv_heads, bias)
    g = torch.Generator().manual_seed(n_heads * 10 + n_kv_heads)
    q_in = torch.randn(2, 5, d_model, generator=g, dtype=D64)  # (B, T_q, d_model)
    kv_in = torch.randn(2, 7, d_model, generator=g, dtype=D64)  # (B, T_k, d_model)
    mask = torch.rand(2, 1, 5, 7, generator=g) > 0.3 if masked else None  # (B, 1, T_q, T_k)
    if mask is not None:
        mask[..., 0] = True  # every query may attend to at least one key
    with torch.no_grad():
        want = _sdpa_reference(m, q_in, kv_in, kv_in, mask)
        fast = m(q_in, kv_in, kv_in, mask)
        readable, w = m(q_in, kv_in, kv_in, mask, return_weights=True)
    torch.testing.assert_close(fast, want, atol=1e-10, rtol=0)
    torch.testing.assert_close(readable, want, atol=1e-10, rtol=0)
    assert w.shape == (2, n_heads, 5, 7)


@pytest.mark.parametrize(("d_model", "n_heads", "n_kv_heads"), CASES)
def test_query_heads_of_a_group_read_the_same_keys(d_model, n_heads, n_kv_heads):
    """Head i's weights equal those of plain attention with k/v head i // group."""
    m = _module(d_model, n_heads, n_kv_heads)
    x = torch.randn(1, 6, d_model, dtype=D64)
    with torch.no_grad():
        _, w = m(x, x, x, return_weights=True)  # (1, h, 6, 6)
        q = m.split_heads(m.W_Q(x))  # (1, h, 6, d_k)
        k = m.split_heads(m.W_K(x), n_kv_heads)  # (1, h_kv, 6, d_k)
    for i in range(n_heads):
        j = kv_head_of(i, n_heads, n_kv_heads)
        scores = q[0, i] @ k[0, j].T / m.d_k**0.5  # (6, 6)
        torch.testing.assert_close(w[0, i], torch.softmax(scores, -1), atol=1e-12, rtol=0)


@pytest.mark.parametrize(("d_model", "n_heads", "n_kv_heads"), CASES)
@pytest.mark.parametrize("fast", [True, False])
def test_kv_cache_works_for_every_n_kv_heads(d_model, n_heads, n_kv_heads, fast):
    torch.manual_seed(1)
    attn = CausalSelfAttention(d_model, n_heads, n_kv_heads=n_kv_heads, rope_base=1e4).double()
    x = torch.randn(2, 6, d_model, dtype=D64)
    cache = KVCache()
    with torch.no_grad():
        steps = torch.cat([attn(x[:, t : t + 1], cache=cache, fast=fast) for t in range(6)], 1)
        full = attn(x, fast=fast)
    torch.testing.assert_close(steps, full, atol=1e-10, rtol=0)
    assert cache.keys.shape == (2, n_kv_heads, 6, d_model // n_heads)
    assert cache.nbytes == kv_cache_bytes(
        1, n_kv_heads, d_model // n_heads, 6, batch=2, bytes_per_value=8
    )


@settings(max_examples=25, deadline=None)
@given(
    n_kv_heads=st.sampled_from([1, 2, 3, 6]),
    d_k=st.integers(1, 5),
    T=st.integers(1, 6),
    seed=st.integers(0, 10_000),
)
def test_property_gqa_equals_sdpa(n_kv_heads, d_k, T, seed):
    m = _module(6 * d_k, 6, n_kv_heads, seed=seed)
    x = torch.randn(1, T, 6 * d_k, generator=torch.Generator().manual_seed(seed), dtype=D64)
    with torch.no_grad():
        torch.testing.assert_close(m(x, x, x), _sdpa_reference(m, x, x, x), atol=1e-10, rtol=0)


# -- head grouping --------------------------------------------------------------------------------


@pytest.mark.parametrize(("n_heads", "n_kv_heads"), [(4, 4), (4, 2), (4, 1), (9, 3), (12, 4)])
def test_head_groups_partition_the_query_heads(n_heads, n_kv_heads):
    groups = head_groups(n_heads, n_kv_heads)
    assert len(groups) == n_kv_heads
    assert sorted(i for g in groups for i in g) == list(range(n_heads))
    for j, g in enumerate(groups):
        assert all(kv_head_of(i, n_heads, n_kv_heads) == j for i in g)
        assert len(g) == n_heads // n_kv_heads


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((9, 2), ValueError, "n_kv_heads must divide n_heads.*n_heads = 9, n_kv_heads = 2"),
        ((0, 1), ValueError, "n_heads"),
        ((4, 0), ValueError, "n_kv_heads"),
        ((4.0, 2), TypeError, "n_heads"),
    ],
)
def test_head_groups_bad_input(args, error, message):
    with pytest.raises(error, match=message):
        head_groups(*args)


def test_kv_head_of_rejects_a_head_out_of_range():
    with pytest.raises(ValueError, match="query_head"):
        kv_head_of(9, 9, 3)


# -- MHA -> GQA by mean-pooling (Ainslie et al. 2023) ---------------------------------------------


@pytest.mark.parametrize("bias", [True, False])
def test_mean_pool_with_n_kv_heads_equal_n_heads_is_the_identity(bias):
    m = _module(24, 6, 6, bias)
    same = mean_pool_kv(m, 6)
    assert same is not m
    for a, b in zip(m.state_dict().values(), same.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    x = torch.randn(2, 5, 24, dtype=D64)
    with torch.no_grad():
        assert torch.equal(same(x, x, x), m(x, x, x))


@pytest.mark.parametrize("n_kv_heads", [1, 2, 3])
@pytest.mark.parametrize("bias", [True, False])
def test_pooled_weights_are_the_group_means(n_kv_heads, bias):
    m = _module(24, 6, 6, bias)
    gqa = mean_pool_kv(m, n_kv_heads)
    d_k, group = 4, 6 // n_kv_heads
    assert gqa.n_kv_heads == n_kv_heads
    assert torch.equal(gqa.W_Q.weight, m.W_Q.weight) and torch.equal(gqa.W_O.weight, m.W_O.weight)
    for name in ("W_K", "W_V"):
        src, dst = getattr(m, name), getattr(gqa, name)
        for j, heads in enumerate(head_groups(6, n_kv_heads)):
            rows = torch.stack([src.weight[i * d_k : (i + 1) * d_k] for i in heads])  # (g, d_k, d)
            torch.testing.assert_close(
                dst.weight[j * d_k : (j + 1) * d_k], rows.mean(0), atol=1e-15, rtol=0
            )
            if bias:
                b = torch.stack([src.bias[i * d_k : (i + 1) * d_k] for i in heads]).mean(0)
                torch.testing.assert_close(dst.bias[j * d_k : (j + 1) * d_k], b, atol=1e-15, rtol=0)
        assert len(heads) == group


@pytest.mark.parametrize("n_kv_heads", [1, 2, 3, 6])
def test_converted_module_equals_sdpa_with_pooled_projections(n_kv_heads):
    m = _module(24, 6, 6)
    gqa = mean_pool_kv(m, n_kv_heads)
    x = torch.randn(2, 5, 24, dtype=D64)
    with torch.no_grad():
        # The oracle: SDPA enable_gqa on keys/values made by the mean-pooled matrices, built here
        # independently of mean_pool_kv (einsum over the head axis).
        Wk = m.W_K.weight.view(n_kv_heads, 6 // n_kv_heads, 4, 24).mean(1).reshape(-1, 24)
        Wv = m.W_V.weight.view(n_kv_heads, 6 // n_kv_heads, 4, 24).mean(1).reshape(-1, 24)
        bk = m.W_K.bias.view(n_kv_heads, -1, 4).mean(1).reshape(-1)
        bv = m.W_V.bias.view(n_kv_heads, -1, 4).mean(1).reshape(-1)
        q = m.W_Q(x).view(2, 5, 6, 4).transpose(1, 2)  # (2, 6, 5, 4)
        k = F.linear(x, Wk, bk).view(2, 5, n_kv_heads, 4).transpose(1, 2)  # (2, n_kv, 5, 4)
        v = F.linear(x, Wv, bv).view(2, 5, n_kv_heads, 4).transpose(1, 2)  # (2, n_kv, 5, 4)
        ctx = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)  # (2, 6, 5, 4)
        want = m.W_O(ctx.transpose(1, 2).reshape(2, 5, 24))  # (2, 5, 24)
        torch.testing.assert_close(gqa(x, x, x), want, atol=1e-10, rtol=0)


def test_mean_pool_from_gqa_pools_further_and_leaves_the_input_alone():
    m = _module(24, 6, 6)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    two_step = mean_pool_kv(mean_pool_kv(m, 3), 1)
    one_step = mean_pool_kv(m, 1)
    torch.testing.assert_close(two_step.W_K.weight, one_step.W_K.weight, atol=1e-15, rtol=0)
    for k, v in m.state_dict().items():
        assert torch.equal(v, before[k])


def test_relative_output_change_is_zero_without_pooling_and_positive_with_it():
    m = _module(24, 6, 6)
    x = torch.randn(1, 7, 24, dtype=D64)
    assert relative_output_change(m, x, 6) == 0.0
    changes = [relative_output_change(m, x, n) for n in (3, 2, 1)]
    assert all(c > 0 for c in changes)


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((torch.nn.Linear(2, 2), 1), TypeError, "mha must be a MultiHeadAttention"),
        (("m", 4), ValueError, "n_kv_heads must divide the module's n_kv_heads = 6"),
        (("m", 0), ValueError, "n_kv_heads"),
    ],
)
def test_mean_pool_bad_input(args, error, message):
    m = _module(24, 6, 6)
    args = tuple(m if a == "m" else a for a in args)
    with pytest.raises(error, match=message):
        mean_pool_kv(*args)


# -- the sourced configurations and the cache arithmetic ------------------------------------------

PUBLISHED = {  # name: (n_layers, d_model, n_heads, n_kv_heads, d_head), from the cited sources
    "Llama 2 7B": (32, 4096, 32, 32, 128),
    "Llama 2 70B": (80, 8192, 64, 8, 128),
    "Mistral 7B": (32, 4096, 32, 8, 128),
    "Llama 3 8B": (32, 4096, 32, 8, 128),
    "Falcon 7B": (32, 4544, 71, 1, 64),
    "SmolLM2-135M": (30, 576, 9, 3, 64),
}


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_config_rows(name):
    cfg = MODEL_CONFIGS[name]
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_head) == PUBLISHED[name]
    assert cfg.n_heads * cfg.d_head == cfg.d_model  # all six have d_model = n_heads * d_head
    assert cfg.citation and cfg.source
    assert cfg.bytes_per_token() == 2 * cfg.n_layers * cfg.n_kv_heads * cfg.d_head * 2


def test_config_citations_are_in_the_bibliography():
    from pathlib import Path

    bib = (Path(__file__).resolve().parents[1] / "references.bib").read_text(encoding="utf-8")
    for cfg in MODEL_CONFIGS.values():
        assert "{" + cfg.citation + "," in bib, cfg.citation


@pytest.mark.parametrize("name", list(MODEL_CONFIGS))
def test_config_cite_is_the_books_label_of_its_reference(name):
    """The widget shows ``cite`` where a reader would otherwise see a raw bibliography key."""
    cfg = MODEL_CONFIGS[name]
    assert cfg.cite == author_year(cfg.citation), (cfg.cite, cfg.citation)
    assert cfg.citation not in cfg.cite


def test_kv_cache_calculator_shows_citations_not_keys():
    from course_utils.model_configs import configs_in_chapter
    from course_utils.widgets import KVCacheCalculator

    shown = {m["name"]: m["citation"] for m in KVCacheCalculator().models}
    assert shown == {name: cfg.cite for name, cfg in configs_in_chapter(10).items()}


def test_config_kinds():
    kinds = {name: cfg.kind for name, cfg in MODEL_CONFIGS.items()}
    assert kinds["Llama 2 7B"] == "MHA" and kinds["Falcon 7B"] == "MQA"
    assert kinds["Llama 2 70B"] == kinds["SmolLM2-135M"] == "GQA"


def test_config_rejects_a_kv_count_that_does_not_divide():
    with pytest.raises(ValueError, match="n_kv_heads = 2 must divide n_heads = 9"):
        ModelConfig("x", 1, 9, 9, 2, 1, 1, "k", "s")


def test_config_table_file_is_loaded_in_order_and_checked(tmp_path):
    import json

    from course_utils.model_configs import CONFIGS_PATH, load_model_configs

    records = json.loads(CONFIGS_PATH.read_text(encoding="utf-8"))
    assert [r["name"] for r in records] == list(MODEL_CONFIGS)  # the chapter's order
    path = tmp_path / "configs.json"
    path.write_text(json.dumps([records[0], records[0]]), encoding="utf-8")
    with pytest.raises(ValueError, match="'Llama 2 7B' is listed twice"):
        load_model_configs(path)
    path.write_text(json.dumps([records[0] | {"n_kv_head": 8}]), encoding="utf-8")
    with pytest.raises(TypeError, match="n_kv_head"):
        load_model_configs(path)


def test_kv_cache_table_numbers():
    rows = {r["name"]: r for r in kv_cache_table()}
    assert rows["Llama 2 7B"]["gib"][4096] == 2.0  # 2·32·32·128·4096·2 bytes = 2 GiB
    assert rows["Llama 2 70B"]["gib"][131072] == 40.0
    # v0.1's rolling buffer: 4096 tokens per layer, 0.5 GiB, at any longer context
    assert rows["Mistral 7B"]["gib"][4096] == rows["Mistral 7B"]["gib"][32768] == 0.5
    assert rows["Gemma 3 12B"]["layers"] == {"sliding": 40, "full": 8}
    assert rows["Falcon 7B"]["bytes_per_token"] == 2 * 32 * 1 * 64 * 2
    for r in rows.values():
        cfg = MODEL_CONFIGS[r["name"]]
        assert r["max_batch"] == (80 * 2**30) // cfg.held_cache_bytes(32768)
        if set(cfg.layer_kinds()) == {"full"}:
            assert r["max_batch"] == cfg.max_batch(80 * 2**30, 32768)


@pytest.mark.parametrize("seq_len", [1, 4096, 32768])
@pytest.mark.parametrize("memory", [0, 10**9, 80 * 2**30])
def test_max_batch_is_the_largest_batch_that_fits(seq_len, memory):
    b = max_batch(memory, 32, 8, 128, seq_len)
    assert kv_cache_bytes(32, 8, 128, seq_len, batch=max(b, 1)) <= memory or b == 0
    assert kv_cache_bytes(32, 8, 128, seq_len, batch=b + 1) > memory


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"memory_bytes": -1}, "memory_bytes"),
        ({"seq_len": 0}, "seq_len"),
        ({"n_kv_heads": 0}, "n_kv_heads"),
        ({"memory_bytes": 1.5}, "memory_bytes"),
    ],
)
def test_max_batch_bad_input(kwargs, message):
    args = {"memory_bytes": 10**9, "n_layers": 32, "n_kv_heads": 8, "d_head": 128, "seq_len": 16}
    with pytest.raises((ValueError, TypeError), match=message):
        max_batch(**(args | kwargs))


# -- similarity of attention maps within and across groups ---------------------------------------


def test_group_similarity_against_numpy_corrcoef():
    import numpy as np

    g = torch.Generator().manual_seed(3)
    w = torch.softmax(torch.randn(6, 5, 5, generator=g, dtype=D64), -1).tril()  # (6, 5, 5)
    within, across = group_similarity(w, 3)  # groups {0, 1}, {2, 3}, {4, 5}
    rows, cols = np.tril_indices(5)
    c = np.corrcoef(w.numpy()[:, rows, cols])
    assert within == pytest.approx(np.mean([c[0, 1], c[2, 3], c[4, 5]]), abs=1e-12)
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6) if i // 2 != j // 2]
    assert across == pytest.approx(np.mean([c[i, j] for i, j in pairs]), abs=1e-12)


def test_group_similarity_identical_maps_within_a_group():
    base = torch.softmax(torch.randn(2, 6, 6, dtype=D64), -1).tril()  # two different maps
    w = base.repeat_interleave(3, dim=0)  # (6, 6, 6): heads 0-2 equal, heads 3-5 equal
    within, _ = group_similarity(w, 2)
    assert within == pytest.approx(1.0)
    assert math.isnan(group_similarity(w, 1)[1])


@pytest.mark.parametrize(
    ("weights", "n_kv", "message"),
    [
        (torch.ones(4, 3, 2), 2, r"weights must be a tensor of shape \(n_heads, T, T\)"),
        (torch.ones(4, 1, 1), 2, "T >= 2"),
        (torch.ones(4, 3, 3), 3, "n_kv_heads must divide n_heads"),
    ],
)
def test_group_similarity_bad_input(weights, n_kv, message):
    with pytest.raises(ValueError, match=message):
        group_similarity(weights, n_kv)


# --- ModelConfig checks its fields (issue 33, §4) -------------------------------------------------

_CFG = dict(
    name="m", n_layers=2, d_model=8, n_heads=2, n_kv_heads=1, d_head=4, context_length=16,
    citation="c", source="s",
)  # fmt: skip


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"n_layers": -1}, ValueError, r"^m: n_layers must be >= 1; got -1"),
        ({"n_layers": 0}, ValueError, r"^m: n_layers must be >= 1; got 0"),
        ({"d_model": "8"}, TypeError, r"^m: d_model must be an int; got str '8'"),
        ({"n_heads": 2.0}, TypeError, r"^m: n_heads must be an int; got float"),
        ({"n_kv_heads": True}, TypeError, r"^m: n_kv_heads must be an int; got bool"),
        ({"n_kv_heads": -2}, ValueError, r"^m: n_kv_heads must be >= 1"),
        ({"n_kv_heads": 4}, ValueError, r"^m: n_kv_heads = 4 must divide n_heads = 2"),
        ({"d_head": -4}, ValueError, r"^m: d_head must be >= 1"),
        ({"context_length": "4k"}, TypeError, r"^m: context_length must be an int"),
        ({"name": 3}, TypeError, r"^ModelConfig: name must be a str; got int 3"),
        ({"name": ""}, ValueError, r"^ModelConfig: name must be a non-empty str"),
        ({"citation": None}, TypeError, r"^m: citation must be a str"),
    ],
)
def test_model_config_validates_its_fields(change, error, match):
    with pytest.raises(error, match=match):
        ModelConfig(**(_CFG | change))


@pytest.mark.parametrize(
    "weights",
    [torch.ones(4, 3, 3, dtype=torch.long), torch.full((4, 3, 3), float("nan"))],
    ids=["integer", "nan"],
)
def test_group_similarity_refuses_non_float_or_nan_weights(weights):
    with pytest.raises(ValueError, match=r"^weights must be floating-point attention weights"):
        group_similarity(weights, 2)
