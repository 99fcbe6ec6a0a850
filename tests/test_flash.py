"""course_utils.flash: online softmax against softmax, tiled attention against torch SDPA.

Oracles: ``course_utils.softmax.softmax`` (itself tested against ``torch.softmax``) for the online
softmax, and ``torch.nn.functional.scaled_dot_product_attention`` (written independently of this
course) for tiled attention. Seeded table-driven cases plus hypothesis properties (block-size
invariance, stability for logits of 1e4), and every bad input.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from course_utils.flash import (
    attention_memory_bytes,
    io_cost_naive,
    io_cost_tiled,
    online_softmax,
    online_softmax_steps,
    tile_schedule,
    tiled_attention,
    tiled_attention_steps,
)
from course_utils.flash_fast import (
    CACHES_ENV,
    FALLBACK_CACHES,
    CpuCaches,
    choose_blocks,
    cpu_caches,
)
from course_utils.softmax import softmax

# ---------------------------------------------------------------------------------------------
# online softmax
# ---------------------------------------------------------------------------------------------

SOFTMAX_CASES = [
    # (shape, axis, block_size, dtype)
    ((7,), -1, 1, np.float64),
    ((7,), 0, 3, np.float32),
    ((7,), -1, 100, np.float64),
    ((3, 10), -1, 4, np.float64),
    ((3, 10), 0, 2, np.float32),
    ((2, 5, 9), 1, 2, np.float64),
    ((2, 5, 9), -3, 1, np.float16),
]


@pytest.mark.parametrize(("shape", "axis", "block_size", "dtype"), SOFTMAX_CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_online_softmax_equals_softmax(shape, axis, block_size, dtype, seed):
    x = (np.random.default_rng(seed).normal(size=shape) * 5).astype(dtype)
    ours = online_softmax(x, axis=axis, block_size=block_size)
    want = softmax(x, axis=axis)
    assert ours.dtype == want.dtype and ours.shape == want.shape
    tol = {np.float16: 1e-3, np.float32: 1e-6, np.float64: 1e-14}[dtype]
    np.testing.assert_allclose(ours.astype(np.float64), want.astype(np.float64), atol=tol)


def test_online_softmax_masks_like_softmax():
    x = np.array([[0.5, -np.inf, 1.5, -np.inf], [-np.inf] * 4, [-np.inf, -np.inf, -np.inf, 2.0]])
    ours = online_softmax(x, block_size=2)  # row 2: its first block is all -inf
    np.testing.assert_array_equal(ours == 0, softmax(x) == 0)  # masked weights exactly 0
    np.testing.assert_allclose(ours, softmax(x), atol=1e-15)
    assert (ours[1] == 0).all()  # fully masked row: zeros, not nan, like softmax


def test_online_softmax_chapter3_overflow_cases():
    for x in (
        np.array([1e4, -1e4, 0.0], dtype=np.float32),
        np.array([1000.0, 1001.0, 1002.0]),
        np.array([12.0, 10.0, 0.0], dtype=np.float16),
        np.array([-3e38, 3e38, 0.0], dtype=np.float32),
    ):
        for b in (1, 2, 3):
            got = online_softmax(x, block_size=b)
            assert np.isfinite(got).all() and got.dtype == x.dtype
            np.testing.assert_allclose(got.astype(float), softmax(x).astype(float), atol=1e-3)


def test_online_softmax_accepts_torch_and_lists():
    x = torch.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    got = online_softmax(x, block_size=2)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    np.testing.assert_allclose(got, softmax(x.detach()), atol=1e-7)
    np.testing.assert_allclose(online_softmax([1, 2, 3], block_size=2), softmax([1, 2, 3]))


@given(
    st.lists(st.floats(-1e4, 1e4), min_size=1, max_size=40),
    st.integers(1, 45),
    st.integers(1, 45),
)
def test_online_softmax_block_size_invariance(row, b1, b2):
    x = np.array(row)
    a = online_softmax(x, block_size=b1)
    b = online_softmax(x, block_size=b2)
    np.testing.assert_allclose(a, b, atol=1e-12)
    np.testing.assert_allclose(a, softmax(x), atol=1e-12)
    assert np.isfinite(a).all()


def test_online_softmax_steps_end_at_the_normaliser():
    x = np.array([1.0, 3.0, 2.0, 0.0, 7.0])
    m, l = online_softmax_steps(x, block_size=2)  # noqa: E741
    assert m.tolist() == [3.0, 3.0, 7.0]  # the running maximum never decreases
    np.testing.assert_allclose(l[-1], np.exp(x - 7.0).sum())
    np.testing.assert_allclose(np.exp(x - m[-1]) / l[-1], softmax(x))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"x": [1.0, 2.0], "block_size": 0}, ValueError, r"block_size must be >= 1; got 0"),
        ({"x": [1.0, 2.0], "block_size": -3}, ValueError, r"block_size .* got -3"),
        (
            {"x": [1.0, 2.0], "block_size": 2.0},
            TypeError,
            r"block_size must be an int; got float 2.0",
        ),
        ({"x": [1.0, 2.0], "block_size": True}, TypeError, r"block_size"),
        ({"x": 3.0, "block_size": 1}, ValueError, r"at least 1 dimension"),
        ({"x": [1.0, 2.0], "axis": 1, "block_size": 1}, ValueError, r"axis 1 is out of range"),
        ({"x": [1.0, np.nan], "block_size": 1}, ValueError, r"x contains NaN"),
        ({"x": [1.0, np.inf], "block_size": 1}, ValueError, r"x contains \+inf"),
        ({"x": ["a"], "block_size": 1}, TypeError, r"x must be a numeric array"),
    ],
)
def test_online_softmax_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        online_softmax(**kwargs)


def test_online_softmax_errors_match_softmax():
    for bad in (3.0, [1.0, np.nan], [1.0, np.inf], ["a"]):
        with pytest.raises((TypeError, ValueError)) as ours:
            online_softmax(bad, block_size=1)
        with pytest.raises((TypeError, ValueError)) as theirs:
            softmax(bad)
        assert type(ours.value) is type(theirs.value)
        assert str(ours.value) == str(theirs.value)


def test_online_softmax_requires_block_size_keyword():
    with pytest.raises(TypeError):
        online_softmax([1.0, 2.0], -1, 2)  # block_size is keyword-only


# ---------------------------------------------------------------------------------------------
# tiled attention
# ---------------------------------------------------------------------------------------------

ATTENTION_CASES = [
    # (batch, T_q, T_k, d, d_v, block_q, block_k, causal)
    ((), 1, 1, 4, 4, 1, 1, False),
    ((), 7, 7, 4, 3, 2, 3, True),
    ((2,), 33, 33, 8, 8, 8, 8, True),  # T a multiple of neither? 33 = 4 * 8 + 1
    ((2, 3), 50, 50, 16, 16, 16, 16, False),
    ((2, 3), 50, 50, 16, 16, 7, 13, True),
    ((1, 2), 20, 45, 8, 5, 6, 9, True),  # T_q < T_k, top-left causal
    ((1, 2), 45, 20, 8, 5, 6, 9, True),  # T_q > T_k: queries after T_k see every key
    ((1, 2), 45, 20, 8, 5, 64, 64, False),  # one tile
    ((3,), 64, 64, 8, 8, 64, 1, True),  # one key per tile
    ((3,), 64, 64, 8, 8, 1, 64, True),  # one query per tile
    ((1, 8), 300, 300, 64, 64, 128, 128, True),  # the defaults-like shape
]


def _qkv(batch, t_q, t_k, d, d_v, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, t_q, d, generator=gen, dtype=dtype)
    k = torch.randn(*batch, t_k, d, generator=gen, dtype=dtype)
    v = torch.randn(*batch, t_k, d_v, generator=gen, dtype=dtype)
    return q, k, v


@pytest.mark.parametrize(
    ("batch", "t_q", "t_k", "d", "d_v", "block_q", "block_k", "causal"), ATTENTION_CASES
)
@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-5), (torch.float64, 1e-10)])
def test_tiled_attention_equals_torch_sdpa(
    batch, t_q, t_k, d, d_v, block_q, block_k, causal, dtype, tol
):
    q, k, v = _qkv(batch, t_q, t_k, d, d_v, dtype, seed=t_q * 31 + t_k)
    ours = tiled_attention(q, k, v, block_q=block_q, block_k=block_k, causal=causal)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert ours.shape == ref.shape and ours.dtype == dtype
    torch.testing.assert_close(ours, ref, rtol=0, atol=tol)


@pytest.mark.parametrize("scale", [0.3, 2.0, -1.0])
def test_tiled_attention_scale_matches_sdpa(scale):
    q, k, v = _qkv((2,), 19, 23, 8, 8, torch.float64, seed=5)
    ours = tiled_attention(q, k, v, block_q=4, block_k=5, scale=scale, causal=True)
    ref = F.scaled_dot_product_attention(q, k, v, scale=scale, is_causal=True)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-10)


def test_tiled_attention_default_blocks_and_numpy_input():
    q, k, v = _qkv((1, 2), 600, 600, 16, 16, torch.float64, seed=3)
    ours = tiled_attention(q.numpy(), k.numpy(), v.numpy(), causal=True)
    assert isinstance(ours, torch.Tensor)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-10)


def test_tiled_attention_half_precision_accumulates_in_float32():
    q, k, v = _qkv((2,), 40, 40, 8, 8, torch.float32, seed=9)
    ours = tiled_attention(q.half(), k.half(), v.half(), block_q=8, block_k=8, causal=True)
    assert ours.dtype == torch.float16
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(ours.float(), ref, rtol=0, atol=5e-3)


def test_tiled_attention_with_autograd_matches_sdpa_gradients():
    q, k, v = _qkv((2,), 13, 17, 4, 3, torch.float64, seed=11)
    grads = []
    for fn in (
        lambda a, b, c: tiled_attention(a, b, c, block_q=4, block_k=5, causal=True),
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
    ):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        fn(*leaves).square().sum().backward()
        grads.append([t.grad for t in leaves])
    for ours, ref in zip(*grads, strict=True):
        torch.testing.assert_close(ours, ref, rtol=0, atol=1e-10)


def test_tiled_attention_does_not_modify_inputs():
    q, k, v = _qkv((2,), 20, 20, 4, 4, torch.float32, seed=2)
    copies = [t.clone() for t in (q, k, v)]
    tiled_attention(q, k, v, block_q=3, block_k=3, causal=True)
    for t, c in zip((q, k, v), copies, strict=True):
        assert torch.equal(t, c)


@given(
    t_q=st.integers(1, 40),
    t_k=st.integers(1, 40),
    b=st.tuples(st.integers(1, 41), st.integers(1, 41), st.integers(1, 41), st.integers(1, 41)),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_tiled_attention_block_size_invariance(t_q, t_k, b, causal, seed):
    q, k, v = _qkv((2,), t_q, t_k, 4, 3, torch.float64, seed=seed)
    first = tiled_attention(q, k, v, block_q=b[0], block_k=b[1], causal=causal)
    second = tiled_attention(q, k, v, block_q=b[2], block_k=b[3], causal=causal)
    torch.testing.assert_close(first, second, rtol=0, atol=1e-12)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(first, ref, rtol=0, atol=1e-10)


@given(
    big=st.sampled_from([1e2, 1e3, 1e4]),
    blocks=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_tiled_attention_is_stable_for_huge_logits(big, blocks, causal, seed):
    # Logits of size `big` (scale = 1, unit q and k scaled by sqrt(big)): exp would overflow.
    gen = torch.Generator().manual_seed(seed)
    q = torch.nn.functional.normalize(torch.randn(12, 4, generator=gen), dim=-1) * math.sqrt(big)
    k = torch.nn.functional.normalize(torch.randn(9, 4, generator=gen), dim=-1) * math.sqrt(big)
    v = torch.randn(9, 3, generator=gen)
    ours = tiled_attention(q, k, v, block_q=blocks[0], block_k=blocks[1], causal=causal, scale=1.0)
    assert torch.isfinite(ours).all()
    ref = F.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), is_causal=causal, scale=1.0
    )
    torch.testing.assert_close(ours.double(), ref, rtol=0, atol=1e-4)


def test_logits_of_1e4_in_float32():
    q = torch.tensor([[100.0, 0.0], [0.0, 100.0]])  # (2, 2): scores of +-1e4 with scale 1
    k = torch.tensor([[100.0, 0.0], [-100.0, 0.0], [0.0, 100.0]])  # (3, 2)
    v = torch.tensor([[1.0], [2.0], [3.0]])  # (3, 1)
    out = tiled_attention(q, k, v, block_q=1, block_k=1, scale=1.0)
    torch.testing.assert_close(out, torch.tensor([[1.0], [3.0]]))


BAD_INPUTS = [
    # (description, kwargs override, error, message)
    ("block_q zero", {"block_q": 0}, ValueError, r"block_q must be >= 1; got 0"),
    ("block_k negative", {"block_k": -4}, ValueError, r"block_k must be >= 1; got -4"),
    ("block_q float", {"block_q": 2.0}, TypeError, r"block_q must be an int; got float 2.0"),
    ("block_k bool", {"block_k": True}, TypeError, r"block_k must be an int; got bool True"),
    ("causal not bool", {"causal": 1}, TypeError, r"causal must be True or False"),
    ("scale str", {"scale": "0.1"}, TypeError, r"scale must be a number or None"),
    ("scale nan", {"scale": float("nan")}, ValueError, r"scale must be finite"),
]


@pytest.mark.parametrize(("what", "override", "error", "match"), BAD_INPUTS)
def test_tiled_attention_bad_arguments(what, override, error, match):
    q, k, v = _qkv((), 4, 4, 2, 2, torch.float32, seed=0)
    with pytest.raises(error, match=match):
        tiled_attention(q, k, v, **override)


def test_tiled_attention_shape_errors_name_argument_and_shapes():
    q, k, v = _qkv((2,), 4, 5, 3, 2, torch.float32, seed=0)
    cases = [
        ((q, k[..., :2], v), r"k has shape \(2, 5, 2\), expected \(\.\.\., T_k, 3\)"),
        ((q, k, v[:, :4]), r"v has shape \(2, 4, 2\), expected \(\.\.\., 5, d_v\)"),
        ((q, k[None], v[None]), r"same leading \(batch\) dimensions.*q \(2, 4, 3\)"),
        (
            (q[0, 0], k, v),
            r"q must have at least 2 dimensions \(\.\.\., T_q, d\); got shape \(3,\)",
        ),
        ((q, k[:, :0], v[:, :0]), r"k has shape \(2, 0, 3\), expected .* T_k >= 1"),
        ((q[..., :0], k[..., :0], v), r"q has shape \(2, 4, 0\), expected .* d_k >= 1"),
    ]
    for args, match in cases:
        with pytest.raises(ValueError, match=match):
            tiled_attention(*args)


def test_tiled_attention_dtype_errors():
    q, k, v = _qkv((), 4, 4, 2, 2, torch.float32, seed=0)
    with pytest.raises(TypeError, match=r"same dtype; got q torch.float32, k torch.float64"):
        tiled_attention(q, k.double(), v)
    with pytest.raises(TypeError, match=r"q must be a floating-point tensor.*torch.int64"):
        tiled_attention(q.long(), k, v)
    with pytest.raises(TypeError, match=r"k must be a torch.Tensor .*got list"):
        tiled_attention(q, k.tolist(), v)


def test_tiled_attention_never_forms_a_tq_by_tk_tensor(monkeypatch):
    """Spy on every matmul the function does: no result may have T_q x T_k as its last two dims."""
    q, k, v = _qkv((2,), 40, 48, 4, 4, torch.float32, seed=0)
    seen = []
    real = torch.matmul

    def spy(a, b, *args, **kw):
        out = real(a, b, *args, **kw)
        seen.append(tuple(out.shape))
        return out

    monkeypatch.setattr(torch, "matmul", spy)
    tiled_attention(q, k, v, block_q=8, block_k=16, causal=True)
    assert seen, "the spy saw no matmul: the test does not observe the implementation"
    assert all(s[-2] <= 8 and s[-1] <= 16 for s in seen), seen


# ---------------------------------------------------------------------------------------------
# schedule, steps, models
# ---------------------------------------------------------------------------------------------


def test_tile_schedule_covers_every_visible_pair_once():
    for t_q, t_k, bq, bk, causal in [
        (10, 10, 3, 4, True),
        (7, 12, 2, 5, True),
        (9, 4, 4, 3, False),
    ]:
        tiles = tile_schedule(t_q, t_k, block_q=bq, block_k=bk, causal=causal)
        count = np.zeros((t_q, t_k), dtype=int)
        for qs, qe, ks, ke in tiles:
            count[qs:qe, ks:ke] += 1
        assert count.max() == 1
        visible = np.tril(np.ones((t_q, t_k), dtype=bool)) if causal else np.ones((t_q, t_k), bool)
        assert (count[visible] == 1).all()  # every needed score is in some tile


def test_causal_schedule_skips_about_half_the_tiles():
    full = tile_schedule(64, 64, block_q=8, block_k=8)
    causal = tile_schedule(64, 64, block_q=8, block_k=8, causal=True)
    assert len(full) == 64 and len(causal) == 36  # 8 * 9 / 2


@pytest.mark.parametrize("causal", [False, True])
def test_tiled_attention_steps_converge_to_the_exact_output(causal):
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(6, 3)), rng.normal(size=(7, 3)), rng.normal(size=(7, 2))
    steps = list(tiled_attention_steps(q, k, v, block_q=4, block_k=3, causal=causal))
    assert [s.tile for s in steps] == tile_schedule(6, 7, block_q=4, block_k=3, causal=causal)
    ref = F.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), is_causal=causal)
    np.testing.assert_allclose(steps[-1].output, ref.numpy(), atol=1e-12)
    for before, after in itertools.pairwise(steps):
        assert (after.m >= before.m).all()  # the running maximum never decreases


def test_memory_model_ratio_at_8192():
    mem = attention_memory_bytes(8192)  # the default blocks
    assert mem["naive"] / mem["tiled"] > 50
    small = attention_memory_bytes(16, block_q=256, block_k=512)
    assert small["tiled"] == 4 * 8 * (16 * 128 + 16 * 66 + 16 * 16)  # tiles never exceed T x T


def test_io_cost_model_orders():
    n = np.array([16384.0, 32768.0, 65536.0])
    naive = io_cost_naive(n, 64)
    tiled = io_cost_tiled(n, 64, 100_000)
    assert (tiled < naive).all()
    np.testing.assert_allclose(naive[1:] / naive[:-1], 4, rtol=0.05)  # ~ N^2
    np.testing.assert_allclose(tiled[1:] / tiled[:-1], 4, rtol=0.1)  # ~ N^2 d^2 / M
    # bigger fast memory, fewer accesses; bigger d, more
    assert io_cost_tiled(4096, 64, 200_000) < io_cost_tiled(4096, 64, 100_000)
    assert io_cost_tiled(4096, 128, 100_000) > io_cost_tiled(4096, 64, 100_000)


def test_parallel_path_restores_threads_and_keeps_modes():
    """The CPU fast path shares the heads among Python threads with PyTorch's thread count at 1."""
    q, k, v = _qkv((2, 4), 30, 30, 8, 8, torch.float64, seed=4)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with torch.inference_mode():
            out = tiled_attention(q, k, v, block_q=7, block_k=9, causal=True)
        assert torch.get_num_threads() == 2
        torch.testing.assert_close(out, ref, rtol=0, atol=1e-10)
        with torch.no_grad():  # inputs that require grad, but no graph is wanted
            leaves = [t.clone().requires_grad_() for t in (q, k, v)]
            out = tiled_attention(*leaves, block_q=7, block_k=9, causal=True)
        assert not out.requires_grad
        torch.testing.assert_close(out, ref, rtol=0, atol=1e-10)
        single = q[:1, :1]  # one batch entry: nothing to share, the serial path
        torch.testing.assert_close(
            tiled_attention(single, k[:1, :1], v[:1, :1], causal=True),
            ref[:1, :1],
            rtol=0,
            atol=1e-10,
        )
    finally:
        torch.set_num_threads(before)


