"""A simulated class on a real JupyterHub, all on this machine's loopback.

What runs: JupyterHub (from PyPI, ``requirements.txt``) with its proxy, configurable-http-proxy
from npm (installed on first use into a cache folder, never committed), a shared-password
authenticator and :class:`jupyterhub.spawner.SimpleLocalProcessSpawner` (one single-user
JupyterLab server per learner, each with its own home folder under a temporary directory), with
nbgitpuller installed in the course's environment (this Python's). Everything binds 127.0.0.1 on
free ports; nothing reaches the network (the course is cloned from a local ``file://`` repository,
``HF_HUB_OFFLINE=1`` in every server).

What a learner does, as a person in the class would: logs in through ``/hub/login`` with the
shared password, follows the nbgitpuller link the instructor guide tells teachers to send
(``/hub/user-redirect/git-pull?repo=...&urlpath=lab/tree/...``), lets nbgitpuller pull the course
into the home folder (the event stream the link's page opens), then for each chapter of the plan
opens the notebook (the lab page, the file, a new session with its kernel) and runs its code
cells one by one over the kernel's websocket, pausing between cells for a seeded reading time,
and shuts that kernel down before the next chapter. An ``error`` output or an ``execute_reply``
that is not ``ok`` is a failure; so is any step that raises or times out.

What is measured: per learner, the peak memory of the single-user server and its kernels (RSS,
and PSS/USS from ``/proc/<pid>/smaps_rollup``), the time of every cell and of every "open the
notebook"; the hub's and the proxy's CPU time and memory; the machine's used memory
(``MemTotal - MemAvailable``) before and at its peak. A memory guard stops the class if the
machine's available memory falls below a floor (the machine is shared: it must never swap or
meet the OOM killer), which counts as a failure.

Every wait is bounded; the hub, the proxy and every server and kernel are stopped at the end, and
any process still alive from the recorded process tree is killed (:meth:`Hub.stop`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import random
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: configurable-http-proxy's exact version: the newest whose whole dependency tree runs on
#: Debian 12's nodejs (18). 5.2.0 asks for Node >= 20 and 5.3.0 (through commander 15) >= 22.
CHP_VERSION = "5.1.0"
#: The clone's folder name in a learner's home: the last part of the repository's URL.
COURSE_DIR = "attention-step-by-step"
#: The chapter the nbgitpuller link opens (the course's first).
FIRST_CHAPTER = "chapters/01_queries_keys_values.ipynb"
#: Chapters 1-3 for everyone, then one of the two that load SmolLM2 (alternating by learner).
DEFAULT_CHAPTERS = (
    "chapters/01_queries_keys_values.ipynb",
    "chapters/02_scaling.ipynb",
    "chapters/03_softmax_weighted_sum.ipynb",
)
SMOLLM2_CHAPTERS = (
    "chapters/07_causal_attention.ipynb",
    "chapters/10_grouped_query_attention.ipynb",
)
GIB = 2**30
MIB = 2**20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ensure_proxy(cache: Path, npm: str = "npm") -> Path:
    """The ``configurable-http-proxy`` command, installed with npm into ``cache`` if missing.

    The version is exact (:data:`CHP_VERSION`); a cache holding another version is reinstalled.
    """
    cache = cache.resolve()  # the hub runs it from its own working directory
    command = cache / "node_modules" / ".bin" / "configurable-http-proxy"
    package = cache / "node_modules" / "configurable-http-proxy" / "package.json"
    installed = json.loads(package.read_text(encoding="utf-8")) if package.exists() else {}
    if command.exists() and installed.get("version") == CHP_VERSION:
        return command
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(cache),
            "--no-audit",
            "--no-fund",
            "--no-save",
            f"configurable-http-proxy@{CHP_VERSION}",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if not command.exists():
        raise RuntimeError(f"npm installed no configurable-http-proxy command at {command}")
    return command


#: The branch the class pulls when ``source`` is on no branch (a CI checkout of one commit).
DETACHED_BRANCH = "class"


def course_repository(source: Path, dest_parent: Path) -> Path:
    """A local git repository of ``source``'s committed HEAD for nbgitpuller to pull from
    (``file://``, so the class needs no network), named :data:`COURSE_DIR`.

    nbgitpuller pulls a named branch. A checkout of one commit (detached ``HEAD``, as CI systems
    often make) has none, so the copy then puts its ``HEAD`` on :data:`DETACHED_BRANCH`.
    """
    dest = dest_parent / COURSE_DIR
    subprocess.run(
        ["git", "clone", "--quiet", "--depth", "1", source.resolve().as_uri(), str(dest)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if git_branch(dest) == "HEAD":
        subprocess.run(
            ["git", "-C", str(dest), "checkout", "--quiet", "-B", DETACHED_BRANCH],
            check=True,
            capture_output=True,
            text=True,
        )
    return dest


def git_branch(repo: Path) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--abbrev-ref", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def nbgitpuller_link(base_url: str, repo_url: str, branch: str, notebook: str) -> str:
    """The link a teacher sends (the instructor guide's form): through ``/hub/user-redirect``,
    nbgitpuller pulls ``repo_url`` into the learner's home, then JupyterLab opens ``notebook``."""
    target = repo_url.rstrip("/").split("/")[-1]
    query = urllib.parse.urlencode(
        {"repo": repo_url, "branch": branch, "urlpath": f"lab/tree/{target}/{notebook}"}
    )
    return f"{base_url}/hub/user-redirect/git-pull?{query}"


@dataclass
class HubConfig:
    """Where and how the hub runs; written to ``jupyterhub_config.py`` by :meth:`Hub.start`."""

    workdir: Path
    proxy_command: Path
    python: Path = field(default_factory=lambda: Path(sys.executable))
    start_timeout: int = 240  # s: 30 servers starting at once on 2 shared cores take a while
    password: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    token: str = field(default_factory=lambda: secrets.token_hex(32))
    port: int = field(default_factory=_free_port)
    hub_port: int = field(default_factory=_free_port)
    proxy_api_port: int = field(default_factory=_free_port)
    threads_per_kernel: int = 1

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def text(self) -> str:
        singleuser = self.python.parent / "jupyterhub-singleuser"
        if not singleuser.exists():
            raise FileNotFoundError(
                f"python={self.python}: no jupyterhub-singleuser beside it ({singleuser}); "
                "expected the course's environment with jupyterhub installed (requirements.txt)"
            )
        environment = {
            # No model hub at run time: the SmolLM2 weights come from the installed package.
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            # One torch thread per kernel, as a hub's per-learner CPU limit would give: more
            # threads only fight over the shared cores.
            "OMP_NUM_THREADS": str(self.threads_per_kernel),
        }
        if os.environ.get("PYTHONPATH"):
            environment["PYTHONPATH"] = os.environ["PYTHONPATH"]
        w = self.workdir
        settings = {
            "JupyterHub.ip": "127.0.0.1",
            "JupyterHub.port": self.port,
            "JupyterHub.hub_ip": "127.0.0.1",
            "JupyterHub.hub_port": self.hub_port,
            "JupyterHub.db_url": f"sqlite:///{w / 'jupyterhub.sqlite'}",
            "JupyterHub.cookie_secret_file": str(w / "jupyterhub_cookie_secret"),
            "JupyterHub.pid_file": str(w / "jupyterhub.pid"),
            "JupyterHub.cleanup_servers": True,
            "JupyterHub.authenticator_class": "shared-password",
            "SharedPasswordAuthenticator.user_password": self.password,
            "Authenticator.allow_all": True,
            "JupyterHub.spawner_class": "jupyterhub.spawner.SimpleLocalProcessSpawner",
            "SimpleLocalProcessSpawner.home_dir_template": str(w / "home" / "{username}"),
            "Spawner.cmd": [str(singleuser)],
            # Kernels over Unix sockets: servers starting kernels at once cannot be handed the
            # same TCP port (the race course_kit.kernels explains).
            # --allow-root: CI runs as root, and so does this machine's development shell.
            "Spawner.args": ["--KernelManager.transport=ipc", "--ServerApp.allow_root=True"],
            "Spawner.default_url": "/lab",
            "Spawner.start_timeout": self.start_timeout,
            "Spawner.http_timeout": self.start_timeout,
            "Spawner.environment": environment,
            "ConfigurableHTTPProxy.command": [str(self.proxy_command)],
            "ConfigurableHTTPProxy.api_url": f"http://127.0.0.1:{self.proxy_api_port}",
            "JupyterHub.services": [{"name": "class-driver", "api_token": self.token}],
            "JupyterHub.load_roles": [
                {
                    "name": "class-driver",
                    "scopes": ["admin:users", "admin:servers", "admin:server_state"],
                    "services": ["class-driver"],
                }
            ],
        }
        lines = ["c = get_config()  # noqa: F821"]
        lines += [f"c.{key} = {value!r}" for key, value in settings.items()]
        # Each server's runtime folder (its kernels' Unix sockets): a short path, since a socket's
        # path is at most ~107 bytes and the default under the home folder is too long.
        runtime = str(w / "rt")
        lines.append(
            'c.Spawner.environment["JUPYTER_RUNTIME_DIR"] = '
            f"lambda spawner: {runtime!r} + '/' + spawner.user.name"
        )
        return "\n".join(lines) + "\n"


class Hub:
    """A running JupyterHub (and the proxy it starts); :meth:`stop` ends every process it made."""

    def __init__(self, config: HubConfig) -> None:
        self.config = config
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = config.workdir / "jupyterhub.log"
        self._seen: dict[int, float] = {}  # pid -> create_time of every descendant ever seen
        self._lock = threading.Lock()

    def start(self, timeout: float = 120) -> None:
        w = self.config.workdir
        (w / "home").mkdir(parents=True, exist_ok=True)
        (w / "jupyterhub_config.py").write_text(self.config.text(), encoding="utf-8")
        env = dict(os.environ, CONFIGPROXY_AUTH_TOKEN=secrets.token_hex(32))
        hub = self.config.python.parent / "jupyterhub"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [str(hub), "-f", str(w / "jupyterhub_config.py")],
                cwd=w,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, killed whole in stop()
            )
        deadline = time.monotonic() + timeout
        url = f"{self.config.base_url}/hub/api/"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"jupyterhub exited with {self.process.returncode}: {self.log()}"
                )
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    if r.status == 200:
                        self.remember_descendants()
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"the hub did not answer {url} within {timeout} s: {self.log()}")

    def log(self, tail: int = 3000) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-tail:]
        except OSError:
            return ""

    def remember_descendants(self) -> list[Any]:
        """Record every process below the hub (servers and kernels start their own sessions,
        so the hub's process group does not hold them); return them."""
        import psutil

        if self.process is None:
            return []
        try:
            procs = [psutil.Process(self.process.pid)]
            procs += procs[0].children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        with self._lock:
            for p in procs:
                with contextlib.suppress(psutil.NoSuchProcess):
                    self._seen.setdefault(p.pid, p.create_time())
        return procs

    def survivors(self) -> list[int]:
        """Recorded processes that are still alive (same pid and start time)."""
        import psutil

        alive = []
        with self._lock:
            seen = dict(self._seen)
        for pid, created in seen.items():
            try:
                p = psutil.Process(pid)
                if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        return alive

    def stop(self, grace: float = 30) -> list[int]:
        """SIGTERM the hub (it stops the servers and the proxy), wait, then SIGKILL whatever of
        the recorded tree is left; return the pids that had to be killed."""
        if self.process is None:
            return []
        self.remember_descendants()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(grace)
        deadline = time.monotonic() + 10
        while self.survivors() and time.monotonic() < deadline:
            time.sleep(0.25)
        killed = self.survivors()
        for pid in killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
        return killed


