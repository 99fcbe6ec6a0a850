"""What the tests of the atlas's models (``tests/test_atlas_<type>.py``) share: the checks that a
rebuild is made of our modules only, cached decoding (a prompt, then one token at a time) and
chunked prefill. A plain module, imported by those tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
import torch
from torch import Tensor, nn

from course_utils._determinism import one_thread
from course_utils.atlas import from_hf

#: The tiny models of the windowed-attention tests (Gemma 3, gpt-oss): vocabulary 128, width 64,
#: 4 query heads sharing 2 key/value heads of width 16, a window of 8 (shorter than the 24-40
#: tokens of a test), weights drawn wide enough for logits of order 1-10.
TINY_WINDOWED = {
    "vocab_size": 128,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "sliding_window": 8,
    "initializer_range": 0.1,
}


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


#: Prefill pieces longer than a window of 8, shorter, and exactly the window.
WINDOW_CHUNKS = [(11, 1, 9, 3, 13), (1, 20, 16), (8, 8, 8, 8, 5)]


def chunked_prefill_error(model: nn.Module, chunks: Sequence[int]) -> float:
    """max |our logits of 2 seeded sequences fed in pieces of ``chunks`` tokens through a cache
    - our full pass|, ``model`` rebuilt by ``from_hf``."""
    ours = from_hf(model)
    ids = torch.randint(0, 128, (2, sum(chunks)), generator=torch.Generator().manual_seed(3))
    cache, start, pieces = ours.new_cache(), 0, []
    with torch.no_grad():
        for n in chunks:
            pieces.append(ours(ids[:, start : start + n], cache=cache))
            start += n
        full = ours(ids)
    return float((torch.cat(pieces, dim=1) - full).abs().max())


def jitter_weights(model: nn.Module, buffers: str | None = None) -> nn.Module:
    """Add ``0.05 · N(0, 1)`` to every parameter (then to every buffer whose name holds
    ``buffers``) of a freshly made model: its norms start at their identity and its gates at
    zero, and a test should make every weight bite. Uses (and advances) torch's global seed."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
        for name, b in model.named_buffers():
            if buffers is not None and buffers in name:
                b.add_(0.05 * torch.randn_like(b))
    return model


def full_and_decoded_errors(
    ours: nn.Module, model: nn.Module, ids: Tensor, prompt: int
) -> tuple[float, float]:
    """(max |ours - transformers|, max |our cached decoding - our full pass|) on ``ids``; the
    cached decoding starts with a ``prompt``-token prompt and must have seen every token."""
    full = logit_error(ours, model, ids)
    decoded, cache = decode_ours(ours, ids, prompt)
    assert cache.seen == ids.shape[1]
    with torch.no_grad():
        return full, float((decoded - ours(ids)).abs().max())


def logit_error(ours: nn.Module, model: nn.Module, ids: Tensor) -> float:
    """max |ours(ids) - model(ids).logits|, once both have the same shape and dtype."""
    with torch.no_grad():
        expected = model(ids).logits  # (B, T, V)
        got = ours(ids)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    return float((got - expected).abs().max())


class TransformersOracleTests:
    """The oracle tests every atlas model shares: logits equal to ``transformers``' (SDPA and
    "eager" attention), nothing of theirs called, cached decoding equal to our full pass and to
    the reference's own cached decoding.

    A test module subclasses it as ``Test...`` and sets ``rebuilt`` (our model's class), ``make``
    (``staticmethod``: a config's name -> a seeded ``transformers`` model), ``eager_case`` (the
    config run with eager attention), ``n_tokens`` and ``prompt`` (cached decoding: a prompt,
    then one token at a time); it also defines the module-scoped fixture ``pair`` (a model and
    ``ids`` ``(2, n_tokens)``). :meth:`check_cache` may add checks of the
    cache after decoding ``n_tokens`` tokens.
    """

    rebuilt: type
    make: Callable[[str], nn.Module]
    eager_case: str
    n_tokens: int
    prompt: int

    def check_cache(self, cache) -> None:
        assert cache.seen == self.n_tokens

    @pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-4), (torch.float64, 1e-9)])
    def test_logits_equal_transformers(self, pair, dtype, tol):
        model, ids = pair
        ours = from_hf(model.to(dtype))
        assert isinstance(ours, self.rebuilt)
        assert logit_error(ours, model, ids) <= tol

    def test_eager_reference_rounds_its_softmax_to_float32_and_so_do_we(self):
        """With ``attn_implementation="eager"`` the reference takes its softmax in float32 even
        in a float64 model; the rebuild reads that choice from the config and follows it."""
        model = self.make(self.eager_case).double()
        model.set_attn_implementation("eager")
        ids = torch.randint(0, 128, (1, self.n_tokens), generator=torch.Generator().manual_seed(5))
        assert logit_error(from_hf(model), model, ids) <= 1e-9

    def test_ours_is_made_of_our_modules_and_never_calls_theirs(self):
        model = self.make(self.eager_case)
        assert_ours_never_calls_theirs(from_hf(model), model, cached=True)

    @pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
    def test_cached_decoding_equals_the_full_pass(self, pair, dtype):
        """To float32's precision in both dtypes: the float32 islands (norms, router, a
        DeltaNet's state) round a 1-token step and a whole pass apart."""
        model, ids = pair
        ours = from_hf(model.to(dtype))
        decoded, cache = decode_ours(ours, ids, self.prompt)
        with torch.no_grad():
            full = ours(ids)
        self.check_cache(cache)
        assert (decoded - full).abs().max().item() <= 1e-4

    def test_cached_decoding_equals_the_references_cached_decoding(self, pair):
        """The reference decodes with the same float32 islands, so in float64 its cached logits
        and ours agree to round-off."""
        model, ids = pair
        model = model.double()
        decoded, _ = decode_ours(from_hf(model), ids, self.prompt)
        assert (decoded - decode_reference(model, ids, self.prompt)).abs().max().item() <= 1e-9
