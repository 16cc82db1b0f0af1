"""TDMRep and the signal headers (issue 48) on a real loopback server: tdmrep.json asked
once per host, after robots.txt, in one attempt that never fails the host; the
tdm-* and X-Robots-Tag response headers of robots.txt and the sitemaps in the host
report; the answer remembered in the state file (no request on a recalled host, a
conditional GET on a rediscovered one)."""

from __future__ import annotations

import asyncio
import json
import os
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.integration.conftest import LoopbackResolver, Reply
from tests.integration.harvesting import collect, harvest_state, in_thread
from tests.integration.webs import ChangingSite, urlset

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from tests.integration.conftest import Site, Sites

TDM = "/.well-known/tdmrep.json"
DAY = 86400.0
RULES = [{"location": "/news/*", "tdm-reservation": 1, "tdm-policy": "https://e.org/p.json"}]


async def one_host(sites: Sites, tdm: Any, **cfg: Any) -> tuple[Site, list[Any], dict[str, Any]]:
    """A host with robots.txt → /sitemap.xml (3 URLs) and ``tdm`` at tdmrep.json (None:
    404); its records and report."""
    routes: dict[str, Any] = {}
    s = await sites.start("127.0.0.2", routes)
    routes["/robots.txt"] = f"User-agent: *\nAllow: /\nSitemap: {s.url('/sitemap.xml')}\n".encode()
    routes["/sitemap.xml"] = urlset(s.url("/a"), s.url("/b"), s.url("/c"))
    if tdm is not None:
        routes[TDM] = tdm
    records, hosts = await collect([s.origin], **cfg)
    return s, records, hosts[f"127.0.0.2:{s.port}"]


def paths(s: Site) -> list[str]:
    return [hit.path for hit in s.log]


async def test_on_by_default_once_after_robots_txt(sites: Sites) -> None:
    s, records, report = await one_host(sites, json.dumps(RULES).encode())
    # robots.txt, then tdmrep.json, then the sitemaps (a URL's answer may need its rules).
    assert paths(s) == ["/robots.txt", TDM, "/sitemap.xml"]
    assert len(records) == 3
    assert report["allows"]["tdmrep"] == {"url": s.url(TDM), "rules": RULES, "status": 200}


async def test_a_404_is_no_tdmrep_and_changes_nothing_else(sites: Sites) -> None:
    s, records, report = await one_host(sites, None)
    assert paths(s) == ["/robots.txt", TDM, "/sitemap.xml"]
    assert len(records) == 3
    assert report["allows"]["tdmrep"] == {"url": s.url(TDM), "status": 404}
    assert report["failures"] == []
    assert report["discovery"] == "robots"


async def test_a_5xx_is_asked_once_and_never_fails_the_host(sites: Sites) -> None:
    # fast_config allows one retry for every other file: tdmrep.json gets none.
    s, records, report = await one_host(sites, Reply(b"oops", status=503), **{"fetch.retries": 2})
    assert s.hits(TDM) == 1
    assert len(records) == 3
    assert report["allows"]["tdmrep"] == {
        "url": s.url(TDM),
        "error": "HTTP 503 Service Unavailable",
    }
    assert report["failures"] == []
    assert report["discovery"] == "robots"


async def test_a_timeout_is_one_wait_and_never_fails_the_host(sites: Sites) -> None:
    hang = asyncio.Event()

    async def stall(request: web.Request) -> web.StreamResponse:
        await hang.wait()  # no answer until the test is done with the host
        return web.Response()

    try:
        s, records, report = await one_host(sites, stall, **{"fetch.read_timeout": 0.3})
    finally:
        hang.set()
    assert s.hits(TDM) == 1
    assert len(records) == 3
    assert report["allows"]["tdmrep"] == {"url": s.url(TDM), "error": "no response within 0.3s"}
    assert report["failures"] == []
    assert report["discovery"] == "robots"


async def test_never_the_first_contact_of_a_seed_sitemap(sites: Sites) -> None:
    # A seed sitemap asks robots.txt nothing: tdmrep.json waits for the host's first
    # answer (a dead host would otherwise cost two first-contact timeouts).
    routes: dict[str, Any] = {}
    s = await sites.start("127.0.0.2", routes)
    routes["/index.xml"] = (
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{s.url('/a.xml')}</loc></sitemap></sitemapindex>"
    ).encode()
    routes["/a.xml"] = urlset(s.url("/a"))
    routes[TDM] = json.dumps(RULES).encode()
    records, hosts = await collect([s.url("/index.xml")])
    assert paths(s) == ["/index.xml", TDM, "/a.xml"]
    assert len(records) == 1
    assert hosts[f"127.0.0.2:{s.port}"]["allows"]["tdmrep"]["rules"] == RULES


