"""``course_utils._shared_results``: one computation per test session, never a changed result.

The chapters' experiments are decorated with ``shared_result``; these tests hold the decorator to
its promise: off without the environment variable, one computation per key across processes,
the caller's torch generator left as a real call leaves it, and a new key for every argument and
every setting that may change a result.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from course_utils import _shared_results
from course_utils._shared_results import SHARED_RESULTS_ENV, shared_result

CALLS: list[tuple[int, ...]] = []


@shared_result
def _draw(n: int, seed: int = 0) -> list[float]:
    """A stand-in experiment: seeds torch's global generator and draws from it, as they do."""
    CALLS.append((n, seed))
    torch.manual_seed(seed)
    return torch.rand(n).tolist()


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(SHARED_RESULTS_ENV, str(tmp_path))
    CALLS.clear()
    return tmp_path


def test_off_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SHARED_RESULTS_ENV, raising=False)
    CALLS.clear()
    assert _draw(3) == _draw(3)
    assert CALLS == [(3, 0), (3, 0)]


@pytest.mark.parametrize(
    ("first", "second", "computations"),
    [
        (((3,), {}), ((3,), {}), 1),  # the same call: computed once
        (((3,), {}), ((), {"n": 3}), 2),  # spelt differently: a new key, never a wrong result
        (((3,), {"seed": 0}), ((3,), {"seed": 1}), 2),
        (((3,), {}), ((4,), {}), 2),
    ],
)
def test_one_computation_per_key(
    folder: Path,
    first: tuple[tuple, dict],
    second: tuple[tuple, dict],
    computations: int,
) -> None:
    a = _draw(*first[0], **first[1])
    b = _draw(*second[0], **second[1])
    assert len(CALLS) == computations
    if computations == 1:
        assert a == b
    assert len(list(folder.glob("*.pickle"))) == computations


def test_a_loaded_result_leaves_the_generator_as_a_real_call_does(folder: Path) -> None:
    first = _draw(5, seed=7)
    after_real = torch.rand(4)
    torch.manual_seed(123)  # a different state before the second call
    assert _draw(5, seed=7) == first
    after_loaded = torch.rand(4)
    assert len(CALLS) == 1
    assert torch.equal(after_real, after_loaded)


def test_a_thread_count_is_part_of_the_key(folder: Path) -> None:
    threads = torch.get_num_threads()
    try:
        _draw(2)
        torch.set_num_threads(threads + 1)
        _draw(2)
    finally:
        torch.set_num_threads(threads)
    assert len(CALLS) == 2


def test_an_argument_that_cannot_be_pickled_is_computed_every_time(folder: Path) -> None:
    @shared_result
    def apply(f, x: int) -> int:
        CALLS.append((x,))
        return f(x)

    assert apply(lambda v: v + 1, 1) == apply(lambda v: v + 1, 1) == 2
    assert len(CALLS) == 2
    assert not list(folder.glob("*.pickle"))


def test_two_processes_at_once_compute_once(folder: Path) -> None:
    """Two kernels (here: two Python processes started together) ask for the same result: one
    computes, the other waits on the lock and loads it; both print the same numbers."""
    log = folder / "computed.log"
    script = textwrap.dedent(
        f"""
        import time
        from course_utils._shared_results import shared_result

        @shared_result
        def slow(x):
            with open({str(log)!r}, "a") as f:
                f.write("computed\\n")
            time.sleep(1.0)
            return [x, x * x]

        print(slow(7))
        """
    )
    env_src = str(Path(_shared_results.__file__).parents[1])
    env = {"PATH": "/usr/bin:/bin", SHARED_RESULTS_ENV: str(folder), "PYTHONPATH": env_src}
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outs == ["[7, 49]", "[7, 49]"]
    assert log.read_text().count("computed") == 1


def test_every_experiment_a_chapter_trains_is_shared() -> None:
    """Each training function a chapter calls (``train_*`` and ``run_*_experiment`` of the
    package) trains once per session: nbval's run and the learner copy's Run-All would otherwise
    both train."""
    import importlib
    import json
    import re

    repo = Path(__file__).resolve().parents[1]
    package = repo / "src" / "course_utils"
    called = set()
    for notebook in sorted((repo / "chapters").glob("*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        called |= set(re.findall(r"\b(train_\w+|run_\w+_experiment)\(", code))
    defined = {}
    for path in package.rglob("*.py"):
        for name in re.findall(r"^def (train_\w+|run_\w+_experiment)\(", path.read_text(), re.M):
            module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
            defined[name] = module
    assert called, "no chapter calls a trainer: the pattern is out of date"
    unshared = sorted(
        name
        for name in called & set(defined)
        if not hasattr(getattr(importlib.import_module(defined[name]), name), "__wrapped__")
    )
    assert not unshared, f"trainers not decorated with shared_result: {unshared}"
    assert called <= set(defined), f"called but not found in the package: {called - set(defined)}"


def test_a_tensor_argument_gives_the_same_key_in_every_process(tmp_path: Path) -> None:
    """torch pickles a tensor differently in each process; the key must not (else nbval's kernel
    and the learner copy's would never share a result that takes a tensor, e.g. a data split)."""
    script = textwrap.dedent(
        """
        import torch
        from course_utils._shared_results import _key
        def f(x): return x
        print(_key(f, (torch.arange(6.0).reshape(2, 3), [torch.tensor([1, 2])]), {"k": 1}))
        """
    )
    env_src = str(Path(_shared_results.__file__).parents[1])
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": env_src}
    keys = {
        subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    }
    assert len(keys) == 1 and "None" not in keys, keys


def test_tensors_that_differ_give_different_keys() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        return x

    base = _shared_results._key(f, (torch.zeros(3),), {})
    assert base == _shared_results._key(f, (torch.zeros(3),), {})
    for other in (
        torch.ones(3),
        torch.zeros(4),
        torch.zeros(3, dtype=torch.float64),
        torch.zeros(1, 3),
    ):
        assert _shared_results._key(f, (other,), {}) != base, other


def test_a_cache_kept_on_a_dataclass_argument_does_not_change_its_key() -> None:
    """Chapter 13's vocabulary keeps an index in its ``__dict__`` after its first use: the first
    call's key (before) and a later one's (after) must be the same, or a kernel that loaded the
    first result (so never built the index) would miss the second."""
    from course_utils.topic_focus.classifier import Vocabulary

    def f(v: Vocabulary) -> int:
        return len(v)

    vocab = Vocabulary.build([["the", "rain"], ["the", "soup"]])
    before = _shared_results._key(f, (vocab,), {})
    vocab.ids(["rain"])  # builds and keeps the index
    assert "_cache" in vocab.__dict__
    assert _shared_results._key(f, (vocab,), {}) == before
    other = Vocabulary.build([["the", "snow"]])
    assert _shared_results._key(f, (other,), {}) != before
