"""Issue 53: cron runs over a real SQLite state file, on loopback servers.

A host whose lastmod cannot be trusted (here: none at all, verdict ``absent``) is asked
conditionally like any other, and ``--emit delta`` writes only what changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

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
