"""Limits and policies that keep what was harvested and say which limit was hit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from aiohttp import web

from tests.integration.test_end_to_end import collect, index, robots, urlset

if TYPE_CHECKING:
    from tests.integration.conftest import Sites


async def test_children_per_index_cap(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.70", routes)
    u = site.url
    routes["/robots.txt"] = robots(u("/index.xml"))
    routes["/index.xml"] = index(*(u(f"/c{i}.xml") for i in range(5)))
    for i in range(5):
        routes[f"/c{i}.xml"] = urlset(u(f"/p{i}"))
    records, hosts = await collect([site.origin], **{"limits.max_children_per_index": 3})
    assert sorted(r["loc"] for r in records) == [u(f"/p{i}") for i in range(3)]
    report = hosts[site.origin.removeprefix("http://")]
    assert report["limits_hit"] == ["max_children_per_index"]
    assert site.hits("/c3.xml") == site.hits("/c4.xml") == 0


async def test_robots_txt_over_the_cap_is_read_up_to_it_and_reported(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.71", routes)
    u = site.url
    head = f"Sitemap: {u('/a.xml')}\n".encode()
    tail = f"\nSitemap: {u('/b.xml')}\n".encode()
    routes["/robots.txt"] = head + b"#" * 2000 + tail
    routes["/a.xml"] = urlset(u("/a"))
    routes["/b.xml"] = urlset(u("/b"))
    records, hosts = await collect([site.origin], **{"fetch.max_robots_bytes": 1000})
    # Like Google: the first max_robots_bytes count, the Sitemap line beyond them does not.
    assert [r["loc"] for r in records] == [u("/a")]
    assert hosts[site.origin.removeprefix("http://")]["limits_hit"] == ["max_robots_bytes"]


async def test_redirect_to_another_host_follows_the_cross_host_policy(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    other_routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.72", routes)
    other = await sites.start("127.0.0.73", other_routes)
    other_routes["/moved.xml"] = urlset(other.url("/x"))

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPMovedPermanently(other.url("/moved.xml"))

    routes["/robots.txt"] = robots(site.url("/sitemap.xml"))
    routes["/sitemap.xml"] = moved
    records, hosts = await collect([site.origin])
    # 127.0.0.73 is neither this host, nor on its registrable domain, nor declared.
    assert records == []
    report = hosts[site.origin.removeprefix("http://")]
    assert report["cross_host"] == [other.url("/moved.xml")]
    records, _ = await collect([site.origin], **{"discovery.cross_host": "any"})
    assert [r["loc"] for r in records] == [other.url("/x")]


async def test_robots_disallow_applies_to_guesses_and_index_children(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.74", routes)
    u = site.url
    routes["/robots.txt"] = (
        b"User-agent: *\nDisallow: /private/\nSitemap: " + u("/private/listed.xml").encode()
    )
    routes["/private/listed.xml"] = index(u("/private/child.xml"), u("/public.xml"))
    routes["/private/child.xml"] = urlset(u("/secret"))
    routes["/public.xml"] = urlset(u("/page"))
    records, hosts = await collect([site.origin])
    # Listed in robots.txt: fetched although under /private/. Its child under /private/: not.
    assert [r["loc"] for r in records] == [u("/page")]
    assert site.hits("/private/child.xml") == 0
    assert hosts[site.origin.removeprefix("http://")]["robots_disallowed"] == 1


@pytest.mark.parametrize(
    ("disallowed", "used"),
    [
        pytest.param("/sitemap.txt", None, id="the-last-location"),
        pytest.param("/sitemap_index.xml", "/sitemap.txt", id="a-middle-location"),
        pytest.param("/sitemap.xml", "/sitemap_index.xml", id="the-first-location"),
    ],
)
async def test_a_disallowed_fallback_location_is_skipped_and_the_next_one_probed(
    sites: Sites, disallowed: str, used: str | None
) -> None:
    # Issue 50 item 11: a disallowed probe was fetched and used (a later location), or
    # ended all probing (the first one); it is to be skipped, counted, and the next tried.
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.75", routes)
    u = site.url
    routes["/robots.txt"] = f"User-agent: *\nDisallow: {disallowed}\n".encode()
    for path in ("/sitemap.xml", "/sitemap_index.xml", "/sitemap.txt"):
        if path in (disallowed, used):
            routes[path] = urlset(u(path + "/page"))
    records, hosts = await collect([site.origin])
    report = hosts[site.origin.removeprefix("http://")]
    assert site.hits(disallowed) == 0
    assert report["robots_disallowed"] == 1
    assert report["failures"] == []
    if used is None:
        assert records == []
        assert report["discovery"] == "none"
    else:
        assert [r["loc"] for r in records] == [u(used + "/page")]
        assert report["discovery"] == f"fallback:{u(used)}"
