"""Issue 53: a host whose patient late attempt failed gets its next one on a backoff.

Cron runs over a real SQLite state file and a loopback site that dies after the first
run, then comes back; the clock is injected (``HARVESTER_CLOCK_OFFSET``: runs one after
another stand for an hourly cron), small timeouts through the config. The fast first
contact is made on every run; the late attempt after it only when due (doubling the
time since the last failed one). What decides is which requests reached the site and
what was written, never how long a run took.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import TYPE_CHECKING, Any

from tests.integration.harvesting import harvest_state, in_thread
from tests.integration.webs import ChangingSite

if TYPE_CHECKING:
    from pathlib import Path

    import pytest
    from aiohttp import web

    from tests.integration.conftest import Sites

HOUR = 3600.0
SMALL = {
    "fetch.connect_timeout": 1.0,
    "fetch.first_byte_timeout": 1.0,
    "fetch.read_timeout": 1.0,
    "fetch.late_first_byte_timeout": 1.5,
    "fetch.total_timeout": 10.0,
    "output.emit": "delta",
}


class DyingSite(ChangingSite):
    """A ChangingSite that, while ``dead``, reads each request and never answers it."""

    def __init__(self) -> None:
        super().__init__("etag")
        self.dead = False
        self.asked = 0  # sitemap requests received, answered or not
        self.release = asyncio.Event()  # set at the end: the held requests finish

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.asked += 1
        if self.dead:
            await self.release.wait()
        return await super().handle(request)


def host_report(tmp_path: Path, name: str) -> dict[str, Any]:
    (line,) = (tmp_path / f"{name}.jsonl.hosts.jsonl").read_text().splitlines()
    return dict(json.loads(line))


def late_row(tmp_path: Path) -> tuple[Any, ...]:
    """The host's late-attempt backoff in the state file."""
    db = sqlite3.connect(tmp_path / "state.sqlite")
    try:
        (row,) = db.execute("SELECT late_failed_at, late_interval, late_failures FROM hosts")
    finally:
        db.close()
    return tuple(row)


async def at(
    hour: int, monkeypatch: pytest.MonkeyPatch, site: ChangingSite, tmp_path: Path, **opts: Any
) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    """One run ``hour`` hours after the first: its run report, records, host report."""
    monkeypatch.setenv("HARVESTER_CLOCK_OFFSET", str(hour * HOUR))
    name = f"h{hour}"
    run, records = await in_thread(harvest_state, site, tmp_path, name, **{**SMALL, **opts})
    return run, records, host_report(tmp_path, name)


async def test_a_dead_host_s_late_attempts_back_off_and_a_host_back_is_found_at_once(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = DyingSite()
    await site.start(sites, "127.0.53.1")
    try:
        _run, records, _host = await at(0, monkeypatch, site, tmp_path)
        assert len(records) == 30
        site.dead = True
        asked = site.asked
        late = []  # per dead run: whether the late attempt was made
        for hour in (1, 2, 3, 4, 5):
            run, records, host = await at(hour, monkeypatch, site, tmp_path)
            assert records == []  # its stored URLs are kept: never removed
            assert host["first_contact_timeout"] == "first_byte"
            made = site.asked - asked == 2  # the fast first contact, then the late one
            assert made or site.asked - asked == 1
            assert host["late_not_due"] is not made
            assert run.hosts_late_not_due == (0 if made else 1)
            late.append(made)
            asked = site.asked
        _failed_at, interval, failures = late_row(tmp_path)
        assert failures == 3
        assert 4 * HOUR <= interval < 4 * HOUR + 600  # twice the 2 h (and seconds) since
        # Failed at hours 1 (next: the next run), 2 (next: 2 h later), 4 (4 h later).
        assert late == [True, True, False, True, False]

        # Back: found by its first contact, nothing written (nothing changed)...
        site.dead = False
        run, records, host = await at(6, monkeypatch, site, tmp_path)
        assert (records, host["first_contact_timeout"], host["late_not_due"]) == ([], None, False)
        # ...and its backoff is gone (the next failure starts it over).
        assert late_row(tmp_path) == (None, 0.0, 0)
    finally:
        site.release.set()


async def test_revisit_all_makes_every_late_attempt(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = DyingSite()
    await site.start(sites, "127.0.53.2")
    try:
        await at(0, monkeypatch, site, tmp_path)
        site.dead = True
        for hour in (1, 2):
            await at(hour, monkeypatch, site, tmp_path)
        asked = site.asked
        run, records, host = await at(3, monkeypatch, site, tmp_path, **{"state.revisit": "all"})
        assert (records, site.asked - asked, host["late_not_due"]) == ([], 2, False)
        assert run.hosts_late_not_due == 0
    finally:
        site.release.set()
