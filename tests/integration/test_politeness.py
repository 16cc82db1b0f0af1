"""Per-host rate and concurrency, Retry-After, hosts-in-flight bound; measured server-side."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.integration.conftest import Reply
from tests.integration.harvesting import assert_paced, collect
from tests.integration.webs import index, robots, urlset

if TYPE_CHECKING:
    from tests.integration.conftest import Sites


async def test_per_host_rate_spaces_requests(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.20", routes)
    u = site.url
    routes["/robots.txt"] = robots(u("/index.xml"))
    routes["/index.xml"] = index(*(u(f"/c{i}.xml") for i in range(5)))
    for i in range(5):
        routes[f"/c{i}.xml"] = urlset(u(f"/p{i}"))
    await collect([site.origin], **{"politeness.default.rate": 10.0})
    starts = sorted(h.start for h in site.log)
    assert len(starts) == 8  # robots.txt, tdmrep.json (policy.tdmrep), the index, 5 children
    assert_paced(starts, 0.1)  # 10 requests/s


async def test_crawl_delay_slows_a_host_down(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.21", routes)
    u = site.url
    routes["/robots.txt"] = b"User-agent: *\nCrawl-delay: 0.3\nSitemap: " + u("/a.xml").encode()
    routes["/a.xml"] = index(u("/b.xml"))
    routes["/b.xml"] = urlset(u("/x"))
    await collect([site.origin])  # the configured rate is 1000/s; Crawl-delay wins
    starts = sorted(h.start for h in site.log)
    assert starts[2] - starts[1] >= 0.28


async def test_a_short_crawl_delay_never_speeds_a_host_up(sites: Sites) -> None:
    # Issue 50: a Crawl-delay shorter than 1 / rate let the request after robots.txt in
    # after the delay alone (0.1 s here, where the rate asks for 0.5 s).
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.24", routes)
    u = site.url
    routes["/robots.txt"] = b"User-agent: *\nCrawl-delay: 0.1\nSitemap: " + u("/a.xml").encode()
    routes["/a.xml"] = index(u("/b.xml"))
    routes["/b.xml"] = urlset(u("/x"))
    await collect([site.origin], **{"politeness.default.rate": 2.0})
    starts = sorted(h.start for h in site.log)
    assert [h.path for h in sorted(site.log, key=lambda h: h.start)] == [
        "/robots.txt",
        "/.well-known/tdmrep.json",  # policy.tdmrep (on by default): paced like any request
        "/a.xml",
        "/b.xml",
    ]
    assert_paced(starts, 0.5)


async def test_per_host_concurrency_cap(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.22", routes)
    u = site.url
    two = asyncio.Event()  # set by the second request in flight

    async def slow(request: web.Request) -> web.Response:
        # Each answer waits (up to 2 s) for a second request in flight: whether two overlap
        # is then the cap's decision, not the loaded machine's timing (a 50 ms answer
        # could end before the next request came).
        if site.active >= 2:
            two.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(two.wait()), 2.0)
        two.clear()
        await asyncio.sleep(0.05)
        return web.Response(body=urlset(u(request.path + "/page")))

    routes["/robots.txt"] = robots(*(u(f"/s{i}.xml") for i in range(8)))
    for i in range(8):
        routes[f"/s{i}.xml"] = slow
    # One host worker fetches one sitemap at a time; the cap also binds across seeds.
    seeds = [site.url(f"/s{i}.xml") for i in range(8)]
    # The admission's load checks off: in a long test process its RSS (memory_budget) or
    # CPU share can hold the run to one host at a time, and the cap is what is tested.
    unbound = {"run.memory_budget": 0, "run.max_cpu": 0, "run.max_loop_lag": 0}
    records, _ = await collect(seeds, **{"politeness.default.concurrency": 2}, **unbound)
    assert len(records) == 8
    assert site.max_active == 2


async def test_retry_after_is_honoured(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.23", routes)
    calls = 0

    async def busy_then_ok(request: web.Request) -> web.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            return web.Response(status=503, headers={"Retry-After": "1"})
        return web.Response(body=urlset(site.url("/ok")))

    routes["/robots.txt"] = Reply(b"", status=404)
    routes["/sitemap.xml"] = busy_then_ok
    records, hosts = await collect([site.origin], **{"fetch.retries": 2})
    assert [r["loc"] for r in records] == [site.url("/ok")]
    attempts = [h.start for h in site.log if h.path == "/sitemap.xml"]
    assert len(attempts) == 2
    assert attempts[1] - attempts[0] >= 0.95
    assert hosts[site.origin.removeprefix("http://")]["failures"] == []


async def test_hosts_in_flight_bound(sites: Sites) -> None:
    active = 0
    peak = 0

    async def robots_slow(request: web.Request) -> web.Response:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.05)
        active -= 1
        return web.Response(status=404)

    origins = []
    for n in range(6):
        site = await sites.start(f"127.0.0.{30 + n}", {"/robots.txt": robots_slow})
        origins.append(site.origin)
    # (robots.txt read ahead is not a host in flight: the bound is of hosts in input order)
    _, hosts = await collect(origins, **{"run.hosts_in_flight": 2, "run.lookahead": 0})
    assert len(hosts) == 6
    assert peak == 2
