"""End-to-end benchmark (issue 3): ``harvester run`` on a synthetic web vs the two limits.

One run, on one corpus (``benchmarks.webgen``, profile ``many`` by default: 2,000 hosts,
about 3.2 million URLs), served on loopback by ``benchmarks.server`` in its own subprocess
(optionally with injected latency), measures in turn:

* ``net_limit``: a plain aiohttp client in one process downloading every file of the corpus
  (robots.txt, then the index, then the children, per host, as a harvester must), at the
  same concurrency as the harvester (workers x hosts_in_flight hosts at once, 0 being its
  auto bound; at most ``--concurrency`` connections per host), bodies streamed in 64 KiB
  chunks and discarded.
  URLs/s = corpus URLs / seconds.
* ``cpu_limit``: the raw zlib + lxml pull parse (``loc`` and ``lastmod`` only, each element
  cleared, the bench_parse ``raw`` loop) of the same files from disk in one process; its
  time divided by ``--workers`` (the issue: "times the number of workers"). The time is the
  loop's wall time, or its CPU time when other load on the machine made that smaller.
* ``harvester``: ``harvester run -i SEEDS -o OUT --workers N --config CFG`` as a
  subprocess; CFG (written here) sets ``fetch.allow_private``, ``politeness.default``
  rate 1000/s and concurrency 4, ``run.hosts_in_flight`` 0 (auto, the harvester's default).
  Wall time is the process's, interpreter start included. Then the output is checked:
  distinct ``loc`` per host, count and set (an order-independent digest) against ``truth.json``.

``--rounds N`` measures every selected step N times, interleaved (round 1: net, cpu,
harvester; round 2: the same; ...), so each round's harvester is compared with limits
measured just before it. This machine's other load moves all three between runs by more
than 20 %: the ratio target is judged on the median of the rounds' ratios, and every
round's ratio and the worst are printed beside it.

Each measurement runs in its own process. Peak RSS: every 50 ms the bench reads ``VmRSS``
(and ``VmHWM``) from /proc for the measured process and all its descendants; it reports the
largest sum over the tree and the largest single process (its ``VmHWM``, so no spike is
missed between samples); every 0.5 s it also sums ``Pss`` (shared pages counted once).
CPU s is user + system of the process and its reaped descendants (``RUSAGE_CHILDREN``
before/after). MB = 10**6 bytes.

Output: one JSON line per measurement on stdout, then a markdown table and the targets
(issue 3: harvester >= 0.7 of the smaller limit with ``--workers 2``, peak RSS of all its
processes < 300 MB, URLs found = ground truth); the records also go to
``benchmarks/out/pipeline-<profile>-h<hosts>-w<workers>-l<latency ms>.json``.
Exit status: 0 done (1 with ``--check`` when a target is missed), 1 a step failed
(e.g. ``harvester run`` missing: the limits are still measured and printed), 2 usage.

Usage::

    python -m benchmarks.bench_pipeline                      # many, 2,000 hosts, 2 workers
    python -m benchmarks.bench_pipeline --hosts 200          # quick
    python -m benchmarks.bench_pipeline --latency 0.05       # a real network's round trip
    python -m benchmarks.bench_pipeline --only net,cpu       # the limits alone
    python -m benchmarks.bench_pipeline --only cpu,harvester --rounds 5   # 5 interleaved pairs
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import json
import os
import resource
import selectors
import signal
import statistics
import subprocess
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

ROOT: Final = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(ROOT))

from benchmarks.webgen import (  # noqa: E402
    DEFAULT_HOSTS,
    DEFAULT_PORT,
    SIZED_PROFILES,
    GroundTruth,
    ProfileNotImplementedError,
    UrlTally,
    default_out_dir,
    describe,
    generate,
    load_manifest,
)

if TYPE_CHECKING:
    from collections.abc import Callable

OUT_ROOT: Final = Path(__file__).resolve().parent / "out"
CHUNK: Final = 64 * 1024
SAMPLE_EVERY: Final = 0.05
# Pss is read on every PSS_EVERY-th sample only (every 0.5 s): /proc/<pid>/smaps_rollup
# walks the process's page tables, and at every sample that cost ~1.1 CPU s in the bench
# process over one ``many`` run of the harvester's three processes (perf: smaps_account,
# smaps_pte_range), on the same two cores the measured harvester runs on.
PSS_EVERY: Final = 10
NS_SM: Final = "http://www.sitemaps.org/schemas/sitemap/0.9"
URL_TAG: Final = f"{{{NS_SM}}}url"
SITEMAP_TAG: Final = f"{{{NS_SM}}}sitemap"
LOC_TAG: Final = f"{{{NS_SM}}}loc"
LASTMOD_TAG: Final = f"{{{NS_SM}}}lastmod"
TARGET_RATIO: Final = 0.7
TARGET_RSS_MB: Final = 300.0


class StepError(Exception):
    """A step of the bench could not run (its message says which and why)."""


# --------------------------------------------------------------------------- process tree RSS


def _status(pid: int) -> tuple[int, int] | None:
    """(VmRSS, VmHWM) of ``pid`` in KiB, or None when it is gone (or a zombie)."""
    rss = hwm = -1
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return (rss, hwm) if rss >= 0 else None


def _pss(pid: int) -> int:
    """``Pss`` of ``pid`` in KiB (0 when gone): its RSS with every shared page divided
    by the number of processes mapping it, so a tree's Pss sum counts shared pages once."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (via /proc/<pid>/task/<tid>/children)."""
    found = [pid]
    i = 0
    while i < len(found):
        p = found[i]
        i += 1
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{p}/task/{tid}/children") as fh:
                    found.extend(int(c) for c in fh.read().split())
            except (OSError, ValueError):
                continue
    return found


