"""Issue 49 item 3: discovery finds sitemaps where platforms put them when robots.txt
lists none, within the per-host probe budget (the server's log counts the requests)."""

from __future__ import annotations

import gzip
from typing import TYPE_CHECKING, Any

from harvester.crawl.probes import DEFAULT_BUDGET
from tests.integration.conftest import Reply
from tests.integration.harvesting import collect
from tests.integration.webs import urlset

if TYPE_CHECKING:
    from tests.integration.conftest import Site, Sites

NO_SITEMAP_ROBOTS = b"User-agent: *\nDisallow:\n"
# Asked once per host after discovery (policy.tdmrep, on by default): part of the cost.
TDM = "/.well-known/tdmrep.json"


async def _site(sites: Sites, host: str, routes: dict[str, Any]) -> Site:
    site = await sites.start(host, routes)
    routes.setdefault("/robots.txt", NO_SITEMAP_ROBOTS)
    return site


def _key(site: Site) -> str:
    return site.origin.removeprefix("http://")


async def test_only_wp_sitemap_is_found(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await _site(sites, "127.0.49.2", routes)
    routes["/wp-sitemap.xml"] = urlset(site.url("/hello-world/"), site.url("/about/"))
    records, hosts = await collect([site.origin])
    assert sorted(r["loc"] for r in records) == [site.url("/about/"), site.url("/hello-world/")]
    assert hosts[_key(site)]["discovery"] == f"fallback:{site.url('/wp-sitemap.xml')}"
    # The home page (read for <link rel="sitemap"> and its generator: none here), the
    # config's three locations, then the data file's first: stopped at the hit.
    paths = [h.path for h in site.log]
    assert paths == [
        "/robots.txt",
        "/",
        TDM,
        "/sitemap.xml",
        "/sitemap_index.xml",
        "/sitemap.txt",
        "/wp-sitemap.xml",
    ]


async def test_only_gzipped_sitemap_is_found(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await _site(sites, "127.0.49.3", routes)
    body = gzip.compress(urlset(site.url("/a"), site.url("/b")))
    routes["/sitemap.xml.gz"] = Reply(body, headers={"Content-Type": "application/gzip"})
    records, hosts = await collect([site.origin])
    assert sorted(r["loc"] for r in records) == [site.url("/a"), site.url("/b")]
    assert hosts[_key(site)]["discovery"] == f"fallback:{site.url('/sitemap.xml.gz')}"
    assert site.hits("/sitemap.xml.gz") == 1
    # Within the default budget: the home page and four guesses missed before it.
    looked = [h.path for h in site.log if h.path not in ("/robots.txt", TDM)]
    assert len(looked) == DEFAULT_BUDGET
    assert looked[0] == "/"


async def test_link_rel_sitemap_is_found_with_default_settings(sites: Sites) -> None:
    # A sitemap at a name no probe guesses, announced only by the home page's <link>,
    # robots.txt naming none: discovery reads the home page for it by default.
    routes: dict[str, Any] = {}
    site = await _site(sites, "127.0.49.9", routes)
    home = b'<!DOCTYPE html><html><head><title>t</title><link rel="stylesheet" href="/s.css">'
    home += b'<link rel="sitemap" type="application/xml" title="Sitemap" href="/assets/map-1.xml">'
    routes["/"] = Reply(
        home + b"</head><body><a href='/x'>x</a></body></html>",
        headers={"Content-Type": "text/html; charset=utf-8"},
    )
    routes["/assets/map-1.xml"] = urlset(site.url("/x"), site.url("/y"), site.url("/z"))
    records, hosts = await collect([site.origin])
    assert sorted(r["loc"] for r in records) == [site.url(p) for p in ("/x", "/y", "/z")]
    assert all(r["source"] == "sitemap" for r in records)
    assert hosts[_key(site)]["discovery"] == f"fallback:{site.url('/assets/map-1.xml')}"
    assert [h.path for h in site.log] == ["/robots.txt", "/", TDM, "/assets/map-1.xml"]


async def test_link_rel_sitemap_on_a_fetched_home_page_is_found(sites: Sites) -> None:
    # A sitemap at a name no probe guesses, announced only by the home page's <link>:
    # the home page is fetched because the links fallback is on, and its link goes first.
    routes: dict[str, Any] = {}
    site = await _site(sites, "127.0.49.4", routes)
    home = b'<html><head><link rel="sitemap" type="application/xml" href="/maps/all.xml">'
    routes["/"] = Reply(
        home + b"</head><body></body></html>", headers={"Content-Type": "text/html"}
    )
    routes["/maps/all.xml"] = urlset(site.url("/x"), site.url("/y"))
    records, hosts = await collect([site.origin], **{"discovery.links_fallback": 5})
    assert sorted(r["loc"] for r in records) == [site.url("/x"), site.url("/y")]
    assert all(r["source"] == "sitemap" for r in records)  # not the links walk's
    assert hosts[_key(site)]["discovery"] == f"fallback:{site.url('/maps/all.xml')}"
    assert [h.path for h in site.log] == ["/robots.txt", "/", TDM, "/maps/all.xml"]


async def test_generator_orders_the_probes(sites: Sites) -> None:
    # A WordPress home page (fetched anyway for the links fallback): WordPress's
    # locations are probed before the generic ones.
    routes: dict[str, Any] = {}
    site = await _site(sites, "127.0.49.5", routes)
    home = b'<html><head><meta name="generator" content="WordPress 6.5.2"></head></html>'
    routes["/"] = Reply(home, headers={"Content-Type": "text/html"})
    routes["/wp-sitemap.xml"] = urlset(site.url("/p"))
    records, _ = await collect([site.origin], **{"discovery.links_fallback": 5})
    assert [r["loc"] for r in records] == [site.url("/p")]
    assert [h.path for h in site.log] == [
        "/robots.txt",
        "/",
        TDM,
        "/sitemap_index.xml",
        "/wp-sitemap.xml",
    ]


async def test_a_site_with_none_costs_at_most_the_budget(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await _site(sites, "127.0.49.6", routes)
    small: dict[str, Any] = {}
    other = await _site(sites, "127.0.49.7", small)
    records, hosts = await collect([site.origin])
    assert records == []
    assert hosts[_key(site)]["discovery"] == "none"
    assert hosts[_key(site)]["failures"] == []
    probes = [h.path for h in site.log if h.path not in ("/robots.txt", TDM)]
    assert site.hits(TDM) == 1
    assert len(probes) == DEFAULT_BUDGET == len(set(probes))
    assert probes[0] == "/"  # the home page is one of the budget's requests
    # A smaller budget is a smaller cost; under 2, no home page (the one guess is kept).
    await collect([other.origin], **{"discovery.probe_budget": 2})
    assert [h.path for h in other.log] == ["/robots.txt", "/", TDM, "/sitemap.xml"]
    other.log.clear()
    await collect([other.origin], **{"discovery.probe_budget": 1})
    assert [h.path for h in other.log] == ["/robots.txt", TDM, "/sitemap.xml"]


async def test_robots_disallow_is_honoured_for_probes(sites: Sites) -> None:
    routes: dict[str, Any] = {"/robots.txt": b"User-agent: *\nDisallow: /wp-sitemap.xml\n"}
    site = await _site(sites, "127.0.49.8", routes)
    routes["/wp-sitemap.xml"] = urlset(site.url("/secret"))
    routes["/sitemap.xml.gz"] = Reply(
        gzip.compress(urlset(site.url("/open"))), headers={"Content-Type": "application/gzip"}
    )
    records, _ = await collect([site.origin])
    assert [r["loc"] for r in records] == [site.url("/open")]
    assert site.hits("/wp-sitemap.xml") == 0