# ---------------------------------------------------------------- memory


def meminfo() -> dict[str, int]:
    """``/proc/meminfo`` in bytes."""
    out = {}
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            key, value = line.split(":", 1)
            parts = value.split()
            out[key] = int(parts[0]) * (1024 if len(parts) > 1 else 1)
    return out


def used_memory() -> int:
    m = meminfo()
    return m["MemTotal"] - m["MemAvailable"]


@dataclass
class LearnerMemory:
    peak_rss: int = 0  # server + kernels, summed resident sets (shared pages counted each time)
    peak_pss: int = 0  # the same processes' proportional set sizes (shared pages split)
    peak_uss: int = 0  # pages only they hold
    peak_server_rss: int = 0
    peak_processes: int = 0
    chapter: str = ""  # what the learner has open now (set by the learner, read by the sampler)
    pss_by_chapter: dict[str, int] = field(default_factory=dict)  # peak PSS with it open


class MemorySampler(threading.Thread):
    """Every ``interval`` s: each learner's server and kernels (RSS); every ``full_every``-th
    sample also PSS/USS (reading smaps_rollup costs more); the hub and proxy; the machine.

    If the machine's available memory falls below ``floor`` bytes it sets ``abort`` with the
    reason: the class stops rather than push a shared machine into the OOM killer.
    """

    def __init__(
        self,
        hub: Hub,
        servers: dict[str, int],
        floor: int,
        interval: float = 0.5,
        full_every: int = 4,
    ) -> None:
        super().__init__(daemon=True)
        self.hub = hub
        self.servers = servers  # learner -> pid, filled in as servers start
        self.floor = floor
        self.interval = interval
        self.full_every = full_every
        self.learners: dict[str, LearnerMemory] = {}
        self.hub_peak_rss = 0
        self.proxy_peak_rss = 0
        self.system_before = used_memory()
        self.system_peak = self.system_before
        self.min_available = meminfo()["MemAvailable"]
        self.samples = 0
        # pid -> (learner, the CPU seconds it had used when last seen): a kernel's last reading
        # stays after it exits, so a learner's sum covers every kernel it ran (to within one
        # sampling interval of each).
        self.cpu: dict[int, tuple[str, float]] = {}
        self.abort: str | None = None
        self._stop_event = threading.Event()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(10)

    def learner_cpu(self, name: str) -> float:
        """CPU seconds used by ``name``'s server and kernels, as last sampled."""
        return sum(cpu for learner, cpu in self.cpu.values() if learner == name)

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                self.sample(full=self.samples % self.full_every == 0)
            except Exception as e:  # a process that ends mid-read must not end the sampling
                if not isinstance(e, (ProcessLookupError, FileNotFoundError)):
                    print(f"memory sampler: {e!r}", file=sys.stderr)
            self.samples += 1
            self._stop_event.wait(self.interval)

    def sample(self, full: bool) -> None:
        import psutil

        procs = self.hub.remember_descendants()
        m = meminfo()
        self.system_peak = max(self.system_peak, m["MemTotal"] - m["MemAvailable"])
        self.min_available = min(self.min_available, m["MemAvailable"])
        if m["MemAvailable"] < self.floor and self.abort is None:
            self.abort = (
                f"memory guard: the machine's available memory fell to "
                f"{m['MemAvailable'] / GIB:.2f} GiB, below the floor {self.floor / GIB:.2f} GiB"
            )
        for p in procs[:1]:
            self.hub_peak_rss = max(self.hub_peak_rss, _rss(p))
        for p in procs[1:]:
            try:
                if "configurable-http-proxy" in " ".join(p.cmdline()):
                    self.proxy_peak_rss = max(self.proxy_peak_rss, _rss(p))
            except psutil.Error:
                pass
        for name, pid in list(self.servers.items()):
            mem = self.learners.setdefault(name, LearnerMemory())
            try:
                server = psutil.Process(pid)
                tree = [server, *server.children(recursive=True)]
            except psutil.Error:
                continue
            for p in tree:
                try:
                    t = p.cpu_times()
                    self.cpu[p.pid] = (name, t.user + t.system)
                except psutil.Error:
                    pass
            server_rss = _rss(server)
            rss = server_rss + sum(_rss(p) for p in tree[1:])
            mem.peak_server_rss = max(mem.peak_server_rss, server_rss)
            mem.peak_rss = max(mem.peak_rss, rss)
            mem.peak_processes = max(mem.peak_processes, len(tree))
            if full:
                pss = uss = 0
                for p in tree:
                    try:
                        info = p.memory_full_info()
                    except psutil.Error:
                        continue
                    pss += info.pss
                    uss += info.uss
                mem.peak_pss = max(mem.peak_pss, pss)
                mem.peak_uss = max(mem.peak_uss, uss)
                if mem.chapter:
                    seen = mem.pss_by_chapter.get(mem.chapter, 0)
                    mem.pss_by_chapter[mem.chapter] = max(seen, pss)


