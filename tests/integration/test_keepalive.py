"""A finished host's pooled connections close when the host ends; a working host's stay.

Issue 51: a long ``fetch.keepalive_timeout`` saves the reconnects (TLS handshakes) of a
host at work, and ``Fetcher.end_host`` (called by the host worker at its end) closes
the idle connections of a host that is done, so the keep-alive keeps no socket of a
finished host. ``KeepAliveServer`` is a raw HTTP/1.1 keep-alive server on loopback that
counts the connections it accepts and sees each one's close (EOF from the client).

The keep-alive is 120 s here, far longer than any test waits: a close the server sees
is the fetcher's, never the keep-alive's expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from harvester.config import FetchConfig, HostPolicy
from harvester.crawl.fetch import Fetcher
from harvester.crawl.scheduler import HostSlot
from tests.integration.harvesting import collect

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

KEEPALIVE = 120.0
# Longest a test waits for a close it expects (a loaded machine's slack); without
# Fetcher.end_host the close would only come after KEEPALIVE, so the wait fails.
WAIT = 20.0
XML_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


class KeepAliveServer:
    """HTTP/1.1 with keep-alive on ``host``: ``pages`` by path, 404 otherwise.

    ``accepted`` counts connections; ``closed`` the ones the client closed; ``gates``
    holds a path's answer until its callable returns (to keep a host at work).
    """

    def __init__(self, host: str, pages: dict[str, bytes]) -> None:
        self.host = host
        self.port = 0
        self.pages = pages
        self.gates: dict[str, Callable[[], Awaitable[None]]] = {}
        self.accepted = 0
        self.closed = 0
        self.requests = 0
        self._change = asyncio.Condition()

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def key(self) -> str:
        """The host's ``host_key``."""
        return f"{self.host}:{self.port}"

    async def wait_closed(self, count: int) -> bool:
        """True once ``count`` connections were closed by the client; False after WAIT s."""
        async with self._change:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(WAIT):
                    await self._change.wait_for(lambda: self.closed >= count)
            return self.closed >= count

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while head := await reader.readuntil(b"\r\n\r\n"):
                self.requests += 1
                path = head.split(b" ", 2)[1].decode()
                gate = self.gates.get(path)
                if gate is not None:
                    await gate()
                body = self.pages.get(path)
                status = b"200 OK" if body is not None else b"404 Not Found"
                body = body or b""
                writer.write(
                    b"HTTP/1.1 %s\r\nContent-Length: %d\r\nContent-Type: application/xml\r\n\r\n%s"
                    % (status, len(body), body)
                )
                await writer.drain()
        # EOF (or a reset): the client closed this connection.
        writer.close()
        async with self._change:
            self.closed += 1
            self._change.notify_all()


def _urlset(origin: str, name: str, n: int) -> bytes:
    locs = "".join(f"<url><loc>{origin}/{name}/{i}</loc></url>" for i in range(n))
    return f'<?xml version="1.0"?><urlset xmlns="{XML_NS}">{locs}</urlset>'.encode()


def _index(origin: str, children: list[str]) -> bytes:
    refs = "".join(f"<sitemap><loc>{origin}{c}</loc></sitemap>" for c in children)
    return f'<?xml version="1.0"?><sitemapindex xmlns="{XML_NS}">{refs}</sitemapindex>'.encode()


@contextlib.asynccontextmanager
async def serving(*servers: KeepAliveServer) -> AsyncIterator[None]:
    async with contextlib.AsyncExitStack() as stack:
        for server in servers:
            await stack.enter_async_context(_serve(server))
        yield


@contextlib.asynccontextmanager
async def _serve(server: KeepAliveServer) -> AsyncIterator[None]:
    listener = await asyncio.start_server(server.handle, server.host, 0)
    server.port = listener.sockets[0].getsockname()[1]
    try:
        yield
    finally:
        listener.close()
        await listener.wait_closed()


async def _read(fetcher: Fetcher, url: str, slot: HostSlot) -> bytes:
    async with fetcher.stream(url, slot) as body:
        return b"".join([chunk async for chunk in body.chunks()])


