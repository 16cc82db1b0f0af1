"""Issue 51, item 3: the end of a run does not wait on one host (run.lookahead, LPT).

One long-chain host (robots.txt Crawl-delay 0.3 s, many sitemaps) sits LAST in the input,
behind short hosts, and one host is harvested at a time (run.hosts_in_flight 1). With
the lookahead its robots.txt is read while the short hosts wait, and it is started
before them; without, after them all. Asserted: the order of the hosts' first sitemap
requests (at the servers), robots.txt read once per host, the Crawl-delay kept from the
first request on. No wall-clock bound.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from tests.integration.harvesting import assert_paced, collect
from tests.integration.webs import robots, urlset

if TYPE_CHECKING:
    from aiohttp import web

    from tests.integration.conftest import Site, Sites

DELAY = 0.3  # the long host's Crawl-delay
FILES = 5  # its sitemaps
SHORT = 5  # short hosts before it in the input


async def _web(sites: Sites) -> tuple[list[Site], Site]:
    """``SHORT`` short hosts (robots.txt answered after 0.5 s, one sitemap each), then the
    long one (robots.txt at once, ``FILES`` sitemaps one ``DELAY`` apart)."""
    shorts = []
    for i in range(SHORT):
        routes: dict[str, Any] = {}
        site = await sites.start(f"127.0.0.{60 + i}", routes)
        body = robots(site.url("/sitemap.xml"))

        async def slow_robots(_request: web.Request, body: bytes = body) -> web.Response:
            from aiohttp import web

            # Slower than the long host's: its probe is done before the first short host
            # (taken at once, its probe still running) ends, whatever the machine's load.
            await asyncio.sleep(0.5)
            return web.Response(body=body, content_type="text/plain")

        routes["/robots.txt"] = slow_robots
        routes["/sitemap.xml"] = urlset(site.url(f"/short{i}"))
        shorts.append(site)
    routes = {}
    long = await sites.start("127.0.0.70", routes)
    files = [long.url(f"/s{i}.xml") for i in range(FILES)]
    routes["/robots.txt"] = f"User-agent: *\nCrawl-delay: {DELAY}\n".encode() + robots(*files)
    for i in range(FILES):
        routes[f"/s{i}.xml"] = urlset(long.url(f"/long{i}"))
    return shorts, long


def _first_sitemap(site: Site) -> float:
    return min(hit.start for hit in site.log if hit.path != "/robots.txt")


async def _harvest(sites: Sites, **cfg: Any) -> tuple[list[Site], Site, dict[str, Any]]:
    shorts, long = await _web(sites)
    origins = [site.origin for site in (*shorts, long)]  # the long host last
    records, hosts = await collect(origins, **{"run.hosts_in_flight": 1, **cfg})
    assert len(records) == SHORT + FILES, hosts
    assert sorted(report["urls"] for report in hosts.values()) == [1] * SHORT + [FILES]
    return shorts, long, hosts


async def test_a_long_chain_placed_last_starts_before_the_short_hosts(sites: Sites) -> None:
    shorts, long, hosts = await _harvest(sites, **{"run.lookahead": 16})
    started = _first_sitemap(long)
    later = [site for site in shorts if _first_sitemap(site) > started]
    # The first short host is taken at once (no probe is done yet: the lookahead never
    # holds the admission back); every other one waits for the long host.
    assert len(later) >= SHORT - 1, [_first_sitemap(s) - started for s in shorts]
    # robots.txt was read once per host: the probe's request is the host's own.
    assert all(site.hits("/robots.txt") == 1 for site in (*shorts, long))
    assert hosts[f"127.0.0.70:{long.port}"]["discovery"] == "robots"
    # Politeness is exact from the first request (the probe's robots.txt) on.
    starts = sorted(hit.start for hit in long.log)
    assert len(starts) == FILES + 2  # robots.txt, tdmrep.json (policy.tdmrep), the sitemaps
    assert_paced(starts, DELAY)


async def test_without_lookahead_the_input_order_holds(sites: Sites) -> None:
    # The control: the same web in input order, the long host started last.
    shorts, long, _ = await _harvest(sites, **{"run.lookahead": 0})
    started = _first_sitemap(long)
    assert all(_first_sitemap(site) < started for site in shorts)
    assert all(site.hits("/robots.txt") == 1 for site in (*shorts, long))
