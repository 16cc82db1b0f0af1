"""Is this site's lastmod true? The lastmod audit against loopback sites (issue 7).

Each site shows one pattern: a news site stamping the generation time, an
archive without lastmod, an honest site whose pages' dateModified matches, a
site whose lastmod never moves while its pages change, and one whose lastmod
moves every run while nothing changes. Runs and audits use a real state file;
the pages are real HTML over real HTTP.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from array import array
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from harvester.run.shards import run_job
from harvester.run.verify import run_audit
from harvester.state.chunks import NO_LASTMOD, pack
from tests.integration.conftest import fast_config

if TYPE_CHECKING:
    from harvester.audit.report import HostAudit
    from tests.integration.conftest import Site, Sites

T0 = 1_720_000_000  # 2024-07-03
DAY = 86_400
METADATA = "http://169.254.169.254/latest/meta-data"  # a URL the audit must never request


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _text(seed: int) -> str:
    rnd = random.Random(seed)
    words = [
        "council", "budget", "transport", "river", "bridge", "school", "market", "garden",
        "festival", "library", "station", "harbour", "museum", "theatre", "stadium", "clinic",
    ]  # fmt: skip
    return " ".join(rnd.choice(words) + str(rnd.randrange(50)) for _ in range(300))


class PagesSite:
    """/sitemap.xml (found by the fallback) listing /p/0 … /p/N-1, and the pages.

    ``lastmods[i]`` is what the sitemap says (None: no lastmod), ``versions[i]``
    selects the page's text, ``modified[i]`` the page's own JSON-LD dateModified.
    ``generation``: the sitemap carries Last-Modified and every lastmod equals it.
    """

    def __init__(self, pages: int, *, generation: bool = False, dated: bool = True) -> None:
        self.n = pages
        self.generation = generation
        self.lastmods: list[int | None] = [
            T0 + i * 7 * DAY if dated else None for i in range(pages)
        ]
        self.modified = [T0 + i * 7 * DAY for i in range(pages)]
        self.versions = [0] * pages
        self.site: Site | None = None

    def change(self, pages: range, *, content: bool, lastmod: bool, days: int = 30) -> None:
        for i in pages:
            if content:
                self.versions[i] += 1
                self.modified[i] += days * DAY
            if lastmod:
                current = self.lastmods[i]
                self.lastmods[i] = (current or T0) + days * DAY

    async def sitemap(self, request: web.Request) -> web.Response:
        assert self.site is not None
        headers: dict[str, str] = {}
        stamps = list(self.lastmods)
        if self.generation:
            now = datetime.now(UTC).replace(microsecond=0)
            headers["Last-Modified"] = format_datetime(now, usegmt=True)
            stamps = [int(now.timestamp()) - (i % 2) for i in range(self.n)]
        items = "".join(
            f"<url><loc>{self.site.url(f'/p/{i}')}</loc>"
            + (f"<lastmod>{_iso(stamp)}</lastmod>" if stamp is not None else "")
            + "</url>"
            for i, stamp in enumerate(stamps)
        )
        body = (
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{items}</urlset>"
        )
        return web.Response(text=body, content_type="application/xml", headers=headers)

    async def page(self, request: web.Request) -> web.Response:
        i = int(request.match_info.get("i", request.path.rsplit("/", 1)[-1]))
        ld = json.dumps(
            {
                "@context": "https://schema.org",
                "@graph": [
                    {"@type": "WebSite", "name": "x"},
                    {"@type": "Article", "dateModified": _iso(self.modified[i])},
                ],
            }
        )
        html = (
            f'<html><head><script type="application/ld+json">{ld}</script></head>'
            f"<body><nav>menu</nav><article><p>{_text(i * 1000 + self.versions[i])}</p>"
            "</article></body></html>"
        )
        return web.Response(text=html, content_type="text/html")

    async def start(self, sites: Sites, host: str) -> Site:
        routes: dict[str, Any] = {"/sitemap.xml": self.sitemap}
        for i in range(self.n):
            routes[f"/p/{i}"] = self.page
        self.site = await sites.start(host, routes)
        return self.site


async def harvest(site: PagesSite, tmp: Path, name: str, **overrides: Any) -> list[dict[str, Any]]:
    assert site.site is not None
    opts = {"state.path": str(tmp / "state.sqlite"), "output.emit": "delta", **overrides}
    out = tmp / f"{name}.jsonl"
    await asyncio.to_thread(
        run_job,
        fast_config(**opts),
        [site.site.origin],
        str(out),
        report_path=str(tmp / f"{name}.report.json"),
        progress=False,
    )
    return [json.loads(line) for line in out.read_text().splitlines()]


def host_report(tmp: Path, name: str) -> dict[str, Any]:
    line = (tmp / f"{name}.hosts.jsonl").read_text().splitlines()[0]
    result: dict[str, Any] = json.loads(line)
    return result


async def audit(tmp: Path, k: int = 20) -> HostAudit:
    cfg = fast_config()
    audits = await asyncio.to_thread(run_audit, cfg, str(tmp / "state.sqlite"), k)
    assert len(audits) == 1
    return audits[0]


def _events(records: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in records:
        out[r["event"]] = out.get(r["event"], 0) + 1
    return out


async def test_news_site_stamping_generation_time(sites: Sites, tmp_path: Path) -> None:
    site = PagesSite(40, generation=True)
    await site.start(sites, "127.0.0.100")
    first = await harvest(site, tmp_path, "one")
    assert _events(first) == {"new": 40}
    verdict = host_report(tmp_path, "one")["lastmod_audit"]
    assert verdict["verdict"] == "generation_time"
    assert verdict["figures"]["generation_share"] == 1.0
    # Every lastmod moved (it is the generation time), but that says nothing: the cron
    # delta does not call them changed (issue 53: nor writes them at all) ...
    assert await harvest(site, tmp_path, "two") == []
    # ... and asked for, they are labelled unverified.
    unverified = {"output.emit": "delta,unverified"}
    assert _events(await harvest(site, tmp_path, "three", **unverified)) == {"unverified": 40}
    since = {"output.since": "2020-01-01", **unverified}
    assert {r["since"] for r in await harvest(site, tmp_path, "four", **since)} == {"unverified"}


async def test_archive_without_lastmod_is_absent(sites: Sites, tmp_path: Path) -> None:
    site = PagesSite(30, dated=False)
    await site.start(sites, "127.0.0.101")
    await harvest(site, tmp_path, "one")
    assert host_report(tmp_path, "one")["lastmod_audit"]["verdict"] == "absent"
    # Nothing can say which of them changed: the cron delta leaves them out (issue 53)
    # and counts them; asked for, they are written, labelled, not dropped.
    assert await harvest(site, tmp_path, "two") == []
    assert _events(
        await harvest(site, tmp_path, "three", **{"output.emit": "delta,unverified"})
    ) == {"unverified": 30}


async def test_honest_site_earns_trust_and_then_its_lastmod_filters(
    sites: Sites, tmp_path: Path
) -> None:
    site = PagesSite(12)
    await site.start(sites, "127.0.0.102")
    await harvest(site, tmp_path, "one")
    assert host_report(tmp_path, "one")["lastmod_audit"]["verdict"] == "plausible"
    first = await audit(tmp_path)
    assert first["sample"] is not None
    assert first["sample"]["agree"] == 12  # the pages' dateModified matches
    assert first["score"] is not None
    # No content change seen yet, but 12 of 12 pages' own dates agree with lastmod: that
    # is evidence enough (issue 30 item 8); change tracking keeps checking.
    assert first["score"]["level"] == "trusted"
    assert "page dates agree with lastmod on 100% of 12 pages" in str(first["score"]["reason"])

    site.change(range(6), content=True, lastmod=True)
    assert _events(await harvest(site, tmp_path, "two")) == {"changed": 6}
    second = await audit(tmp_path)
    assert second["score"] is not None
    assert (second["score"]["level"], second["score"]["recall"], second["score"]["precision"]) == (
        "trusted",
        1.0,
        1.0,
    )

    site.change(range(11, 12), content=True, lastmod=True)
    assert _events(await harvest(site, tmp_path, "three")) == {"changed": 1}


async def test_lastmod_that_never_moves_while_pages_change_is_untrusted(
    sites: Sites, tmp_path: Path
) -> None:
    site = PagesSite(12)
    await site.start(sites, "127.0.0.103")
    await harvest(site, tmp_path, "one")
    await audit(tmp_path)
    site.change(range(8), content=True, lastmod=False)
    assert await harvest(site, tmp_path, "two") == []  # lastmod says nothing changed ...
    scored = await audit(tmp_path)
    assert scored["score"] is not None
    assert scored["score"]["level"] == "untrusted"  # ... and the pages say it lies
    assert scored["score"]["recall"] == 0.0
    # From now on the host's URLs are written as unverified rather than filtered out.
    assert await harvest(site, tmp_path, "three") == []  # the delta leaves them out
    assert _events(
        await harvest(site, tmp_path, "four", **{"output.emit": "delta,unverified"})
    ) == {"unverified": 12}


async def test_lastmod_that_moves_every_run_while_nothing_changes_is_untrusted(
    sites: Sites, tmp_path: Path
) -> None:
    site = PagesSite(12)
    await site.start(sites, "127.0.0.104")
    await harvest(site, tmp_path, "one")
    await audit(tmp_path)
    site.change(range(12), content=False, lastmod=True)
    assert _events(await harvest(site, tmp_path, "two")) == {"changed": 12}
    scored = await audit(tmp_path)
    assert scored["score"] is not None
    assert scored["score"]["level"] == "untrusted"
    assert scored["score"]["precision"] == 0.0
    site.change(range(12), content=False, lastmod=True)
    assert await harvest(site, tmp_path, "three") == []  # the delta leaves them out
    assert _events(
        await harvest(site, tmp_path, "four", **{"output.emit": "delta,unverified"})
    ) == {"unverified": 12}


async def test_harvester_audit_writes_table_json_and_html(sites: Sites, tmp_path: Path) -> None:
    site = PagesSite(12)
    s = await site.start(sites, "127.0.0.105")
    await harvest(site, tmp_path, "one")
    state = str(tmp_path / "state.sqlite")
    domains = tmp_path / "domains.txt"
    domains.write_text(f"# the hosts to audit\n{s.origin}\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harvester",
        "audit",
        "-i",
        str(domains),
        "--state",
        state,
        "--sample",
        "5",
        "--json",
        str(tmp_path / "audit.json"),
        "--html",
        str(tmp_path / "audit.html"),
        "--allow",
        "127.0.0.0/8",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    assert s.host in out.decode()
    assert "plausible" in out.decode()
    report = json.loads((tmp_path / "audit.json").read_text())
    [host] = report["hosts"]
    assert host["sample"]["agree"] == 5
    assert sum(s.hits(f"/p/{i}") for i in range(12)) == 5  # K pages, no more
    assert "<svg" in (tmp_path / "audit.html").read_text()


async def test_audit_honours_robots_and_never_leaves_the_host(sites: Sites, tmp_path: Path) -> None:
    site = PagesSite(12)
    s = await site.start(sites, "127.0.0.106")
    await harvest(site, tmp_path, "one")
    # A page this host forbids, and a URL on another host that the ledger lists
    # (sitemaps are untrusted input): neither may be requested by the audit.
    import sqlite3

    state = tmp_path / "state.sqlite"
    with sqlite3.connect(state) as db:
        host_id, discovery = db.execute("SELECT id, discovery FROM hosts").fetchone()
        memory = json.loads(discovery)
        memory["robots"] = "User-agent: *\nDisallow: /p/3\nCrawl-delay: 0.1\n"
        db.execute("UPDATE hosts SET discovery = ? WHERE id = ?", (json.dumps(memory), host_id))
        sitemap_id = db.execute("SELECT id FROM sitemaps").fetchone()[0]
        blobs = pack(array("q", [-1]), array("q", [NO_LASTMOD]), [METADATA])
        db.execute(
            "INSERT INTO url_chunks (host_id, sitemap_id, run, n, fps, lastmods, urls) "
            "VALUES (?, ?, 1, 1, ?, ?, ?)",
            (host_id, sitemap_id, *blobs),
        )
    result = await audit(tmp_path, k=13)
    assert result["sample"] is not None
    assert result["sample"]["robots_disallowed"] == 1
    assert result["sample"]["other_host"] == 1
    assert result["sample"]["agree"] == 11
    assert s.hits("/p/3") == 0
    # The remembered Crawl-delay paces the sampled pages (measured at the server).
    # The span, not each gap: a loaded machine can delay one arrival at the server
    # and so shorten the gap after it, but the last request is sent ten delays after
    # the first, whatever the load (one gap of 0.088 s failed on a load of 15).
    starts = sorted(h.start for h in s.log if h.path.startswith("/p/"))[-11:]
    assert starts[-1] - starts[0] >= 10 * 0.1 - 0.05


async def test_run_with_verify_lastmod_writes_the_audit_beside_the_output(
    sites: Sites, tmp_path: Path
) -> None:
    site = PagesSite(12)
    s = await site.start(sites, "127.0.0.107")
    out = tmp_path / "urls.jsonl"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harvester",
        "run",
        s.origin,
        "-o",
        str(out),
        "--verify-lastmod",
        "4",
        "--allow",
        "127.0.0.0/8",
        "--workers",
        "1",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    report = json.loads(Path(f"{out}.audit.json").read_text())  # noqa: ASYNC240
    assert report["hosts"][0]["sample"]["agree"] == 4
    assert Path(f"{out}.audit.html").exists()  # noqa: ASYNC240
    assert "plausible" in err.decode()
