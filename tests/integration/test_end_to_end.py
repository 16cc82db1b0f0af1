"""The harvest pipeline against real aiohttp servers on loopback addresses (one per host)."""

from __future__ import annotations

import asyncio
import gzip
from typing import TYPE_CHECKING, Any

from harvester.run.pipeline import Kept, aiter_seeds, run_shard
from tests.integration.conftest import LoopbackResolver, Reply, fast_config, free_port
from tests.integration.harvesting import collect
from tests.integration.webs import index, robots, site_with_tree, urlset

if TYPE_CHECKING:
    from tests.integration.conftest import Site, Sites

# Asked once per host after discovery (policy.tdmrep, on by default): part of each sequence.
TDM = "/.well-known/tdmrep.json"


async def test_robots_index_children_gzip_and_a_failing_child(sites: Sites) -> None:
    site = await site_with_tree(sites)
    records, hosts = await collect([site.origin])
    u = site.url
    # Newest child first (b.xml.gz, 2024-06), then a.xml; /p/2 is listed twice, emitted once.
    assert [r["loc"] for r in records] == [u("/p/3"), u("/p/2"), u("/p/1")]
    first = records[2]
    assert first == {
        "loc": u("/p/1"),
        "url": u("/p/1"),
        "host": f"127.0.0.2:{site.port}",
        "sitemap": u("/a.xml"),
        "source": "sitemap",
        "lastmod": "2024-01-01T08:00:00Z",
        "changefreq": None,
        "priority": None,
        "robots": "allowed",  # policy.verdicts (on by default): robots.txt allows it
    }
    report = hosts[f"127.0.0.2:{site.port}"]
    assert report["urls"] == 3
    assert report["duplicates"] == 1
    assert report["discovery"] == "robots"
    assert report["sitemaps_fetched"] == 3
    assert report["sitemaps_failed"] == 1
    (failure,) = report["failures"]
    assert failure["class"] == "http_status"
    assert failure["status"] == 404
    assert failure["url"] == u("/missing.xml")
    assert site.hits("/missing.xml") == 1  # 404 is not retried


