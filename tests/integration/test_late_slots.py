"""Issue 51 on loopback: many hosts that fail first contact wait out their late attempts
side by side, not a fixed few at a time.

``HOSTS`` sites answer robots.txt only once every one of them has a late attempt
waiting on it (a barrier in the servers, capped at ``CAP`` seconds): with
``fetch.late_slots`` at least ``HOSTS`` every late attempt is in flight at once, the
barrier opens and every site is found; with fewer slots the barrier never fills,
the sites answer at the cap, and the count of late attempts seen together says how
many ran side by side. The run's wall is never asserted.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from aiohttp import web

from harvester.run.late import LatePool, late_slots
from tests.integration.conftest import fast_config
from tests.integration.harvesting import collect
from tests.integration.webs import robots, urlset

if TYPE_CHECKING:
    from tests.integration.conftest import Sites

HOSTS = 80  # more than the 64 late slots a worker had before fetch.late_slots
CAP = 15.0  # seconds a late request waits for the barrier before answering anyway
SMALL = {
    "fetch.connect_timeout": 1.0,
    "fetch.first_byte_timeout": 1.0,
    "fetch.read_timeout": 1.0,
    "fetch.late_first_byte_timeout": 30.0,
    "fetch.total_timeout": 40.0,
    "run.hosts_in_flight": HOSTS,
}


class Barrier:
    """Holds every site's second robots.txt request until ``HOSTS`` are held at once."""

    def __init__(self, cap: float = CAP) -> None:
        self.cap = cap
        self.full = asyncio.Event()
        self.held = 0
        self.most = 0  # late requests held at once, at most

    async def hold(self) -> None:
        self.held += 1
        self.most = max(self.most, self.held)
        if self.held >= HOSTS:
            self.full.set()
        try:
            await asyncio.wait_for(self.full.wait(), self.cap)
        except TimeoutError:
            pass
        finally:
            self.held -= 1


async def start_sites(sites: Sites, barrier: Barrier) -> list[str]:
    """``HOSTS`` sites whose first robots.txt request never answers in time and whose
    second waits at ``barrier``; returns their origins."""
    origins = []
    for i in range(HOSTS):
        routes: dict[str, Any] = {}
        site = await sites.start(f"127.0.54.{i + 1}", routes)
        seen = {"robots": 0}
        body = robots(site.url("/sitemap.xml"))

        async def robots_txt(
            request: web.Request, seen: dict[str, int] = seen, body: bytes = body
        ) -> web.StreamResponse:
            seen["robots"] += 1
            if seen["robots"] == 1:  # the fast first contact: silent past its timeout
                await asyncio.sleep(3.0)
            else:
                await barrier.hold()
            return web.Response(body=body, content_type="text/plain")

        routes["/robots.txt"] = robots_txt
        routes["/sitemap.xml"] = urlset(site.url("/page"))
        origins.append(site.origin)
    return origins


async def test_late_attempts_of_many_hosts_wait_side_by_side(sites: Sites) -> None:
    barrier = Barrier()
    origins = await start_sites(sites, barrier)
    records, hosts = await collect(origins, **SMALL, **{"fetch.late_slots": HOSTS})
    assert barrier.most == HOSTS  # every late attempt was in flight at once
    assert len(records) == HOSTS
    assert all(report["recovered_late"] for report in hosts.values())


async def test_fewer_late_slots_hold_the_rest_back(sites: Sites) -> None:
    barrier = Barrier(cap=1.0)
    origins = await start_sites(sites, barrier)
    records, _ = await collect(origins, **SMALL, **{"fetch.late_slots": HOSTS // 2})
    assert 0 < barrier.most <= HOSTS // 2  # the bound holds: the rest waited for a slot
    assert len(records) == HOSTS  # and still found, each at the cap


def test_the_default_slots_follow_the_descriptor_limit() -> None:
    pool = LatePool(fast_config(**{"fetch.late_first_byte_timeout": 45.0}))
    assert pool.slots == late_slots()
    assert late_slots(20_000) == 512  # a 20,000-domain run's hundreds of dead hosts fit
    assert late_slots(1_024) == 64