def test_parallel_path_reuses_its_workers_and_serves_concurrent_callers():
    """The worker threads are made once (a fresh thread's first PyTorch call costs milliseconds),
    and callers from several Python threads at once each get their own, exact, result."""
    from concurrent.futures import ThreadPoolExecutor

    from course_utils import flash_fast

    inputs = [_qkv((1, 4), 40, 40, 8, 8, torch.float64, seed=s) for s in range(6)]
    refs = [F.scaled_dot_product_attention(q, k, v, is_causal=True) for q, k, v in inputs]
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with torch.inference_mode():
            tiled_attention(*inputs[0], block_q=16, block_k=16, causal=True)
            workers = set(flash_fast._POOLS[2]._threads)
            tiled_attention(*inputs[1], block_q=16, block_k=16, causal=True)
            # The same threads, not new ones: the pool may add its second worker lazily (on a
            # loaded machine the first call can finish on one), but it never replaces a worker
            # and never holds more than its two.
            now = set(flash_fast._POOLS[2]._threads)
            assert workers <= now and len(now) <= 2, (workers, now)

        def call(i: int) -> torch.Tensor:
            with torch.inference_mode():
                return tiled_attention(*inputs[i], block_q=16, block_k=16, causal=True)

        with ThreadPoolExecutor(3) as callers:
            outs = list(callers.map(call, range(len(inputs))))
        for out, ref in zip(outs, refs, strict=True):
            torch.testing.assert_close(out, ref, rtol=0, atol=1e-10)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(("t_q", "t_k", "block_q", "block_k"), [(37, 53, 8, 5), (53, 37, 16, 16)])
