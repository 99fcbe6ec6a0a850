"""``course_utils.memory_floor``: the stack a decoding step is timed on, the floor's arithmetic, and
clear errors for bad sizes.

The oracle for the stack is a full causal pass (a cached step must give its last row) and
PyTorch's own parameter count; the floor is bytes / bandwidth, checked against numbers computed
here by hand.
"""

from __future__ import annotations

import pytest
import torch

from course_utils.kv_cache import KVCache, PreallocatedKVCache
from course_utils.memory_floor import (
    BlockStack,
    DecodeFloor,
    fill_cache,
    measure_decode_floor,
    read_bandwidth,
    timings,
)


@pytest.mark.parametrize("cache_class", [KVCache, PreallocatedKVCache])
def test_cached_steps_equal_the_full_causal_pass(cache_class: type) -> None:
    torch.manual_seed(0)
    stack = BlockStack(n_layers=3, d_model=16, n_heads=4, d_ff=32).double().eval()
    x = torch.randn(2, 9, 16, dtype=torch.float64)  # (B, T, d_model)
    cache = stack.new_cache(cache_class)
    with torch.no_grad():
        pieces = [stack(x[:, :5], cache)] + [stack(x[:, i : i + 1], cache) for i in range(5, 9)]
        full = stack(x)
    assert torch.allclose(torch.cat(pieces, dim=1), full, atol=1e-12, rtol=0)


def test_fill_cache_holds_context_tokens_per_block() -> None:
    stack = BlockStack(n_layers=2, d_model=8, n_heads=2, d_ff=16)
    caches = fill_cache(stack, 7, torch.Generator().manual_seed(1))
    assert [len(c) for c in caches] == [7, 7]
    assert tuple(caches[0].keys.shape) == (1, 2, 7, 4)  # (B, n_kv_heads, context, d_k)


def test_the_floor_is_bytes_over_bandwidth() -> None:
    r = DecodeFloor(
        n_layers=2, d_model=8, context=10, weight_bytes=600, cache_bytes=400, bandwidth=1e4,
        step_s=0.25, full_pass_s=2.0,
    )  # fmt: skip
    assert r.bytes_read == 1000
    assert r.floor_s == pytest.approx(0.1)
    assert r.step_over_floor == pytest.approx(2.5)
    assert r.full_pass_over_step == pytest.approx(8.0)
    assert "2.5 times its floor" in str(r)
    no_full = DecodeFloor(2, 8, 10, 600, 400, 1e4, 0.25)
    assert no_full.full_pass_over_step is None and "full pass" not in str(no_full)


def test_a_measurement_counts_every_weight_and_cached_value() -> None:
    torch.manual_seed(0)
    stack = BlockStack(n_layers=2, d_model=32, n_heads=4, d_ff=64).eval()
    r = measure_decode_floor(context=20, reps=2, full_pass=True, stack=stack)
    assert r.weight_bytes == 4 * sum(p.numel() for p in stack.parameters())  # float32
    assert r.cache_bytes == 2 * 2 * 21 * 32 * 4  # k and v, 2 blocks, 20 + the new token, float32
    assert r.n_layers == 2 and r.d_model == 32 and r.context == 20
    assert r.step_s > 0 and r.full_pass_s is not None and r.full_pass_s > 0 and r.bandwidth > 0


def test_measuring_leaves_the_global_generator_alone() -> None:
    torch.manual_seed(5)
    before = torch.get_rng_state()
    measure_decode_floor(n_layers=1, d_model=8, n_heads=2, d_ff=16, context=4, reps=1)
    assert torch.equal(torch.get_rng_state(), before)


def test_from_benchmark_reads_a_saved_result() -> None:
    saved = {
        "n_layers": 12,
        "d_model": 768,
        "read_bandwidth_bytes_per_s": [{"wall": 2e10}, {"wall": 2.5e10}],
        "rows": [
            {"layout": "as-built", "context": 1024, "weight_bytes": 4e8, "cache_bytes": 1e8,
             "step_ms_wall": 40.0, "full_pass_ms_wall": 4000.0},
            {"layout": "decoding", "context": 1024, "weight_bytes": 4e8, "cache_bytes": 1e8,
             "step_ms_wall": 30.0},
        ],
    }  # fmt: skip
    (row,) = DecodeFloor.from_benchmark(saved)
    assert row.floor_s == pytest.approx(5e8 / 2.5e10)  # the best bandwidth of the run
    assert row.step_over_floor == pytest.approx(2.0)
    assert row.full_pass_over_step == pytest.approx(100.0)
    (fast,) = DecodeFloor.from_benchmark(saved, layout="decoding")
    assert fast.full_pass_s is None
    with pytest.raises(ValueError, match=r"layout must be one of \['as-built', 'decoding'\]"):
        DecodeFloor.from_benchmark(saved, layout="other")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: BlockStack(0, 8, 2, 16), "n_layers"),
        (lambda: BlockStack(2, 8, 2, -1), "d_ff"),
        (lambda: BlockStack(10**6, 8192, 64, 32768), "BlockStack would build"),
        (lambda: fill_cache(BlockStack(1, 8, 2, 16), 0, torch.Generator()), "context"),
        (lambda: fill_cache(BlockStack(1, 8, 2, 16), 10**12, torch.Generator()), "fill_cache"),
        (lambda: read_bandwidth(reps=0), "reps"),
        (lambda: read_bandwidth(nbytes=2**50), "read_bandwidth"),
        (lambda: timings(lambda: None, reps=0), "reps"),
    ],
)
def test_bad_sizes_get_a_clear_error(call, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        call()
