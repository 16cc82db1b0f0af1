"""Issue 49 item 2: a site with no sitemap, walked by its links (``--links-fallback N``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tests.integration.conftest import Reply
from tests.integration.harvesting import CONFIG, collect, run_cli

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.conftest import Site, Sites

ROBOTS = b"User-agent: *\nDisallow: /private/\n"
# The default probe budget's locations, probed (after the home page) before the walk.
PROBES = {"/sitemap.xml", "/sitemap_index.xml", "/sitemap.txt", "/wp-sitemap.xml"} | {
    "/sitemap.xml.gz",
    "/sitemap-index.xml",
}
TDM = "/.well-known/tdmrep.json"  # asked once after discovery (policy.tdmrep, on by default)


def html(*hrefs: str, head: str = "") -> Reply:
    links = "".join(f'<a href="{h}">{h}</a>' for h in hrefs)
    body = f"<html><head>{head}</head><body>{links}</body></html>".encode()
    return Reply(body, headers={"Content-Type": "text/html; charset=utf-8"})


async def _site(sites: Sites, host: str) -> Site:
    routes: dict[str, Any] = {
        "/robots.txt": ROBOTS,
        "/": html("/a", "b", "/private/x", "http://127.0.0.99/elsewhere", "#top", "/a#frag"),
        "/a": html("/a/1", "/a/2", "/"),
        "/b": html("/b/1", "/private/y"),
        "/a/1": html("/a/1/deep"),
        "/a/2": html("/gone"),
        "/b/1": html(),
        "/a/1/deep": html("/a/1/deep/deeper"),
        "/gone": Reply(b"not here", status=404),
        "/private/x": html("/private/z"),
        "/private/y": html(),
    }
    return await sites.start(host, routes)


def _pages(site: Site) -> list[str]:
    """The pages the walk requested (robots.txt, tdmrep.json and the probes left out)."""
    return [h.path for h in site.log if h.path not in PROBES and h.path not in ("/robots.txt", TDM)]


async def test_links_fallback_finds_the_pages_and_never_fetches_disallowed(sites: Sites) -> None:
    site = await _site(sites, "127.0.49.20")
    records, hosts = await collect([site.origin], **{"discovery.links_fallback": 50})
    u = site.url
    found = {r["loc"] for r in records}
    assert found == {
        u("/"),
        u("/a"),
        u("/b"),
        u("/a/1"),
        u("/a/2"),
        u("/b/1"),
        u("/a/1/deep"),  # depth 3: fetched; its link (depth 4) is not followed
    }
    assert all(r["source"] == "links" for r in records)
    assert all(r["sitemap"] is None for r in records)
    # robots.txt's Disallow: never requested, whatever linked to it.
    assert not any(h.path.startswith("/private/") for h in site.log)
    assert site.hits("/a/1/deep/deeper") == 0
    report = hosts[site.origin.removeprefix("http://")]
    assert report["discovery"] == "links"
    assert report["urls"] == len(found)
    assert report["links"] == {"urls": 7, "pages": 8, "failed": 1, "disallowed": 2}
    # Breadth first: the home page (fetched once, before the probes), then depth 1, 2, 3.
    assert [h.path for h in site.log[:3]] == ["/robots.txt", "/", TDM]
    assert sorted(h.path for h in site.log[3:9]) == sorted(PROBES)
    assert _pages(site) == ["/", "/a", "/b", "/a/1", "/a/2", "/b/1", "/a/1/deep", "/gone"]


async def test_links_fallback_stays_within_its_page_budget(sites: Sites) -> None:
    site = await _site(sites, "127.0.49.21")
    records, hosts = await collect([site.origin], **{"discovery.links_fallback": 3})
    assert _pages(site) == ["/", "/a", "/b"]
    # The links of the pages read are kept (unverified), the budget caps requests only.
    assert {r["loc"] for r in records} == {
        site.url(p) for p in ("/", "/a", "/b", "/a/1", "/a/2", "/b/1")
    }
    assert hosts[site.origin.removeprefix("http://")]["links"]["pages"] == 3


async def test_off_by_default(sites: Sites) -> None:
    site = await _site(sites, "127.0.49.22")
    records, hosts = await collect([site.origin])
    assert records == []
    assert hosts[site.origin.removeprefix("http://")]["links"] is None
    # Discovery reads the home page (issue 49: <link rel="sitemap">); no walk follows it.
    assert [h.path for h in site.log if h.path not in PROBES] == ["/robots.txt", "/", TDM]


async def test_links_fallback_through_run_with_a_state_file(sites: Sites, tmp_path: Path) -> None:
    # As cron runs it: the records reach the output file and the state file is written.
    site = await _site(sites, "127.0.49.23")
    config = tmp_path / "c.toml"
    config.write_text(CONFIG)
    out = tmp_path / "urls.jsonl"
    code, _, err = await run_cli(
        site.origin, "-o", str(out), "--config", str(config), "--links-fallback", "50"
    )
    assert code == 0, err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 7
    assert {r["source"] for r in records} == {"links"}
    assert (tmp_path / "urls.jsonl.state.sqlite").exists()