def _cmdline(pid: int) -> str:
    """A short label for ``pid``: its command line, cut at 100 characters."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().decode(errors="replace").split("\0")
    except OSError:
        return "?"
    argv = [a for a in argv if a]
    if not argv:
        return "?"
    label = " ".join([Path(argv[0]).name, *argv[1:]])
    if "harvester-worker" in argv:  # after a long -c program: put the role where it shows
        label = f"harvester-worker: {label}"
    return label[:100]


class TreeSampler(threading.Thread):
    """Samples the RSS of a process tree every ``interval`` seconds until ``stop()``."""

    def __init__(self, pid: int, interval: float = SAMPLE_EVERY) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.max_sum_kib = 0
        self.max_pss_sum_kib = 0  # largest sum of Pss (shared pages split between sharers)
        self.max_single_kib = 0  # largest VmHWM seen: a process's own peak
        self.pids: set[int] = set()
        self.peaks: dict[int, int] = {}  # pid -> largest VmHWM seen (KiB)
        self.names: dict[int, str] = {}  # pid -> short command line
        self.samples = 0
        self._stop_event = threading.Event()

    def sample(self) -> None:
        total = 0
        tree = _tree(self.pid)
        for pid in tree:
            status = _status(pid)
            if status is None:
                continue
            rss, hwm = status
            self.pids.add(pid)
            if self.names.get(pid, "?") == "?" or self.samples % 10 == 0:
                name = _cmdline(pid)  # read again later: a fork may exec after we see it
                if name != "?":
                    self.names[pid] = name
            self.peaks[pid] = max(self.peaks.get(pid, 0), rss, hwm)
            total += rss
            self.max_single_kib = max(self.max_single_kib, rss, hwm)
        self.max_sum_kib = max(self.max_sum_kib, total)
        # Pss only matters for trees; it costs a page-table walk (see PSS_EVERY)
        if len(self.pids) > 1 and self.samples % PSS_EVERY == 0:
            pss = sum(_pss(pid) for pid in tree)
            self.max_pss_sum_kib = max(self.max_pss_sum_kib, pss)
        self.samples += 1

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.sample()
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


@dataclass(slots=True)
class ProcResult:
    """A measured subprocess: exit status, wall and CPU seconds, RSS, its stdout."""

    returncode: int
    wall_s: float
    cpu_s: float
    peak_rss_sum_mb: float
    peak_rss_max_mb: float
    processes: int
    stdout: str
    timed_out: bool = False
    peak_pss_sum_mb: float = 0.0  # largest sampled sum of Pss over the tree (0: one process)
    sys_s: float = 0.0  # the system (kernel) part of cpu_s
    # CPU seconds the hypervisor gave other guests while this ran, over all of this
    # machine's CPUs (/proc/stat "steal"; 0 where not reported): load that the CPU
    # seconds above cannot show.
    steal_s: float = 0.0
    # per process: (pid, short command line, largest VmHWM seen in MB), largest first
    per_process: list[tuple[int, str, float]] = field(default_factory=list)

    @property
    def peak_rss_hwm_sum_mb(self) -> float:
        """Sum of every process's own peak: an upper bound on the tree's peak."""
        return sum(mb for _, _, mb in self.per_process)


def _children_cpu() -> tuple[float, float]:
    """User and system CPU seconds of this process's reaped children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


def _steal() -> float:
    """The machine's steal time so far in seconds (/proc/stat), 0.0 where unknown."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def run_measured(
    cmd: list[str], *, timeout: float, stderr: IO[str] | None = None, cwd: Path = ROOT
) -> ProcResult:
    """Run ``cmd``, sampling its process tree's RSS; kill it (by pid) after ``timeout`` s."""
    user_before, sys_before = _children_cpu()
    steal_before = _steal()
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=stderr, text=True, encoding="utf-8"
    )
    sampler = TreeSampler(proc.pid)
    sampler.start()
    timed_out = False
    try:
        stdout, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _terminate(proc, sampler.pids)
        stdout, _ = proc.communicate()
    finally:
        sampler.stop()
    wall = time.perf_counter() - started
    user, system = _children_cpu()
    return ProcResult(
        returncode=proc.returncode,
        wall_s=wall,
        cpu_s=user - user_before + system - sys_before,
        sys_s=system - sys_before,
        steal_s=_steal() - steal_before,
        peak_rss_sum_mb=sampler.max_sum_kib * 1024 / 1e6,
        peak_pss_sum_mb=sampler.max_pss_sum_kib * 1024 / 1e6,
        peak_rss_max_mb=sampler.max_single_kib * 1024 / 1e6,
        processes=len(sampler.pids),
        stdout=stdout or "",
        timed_out=timed_out,
        per_process=sorted(
            (
                (pid, sampler.names.get(pid, "?"), kib * 1024 / 1e6)
                for pid, kib in sampler.peaks.items()
            ),
            key=lambda t: -t[2],
        ),
    )


