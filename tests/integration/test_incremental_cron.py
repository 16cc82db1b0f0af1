"""Issue 53: cron runs over a real SQLite state file, on loopback servers.

A host whose lastmod cannot be trusted (here: none at all, verdict ``absent``) is asked
conditionally like any other, and ``--emit delta`` writes only what changed.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from harvester.run.shards import run_job
from tests.integration.conftest import Reply, fast_config
from tests.integration.harvesting import harvest_state, in_thread
from tests.integration.webs import ChangingSite

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.conftest import Sites


def by_event(records: list[dict[str, Any]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in records:
        out.setdefault(r["event"], set()).add(r["url"])
    return out


def undated(validators: str) -> ChangingSite:
    """A ChangingSite without any lastmod: its host's lastmod is never trusted."""
    site = ChangingSite(validators)
    for path in site.urls:
        site.urls[path] = dict.fromkeys(site.urls[path])
    return site


@pytest.mark.parametrize(
    ("validators", "host"), [("etag", "127.0.0.131"), ("last-modified", "127.0.0.132")]
)
async def test_untrusted_host_unchanged_then_changed_over_several_runs(
    sites: Sites, tmp_path: Path, validators: str, host: str
) -> None:
    site = undated(validators)
    await site.start(sites, host)
    delta = {"output.emit": "delta"}
    _run, records = await in_thread(harvest_state, site, tmp_path, "one", **delta)
    assert len(records) == 30
    assert set(by_event(records)) == {"new"}
    bodies = sum(site.bodies.values())
    assert bodies == 3  # the index and its two children

    # Unchanged web, twice: every sitemap answers 304, nothing is written.
    for name in ("two", "three"):
        _run, records = await in_thread(harvest_state, site, tmp_path, name, **delta)
        assert records == []
        assert sum(site.bodies.values()) == bodies  # 0 bodies downloaded
    assert sum(site.not_modified.values()) == 6

    # Changed web: the delta is exactly what changed, no URL re-emitted as unverified.
    site.edit("/a.xml")["/a/new"] = None
    del site.edit("/b.xml")["/b/7"]
    _run, records = await in_thread(harvest_state, site, tmp_path, "four", **delta)
    assert by_event(records) == {
        "new": {site.url("/a/new")},
        "removed": {site.url("/b/7")},
    }
    assert sum(site.bodies.values()) == bodies + 2  # only the two edited children

    # Asked for, the URLs nobody can say changed are written (read in full for that).
    _run, records = await in_thread(
        harvest_state, site, tmp_path, "five", **{"output.emit": "delta,unverified"}
    )
    assert by_event(records) == {
        "unverified": {site.url(p) for path in site.urls for p in site.urls[path]}
    }
    _run, records = await in_thread(
        harvest_state, site, tmp_path, "six", **{"output.emit": "unverified"}
    )
    assert len(records) == 30
    assert set(by_event(records)) == {"unverified"}


async def test_a_url_moving_between_sitemaps_of_its_host_is_unchanged(
    sites: Sites, tmp_path: Path
) -> None:
    site = ChangingSite("etag")  # dated, trusted or not: moving is no change either way
    await site.start(sites, "127.0.0.133")
    delta = {"output.emit": "delta"}
    await in_thread(harvest_state, site, tmp_path, "one", **delta)
    # The site re-splits its sitemaps: /a/0 and /a/1 move to /b.xml, /a/2 to a new /c.xml.
    a, b = site.edit("/a.xml"), site.edit("/b.xml")
    b["/a/0"], b["/a/1"] = a.pop("/a/0"), a.pop("/a/1")
    site.children.append("/c.xml")
    site.urls["/c.xml"] = {"/a/2": a.pop("/a/2")}
    _run, records = await in_thread(harvest_state, site, tmp_path, "two", **delta)
    assert records == []
    assert (site.bodies["/a.xml"], site.bodies["/b.xml"], site.bodies["/c.xml"]) == (2, 2, 1)
    # And back again, a run later: still nothing to report.
    site.edit("/a.xml")["/a/0"] = site.edit("/b.xml").pop("/a/0")
    _run, records = await in_thread(harvest_state, site, tmp_path, "three", **delta)
    assert records == []


async def test_a_sitemap_answering_a_redirect_to_its_new_location_keeps_its_urls(
    sites: Sites, tmp_path: Path
) -> None:
    def urlset(host: str, n: int) -> bytes:
        items = "".join(
            f"<url><loc>http://{host}/p/{i}</loc><lastmod>2024-01-0{1 + i % 9}</lastmod></url>"
            for i in range(n)
        )
        return (
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{items}</urlset>"
        ).encode()

    routes: dict[str, Any] = {"/old.xml": urlset("127.0.0.134", 5)}
    s = await sites.start("127.0.0.134", routes)
    routes["/robots.txt"] = f"Sitemap: {s.url('/old.xml')}\n".encode()
    delta = {"output.emit": "delta"}

    async def run(name: str) -> list[dict[str, Any]]:
        out = tmp_path / name
        cfg = fast_config(**{"state.path": str(tmp_path / "state.sqlite"), **delta})
        await in_thread(run_job, cfg, [s.origin], str(out), progress=False)
        return [json.loads(line) for line in out.read_text().splitlines()]

    assert len(await run("one.jsonl")) == 5
    # The sitemap moved: its old URL answers a redirect there.
    routes["/new.xml"] = routes.pop("/old.xml")
    routes["/old.xml"] = Reply(status=301, headers={"Location": s.url("/new.xml")})
    assert await run("two.jsonl") == []
    assert await run("three.jsonl") == []
    assert s.hits("/new.xml") >= 2
