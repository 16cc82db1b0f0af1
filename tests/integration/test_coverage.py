"""Issue 49 item 1: the coverage check against a loopback site whose truth is known."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

from harvester.coverage.check import coverage
from tests.integration.conftest import Reply, fast_config
from tests.integration.harvesting import CONFIG
from tests.integration.webs import urlset

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.conftest import Site, Sites

HTML = {"Content-Type": "text/html"}


def page(*hrefs: str, head: str = "", headers: dict[str, str] | None = None) -> Reply:
    links = "".join(f'<a href="{h}">.</a>' for h in hrefs)
    body = f"<html><head>{head}</head><body>{links}</body></html>".encode()
    return Reply(body, headers={**HTML, **(headers or {})})


async def known_site(sites: Sites, host: str) -> Site:
    """200 pages found by links (the home page and 199 it links), 140 of them listed (70 %);
    200 listed URLs: those 140, 20 dead (10 %), 10 redirecting (5 %; half to a listed
    page), 10 noindex (5 %; half by meta, half by X-Robots-Tag), 20 live unlinked pages
    (10 of them with a canonical elsewhere: 5 %). /private/ is linked but disallowed."""
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)
    u = site.url
    linked = [f"/p/{i}" for i in range(199)]
    routes["/"] = page(*linked, "/private/x")
    for path in linked:
        routes[path] = page("/")
    listed = ["/", *linked[:139]]
    listed += [f"/d/{i}" for i in range(20)]  # no route: 404
    for i in range(10):
        target = f"/p/{i}" if i < 5 else f"/u/{i}"  # listed / unlisted
        routes[f"/r/{i}"] = Reply(b"", status=301, headers={"Location": target})
        routes[f"/u/{i}"] = page()
        meta = '<meta name="robots" content="noindex">' if i < 5 else ""
        routes[f"/n/{i}"] = page(head=meta, headers={} if i < 5 else {"X-Robots-Tag": "noindex"})
    listed += [f"/r/{i}" for i in range(10)] + [f"/n/{i}" for i in range(10)]
    for i in range(20):
        head = f'<link rel="canonical" href="/p/{i}">' if i < 10 else ""
        routes[f"/o/{i}"] = page(head=head)
        listed.append(f"/o/{i}")
    routes["/private/x"] = page()
    routes["/robots.txt"] = (
        f"Sitemap: {u('/sitemap.xml')}\nUser-agent: *\nDisallow: /private/\n".encode()
    )
    routes["/sitemap.xml"] = urlset(*(u(p) for p in listed))
    return site


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
    assert summary["completeness"] == {
        "hosts": 1,
        "min": 0.7,
        "median": 0.7,
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
    for fig in host["listed_not_live"].values():
        assert fig["of"] == 20
        assert 0 <= fig["low"] <= fig["share"] <= fig["high"] <= 1


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
    assert report["summary"]["hosts"] == 1
