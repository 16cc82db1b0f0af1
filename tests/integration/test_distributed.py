"""Shards on Dask distributed against loopback sites: the same records as one process.

One ``LocalCluster`` per module and kind (threads: ``processes=False``, fast; and
worker processes, as ``--scheduler local`` starts them), shared by the tests. The
distributed run and the single-process ``run_job`` harvest the same loopback web;
their records (merged in shard order for the distributed one) must be equal, each
URL once, with and without a state file, and a second cron run must emit the same
delta on both.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import platform
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

distributed = pytest.importorskip("distributed")

from harvester.distributed.client import run_distributed  # noqa: E402
from harvester.distributed.layout import read_layout  # noqa: E402
from harvester.distributed.merge import merge  # noqa: E402
from harvester.distributed.occupancy import Occupancy  # noqa: E402
from harvester.output.writer import Writer  # noqa: E402
from harvester.run.shards import Beside, run_job  # noqa: E402
from tests.integration.chromium import open_page  # noqa: E402
from tests.integration.clusters import SERVER, Web, cli, local_cluster, make_web  # noqa: E402
from tests.integration.conftest import fast_config  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.integration.conftest import Sites

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def threads_client() -> Iterator[Any]:
    """Two single-thread workers in this process (fast to start)."""
    yield from local_cluster(processes=False)


@pytest.fixture(scope="module")
def processes_client() -> Iterator[Any]:
    """Two worker processes of one thread each, as ``--scheduler local:2`` starts them."""
    yield from local_cluster(processes=True)


def read_jsonl(path: Path | str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def key(record: dict[str, Any]) -> tuple[str, str]:
    return record["host"], record["url"]


def single(web: Web, out: Path, **cfg: Any) -> tuple[Any, list[dict[str, Any]]]:
    run = run_job(fast_config(**cfg), list(web.lines), str(out), progress=False)
    return run, sorted(read_jsonl(out), key=key)


def dist(
    client: Any, web: Web, out: Path, **cfg: Any
) -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]:
    outcomes: list[dict[str, Any]] = []
    config = fast_config(**{"distributed.shards": 5, **cfg})
    result = run_distributed(client, list(web.lines), str(out), config, on_shard=outcomes.append)
    layout = read_layout(str(out))
    assert layout is not None
    merged = out.parent / f"{out.name}.merged.jsonl"
    merge(layout, str(merged))
    return result, read_jsonl(merged), outcomes


def assert_same_run(one: Any, many: Any) -> None:
    for name in ("urls", "hosts_done", "hosts_failed", "failures_by_class", "input_invalid"):
        assert getattr(many.run, name) == getattr(one, name), name
    assert many.run.cross_host_duplicates == one.cross_host_duplicates == 1


@pytest.mark.parametrize("cluster", ["threads_client", "processes_client"])
async def test_merged_output_equals_the_single_process_run(
    sites: Sites, tmp_path: Path, cluster: str, request: pytest.FixtureRequest
) -> None:
    client = request.getfixturevalue(cluster)
    web = await make_web(sites, first=40 if cluster == "threads_client" else 60)
    one, expected = await asyncio.to_thread(
        single, web, tmp_path / "one.jsonl", **{"state.enabled": False}
    )
    many, records, outcomes = await asyncio.to_thread(
        dist, client, web, tmp_path / "out", **{"state.enabled": False}
    )
    assert len(expected) == 7 * 21 + 2
    assert sorted(records, key=key) == expected
    assert len({key(r) for r in records}) == len(records)  # each URL once
    assert_same_run(one, many)
    assert sorted(o["shard"] for o in outcomes) == list(range(5))
    assert {o["status"] for o in outcomes} == {"committed"}
    assert many.failed == []
    out = tmp_path / "out"
    assert (out / "_SUCCESS").exists()
    report = json.loads((out / "report.json").read_text())
    assert report["urls"] == one.urls
    assert report["distributed"]["shards_committed"] == 5
    # Only what a manifest names is left in the shard directories.
    for shard in range(5):
        manifest = json.loads((out / "shards" / f"{shard:05d}" / "MANIFEST.r1.json").read_text())
        files = ("records", "hosts", "fingerprints", "report")
        names = {manifest[f] for f in files} | {"MANIFEST.r1.json"}
        assert set(os.listdir(out / "shards" / f"{shard:05d}")) == names


async def test_with_state_a_second_cron_run_emits_the_same_delta(
    sites: Sites, tmp_path: Path, threads_client: Any
) -> None:
    web = await make_web(sites, first=80)
    state = {"state.path": str(tmp_path / "one.sqlite"), "output.emit": "delta"}
    _, expected = await asyncio.to_thread(single, web, tmp_path / "one-1.jsonl", **state)
    many, records, _ = await asyncio.to_thread(
        dist, threads_client, web, tmp_path / "out", **{"output.emit": "delta"}
    )
    assert sorted(records, key=key) == expected
    assert {r["event"] for r in records} == {"new"}
    assert many.run.events["new"] == len(expected)

    # The sites change: one URL added, one gone, on two hosts.
    first, second = list(web.urls)[:2]
    web.urls[first].append(first + "/a/added")
    web.publish(first)
    del web.urls[second][3]
    web.publish(second)

    _, expected = await asyncio.to_thread(single, web, tmp_path / "one-2.jsonl", **state)
    many, records, _ = await asyncio.to_thread(
        dist, threads_client, web, tmp_path / "out", **{"output.emit": "delta"}
    )
    changes = {(r["event"], r["url"]) for r in expected if r["event"] != "unverified"}
    assert changes == {("new", first + "/a/added"), ("removed", second + "/a/3")}
    assert sorted(records, key=key) == expected
    layout = read_layout(str(tmp_path / "out"))
    assert layout is not None
    assert (layout.run, layout.shards) == (2, 5)  # the shard count stays the directory's
    # Run 1's files are swept once run 2 committed: one manifest, one state per shard.
    for shard in range(5):
        names = os.listdir(layout.shard_dir(shard))
        assert [n for n in names if n.startswith("MANIFEST")] == ["MANIFEST.r2.json"]
        assert len([n for n in names if n.endswith(".sqlite")]) == 1


def test_the_cli_runs_on_a_local_cluster_and_merge_writes_one_file(tmp_path: Path) -> None:
    """``harvester run --scheduler local:1`` then ``harvester merge``, as a user types them:
    a site served by a child process, so the CLI's own process stays a plain client.
    """
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, "127.0.0.120"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        origin = server.stdout.readline().strip()
        config = tmp_path / "c.toml"
        config.write_text('[fetch]\nallow = ["127.0.0.0/8"]\n[run]\nuvloop = false\n')
        out = tmp_path / "out"
        args = ["run", origin, "-o", str(out), "--config", str(config), "--no-progress"]
        done = cli(*args, "--scheduler", "local:1", "--shards", "3", "--no-state")
        assert done.returncode == 0, done.stderr
        assert done.stderr.count("committed") == 3
        merged = tmp_path / "urls.jsonl"
        assert cli("merge", str(out), "-o", str(merged)).returncode == 0
        assert sorted(r["loc"] for r in read_jsonl(merged)) == sorted(
            f"{origin}/p/{j}" for j in range(5)
        )
        refused = cli("run", origin, "-o", str(out), "--scheduler", "local:1", "--shards", "4")
        assert refused.returncode == 2
        assert "cut into 3 shards" in refused.stderr
        assert cli("merge", str(tmp_path)).returncode == 2  # not a run's directory
    finally:
        server.terminate()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()


def test_the_local_cluster_runs_one_shard_per_thread_without_dask_s_profiler() -> None:
    """``--scheduler local``'s cluster (``cluster.open_client``) carries its settings to the
    scheduler and into the worker processes (in a child process: its dashboard binds
    every interface, which this process's network fence refuses); its workers are forked
    from the forkserver with the shard's modules imported, and no process is left after.
    """
    program = (
        "import os, sys\n"
        "from harvester.config import load_config\n"
        "from harvester.distributed.cluster import open_client\n"
        "def probe():\n"
        "    import dask, gc, os, sys\n"
        "    return [dask.config.get(k) for k in ('distributed.worker.profile.enabled',"
        " 'distributed.admin.system-monitor.interval', 'distributed.admin.tick.interval',"
        " 'distributed.worker.memory.monitor-interval')] + ["
        "'harvester.run.pipeline' in sys.modules, os.getppid() == int(sys.argv[-1]),"
        " gc.get_freeze_count() > 10000]\n"
        "def children():\n"
        "    tasks = os.listdir('/proc/self/task')\n"
        "    kids = [open(f'/proc/self/task/{t}/children').read().split() for t in tasks]\n"
        "    return [open(f'/proc/{c}/cmdline').read().split(chr(0))[3][:40]"
        " for cs in kids for c in cs]\n"
        "if __name__ == '__main__':\n"
        "    sys.argv.append(str(os.getpid()))\n"
        "    cfg = load_config(None, {'distributed.scheduler': 'local:1'})\n"
        "    with open_client(cfg.distributed) as client:\n"
        "        print(list(client.run(probe).values()),"
        " client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.WORKER_SATURATION))\n"
        "    print(children())\n"
    )
    done = _python(program)
    # Preloaded (spawned workers import harvester at their first shard) and frozen
    # there, and not the client's own child (the forkserver's); the forkserver reaped
    # once the cluster closed (multiprocessing's resource tracker stays till the
    # process ends, as with spawn).
    probed, left = done.stdout.split("\n")[:2]
    assert probed == "[[False, '2s', '1s', '1s', True, False, True]] 1.0"
    assert "forkserver" not in left
    assert "resource_tracker" in left


def test_the_forkserver_s_preload_leaves_the_processor_answered_for_its_workers() -> None:
    """Imported, the preload has asked ``platform`` for the processor (``uname -p``, a
    subprocess), so a worker forked after it answers Dask's registration without one."""
    program = (
        "import harvester.distributed.preload, platform, subprocess\n"
        "def refused(*args, **kwargs):\n"
        "    raise AssertionError(f'a subprocess: {args}')\n"
        "subprocess.check_output = subprocess.Popen = refused\n"
        "print(repr(platform.uname().processor))\n"
    )
    assert _python(program).stdout.strip() == repr(platform.uname().processor)


def _python(program: str) -> subprocess.CompletedProcess[str]:
    """``program`` run by this interpreter in a child process; asserts it exited 0."""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=50, check=False
    )
    assert done.returncode == 0, done.stderr
    return done


