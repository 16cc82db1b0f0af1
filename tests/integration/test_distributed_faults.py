"""Faults of a distributed run: workers killed mid-shard (``gen_cluster`` with ``Nanny``).

A shard's task SIGKILLs its own worker process once it has written part of its
output (``task.TEST_KILL_ENV``, a test-only hook: the directory named by the env var
holds the target shard and how many of its attempts die). The nanny restarts the
worker, the scheduler runs the task again; the run must still commit every shard
exactly once, or report the shard failed when every attempt dies.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

distributed = pytest.importorskip("distributed")

from distributed import Nanny  # noqa: E402
from distributed.utils_test import gen_cluster  # noqa: E402

from harvester.distributed.client import run_distributed  # noqa: E402
from harvester.distributed.layout import read_layout  # noqa: E402
from harvester.distributed.merge import merge  # noqa: E402
from harvester.distributed.task import TEST_KILL_ENV  # noqa: E402
from harvester.run.seeds import shard_of  # noqa: E402
from tests.integration.conftest import Sites, fast_config  # noqa: E402
from tests.integration.webs import index, robots, urlset  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SHARDS = 3
HOLD = 20.0  # seconds the held sitemap waits for its attempt's kill, at most
# Where the hook's "spec" and kill markers live: fixed before the nannies start their
# workers (they read the env var at start), emptied by each test.
KILL_DIR = os.path.join(tempfile.gettempdir(), f"harvester-test-kill-{os.getpid()}")
CLUSTER: dict[str, Any] = {
    "client": False,
    "Worker": Nanny,
    "nthreads": [("127.0.0.1", 1)] * 2,
    "timeout": 55,
    # (HTTP servers would bind 0.0.0.0, whose lookup the test network fence refuses)
    "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"},
    "worker_kwargs": {"env": {TEST_KILL_ENV: KILL_DIR}, "dashboard_address": "127.0.0.1:0"},
    # A synchronous Client runs the harvest in a thread: its threads outlive the check.
    "clean_kwargs": {"threads": False},
}


async def slow_web(sites: Sites, first: int) -> tuple[list[str], set[str], int]:
    """Six hosts; the first one's second child is held until the attempt that asked for
    it was killed (``_held_until_killed``), so a kill always finds its shard half done.

    Returns the input lines, every URL, and the shard of the slow host.
    """
    lines: list[str] = []
    urls: set[str] = set()
    target = -1
    for i in range(6):
        routes: dict[str, Any] = {}
        site = await sites.start(f"127.0.0.{first + i}", routes)
        a = [site.url(f"/a/{j}") for j in range(10)]
        b = [site.url(f"/b/{j}") for j in range(10)]
        routes["/robots.txt"] = robots(site.url("/index.xml"))
        routes["/index.xml"] = index(site.url("/a.xml"), site.url("/b.xml"))
        routes["/a.xml"] = urlset(*a)
        if i == 0:
            routes["/b.xml"] = _held_until_killed(urlset(*b))
            target = shard_of(f"127.0.0.{first}:{site.port}", SHARDS)
        else:
            routes["/b.xml"] = urlset(*b)
        lines.append(site.origin)
        urls.update(a + b)
    return lines, urls, target


def _held_until_killed(body: bytes) -> Any:
    """A handler that answers once the attempt asking is dead (its connection closed), or
    at once when the hook has no kill left (that attempt commits).

    Not a fixed delay: on a loaded machine the attempt might not have written a record
    before a delay ran out, and then it would finish instead of being killed half done.
    Waiting on the connection, not on the kill marker: the hook writes its marker just
    before the kill, so a request may come in between. The wait is capped (``HOLD``):
    a kill that never comes fails the test's asserts instead of hanging it.
    """
    from aiohttp import web

    async def handler(request: web.Request) -> web.Response:
        if len(killed_attempts()) < kills_armed():  # the asking attempt's hook will kill it
            deadline = asyncio.get_running_loop().time() + HOLD
            while request.transport is not None and not request.transport.is_closing():
                if asyncio.get_running_loop().time() > deadline:
                    break
                await asyncio.sleep(0.02)
        return web.Response(body=body, content_type="application/xml")

    return handler


def arm(shard: int, times: int) -> None:
    """The hook: shard ``shard``'s first ``times`` attempts kill their worker."""
    shutil.rmtree(KILL_DIR, ignore_errors=True)
    os.makedirs(KILL_DIR)
    Path(KILL_DIR, "spec").write_text(f"{shard} {times}\n")


