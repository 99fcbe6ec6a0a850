"""Bytes, bandwidth and arithmetic intensity: when a computation waits for memory.

A processor can only multiply numbers that have reached it. If an operation does ``F`` FLOPs and
has to move ``B`` bytes between the main memory and the chip, its **arithmetic intensity** is
``F / B`` FLOPs per byte. The **roofline** model (Williams, Waterman & Patterson 2009) bounds its
speed by ``min(peak FLOP/s, intensity × bandwidth)``: below the *ridge point*
``peak / bandwidth`` the memory is the bottleneck, above it the arithmetic units are. Chapters 10,
11 and 12 use this to explain why decoding one token is memory-bound: a matrix–vector product reads
every weight once and does one multiply-add (2 FLOPs) with it, so in bfloat16 (2 bytes a number)
its intensity is about 1 FLOP per byte, far below a GPU's ridge of over 100. The appendix page
``appendix/memory`` explains it.

>>> decode = matmul_cost(4096, 4096, 1, bytes_per_value=2)   # one token through a 4096² layer
>>> round(decode.intensity, 4)
0.9995
>>> roofline(decode.intensity, peak_flops=312e12, bandwidth=2.0e12) / 312e12 < 0.01
True
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ._validation import check_int, check_positive_finite

__all__ = ["BYTES_PER_VALUE", "OpCost", "matmul_cost", "ridge_point", "roofline"]

#: Bytes one number takes in the formats the course meets (IEEE 754 float32/float16; bfloat16 is
#: float32's sign and 8-bit exponent with a 7-bit mantissa; int8 is a quantised weight).
BYTES_PER_VALUE: dict[str, int] = {"float32": 4, "float16": 2, "bfloat16": 2, "int8": 1}


class OpCost(NamedTuple):
    """FLOPs and bytes moved by one operation; ``intensity`` is FLOPs per byte."""

    flops: int
    bytes_moved: int

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOPs per byte moved."""
        return self.flops / self.bytes_moved


def matmul_cost(m: int, k: int, n: int, *, bytes_per_value: int = 2) -> OpCost:
    """FLOPs and minimum bytes moved by ``(m, k) @ (k, n)``, each number read or written once.

    FLOPs: ``2 m k n`` (one multiply and one add per term). Bytes: both inputs read and the
    output written once, ``(m k + k n + m n) · bytes_per_value``: the least any implementation
    can move, so the intensity is an upper bound. With ``n = 1`` this is a matrix–vector product:
    a weight matrix ``(m, k)`` applied to one token, intensity ≈ ``2 / bytes_per_value``; with a
    batch of ``n`` tokens the same weights serve ``n`` columns and the intensity grows about
    ``n``-fold.

    >>> matmul_cost(2, 3, 1, bytes_per_value=4)
    OpCost(flops=12, bytes_moved=44)
    >>> round(matmul_cost(4096, 4096, 64).intensity, 1)    # a batch of 64 tokens, bfloat16
    62.1
    """
    m, k, n = (check_int(v, name, low=1) for v, name in ((m, "m"), (k, "k"), (n, "n")))
    b = check_int(bytes_per_value, "bytes_per_value", low=1)
    return OpCost(2 * m * k * n, (m * k + k * n + m * n) * b)


def ridge_point(peak_flops: Any, bandwidth: Any) -> float:
    """The intensity (FLOPs per byte) above which a processor is compute-bound: peak / bandwidth.

    >>> ridge_point(312e12, 2.0e12)       # A100 80 GB: bf16 tensor cores, HBM bandwidth
    156.0
    """
    return check_positive_finite(peak_flops, "peak_flops") / check_positive_finite(
        bandwidth, "bandwidth"
    )


def roofline(intensity: Any, *, peak_flops: Any, bandwidth: Any) -> float:
    """Attainable FLOP/s at this intensity: ``min(peak_flops, intensity × bandwidth)``.

    >>> roofline(1.0, peak_flops=312e12, bandwidth=2.0e12) / 1e12   # TFLOP/s when decoding
    2.0
    >>> roofline(1000.0, peak_flops=312e12, bandwidth=2.0e12) / 1e12
    312.0
    """
    i = check_positive_finite(intensity, "intensity")
    p = check_positive_finite(peak_flops, "peak_flops")
    return min(p, i * check_positive_finite(bandwidth, "bandwidth"))