@pytest.mark.parametrize("threads", [1, 2])
def test_inplace_paths_match_sdpa_and_the_autograd_path(t_q, t_k, block_q, block_k, threads):
    """The fast path (serial or shared among threads) against SDPA and the out-of-place path.

    Causal diagonal tiles whose first rows see none of the keys update only some rows in place;
    the first key block sets the running state, the later ones rescale it.
    """
    q, k, v = _qkv((3, 2), t_q, t_k, 16, 8, torch.float32, seed=t_q + t_k)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.no_grad():
            fast = tiled_attention(q, k, v, block_q=block_q, block_k=block_k, causal=True)
    finally:
        torch.set_num_threads(before)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    slow = tiled_attention(*leaves, block_q=block_q, block_k=block_k, causal=True)
    assert slow.requires_grad and not fast.requires_grad
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(fast, ref, rtol=0, atol=1e-5)
    torch.testing.assert_close(fast, slow.detach(), rtol=0, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# the readable reference (the loop chapter 12 shows) and its speed paths
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("batch", "t_q", "t_k", "d", "d_v", "block_q", "block_k", "causal"), ATTENTION_CASES
)
def test_the_reference_alone_equals_torch_sdpa(batch, t_q, t_k, d, d_v, block_q, block_k, causal):
    """tiled_attention_reference, called directly (no checks, no speed paths), in float64:
    causal and not, T_q != T_k, tiles that do not divide T, one key or one query per tile."""
    from course_utils.flash import tiled_attention_reference

    q, k, v = _qkv(batch, t_q, t_k, d, d_v, torch.float64, seed=t_q * 17 + t_k)
    ours = tiled_attention_reference(q, k, v, block_q=block_q, block_k=block_k, causal=causal)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert ours.shape == ref.shape
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("t_q", "t_k", "block_q", "block_k"), [(37, 53, 8, 5), (53, 37, 16, 16)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("grad", [False, True])
def test_tiled_attention_equals_its_reference(t_q, t_k, block_q, block_k, causal, grad):
    """The guarded public function, on its fast path (no grad: in place, base 2, threads) and on
    its autograd path, gives the reference's numbers (float64), and its scale is SDPA's."""
    from course_utils.flash import tiled_attention_reference

    q, k, v = _qkv((2, 3), t_q, t_k, 16, 8, torch.float64, seed=t_q + 3 * t_k)
    blocks = {"block_q": block_q, "block_k": block_k, "causal": causal}
    want = tiled_attention_reference(q, k, v, **blocks)
    got = tiled_attention(*(t.clone().requires_grad_(grad) for t in (q, k, v)), **blocks)
    assert got.requires_grad == grad
    torch.testing.assert_close(got.detach(), want, rtol=0, atol=1e-12)


def test_the_reference_returns_the_running_statistics():
    """stats=True: the final running max m is the row maximum of the visible scaled scores and
    ℓ the softmax's denominator under it (what the chapter's widget shows)."""
    from course_utils.flash import tiled_attention_reference

    q, k, v = _qkv((2,), 9, 11, 4, 3, torch.float64, seed=1)
    out, m, ell = tiled_attention_reference(q, k, v, block_q=4, block_k=3, causal=True, stats=True)
    s = (q @ k.transpose(-2, -1) / 2.0).masked_fill(torch.ones(9, 11).triu(1).bool(), -math.inf)
    torch.testing.assert_close(m, s.amax(dim=-1, keepdim=True), rtol=0, atol=0)
    torch.testing.assert_close(ell, torch.exp(s - m).sum(dim=-1, keepdim=True), rtol=0, atol=1e-12)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True),
                               rtol=0, atol=1e-12)  # fmt: skip