def _rss(p: Any) -> int:
    try:
        return int(p.memory_info().rss)
    except Exception:
        return 0


def cpu_seconds(pid: int) -> float:
    import psutil

    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return float(t.user + t.system)


# ---------------------------------------------------------------- learners


@dataclass
class LearnerResult:
    name: str
    chapters: list[str]
    spawn_s: float = 0.0
    login_s: float = 0.0
    pull_s: float = 0.0
    pulled: bool = False  # the first chapter appeared in the home folder through nbgitpuller
    open_s: list[float] = field(default_factory=list)
    cell_s: list[float] = field(default_factory=list)
    cells: int = 0
    failures: list[str] = field(default_factory=list)


@dataclass
class ClassPlan:
    learners: int
    chapters: Sequence[str] = DEFAULT_CHAPTERS
    smollm2: bool = True  # one of chapters 7 and 10 after the plan's chapters
    pace: float = 0.02  # reading pauses scaled by this (1.0: a person's pace)
    seed: int = 0
    cell_timeout: float = 900
    deadline_s: float = 2700  # the whole class, spawn to last cell
    memory_floor: int = 3 * GIB

    def chapters_for(self, index: int) -> list[str]:
        extra = [SMOLLM2_CHAPTERS[index % 2]] if self.smollm2 else []
        return [*self.chapters, *extra]


