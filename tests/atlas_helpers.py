"""What the tests of the atlas's models (``tests/test_atlas_<type>.py``) share: the checks that a
rebuild is made of our modules only, cached decoding (a prompt, then one token at a time) and
chunked prefill. A plain module, imported by those tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
import torch
from torch import Tensor, nn

from course_utils._determinism import one_thread


@pytest.fixture
def one_torch_thread():
    """One torch thread: on a busy two-core machine much faster for these tiny models (a test
    module makes it autouse by importing it and naming it in ``pytestmark``)."""
    with one_thread():
        yield


def assert_ours_never_calls_theirs(ours: nn.Module, model: nn.Module, *, cached: bool) -> None:
    """``ours`` holds only ``course_utils`` and ``torch`` modules, and runs a 12-token prompt (and,
    if ``cached``, one more cached token) while every module of ``model`` refuses to be called."""
    assert all(
        type(m).__module__.split(".")[0] in ("course_utils", "torch") for m in ours.modules()
    )

    def refuse(module, args):
        raise AssertionError(f"{type(module).__name__} was called")

    for module in model.modules():
        module.register_forward_pre_hook(refuse)
    with torch.no_grad():
        cache = ours.new_cache() if cached else None
        ours(torch.arange(12)[None], cache=cache)  # without touching the transformers model
        if cached:
            ours(torch.arange(1)[None], cache=cache)


def decode(forward: Callable[[Tensor, object], Tensor], ids: Tensor, cache, prompt: int) -> Tensor:
    """Logits of a ``prompt``-token prompt, then of one token at a time, concatenated:
    ``forward(new_ids, cache)`` is ours or the reference."""
    steps = [forward(ids[:, :prompt], cache)]
    steps += [forward(ids[:, t : t + 1], cache) for t in range(prompt, ids.shape[1])]
    return torch.cat(steps, dim=1)


def decode_ours(ours: nn.Module, ids: Tensor, prompt: int) -> tuple[Tensor, object]:
    """Our cached decoding of ``ids`` from a fresh cache, and that cache."""
    cache = ours.new_cache()
    with torch.no_grad():
        return decode(lambda x, c: ours(x, cache=c), ids, cache, prompt), cache


def decode_reference(model: nn.Module, ids: Tensor, prompt: int) -> Tensor:
    """``transformers``' own cached decoding of ``ids`` (a ``DynamicCache``)."""
    from transformers import DynamicCache

    with torch.no_grad():
        return decode(
            lambda x, c: model(x, cache=c, use_cache=True).logits,
            ids,
            DynamicCache(config=model.config),
            prompt,
        )


def chunked_prefill_error(ours: nn.Module, ids: Tensor, chunks: Sequence[int]) -> float:
    """max |logits of ``ids`` fed in pieces of ``chunks`` tokens via a cache - the full pass|."""
    cache, start, pieces = ours.new_cache(), 0, []
    with torch.no_grad():
        for n in chunks:
            pieces.append(ours(ids[:, start : start + n], cache=cache))
            start += n
        full = ours(ids)
    return float((torch.cat(pieces, dim=1) - full).abs().max())
