"""The writer commits on a timer, not only when output arrives (issue 30, item 5).

Three hosts finish at once; a fourth hangs in its robots.txt, so nothing more reaches
the writer. After ``commit_interval`` + 1 s the run is killed with SIGKILL: every
record written by then must be committed (the resumed run keeps them, and does not
fetch the finished hosts again), in-process (one worker) and with worker processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp import web

if TYPE_CHECKING:
    from tests.integration.conftest import Site, Sites

COMMIT_INTERVAL = 0.5
CONFIG = f"""
[fetch]
allow = ["127.0.0.0/8"]
retries = 0
total_timeout = 120.0
[run]
uvloop = false
hosts_in_flight = 8
[state]
commit_interval = {COMMIT_INTERVAL}
"""
URLS = 60


def _urlset(site: Site) -> bytes:
    locs = "".join(f"<url><loc>{site.url(f'/p/{i}')}</loc></url>" for i in range(URLS))
    return (f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>').encode()


async def _hosts(sites: Sites, release: asyncio.Event) -> tuple[list[Site], Site]:
    fast: list[Site] = []
    for n in range(3):
        routes: dict[str, Any] = {}
        site = await sites.start(f"127.0.0.{60 + n}", routes)
        routes["/robots.txt"] = f"Sitemap: {site.url('/s.xml')}\n".encode()
        routes["/s.xml"] = _urlset(site)
        fast.append(site)

    slow_routes: dict[str, Any] = {}
    slow = await sites.start("127.0.0.63", slow_routes)

    async def robots(request: web.Request) -> web.StreamResponse:
        await release.wait()  # hangs until the test lets it answer (the second run)
        return web.Response(text=f"Sitemap: {slow.url('/s.xml')}\n")

    slow_routes["/robots.txt"] = robots
    slow_routes["/s.xml"] = _urlset(slow)
    return fast, slow


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.timeout(150)  # a loaded machine's pure-Python start and first records
@pytest.mark.parametrize("workers", [1, 2])
async def test_records_are_committed_while_the_rest_of_the_run_stalls(
    sites: Sites, tmp_path: Path, workers: int
) -> None:
    release = asyncio.Event()
    fast, slow = await _hosts(sites, release)
    domains = tmp_path / "domains.txt"
    domains.write_text("".join(f"{s.origin}\n" for s in [*fast, slow]))
    config = tmp_path / "harvester.toml"
    config.write_text(CONFIG)
    out = tmp_path / "urls.jsonl"
    part = Path(f"{out}.part")
    state = tmp_path / "urls.jsonl.state.sqlite"
    args: tuple[str, ...] = ("-i", str(domains), "-o", str(out), "--config", str(config))
    args += ("--workers", str(workers), "--no-progress")
    try:
        await _kill_then_resume(args, part, state, out, fast, release)
    finally:
        release.set()  # else the server's cleanup waits for the hanging handler


def _size(path: Path) -> int:
    return path.stat().st_size


async def _kill_then_resume(
    args: tuple[str, ...],
    part: Path,
    state: Path,
    out: Path,
    fast: list[Site],
    release: asyncio.Event,
) -> None:
    log = part.with_name("first-run.stderr")
    with log.open("wb") as err:  # (read back when the wait fails, to say why)
        proc = await _start(args, err)
    try:
        try:
            async with asyncio.timeout(60):
                while len(_lines(part)) < 3 * URLS:  # noqa: ASYNC110 - until the fast hosts are written
                    await asyncio.sleep(0.05)
        except TimeoutError:
            raise AssertionError(
                f"{len(_lines(part))} lines after 60 s; {log.read_text()}"
            ) from None
        written = _size(part)
        await asyncio.sleep(COMMIT_INTERVAL + 1.0)
        assert _size(part) == written  # the stalled host added nothing since
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
    await _resume(args, state, out, fast, release, written)


async def _start(args: tuple[str, ...], err: Any) -> Any:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harvester",
        "run",
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=err,
        start_new_session=True,  # its own process group: the kill reaches its workers too
    )


async def _resume(
    args: tuple[str, ...],
    state: Path,
    out: Path,
    fast: list[Site],
    release: asyncio.Event,
    written: int,
) -> None:
    with sqlite3.connect(state) as db:
        committed = db.execute("SELECT max(output_bytes) FROM runs").fetchone()[0]
    assert committed == written  # every record older than the interval + 1 s

    release.set()
    robots_before = [s.hits("/robots.txt") for s in fast]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harvester",
        "run",
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    assert [s.hits("/robots.txt") for s in fast] == robots_before  # not fetched again
    urls = [json.loads(line)["url"] for line in _lines(out)]
    assert len(urls) == len(set(urls)) == 4 * URLS