_DASHBOARD = (
    "import sys\n"
    "from harvester.config import load_config\n"
    "from harvester.distributed.cluster import open_client\n"
    "if __name__ == '__main__':\n"
    "    cfg = load_config(None, {'distributed.scheduler': 'local:1',"
    " 'distributed.dashboard_address': '127.0.0.1:0'})\n"
    "    with open_client(cfg.distributed) as client:\n"
    "        print(client.dashboard_link, flush=True)\n"
    "        sys.stdin.read()  # till the test closes it\n"
)

# Bokeh builds the dashboard in the page after it loads, over a websocket to the
# scheduler: wait (up to 10 s) for its document to have roots (the plots).
_BOKEH_ROOTS = (
    "new Promise(done => { const t0 = Date.now(); (function look() {"
    " const docs = (window.Bokeh && window.Bokeh.documents) || [];"
    " const roots = docs.length ? docs[0].roots().length : 0;"
    " if (roots || Date.now() - t0 > 10000) done(roots); else setTimeout(look, 100); })(); })"
)


async def test_the_local_cluster_s_dashboard_shows_in_chromium(tmp_path: Path) -> None:
    """The dashboard ``--scheduler local`` announces is Dask's status page, drawn by
    bokeh in a real browser (without bokeh Dask serves a page asking for it).
    """
    pytest.importorskip("bokeh")
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _DASHBOARD,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert child.stdin is not None
    assert child.stdout is not None
    assert child.stderr is not None
    try:
        link = (await asyncio.wait_for(child.stdout.readline(), 60)).decode().strip()
        assert link.startswith("http://127.0.0.1:"), link
        assert link.endswith("/status")
        page = await open_page(
            link, tmp_path / "profile", {"title": "document.title", "roots": _BOKEH_ROOTS}
        )
    finally:
        child.stdin.close()
        # Both pipes read to their end (a pipe left open is a ResourceWarning later).
        _, raw = await asyncio.wait_for(child.communicate(), 30)
        err = raw.decode()
    assert child.returncode == 0, err
    assert f"Dask dashboard at {link}" in err
    assert "needs bokeh" not in page.text
    assert "Dask" in page.probes["title"]
    assert page.probes["roots"] > 0


