"""SIGINT/SIGTERM during `harvester run`: stop taking hosts, flush whole lines, exit 130/143.

`harvester run` runs as a subprocess (its own session, so a SIGINT sent to its
process group is what a Ctrl-C in a terminal delivers: the parent *and* its worker
processes get it) against slow loopback servers: each host is an index of slow
children, so no host can finish within the short ``run.shutdown_grace`` and the
run must cancel what is in flight. Only the processes this test starts are
signalled.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvester.run.shards import run_job
from harvester.run.shutdown import Stop
from tests.integration.conftest import fast_config
from tests.integration.processes import alive, shards_used, workers_of
from tests.integration.webs import slow_host

if TYPE_CHECKING:
    from tests.integration.conftest import Site, Sites

GRACE = 1.0
CONFIG = f"""
[fetch]
allow_private = true
retries = 0
connect_timeout = 2.0
[politeness.default]
rate = 1000.0
concurrency = 2
[run]
uvloop = false
hosts_in_flight = 1
shutdown_grace = {GRACE}
lookahead = 0
"""


async def run_and_signal(
    sites: Sites, tmp_path: Path, *, workers: int, sig: signal.Signals, group: bool
) -> tuple[int, str, Path, list[Site], dict[int, str]]:
    hosts = [await slow_host(sites, f"127.0.0.{90 + i}") for i in range(6)]
    domains = tmp_path / "domains.txt"
    domains.write_text("".join(f"{h.origin}\n" for h in hosts))
    config = tmp_path / "harvester.toml"
    config.write_text(CONFIG)
    out = tmp_path / "urls.jsonl"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harvester",
        "run",
        "-i",
        str(domains),
        "-o",
        str(out),
        "--config",
        str(config),
        "--workers",
        str(workers),
        "--no-progress",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group: killpg reaches it and its workers only
    )
    kids: dict[int, str] = {}
    try:
        # Wait until a few child sitemaps were served: records exist in the run by then.
        deadline = time.monotonic() + 30
        while sum(1 for h in hosts for hit in h.log if hit.end and "/c" in hit.path) < 3:
            assert time.monotonic() < deadline, "the run never got going"
            assert proc.returncode is None
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)  # let those records reach the writer
        kids = await workers_of(proc.pid, shards_used(hosts, workers))
        if group:
            os.killpg(proc.pid, sig)  # like Ctrl-C in a terminal: the whole group
        else:
            os.kill(proc.pid, sig)
        _, err = await asyncio.wait_for(proc.communicate(), timeout=GRACE + 20)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, err.decode(), out, hosts, kids


def read_outputs(out: Path) -> tuple[bool, bool, bytes, dict[str, Any], bool]:
    """(.part exists, final file exists, .part bytes, run report, hosts report exists)."""
    part = Path(f"{out}.part")
    data = part.read_bytes() if part.exists() else b""
    report = json.loads(Path(f"{out}.report.json").read_text())
    return part.exists(), out.exists(), data, report, Path(report["hosts_report"]).exists()


async def check_interrupted_run(
    code: int,
    expected: int,
    err: str,
    out: Path,
    hosts: list[Site],
    kids: dict[int, str],
) -> None:
    assert code == expected, err
    assert "Traceback" not in err, err  # no worker died noisily
    assert "interrupted" in err
    # The hosts in flight could not finish (20 children, 0.25 s each, two at a time: the
    # server's own waits outlast the grace, on any machine): cancelled at the grace, so
    # a host that was started never asked for all its children.
    started = [h for h in hosts if h.log]
    children = [sum(hit.path.startswith("/c") for hit in h.log) for h in started]
    assert min(children) < 20, children
    part_exists, final_exists, data, report, hosts_report_exists = read_outputs(out)
    assert part_exists
    assert not final_exists  # never looks complete
    assert data.endswith(b"\n")  # no half-written line
    records = [json.loads(line) for line in data.splitlines()]
    assert records
    assert len({r["url"] for r in records}) == len(records)
    assert report["interrupted"] is True
    assert report["complete"] is False
    assert report["finished"] is not None
    assert report["urls"] == len(records)  # cancelled hosts' records are counted too
    assert hosts_report_exists  # final: each line is a host that finished
    # Hosts not started before the signal were never started: no request reached them.
    started = [h for h in hosts if h.log]
    assert len(started) < len(hosts)
    # No process of the run is left behind.
    for _ in range(100):
        if not any(alive(pid) for pid in kids):
            break
        await asyncio.sleep(0.05)
    assert not [pid for pid in kids if alive(pid)]


async def test_sigint_to_the_process_group_with_worker_processes(
    sites: Sites, tmp_path: Path
) -> None:
    code, err, out, hosts, kids = await run_and_signal(
        sites, tmp_path, workers=2, sig=signal.SIGINT, group=True
    )
    # The workers whose shard got a host (a worker starts with its first host; the
    # sites' ports are random, so all six may hash to one shard), and no helper process.
    assert len(kids) == shards_used(hosts, 2)
    assert all(role == "harvester-worker" for role in kids.values())
    await check_interrupted_run(code, 130, err, out, hosts, kids)


async def test_sigterm_in_process(sites: Sites, tmp_path: Path) -> None:
    code, err, out, hosts, kids = await run_and_signal(
        sites, tmp_path, workers=1, sig=signal.SIGTERM, group=False
    )
    await check_interrupted_run(code, 143, err, out, hosts, kids)


async def test_hosts_in_flight_finish_within_the_grace(sites: Sites, tmp_path: Path) -> None:
    """In process, no signal: ``Stop`` set mid-host; that host completes, no other starts."""
    served = asyncio.Event()
    hosts = [
        await slow_host(sites, f"127.0.0.{100 + i}", children=4, delay=0.1, served=served)
        for i in range(4)
    ]
    stop = Stop()

    async def stop_when_served() -> None:
        await served.wait()
        stop.set(signal.SIGTERM)

    # The run must end when its host finishes, not when the grace does: a grace of 45 s
    # and a guard of 40 s tell the two apart on any machine (the host needs < 1 s of
    # the servers' time); a run that waited for the grace fails the guard.
    # (input order: no robots.txt read ahead, so a host not started was never asked)
    cfg = fast_config(**{"run.hosts_in_flight": 1, "run.shutdown_grace": 45.0, "run.lookahead": 0})
    out = tmp_path / "urls.jsonl"
    watcher = asyncio.create_task(stop_when_served())
    async with asyncio.timeout(40):
        run = await asyncio.to_thread(
            run_job,
            cfg,
            [h.origin for h in hosts],
            str(out),
            report_path=f"{out}.report.json",
            progress=False,
            stop=stop,
        )
    await watcher
    assert run.interrupted is True
    assert run.complete is False
    assert run.hosts_done == 1  # the host in flight finished and reported
    assert [len(h.log) for h in hosts[1:]] == [0, 0, 0]  # no other host was started
    _, _, data, report, _ = read_outputs(out)
    assert report["interrupted"] is True
    assert len(data.splitlines()) == run.urls == 4 * 200  # every child of the finished host
    host_reports = [json.loads(line) for line in read_hosts(Path(report["hosts_report"]))]
    assert [r["urls"] for r in host_reports] == [800]


def read_hosts(path: Path) -> list[str]:
    return path.read_text().splitlines()
