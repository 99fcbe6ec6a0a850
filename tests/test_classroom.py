"""The simulated class on a real JupyterHub (``course_kit.classroom``, ``make classroom``).

One test runs a class of 3 through the real hub, proxy, nbgitpuller and kernels, on chapter 1
and one planted failing cell: no failure but the planted one (which the driver must see), the
chapter came through the nbgitpuller link, every cell ran, memory was measured, and no process of
the hub is left afterwards. The other tests are quick: the link's form, the
capacity arithmetic, bad input, and that the instructor guide quotes the recorded benchmark run
(``benchmarks/results/classroom.json``) as it is.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from pathlib import Path

import pytest

from course_kit import classroom
from course_kit.classroom import (
    DEFAULT_CHAPTERS,
    FIRST_CHAPTER,
    GIB,
    ClassPlan,
    HubConfig,
    capacity,
    nbgitpuller_link,
    percentile,
    run_class,
)
from course_kit.classroom import _code_cells as _code_cells_of
from tests.system_tools import require

# The hub test starts servers like the JupyterLab test does, and runs beside it in the browser
# phase of `make test`; its module stays on one pytest-xdist worker.
pytestmark = pytest.mark.xdist_group("classroom")

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "classroom.json"  # 30 learners, chapters 1 and 3
#: A class through chapters 1-3 and a SmolLM2 chapter: as many as the shared machine could hold.
SMOLLM2_RESULTS = ROOT / "benchmarks" / "results" / "classroom_smollm2.json"
GUIDE = ROOT / "instructor_guide.md"
#: Measured on the 2-core development machine, shared with other jobs; a quiet machine is faster.
BUDGET_S = 40


def _code_cells(path: Path) -> int:
    return sum(c["cell_type"] == "code" for c in json.loads(path.read_text("utf-8"))["cells"])


#: One cell planted after chapter 1's cells: the driver must count its error as a failure (a
#: driver that missed errors would report every class as passing).
PLANTED = "raise ZeroDivisionError('planted by the test')"


@pytest.mark.jupyterlab
@pytest.mark.slow
def test_a_class_of_three_runs_chapter_one_through_the_hub(monkeypatch) -> None:
    require("node")
    require("npm")
    monkeypatch.setattr(classroom, "_code_cells", lambda nb: [*_code_cells_of(nb), PLANTED])
    plan = ClassPlan(
        learners=3, chapters=DEFAULT_CHAPTERS[:1], smollm2=False, pace=0.0, deadline_s=300
    )
    start = time.perf_counter()
    result = run_class(plan, ROOT, ROOT / "_build" / "classroom")
    seconds = time.perf_counter() - start
    print(
        f"class of 3 on chapter 1: {seconds:.1f} s wall ({result['phases']}, class "
        f"{result['wall_s']} s, spawn p50 {result['spawn']['p50_s']} s); "
        f"cells p95 {result['cells']['p95_s']} s"
    )
    cells = _code_cells(ROOT / FIRST_CHAPTER)
    for learner in result["learners"]:
        # Chapter 1's own cells all ran without an error; only the planted cell failed.
        assert learner["failures"] == [
            f"{FIRST_CHAPTER} code cell {cells}: ZeroDivisionError: planted by the test"
        ], learner["failures"] or result["hub_log_tail"]
        assert learner["pulled"], f"{learner['name']}: chapter 1 did not come through nbgitpuller"
        assert learner["pull_s"] > 0
        assert learner["cells"] == cells + 1, learner
        assert len(learner["open_s"]) == 1
        # The sampler saw the server and the kernel: more than a bare server's ~100 MiB.
        assert learner["peak_pss_mib"] > learner["peak_server_rss_mib"] * 0.5 > 0, learner
        assert learner["peak_rss_mib"] >= learner["peak_uss_mib"] > 0, learner
    assert result["failures"] == 3
    assert result["memory"]["hub_peak_rss_mib"] > 0 and result["memory"]["proxy_peak_rss_mib"] > 0
    assert result["processes_left"] == []
    assert not _processes_under(result["workdir"]), "processes of the hub outlived it"


def _processes_under(workdir: str) -> list[str]:
    """Processes anywhere on the machine that name the run's temporary folder."""
    import psutil

    found = []
    for p in psutil.process_iter(["pid", "cmdline", "cwd"]):
        text = " ".join(p.info["cmdline"] or []) + " " + (p.info["cwd"] or "")
        if workdir in text:
            found.append(f"{p.info['pid']}: {text[:200]}")
    return found


def test_the_nbgitpuller_link_has_the_guides_form() -> None:
    link = nbgitpuller_link("http://127.0.0.1:8000", "file:///srv/course", "main", FIRST_CHAPTER)
    path, query = link.split("?", 1)
    assert path == "http://127.0.0.1:8000/hub/user-redirect/git-pull"
    assert urllib.parse.parse_qs(query) == {
        "repo": ["file:///srv/course"],
        "branch": ["main"],
        "urlpath": [f"lab/tree/course/{FIRST_CHAPTER}"],
    }


