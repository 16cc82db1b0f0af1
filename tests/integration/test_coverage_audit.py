"""Issue 49: one page fetch serves both the coverage check and the lastmod audit.

A run with ``--coverage`` and a state file stores the sampled listed pages it read as the
audit's samples; the audit after it counts them and fetches none of them again (the
server's log), with the figures an audit that fetched them itself gives (a twin site
whose run had no coverage check). Once audited, the samples are no longer fresh: the
next audit fetches again.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from harvester.run.shards import run_job
from harvester.run.verify import run_audit
from tests.integration.conftest import Reply, fast_config

if TYPE_CHECKING:
    from pathlib import Path

    from harvester.audit.report import HostAudit
    from tests.integration.conftest import Site, Sites

T0 = 1_720_000_000  # 2024-07-03
WEEK = 7 * 86_400
PAGES = 12
HTML = {"Content-Type": "text/html"}
LISTED = ["/", *(f"/p/{i}" for i in range(PAGES)), "/d/0", "/d/1"]  # /d/*: 404
MANY = ["/", *(f"/p/{i}" for i in range(40))]


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _page(i: int) -> Reply:
    ld = json.dumps({"@type": "Article", "dateModified": _iso(T0 + i * WEEK)})
    words = " ".join(f"word{i}x{j}" for j in range(60))
    html = (
        f'<html><head><script type="application/ld+json">{ld}</script></head>'
        f"<body><article><p>{words}</p></article></body></html>"
    )
    return Reply(html.encode(), headers=HTML)


async def dated_site(
    sites: Sites, host: str, listed: list[str] = LISTED, *, named: bool = True
) -> Site:
    """A home page linking 5 dated pages; the sitemap lists ``listed`` (by default the
    home page, 12 pages, each lastmod its page's dateModified, and 2 dead URLs);
    robots.txt names it unless ``named`` is False."""
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)
    links = "".join(f'<a href="/p/{i}">.</a>' for i in range(5))
    routes["/"] = Reply(f"<html><body>{links}</body></html>".encode(), headers=HTML)
    for i in range(len(listed)):
        routes[f"/p/{i}"] = _page(i)
    named_line = f"Sitemap: {site.url('/sitemap.xml')}\n" if named else ""
    routes["/robots.txt"] = f"{named_line}User-agent: *\n".encode()
    dates = {f"/p/{i}": T0 + i * WEEK for i in range(len(listed))}
    items = "".join(
        f"<url><loc>{site.url(path)}</loc><lastmod>{_iso(dates.get(path, T0))}</lastmod></url>"
        for path in listed
    )
    routes["/sitemap.xml"] = (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"{items}</urlset>"
    ).encode()
    return site


def _config(state: Path, coverage: int, budget: int = 0) -> Any:  # (tdmrep.json: not asked)
    return fast_config(
        **{
            # Two worker processes: the samples cross the results pipe to the writer.
            "run.workers": 2,
            "state.path": str(state),
            "discovery.coverage": coverage,
            "discovery.probe_budget": budget,
            "policy.tdmrep": False,
        }
    )


async def run_and_audit(site: Site, tmp: Path, coverage: int, k: int = 20) -> HostAudit:
    state = tmp / "state.sqlite"
    out = tmp / "out.jsonl"
    await asyncio.to_thread(
        run_job, _config(state, coverage), [site.origin], str(out), progress=False
    )
    return await audit(state, k)


async def audit(state: Path, k: int = 20) -> HostAudit:
    (result,) = await asyncio.to_thread(run_audit, fast_config(), str(state), k)
    return result


def hits(site: Site, listed: list[str] = LISTED) -> dict[str, int]:
    """How often each listed path was asked."""
    return {path: site.hits(path) for path in listed}


async def test_the_audit_counts_the_coverage_check_s_pages_and_fetches_none_again(
    sites: Sites, tmp_path: Path
) -> None:
    shared = await dated_site(sites, "127.0.49.80")
    (tmp_path / "a").mkdir()
    with_check = await run_and_audit(shared, tmp_path / "a", coverage=20)
    # Each listed page once across the run's check and the audit: the walk's pages
    # (the home page and 5 of its links) serve the sample too.
    assert hits(shared) == dict.fromkeys(LISTED, 1)
    assert with_check["sample"] is not None
    assert with_check["sample"]["from_run"] == len(LISTED)

    alone = await dated_site(sites, "127.0.49.81")
    (tmp_path / "b").mkdir()
    fetched = await run_and_audit(alone, tmp_path / "b", coverage=0)
    assert hits(alone) == dict.fromkeys(LISTED, 1)  # the audit asked each itself
    assert fetched["sample"] is not None
    assert fetched["sample"]["from_run"] == 0

    # The same figures either way: 12 pages agree, the home page has no date, 2 are dead.
    figures = ("agree", "disagree", "no_signal", "failed")
    expected = {"agree": PAGES, "disagree": 0, "no_signal": 1, "failed": 2}
    assert {k: with_check["sample"][k] for k in figures} == expected
    assert {k: fetched["sample"][k] for k in figures} == expected
    assert with_check["score"] == fetched["score"]
    # One sample row per page, as the audit alone stores.
    for part in ("a", "b"):
        with sqlite3.connect(tmp_path / part / "state.sqlite") as db:
            (rows,) = db.execute("SELECT count(*) FROM samples").fetchone()
        assert rows == len(LISTED)

    # Audited, the run's samples are history: the next audit fetches the pages again.
    again = await audit(tmp_path / "a" / "state.sqlite")
    assert again["sample"] is not None
    assert again["sample"]["from_run"] == 0
    assert hits(shared) == dict.fromkeys(LISTED, 2)


async def test_with_a_sample_smaller_than_the_list_both_take_the_same_pages(
    sites: Sites, tmp_path: Path
) -> None:
    # 41 listed URLs, K = 10 for both: the check's sample (the lowest fingerprints over
    # the host) and the audit's picks (the lowest in each sitemap, one sitemap here) are
    # the same 10 pages, so the audit asks none of them.
    site = await dated_site(sites, "127.0.49.82", MANY)
    result = await run_and_audit(site, tmp_path, coverage=10, k=10)
    assert result["sample"] is not None
    assert result["sample"]["from_run"] == 10
    assert result["sample"]["agree"] + result["sample"]["no_signal"] == 10
    asked = hits(site, MANY)
    assert max(asked.values()) == 1
    # The walk's pages (the home page and 5 links) and the sample's 10, some in both.
    assert 10 <= sum(asked.values()) <= 16


async def test_discovery_s_home_page_serves_the_check_and_the_audit(
    sites: Sites, tmp_path: Path
) -> None:
    # robots.txt names no sitemap: discovery reads the home page (its <link rel="sitemap">,
    # its generator) before the probes. The walk, the sample (the home page is listed)
    # and the lastmod audit after the run all take that answer: one fetch in all.
    site = await dated_site(sites, "127.0.49.83", named=False)
    state, out = tmp_path / "state.sqlite", tmp_path / "out.jsonl"
    config = _config(state, 20, budget=1)  # /sitemap.xml (the home page: the walk's)
    await asyncio.to_thread(run_job, config, [site.origin], str(out), progress=False)
    assert [h.path for h in site.log][:3] == ["/robots.txt", "/", "/sitemap.xml"]
    result = await audit(state)
    assert hits(site) == dict.fromkeys(LISTED, 1)
    assert result["sample"] is not None
    assert result["sample"]["from_run"] == len(LISTED)
    with sqlite3.connect(state) as db:
        row = db.execute("SELECT http_status FROM samples WHERE url = ?", (site.url("/"),))
        assert row.fetchall() == [(200,)]  # read from discovery's bytes of it
