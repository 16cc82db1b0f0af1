"""Hosts in flight (issue 29): what a waiting host costs, and slow hosts do not starve fast ones."""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc
from typing import TYPE_CHECKING, Any

from aiohttp import web

from harvester.run.pipeline import HostDone, OutputItem, aiter_seeds, run_shard
from tests.integration.conftest import LoopbackResolver, fast_config
from tests.integration.test_end_to_end import urlset

if TYPE_CHECKING:
    from tests.integration.conftest import Sites

WAITING = 500
PER_HOST_BUDGET = 20_000  # bytes a host waiting on its rate limit may hold (issue 29)


async def test_a_host_waiting_on_its_rate_limit_holds_under_20_kb(sites: Sites) -> None:
    """500 hosts read their robots.txt, then wait for their rate limit (1 request per
    1000 s) to fetch the sitemap it lists: the traced memory grows < 20 KB a host.

    Each host has its own name (so its own slot); ``Connection: close`` leaves no
    pooled connection behind (what is measured is the hosts, not a connection pool).
    """
    robots_read = 0
    all_read = asyncio.Event()

    async def robots(request: web.Request) -> web.Response:
        nonlocal robots_read
        robots_read += 1
        if robots_read == WAITING:
            all_read.set()
        body = f"Sitemap: http://{request.host}/sitemap.xml\n"
        return web.Response(text=body, headers={"Connection": "close"})

    site = await sites.start("127.0.0.90", {"/robots.txt": robots})
    names = {f"w{i}.test": site.host for i in range(WAITING)}
    cfg = fast_config(
        **{
            "run.hosts_in_flight": WAITING,
            "run.memory_budget": 0,
            "run.max_loop_lag": 0.0,
            "politeness.default.rate": 0.001,
            "fetch.max_connections": 64,
        }
    )
    lines = [f"http://{name}:{site.port}" for name in names]
    sent: list[OutputItem] = []

    async def send(item: OutputItem) -> None:
        sent.append(item)

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        shard = asyncio.create_task(
            run_shard(aiter_seeds(lines), cfg, send, resolver=LoopbackResolver(names))
        )
        async with asyncio.timeout(30):
            await all_read.wait()
        await asyncio.sleep(0.3)  # the last responses are read; every host waits on its slot
        gc.collect()
        per_host = (tracemalloc.get_traced_memory()[0] - before) / WAITING
    finally:
        tracemalloc.stop()
    shard.cancel()
    await asyncio.gather(shard, return_exceptions=True)
    assert not sent  # every host was still waiting
    assert per_host < PER_HOST_BUDGET, f"{per_host:.0f} bytes per waiting host"


async def test_slow_hosts_do_not_starve_fast_ones(sites: Sites) -> None:
    """200 hosts whose robots.txt takes 2 s, then 20 fast ones, in that order: the fast
    ones finish in well under the ~6 s a fixed 64 hosts in flight would make them wait
    (4 rounds of slow hosts before them): the admission starts at 64 and grows by half
    every 0.1 s, so all 220 are in flight within ~0.4 s.
    """
    slow_delay = 2.0

    async def slow_robots(request: web.Request) -> web.Response:
        await asyncio.sleep(slow_delay)
        return web.Response(status=404)

    slow = await sites.start("127.0.0.91", {"/robots.txt": slow_robots})
    routes: dict[str, Any] = {}
    fast = await sites.start("127.0.0.92", routes)
    routes["/robots.txt"] = f"Sitemap: {fast.url('/sitemap.xml')}\n".encode()
    routes["/sitemap.xml"] = urlset(*(fast.url(f"/page{i}") for i in range(5)))
    names = {f"slow{i}.test": slow.host for i in range(200)}
    names.update({f"fast{i}.test": fast.host for i in range(20)})
    lines = [f"http://{name}:{slow.port}" for name in names if name.startswith("slow")]
    lines += [f"http://{name}:{fast.port}" for name in names if name.startswith("fast")]
    # Memory and CPU are plenty here: the budget and the lag rule are off, so a busy test
    # machine's lag cannot hold the ceiling (both rules: tests/unit/test_admission.py).
    cfg = fast_config(
        **{
            "run.hosts_in_flight": 0,
            "run.memory_budget": 0,
            "run.max_loop_lag": 0.0,
            "fetch.first_byte_timeout": 10.0,
        }
    )
    done: dict[str, float] = {}
    start = time.monotonic()

    async def send(item: OutputItem) -> None:
        if isinstance(item, HostDone):
            done[item.report["host"]] = time.monotonic() - start

    await run_shard(aiter_seeds(lines), cfg, send, resolver=LoopbackResolver(names))
    fast_done = [t for host, t in done.items() if host.startswith("fast")]
    slow_done = [t for host, t in done.items() if host.startswith("slow")]
    assert (len(fast_done), len(slow_done)) == (20, 200)
    assert max(fast_done) < slow_delay, sorted(fast_done)  # before any slow host is done
    assert max(slow_done) < 3 * slow_delay  # all slow hosts were in flight at once
