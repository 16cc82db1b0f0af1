"""[filters] on a real server: a skipped child is never requested, filtered locs not written."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest

from harvester.run.shards import run_job
from tests.integration.conftest import fast_config
from tests.integration.harvesting import collect, harvest_state, in_thread
from tests.integration.webs import ChangingSite, index, robots, urlset

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.conftest import Site, Sites


async def shop(sites: Sites, host: str = "127.0.0.2") -> Site:
    """robots.txt → index → post, page and 2019 archive children (the server logs requests)."""
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)
    u = site.url
    routes.update(
        {
            "/robots.txt": robots(u("/index.xml")),
            "/index.xml": index(
                u("/post-sitemap.xml"), u("/page-sitemap.xml"), u("/post-2019.xml")
            ),
            "/post-sitemap.xml": urlset(u("/blog/a"), u("/blog/b?amp=1"), u("/shop/c")),
            "/page-sitemap.xml": urlset(u("/about")),
            "/post-2019.xml": urlset(u("/blog/old")),
        }
    )
    return site


async def test_skipped_children_are_never_requested(sites: Sites) -> None:
    site = await shop(sites)
    records, hosts = await collect(
        [site.origin], **{"filters.follow": ("post",), "filters.skip_sitemap": ("2019",)}
    )
    assert site.hits("/post-sitemap.xml") == 1
    assert site.hits("/page-sitemap.xml") == 0  # matches no follow pattern
    assert site.hits("/post-2019.xml") == 0  # matches a skip_sitemap pattern
    assert sorted(r["loc"] for r in records) == [
        site.url("/blog/a"),
        site.url("/blog/b?amp=1"),
        site.url("/shop/c"),
    ]
    report = hosts[f"127.0.0.2:{site.port}"]
    assert report["sitemaps_filtered"] == 2
    assert report["sitemaps_fetched"] == 2  # the index and the one child
    assert report["filtered"] == 0


async def test_include_and_exclude_choose_the_records_written(sites: Sites) -> None:
    site = await shop(sites)
    records, hosts = await collect(
        [site.origin], **{"filters.include": ("/blog/",), "filters.exclude": (r"\?",)}
    )
    assert sorted(r["loc"] for r in records) == [site.url("/blog/a"), site.url("/blog/old")]
    report = hosts[f"127.0.0.2:{site.port}"]
    assert report["filtered"] == 3  # /blog/b?amp=1, /shop/c, /about
    assert report["dropped"] == 0  # a filtered URL is not an invalid one
    assert report["urls"] == 2
    assert report["sitemaps_filtered"] == 0
    assert site.hits("/page-sitemap.xml") == 1  # page filters download every child


async def test_without_filters_everything_is_written(sites: Sites) -> None:
    site = await shop(sites)
    records, hosts = await collect([site.origin])
    assert len(records) == 5
    report = hosts[f"127.0.0.2:{site.port}"]
    assert report["filtered"] == report["sitemaps_filtered"] == 0


async def test_a_child_skipped_in_a_later_run_is_not_fetched_from_the_state(
    sites: Sites, tmp_path: Path
) -> None:
    # Run one reads the index and both children; in run two the index answers 304, so
    # its children come from the state file: the skip filter applies to them too.
    site = ChangingSite("etag")
    await site.start(sites, "127.0.0.2")
    # --emit delta: conditional GETs (with "all" everything is downloaded again).
    _run, records = await in_thread(
        harvest_state, site, tmp_path, "one", **{"output.emit": "delta"}
    )
    assert len(records) == 30
    assert site.bodies["/b.xml"] == 1
    _run, records = await in_thread(
        harvest_state,
        site,
        tmp_path,
        "two",
        **{"output.emit": "delta", "filters.skip_sitemap": ("/b\\.xml",)},
    )
    assert site.not_modified["/index.xml"] == 1  # the children were carried over
    assert site.bodies["/b.xml"] + site.not_modified["/b.xml"] == 1  # run one's request only
    (report,) = map(json.loads, (tmp_path / "two.jsonl.hosts.jsonl").read_text().splitlines())
    assert report["sitemaps_filtered"] == 1


@pytest.mark.parametrize("state", [False, True], ids=["no-state", "state"])
async def test_since_counts_the_urls_it_leaves_out_as_filtered(
    sites: Sites, tmp_path: Path, state: bool
) -> None:
    # Issue 50 item 11: --exclude counted the URLs it left out, --since did not (the
    # filters table promises both), in the host report and the run's.
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.2", routes)
    u = site.url
    routes["/robots.txt"] = robots(u("/old.xml"), u("/new.xml"), u("/undated.xml"))
    routes["/old.xml"] = urlset(u("/o1"), u("/o2"), u("/o3?x"), lastmod="2020-05-01")
    routes["/new.xml"] = urlset(u("/n1"), u("/n2?x"), lastmod="2024-05-01")
    routes["/undated.xml"] = urlset(u("/d1"))
    out = tmp_path / "out.jsonl"
    opts: dict[str, Any] = {
        "output.since": "2022-01-01",
        "filters.exclude": (r"\?",),
        "state.enabled": state,
        "state.path": str(tmp_path / "state.sqlite"),
    }
    run = await asyncio.to_thread(
        run_job,
        fast_config(**opts),
        [site.origin],
        str(out),
        progress=False,
        hosts_path=f"{out}.hosts.jsonl",
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["loc"] for r in records) == [u("/d1"), u("/n1")]
    (report,) = map(json.loads, (tmp_path / "out.jsonl.hosts.jsonl").read_text().splitlines())
    # /o3?x and /n2?x by --exclude, /o1 and /o2 by --since.
    assert report["filtered"] == 4
    assert report["urls"] == 2
    assert run.filtered == 4
