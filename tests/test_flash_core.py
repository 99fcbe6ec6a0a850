"""Chapter 12's readable core, ``course_utils.flash.tiled_attention_reference`` (issue 31).

The reference is the one implementation of the online-softmax tile update that a reader sees:
at most 60 lines of code, equal to ``torch.nn.functional.scaled_dot_product_attention`` (written
independently of this course) in float64. The other places that hold the same update inline it
for a reason, and here they are held to the reference:

- ``course_utils.flash_fast`` (the speed path: base 2, in place, heads shared among threads)
  gives the reference's state after every tile, within 1e-12 in float64, serial and threaded;
- ``course_utils.flash.online_softmax_steps`` (numpy, one row, ``-inf`` rows allowed) gives
  the reference's running ``(m, ℓ)`` after every block.

Also: the speed path never imports the reference's module (no import cycle), and the bad input
the reference leaves unchecked is refused by name by the guarded ``tiled_attention``.
"""

from __future__ import annotations

import ast
import inspect
import io
import math
import tokenize
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from course_utils import flash, flash_fast
from course_utils.flash import (
    online_softmax_steps,
    tile_schedule,
    tiled_attention,
    tiled_attention_reference,
)
from course_utils.flash_fast import tiled_attention_fast

#: float64 agreement asked of every path that computes the same update.
TOL = 1e-12


def _qkv(batch: tuple[int, ...], t_q: int, t_k: int, d: int, d_v: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, t_q, d, generator=gen, dtype=torch.float64)  # (..., T_q, d)
    k = torch.randn(*batch, t_k, d, generator=gen, dtype=torch.float64)  # (..., T_k, d)
    v = torch.randn(*batch, t_k, d_v, generator=gen, dtype=torch.float64)  # (..., T_k, d_v)
    return q, k, v


def _worst(a: torch.Tensor, b: torch.Tensor) -> float:
    assert a.shape == b.shape, (a.shape, b.shape)
    return float((a - b).abs().max()) if a.numel() else 0.0


# ---------------------------------------------------------------------------------------------
# the core is short and shaped
# ---------------------------------------------------------------------------------------------


def _code_lines(source: str) -> list[str]:
    """The lines of ``source`` (one function) that hold code: no docstring, comment or blank."""
    func = ast.parse(source).body[0]
    assert isinstance(func, ast.FunctionDef)
    doc = func.body[0]
    has_doc = isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
    doc_lines = set(range(doc.lineno, doc.end_lineno + 1)) if has_doc else set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    code = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip and tok.type != tokenize.ENDMARKER:
            code.update(range(tok.start[0], tok.end[0] + 1))
    lines = source.splitlines()
    return [lines[n - 1] for n in sorted(code - doc_lines)]


def test_code_lines_counts_code_only():
    source = 'def f(x):\n    """Doc.\n\n    >>> f(1)\n    """\n    # why\n\n    return (x +\n  1)\n'
    assert _code_lines(source) == ["def f(x):", "    return (x +", "  1)"]


def test_the_core_is_at_most_60_lines_of_code_with_a_worked_example():
    source = inspect.getsource(tiled_attention_reference)
    code = _code_lines(source)
    assert len(code) <= 60, len(code)
    assert len(code) >= 20  # the whole loop, not a call into something the chapter hides
    assert ">>> " in (tiled_attention_reference.__doc__ or "")  # the worked example
    # The chapter shows it in a 79-column code box.
    assert max(len(line) for line in source.splitlines()) <= 79