async def test_a_stop_on_the_client_stops_every_shard_gracefully(
    sites: Sites, tmp_path: Path, threads_client: Any
) -> None:
    """Ctrl-C on the client (its ``Stop``) reaches the shards through a Dask Event."""
    from aiohttp import web as aioweb

    from harvester.run.shutdown import Stop

    started, release = asyncio.Event(), asyncio.Event()

    async def stuck(request: aioweb.Request) -> aioweb.Response:
        started.set()
        await asyncio.wait_for(release.wait(), 30)  # no answer until the test ends
        return aioweb.Response(status=500)

    lines = []
    for i in range(3):
        routes: dict[str, Any] = {"/robots.txt": b"", "/sitemap.xml": stuck}
        site = await sites.start(f"127.0.0.{100 + i}", routes)
        lines.append(site.origin)
    stop = Stop()
    config = fast_config(
        **{
            "distributed.shards": 2,
            "run.shutdown_grace": 0.2,
            "fetch.total_timeout": 60.0,
            "fetch.read_timeout": 60.0,
        }
    )
    task = asyncio.create_task(
        asyncio.to_thread(
            run_distributed, threads_client, lines, str(tmp_path / "out"), config, stop=stop
        )
    )
    try:
        await asyncio.wait_for(started.wait(), 10)
        stop.set()
        result = await asyncio.wait_for(task, 20)
    finally:
        release.set()
    assert result.run.interrupted
    assert not result.run.complete
    assert result.failed == []
    # Every shard that had a host stopped early (one without hosts simply finished).
    paths = [result.layout.seeds_path(o["shard"]) for o in result.shards]
    sizes = [await asyncio.to_thread(os.path.getsize, path) for path in paths]
    assert [o["manifest"]["interrupted"] for o in result.shards] == [n > 0 for n in sizes]
    assert all(o["manifest"]["urls"] == 0 for o in result.shards)
    assert not (tmp_path / "out" / "_SUCCESS").exists()
    assert json.loads((tmp_path / "out" / "report.json").read_text())["interrupted"] is True


