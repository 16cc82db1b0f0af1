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
from tests.integration.webs import robots, urlset

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

HOST = "127.0.51.9"
HOLD = 2.0  # seconds each connection's first bytes are held (connect_timeout is 1 s)


class Holding:
    """A port that holds each connection's bytes ``HOLD`` seconds, then pipes to ``backend``."""

    def __init__(self, backend: int) -> None:
        self.backend = backend
        self.port = 0
        self.connections = 0
        self._writers: list[asyncio.StreamWriter] = []

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        await asyncio.sleep(HOLD)
        up_reader, up_writer = await asyncio.open_connection(HOST, self.backend)
        self._writers.append(up_writer)
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    @contextlib.asynccontextmanager
    async def serve(self) -> AsyncIterator[Holding]:
        server = await asyncio.start_server(self._handle, HOST, 0)
        self.port = server.sockets[0].getsockname()[1]
        try:
            yield self
        finally:
            for writer in self._writers:
                writer.close()
            server.close()
            await server.wait_closed()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()


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
    async with tls_site(ca, routes) as backend, Holding(backend).serve() as front:
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