@pytest.mark.parametrize("detached", [False, True], ids=["on a branch", "detached HEAD"])
def test_the_class_pulls_a_named_branch_even_from_a_checkout_of_one_commit(
    tmp_path: Path, detached: bool
) -> None:
    """nbgitpuller needs a branch; CI often checks out one commit with no branch. The class's
    copy of the course then carries that commit on a branch of its own."""
    import subprocess

    source = tmp_path / "src"
    source.mkdir()
    git = ["git", "-C", str(source), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "--quiet", "--initial-branch", "main"], check=True)
    (source / "a.txt").write_text("a")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "a"], check=True)
    if detached:  # CI's checkout: one commit that no branch points at (main has moved on)
        subprocess.run([*git, "checkout", "--quiet", "--detach"], check=True)
        subprocess.run([*git, "checkout", "--quiet", "main"], check=True)
        (source / "a.txt").write_text("b")
        subprocess.run([*git, "commit", "--quiet", "-am", "b"], check=True)
        subprocess.run([*git, "checkout", "--quiet", "HEAD~1"], check=True)
    repo = classroom.course_repository(source, tmp_path / "class")
    branch = classroom.git_branch(repo)
    assert branch == (classroom.DETACHED_BRANCH if detached else "main")
    assert (repo / "a.txt").read_text() == "a"  # the commit checked out, whichever it is


@pytest.mark.parametrize(
    ("per_learner_gib", "expected"), [(1.0, 22), (1.5, 14), (2.75, 8), (22.5, 0)]
)
def test_capacity_divides_what_is_left_after_the_headroom(
    per_learner_gib: float, expected: int
) -> None:
    assert capacity(per_learner_gib * GIB, 24 * GIB, 2 * GIB) == expected


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match=r"per_learner_bytes=0: expected a positive size"):
        capacity(0)
    with pytest.raises(ValueError, match=r"learners=0: expected at least 1"):
        run_class(ClassPlan(learners=0), ROOT, ROOT / "_build" / "classroom")
    config = HubConfig(workdir=ROOT, proxy_command=Path("chp"), python=Path("/nowhere/python"))
    with pytest.raises(FileNotFoundError, match=r"python=/nowhere/python: no jupyterhub-single"):
        config.text()


def test_percentile_matches_linear_interpolation() -> None:
    np = pytest.importorskip("numpy")
    values = [3.0, 0.5, 9.0, 1.25, 4.0, 7.5, 2.0]
    for q in (0, 25, 50, 95, 100):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def _quoted(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@pytest.mark.parametrize("results", [RESULTS, SMOLLM2_RESULTS], ids=lambda p: p.name)
def test_the_guide_quotes_the_recorded_class(results: Path) -> None:
    """The guide's class table, class size and Zero to JupyterHub values are the recorded runs'
    numbers (``make classroom``), so that no copy drifts from its measurement."""
    result = json.loads(results.read_text(encoding="utf-8"))
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("**2. Memory per learner.**", 1)[1].split("**4. A link", 1)[0]
    m, size = result["memory"], result["class_size"]
    quoted = {
        "learners": len(result["learners"]),
        "failures": result["failures"],
        "per-learner peak PSS (MiB)": m["per_learner_peak_pss_mib"],
        "per-learner peak RSS (MiB)": m["per_learner_peak_rss_mib"],
        "cell p50 (s)": result["cells"]["p50_s"],
        "cell p95 (s)": result["cells"]["p95_s"],
        "open p50 (s)": result["open_notebook"]["p50_s"],
        "open p95 (s)": result["open_notebook"]["p95_s"],
        "hub CPU (s)": result["cpu_s"]["hub"],
        "wall (s)": result["wall_s"],
        "learners by memory": size["learners_by_memory"],
    }
    if result["plan"]["smollm2"]:  # the run that sizes the whole course
        quoted["CPU s of the busiest learner"] = size["cpu_s_per_learner_max"]
        quoted["learners by CPU"] = size["learners_by_cpu_in_90_minutes"]
        quoted["memory guarantee"] = f"guarantee: {size['z2jh_singleuser_memory']['guarantee']}"
        quoted["memory limit"] = f"limit: {size['z2jh_singleuser_memory']['limit']}"
        quoted["class size"] = f"**{size['learners_by_memory']} learners**"
    else:  # the class of 30: servers started at once, the hub's share of a core
        quoted["spawn p50 (s)"] = round(result["spawn"]["p50_s"], 1)
        quoted["spawn max (s)"] = round(result["spawn"]["max_s"], 1)
        quoted["hub % of a core"] = f"{result['hub_cpu_share_of_one_core'] * 100:.1f} %"
    for name, value in quoted.items():
        token = _quoted(value)
        assert re.search(rf"(?<![\d.]){re.escape(token)}(?![\d])", section), (
            f"the guide's JupyterHub section does not quote {name} = {token} from {results.name}"
        )
