"""A host's next sitemap is asked while the current one is read (issue 51, crawl/prefetch.py).

The sitemaps are an index's children or robots.txt's list. The loopback site holds each
one's answer (its first byte) until the next one is asked: a host that reads its
sitemaps one at a time would wait out every hold; one that asks the next while the
current is read is never held. Politeness stays at the host's concurrency (2 here: never
more than 2 answers pending), the order in which sitemaps are read is the frontier's (an
index met among urlsets puts back what was asked ahead, so its children still come
first), and a child that fails ahead fails as it would have.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp import web

from tests.integration.harvesting import collect
from tests.integration.webs import index, robots, urlset

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Site, Sites

# Longest a child's answer is held waiting for the next child's request. Reading ahead,
# that request comes at once; reading one at a time, it never comes while the answer is
# held (then read_timeout below fails the child, and the test with it).
HOLD = 20.0
CHILDREN = 6


def _config(**more: Any) -> dict[str, Any]:
    return {
        "politeness.default.concurrency": 2,
        "fetch.read_timeout": HOLD + 10,
        "fetch.total_timeout": HOLD + 20,
        "policy.tdmrep": False,  # (the site's requests are its sitemaps only)
        **more,
    }


class Held:
    """Child answers held until the next child is asked (or HOLD passes)."""

    def __init__(self, site: Site, names: list[str]) -> None:
        self.site = site
        self.names = names
        self.asked = {name: asyncio.Event() for name in names}
        self.pending: set[str] = set()
        self.overlapped = 0  # children asked while another child's answer was pending
        self.most = 0  # child answers pending at once, at most

    def route(self, name: str, body: bytes) -> Callable[[web.Request], Awaitable[web.Response]]:
        position = self.names.index(name)
        following = self.names[position + 1] if position + 1 < len(self.names) else None

        async def answer(request: web.Request) -> web.Response:
            self.overlapped += bool(self.pending)
            self.pending.add(name)
            self.most = max(self.most, len(self.pending))
            self.asked[name].set()
            try:
                # The first child is never asked ahead (no sibling read yet), the last
                # has no next: neither is held.
                if position > 0 and following is not None:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(HOLD):
                            await self.asked[following].wait()
                return web.Response(body=body, content_type="application/xml")
            finally:
                self.pending.discard(name)

        return answer


@pytest.mark.parametrize(("listed_by", "host"), [("index", "127.0.0.91"), ("robots", "127.0.0.96")])
async def test_the_next_sitemap_is_asked_while_the_current_one_is_read(
    sites: Sites, listed_by: str, host: str
) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)
    u = site.url
    names = [f"c{i}" for i in range(CHILDREN)]
    held = Held(site, names)
    if listed_by == "index":
        routes["/robots.txt"] = robots(u("/index.xml"))
        routes["/index.xml"] = index(*(u(f"/{name}.xml") for name in names))
    else:
        routes["/robots.txt"] = robots(*(u(f"/{name}.xml") for name in names))
    for name in names:
        routes[f"/{name}.xml"] = held.route(name, urlset(*(u(f"/{name}/{j}") for j in range(3))))

    records, hosts = await collect([site.origin], **_config())

    expected = sorted(u(f"/{name}/{j}") for name in names for j in range(3))
    assert sorted(r["loc"] for r in records) == expected
    report = hosts[site.origin.removeprefix("http://")]
    assert report["sitemaps_found"] == CHILDREN + (listed_by == "index")
    assert report["sitemaps_failed"] == 0
    # c2..c5 were each asked while the one before was pending (c1 while c0 was read: no).
    assert held.overlapped == CHILDREN - 2
    assert held.most == 2  # the host's concurrency, never more
    assert all(site.hits(f"/{name}.xml") == 1 for name in names)  # each asked once


def _nested(site: Site, routes: dict[str, Any]) -> None:
    # root → leaf1 (2026), sub (2025, an index), leaf2 (2020); sub → s1, s2 (2024, 2023).
    # Newest first: leaf1, sub, then sub's children (newer than leaf2), then leaf2. When
    # sub is asked, leaf1 (a urlset) vouches for leaf2, which is asked ahead; sub turns
    # out to be an index, so leaf2 goes back to its place after sub's children.
    u = site.url
    routes["/robots.txt"] = robots(u("/root.xml"))
    routes["/root.xml"] = index(
        (u("/leaf1.xml"), "2026-01-01"),
        (u("/sub.xml"), "2025-01-01"),
        (u("/leaf2.xml"), "2020-01-01"),
    )
    routes["/sub.xml"] = index((u("/s1.xml"), "2024-01-01"), (u("/s2.xml"), "2023-01-01"))
    for name in ("leaf1", "leaf2", "s1", "s2"):
        routes[f"/{name}.xml"] = urlset(u(f"/{name}/page"))


async def test_an_index_among_urlsets_keeps_the_frontiers_order(sites: Sites) -> None:
    orders = []
    for prefetch, host in ((False, "127.0.0.92"), (True, "127.0.0.93")):
        routes: dict[str, Any] = {}
        site = await sites.start(host, routes)
        _nested(site, routes)
        records, hosts = await collect([site.origin], **_config(**{"fetch.prefetch": prefetch}))
        orders.append([r["loc"].removeprefix(site.origin) for r in records])
        report = hosts[site.origin.removeprefix("http://")]
        assert (report["sitemaps_found"], report["sitemaps_failed"]) == (6, 0)
    assert orders[0] == ["/leaf1/page", "/s1/page", "/s2/page", "/leaf2/page"]
    assert orders[1] == orders[0]


async def test_a_child_failing_ahead_fails_as_it_would_have(sites: Sites) -> None:
    reports = []
    for prefetch, host in ((False, "127.0.0.94"), (True, "127.0.0.95")):
        routes: dict[str, Any] = {}
        site = await sites.start(host, routes)
        u = site.url
        routes["/robots.txt"] = robots(u("/index.xml"))
        routes["/index.xml"] = index(*(u(f"/c{i}.xml") for i in range(4)))
        for i in (0, 1, 3):
            routes[f"/c{i}.xml"] = urlset(u(f"/c{i}/page"))
        # /c2.xml: no route, a 404 (asked ahead while c1 is read)
        records, hosts = await collect([site.origin], **_config(**{"fetch.prefetch": prefetch}))
        assert sorted(r["loc"].removeprefix(site.origin) for r in records) == [
            "/c0/page",
            "/c1/page",
            "/c3/page",
        ]
        report = hosts[site.origin.removeprefix("http://")]
        failures = [{**f, "url": f["url"].removeprefix(site.origin)} for f in report["failures"]]
        reports.append(
            {k: report[k] for k in ("sitemaps_found", "sitemaps_failed")} | {"failures": failures}
        )
    assert reports[0]["sitemaps_failed"] == 1
    assert reports[1] == reports[0]
