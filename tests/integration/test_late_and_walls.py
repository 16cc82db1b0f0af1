"""Issue 51 on loopback: a slow or https-dropping host is found late; a bot wall is ``blocked``.

Real servers and sockets; small timeouts through the config. What decides each test
is what was found and how the host is classified, never how long it took.

* A site whose every response waits ``DELAY`` seconds before its first byte, longer
  than ``first_byte_timeout``: the first contact times out, the late attempt (with
  ``late_first_byte_timeout``) finds every URL.
* A port that never completes a TLS handshake but serves plain http (``Sniffing``: a
  TLS ClientHello is held unanswered, anything else is passed to an aiohttp site):
  the https connect times out, the late attempt over http finds the site.
* 403 on robots.txt and every probed location: ``blocked``; 404 everywhere: ``none``.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from aiohttp import web

from harvester.config.crawl import DiscoveryConfig
from harvester.crawl.probes import DEFAULT_BUDGET, plan
from harvester.errors import FetchTimeout
from tests.integration.conftest import Reply
from tests.integration.harvesting import collect
from tests.integration.relay import Relay
from tests.integration.webs import robots, urlset

if TYPE_CHECKING:
    from tests.integration.conftest import Site, Sites

DELAY = 3.0  # seconds before a slow site's first byte
SMALL = {
    "fetch.connect_timeout": 1.0,
    "fetch.first_byte_timeout": 1.0,
    "fetch.read_timeout": 1.0,
    "fetch.late_first_byte_timeout": 20.0,
    "fetch.total_timeout": 30.0,
}
# Every location discovery probes by default (robots.txt listing none): a wall answers
# them all alike.
# What a default discovery asks after robots.txt: the home page (one of the budget's
# requests, issue 49) and the probes.
FALLBACKS = ("/", *plan(DiscoveryConfig().fallback_paths, "", DEFAULT_BUDGET - 1))


def slow(route: bytes) -> Any:
    """A handler that answers ``route`` after ``DELAY`` seconds of silence."""

    async def handler(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(DELAY)
        return web.Response(body=route, content_type="application/xml")

    return handler


def key(site: Site) -> str:
    return f"{site.host}:{site.port}"


async def test_a_site_slower_than_first_byte_timeout_is_found_late(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.51.1", routes)
    pages = [site.url(f"/p{i}") for i in range(3)]
    routes["/robots.txt"] = slow(robots(site.url("/sitemap.xml")))
    routes["/sitemap.xml"] = slow(urlset(*pages))
    records, hosts = await collect([site.origin], **SMALL)
    assert sorted(r["loc"] for r in records) == pages
    report = hosts[key(site)]
    assert report["first_contact_timeout"] == "first_byte"
    assert report["recovered_late"] is True
    assert report["late_seconds"] > 0
    assert report["discovery"] == "robots"
    assert report["failures"] == []  # the late attempt's report: nothing failed there
    assert site.hits("/robots.txt") == 2  # the fast attempt, then the late one


async def test_late_attempts_off_keeps_the_fast_failure(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.51.2", routes)
    routes["/robots.txt"] = slow(robots(site.url("/sitemap.xml")))
    records, hosts = await collect([site.origin], **{**SMALL, "fetch.late_first_byte_timeout": 0})
    assert records == []
    report = hosts[key(site)]
    assert report["first_contact_timeout"] == "first_byte"
    assert report["recovered_late"] is False
    assert [f["class"] for f in report["failures"]] == ["timeout"]
    assert site.hits("/robots.txt") == 1


async def test_a_host_that_fails_late_too_keeps_the_late_class(sites: Sites) -> None:
    """The late attempt's class is the host's: here a timeout again (it never answers)."""
    hang = asyncio.Event()

    async def never(request: web.Request) -> web.StreamResponse:
        await hang.wait()
        return web.Response()

    site = await sites.start("127.0.51.3", {"/robots.txt": never})
    try:
        _, hosts = await collect([site.origin], **{**SMALL, "fetch.late_first_byte_timeout": 1.5})
    finally:
        hang.set()
    report = hosts[key(site)]
    assert report["recovered_late"] is False
    [failure] = report["failures"]
    assert failure["class"] == "timeout"
    assert "no response within 1.5s" in failure["message"]  # the late attempt's wait
    assert site.hits("/robots.txt") == 2


class Sniffing(Relay):
    """A port that holds a TLS ClientHello unanswered and passes plain HTTP to ``backend``."""

    def __init__(self, backend: int) -> None:
        super().__init__(backend, "127.0.51.4")
        self.tls = 0  # handshakes held

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        first = await reader.read(1)
        if first == b"\x16":  # a TLS record: never answered, like a port that drops
            self.tls += 1
            with contextlib.suppress(ConnectionError):
                while await reader.read(4096):
                    pass
            return
        await self.relay(reader, writer, first)


async def test_https_that_never_answers_is_found_over_http_late(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    backend = await sites.start("127.0.51.4", routes)
    async with Sniffing(backend.port).serve("127.0.51.5") as front:
        origin = f"http://127.0.51.5:{front.port}"
        routes["/robots.txt"] = robots(f"{origin}/sitemap.xml")
        routes["/sitemap.xml"] = urlset(f"{origin}/a", f"{origin}/b")
        records, hosts = await collect([f"127.0.51.5:{front.port}"], **SMALL)
    assert sorted(r["loc"] for r in records) == [f"{origin}/a", f"{origin}/b"]
    report = hosts[f"127.0.51.5:{front.port}"]
    assert report["first_contact_timeout"] == "connect"
    assert report["recovered_late"] is True
    assert report["failures"] == []
    assert front.tls == 1  # https once (fast, failed), then http: no patient https


async def wall_site(sites: Sites, host: str, status: int, **extra: Reply) -> Site:
    routes: dict[str, Any] = {path: Reply(b"no", status=status) for path in FALLBACKS}
    routes["/robots.txt"] = Reply(b"no", status=status)
    routes.update({path.replace("_", "/"): reply for path, reply in extra.items()})
    return await sites.start(host, routes)


async def test_403_everywhere_is_blocked(sites: Sites) -> None:
    site = await wall_site(sites, "127.0.51.6", 403)
    records, hosts = await collect([site.origin])
    assert records == []
    report = hosts[key(site)]
    assert report["discovery"] == "blocked"
    [failure] = report["failures"]
    assert failure["class"] == "blocked"
    assert failure["status"] == 403
    assert "HTTP 403" in failure["message"]
    assert all(site.hits(path) == 1 for path in FALLBACKS)  # every location was asked


async def test_404_everywhere_stays_none(sites: Sites) -> None:
    site = await wall_site(sites, "127.0.51.7", 404)
    _, hosts = await collect([site.origin])
    report = hosts[key(site)]
    assert report["discovery"] == "none"
    assert report["failures"] == []


async def test_403_robots_with_a_sitemap_at_a_probed_location_is_not_blocked(
    sites: Sites,
) -> None:
    routes: dict[str, Any] = {path: Reply(b"no", status=403) for path in FALLBACKS}
    routes["/robots.txt"] = Reply(b"no", status=403)
    site = await sites.start("127.0.51.8", routes)
    routes["/sitemap_index.xml"] = urlset(site.url("/x"))
    records, hosts = await collect([site.origin])
    assert [r["loc"] for r in records] == [site.url("/x")]
    assert hosts[key(site)]["discovery"] == f"fallback:{site.url('/sitemap_index.xml')}"


async def test_403_robots_and_404_probes_is_none(sites: Sites) -> None:
    site = await sites.start("127.0.51.9", {"/robots.txt": Reply(b"no", status=403)})
    _, hosts = await collect([site.origin])
    report = hosts[key(site)]
    assert report["discovery"] == "none"
    assert report["failures"] == []


async def test_challenge_pages_everywhere_are_blocked(sites: Sites) -> None:
    """A 503 challenge page on robots.txt and a 200 one at every probe: a wall too."""
    page = b"<!DOCTYPE html><html><title>Just a moment...</title></html>"
    routes: dict[str, Any] = {
        path: Reply(page, headers={"Content-Type": "text/html"}) for path in FALLBACKS
    }
    routes["/robots.txt"] = Reply(page, status=503, headers={"Content-Type": "text/html"})
    site = await sites.start("127.0.51.10", routes)
    _, hosts = await collect([site.origin], **{"fetch.retries": 2})
    report = hosts[key(site)]
    assert report["discovery"] == "blocked"
    [failure] = report["failures"]
    assert failure["class"] == "blocked"
    assert "challenge page: cloudflare" in failure["message"]
    assert site.hits("/robots.txt") == 1  # a challenge is not retried


def test_first_contact_is_the_timeout_kind() -> None:
    assert FetchTimeout("x").first_contact is None