def _terminate(proc: subprocess.Popen[str], descendants: set[int]) -> None:
    """SIGTERM the process we started, then SIGKILL it and the descendants we saw, by pid."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    for pid in descendants - {proc.pid}:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------------- server subprocess


class ServerProcess:
    """``python -m benchmarks.server`` in a subprocess; stopped (SIGTERM, by pid) on exit."""

    def __init__(
        self, corpus: Path, latency: float, log: Path, extra: list[str] | None = None
    ) -> None:
        self.corpus = corpus
        self.latency = latency
        self.log = log
        self.extra = extra or []  # more server arguments (``--shard K/N``)
        self.proc: subprocess.Popen[str] | None = None
        self.start_s = 0.0
        self.seeds: Path | None = None

    def __enter__(self) -> ServerProcess:
        cmd = [sys.executable, "-m", "benchmarks.server", "--corpus", str(self.corpus)]
        cmd += ["--latency", str(self.latency), *self.extra]
        started = time.perf_counter()
        with self.log.open("w") as err:
            self.proc = subprocess.Popen(
                cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True
            )
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = started + 120
        line = ""
        while time.perf_counter() < deadline:
            if sel.select(timeout=0.5):
                line = self.proc.stdout.readline()
                if line.startswith("ready") or not line:
                    break
            if self.proc.poll() is not None:
                break
        sel.close()
        if not line.startswith("ready"):
            self.__exit__()
            raise StepError(f"server did not start:\n{self.log.read_text()[-2000:]}")
        self.seeds = Path(line.split(maxsplit=1)[1].strip())
        self.start_s = time.perf_counter() - started
        return self

    @property
    def rss_mb(self) -> float:
        status = _status(self.proc.pid) if self.proc else None
        return status[1] * 1024 / 1e6 if status else 0.0

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the server has used so far."""
        if self.proc is None:
            return 0.0
        try:
            with open(f"/proc/{self.proc.pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()

    def summary(self) -> str:
        lines = [ln for ln in self.log.read_text().splitlines() if ln.startswith("# served")]
        return lines[-1][2:] if lines else ""


# --------------------------------------------------------------------------- the two limits
# Each runs in a fresh interpreter: ``--one net|cpu --corpus DIR``; prints one JSON line.


def _files_by_stage(host: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """A host's files in the order a harvester meets them: robots, indexes, the rest."""
    files = [f for f in host["files"] if f["kind"] != "redirect"]  # fetched at their target
    return [
        [f for f in files if f["kind"] == "robots"],
        [f for f in files if f["kind"] == "index"],
        [f for f in files if f["kind"] not in ("robots", "index")],
    ]


async def _net_limit(corpus: Path, hosts_in_flight: int, per_host: int) -> dict[str, Any]:
    import aiohttp

    manifest = load_manifest(corpus)
    hosts = [h for h in manifest["hosts"] if not h.get("dead")]
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for host in hosts:
        queue.put_nowait(host)
    counts = {"requests": 0, "bytes": 0, "errors": 0}
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=per_host, ttl_dns_cache=300)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=30)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, auto_decompress=False
    ) as session:

        async def fetch(url: str) -> None:
            size = 0
            try:
                async with session.get(url) as resp:
                    async for chunk in resp.content.iter_chunked(CHUNK):
                        size += len(chunk)
                    if resp.status != 200:
                        counts["errors"] += 1
            except aiohttp.ClientError:
                counts["errors"] += 1
            counts["requests"] += 1
            counts["bytes"] += size

        async def worker() -> None:
            while not queue.empty():
                host = queue.get_nowait()
                for stage in _files_by_stage(host):
                    if len(stage) == 1:
                        await fetch(host["origin"] + stage[0]["path"])
                    elif stage:
                        await asyncio.gather(*(fetch(host["origin"] + f["path"]) for f in stage))

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(min(hosts_in_flight, len(hosts)))))
        seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "urls": int(manifest["total_urls"]),
        "hosts": len(hosts),
        **counts,
    }


def net_limit(corpus: Path, hosts_in_flight: int, per_host: int) -> dict[str, Any]:
    """Download every file of the corpus once (see the module docstring); time it."""
    from benchmarks.server import new_event_loop

    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(_net_limit(corpus, hosts_in_flight, per_host))


def _xml_element_loop(parser: Any, counts: dict[str, int]) -> Callable[[], None]:
    """bench_parse's ``raw`` loop: per url/sitemap element, loc + lastmod, then clear it."""
    events = parser.read_events()
    root: Any = None

    def drain() -> None:
        nonlocal root
        for _, el in events:
            loc = lastmod = None
            for child in el.iterchildren(LOC_TAG, LASTMOD_TAG):
                if child.tag == LOC_TAG:
                    loc = child.text
                else:
                    lastmod = child.text
            if loc is not None:
                counts["urls" if el.tag == URL_TAG else "sitemaps"] += 1
            del lastmod
            el.clear(keep_tail=False)
            if root is None:
                root = el.getparent()
            while el.getprevious() is not None:
                del root[0]

    return drain


def _xml_bulk_loop(parser: Any, counts: dict[str, int]) -> Callable[[], None]:
    """Leaner: loc/lastmod end events paired per entry; finished entries dropped per chunk."""
    events = parser.read_events()
    root: Any = None
    loc: str | None = None
    lastmod: str | None = None

    def drain() -> None:
        nonlocal root, loc, lastmod
        for _, el in events:
            tag = el.tag
            if tag == LOC_TAG:
                loc = el.text
            elif tag == LASTMOD_TAG:
                lastmod = el.text
            else:
                if loc is not None:
                    counts["urls" if tag == URL_TAG else "sitemaps"] += 1
                loc = lastmod = None
                if root is None:
                    root = el.getparent()
        if root is not None and len(root) > 1:
            del root[:-1]  # every entry but the last (maybe unfinished) one

    return drain


