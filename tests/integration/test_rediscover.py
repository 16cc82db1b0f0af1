"""Issue 53: past the 24 h discovery memory, robots.txt is asked again (conditionally) and,
unchanged, keeps the rest of the remembered discovery: the probes are not made again.

Daily cron runs over a real SQLite state file and loopback sites, the clock injected
(``HARVESTER_CLOCK_OFFSET``: runs one after another stand for runs a day apart). What
decides is which requests reached the site and what the state file remembers.
"""

from __future__ import annotations

import json
import sqlite3
import time
from email.utils import formatdate
from typing import TYPE_CHECKING, Any

from aiohttp import web

from harvester.state.codec import load_json
from tests.integration.conftest import Reply
from tests.integration.harvesting import harvest_state, in_thread
from tests.integration.webs import urlset

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from tests.integration.conftest import Site, Sites

DAY = 86400.0
TDM = "/.well-known/tdmrep.json"
NO_SITEMAP = b"User-agent: *\nDisallow: /private\n"


class Robots:
    """A robots.txt a test edits between runs; with ``etag``, answering 304 to a match."""

    def __init__(self, text: bytes, *, etag: bool = False) -> None:
        self.text = text
        self.etag = etag
        self.conditional: list[str | None] = []  # each request's If-None-Match

    async def handle(self, request: web.Request) -> web.StreamResponse:
        match = request.headers.get("If-None-Match")
        self.conditional.append(match)
        tag = f'"{hash(self.text) & 0xFFFF:x}"'
        headers = {"ETag": tag} if self.etag else {}
        if self.etag and match == tag:
            return web.Response(status=304, headers=headers)
        return web.Response(body=self.text, headers=headers, content_type="text/plain")


class Host:
    """What ``harvest_state`` needs of a site: ``site``."""

    def __init__(self, site: Site) -> None:
        self.site = site


async def run_at(
    day: float, site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """One run ``day`` days after the first; the paths it asked of ``site``."""
    return (await records_at(day, site, tmp_path, monkeypatch))[0]


async def records_at(
    day: float, site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], list[dict[str, Any]]]:
    """One run ``day`` days after the first (``--emit delta``): the paths it asked of
    ``site``, and its records."""
    monkeypatch.setenv("HARVESTER_CLOCK_OFFSET", str(day * DAY))
    before = len(site.log)
    name = f"d{day}".replace(".", "_")
    args = (harvest_state, Host(site), tmp_path, name)
    _run, records = await in_thread(*args, **{"output.emit": "delta"})
    return [hit.path for hit in site.log[before:]], records


def discovery(tmp_path: Path) -> tuple[dict[str, Any], float]:
    """The host's discovery memory in the state file, and when it was stored."""
    db = sqlite3.connect(tmp_path / "state.sqlite")
    try:
        ((raw, at),) = db.execute("SELECT discovery, discovered_at FROM hosts")
    finally:
        db.close()
    return dict(load_json(raw)), float(at)


async def probed_site(sites: Sites, robots: Robots, *, hit: bool) -> Site:
    """robots.txt without a Sitemap line; with ``hit``, a sitemap at the second probe
    location (/sitemap_index.xml: the first, /sitemap.xml, misses)."""
    routes: dict[str, Any] = {"/robots.txt": robots.handle}
    site = await sites.start("127.0.53.61", routes)
    if hit:
        routes["/sitemap_index.xml"] = urlset(site.url("/a"), site.url("/b"))
    return site


