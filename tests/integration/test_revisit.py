"""Issue 53 item 4, adaptive revisit: cron runs over a real SQLite state, loopback servers.

The clock is injected through ``HARVESTER_CLOCK_OFFSET`` (``state.codec.now``): runs one
after another stand for an hourly cron, nothing sleeps.
"""

from __future__ import annotations

import gzip
import json
from typing import TYPE_CHECKING, Any

from harvester.state.revisit import MIN_GAP
from tests.integration.harvesting import harvest_state, in_thread
from tests.integration.webs import BASE_TIME, ChangingSite

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from tests.integration.conftest import Sites

HOUR = 3600.0
assert HOUR > MIN_GAP
BASE_LASTMOD = BASE_TIME + 10**6  # a lastmod later than the site's own


def by_event(records: list[dict[str, Any]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in records:
        out.setdefault(r["event"], set()).add(r["url"])
    return out


def host_report(tmp_path: Path, name: str) -> dict[str, Any]:
    (line,) = (tmp_path / f"{name}.jsonl.hosts.jsonl").read_text().splitlines()
    return dict(json.loads(line))


async def at(
    hour: int, monkeypatch: pytest.MonkeyPatch, site: ChangingSite, tmp_path: Path, **opts: Any
) -> tuple[Any, list[dict[str, Any]]]:
    """One run ``hour`` hours after the first (the injected clock)."""
    monkeypatch.setenv("HARVESTER_CLOCK_OFFSET", str(hour * HOUR))
    opts.setdefault("output.emit", "delta")
    out: tuple[Any, list[dict[str, Any]]] = await in_thread(
        harvest_state, site, tmp_path, f"h{hour}", **opts
    )
    return out


def asked(site: ChangingSite) -> int:
    return sum(site.bodies.values()) + sum(site.not_modified.values())


async def test_unchanged_sitemaps_wait_longer_and_a_change_is_picked_up_when_due(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = ChangingSite("etag")
    await site.start(sites, "127.0.0.201")
    _run, records = await at(0, monkeypatch, site, tmp_path)
    assert len(records) == 30
    assert asked(site) == 3  # the index and its two children, read in full

    # Hour 1: every sitemap is due (a first read says nothing of how often it changes): 304s.
    run, records = await at(1, monkeypatch, site, tmp_path)
    assert (records, asked(site), sum(site.not_modified.values())) == ([], 6, 3)
    assert run.sitemaps_not_due == 0

    # Hour 2: each waits twice the hour it stayed unchanged: nothing is asked, nothing removed.
    site.edit("/a.xml")["/a/new"] = None  # changes while not due
    run, records = await at(2, monkeypatch, site, tmp_path)
    assert (records, asked(site)) == ([], 6)
    assert run.sitemaps_not_due == 3
    assert host_report(tmp_path, "h2")["sitemaps_not_due"] == 3

    # Hour 3: due again: the change is picked up, the delta exact.
    run, records = await at(3, monkeypatch, site, tmp_path)
    assert by_event(records) == {"new": {site.url("/a/new")}}
    assert asked(site) == 9
    assert run.sitemaps_not_due == 0

    # /a.xml changed: asked on every run again; the others wait 4 hours now.
    run, records = await at(4, monkeypatch, site, tmp_path)
    assert records == []
    assert asked(site) == 10
    assert site.not_modified["/a.xml"] == 2
    assert run.sitemaps_not_due == 2


async def test_revisit_all_asks_every_sitemap(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = ChangingSite("last-modified")
    await site.start(sites, "127.0.0.202")
    await at(0, monkeypatch, site, tmp_path)
    await at(1, monkeypatch, site, tmp_path)
    del site.edit("/b.xml")["/b/3"]
    run, records = await at(2, monkeypatch, site, tmp_path, **{"state.revisit": "all"})
    assert by_event(records) == {"removed": {site.url("/b/3")}}
    assert asked(site) == 9
    assert run.sitemaps_not_due == 0


async def test_a_news_sitemap_is_asked_on_every_run(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = NewsSite("etag")
    await site.start(sites, "127.0.0.203")
    for hour in range(4):
        await at(hour, monkeypatch, site, tmp_path)
    # /a.xml (news) at hours 0-3; the index and /b.xml at hours 0, 1 and 3.
    assert site.bodies["/a.xml"] + site.not_modified["/a.xml"] == 4
    assert site.bodies["/b.xml"] + site.not_modified["/b.xml"] == 3


async def test_a_gzipped_news_sitemap_is_asked_on_every_run(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = GzippedNewsSite("etag")
    await site.start(sites, "127.0.0.208")
    for hour in range(4):
        await at(hour, monkeypatch, site, tmp_path)
    assert site.bodies["/a.xml"] + site.not_modified["/a.xml"] == 4
    assert site.bodies["/b.xml"] + site.not_modified["/b.xml"] == 3


async def test_the_cap_bounds_the_wait(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = ChangingSite("etag")
    await site.start(sites, "127.0.0.204")
    cap = {"state.max_revisit_interval": 2 * HOUR}
    for hour in (0, 1, 3):  # intervals 2 h, then 4 h capped to 2 h
        await at(hour, monkeypatch, site, tmp_path, **cap)
    assert asked(site) == 9
    run, _ = await at(5, monkeypatch, site, tmp_path, **cap)  # due again after the cap
    assert asked(site) == 12
    assert run.sitemaps_not_due == 0


class NewsSite(ChangingSite):
    """A ChangingSite whose /a.xml is a Google News sitemap."""

    def body(self, path: str) -> bytes:
        body = super().body(path)
        if path == "/a.xml":
            body = body.replace(
                b"<urlset ",
                b'<urlset xmlns:news="http://www.google.com/schemas/sitemap-news/0.9" ',
            )
        return body


class GzippedNewsSite(NewsSite):
    """A NewsSite whose /a.xml is served gzipped (a .xml.gz file's bytes)."""

    def body(self, path: str) -> bytes:
        body = super().body(path)
        return gzip.compress(body, mtime=0) if path == "/a.xml" else body


async def test_urls_moving_into_a_sitemap_not_due_are_not_removed(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = ChangingSite("etag")
    await site.start(sites, "127.0.0.205")
    await at(0, monkeypatch, site, tmp_path)
    site.edit("/a.xml")["/a/new"] = BASE_LASTMOD  # /a changes: due on every run
    _run, records = await at(1, monkeypatch, site, tmp_path)
    assert by_event(records) == {"new": {site.url("/a/new")}}
    # The site re-splits: five URLs of /a.xml move to /b.xml, which is not due at hour 2.
    a, b = site.edit("/a.xml"), site.edit("/b.xml")
    for i in range(5):
        b[f"/a/{i}"] = a.pop(f"/a/{i}")
    before = site.bodies["/b.xml"]
    run, records = await at(2, monkeypatch, site, tmp_path)
    assert records == []  # moved, not removed
    assert site.bodies["/b.xml"] == before + 1  # asked after all: /a.xml lost URLs
    assert run.sitemaps_not_due == 1  # the index only


async def test_a_list_its_server_dates_long_ago_waits_after_its_first_read(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RFC 9111 §4.2.2: a first read's interval is 10 % of its Last-Modified's age (here
    years: the cap, 2 hours); a change meanwhile is picked up at the due run, exactly."""
    site = ChangingSite("last-modified", modified=BASE_TIME)
    await site.start(sites, "127.0.0.206")
    cap = {"state.max_revisit_interval": 2 * HOUR}
    _run, records = await at(0, monkeypatch, site, tmp_path, **cap)
    assert (len(records), asked(site)) == (30, 3)
    site.edit("/a.xml")["/a/new"] = None
    run, records = await at(1, monkeypatch, site, tmp_path, **cap)
    assert (records, asked(site), run.sitemaps_not_due) == ([], 3, 3)
    run, records = await at(2, monkeypatch, site, tmp_path, **cap)
    assert by_event(records) == {"new": {site.url("/a/new")}}
    assert (asked(site), run.sitemaps_not_due) == (6, 0)


async def test_a_list_its_server_dates_just_now_is_asked_on_the_next_run(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = ChangingSite("last-modified")  # Last-Modified a minute before the first run
    await site.start(sites, "127.0.0.207")
    await at(0, monkeypatch, site, tmp_path)
    run, records = await at(1, monkeypatch, site, tmp_path)
    assert (records, sum(site.not_modified.values()), run.sitemaps_not_due) == ([], 3, 0)


async def test_urls_moving_into_a_sitemap_not_due_are_not_removed_however_many_came(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 53: /a.xml loses five URLs (into /b.xml, not due) and gains five new ones:
    the same count, another set. /b.xml is asked after all; only the new five are news."""
    site = ChangingSite("etag")
    await site.start(sites, "127.0.0.209")
    await at(0, monkeypatch, site, tmp_path)
    site.edit("/a.xml")["/a/new"] = BASE_LASTMOD  # /a changes: due on every run
    await at(1, monkeypatch, site, tmp_path)
    a, b = site.edit("/a.xml"), site.edit("/b.xml")
    count = len(a)
    for i in range(5):
        b[f"/a/{i}"] = a.pop(f"/a/{i}")
        a[f"/a/fresh{i}"] = BASE_LASTMOD
    assert len(a) == count
    before = site.bodies["/b.xml"]
    run, records = await at(2, monkeypatch, site, tmp_path)
    assert by_event(records) == {"new": {site.url(f"/a/fresh{i}") for i in range(5)}}
    assert site.bodies["/b.xml"] == before + 1  # asked after all: /a.xml lost URLs
    assert run.sitemaps_not_due == 1  # the index only
