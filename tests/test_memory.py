"""``course_utils.memory``: bytes per number, arithmetic intensity and the roofline."""

from __future__ import annotations

import pytest
import torch

from course_utils.memory import BYTES_PER_VALUE, OpCost, matmul_cost, ridge_point, roofline


@pytest.mark.parametrize("name", sorted(BYTES_PER_VALUE))
def test_bytes_per_value_are_torch_element_sizes(name: str) -> None:
    dtype = getattr(torch, name)
    assert torch.empty(0, dtype=dtype).element_size() == BYTES_PER_VALUE[name]


@pytest.mark.parametrize("m, k, n", [(2, 3, 1), (4096, 4096, 1), (64, 128, 32)])
def test_matmul_flops_match_torch_flop_counter(m: int, k: int, n: int) -> None:
    from torch.utils.flop_counter import FlopCounterMode

    a, b = torch.zeros(m, k), torch.zeros(k, n)
    with FlopCounterMode(display=False) as counter:
        _ = a @ b  # (m, n)
    cost = matmul_cost(m, k, n, bytes_per_value=4)
    assert cost.flops == counter.get_total_flops()
    assert cost.bytes_moved == (a.numel() + b.numel() + m * n) * 4


def test_matrix_vector_product_has_intensity_about_one_in_bfloat16() -> None:
    decode = matmul_cost(4096, 4096, 1, bytes_per_value=2)
    assert 0.99 < decode.intensity < 1.0  # 1 multiply-add (2 FLOPs) per 2-byte weight
    assert matmul_cost(4096, 4096, 64).intensity > 60 * decode.intensity  # a batch reuses them


def test_roofline_and_ridge() -> None:
    assert ridge_point(312e12, 2.0e12) == 156.0
    assert roofline(1.0, peak_flops=312e12, bandwidth=2.0e12) == 2.0e12
    assert roofline(156.0, peak_flops=312e12, bandwidth=2.0e12) == 312e12
    assert roofline(1e4, peak_flops=312e12, bandwidth=2.0e12) == 312e12
    assert OpCost(10, 5).intensity == 2.0


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: matmul_cost(0, 3, 1), ValueError),
        (lambda: matmul_cost(2, 3, 1.5), TypeError),
        (lambda: matmul_cost(2, 3, 1, bytes_per_value=0), ValueError),
        (lambda: ridge_point(-1.0, 1.0), ValueError),
        (lambda: roofline("1", peak_flops=1.0, bandwidth=1.0), TypeError),
    ],
)
def test_bad_input_is_rejected(call, error) -> None:
    with pytest.raises(error):
        call()