CPU_LOOPS: Final = {
    "element": ((URL_TAG, SITEMAP_TAG), _xml_element_loop),
    "bulk": ((URL_TAG, SITEMAP_TAG, LOC_TAG, LASTMOD_TAG), _xml_bulk_loop),
}


def cpu_limit(corpus: Path, loop: str = "element") -> dict[str, Any]:
    """zlib + lxml pull parse of every corpus file from disk, loc and lastmod only.

    ``loop``: ``element`` (default) is bench_parse's ``raw`` loop, element by element;
    ``bulk`` asks libxml2 for the loc/lastmod end events too and deletes the finished
    entries once per 64 KiB chunk (same flat memory, fewer Python calls per URL).
    """
    from lxml import etree

    tags, make_drain = CPU_LOOPS[loop]
    manifest = load_manifest(corpus)
    files = [
        (corpus / f["file"], f["kind"])
        for h in manifest["hosts"]
        for f in h["files"]
        if "file" in f
    ]
    counts = {"urls": 0, "sitemaps": 0, "errors": 0, "bytes_out": 0}
    cpu_started = time.process_time()
    started = time.perf_counter()
    for path, kind in files:
        with open(path, "rb", buffering=0) as fh:
            read = fh.read
            chunk = read(CHUNK)
            zd = zlib.decompressobj(wbits=47) if chunk[:2] == b"\x1f\x8b" else None
            if kind in ("robots", "text"):  # lines, not XML
                data = b""
                while chunk:
                    data += zd.decompress(chunk) if zd is not None else chunk
                    chunk = read(CHUNK)
                counts["bytes_out"] += len(data)
                lines = data.decode("utf-8", "replace").splitlines()
                if kind == "robots":
                    counts["sitemaps"] += sum(ln[:8].lower() == "sitemap:" for ln in lines)
                else:
                    counts["urls"] += sum(1 for ln in lines if ln.strip())
                continue
            parser = etree.XMLPullParser(
                events=("end",), tag=tags, remove_blank_text=True, resolve_entities=False
            )
            drain = make_drain(parser, counts)
            try:
                while chunk:
                    data = zd.decompress(chunk) if zd is not None else chunk
                    counts["bytes_out"] += len(data)
                    parser.feed(data)
                    drain()
                    chunk = read(CHUNK)
                if zd is not None:
                    data = zd.flush()
                    counts["bytes_out"] += len(data)
                    parser.feed(data)
                parser.close()
                drain()
            except etree.XMLSyntaxError:
                counts["errors"] += 1
    return {
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu_started,
        "loop": loop,
        "files": len(files),
        **counts,
    }