def kills_armed() -> int:
    """How many attempts the hook kills in all (``arm``'s ``times``)."""
    return int(Path(KILL_DIR, "spec").read_text().split()[1])


def killed_attempts() -> list[str]:
    return [n.split("-", 2)[2] for n in os.listdir(KILL_DIR) if n.startswith("kill-")]


def harvest(
    address: str, lines: list[str], out: Path, shards: int = SHARDS
) -> tuple[Any, list[dict[str, Any]]]:
    """The user's side, in a thread: a synchronous client, the run, the merge."""
    config = fast_config(
        **{
            "distributed.shards": shards,
            "state.commit_interval": 0.05,
            # The sites are served by this process's event loop, which the scheduler and
            # the nannies (restarting killed workers) share: under load a reply can be
            # late by seconds, which must not fail a fetch. The held sitemap waits up to
            # HOLD (fast_config's 2 s read timeout would retry it).
            "fetch.connect_timeout": 30.0,
            "fetch.read_timeout": HOLD + 10,
            "fetch.total_timeout": HOLD + 20,
        }
    )
    client = distributed.Client(address, set_as_default=False)
    try:
        result = run_distributed(client, lines, str(out), config)
    finally:
        client.close()
    layout = read_layout(str(out))
    assert layout is not None
    merge(layout, str(out) + ".jsonl")
    with open(str(out) + ".jsonl", encoding="utf-8") as fh:
        return result, [json.loads(line) for line in fh]


@gen_cluster(**CLUSTER)
async def test_a_worker_killed_mid_shard_loses_nothing_and_duplicates_nothing(
    s: Any, a: Any, b: Any, tmp_path: Path
) -> None:
    sites = Sites()
    try:
        lines, urls, target = await slow_web(sites, first=140)
        arm(target, 1)
        result, records = await asyncio.to_thread(harvest, s.address, lines, tmp_path / "out")
    finally:
        await sites.close()
    (killed,) = killed_attempts()
    assert result.failed == []
    outcome = next(o for o in result.shards if o["shard"] == target)
    assert outcome["status"] == "committed"
    assert outcome["manifest"]["attempt"] != killed  # the second attempt's commit
    assert outcome["manifest"]["complete"]
    locs = [r["loc"] for r in records]
    assert len(locs) == len(set(locs))  # every URL once
    assert set(locs) == urls
    assert result.run.urls == len(urls)
    # The killed attempt had written part of its records; they are swept.
    shard_dir = tmp_path / "out" / "shards" / f"{target:05d}"
    assert not [n for n in os.listdir(shard_dir) if n.startswith(killed)]
    assert (tmp_path / "out" / "_SUCCESS").exists()
    shutil.rmtree(KILL_DIR, ignore_errors=True)


# One task at a time per worker thread (worker-saturation 1.0): a dying worker then takes
# no queued shard down with it. It may take a seceded shard's stragglers along
# (occupancy.py): such a shard, given up on, commits on its attempt alone.
@gen_cluster(
    **CLUSTER,
    config={
        "distributed.scheduler.allowed-failures": 1,
        "distributed.scheduler.worker-saturation": 1.0,
    },
)
async def test_a_shard_that_kills_every_worker_fails_and_the_others_commit(
    s: Any, a: Any, b: Any, tmp_path: Path
) -> None:
    sites = Sites()
    try:
        lines, urls, target = await slow_web(sites, first=150)
        arm(target, 99)
        result, records = await asyncio.to_thread(harvest, s.address, lines, tmp_path / "out")
    finally:
        await sites.close()
    # allowed-failures 1: two deaths, then two more alone in its worker; then it is failed.
    assert len(killed_attempts()) == 4
    assert result.failed == [target]
    failed = next(o for o in result.shards if o["shard"] == target)
    assert "KilledWorker" in failed["error"]
    assert failed["alone"] is True
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["distributed"]["shards_failed"] == [target]
    assert report["distributed"]["shards_committed"] == SHARDS - 1
    assert report["complete"] is False
    # The other shards' hosts are all there, each URL once; none of the failed shard's.
    slow_host = lines[0].removeprefix("http://")
    locs = [r["loc"] for r in records]
    assert len(locs) == len(set(locs))
    assert set(locs) == {u for u in urls if not _in_shard(u, target)}
    assert not any(r["host"] == slow_host for r in records)
    shard_dir = tmp_path / "out" / "shards" / f"{target:05d}"
    assert os.listdir(shard_dir) == []  # the dead attempts' files swept
    shutil.rmtree(KILL_DIR, ignore_errors=True)


