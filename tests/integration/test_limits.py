"""Limits and policies that keep what was harvested and say which limit was hit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from aiohttp import web

from tests.integration.harvesting import collect
from tests.integration.webs import index, robots, urlset

if TYPE_CHECKING:
    from collections.abc import Sequence

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


# -- the caps choose the newest (issue 50 item 10) ---------------------------------------

# An index's children, in document order: (name, lastmod).
FIVE = [("c2021", "2021-06-01"), ("c2024", "2024-06-01"), ("c2019", "2019-06-01")]
FIVE += [("c2025", "2025-06-01"), ("c2023", "2023-06-01")]


async def _index_site(sites: Sites, host: str, children: Sequence[tuple[str, str | None]]) -> Any:
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)
    u = site.url
    routes["/robots.txt"] = robots(u("/index.xml"))
    routes["/index.xml"] = index(
        *((u(f"/{n}.xml"), mod) if mod else u(f"/{n}.xml") for n, mod in children)
    )
    for name, _ in children:
        routes[f"/{name}.xml"] = urlset(u(f"/{name}/page"))
    return site


def _children_read(site: Any, records: list[dict[str, Any]]) -> list[str]:
    """The children read, in the order they were read (their records' order: a host reads
    one at a time, though it may ask for the next one while it reads one, so the order
    the server sees requests in is not it), each asked for once."""
    names = [r["loc"].removeprefix(site.origin).split("/")[1] for r in records]
    assert all(site.hits(f"/{name}.xml") == 1 for name in names)
    return list(dict.fromkeys(names))


@pytest.mark.parametrize(
    ("limits", "read", "limit"),
    [
        pytest.param({}, ["c2025", "c2024", "c2023", "c2021", "c2019"], None, id="no-cap"),
        # The index itself is one of the files of max_sitemaps_per_host.
        pytest.param(
            {"limits.max_sitemaps_per_host": 3},
            ["c2025", "c2024"],
            "max_sitemaps_per_host",
            id="max-sitemaps-3",
        ),
        pytest.param(
            {"limits.max_sitemaps_per_host": 4},
            ["c2025", "c2024", "c2023"],
            "max_sitemaps_per_host",
            id="max-sitemaps-4",
        ),
        pytest.param(
            {"limits.max_children_per_index": 2},
            ["c2025", "c2024"],
            "max_children_per_index",
            id="children-per-index-2",
        ),
    ],
)
async def test_a_capped_index_reads_its_newest_children(
    sites: Sites, limits: dict[str, Any], read: list[str], limit: str | None
) -> None:
    site = await _index_site(sites, "127.0.0.76", FIVE)
    records, hosts = await collect([site.origin], **limits)
    assert _children_read(site, records) == read
    assert sorted(r["loc"] for r in records) == sorted(site.url(f"/{n}/page") for n in read)
    report = hosts[site.origin.removeprefix("http://")]
    assert report["sitemaps_listed"] == 6  # the index and its five children
    assert report["sitemaps_left_out"] == 5 - len(read)
    assert report["sitemaps_found"] == 1 + len(read)
    assert report["limits_hit"] == ([limit] if limit else [])


async def test_undated_children_come_after_dated_ones_under_the_cap(sites: Sites) -> None:
    children = [("cu1", None), ("c2021", "2021-06-01"), ("cu2", None), ("c2024", "2024-06-01")]
    site = await _index_site(sites, "127.0.0.77", children)
    records, hosts = await collect([site.origin], **{"limits.max_sitemaps_per_host": 4})
    assert _children_read(site, records) == ["c2024", "c2021", "cu1"]
    assert hosts[site.origin.removeprefix("http://")]["sitemaps_left_out"] == 1


async def test_children_of_a_later_index_take_the_place_of_older_queued_ones(
    sites: Sites,
) -> None:
    # root → a (2020) and b (2022); b → b1 (2023), b2 (2019); a → a1 (2026), a2 (2018).
    # Five files: root, b, b1 (the newest queued), a; then a1 is newer than b2, still
    # queued, and takes its place; a2 is older than anything left.
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.78", routes)
    u = site.url
    routes["/robots.txt"] = robots(u("/root.xml"))
    routes["/root.xml"] = index((u("/a.xml"), "2020-01-01"), (u("/b.xml"), "2022-01-01"))
    routes["/b.xml"] = index((u("/b1.xml"), "2023-01-01"), (u("/b2.xml"), "2019-01-01"))
    routes["/a.xml"] = index((u("/a1.xml"), "2026-01-01"), (u("/a2.xml"), "2018-01-01"))
    for name in ("a1", "a2", "b1", "b2"):
        routes[f"/{name}.xml"] = urlset(u(f"/{name}/page"))
    # The sitemaps' order is the point here: tdmrep.json (not a sitemap) is not asked.
    cfg = {"limits.max_sitemaps_per_host": 5, "policy.tdmrep": False}
    _, hosts = await collect([site.origin], **cfg)
    paths = [h.path for h in sorted(site.log, key=lambda h: h.start)]
    assert paths == ["/robots.txt", "/root.xml", "/b.xml", "/b1.xml", "/a.xml", "/a1.xml"]
    report = hosts[site.origin.removeprefix("http://")]
    assert report["sitemaps_listed"] == 7
    assert report["sitemaps_left_out"] == 2  # b2 (taken out of the queue) and a2
    assert report["sitemaps_found"] == 5
    assert report["limits_hit"] == ["max_sitemaps_per_host"]