async def test_not_asked_of_a_host_whose_robots_txt_is_a_wall(sites: Sites) -> None:
    routes: dict[str, Any] = {"/robots.txt": Reply(b"Access denied", status=403)}
    s = await sites.start("127.0.0.2", routes)
    routes["/sitemap.xml"] = urlset(s.url("/a"))  # a wall with a hole: harvested all the same
    records, hosts = await collect([s.origin])
    assert len(records) == 1
    assert s.hits(TDM) == 0
    assert hosts[f"127.0.0.2:{s.port}"]["allows"]["tdmrep"] == {
        "url": s.url(TDM),
        "skipped": "robots.txt answered HTTP 403",
    }


async def test_off_asks_nothing(sites: Sites) -> None:
    s, records, report = await one_host(sites, b"[]", **{"policy.tdmrep": False})
    assert paths(s) == ["/robots.txt", "/sitemap.xml"]
    assert len(records) == 3
    assert "tdmrep" not in (report["allows"] or {})


async def test_headers_of_robots_txt_and_sitemaps_in_the_report(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    s = await sites.start("127.0.0.2", routes)
    robots = f"Sitemap: {s.url('/index.xml')}\n".encode()
    index = (
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{s.url('/a.xml')}</loc></sitemap>"
        f"<sitemap><loc>{s.url('/b.xml')}</loc></sitemap></sitemapindex>"
    ).encode()
    noindex = {"X-Robots-Tag": "noindex, follow"}
    routes.update(
        {
            "/robots.txt": Reply(robots, headers={"tdm-reservation": "1"}),
            "/index.xml": Reply(index, headers=noindex),
            "/a.xml": Reply(urlset(s.url("/a")), headers=noindex),
            "/b.xml": Reply(urlset(s.url("/b")), headers={"X-Robots-Tag": "GPTBot: noai"}),
            TDM: Reply(b"[]", headers={"tdm-policy": "https://e.org/p.json"}),
        }
    )
    records, hosts = await collect([s.origin])
    assert len(records) == 2
    assert hosts[f"127.0.0.2:{s.port}"]["allows"]["headers"] == [
        {"header": "tdm-reservation", "value": "1", "url": s.url("/robots.txt"), "responses": 1},
        {
            "header": "tdm-policy",
            "value": "https://e.org/p.json",
            "url": s.url(TDM),
            "responses": 1,
        },
        {
            "header": "x-robots-tag",
            "value": "noindex, follow",
            "url": s.url("/index.xml"),
            "responses": 2,
            "directives": ["noindex", "follow"],
        },
        {
            "header": "x-robots-tag",
            "value": "GPTBot: noai",
            "url": s.url("/b.xml"),
            "responses": 1,
            "directives": ["noai"],
            "agent": "gptbot",
        },
    ]


async def test_no_headers_no_block(sites: Sites) -> None:
    _, _, report = await one_host(sites, None)
    assert "headers" not in report["allows"]


class TdmFile:
    """tdmrep.json with an ETag (and ``headers``: its caching), answering 304 to a
    matching If-None-Match."""

    def __init__(self, headers: dict[str, str] | None = None) -> None:
        self.bodies = 0
        self.not_modified = 0
        self.conditional: list[str | None] = []
        self.headers = {"ETag": '"v1"', **(headers or {})}

    async def handle(self, request: web.Request) -> web.StreamResponse:
        match = request.headers.get("If-None-Match")
        self.conditional.append(match)
        if match == '"v1"':
            self.not_modified += 1
            return web.Response(status=304, headers=self.headers)
        self.bodies += 1
        return web.Response(body=json.dumps(RULES).encode(), headers=self.headers)


async def state_runs(
    sites: Sites, tmp_path: Path, tdm: TdmFile | None = None, later: float = 0.0, **cfg: Any
) -> tuple[TdmFile, list[Any]]:
    """Two runs with one state file on a ChangingSite with ``TdmFile``, the second
    ``later`` seconds after the first (set ``HARVESTER_CLOCK_OFFSET`` through
    ``monkeypatch`` first, so that it is undone); each run's report."""
    changing, tdm = ChangingSite("etag"), tdm or TdmFile()
    routes: dict[str, Any] = {p: changing.handle for p in ("/index.xml", "/a.xml", "/b.xml")}
    changing.site = await sites.start("127.0.0.2", routes)
    routes["/robots.txt"] = f"Sitemap: {changing.url('/index.xml')}\n".encode()
    routes[TDM] = tdm.handle
    reports = []
    for name in ("one", "two"):
        if name == "two" and later:  # the state's clock, moved ahead (docs/cron.md)
            os.environ["HARVESTER_CLOCK_OFFSET"] = str(later)
        await in_thread(harvest_state, changing, tmp_path, name, **cfg)
        lines = (tmp_path / f"{name}.jsonl.hosts.jsonl").read_text().splitlines()
        reports.append(json.loads(lines[-1]))
    return tdm, reports


async def test_a_recalled_host_reuses_the_remembered_answer(sites: Sites, tmp_path: Path) -> None:
    # Run two recalls the discovery (robots.txt not asked again): tdmrep.json neither.
    tdm, reports = await state_runs(sites, tmp_path)
    assert tdm.conditional == [None]
    first, second = (r["allows"]["tdmrep"] for r in reports)
    assert first["rules"] == RULES
    assert first["etag"] == '"v1"'
    assert second == {**first, "recalled": True}


async def test_a_rediscovered_host_asks_conditionally(sites: Sites, tmp_path: Path) -> None:
    # Its caching says: ask every time (no-cache); robots.txt is asked on every run.
    stale = TdmFile({"Cache-Control": "no-cache"})
    tdm, reports = await state_runs(sites, tmp_path, stale, **{"state.rediscover_after": 0})
    assert tdm.conditional == [None, '"v1"']
    assert (tdm.bodies, tdm.not_modified) == (1, 1)
    first, second = (r["allows"]["tdmrep"] for r in reports)
    assert second == {**first, "status": 304}  # the remembered rules, confirmed unchanged


async def test_a_fresh_answer_is_not_asked_on_rediscovery(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 53: robots.txt is asked again (a day later, past rediscover_after), tdmrep.json
    # only on its own clock: without caching headers, 7 days (at most the state's
    # max_revisit_interval).
    monkeypatch.setenv("HARVESTER_CLOCK_OFFSET", "0")
    tdm, reports = await state_runs(sites, tmp_path, later=DAY + 3600)
    assert tdm.conditional == [None]
    first, second = (r["allows"]["tdmrep"] for r in reports)
    assert second == {**first, "recalled": True}


async def test_past_its_max_age_it_is_asked_conditionally(
    sites: Sites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARVESTER_CLOCK_OFFSET", "0")
    tdm = TdmFile({"Cache-Control": "max-age=172800"})  # 2 days: fresh a day later
    await state_runs(sites, tmp_path, tdm, later=DAY + 3600)
    assert tdm.conditional == [None]
    monkeypatch.setenv("HARVESTER_CLOCK_OFFSET", "0")
    tdm = TdmFile({"Cache-Control": "max-age=3600"})
    (tmp_path / "b").mkdir()
    await state_runs(sites, tmp_path / "b", tdm, later=DAY + 3600)
    assert tdm.conditional == [None, '"v1"']


async def test_a_www_hosts_answers_count_for_the_apex(sites: Sites) -> None:
    # The apex's robots.txt redirects to www, where the sitemap and tdmrep.json are:
    # asked there once, under www's Crawl-delay like the sitemap; www's headers are in
    # the apex's report (its run fetched them).
    apex_routes: dict[str, Any] = {}
    www_routes: dict[str, Any] = {}
    apex = await sites.start("127.0.0.150", apex_routes)
    www = await sites.start("127.0.0.151", www_routes)
    resolver = LoopbackResolver({"example.test": apex.host, "www.example.test": www.host})

    def w(path: str) -> str:
        return f"http://www.example.test:{www.port}{path}"

    apex_routes["/robots.txt"] = Reply(status=301, headers={"Location": w("/robots.txt")})
    delay = 0.25
    robots = f"User-agent: *\nCrawl-delay: {delay}\nSitemap: {w('/a.xml')}\n"
    www_routes.update(
        {
            "/robots.txt": robots.encode(),
            "/a.xml": Reply(urlset(w("/p/1")), headers={"X-Robots-Tag": "noai"}),
            TDM: json.dumps(RULES).encode(),
        }
    )
    records, hosts = await collect([f"http://example.test:{apex.port}"], resolver=resolver)
    assert len(records) == 1
    allows = hosts[f"example.test:{apex.port}"]["allows"]
    assert allows["tdmrep"] == {"url": w(TDM), "rules": RULES, "status": 200}
    assert paths(www) == ["/robots.txt", TDM, "/a.xml"]
    assert apex.hits(TDM) == 0
    hits = {h.path: h.start for h in www.log}
    assert hits["/a.xml"] - hits[TDM] >= delay * 0.9  # www's Crawl-delay spaced them
    assert allows["headers"] == [
        {
            "header": "x-robots-tag",
            "value": "noai",
            "url": w("/a.xml"),
            "responses": 1,
            "directives": ["noai"],
        }
    ]
