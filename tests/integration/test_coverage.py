"""Issue 49 item 1: the coverage check against a loopback site whose truth is known."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING

from harvester.coverage.check import coverage
from tests.integration.conftest import fast_config
from tests.integration.coversites import known_site
from tests.integration.harvesting import CONFIG

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.conftest import Sites


async def test_coverage_figures_match_the_known_truth(sites: Sites) -> None:
    site = await known_site(sites, "127.0.49.30")
    # K = 200: the walk reaches every linked page and the sample is every listed URL, so
    # each figure is exact and its interval holds the truth.
    report = await coverage([site.origin], fast_config(), pages=200)
    (host,) = report["hosts"]
    assert host["urls_listed"] == 200
    assert host["discovery"] == "robots"
    assert host["pages_found"] == 200
    assert host["completeness"]["count"] == 140
    assert host["completeness"]["of"] == 200
    assert host["completeness"]["share"] == 0.7
    assert host["completeness"]["low"] < 0.7 < host["completeness"]["high"]
    assert host["sampled"] == 200
    shares = {name: fig["share"] for name, fig in host["listed_not_live"].items()}
    assert shares == {
        "dead": 0.1,
        "redirect": 0.05,
        "redirect_to_listed": 0.025,
        "noindex": 0.05,
        "canonical_elsewhere": 0.05,
    }
    assert not any(h.path.startswith("/private/") for h in site.log)
    summary = report["summary"]
    assert (summary["hosts_checked"], summary["hosts_skipped"]) == (1, 0)
    assert summary["completeness"] == {
        "min": 0.7,
        "q1": 0.7,
        "median": 0.7,
        "q3": 0.7,
        "max": 0.7,
        "mean": 0.7,
    }


async def test_a_small_sample_is_an_estimate_within_its_interval(sites: Sites) -> None:
    site = await known_site(sites, "127.0.49.31")
    report = await coverage([site.origin], fast_config(), pages=20)
    (host,) = report["hosts"]
    # The walk's budget: the home page and 19 pages (the home page's links are all seen).
    assert host["pages_fetched"] == 20
    assert host["completeness"]["share"] == 0.7  # every link is on the home page
    assert host["sampled"] == 20
    # Which 20 listed URLs are sampled depends on the port (it is in their fingerprints):
    # each figure is checked against the truth of the URLs the server saw asked. None of
    # these is linked, so only the sample asks them (test_sampling.py: how often the
    # interval holds the site's truth over many samples).
    asked = {h.path for h in site.log}

    def n(prefix: str, below: int = 99) -> int:
        return sum(1 for p in asked if p.startswith(prefix) and int(p.rsplit("/", 1)[1]) < below)

    truth = {
        "dead": n("/d/"),
        "redirect": n("/r/"),
        "redirect_to_listed": n("/r/", 5),
        "noindex": n("/n/"),
        "canonical_elsewhere": n("/o/", 10),
    }
    assert {name: fig["count"] for name, fig in host["listed_not_live"].items()} == truth
    for fig in host["listed_not_live"].values():
        assert fig["of"] == 20
        assert fig["low"] <= fig["count"] / 20 <= fig["high"]


async def test_coverage_verb_prints_and_writes_json(sites: Sites, tmp_path: Path) -> None:
    site = await known_site(sites, "127.0.49.32")
    config = tmp_path / "c.toml"
    config.write_text(CONFIG)
    out_json = tmp_path / "cov.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harvester",
        "coverage",
        site.origin,
        "--pages",
        "200",
        "--json",
        str(out_json),
        "--config",
        str(config),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert "completeness 70% (140/200)" in out.decode()
    report = json.loads(out_json.read_text())
    assert report["hosts"][0]["listed_not_live"]["dead"]["count"] == 20
    assert report["summary"]["hosts_checked"] == 1