async def test_a_shard_s_stragglers_run_beside_the_worker_s_next_shards(
    sites: Sites, tmp_path: Path, threads_client: Any
) -> None:
    """A shard's stragglers must not hold the worker's thread: every host's second
    sitemap is held until all hosts of the run have asked for theirs, which two
    one-thread workers reach only if each shard steps aside (Dask's secede) once it
    has taken its last seed, so the shards behind it start. Held in vain, the
    sitemaps would answer only at a cap, which the test sees.
    """
    web = await make_web(sites, first=150, hosts=6)
    asked: set[str] = set()
    everyone = asyncio.Event()
    capped = []

    def held(route: Any, origin: str) -> Any:
        from aiohttp import web as aioweb

        async def handler(request: aioweb.Request) -> aioweb.Response:
            asked.add(origin)
            if len(asked) == len(web.routes):
                everyone.set()
            try:
                await asyncio.wait_for(everyone.wait(), 10.0)
            except TimeoutError:
                capped.append(origin)
            return aioweb.Response(body=route, content_type="application/xml")

        return handler

    for origin, routes in web.routes.items():
        routes["/b.xml.gz"] = held(routes["/b.xml.gz"], origin)
    out = tmp_path / "out"
    timeouts = {"fetch.read_timeout": 30.0, "fetch.total_timeout": 60.0}  # (held, not slow)
    result, records, _ = await asyncio.to_thread(dist, threads_client, web, out, **timeouts)
    assert capped == []
    assert result.failed == []
    assert len(records) == sum(len(u) + 9 for u in web.urls.values()) + 2  # (+ the shared)
    # (The shards behind them had to start first: each step aside is Dask's secede.)
    prefix = hashlib.blake2b(str(out).encode(), digest_size=4).hexdigest()  # (absolute)

    def seceded(dask_worker: Any) -> list[str]:
        return [str(e[0]) for e in dask_worker.state.log if len(e) > 2 and e[2] == "long-running"]

    assert [k for ks in threads_client.run(seceded).values() for k in ks if prefix in k]