def _spawn_limit(which: str, corpus: Path, extra: list[str], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.bench_pipeline", "--one", which]
    cmd += ["--corpus", str(corpus), *extra]
    res = run_measured(cmd, timeout=timeout, stderr=None)
    if res.returncode != 0 or res.timed_out:
        raise StepError(f"{which} limit failed (exit {res.returncode}): {' '.join(cmd)}")
    inner: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    inner["process"] = res
    return inner


# --------------------------------------------------------------------------- harvester


def harvester_cmd(override: str | None = None) -> list[str]:
    """``override`` split on spaces, else the ``harvester`` console script beside this
    interpreter, else ``python -m harvester``."""
    if override:
        return override.split()
    script = Path(sys.executable).parent / "harvester"
    return [str(script)] if script.exists() else [sys.executable, "-m", "harvester"]


def check_harvester_run(override: str | None = None) -> None:
    """Raise ``StepError`` unless ``harvester run --help`` works."""
    cmd = [*harvester_cmd(override), "run", "--help"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise StepError(
            f"`harvester run` is not available yet: `{' '.join(cmd)}` exited"
            f" {proc.returncode}: {tail[0]}"
        )


def compile_bytecode() -> None:
    """Write the bytecode (``.pyc``) of this checkout's ``harvester`` package, as installing
    a wheel does (pip compiles every module it installs).

    Why: harvester is installed editable here, so its bytecode is written on first import,
    unless ``PYTHONDONTWRITEBYTECODE`` is set, as it is on the machines these figures come
    from. Then every harvester process (the parent and each worker) compiled all of our
    modules from source: importing them took 0.36-0.51 s of a worker's start instead of
    0.25 s, ~0.5 CPU s a run in all. The peers, installed from wheels, never pay it.
    """
    compileall.compile_dir(str(ROOT / "harvester"), quiet=1)


def write_config(
    path: Path, *, concurrency: int, rate: float, hosts_in_flight: int, extra: str = ""
) -> Path:
    """The TOML config the bench runs harvester with (``extra``: more TOML, appended).

    ``rate`` 0: harvester's own politeness and admission (no ``[politeness.default]``
    and no ``run.hosts_in_flight``): only what loopback needs, ``fetch.allow_private``.
    """
    tuned = (
        f"[politeness.default]\nrate = {rate!r}\nconcurrency = {concurrency}\n\n"
        f"[run]\nhosts_in_flight = {hosts_in_flight}\n"
    )
    path.write_text(
        "# written by benchmarks/bench_pipeline.py\n"
        "[fetch]\nallow_private = true\n\n"
        + (tuned if rate > 0 else "")
        + (f"\n{extra}" if extra else "")
    )
    return path


def tally_output(path: Path) -> UrlTally:
    """Distinct locs per host of a JSON Lines output (index-child records skipped)."""
    tally = UrlTally()
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            record = json.loads(line)
            if record.get("is_sitemap"):
                continue
            loc = record.get("loc") or record.get("url")
            if not isinstance(loc, str):
                continue
            tally.add(urlsplit(loc).hostname or "", loc)
    return tally


def run_harvester(
    truth: GroundTruth, seeds: Path, out_dir: Path, args: argparse.Namespace
) -> dict[str, Any]:
    check_harvester_run(args.harvester)
    compile_bytecode()
    cfg = write_config(
        out_dir / "harvester.toml",
        concurrency=args.concurrency,
        rate=args.rate,
        hosts_in_flight=args.hosts_in_flight,
        extra=getattr(args, "config_extra", ""),
    )
    output = out_dir / "urls.jsonl"
    report = out_dir / "urls.jsonl.report.json"
    # Everything an earlier run left: the output, its .part, the reports and above all
    # the state file (urls.jsonl.state.sqlite*): with it the run would resume or be an
    # incremental run over the earlier ledger, not the cold run measured here.
    for stale in out_dir.glob(output.name + "*"):
        if stale.is_file():
            stale.unlink()
    cmd = [*harvester_cmd(args.harvester), "run", "-i", str(seeds), "-o", str(output)]
    cmd += ["--workers", str(args.workers), "--config", str(cfg)]
    log = out_dir / "harvester.stderr"
    with log.open("w") as err:
        res = run_measured(cmd, timeout=args.timeout, stderr=err)
    if res.timed_out or res.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        why = f"timed out after {args.timeout:.0f} s" if res.timed_out else f"exit {res.returncode}"
        raise StepError(f"harvester run failed ({why}): {' '.join(cmd)}\n{tail}")
    if not output.exists():
        raise StepError(f"harvester run exited 0 but wrote no {output}")
    summary: dict[str, Any] = {}
    if report.exists():
        run_report = json.loads(report.read_text())
        keys = ("complete", "hosts_done", "hosts_failed", "urls", "failures_by_class", "seconds")
        summary = {k: run_report[k] for k in keys if k in run_report}
    started = time.perf_counter()
    tally = tally_output(output)
    problems = tally.compare_salvaged(truth)
    salvaged = problems.pop() if problems and problems[-1].startswith("SALVAGED") else None
    if isinstance(summary.get("urls"), int) and summary["urls"] != tally.records:
        problems.append(
            f"the run report says {summary['urls']} URLs, the output has {tally.records} records"
        )
    result: dict[str, Any] = {
        "process": res,
        "urls": tally.distinct,
        "records": tally.records,
        "url_problems": problems[:20],
        "url_problem_count": len(problems),
        "salvaged": salvaged,
        "count_seconds": time.perf_counter() - started,
        "output_bytes": output.stat().st_size,
        "report": str(report) if report.exists() else None,
        "report_summary": summary,
        "cmd": cmd,
    }
    return result


# --------------------------------------------------------------------------- report


@dataclass(slots=True)
class Row:
    """One line of the table (and one JSON record)."""

    measure: str
    label: str
    seconds: float | None  # the figure URLs/s is computed from
    urls: int | None
    cpu_s: float | None = None
    rss_sum_mb: float | None = None
    rss_max_mb: float | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def urls_per_s(self) -> float | None:
        if self.seconds is None or self.urls is None or self.seconds <= 0:
            return None
        return self.urls / self.seconds

    def record(self, base: dict[str, Any]) -> dict[str, Any]:
        out = {
            **base,
            "measure": self.measure,
            "seconds": _round(self.seconds, 3),
            "urls": self.urls,
            "urls_per_s": _round(self.urls_per_s, 0),
            "cpu_s": _round(self.cpu_s, 2),
            "peak_rss_sum_mb": _round(self.rss_sum_mb, 1),
            "peak_rss_max_mb": _round(self.rss_max_mb, 1),
        }
        out.update(self.extra)
        return out


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def markdown(rows: list[Row], *, rounds: bool = False) -> str:
    """The rows as a markdown table; ``rounds``: a first column gives each row's round."""
    head = (
        ("| round " if rounds else "")
        + "| measurement | s | CPU s | server CPU s | URLs | URLs/s | peak RSS, all processes MB"
        " | largest process MB | notes |\n"
        + ("| ---: " if rounds else "")
        + "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    )
    lines = [head]
    lines.extend(
        (f"| {r.extra.get('round', '-')} " if rounds else "")
        + f"| {r.label} | {_fmt(r.seconds, '.2f')} | {_fmt(r.cpu_s, '.1f')}"
        f" | {_fmt(r.extra.get('server_cpu_s'), '.1f')}"
        f" | {_fmt(r.urls, ',')} | {_fmt(r.urls_per_s, ',.0f')}"
        f" | {_fmt(r.rss_sum_mb, '.0f')} | {_fmt(r.rss_max_mb, '.0f')} | {r.note} |"
        for r in rows
    )
    return "\n".join(lines)


def _ratio(rows: dict[str, Row]) -> tuple[str, float] | None:
    """One round's harvester URLs/s over its smaller limit's: ``(the limit's measure,
    ratio)``, or None when the round lacks the harvester or every limit."""
    harvester = rows.get("harvester")
    limits = [r for k, r in rows.items() if k.endswith("_limit") or "_limit_" in k]
    limits = [r for r in limits if r.urls_per_s]
    if harvester is None or harvester.urls_per_s is None or not limits:
        return None
    smaller = min(limits, key=lambda r: r.urls_per_s or 0.0)
    return smaller.measure, harvester.urls_per_s / (smaller.urls_per_s or 1.0)


def targets_over_rounds(
    rounds: list[dict[str, Row]], truth: GroundTruth, workers: int
) -> list[tuple[str, bool]]:
    """``targets`` judged over several rounds: the ratio is the median of the rounds'
    ratios (each round's harvester against that round's smaller limit), with every
    round's ratio and the worst shown; peak RSS is the largest of any round; the URLs
    must equal the ground truth in every round. One round: exactly ``targets``."""
    if len(rounds) == 1:
        return targets(rounds[0], truth, workers)
    out: list[tuple[str, bool]] = []
    ratios = [r for r in map(_ratio, rounds) if r is not None]
    if ratios:
        values = sorted(ratio for _, ratio in ratios)
        median = statistics.median(values)
        limits = sorted({limit for limit, _ in ratios})
        out.append(
            (
                f"harvester / smaller limit ({', '.join(limits)}), median of {len(values)}"
                f" rounds = {median:.2f}; by round: "
                + ", ".join(f"{ratio:.2f}" for _, ratio in ratios)
                + f"; worst {values[0]:.2f}"
                f" (target >= {TARGET_RATIO} with --workers 2; this run: --workers {workers})",
                median >= TARGET_RATIO,
            )
        )
    runs = [rows["harvester"] for rows in rounds if "harvester" in rows]
    peaks = [r.rss_sum_mb for r in runs if r.rss_sum_mb is not None]
    if peaks:
        out.append(
            (
                f"peak RSS of all harvester processes = {max(peaks):.0f} MB, the largest of"
                f" {len(peaks)} rounds (by round: {', '.join(f'{v:.0f}' for v in peaks)};"
                f" target < {TARGET_RSS_MB:.0f} MB)",
                max(peaks) < TARGET_RSS_MB,
            )
        )
    if runs:
        # Each round's own URL verdict, from the one-round check.
        verdicts = [
            next(item for item in targets(rows, truth, workers) if item[0].startswith("URLs"))
            for rows in rounds
            if "harvester" in rows
        ]
        found = ", ".join(f"{r.urls:,}" for r in runs)
        out.append(
            (
                f"URLs found (distinct loc) by round = {found} vs ground truth"
                f" {truth.total_urls:,}; every round's check "
                + ("passed" if all(ok for _, ok in verdicts) else "did not pass (see below)"),
                all(ok for _, ok in verdicts),
            )
        )
    return out


def targets(rows: dict[str, Row], truth: GroundTruth, workers: int) -> list[tuple[str, bool]]:
    """(line, met) for each of issue 3's targets that this run can judge."""
    out: list[tuple[str, bool]] = []
    harvester = rows.get("harvester")
    if harvester is None or harvester.urls_per_s is None:
        return out
    judged = _ratio(rows)
    if judged is not None:
        limit, ratio = judged
        out.append(
            (
                f"harvester / smaller limit ({limit}) = {ratio:.2f}"
                f" (target >= {TARGET_RATIO} with --workers 2; this run: --workers {workers})",
                ratio >= TARGET_RATIO,
            )
        )
    if harvester.rss_sum_mb is not None:
        out.append(
            (
                f"peak RSS of all harvester processes = {harvester.rss_sum_mb:.0f} MB"
                f" (target < {TARGET_RSS_MB:.0f} MB)",
                harvester.rss_sum_mb < TARGET_RSS_MB,
            )
        )
    found = harvester.urls
    problems = int(harvester.extra.get("url_problem_count", 0))
    salvaged = harvester.extra.get("salvaged")
    out.append(
        (
            f"URLs found (distinct loc) = {found:,} vs ground truth {truth.total_urls:,}"
            + (
                f"; {problems} problems, listed below"
                if problems
                else f"; every host's set equal, or equal with its salvaged entries: {salvaged}"
                if salvaged
                else "; every host's set equal"
            ),
            problems == 0 and (found == truth.total_urls or bool(salvaged)),
        )
    )
    return out


# --------------------------------------------------------------------------- main


def _one(args: argparse.Namespace) -> int:
    if args.one == "net":
        result = net_limit(args.corpus, args.net_hosts_in_flight, args.concurrency)
    else:
        result = cpu_limit(args.corpus, args.cpu_loop)
    print(json.dumps(result))
    return 0


def _contention(wall: float, cpu: float) -> str:
    """A warning for the notes when a single-threaded loop got much less than a core."""
    if cpu > 0 and wall > 1.15 * cpu:
        return (
            f"; CONTENDED: {cpu:.2f} CPU s in {wall:.2f} s (other load on the machine);"
            " the CPU s are used"
        )
    return ""


def _machine() -> str:
    model = ""
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh if "model name" in ln), "")
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs {model}".strip()


def _cpu_extra(p: ProcResult) -> dict[str, float]:
    """A measurement's kernel CPU and the machine's steal time, for its record."""
    return {"sys_s": round(p.sys_s, 2), "machine_steal_s": round(p.steal_s, 2)}


def _kernel_note(p: ProcResult) -> str:
    """The same for the table's notes."""
    return f"; {p.sys_s:.1f} of the CPU s in the kernel; machine steal {p.steal_s:.1f} s"


def _measure_net(args: argparse.Namespace, truth: GroundTruth) -> Row:
    """The network limit, in its own process."""
    from harvester.config import FetchConfig
    from harvester.run.admission import auto_limit

    # 0: the harvester's auto bound (it admits fewer while memory or CPU say so).
    per_worker = args.hosts_in_flight or auto_limit(FetchConfig().max_connections)
    net_hosts = args.workers * per_worker
    r = _spawn_limit(
        "net",
        truth.out_dir,
        ["--net-hosts-in-flight", str(net_hosts), "--concurrency", str(args.concurrency)],
        args.timeout,
    )
    p: ProcResult = r.pop("process")
    return Row(
        "net_limit",
        "network limit: plain aiohttp download, 1 process",
        r["seconds"],
        r["urls"],
        p.cpu_s,
        p.peak_rss_sum_mb,
        p.peak_rss_max_mb,
        f"{net_hosts} hosts x {args.concurrency} conns; {r['requests']} requests,"
        f" {r['bytes'] / 1e6:.0f} MB, {r['errors']} errors" + _kernel_note(p),
        {"requests": r["requests"], "bytes": r["bytes"], "errors": r["errors"], **_cpu_extra(p)},
    )


def _measure_cpu(args: argparse.Namespace, truth: GroundTruth, loop: str) -> Row:
    """The CPU limit with ``loop``, in its own process."""
    r = _spawn_limit("cpu", truth.out_dir, ["--cpu-loop", loop], args.timeout)
    p: ProcResult = r.pop("process")
    return Row(
        "cpu_limit" if loop == "element" else f"cpu_limit_{loop}",
        f"CPU limit: zlib + lxml ({loop} loop), 1 process / {args.workers}",
        min(r["seconds"], r["cpu_seconds"]) / args.workers,
        r["urls"],
        p.cpu_s,
        p.peak_rss_sum_mb,
        p.peak_rss_max_mb,
        f"{r['seconds']:.2f} s on one core; {r['files']} files,"
        f" {r['bytes_out'] / 1e6:.0f} MB parsed"
        + _contention(r["seconds"], r["cpu_seconds"])
        + _kernel_note(p),
        {
            **_cpu_extra(p),
            "one_core_seconds": round(r["seconds"], 3),
            "one_core_cpu_seconds": round(r["cpu_seconds"], 3),
            "files": r["files"],
            "loop": loop,
        },
    )


def _measure_harvester(
    args: argparse.Namespace, truth: GroundTruth, seeds: Path, out_dir: Path
) -> Row:
    """``harvester run`` against the server, and its output checked."""
    r = run_harvester(truth, seeds, out_dir, args)
    p: ProcResult = r.pop("process")
    return Row(
        "harvester",
        f"harvester run --workers {args.workers}",
        p.wall_s,
        r["urls"],
        p.cpu_s,
        p.peak_rss_sum_mb,
        p.peak_rss_max_mb,
        f"{p.processes} processes; {r['records']:,} records;"
        f" wall includes start-up" + _kernel_note(p) + f"; report: {r['report_summary'] or 'none'}",
        {
            **_cpu_extra(p),
            "records": r["records"],
            "url_problems": r["url_problems"],
            "url_problem_count": r["url_problem_count"],
            "salvaged": r["salvaged"],
            "processes": p.processes,
            "report_summary": r["report_summary"],
        },
    )


def run(args: argparse.Namespace) -> int:
    only = set(args.only.split(",")) if args.only else {"net", "cpu", "harvester"}
    unknown = only - {"net", "cpu", "harvester"}
    if unknown:
        print(f"bench_pipeline: unknown --only: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    truth = prepare_corpus(args, "bench_pipeline")
    if truth is None:
        return 2
    latency_ms = round(args.latency * 1000)
    tag = f"pipeline-{args.profile}-h{truth.hosts}-w{args.workers}-l{latency_ms}"
    out_dir = args.out or OUT_ROOT / tag
    out_dir.mkdir(parents=True, exist_ok=True)
    base = {
        "bench": "pipeline",
        "profile": args.profile,
        "hosts": truth.hosts,
        "workers": args.workers,
        "latency_ms": latency_ms,
        "urls_expected": truth.total_urls,
    }
    # One dict of rows per round: each round measures every selected step once, in
    # the same order, so a round's ratio compares measurements taken minutes apart at
    # most, and the rounds show how far this machine's other load moves them.
    rounds: list[dict[str, Row]] = []
    failures: list[str] = []
    loops = ["element", "bulk"] if args.cpu_loop == "both" else [args.cpu_loop]

    server_cpu = 0.0

    def emit(rows: dict[str, Row], row: Row, number: int) -> None:
        nonlocal server_cpu
        used, server_cpu = server.cpu_s() - server_cpu, server.cpu_s()
        row.extra["server_cpu_s"] = round(used, 2)
        row.extra["round"] = number
        rows[row.measure] = row
        print(json.dumps(row.record(base)), flush=True)

    with ServerProcess(truth.out_dir, args.latency, out_dir / "server.stderr") as server:
        assert server.seeds is not None
        server_cpu = server.cpu_s()
        pid = server.proc.pid if server.proc else 0
        print(
            f"# server ready in {server.start_s:.2f} s (pid {pid}, {server.rss_mb:.0f} MB)",
            file=sys.stderr,
        )
        for number in range(1, args.rounds + 1):
            rows: dict[str, Row] = {}
            rounds.append(rows)
            steps: list[Callable[[], Row]] = []
            if "net" in only:
                steps.append(partial(_measure_net, args, truth))
            for loop in loops if "cpu" in only else []:
                steps.append(partial(_measure_cpu, args, truth, loop))
            if "harvester" in only:
                steps.append(partial(_measure_harvester, args, truth, server.seeds, out_dir))
            for step in steps:
                try:
                    row = step()
                except StepError as exc:
                    failures.append(f"round {number}: {exc}" if args.rounds > 1 else str(exc))
                    continue
                emit(rows, row, number)
                if row.measure.startswith("cpu_limit") and row.urls != truth.total_urls:
                    failures.append(f"cpu limit counted {row.urls} URLs, truth {truth.total_urls}")
        server_rss = server.rss_mb
    served = server.summary()

    print()
    print(
        f"Profile {args.profile}: {truth.hosts:,} hosts, {truth.total_urls:,} URLs;"
        f" --workers {args.workers}, latency {latency_ms} ms; {_machine()};"
        f" Python {sys.version.split()[0]}."
        + (
            f" {args.rounds} rounds, each step once a round in this order."
            if args.rounds > 1
            else ""
        )
    )
    print()
    every = [row for rows in rounds for row in rows.values()]
    print(markdown(every, rounds=args.rounds > 1))
    print()
    print(f"- server: ready in {server.start_s:.2f} s, peak RSS {server_rss:.0f} MB; {served}")
    met = targets_over_rounds(rounds, truth, args.workers)
    for line, ok in met:
        print(f"- {'PASS' if ok else 'MISS'}: {line}")
    for rows in rounds:
        for problem in rows["harvester"].extra["url_problems"] if "harvester" in rows else []:
            print(f"  - {problem}")
    results = out_dir / "results.json"
    results.write_text(
        json.dumps(
            {
                **base,
                "machine": _machine(),
                "rounds": args.rounds,
                "records": [row.record(base) for row in every],
                "ratios": [
                    None if r is None else {"limit": r[0], "ratio": round(r[1], 3)}
                    for r in map(_ratio, rounds)
                ],
                "targets": [{"line": line, "met": ok} for line, ok in met],
                "failures": failures,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"- records: {results}")
    for failure in failures:
        print(f"\nbench_pipeline: FAILED: {failure}", file=sys.stderr)
    if failures:
        return 1
    return 1 if args.check and not all(ok for _, ok in met) else 0


def prepare_corpus(args: argparse.Namespace, prog: str) -> GroundTruth | None:
    """Generate (or reuse) the corpus named by ``args``; None after printing why it failed.

    ``args`` needs profile, hosts, corpus, seed and port (the flags of this module
    and of ``benchmarks run``).
    """
    sized = args.profile in SIZED_PROFILES and args.hosts is not None
    hosts = args.hosts if sized else DEFAULT_HOSTS.get(args.profile, 0)
    corpus = args.corpus or default_out_dir(args.profile, hosts, args.seed, args.port)
    started = time.perf_counter()
    try:
        truth = generate(args.profile, corpus, seed=args.seed, hosts=hosts, port=args.port)
    except (ProfileNotImplementedError, ValueError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None
    verb = "reused" if truth.reused else "generated"
    print(
        f"# corpus {verb} in {time.perf_counter() - started:.1f} s: {describe(truth)}",
        file=sys.stderr,
    )
    return truth


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_pipeline",
        description="harvester run end to end on a loopback synthetic web, vs the two limits.",
    )
    ap.add_argument("--profile", default="many", help="webgen profile (default many)")
    ap.add_argument("--hosts", type=int, help="hosts (many: 2,000, messy: 500, scale: 20,000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=DEFAULT_PORT)
    ap.add_argument("--corpus", type=Path, help="corpus directory (default benchmarks/.corpus/..)")
    ap.add_argument("--out", type=Path, help="output directory (default benchmarks/out/..)")
    ap.add_argument("--workers", type=int, default=2, help="harvester --workers (default 2)")
    ap.add_argument("--latency", type=float, default=0.0, help="server latency in seconds")
    ap.add_argument("--concurrency", type=int, default=4, help="connections per host")
    ap.add_argument("--rate", type=float, default=1000.0, help="requests/s per host")
    ap.add_argument(
        "--hosts-in-flight",
        type=int,
        default=0,
        help="per harvester worker, its upper bound (default 0: the harvester's auto)",
    )
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per measurement")
    ap.add_argument("--only", help="comma list of net,cpu,harvester (default all)")
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure every step this many times, interleaved (ratio: the rounds' median)",
    )
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument(
        "--cpu-loop",
        choices=("element", "bulk", "both"),
        default="element",
        help="CPU-limit loop: element (bench_parse's raw; default), bulk (leaner), both",
    )
    ap.add_argument("--harvester", help="command to run instead of .venv/bin/harvester")
    ap.add_argument("--one", choices=("net", "cpu"), help=argparse.SUPPRESS)
    ap.add_argument("--net-hosts-in-flight", type=int, default=128, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.workers < 1:
        ap.error("--workers must be >= 1")
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    if args.one:
        if args.corpus is None:
            ap.error("--one needs --corpus")
        return _one(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