def test_the_core_calls_no_other_function_of_the_package():
    """The tile update is written out in the shown function (the chapter shows nothing else):
    the only names it calls are torch's, math's and builtins."""
    func = ast.parse(inspect.getsource(tiled_attention_reference)).body[0]
    called = {
        node.func.id
        for node in ast.walk(func)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert called <= {"range", "zip", "len", "min", "max"}, called


# ---------------------------------------------------------------------------------------------
# the core equals torch SDPA
# ---------------------------------------------------------------------------------------------

CORE_CASES = [
    # (batch, T_q, T_k, d, d_v, block_q, block_k, scale)
    ((), 1, 1, 1, 1, 1, 1, None),  # the smallest: one query, one key
    ((), 5, 9, 3, 2, 2, 4, None),  # blocks that divide neither T
    ((2,), 16, 16, 8, 8, 4, 4, 0.3),  # square tiles, a scale of one's own
    ((2, 2), 31, 17, 8, 4, 8, 5, None),  # T_q > T_k: late queries see every key
    ((2, 2), 17, 31, 8, 4, 5, 8, None),  # T_q < T_k
    ((1, 3), 40, 40, 16, 16, 40, 40, None),  # one tile
    ((3,), 24, 24, 4, 4, 24, 1, 2.0),  # one key per tile: a rescale at every key
    ((3,), 24, 24, 4, 4, 1, 24, None),  # one query per tile
    ((1, 2), 130, 130, 32, 32, 64, 48, None),  # several tiles each way
]


@pytest.mark.parametrize(
    ("batch", "t_q", "t_k", "d", "d_v", "block_q", "block_k", "scale"), CORE_CASES
)
@pytest.mark.parametrize("causal", [False, True])
def test_the_core_equals_torch_sdpa(batch, t_q, t_k, d, d_v, block_q, block_k, scale, causal):
    q, k, v = _qkv(batch, t_q, t_k, d, d_v, seed=1000 * t_q + t_k + block_k)
    blocks = {"block_q": block_q, "block_k": block_k}
    ours = tiled_attention_reference(q, k, v, **blocks, causal=causal, scale=scale)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    assert ours.dtype == torch.float64
    assert _worst(ours, ref) < TOL


@given(
    t_q=st.integers(1, 12),
    t_k=st.integers(1, 12),
    block_q=st.integers(1, 13),
    block_k=st.integers(1, 13),
    causal=st.booleans(),
    spread=st.sampled_from([1.0, 30.0]),
    seed=st.integers(0, 2**16),
)
def test_the_core_does_not_depend_on_the_tiling(t_q, t_k, block_q, block_k, causal, spread, seed):
    """Invariant: any tiling gives SDPA's output (one tile holding everything is plain softmax),
    also for scores large enough that a block's maximum changes the rescaling a lot."""
    q, k, v = _qkv((2,), t_q, t_k, 4, 3, seed=seed)
    q = q * spread  # (2, T_q, 4): scores up to about ±100 with spread 30
    out = tiled_attention_reference(q, k, v, block_q=block_q, block_k=block_k, causal=causal)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert _worst(out, ref) < TOL


# ---------------------------------------------------------------------------------------------
# the places that inline the same update agree with the core
# ---------------------------------------------------------------------------------------------

FAST_CASES = [
    # (T_q, T_k, block_q, block_k, causal)
    (13, 11, 4, 3, False),
    (13, 11, 4, 3, True),  # diagonal tiles whose first rows see none of the keys
    (9, 17, 5, 4, True),
    (16, 16, 16, 5, True),
]


@pytest.mark.parametrize(("t_q", "t_k", "block_q", "block_k", "causal"), FAST_CASES)
@pytest.mark.parametrize("threads", [1, 2])
def test_the_speed_path_agrees_with_the_core_after_every_tile(
    t_q, t_k, block_q, block_k, causal, threads
):
    """flash_fast inlines the tile update (in place, base 2); after every tile its rows hold the
    core's ``o / ℓ`` within 1e-12 (float64), on the serial path (1 thread) and on the thread pool
    (2 threads, 4 heads). Rows ``qs:qe`` after tile ``(qs, qe, ks, ke)`` are what a run on
    ``q[:qe]``, ``k[:ke]``, ``v[:ke]`` with the same blocks ends with."""
    q, k, v = _qkv((2, 2), t_q, t_k, 8, 4, seed=t_q * 31 + t_k)
    blocks = {"block_q": block_q, "block_k": block_k, "causal": causal}
    scale = 1 / math.sqrt(8)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    worst = 0.0
    try:
        for qs, qe, _, ke in tile_schedule(t_q, t_k, **blocks):
            prefix = (q[..., :qe, :], k[..., :ke, :], v[..., :ke, :])  # (2, 2, qe|ke, ·)
            fast = tiled_attention_fast(*prefix, **blocks, scale=scale)  # (2, 2, qe, 4)
            core = tiled_attention_reference(*prefix, **blocks, scale=scale)  # (2, 2, qe, 4)
            worst = max(worst, _worst(fast[..., qs:, :], core[..., qs:, :]))
    finally:
        torch.set_num_threads(before)
    assert worst < TOL, worst


@pytest.mark.parametrize(("n", "block_size", "spread"), [(1, 1, 1.0), (10, 3, 5.0), (33, 4, 1e3)])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_numpy_online_softmax_agrees_with_the_core(n, block_size, spread, seed):
    """online_softmax_steps (numpy) keeps the same running (m, ℓ) over one row as the core over
    one query whose scores are that row (d = 1, q = 1, k = the row, scale 1)."""
    row = np.random.default_rng(seed).normal(scale=spread, size=n)  # (n,)
    m_np, l_np = online_softmax_steps(row, block_size=block_size)  # (n_blocks,) each
    q = torch.ones(1, 1, dtype=torch.float64)  # (1, 1)
    k = torch.from_numpy(row)[:, None]  # (n, 1): scores q kᵀ = the row
    v = torch.ones(n, 1, dtype=torch.float64)  # (n, 1)
    for b, stop in enumerate(range(block_size, n + block_size, block_size)):
        _, m, ell = tiled_attention_reference(
            q, k[:stop], v[:stop], block_k=block_size, scale=1.0, stats=True
        )  # (1, 1) each: the state after block b
        assert float(m) == m_np[b]  # a maximum is exact
        assert math.isclose(float(ell), l_np[b], rel_tol=TOL)


# ---------------------------------------------------------------------------------------------
# one home, no cycle; the guard checks what the core does not
# ---------------------------------------------------------------------------------------------


def _imported_modules(module) -> set[str]:
    tree = ast.parse(Path(inspect.getfile(module)).read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
            names.update("." * node.level + a.name for a in node.names if not node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_the_speed_path_never_imports_the_core_module():
    """flash imports flash_fast, never the reverse (in any spelling, lazily or not)."""
    fast_imports = _imported_modules(flash_fast)
    assert not fast_imports & {".flash", "course_utils.flash", "."}, fast_imports
    assert ".flash_fast" in _imported_modules(flash)


UNCHECKED = [
    # (what, override of q/k/v or keywords, error the guard raises, its message)
    ("no key blocks", {"block_k": 0}, ValueError, r"^block_k must be >= 1; got 0"),
    ("fractional block", {"block_q": 2.5}, TypeError, r"^block_q must be an int; got float 2.5"),
    ("a string as causal", {"causal": "no"}, TypeError, r"^causal must be True or False"),
    ("no keys", {"k": (2, 0, 4), "v": (2, 0, 3)}, ValueError, r"^k has shape \(2, 0, 4\)"),
    ("widths differ", {"k": (2, 6, 5)}, ValueError, r"^k has shape \(2, 6, 5\), expected"),
]


@pytest.mark.parametrize(("what", "override", "error", "match"), UNCHECKED)
def test_what_the_core_leaves_unchecked_the_guard_refuses_by_name(what, override, error, match):
    """The core trusts its input (it would fail obscurely or return nan); the guarded public
    function names the argument, what it got and what it expected."""
    shapes = {"q": (2, 5, 4), "k": (2, 6, 4), "v": (2, 6, 3)}
    shapes.update({name: s for name, s in override.items() if name in shapes})
    q, k, v = (torch.randn(*shapes[name], dtype=torch.float64) for name in ("q", "k", "v"))
    keywords = {name: x for name, x in override.items() if name not in shapes}
    with pytest.raises(error, match=match):
        tiled_attention(q, k, v, **keywords)