async def test_an_unchanged_robots_txt_keeps_the_probe_outcome(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    robots = Robots(NO_SITEMAP)
    site = await probed_site(sites, robots, hit=True)
    first = await run_at(0, site, tmp_path, monkeypatch)
    # robots.txt, the home page (issue 49), then the probes up to the one that hits
    assert first[:4] == ["/robots.txt", "/", TDM, "/sitemap.xml"]
    assert "/sitemap_index.xml" in first
    memory, at = discovery(tmp_path)
    assert (memory["source"], memory["refs"]) == ("fallback", [site.url("/sitemap_index.xml")])

    # A day and an hour later: robots.txt again, no probe (/sitemap.xml missed before);
    # the hit is asked as a sitemap (its first read said nothing of how often it changes).
    second = await run_at(25 / 24, site, tmp_path, monkeypatch)
    assert second == ["/robots.txt", "/sitemap_index.xml"]
    kept, kept_at = discovery(tmp_path)
    assert (kept["source"], kept["refs"]) == ("fallback", memory["refs"])
    assert kept["probed_at"] == memory["probed_at"]  # the probes' time: not made again
    assert kept_at >= at + DAY  # robots.txt's check restarts the 24 h


async def test_a_probe_hit_not_due_stays_the_remembered_sitemap(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hit's server dates it a year back: not due for days (adaptive revisit). Carried
    # over unasked, it is still the host's sitemap: kept in the discovery memory, and
    # its URLs are never removed (it was once remembered as "none found": all removed).
    robots = Robots(NO_SITEMAP)
    routes: dict[str, Any] = {"/robots.txt": robots.handle}
    site = await sites.start("127.0.53.62", routes)
    old = formatdate(time.time() - 365 * DAY, usegmt=True)
    body = urlset(site.url("/a"), site.url("/b"))
    routes["/sitemap_index.xml"] = Reply(body, headers={"Last-Modified": old})
    _paths, records = await records_at(0, site, tmp_path, monkeypatch)
    assert len(records) == 2
    for day in (25 / 24, 2.1, 3.2):
        paths, records = await records_at(day, site, tmp_path, monkeypatch)
        assert (paths, records) == (["/robots.txt"], [])
        memory, _ = discovery(tmp_path)
        assert (memory["source"], memory["refs"]) == ("fallback", [site.url("/sitemap_index.xml")])


async def test_a_304_keeps_none_found_and_asks_nothing_more(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    robots = Robots(NO_SITEMAP, etag=True)
    site = await probed_site(sites, robots, hit=False)
    first = await run_at(0, site, tmp_path, monkeypatch)
    assert first.count("/robots.txt") == 1
    assert len(first) > 3  # tdmrep.json, the probes
    assert discovery(tmp_path)[0]["source"] == "none"
    for day in (25 / 24, 2.1, 3.2):  # each past the 24 h memory: robots.txt, conditionally
        assert await run_at(day, site, tmp_path, monkeypatch) == ["/robots.txt"]
    assert robots.conditional[0] is None
    assert all(tag is not None for tag in robots.conditional[1:])
    assert discovery(tmp_path)[0]["source"] == "none"


async def test_a_changed_robots_txt_runs_discovery_again(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    robots = Robots(NO_SITEMAP, etag=True)
    site = await probed_site(sites, robots, hit=False)
    first = await run_at(0, site, tmp_path, monkeypatch)
    robots.text = NO_SITEMAP + b"Disallow: /tmp\n"
    second = await run_at(25 / 24, site, tmp_path, monkeypatch)
    # The same probes as the first run (tdmrep.json is still fresh: not asked again).
    assert second == [p for p in first if p != TDM]
    assert "/sitemap.xml" in second
    memory, _ = discovery(tmp_path)
    assert memory["robots"] == (NO_SITEMAP + b"Disallow: /tmp\n").decode()


async def test_a_probe_outcome_is_kept_for_max_revisit_interval_at_most(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A site that adds a /sitemap.xml without touching robots.txt is found within the
    # cap (state.max_revisit_interval, 7 days by default) after the probes were made.
    robots = Robots(NO_SITEMAP)
    site = await probed_site(sites, robots, hit=False)
    await run_at(0, site, tmp_path, monkeypatch)
    assert await run_at(6.5, site, tmp_path, monkeypatch) == ["/robots.txt"]
    later = await run_at(7.6, site, tmp_path, monkeypatch)
    assert "/sitemap.xml" in later
    assert json.dumps(discovery(tmp_path)[0]["source"]) == '"none"'