def test_chapter_12_shows_the_readable_reference_in_at_most_60_lines():
    """Both editions include the reference from the package file, and the shown function is
    the maths only: at most 60 lines, no argument checks, no threads, no in-place speed path."""
    import inspect
    import re

    from course_utils import flash

    from .notebook_runner import CHAPTERS, included_pyobjects

    shown = included_pyobjects("12_efficient_attention", "flash.py")
    assert shown == {"en": ["tiled_attention_reference"], "zh": ["tiled_attention_reference"]}
    chapter = (CHAPTERS / "12_efficient_attention.ipynb").read_text(encoding="utf-8")
    assert "getsource" not in chapter  # the loop is shown once, from the package file
    source = inspect.getsource(flash.tiled_attention_reference)
    assert len(source.rstrip().splitlines()) <= 60
    for speed_or_check in ("raise", "thread", "Thread", "pool", "exp2", "_(", "out=", "check_"):
        assert speed_or_check not in source, speed_or_check
    # Every line that makes a tensor says its shape (nanoGPT style), on it or just above it.
    lines = source.splitlines()
    makes_tensor = re.compile(r"^\s+[\w, ]+ = .*(torch\.|\.new_|@|\[\.\.\.|masked_fill)")
    unshaped = [
        ln
        for i, ln in enumerate(lines)
        if makes_tensor.match(ln) and "# (" not in ln and "# (" not in lines[i - 1]
    ]
    assert not unshaped, unshaped
    assert sum(bool(makes_tensor.match(ln)) for ln in lines) >= 12