async def beside_web(sites: Sites, first: int) -> tuple[list[str], set[str], int, int]:
    """Two hosts in two shards, served so that while the first two attempts of the
    killer's shard run, the innocent shard is provably running in the same worker.

    The innocent host's second sitemap is held (till its connection closes) whenever
    fewer than two attempts were killed, and the killer's first sitemap waits for that
    hold before answering (the killer writes records, so the hook kills it, with the
    innocent in flight); the killer's second sitemap is held till it is killed. From
    the third attempt on the innocent's and the killer's first sitemap answer at once.
    Returns the input lines, the innocent host's URLs, the killer's and the innocent's shard.
    """
    held = asyncio.Event()  # the innocent's attempt is in flight, its sitemap held

    def killer_sitemap(body: bytes) -> Any:
        from aiohttp import web

        async def handler(request: web.Request) -> web.Response:
            if len(killed_attempts()) < 2:
                await asyncio.wait_for(held.wait(), HOLD)
            return web.Response(body=body, content_type="application/xml")

        return handler

    def innocent_sitemap(body: bytes) -> Any:
        from aiohttp import web

        async def handler(request: web.Request) -> web.Response:
            if len(killed_attempts()) < 2:
                held.set()
                deadline = asyncio.get_running_loop().time() + HOLD
                while request.transport is not None and not request.transport.is_closing():
                    if asyncio.get_running_loop().time() > deadline:
                        break
                    await asyncio.sleep(0.02)
                held.clear()
            return web.Response(body=body, content_type="application/xml")

        return handler

    lines: list[str] = []
    innocent_urls: set[str] = set()
    shards: list[int] = []
    for i in range(8):  # until the two hosts are in different shards
        routes: dict[str, Any] = {}
        site = await sites.start(f"127.0.0.{first + i}", routes)
        shard = shard_of(f"127.0.0.{first + i}:{site.port}", 2)
        if shards and shard == shards[0]:
            continue
        a = [site.url(f"/a/{j}") for j in range(5)]
        b = [site.url(f"/b/{j}") for j in range(5)]
        routes["/robots.txt"] = robots(site.url("/index.xml"))
        routes["/index.xml"] = index(site.url("/a.xml"), site.url("/b.xml"))
        if not shards:
            routes["/a.xml"] = killer_sitemap(urlset(*a))
            routes["/b.xml"] = _held_until_killed(urlset(*b))  # in flight when it is killed
        else:
            routes["/a.xml"] = urlset(*a)
            routes["/b.xml"] = innocent_sitemap(urlset(*b))
            innocent_urls.update(a + b)
        lines.append(site.origin)
        shards.append(shard)
        if len(shards) == 2:
            return lines, innocent_urls, shards[0], shards[1]
    raise AssertionError("no two loopback hosts in different shards")


# One worker of one thread: a shard that steps aside (occupancy.py) lets the other start
# beside it, and the killer's death takes it along each time.
@gen_cluster(
    **{**CLUSTER, "nthreads": [("127.0.0.1", 1)]},
    config={
        "distributed.scheduler.allowed-failures": 1,
        "distributed.scheduler.worker-saturation": 1.0,
    },
)
async def test_a_shard_killed_beside_the_killer_commits_on_its_attempt_alone(
    s: Any, a: Any, tmp_path: Path
) -> None:
    sites = Sites()
    try:
        lines, innocent_urls, killer, innocent = await beside_web(sites, first=160)
        arm(killer, 99)
        result, records = await asyncio.to_thread(harvest, s.address, lines, tmp_path / "out", 2)
    finally:
        await sites.close()
    # The killer's two attempts took the innocent along both times (Dask gave up on both);
    # then each ran alone: the innocent committed, the killer died twice more.
    assert len(killed_attempts()) == 4
    assert result.failed == [killer]
    outcome = next(o for o in result.shards if o["shard"] == innocent)
    assert outcome["status"] == "committed"
    assert outcome["alone"] is True
    locs = [r["loc"] for r in records]
    assert sorted(locs) == sorted(innocent_urls)  # each once
    shutil.rmtree(KILL_DIR, ignore_errors=True)


def _in_shard(url: str, shard: int) -> bool:
    host = url.split("/")[2]
    return shard_of(host, SHARDS) == shard
