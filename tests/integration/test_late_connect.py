"""A late attempt is patient on the connect too (issue 51, a loaded machine).

A TLS site whose every handshake is answered ``HOLD`` seconds late (a front port that
holds the bytes, then passes them to a real TLS server on loopback, certificate from a
throwaway CA): longer than ``connect_timeout``, shorter than the late wait. The first
contact ends in a connect timeout; the late attempt, to the same https origin (the seed
names its scheme), waits for the handshake and finds every URL. This is what a run on an
overloaded machine meets: handshakes late by seconds for a while, every kind of site.
What decides the test is what was found, never how long it took.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import TYPE_CHECKING

import trustme
from aiohttp import web

from tests.integration.harvesting import collect
from tests.integration.relay import Relay
from tests.integration.webs import robots, urlset

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

HOST = "127.0.51.9"
HOLD = 2.0  # seconds each connection's first bytes are held (connect_timeout is 1 s)


class Holding(Relay):
    """A port that holds each connection's bytes ``HOLD`` seconds, then pipes to ``backend``."""

    def __init__(self, backend: int) -> None:
        super().__init__(backend, HOST)
        self.connections = 0

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        await asyncio.sleep(HOLD)
        await self.relay(reader, writer)


@contextlib.asynccontextmanager
async def tls_site(ca: trustme.CA, routes: dict[str, bytes]) -> AsyncIterator[int]:
    """A TLS server on ``HOST`` answering ``routes``; yields its port."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(HOST).configure_cert(context)

    async def handle(request: web.Request) -> web.Response:
        body = routes.get(request.path)
        if body is None:
            return web.Response(status=404)
        return web.Response(body=body, content_type="application/xml")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, HOST, 0, ssl_context=context)
        await site.start()
        yield site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


async def test_a_late_attempt_waits_for_a_slow_handshake(tmp_path: Path) -> None:
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    routes: dict[str, bytes] = {}
    async with tls_site(ca, routes) as backend, Holding(backend).serve(HOST) as front:
        origin = f"https://{HOST}:{front.port}"
        pages = [f"{origin}/p{i}" for i in range(3)]
        routes["/robots.txt"] = robots(f"{origin}/sitemap.xml")
        routes["/sitemap.xml"] = urlset(*pages)
        records, hosts = await collect(
            [origin],
            **{
                "fetch.ca_bundle": str(ca_file),
                "fetch.connect_timeout": 1.0,
                "fetch.first_byte_timeout": 1.0,
                "fetch.late_first_byte_timeout": 20.0,
                "fetch.total_timeout": 40.0,
            },
        )
    assert sorted(r["loc"] for r in records) == pages
    report = hosts[f"{HOST}:{front.port}"]
    assert report["first_contact_timeout"] == "connect"
    assert report["recovered_late"] is True
    assert report["failures"] == []
    assert front.connections >= 2  # the fast attempt's, then the late one's
