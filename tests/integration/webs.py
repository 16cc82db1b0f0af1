"""Loopback webs and sitemap documents the integration tests share.

Documents: ``urlset``, ``index`` and ``robots`` (bytes a route serves). Webs, each on
its own loopback address through the ``sites`` fixture (conftest.py):
``site_with_tree`` (robots.txt → an index → a plain child, a .xml.gz and a 404),
``ChangingSite`` (an index and two urlsets a test edits between runs, with or without
validators), ``slow_host`` (an index whose children answer late: a run to stop midway)
and ``raw_server`` (a TCP server that answers any request with the same bytes, for
responses aiohttp's own server would never send).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import hashlib
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.integration.conftest import Reply

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from tests.integration.conftest import Site, Sites


NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str, lastmod: str | None = None) -> bytes:
    mod = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    body = "".join(f"<url><loc>{loc}</loc>{mod}</url>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset {NS}>{body}</urlset>'.encode()


def index(*children: str | tuple[str, str]) -> bytes:
    parts = []
    for child in children:
        loc, mod = (child, None) if isinstance(child, str) else child
        lastmod = f"<lastmod>{mod}</lastmod>" if mod else ""
        parts.append(f"<sitemap><loc>{loc}</loc>{lastmod}</sitemap>")
    return f"<sitemapindex {NS}>{''.join(parts)}</sitemapindex>".encode()


def robots(*sitemaps: str) -> bytes:
    lines = ["User-agent: *", "Disallow: /private"] + [f"Sitemap: {s}" for s in sitemaps]
    return "\n".join(lines).encode()


async def site_with_tree(sites: Sites, host: str = "127.0.0.2") -> Site:
    """robots.txt → index → three children: plain, .xml.gz (gzip file), and a 404."""
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)
    u = site.url
    routes.update(
        {
            "/robots.txt": robots(u("/sitemap_index.xml")),
            "/sitemap_index.xml": index(
                (u("/a.xml"), "2024-01-01"), (u("/b.xml.gz"), "2024-06-01"), u("/missing.xml")
            ),
            "/a.xml": urlset(u("/p/1"), u("/p/2"), lastmod="2024-01-01T10:00:00+02:00"),
            "/b.xml.gz": Reply(
                gzip.compress(urlset(u("/p/3"), u("/p/2"))),
                headers={"Content-Type": "application/gzip"},
            ),
        }
    )
    return site


@contextlib.asynccontextmanager
async def raw_server(host: str, respond: Callable[[str], bytes]) -> AsyncIterator[RawServer]:
    """A TCP server on ``host``: each request gets ``respond(origin)`` verbatim, then FIN."""
    raw = RawServer(host)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raw.hits += 1
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(respond(raw.origin))
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, host, 0)
    raw.port = server.sockets[0].getsockname()[1]
    try:
        yield raw
    finally:
        server.close()
        await server.wait_closed()


@dataclass
class RawServer:
    host: str
    port: int = 0
    hits: int = 0

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"


BASE_TIME = 1_700_000_000


class ChangingSite:
    """robots.txt → /index.xml → /a.xml, /b.xml, from a model edited between runs.

    ``validators``: ``etag``, ``last-modified`` or ``none``. ``bodies`` counts
    sitemap bodies served (200s); ``not_modified`` counts 304s. ``modified``: the
    Last-Modified of a file never edited (epoch; default a minute ago, an honest server
    whose lists were just made; each edit adds a second).
    """

    def __init__(self, validators: str, modified: int | None = None) -> None:
        self.validators = validators
        self.modified = int(time.time()) - 60 if modified is None else modified
        self.children = ["/a.xml", "/b.xml"]
        self.urls: dict[str, dict[str, int | None]] = {
            "/a.xml": {f"/a/{i}": BASE_TIME + i for i in range(20)},
            "/b.xml": {f"/b/{i}": None for i in range(10)},
        }
        self.versions: Counter[str] = Counter()  # bumped on every edit of a file
        self.failing: set[str] = set()
        self.bodies: Counter[str] = Counter()
        self.not_modified: Counter[str] = Counter()
        self.site: Site | None = None

    def edit(self, path: str) -> dict[str, int | None]:
        self.versions[path] += 1
        return self.urls[path]

    def body(self, path: str) -> bytes:
        assert self.site is not None
        if path == "/index.xml":
            items = "".join(
                f"<sitemap><loc>{self.site.url(c)}</loc></sitemap>" for c in self.children
            )
            return (
                '<?xml version="1.0"?><sitemapindex '
                f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{items}</sitemapindex>'
            ).encode()
        entries = []
        for loc, lastmod in self.urls[path].items():
            stamp = f"<lastmod>{w3c(lastmod)}</lastmod>" if lastmod is not None else ""
            entries.append(f"<url><loc>{self.site.url(loc)}</loc>{stamp}</url>")
        return (
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(entries)
            + "</urlset>"
        ).encode()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path in self.failing:
            return web.Response(status=500, text="oops")
        if path != "/index.xml" and path not in self.children:
            return web.Response(status=404)
        body = self.body(path)
        headers: dict[str, str] = {}
        if self.validators == "etag":
            tag = '"' + hashlib.blake2b(body, digest_size=8).hexdigest() + '"'
            headers["ETag"] = tag
            if request.headers.get("If-None-Match") == tag:
                self.not_modified[path] += 1
                return web.Response(status=304, headers=headers)
        elif self.validators == "last-modified":
            changed = datetime.fromtimestamp(self.modified + self.versions[path], UTC)
            headers["Last-Modified"] = format_datetime(changed, usegmt=True)
            since = request.headers.get("If-Modified-Since")
            if since and parsedate_to_datetime(since) >= changed:
                self.not_modified[path] += 1
                return web.Response(status=304, headers=headers)
        self.bodies[path] += 1
        return web.Response(body=body, headers=headers, content_type="application/xml")

    async def start(self, sites: Sites, host: str) -> Site:
        routes: dict[str, Any] = {"/robots.txt": b"", "/index.xml": self.handle}
        for path in ("/a.xml", "/b.xml", "/c.xml"):
            routes[path] = self.handle
        self.site = await sites.start(host, routes)
        # robots.txt names the index (served as bytes: its URL needs the port).
        routes["/robots.txt"] = f"Sitemap: {self.site.url('/index.xml')}\n".encode()
        return self.site

    def url(self, loc: str) -> str:
        assert self.site is not None
        return self.site.url(loc)


def w3c(epoch: int) -> str:
    """``epoch`` as a W3C datetime (UTC, whole seconds)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def slow_host(
    sites: Sites,
    host: str,
    children: int = 20,
    delay: float = 0.25,
    served: asyncio.Event | None = None,
) -> Site:
    """robots.txt → an index of ``children`` sitemaps, each answering after ``delay`` seconds.

    ``served`` is set once a child sitemap was answered.
    """
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)

    async def slow_child(request: web.Request) -> web.Response:
        await asyncio.sleep(delay)
        n = int(request.path.removeprefix("/c").removesuffix(".xml"))
        if served is not None:
            served.set()
        return web.Response(
            body=urlset(*(site.url(f"/p/{n}/{i}") for i in range(200))),
            content_type="application/xml",
        )

    routes["/robots.txt"] = robots(site.url("/index.xml"))
    routes["/index.xml"] = index(*(site.url(f"/c{n}.xml") for n in range(children)))
    for n in range(children):
        routes[f"/c{n}.xml"] = slow_child
    return site