def reading_pause(rng: random.Random, pace: float) -> float:
    """A person's pause before running the next cell, in seconds: reading the cell and the
    previous output. Lognormal around 20 s (most cells are read in 10-40 s), capped at 3 min,
    then scaled by ``pace`` so that a benchmark run stays bounded."""
    return min(rng.lognormvariate(math.log(20), 0.6), 180.0) * pace


def _xsrf(session: Any, url: str) -> str:
    from yarl import URL

    cookies = session.cookie_jar.filter_cookies(URL(url))
    morsel = cookies.get("_xsrf")
    return morsel.value if morsel is not None else ""


def _code_cells(notebook: dict[str, Any]) -> list[str]:
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in notebook["cells"]
        if c["cell_type"] == "code"
    ]


class KernelChannel:
    """One notebook's kernel over the Jupyter server's websocket (protocol 5.3, JSON frames)."""

    def __init__(self, ws: Any, session_id: str) -> None:
        self.ws = ws
        self.session_id = session_id

    def _message(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
        return {
            "header": {
                "msg_id": uuid.uuid4().hex,
                "msg_type": msg_type,
                "username": "learner",
                "session": self.session_id,
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "version": "5.3",
            },
            "parent_header": {},
            "metadata": {},
            "content": content,
            "channel": "shell",
            "buffers": [],
        }

    async def request(self, msg_type: str, content: dict[str, Any], timeout: float) -> list[str]:
        """Send a shell request and wait for its reply and the kernel's idle status after it;
        return the errors seen (an ``error`` output, a reply whose status is not ``ok``)."""
        import aiohttp

        message = self._message(msg_type, content)
        msg_id = message["header"]["msg_id"]
        await self.ws.send_str(json.dumps(message))
        errors: list[str] = []
        replied = idle = False
        reply_type = msg_type.replace("_request", "_reply")
        deadline = time.monotonic() + timeout
        while not (replied and idle):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{msg_type}: no reply within {timeout:.0f} s")
            frame = await self.ws.receive(timeout=left)
            if frame.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                raise ConnectionError(f"{msg_type}: the kernel's websocket closed")
            if frame.type is aiohttp.WSMsgType.ERROR:
                raise ConnectionError(f"{msg_type}: websocket error {frame.data!r}")
            if frame.type is not aiohttp.WSMsgType.TEXT:
                continue
            msg = json.loads(frame.data)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["header"]["msg_type"]
            if kind == "error":
                errors.append(f"{msg['content'].get('ename')}: {msg['content'].get('evalue')}")
            elif kind == reply_type:
                replied = True
                status = msg["content"].get("status")
                if status != "ok" and not errors:
                    errors.append(f"{reply_type} status {status!r}")
            elif kind == "status" and msg["content"].get("execution_state") == "idle":
                idle = True
        return errors


async def run_learner(
    index: int,
    name: str,
    plan: ClassPlan,
    config: HubConfig,
    repo_url: str,
    branch: str,
    homes: Path,
    stop: asyncio.Event,
    result: LearnerResult,
    memory: LearnerMemory,
) -> None:
    """One learner's session; every failure is recorded in ``result.failures``. The learner
    names the chapter it has open in ``memory.chapter`` (the sampler's peaks by chapter)."""
    import aiohttp

    rng = random.Random(f"{plan.seed}-{index}")
    base = config.base_url
    user = f"{base}/user/{name}"
    jar = aiohttp.CookieJar(unsafe=True)  # unsafe: accept cookies from an IP address host
    timeout = aiohttp.ClientTimeout(total=plan.cell_timeout)
    async with aiohttp.ClientSession(cookie_jar=jar, timeout=timeout) as s:
        t0 = time.perf_counter()
        async with s.get(f"{base}/hub/login") as r:
            r.raise_for_status()
        form = {"username": name, "password": config.password, "_xsrf": _xsrf(s, f"{base}/hub/")}
        async with s.post(f"{base}/hub/login", data=form, allow_redirects=False) as r:
            if r.status != 302:
                raise RuntimeError(f"log in as {name}: HTTP {r.status}, expected a redirect")
        result.login_s = time.perf_counter() - t0

        # The teacher's link: through the hub to the learner's server, nbgitpuller's page.
        t0 = time.perf_counter()
        link = nbgitpuller_link(base, repo_url, branch, FIRST_CHAPTER)
        async with s.get(link) as r:
            r.raise_for_status()
            page = await r.text()
            if "git-pull" not in str(r.url) or "nbgitpuller" not in page:
                raise RuntimeError(f"the nbgitpuller link ended at {r.url}, not its page")
        # What the page's script does: follow the pull's event stream to its end.
        query = urllib.parse.urlencode(
            {
                "repo": repo_url,
                "branch": branch,
                "targetpath": COURSE_DIR,
                "_xsrf": _xsrf(s, f"{user}/"),
            }
        )
        phase = None
        async with s.get(f"{user}/git-pull/api?{query}") as r:
            r.raise_for_status()
            async for raw in r.content:
                line = raw.decode("utf-8", "replace").strip()
                if line.startswith("data:"):
                    event = json.loads(line[5:])
                    phase = event.get("phase")
                    if phase == "error":
                        raise RuntimeError(f"nbgitpuller: {event.get('message')}")
                    if phase == "finished":
                        break
        if phase != "finished":
            raise RuntimeError("nbgitpuller's event stream ended without 'finished'")
        result.pull_s = time.perf_counter() - t0
        result.pulled = (homes / name / COURSE_DIR / FIRST_CHAPTER).is_file()
        if not result.pulled:
            raise RuntimeError(f"{FIRST_CHAPTER} is not in {name}'s home after the pull")

        for chapter in result.chapters:
            if stop.is_set():
                raise RuntimeError("stopped before its end")
            path = f"{COURSE_DIR}/{chapter}"
            memory.chapter = Path(chapter).stem
            # Open the notebook: the lab page, the file, a session with a new kernel that answers.
            t0 = time.perf_counter()
            async with s.get(f"{user}/lab/tree/{path}") as r:
                r.raise_for_status()
            headers = {"X-XSRFToken": _xsrf(s, f"{user}/")}
            async with s.get(f"{user}/api/contents/{path}", headers=headers) as r:
                r.raise_for_status()
                notebook = (await r.json())["content"]
            body = {"path": path, "type": "notebook", "name": "", "kernel": {"name": "python3"}}
            async with s.post(f"{user}/api/sessions", json=body, headers=headers) as r:
                r.raise_for_status()
                session = await r.json()
            channels = f"{user}/api/kernels/{session['kernel']['id']}/channels"
            session_id = uuid.uuid4().hex
            try:
                async with s.ws_connect(
                    f"{channels}?session_id={session_id}", headers=headers, max_msg_size=0
                ) as ws:
                    kernel = KernelChannel(ws, session_id)
                    errors = await kernel.request("kernel_info_request", {}, plan.cell_timeout)
                    result.open_s.append(time.perf_counter() - t0)
                    if errors:
                        result.failures.append(f"{chapter}: kernel_info: {errors}")
                    for i, code in enumerate(_code_cells(notebook)):
                        if stop.is_set():
                            raise RuntimeError(f"{chapter}: stopped at cell {i}")
                        await asyncio.sleep(reading_pause(rng, plan.pace))
                        t0 = time.perf_counter()
                        errors = await kernel.request(
                            "execute_request",
                            {
                                "code": code,
                                "silent": False,
                                "store_history": True,
                                "user_expressions": {},
                                "allow_stdin": False,
                                "stop_on_error": True,
                            },
                            plan.cell_timeout,
                        )
                        result.cell_s.append(time.perf_counter() - t0)
                        result.cells += 1
                        if errors:
                            result.failures.append(f"{chapter} code cell {i}: {errors[0]}")
            finally:
                # Leaving the chapter: shut its kernel down (the guide asks learners to).
                async with s.delete(f"{user}/api/sessions/{session['id']}", headers=headers) as r:
                    if r.status not in (204, 404):
                        result.failures.append(f"{chapter}: shutting its kernel: HTTP {r.status}")


async def _api(s: Any, method: str, url: str, token: str, body: object = None) -> tuple[int, Any]:
    headers = {"Authorization": f"token {token}"}
    async with s.request(method, url, headers=headers, json=body) as r:
        data = await r.json() if r.content_type == "application/json" else None
        return r.status, data


async def start_server(
    s: Any, config: HubConfig, name: str, servers: dict[str, int], deadline: float
) -> float:
    """Start ``name``'s server through the hub's REST API; wait until it is ready; record its
    pid (the spawner's state) for the memory sampler. Return the seconds it took."""
    api = f"{config.base_url}/hub/api/users/{name}"
    t0 = time.perf_counter()
    status, data = await _api(s, "POST", f"{api}/server", config.token)
    if status not in (201, 202):
        raise RuntimeError(f"start {name}'s server: HTTP {status} {data}")
    while time.monotonic() < deadline:
        status, data = await _api(s, "GET", api, config.token)
        server = (data or {}).get("servers", {}).get("")
        if server and server.get("ready"):
            pid = (server.get("state") or {}).get("pid")
            if pid:
                servers[name] = int(pid)
            return time.perf_counter() - t0
        if status == 200 and not server and not (data or {}).get("pending"):
            raise RuntimeError(f"{name}'s server stopped while starting")
        await asyncio.sleep(1)
    raise TimeoutError(f"{name}'s server was not ready in time")


async def run_class_async(
    plan: ClassPlan, hub: Hub, repo_url: str, branch: str, sampler: MemorySampler
) -> list[LearnerResult]:
    import aiohttp

    config = hub.config
    names = [f"learner{i + 1:02d}" for i in range(plan.learners)]
    results = [LearnerResult(n, plan.chapters_for(i)) for i, n in enumerate(names)]
    stop = asyncio.Event()
    deadline = time.monotonic() + plan.deadline_s

    async def watch() -> None:
        while not stop.is_set():
            if sampler.abort:
                for r in results:
                    r.failures.append(sampler.abort)
                stop.set()
            await asyncio.sleep(0.5)

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as s:
        status, data = await _api(
            s, "POST", f"{config.base_url}/hub/api/users", config.token, {"usernames": names}
        )
        if status != 201:
            raise RuntimeError(f"creating the learners: HTTP {status} {data}")

        async def one(i: int, r: LearnerResult) -> None:
            try:
                r.spawn_s = await start_server(s, config, r.name, sampler.servers, deadline)
                await asyncio.wait_for(
                    run_learner(
                        i,
                        r.name,
                        plan,
                        config,
                        repo_url,
                        branch,
                        config.workdir / "home",
                        stop,
                        r,
                        sampler.learners.setdefault(r.name, LearnerMemory()),
                    ),
                    timeout=max(1.0, deadline - time.monotonic()),
                )
            except Exception as e:  # recorded, never raised: the others go on
                r.failures.append(f"{type(e).__name__}: {e}"[:500])

        watcher = asyncio.create_task(watch())
        try:
            await asyncio.gather(*(one(i, r) for i, r in enumerate(results)))
        finally:
            stop.set()
            await watcher
            # Stop every server through the hub, as an instructor would at the end of class.
            await asyncio.gather(
                *(
                    _api(s, "DELETE", f"{config.base_url}/hub/api/users/{n}/server", config.token)
                    for n in names
                ),
                return_exceptions=True,
            )
    return results


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation, as ``numpy.percentile``.

    >>> percentile([1, 2, 3, 4], 50)
    2.5
    """
    if not values:
        return float("nan")
    data = sorted(values)
    k = (len(data) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def capacity(
    per_learner_bytes: float, machine_bytes: float = 24 * GIB, headroom_bytes: float = 2 * GIB
) -> int:
    """How many learners of ``per_learner_bytes`` peak memory fit on a machine of
    ``machine_bytes`` after keeping ``headroom_bytes`` for the system, the hub and the proxy.

    >>> capacity(1.5 * GIB)
    14
    """
    if per_learner_bytes <= 0:
        raise ValueError(f"per_learner_bytes={per_learner_bytes}: expected a positive size")
    return int((machine_bytes - headroom_bytes) // per_learner_bytes)


def _run_in_own_loop(coroutine: Any) -> Any:
    """``asyncio.run(coroutine)``, in a thread of its own when this thread already runs an event
    loop (Playwright's sync API keeps one running in a test worker that drove a browser before;
    Jupyter kernels run one too), where ``asyncio.run`` refuses to start."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop here: the usual case, a script or make classroom
        return asyncio.run(coroutine)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as error:  # handed back to the caller's thread below
            outcome["error"] = error

    thread = threading.Thread(target=target, name="classroom-loop")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def run_class(plan: ClassPlan, source: Path, proxy_cache: Path) -> dict[str, Any]:
    """Start the hub, run the class, stop everything; return the measurements."""
    if plan.learners < 1:
        raise ValueError(f"learners={plan.learners}: expected at least 1")
    proxy = ensure_proxy(proxy_cache)
    workdir = Path(tempfile.mkdtemp(prefix="cuhub-"))
    repo = course_repository(source, workdir / "repo")
    branch = git_branch(repo)
    hub = Hub(HubConfig(workdir=workdir, proxy_command=proxy))
    sampler: MemorySampler | None = None
    killed: list[int] = []
    survivors: list[int] = []
    phases: dict[str, float] = {}
    try:
        t0 = time.perf_counter()
        hub.start()
        phases["hub_start_s"] = round(time.perf_counter() - t0, 1)
        assert hub.process is not None
        sampler = MemorySampler(hub, {}, floor=plan.memory_floor)
        sampler.start()
        procs = hub.remember_descendants()
        proxy_pid = next(
            (p.pid for p in procs[1:] if "configurable-http-proxy" in " ".join(p.cmdline())), None
        )
        cpu0 = {"hub": cpu_seconds(hub.process.pid)}
        if proxy_pid:
            cpu0["proxy"] = cpu_seconds(proxy_pid)
        wall0 = time.perf_counter()
        results = _run_in_own_loop(run_class_async(plan, hub, repo.as_uri(), branch, sampler))
        wall = time.perf_counter() - wall0
        cpu = {"hub": cpu_seconds(hub.process.pid) - cpu0["hub"]}
        if proxy_pid:
            cpu["proxy"] = cpu_seconds(proxy_pid) - cpu0["proxy"]
    finally:
        if sampler is not None:
            sampler.stop()
        t0 = time.perf_counter()
        killed = hub.stop()
        phases["stop_s"] = round(time.perf_counter() - t0, 1)
        survivors = hub.survivors()
        hub_log = hub.log(6000)
        if os.environ.get("COURSE_CLASSROOM_LOG"):  # the whole hub log, for debugging a run
            shutil.copy(hub.log_path, os.environ["COURSE_CLASSROOM_LOG"])
        shutil.rmtree(workdir, ignore_errors=True)
    result = summarise(plan, results, sampler, cpu, wall, killed, survivors, hub_log, workdir)
    result["phases"] = phases
    return result


def summarise(
    plan: ClassPlan,
    results: list[LearnerResult],
    sampler: MemorySampler,
    cpu: dict[str, float],
    wall: float,
    killed: list[int],
    survivors: list[int],
    hub_log: str,
    workdir: Path,
) -> dict[str, Any]:
    mem = {r.name: sampler.learners.get(r.name, LearnerMemory()) for r in results}
    cells = [t for r in results for t in r.cell_s]
    opens = [t for r in results for t in r.open_s]
    failures = [f"{r.name}: {f}" for r in results for f in r.failures]
    peak_pss = max((m.peak_pss for m in mem.values()), default=0)
    peak_rss = max((m.peak_rss for m in mem.values()), default=0)

    def stats(values: Sequence[float]) -> dict[str, float]:
        return {
            "n": len(values),
            "p50_s": round(percentile(values, 50), 3),
            "p95_s": round(percentile(values, 95), 3),
            "max_s": round(max(values), 3) if values else float("nan"),
        }

    return {
        "plan": {
            **asdict(plan),
            "chapters": list(plan.chapters),
            "memory_floor": plan.memory_floor,
        },
        "learners": [
            {
                "name": r.name,
                "chapters": r.chapters,
                "pulled": r.pulled,
                "cells": r.cells,
                "spawn_s": round(r.spawn_s, 2),
                "login_s": round(r.login_s, 2),
                "pull_s": round(r.pull_s, 2),
                "open_s": [round(t, 2) for t in r.open_s],
                "peak_rss_mib": round(mem[r.name].peak_rss / MIB, 1),
                "peak_pss_mib": round(mem[r.name].peak_pss / MIB, 1),
                "peak_uss_mib": round(mem[r.name].peak_uss / MIB, 1),
                "peak_server_rss_mib": round(mem[r.name].peak_server_rss / MIB, 1),
                "cpu_s": round(sampler.learner_cpu(r.name), 1),
                "peak_pss_mib_by_chapter": {
                    k: round(v / MIB, 1) for k, v in mem[r.name].pss_by_chapter.items()
                },
                "failures": r.failures,
            }
            for r in results
        ],
        "failures": len(failures),
        "failure_messages": failures[:50],
        "cells": stats(cells),
        "open_notebook": stats(opens),
        "spawn": stats([r.spawn_s for r in results if r.spawn_s]),
        "pull": stats([r.pull_s for r in results if r.pull_s]),
        "memory": {
            "per_learner_peak_pss_mib": round(peak_pss / MIB, 1),
            "per_learner_peak_rss_mib": round(peak_rss / MIB, 1),
            "per_learner_median_peak_pss_mib": round(
                statistics.median([m.peak_pss for m in mem.values()] or [0]) / MIB, 1
            ),
            "sum_of_learner_peaks_pss_gib": round(sum(m.peak_pss for m in mem.values()) / GIB, 2),
            "system_used_before_gib": round(sampler.system_before / GIB, 2),
            "system_used_peak_gib": round(sampler.system_peak / GIB, 2),
            "system_min_available_gib": round(sampler.min_available / GIB, 2),
            "hub_peak_rss_mib": round(sampler.hub_peak_rss / MIB, 1),
            "proxy_peak_rss_mib": round(sampler.proxy_peak_rss / MIB, 1),
            "samples": sampler.samples,
        },
        "cpu_s": {k: round(v, 1) for k, v in cpu.items()},
        "wall_s": round(wall, 1),
        "hub_cpu_share_of_one_core": round(sum(cpu.values()) / wall, 4) if wall else 0.0,
        "memory_guard": sampler.abort,
        "workdir": str(workdir),
        "processes_killed_at_stop": len(killed),
        "processes_left": survivors,
        "hub_log_tail": hub_log if failures or survivors else "",
    }


def class_size(result: dict[str, Any], machine_gib: float = 24, headroom_gib: float = 2) -> dict:
    """The class one machine holds, computed from a run's per-learner peak PSS."""
    per = result["memory"]["per_learner_peak_pss_mib"] * MIB
    return {
        "machine_gib": machine_gib,
        "headroom_gib": headroom_gib,
        "per_learner_gib": round(per / GIB, 2),
        "learners_by_memory": capacity(per, machine_gib * GIB, headroom_gib * GIB),
    }


def iter_lines(result: dict[str, Any]) -> Iterator[str]:
    """The printed table of a run."""
    yield f"{'learner':10s} {'chapters':>8s} {'cells':>5s} {'peak RSS':>9s} {'peak PSS':>9s} " + (
        f"{'peak USS':>9s} {'opens (s)':>24s} failures"
    )
    for r in result["learners"]:
        opens = " ".join(f"{t:.1f}" for t in r["open_s"])
        yield (
            f"{r['name']:10s} {len(r['chapters']):8d} {r['cells']:5d} "
            f"{r['peak_rss_mib']:7.0f}Mi {r['peak_pss_mib']:7.0f}Mi {r['peak_uss_mib']:7.0f}Mi "
            f"{opens:>24s} {len(r['failures'])}"
        )
    c, o = result["cells"], result["open_notebook"]
    yield f"cells: {c['n']}, p50 {c['p50_s']} s, p95 {c['p95_s']} s, max {c['max_s']} s"
    yield f"open the notebook: {o['n']}, p50 {o['p50_s']} s, p95 {o['p95_s']} s"
    m = result["memory"]
    yield (
        f"per-learner peak: PSS {m['per_learner_peak_pss_mib']} MiB, RSS "
        f"{m['per_learner_peak_rss_mib']} MiB; machine used {m['system_used_before_gib']} -> "
        f"{m['system_used_peak_gib']} GiB (min available {m['system_min_available_gib']} GiB)"
    )
    yield (
        f"hub CPU {result['cpu_s']} in {result['wall_s']} s wall "
        f"({result['hub_cpu_share_of_one_core']:.1%} of one core); hub RSS "
        f"{m['hub_peak_rss_mib']} MiB, proxy RSS {m['proxy_peak_rss_mib']} MiB"
    )
    yield f"failures: {result['failures']}; processes left after stop: {result['processes_left']}"