async def test_a_shard_beside_others_writes_on_the_shared_loop_the_same_output(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a worker's shared loop (``Beside``) the shard runs, and its writer is called,
    in the loop's thread (not the task's: a thread of the writer's own cost the loop
    more GIL hand-overs than it saved); the output is the one-process run's."""
    web = await make_web(sites, first=170)
    writing: set[str] = set()
    records = Writer.records

    def spied(self: Writer, *args: Any, **kwargs: Any) -> None:
        writing.add(threading.current_thread().name)
        records(self, *args, **kwargs)

    monkeypatch.setattr(Writer, "records", spied)
    out = tmp_path / "beside.jsonl"
    occupancy = Occupancy()

    def beside() -> Any:
        cfg = fast_config()
        with occupancy.attempt(cfg, False) as attempt:
            beside = Beside(attempt.run, attempt.admission)
            return run_job(cfg, list(web.lines), str(out), progress=False, beside=beside)

    run = await asyncio.to_thread(beside)
    assert writing == {"harvester-shard-loop"}
    one, expected = await asyncio.to_thread(single, web, tmp_path / "one.jsonl")
    assert sorted(read_jsonl(out), key=key) == expected
    assert (run.urls, run.hosts_done) == (one.urls, one.hosts_done)


async def test_a_shard_that_raises_is_retried_then_reported_failed(
    sites: Sites, tmp_path: Path, threads_client: Any
) -> None:
    """A shard whose committed state file is corrupt raises on every attempt: it fails
    after ``shard_retries`` more runs, with the error; the other shards commit.
    """
    web = await make_web(sites, first=110, hosts=4)
    out = tmp_path / "out"
    await asyncio.to_thread(dist, threads_client, web, out)
    layout = read_layout(str(out))
    assert layout is not None
    await asyncio.to_thread(_corrupt_state, layout, 2)
    outcomes: list[dict[str, Any]] = []
    config = fast_config(**{"distributed.shard_retries": 1})
    result = await asyncio.to_thread(
        run_distributed, threads_client, list(web.lines), str(out), config, on_shard=outcomes.append
    )
    assert result.failed == [2]
    failed = next(o for o in outcomes if o["shard"] == 2)
    assert failed["status"] == "failed"
    assert "StateError" in failed["error"]
    assert "shard 00002: not a harvester state file, or a corrupt one" in failed["error"]
    assert f"{os.sep}shards{os.sep}00002{os.sep}r1-" in failed["error"]  # the shard's file
    assert {o["status"] for o in outcomes if o["shard"] != 2} == {"committed"}
    assert (out / "_SUCCESS").exists()  # every shard committed or failed
    # The failed shard keeps its last commit (run 1's) untouched for the next run.
    assert await asyncio.to_thread(os.path.exists, layout.manifest_path(2))


def _corrupt_state(layout: Any, shard: int) -> None:
    manifest = json.loads(Path(layout.manifest_path(shard)).read_text())
    Path(layout.shard_dir(shard), manifest["state"]).write_bytes(b"not sqlite at all" * 100)