def test_the_speed_paths_live_apart_from_the_reference():
    """flash.py holds the reference, the checks and the teaching helpers; the thread pool and the
    in-place loop are flash_fast's (imported by flash, never the other way round)."""
    import inspect

    from course_utils import flash, flash_fast

    assert "ThreadPoolExecutor" not in inspect.getsource(flash)
    assert "baddbmm_" not in inspect.getsource(flash)
    assert "from .flash import" not in inspect.getsource(flash_fast)
    assert hasattr(flash_fast, "_POOLS") and not hasattr(flash, "_POOLS")


# --- empty inputs and flags (issue 33, §4) --------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_no_queries_give_the_empty_result_as_sdpa(causal, requires_grad):
    q = torch.randn(2, 3, 0, 4, dtype=torch.float64, requires_grad=requires_grad)
    k = torch.randn(2, 3, 5, 4, dtype=torch.float64, requires_grad=requires_grad)
    v = torch.randn(2, 3, 5, 6, dtype=torch.float64)
    out = tiled_attention(q, k, v, block_q=2, block_k=2, causal=causal)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert out.shape == ref.shape == (2, 3, 0, 6)
    assert out.dtype == torch.float64
    if requires_grad:
        out.sum().backward()  # on the graph: gradients of zeros
        assert k.grad is not None and not k.grad.any()