async def test_fallback_when_robots_lists_no_sitemap(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.3", routes)
    routes.update(
        {
            "/robots.txt": b"User-agent: *\nDisallow:\n",
            # /sitemap.xml is an HTML soft-404 page, /sitemap_index.xml a 404: both misses.
            "/sitemap.xml": Reply(b"<!DOCTYPE html><html><body>nope</body></html>"),
            "/sitemap.txt": Reply(f"{site.url('/t/1')}\n{site.url('/t/2')}\n".encode()),
        }
    )
    records, hosts = await collect([site.origin])
    assert [r["loc"] for r in records] == [site.url("/t/1"), site.url("/t/2")]
    report = hosts[site.origin.removeprefix("http://")]
    assert report["discovery"] == f"fallback:{site.url('/sitemap.txt')}"
    assert report["failures"] == []
    assert [h.path for h in site.log] == [
        "/robots.txt",
        "/",  # issue 49: the home page, read for <link rel="sitemap"> (a 404 here)
        TDM,
        "/sitemap.xml",
        "/sitemap_index.xml",
        "/sitemap.txt",
    ]


async def test_fallback_goes_on_past_junk_text(sites: Sites) -> None:
    # Issue 30 item 4: /sitemap.xml answers 200 with plain text that lists no URL (an
    # error message): not a sitemap, so discovery goes on to the next fallback location.
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.3", routes)
    routes.update(
        {
            "/robots.txt": b"User-agent: *\nDisallow:\n",
            "/sitemap.xml": Reply(
                b"Service Unavailable\nPlease try again later.\n",
                headers={"Content-Type": "text/plain"},
            ),
            "/sitemap_index.xml": index(site.url("/a.xml")),
            "/a.xml": urlset(site.url("/p/1"), site.url("/p/2")),
        }
    )
    records, hosts = await collect([site.origin])
    assert [r["loc"] for r in records] == [site.url("/p/1"), site.url("/p/2")]
    report = hosts[site.origin.removeprefix("http://")]
    assert report["discovery"] == f"fallback:{site.url('/sitemap_index.xml')}"
    assert report["failures"] == []
    assert [h.path for h in site.log] == [
        "/robots.txt",
        "/",
        TDM,
        "/sitemap.xml",
        "/sitemap_index.xml",
        "/a.xml",
    ]


async def test_fallback_stops_at_first_hit_and_robots_404(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.4", routes)
    routes["/sitemap.xml"] = urlset(site.url("/x"))
    records, hosts = await collect([site.origin])
    assert [r["loc"] for r in records] == [site.url("/x")]
    assert [h.path for h in site.log] == ["/robots.txt", "/", TDM, "/sitemap.xml"]
    assert hosts[site.origin.removeprefix("http://")]["robots_status"] == 404


async def test_index_loops_and_shared_children_are_fetched_once(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.5", routes)
    u = site.url
    routes.update(
        {
            "/robots.txt": robots(u("/root.xml"), u("/other.xml")),
            "/root.xml": index(u("/root.xml"), u("/other.xml"), u("/leaf.xml")),
            "/other.xml": index(u("/root.xml"), u("/leaf.xml"), u("/leaf.xml?x=1")),
            "/leaf.xml": urlset(u("/1")),
            "/leaf.xml?x=1": urlset(u("/1"), u("/2")),
        }
    )
    records, _ = await collect([site.origin])
    assert sorted(r["loc"] for r in records) == [u("/1"), u("/2")]
    for path in ("/root.xml", "/other.xml", "/leaf.xml", "/leaf.xml?x=1"):
        assert site.hits(path) == 1, path


async def test_depth_cap_is_reported(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.6", routes)
    u = site.url
    routes["/robots.txt"] = robots(u("/i0.xml"))
    for depth in range(10):
        routes[f"/i{depth}.xml"] = index(u(f"/i{depth + 1}.xml"))
    routes["/i10.xml"] = urlset(u("/deep"))
    _, hosts = await collect([site.origin], **{"limits.max_depth": 3})
    report = hosts[site.origin.removeprefix("http://")]
    assert "max_depth" in report["limits_hit"]
    assert site.hits("/i3.xml") == 1
    assert site.hits("/i4.xml") == 0


async def test_dead_host_and_dns_failure_do_not_stop_the_run(sites: Sites) -> None:
    good = await site_with_tree(sites, "127.0.0.7")
    dead = f"http://127.0.0.8:{free_port('127.0.0.8')}"
    resolver = LoopbackResolver({})  # every name fails to resolve
    records, hosts = await collect(
        [dead, "http://no-such-host.test", good.origin], resolver=resolver
    )
    assert len(records) == 3
    dead_report = hosts[dead.removeprefix("http://")]
    assert dead_report["urls"] == 0
    assert [f["class"] for f in dead_report["failures"]] == ["connect"]
    dns_report = hosts["no-such-host.test"]
    assert [f["class"] for f in dns_report["failures"]] == ["dns"]
    assert resolver.queries == ["no-such-host.test"] * len(resolver.queries)


async def test_cross_host_child_policy(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    other_routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.9", routes)
    other = await sites.start("127.0.0.10", other_routes)
    other_routes["/declared.xml"] = urlset(other.url("/d"))
    other_routes["/undeclared.xml"] = urlset(other.url("/u"))
    routes["/robots.txt"] = robots(site.url("/index.xml"), other.url("/declared.xml"))
    routes["/index.xml"] = index(other.url("/undeclared.xml"))
    records, hosts = await collect([site.origin])
    # Declared in robots.txt: followed (cross-submission). Only in an index: skipped, reported.
    assert [r["loc"] for r in records] == [other.url("/d")]
    assert records[0]["host"] == site.origin.removeprefix("http://")
    report = hosts[site.origin.removeprefix("http://")]
    assert report["cross_host"] == [other.url("/undeclared.xml")]
    assert other.hits("/undeclared.xml") == 0


async def test_sitemap_seed_skips_discovery(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.11", routes)
    routes["/deep/sm.xml"] = urlset(site.url("/a"))
    records, _ = await collect([site.url("/deep/sm.xml")])
    assert [r["loc"] for r in records] == [site.url("/a")]
    # No robots.txt; tdmrep.json after the host's first answer (never its first contact).
    assert [h.path for h in site.log] == ["/deep/sm.xml", TDM]


async def test_broken_child_keeps_entries_before_the_fault(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.12", routes)
    u = site.url
    whole = gzip.compress(urlset(*(u(f"/{i}") for i in range(3000))))
    routes["/robots.txt"] = robots(u("/cut.xml.gz"))
    routes["/cut.xml.gz"] = Reply(whole[: len(whole) // 2])
    records, hosts = await collect([site.origin])
    assert 0 < len(records) < 3000
    report = hosts[site.origin.removeprefix("http://")]
    assert [f["class"] for f in report["failures"]] == ["bad_gzip"]
    assert report["urls"] == len(records)


async def test_equivalent_urls_count_once_and_loc_stays_as_published(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.13", routes)
    u = site.url
    published = [
        u("/product/1?id=5&color=red"),
        u("/product/1?utm_source=x&color=red&id=5"),  # tracking parameter, other order
        u("/product/1?id=5&color=red#reviews"),  # a fragment
        u("/product/1?page=2"),  # content-bearing: a different page
        u("/#!/product/5"),  # a hash-bang route: kept
    ]
    routes["/robots.txt"] = robots(u("/s.xml"))
    routes["/s.xml"] = urlset(*(p.replace("&", "&amp;") for p in published))
    records, hosts = await collect([site.origin])
    assert [r["loc"] for r in records] == [published[0], published[3], published[4]]
    assert [r["url"] for r in records] == [
        u("/product/1?color=red&id=5"),
        u("/product/1?page=2"),
        u("/#!/product/5"),
    ]
    assert hosts[site.origin.removeprefix("http://")]["duplicates"] == 2


async def test_cross_host_duplicates_are_reported_not_merged(sites: Sites) -> None:
    shared = "http://shared.example/page"
    first_routes: dict[str, Any] = {}
    second_routes: dict[str, Any] = {}
    first = await sites.start("127.0.0.14", first_routes)
    second = await sites.start("127.0.0.15", second_routes)
    first_routes["/sitemap.xml"] = urlset(shared, first.url("/own"))
    second_routes["/sitemap.xml"] = urlset(second.url("/own"), shared)
    # One host at a time, so "first" is deterministic.
    records, hosts = await collect(
        [first.url("/sitemap.xml"), second.url("/sitemap.xml")], **{"run.hosts_in_flight": 1}
    )
    assert [r["loc"] for r in records].count(shared) == 2  # both emitted
    assert hosts[first.origin.removeprefix("http://")]["cross_host_duplicates"] == 0
    assert hosts[second.origin.removeprefix("http://")]["cross_host_duplicates"] == 1


async def test_hosts_wait_unparsed_while_the_output_is_behind(sites: Sites) -> None:
    # run_shard's ``ready`` (the shards worker's backpressure): a closed gate holds
    # every body chunk before it is parsed, and opening it loses nothing.
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.2", routes)
    locs = [site.url(f"/page/{i:05d}-{'x' * 60}") for i in range(3000)]  # ~300 KB: chunks
    routes.update({"/robots.txt": robots(site.url("/big.xml")), "/big.xml": urlset(*locs)})
    gate, reached = asyncio.Event(), asyncio.Event()
    waits = 0

    async def ready() -> None:
        nonlocal waits
        waits += 1
        reached.set()
        await gate.wait()

    out = Kept()
    task = asyncio.create_task(
        run_shard(aiter_seeds([site.origin]), fast_config(), out, ready=ready)
    )
    await asyncio.wait_for(reached.wait(), 10)
    for _ in range(50):  # loop turns, no wall clock: the body may arrive, not be parsed
        await asyncio.sleep(0)
    assert out.batches == []
    assert waits == 1
    gate.set()
    await asyncio.wait_for(task, 30)
    assert [r["loc"] for b in out.batches for r in b.records] == locs
    assert waits > 1  # once per chunk, not once per file
    assert out.hosts[0].report["urls"] == 3000
    assert out.hosts[0].report["failures"] == []


async def test_page_locs_on_another_host_are_emitted_and_counted(sites: Sites) -> None:
    # The protocol's same-host rule: a sitemap lists pages of its own host, or of the
    # host whose robots.txt declared it (cross-submission). Others are still emitted,
    # and counted in the host report with a few examples (issue 30 item 11).
    routes: dict[str, Any] = {}
    cdn_routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.135", routes)
    cdn = await sites.start("127.0.0.136", cdn_routes)
    foreign = [f"http://elsewhere.test/f{i}" for i in range(7)]
    routes["/robots.txt"] = robots(site.url("/s.xml"), cdn.url("/x.xml"))
    routes["/s.xml"] = urlset(site.url("/p1"), *foreign[:3], site.url("/p2"), *foreign[3:])
    # On the CDN, declared by the host's robots.txt: its pages and the CDN's own are at home.
    cdn_routes["/x.xml"] = urlset(site.url("/q1"), cdn.url("/q2"))
    records, hosts = await collect([site.origin])
    assert {r["loc"] for r in records} == {
        site.url("/p1"),
        site.url("/p2"),
        site.url("/q1"),
        cdn.url("/q2"),
        *foreign,
    }
    report = hosts[site.origin.removeprefix("http://")]
    assert report["foreign_locs"] == 7
    assert report["foreign_loc_examples"] == foreign[:5]


async def _no_sitemap_site(sites: Sites, host: str, miss: Reply, last: Reply | None = None) -> Site:
    """robots.txt without a Sitemap: line; every fallback location answers ``miss``
    (the last one, /sitemap.txt, ``last`` if given)."""
    routes: dict[str, Any] = {"/robots.txt": b"User-agent: *\nDisallow:\n"}
    for path in ("/sitemap.xml", "/sitemap_index.xml", "/sitemap.txt"):
        routes[path] = miss
    if last is not None:
        routes["/sitemap.txt"] = last
    return await sites.start(host, routes)


NOT_FOUND = Reply(b"not found", status=404)
SOFT_404 = Reply(b"<!DOCTYPE html><html><body>nothing here</body></html>")


async def test_no_sitemap_anywhere_is_none_whether_404_or_soft_404(sites: Sites) -> None:
    # A site with no sitemap is no failed host: every probe a 404 (the last one too) reads
    # the same as every probe an HTML page, discovery "none" and no failure.
    found = await _no_sitemap_site(sites, "127.0.0.140", NOT_FOUND)
    soft = await _no_sitemap_site(sites, "127.0.0.141", SOFT_404)
    records, hosts = await collect([found.origin, soft.origin])
    assert records == []
    for site in (found, soft):
        report = hosts[site.origin.removeprefix("http://")]
        assert report["discovery"] == "none", site.host
        assert (report["failures"], report["failures_total"]) == ([], 0), site.host
        assert (report["urls"], report["sitemaps_failed"]) == (0, 0), site.host
        assert [h.path for h in site.log] == [
            "/robots.txt",
            "/",  # issue 49: the home page is one of the budget's 6 requests
            TDM,
            "/sitemap.xml",
            "/sitemap_index.xml",
            "/sitemap.txt",
            "/wp-sitemap.xml",  # issue 49: the probes past fallback_paths
            "/sitemap.xml.gz",
        ]


async def test_410_and_403_probes_are_misses_too(sites: Sites) -> None:
    # "Not there" in other words (and robots.txt a 404 as well): still no failure.
    routes: dict[str, Any] = {"/robots.txt": NOT_FOUND}
    site = await sites.start("127.0.0.142", routes)
    routes.update(
        {
            "/sitemap.xml": Reply(status=403),
            "/sitemap_index.xml": Reply(status=410),
            "/sitemap.txt": Reply(status=410),
        }
    )
    _, hosts = await collect([site.origin])
    report = hosts[site.origin.removeprefix("http://")]
    assert (report["discovery"], report["failures"], report["robots_status"]) == ("none", [], 404)


async def test_a_5xx_probe_and_a_declared_404_stay_failures(sites: Sites) -> None:
    # Only "not there" is a miss: a server error on a guess, or a sitemap the site itself
    # declared in robots.txt that 404s, is a failure of the host as before.
    broken = await _no_sitemap_site(sites, "127.0.0.143", Reply(b"oops", status=500))
    declared_routes: dict[str, Any] = {}
    declared = await sites.start("127.0.0.144", declared_routes)
    declared_routes["/robots.txt"] = robots(declared.url("/sitemap.xml"))
    declared_routes["/sitemap.xml"] = NOT_FOUND
    _, hosts = await collect([broken.origin, declared.origin])
    broken_report = hosts[broken.origin.removeprefix("http://")]
    assert [(f["class"], f["status"], f["url"]) for f in broken_report["failures"]] == [
        ("http_status", 500, broken.url("/sitemap.xml"))
    ]
    assert broken.hits("/sitemap_index.xml") == 0  # a failure ends the probes
    declared_report = hosts[declared.origin.removeprefix("http://")]
    assert declared_report["discovery"] == "robots"
    assert [(f["class"], f["status"]) for f in declared_report["failures"]] == [
        ("http_status", 404)
    ]


async def test_a_busy_probe_is_a_failure_not_a_miss(sites: Sites) -> None:
    # A 429 (retried, then given up) says the host is busy, not that nothing is there: on
    # any probe it is a failure, and no more is guessed; one that says "not today" (a
    # Retry-After beyond fetch.retry_after_max) defers the host too.
    first = await _no_sitemap_site(sites, "127.0.0.145", Reply(status=429))
    last = await _no_sitemap_site(sites, "127.0.0.146", NOT_FOUND, last=Reply(status=429))
    later = await _no_sitemap_site(
        sites, "127.0.0.147", NOT_FOUND, last=Reply(status=429, headers={"Retry-After": "86400"})
    )
    _, hosts = await collect([first.origin, last.origin, later.origin])
    for site, path in ((first, "/sitemap.xml"), (last, "/sitemap.txt"), (later, "/sitemap.txt")):
        report = hosts[site.origin.removeprefix("http://")]
        assert [(f["class"], f["status"], f["url"]) for f in report["failures"]] == [
            ("http_status", 429, site.url(path))
        ], site.host
        assert report["discovery"] == "none"
    assert first.hits("/sitemap_index.xml") == 0
    assert hosts[last.origin.removeprefix("http://")]["deferred"] is None
    assert hosts[later.origin.removeprefix("http://")]["deferred"] is not None
