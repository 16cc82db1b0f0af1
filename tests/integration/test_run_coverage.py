"""Issue 49 item 1 in a run: ``harvester run --coverage K`` checks each host in its own
worker, with the robots.txt and home page discovery already read (never fetched again),
its figures in the host report and their spread in the run report."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.integration.coversites import known_site, wp_only_site
from tests.integration.harvesting import CONFIG, collect, run_cli

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.conftest import Sites


async def test_run_coverage_reuses_robots_and_the_home_page(sites: Sites) -> None:
    site = await wp_only_site(sites, "127.0.49.40")
    records, hosts = await collect([site.origin], **{"discovery.coverage": 10})
    (report,) = hosts.values()
    assert report["discovery"].startswith("fallback:")
    cov = report["coverage"]
    # The walk: the home page (discovery's, not fetched again) and its 4 allowed links.
    assert (cov["pages_fetched"], cov["pages_found"]) == (5, 5)
    assert (cov["completeness"]["count"], cov["completeness"]["of"]) == (4, 5)
    # The sample: the 4 listed URLs robots.txt allows (/private/q is never requested).
    assert cov["sampled"] == 4
    assert all(fig["count"] == 0 for fig in cov["listed_not_live"].values())
    # The walk fetched every sampled page already: the sample asks none again.
    assert cov["requests"] == 4
    assert site.hits("/robots.txt") == 1
    # Discovery read it for the probes; the walk and the sample reuse its answer.
    assert site.hits("/") == 1
    assert all(site.hits(p) == 1 for p in ("/a", "/b", "/c", "/d"))
    # The home page first, its generator (WordPress) ordering the probes (tdmrep.json,
    # on by default, is asked after the home page, before the sitemaps).
    paths = [h.path for h in site.log if h.path != "/.well-known/tdmrep.json"]
    assert paths[1:4] == ["/", "/sitemap_index.xml", "/wp-sitemap.xml"]
    assert site.hits("/.well-known/tdmrep.json") == 1
    assert not any(h.path.startswith("/private/") for h in site.log)
    assert len(records) == 5  # the run's records are as without the check


async def test_run_coverage_cli_writes_host_and_run_figures(sites: Sites, tmp_path: Path) -> None:
    known = await known_site(sites, "127.0.49.41")
    bare = await sites.start("127.0.49.42", {"/robots.txt": b"User-agent: *\n"})
    config = tmp_path / "c.toml"
    config.write_text(CONFIG)
    out = tmp_path / "out.jsonl"
    code, _, err = await run_cli(
        known.origin,
        bare.origin,
        "--config",
        str(config),
        "-o",
        str(out),
        "--coverage",
        "20",
        "--probe-budget",
        "0",
    )
    assert code == 0, err
    hosts = {
        h["host"]: h
        for h in map(json.loads, (tmp_path / "out.jsonl.hosts.jsonl").read_text().splitlines())
    }
    cov = hosts[known.origin.removeprefix("http://")]["coverage"]
    # Every link is on the home page: the 20-page walk sees them all, so completeness is
    # the known truth (test_coverage.py); the other shares are estimates from 20 URLs.
    assert cov["completeness"]["share"] == 0.7
    dead = cov["listed_not_live"]["dead"]
    assert dead["of"] == cov["sampled"] == 20
    # The sample is the 20 lowest fingerprints, and a fingerprint has the server's port
    # in it: which URLs are sampled changes from run to run, so the figure is checked
    # against what the server saw, not the truth's 10 % (outside the interval 1 in 20).
    asked_dead = {h.path for h in known.log if h.path.startswith("/d/")}
    assert dead["count"] == len(asked_dead)
    assert dead["low"] <= dead["count"] / 20 <= dead["high"]
    assert cov["requests"] <= 2 * 20
    assert cov["capped"] is False
    assert hosts[bare.origin.removeprefix("http://")]["coverage"] == {"skipped": "no sitemap read"}
    assert known.hits("/robots.txt") == 1
    run = json.loads((tmp_path / "out.jsonl.report.json").read_text())
    summary = run["coverage"]
    assert (summary["hosts_checked"], summary["hosts_skipped"]) == (1, 1)
    assert summary["completeness"]["median"] == 0.7
    assert summary["listed_not_live"]["dead"]["count"] == dead["count"]
    assert sum(1 for _ in out.read_text().splitlines()) == 200


async def test_without_coverage_nothing_changes(sites: Sites) -> None:
    site = await wp_only_site(sites, "127.0.49.43")
    _, hosts = await collect([site.origin])
    (report,) = hosts.values()
    assert report["coverage"] is None
    assert site.hits("/a") == 0