def _slot(key: str) -> HostSlot:
    return HostSlot(key, HostPolicy(concurrency=1, rate=1000.0, burst=100))


# -- the fetcher -------------------------------------------------------------------------


async def test_end_host_closes_that_hosts_pooled_connection_and_no_other() -> None:
    a = KeepAliveServer("127.0.31.1", {"/a.xml": b"a"})
    b = KeepAliveServer("127.0.31.2", {"/b.xml": b"b"})
    cfg = FetchConfig(allow=("127.0.0.0/8",), keepalive_timeout=KEEPALIVE, retries=0)
    async with serving(a, b), Fetcher(cfg) as fetcher:
        slot_a, slot_b = _slot(a.key), _slot(b.key)
        for _ in range(2):  # a host at work reuses its connection
            assert await _read(fetcher, f"{a.origin}/a.xml", slot_a) == b"a"
        assert await _read(fetcher, f"{b.origin}/b.xml", slot_b) == b"b"
        assert (a.accepted, b.accepted) == (1, 1)

        fetcher.end_host(a.key)

        assert await a.wait_closed(1), "the ended host's connection stayed open"
        assert b.closed == 0
        assert await _read(fetcher, f"{b.origin}/b.xml", slot_b) == b"b"
        assert b.accepted == 1  # the working host's connection was kept and reused
        # An ended host asked again dials again.
        assert await _read(fetcher, f"{a.origin}/a.xml", slot_a) == b"a"
        assert a.accepted == 2


async def test_end_host_by_name_closes_the_default_ports_only() -> None:
    # A host_key without a port stands for the scheme's default ports (80, 443), so a
    # name served on another port (another host_key) keeps its connection.
    a = KeepAliveServer("127.0.31.3", {"/a.xml": b"a"})
    cfg = FetchConfig(allow=("127.0.0.0/8",), keepalive_timeout=KEEPALIVE, retries=0)
    async with serving(a), Fetcher(cfg) as fetcher:
        slot_a = _slot(a.key)
        assert await _read(fetcher, f"{a.origin}/a.xml", slot_a) == b"a"
        fetcher.end_host(a.host)  # "127.0.31.3": ports 80 and 443
        assert await _read(fetcher, f"{a.origin}/a.xml", slot_a) == b"a"
        assert (a.accepted, a.closed) == (1, 0)


# -- a run: the host worker ends its host --------------------------------------------------


async def test_a_finished_hosts_connection_closes_while_another_host_works() -> None:
    done = KeepAliveServer("127.0.31.4", {})
    working = KeepAliveServer("127.0.31.5", {})
    seen_while_working: list[bool] = []

    async def after_done_closed() -> None:
        # The working host's last child is answered only once the finished host's
        # connection was closed (or WAIT passed, and the test fails below).
        seen_while_working.append(await done.wait_closed(1))

    async with serving(done, working):
        done.pages.update(
            {
                "/robots.txt": f"Sitemap: {done.origin}/sitemap.xml\n".encode(),
                "/sitemap.xml": _urlset(done.origin, "d", 3),
            }
        )
        working.pages.update(
            {
                "/robots.txt": f"Sitemap: {working.origin}/index.xml\n".encode(),
                "/index.xml": _index(working.origin, ["/s1.xml", "/s2.xml"]),
                "/s1.xml": _urlset(working.origin, "s1", 2),
                "/s2.xml": _urlset(working.origin, "s2", 2),
            }
        )
        working.gates["/s2.xml"] = after_done_closed
        settings: dict[str, Any] = {
            "fetch.keepalive_timeout": KEEPALIVE,
            "politeness.default.concurrency": 1,  # one connection per host at a time
            "fetch.read_timeout": WAIT + 10,  # (the gate may hold an answer up to WAIT)
        }
        records, _ = await collect([done.origin, working.origin], **settings)

    assert seen_while_working == [True], "the finished host's connection stayed open"
    assert len(records) == 3 + 4
    # Every request of the working host went over its one connection, before and after
    # the other host ended.
    assert working.accepted == 1
    assert working.requests >= 4  # robots.txt, the index, its two children
    assert done.accepted == 1