def test_no_keys_is_a_value_error_not_sdpa_zeros():
    q = torch.randn(1, 2, 4)
    k, v = torch.randn(1, 0, 4), torch.randn(1, 0, 3)
    # SDPA returns zeros for a softmax over no keys; tiled_attention refuses it by name.
    assert not F.scaled_dot_product_attention(q, k, v).any()
    with pytest.raises(ValueError, match=r"^k has shape \(1, 0, 4\).*T_k >= 1"):
        tiled_attention(q, k, v)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: tiled_attention(*[torch.randn(3, 4)] * 3, causal="yes"), TypeError, r"^causal"),
        (lambda: tile_schedule(4, 4, block_q=2, block_k=2, causal=1), TypeError, r"^causal"),
        (lambda: tile_schedule(-1, 4, block_q=2, block_k=2), ValueError, r"^t_q must be >= 0"),
        (lambda: tile_schedule(4, 4.0, block_q=2, block_k=2), TypeError, r"^t_k must be an int"),
        (lambda: attention_memory_bytes(0), ValueError, r"^t must be >= 1"),
        (lambda: attention_memory_bytes(8, heads=-1), ValueError, r"^heads must be >= 1"),
        (lambda: attention_memory_bytes(8, d=2.5), TypeError, r"^d must be an int"),
        (lambda: attention_memory_bytes(8, block_q=0), ValueError, r"^block_q must be >= 1"),
        (lambda: attention_memory_bytes(8, itemsize="4"), TypeError, r"^itemsize must be an int"),
    ],
)
def test_bad_sizes_and_flags_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ---- Tiles sized from the machine's caches (issue 39): course_utils.flash_fast ----

