"""A bare domain whose robots.txt redirects to its ``www.`` host (issue 29 item "www").

The apex ``example.test`` answers its robots.txt with a 301 to
``www.example.test``, whose robots.txt lists an index on www with children on
www (and one on an unrelated host). ``.test`` is on no public-suffix list, so
the registrable domain of each name is the whole name: only the robots.txt
redirect says that www is the site's own host. Names resolve through
``LoopbackResolver`` (no DNS): the apex to 127.0.0.150, www to 127.0.0.151,
``other.test`` to 127.0.0.152.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console

from harvester.cli.tree import host_tree
from harvester.run.shards import run_job
from harvester.view.tree import render_tree, tree_data
from tests.integration.conftest import LoopbackResolver, Reply, fast_config
from tests.integration.harvesting import assert_paced, collect
from tests.integration.webs import index, robots, urlset

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.conftest import Site, Sites


@dataclass
class WwwSite:
    apex: Site
    www: Site
    other: Site
    resolver: LoopbackResolver
    www_routes: dict[str, Any]

    @property
    def seed(self) -> str:
        return f"http://example.test:{self.apex.port}"

    @property
    def host(self) -> str:
        """The harvested host's report key (the seed's)."""
        return f"example.test:{self.apex.port}"

    def www_url(self, path: str) -> str:
        return f"http://www.example.test:{self.www.port}{path}"

    def other_url(self, path: str) -> str:
        return f"http://other.test:{self.other.port}{path}"


async def www_site(sites: Sites, *, unrelated_child: bool = False) -> WwwSite:
    apex_routes: dict[str, Any] = {}
    www_routes: dict[str, Any] = {}
    other_routes: dict[str, Any] = {}
    apex = await sites.start("127.0.0.150", apex_routes)
    www = await sites.start("127.0.0.151", www_routes)
    other = await sites.start("127.0.0.152", other_routes)
    resolver = LoopbackResolver(
        {"example.test": apex.host, "www.example.test": www.host, "other.test": other.host}
    )
    site = WwwSite(apex, www, other, resolver, www_routes)
    w = site.www_url
    apex_routes["/robots.txt"] = Reply(status=301, headers={"Location": w("/robots.txt")})
    children = [w("/a.xml"), w("/b.xml")]
    if unrelated_child:
        children.append(site.other_url("/c.xml"))
    www_routes.update(
        {
            "/robots.txt": robots(w("/sitemap.xml")),
            "/sitemap.xml": index(*children),
            "/a.xml": urlset(w("/p/1"), w("/p/2")),
            "/b.xml": urlset(w("/p/3")),
        }
    )
    other_routes["/c.xml"] = urlset(site.other_url("/x"))
    return site


async def test_www_children_of_a_redirected_robots_txt_are_the_hosts_own(sites: Sites) -> None:
    site = await www_site(sites)
    records, hosts = await collect([site.seed], resolver=site.resolver)
    w = site.www_url
    assert sorted(r["loc"] for r in records) == [w("/p/1"), w("/p/2"), w("/p/3")]
    report = hosts[site.host]
    assert report["cross_host"] == []
    assert report["cross_host_total"] == 0
    assert report["failures"] == []
    assert report["discovery"] == "robots"
    assert report["foreign_locs"] == 0
    assert {r["host"] for r in records} == {site.host}
    for path in ("/robots.txt", "/sitemap.xml", "/a.xml", "/b.xml"):
        assert site.www.hits(path) == 1, path


async def test_a_child_on_an_unrelated_host_is_still_cross_host(sites: Sites) -> None:
    site = await www_site(sites, unrelated_child=True)
    records, hosts = await collect([site.seed], resolver=site.resolver)
    assert len(records) == 3  # the www children
    report = hosts[site.host]
    assert report["cross_host"] == [site.other_url("/c.xml")]
    assert site.other.hits("/c.xml") == 0


async def test_same_host_policy_still_skips_the_www_children(sites: Sites) -> None:
    site = await www_site(sites)
    records, hosts = await collect(
        [site.seed], resolver=site.resolver, **{"discovery.cross_host": "same-host"}
    )
    assert records == []
    report = hosts[site.host]
    # Only the seed's own host: not even the index robots.txt declared on www is read.
    assert report["cross_host"] == [site.www_url("/sitemap.xml")]
    for path in ("/sitemap.xml", "/a.xml", "/b.xml"):
        assert site.www.hits(path) == 0, path


async def test_a_second_incremental_run_recalls_the_www_home(sites: Sites, tmp_path: Path) -> None:
    # The second run recalls discovery from the state file (no robots.txt request):
    # the remembered origin makes www the host's own as the fetched robots.txt did.
    site = await www_site(sites)
    cfg = fast_config(**{"state.path": str(tmp_path / "state.sqlite"), "output.emit": "all"})
    reports = []
    for name in ("one", "two"):
        out = tmp_path / f"{name}.jsonl"
        hosts = tmp_path / f"{name}.hosts.jsonl"
        await asyncio.to_thread(
            run_job,
            cfg,
            [site.seed],
            str(out),
            progress=False,
            hosts_path=str(hosts),
            resolver=site.resolver,
        )
        assert len(out.read_text().splitlines()) == 3, name
        [report] = [json.loads(line) for line in hosts.read_text().splitlines()]
        reports.append(report)
    assert [r["discovery"] for r in reports] == ["robots", "memory:robots"]
    assert [r["cross_host"] for r in reports] == [[], []]
    assert site.apex.hits("/robots.txt") == 1  # the second run asked nothing of discovery
    assert site.www.hits("/a.xml") == site.www.hits("/b.xml") == 2


async def test_tree_shows_the_www_children_read(sites: Sites) -> None:
    site = await www_site(sites, unrelated_child=True)
    report = await host_tree(site.seed, fast_config(), resolver=site.resolver)
    data = tree_data(report)
    assert data["robots"] == {"url": site.www_url("/robots.txt"), "status": 200}
    [index_node] = data["sitemaps"]
    outcomes = {n["url"]: (n["outcome"], n["error"]) for n in index_node["children"]}
    assert outcomes == {
        site.www_url("/a.xml"): ("ok", None),
        site.www_url("/b.xml"): ("ok", None),
        site.other_url("/c.xml"): ("skipped", "cross_host"),
    }
    console = Console(width=10_000, no_color=True)
    with console.capture() as captured:
        console.print(render_tree(data))
    text = captured.get()
    assert f"✓ [urlset] {site.www_url('/a.xml')}" in text
    assert f"- [?] {site.other_url('/c.xml')}" in text


async def test_a_redirected_robots_txts_crawl_delay_paces_the_www_host(sites: Sites) -> None:
    # The rate allows 1,000 requests a second; the Crawl-delay that www's robots.txt
    # asks for must space the requests on www, where the sitemaps are (not only the
    # apex, which after robots.txt is never asked again).
    site = await www_site(sites)
    w = site.www_url
    delay = 0.25
    text = f"User-agent: *\nCrawl-delay: {delay}\nSitemap: {w('/sitemap.xml')}\n"
    site.www_routes["/robots.txt"] = text.encode()
    records, _ = await collect([site.seed], resolver=site.resolver)
    assert len(records) == 3
    starts = sorted(h.start for h in site.www.log)
    assert len(starts) == 5  # robots.txt, tdmrep.json (policy.tdmrep), the index, two children
    # (the gap after robots.txt is not paced: the delay is read from that answer)
    assert_paced(starts[1:], delay)


async def test_a_not_today_from_the_www_host_defers_the_host(sites: Sites) -> None:
    site = await www_site(sites)
    busy = Reply(status=503, headers={"Retry-After": "86400"})
    site.www_routes.update({"/a.xml": busy, "/b.xml": busy})
    _, hosts = await collect([site.seed], resolver=site.resolver)
    report = hosts[site.host]
    assert report["deferred"] is not None  # the site asked to be left alone for a day
    # ...so its other child is not asked this run.
    assert site.www.hits("/a.xml") + site.www.hits("/b.xml") == 1
