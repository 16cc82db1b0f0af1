"""Issue 51, item 3 at scale: a long chain LAST in an input of thousands starts early.

``SHORT`` short hosts (one sitemap each, no Crawl-delay), then one long-chain host
(robots.txt Crawl-delay, ``FILES`` sitemaps), harvested with the default lookahead and a
few hosts in flight (the admission at its ceiling, as in a run that is busy). The long
host's robots.txt must be read by a scout long before the front of the window reaches
it, so its sitemaps start before nearly every short host's; with a window smaller than
the input and probes in input order only (main before this file) about ``SHORT - 1024``
short hosts came first. Asserted: that order (counted at the servers, no wall-clock
bound), robots.txt asked once per host, every URL found.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import TYPE_CHECKING

import pytest
from aiohttp import web

from tests.integration.harvesting import collect
from tests.integration.webs import robots, urlset

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

SHORT = 2000  # more than the old default window (1024 seeds)
DELAY = 0.3  # the long host's Crawl-delay
FILES = 5
LONG_HOST = "127.0.9.1"


def _short_address(i: int) -> str:
    return f"127.0.{10 + i // 250}.{i % 250 + 1}"


class Web:
    """One application serving every host (by the Host header), logging what it was asked."""

    def __init__(self) -> None:
        self.ports: dict[str, int] = {}  # address -> port
        self.first_sitemap: dict[str, float] = {}  # host key -> first sitemap request
        self.robots: Counter[str] = Counter()

    async def handle(self, request: web.Request) -> web.Response:
        host = request.host
        if request.path == "/robots.txt":
            self.robots[host] += 1
            files = [f"http://{host}/s{i}.xml" for i in range(FILES)]
            if host.startswith(f"{LONG_HOST}:"):
                body = f"User-agent: *\nCrawl-delay: {DELAY}\n".encode() + robots(*files)
            else:
                body = robots(f"http://{host}/s0.xml")
            return web.Response(body=body, content_type="text/plain")
        if request.path.startswith("/s") and request.path.endswith(".xml"):
            self.first_sitemap.setdefault(host, time.monotonic())
            return web.Response(body=urlset(f"http://{host}{request.path}.page"))
        return web.Response(status=404, text="not found")


@pytest.fixture
async def served() -> AsyncIterator[Web]:
    site = Web()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", site.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        for address in [*map(_short_address, range(SHORT)), LONG_HOST]:
            tcp = web.TCPSite(runner, address, 0)
            await tcp.start()
            server = tcp._server
            assert isinstance(server, asyncio.base_events.Server)
            site.ports[address] = server.sockets[0].getsockname()[1]
        yield site
    finally:
        await runner.cleanup()


async def test_a_long_chain_last_among_thousands_starts_among_the_first(served: Web) -> None:
    origins = [f"http://{address}:{port}" for address, port in served.ports.items()]
    assert origins[-1].startswith(f"http://{LONG_HOST}:")  # the long host LAST
    records, hosts = await collect(
        origins,
        **{
            "run.hosts_in_flight": 16,
            "policy.tdmrep": False,
            # The servers share the test's loop with thousands of hosts: on a loaded machine
            # a turn of it can outlast the suite's 2 s timeouts.
            "fetch.connect_timeout": 20.0,
            "fetch.read_timeout": 20.0,
            "fetch.total_timeout": 60.0,
        },
    )
    long_key = f"{LONG_HOST}:{served.ports[LONG_HOST]}"
    started = served.first_sitemap[long_key]
    before = sum(1 for host, at in served.first_sitemap.items() if at < started)
    # Scouts start once the admission leaves a probe untaken (a few dozen hosts in); the
    # long host is the newest seed held, so the first scout reads its robots.txt.
    assert before < SHORT // 4, before  # (about 100 here; 2000 in input order)
    assert set(served.robots.values()) == {1}  # the probe's request is the host's own
    assert hosts[long_key]["urls"] == FILES
    assert len(records) == SHORT + FILES, len(records)