XEON = "l1d=48K,l2=2M,l3=1408K"  # a typical recent Xeon core (Sapphire Rapids: 2 MiB of L2)
EPYC = "l1d=32K,l2=512K,l3=16M"  # the AMD EPYC of the recorded benchmark (Zen 2/3: 512 KiB L2)
EPYC_1M = "l1d=32K,l2=1M,l3=16M"  # a newer EPYC (Zen 4: 1 MiB of L2), this test machine's kind


def _write_sysfs(root, caches):
    """A fake ``/sys/devices/system/cpu/cpu0/cache``: ``[(level, type, size, shared_cpu_list)]``."""
    for i, (level, kind, size, shared) in enumerate(caches):
        index = root / f"index{i}"
        index.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (index / name).write_text(f"{value}\n")
        (index / "shared_cpu_list").write_text(f"{shared}\n")
    return root


def test_cpu_caches_reads_sysfs_and_splits_the_l3_among_its_cores(tmp_path, monkeypatch):
    monkeypatch.delenv(CACHES_ENV, raising=False)
    root = _write_sysfs(
        tmp_path,
        [(1, "Data", "48K", "0,56"), (1, "Instruction", "32K", "0,56"),
         (2, "Unified", "2048K", "0,56"), (3, "Unified", "107520K", "0-55,112-167")],
    )  # fmt: skip
    assert cpu_caches(root) == CpuCaches(48 * 1024, 2048 * 1024, 107520 * 1024 // 112, "sysfs")


def test_cpu_caches_falls_back_when_the_machine_says_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(CACHES_ENV, raising=False)
    assert cpu_caches(tmp_path / "missing") == FALLBACK_CACHES


def test_cpu_caches_environment_overrides_the_machine(tmp_path, monkeypatch):
    root = _write_sysfs(tmp_path, [(2, "Unified", "1024K", "0")])
    monkeypatch.setenv(CACHES_ENV, XEON)
    assert cpu_caches(root) == CpuCaches(48 * 1024, 2 * 1024**2, 1408 * 1024, "given")


@pytest.mark.parametrize("text", ["l2=lots", "l4=1M", "l1d=32K", "l2=-1M", "l2=0K"])
def test_bad_cache_override_is_named(monkeypatch, text):
    monkeypatch.setenv(CACHES_ENV, text)
    with pytest.raises(ValueError, match=rf"^{CACHES_ENV} must .*got '{re.escape(text)}'"):
        cpu_caches()


@pytest.mark.parametrize(
    ("caches", "d", "itemsize", "blocks"),
    [
        (EPYC, 64, 4, (256, 256)),  # the sweep's fastest tile on that CPU
        (EPYC_1M, 64, 4, (512, 256)),  # twice the L2: twice the tile, more query rows
        (XEON, 64, 4, (512, 512)),
        ("l2=1.25M", 64, 4, (512, 256)),  # Ice Lake: 512 x 512 would spill
        (EPYC_1M, 64, 8, (256, 256)),  # float64: half the numbers fit
        (EPYC_1M, 128, 4, (256, 256)),  # larger heads: a smaller tile
        ("l2=32K", 64, 4, (64, 64)),  # nothing fits: the smallest tile, not a thinner one
        ("l2=1G", 64, 4, (1024, 1024)),  # the largest tile
    ],
)
def test_choose_blocks_table(caches, d, itemsize, blocks):
    assert choose_blocks(d, d, itemsize, CpuCaches.parse(caches)) == blocks


@given(
    l2_kib=st.integers(64, 65536),
    d=st.sampled_from([16, 32, 64, 80, 128, 256]),
    itemsize=st.sampled_from([4, 8]),
)
def test_choose_blocks_fits_in_the_l2_and_grows_with_it(l2_kib, d, itemsize):
    small, large = (CpuCaches(32 * 1024, n * 1024, 0) for n in (l2_kib, 2 * l2_kib))
    bq, bk = choose_blocks(d, d, itemsize, small)
    working_set = (bq * bk + 2 * (bq + bk) * d) * itemsize  # scores; q, o; k, v of one head
    assert working_set <= small.l2 or (bq, bk) == (64, 64)
    assert max(bq, bk) <= 2 * min(bq, bk)
    bq2, bk2 = choose_blocks(d, d, itemsize, large)
    assert bq2 * bk2 >= bq * bk  # a larger L2 never gets a smaller tile


@pytest.mark.parametrize("caches", [EPYC, EPYC_1M, XEON])
@pytest.mark.parametrize("causal", [False, True])
def test_default_tiles_of_any_cpu_equal_sdpa_and_the_explicit_tiles(monkeypatch, caches, causal):
    """Whatever tile a CPU gets, the result is SDPA's (float64, 1e-10) and exactly that of the
    same tile passed by hand."""
    monkeypatch.setenv(CACHES_ENV, caches)
    q, k, v = _qkv((1, 4), 1100, 1100, 64, 64, torch.float64, seed=5)
    ours = tiled_attention(q, k, v, causal=causal)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-10)
    bq, bk = choose_blocks(64, 64, 8, CpuCaches.parse(caches))
    same = tiled_attention(q, k, v, block_q=bq, block_k=bk, causal=causal)
    assert torch.equal(ours, same)
    half = tiled_attention(q, k, v, block_q=bq, causal=causal)  # block_k chosen, block_q given
    assert torch.equal(half, same)
