"""Shared pytest configuration: a seeded RNG fixture, hypothesis profiles, matplotlib hygiene and
the two SmolLM2 models (ours and transformers'), loaded once per session.

Hypothesis profiles (choose with ``HYPOTHESIS_PROFILE=thorough``):

- ``default``: 50 examples per property, no deadline (the machine is shared by several processes, so
  wall-clock deadlines would make tests flaky), derandomized so that a run is reproducible;
- ``thorough``: 500 examples, for an occasional deeper run.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh generator with a fixed seed, so every test sees the same numbers on every run."""
    return np.random.default_rng(20240601)


@pytest.fixture
def close_figures():
    """Close every pyplot figure a test opened (else 'more than 20 figures' warns, an error)."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


# -- SmolLM2: ours and transformers' reference, one of each per session ---------------------------
# Modules that use them mark themselves pytest.mark.xdist_group("smollm2"), so that make test-unit
# (--dist loadgroup) sends them all to one worker and each model is loaded once.


def _smollm2_module():
    """``course_utils.pretrained.smollm2``, once the weights' package is known to be installed: on
    a developer's machine without it the SmolLM2 tests skip naming the package; in CI they fail."""
    from course_utils.pretrained import smollm2

    try:
        smollm2.smollm2_gguf_path()
    except FileNotFoundError as err:  # pragma: no cover - the package is part of `make setup`
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"{err} (CI=true: a missing model is a failure, not a skip)")
        pytest.skip(str(err))
    return smollm2


@pytest.fixture(scope="session")
def smollm2_ours():
    """Our SmolLM2-135M (course_utils.pretrained.load_smollm2)."""
    return _smollm2_module().load_smollm2()


@pytest.fixture(scope="session")
def gguf_library_reader():
    """The ``gguf`` package's own ``GGUFReader`` of the SmolLM2 file, parsed once per session: the
    oracle of ``read_gguf`` and what transformers reads the file with (below)."""
    import gguf

    return gguf.GGUFReader(_smollm2_module().smollm2_gguf_path())


@pytest.fixture(scope="session")
def smollm2_reference(gguf_library_reader):
    """transformers' own model and tokenizer, loaded from the GGUF file by transformers' own code.

    Only for speed, two pure functions of the ``gguf`` package that transformers calls again and
    again answer from a cache while it loads: it parses the file three times (config, weights,
    tokenizer; 49k vocabulary strings each time), here answered by the one session reader, and
    builds the same tensor-name map once per tensor (397 times). Same objects, same results: a cold
    load took 32 s without the caches and 14 s with them on the 2-core test machine, with the same
    logits."""
    gguf_path = _smollm2_module().smollm2_gguf_path()
    import gguf
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    library_reader = gguf.GGUFReader

    def session_reader(path, *args, **kwargs):
        if Path(path).resolve() == gguf_path.resolve() and not args and not kwargs:
            return gguf_library_reader
        return library_reader(path, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gguf, "GGUFReader", session_reader)
        patch.setattr(
            gguf, "get_tensor_name_map", functools.lru_cache(maxsize=None)(gguf.get_tensor_name_map)
        )
        model = LlamaForCausalLM.from_pretrained(
            str(gguf_path.parent), gguf_file=gguf_path.name, torch_dtype=torch.float32
        ).eval()
        tok = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    return model, tok


@pytest.fixture
def computed_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch off the session's shared experiment results (``course_utils._shared_results``) for a
    test that calls an experiment twice to show that it repeats itself: both calls must train."""
    from course_utils._shared_results import SHARED_RESULTS_ENV

    monkeypatch.delenv(SHARED_RESULTS_ENV, raising=False)
