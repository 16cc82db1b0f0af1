"""Dead and hanging hosts fail fast (issue 29): real sockets on loopback, small timeouts.

* A listening socket whose accept queue is full drops further SYNs, like an
  address that drops packets: the connect times out.
* ``Silent`` accepts connections, counts them and never sends a byte: the
  first response byte (or, for https, the TLS handshake) never comes.
* A trickling aiohttp handler sends a body slower than ``fetch.min_speed``.

Each rule is checked where its cost shows: the number of connections or
requests the server saw, and the attempts the failure reports. Not by the wall
time a host took: a loaded machine stretches it (issue 50).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp import web

from harvester.config import FetchConfig, HostPolicy
from harvester.crawl.fetch import Fetcher
from harvester.crawl.scheduler import HostSlot
from harvester.errors import FetchTimeout, TooSlow
from tests.integration.harvesting import collect
from tests.integration.webs import robots, urlset

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from tests.integration.conftest import Sites

TIMEOUT = 0.5  # connect / first-byte timeout of these tests


@contextlib.contextmanager
def full_backlog(host: str) -> Iterator[int]:
    """A port on ``host`` that is listening but whose accept queue is full: SYNs are dropped."""
    server = socket.socket()
    fillers: list[socket.socket] = []
    try:
        server.bind((host, 0))
        server.listen(0)
        port: int = server.getsockname()[1]
        for _ in range(3):  # more than the queue holds; the kernel drops the rest
            filler = socket.socket()
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect((host, port))
            fillers.append(filler)
        yield port
    finally:
        for filler in fillers:
            filler.close()
        server.close()


class Silent:
    """A TCP server that accepts, reads whatever comes and never answers."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        with contextlib.suppress(ConnectionError):
            while await reader.read(4096):
                pass

    @contextlib.asynccontextmanager
    async def serve(self, host: str) -> AsyncIterator[Silent]:
        self._server = await asyncio.start_server(self._handle, host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        try:
            yield self
        finally:
            for writer in self._writers:
                writer.close()
            self._server.close()
            await self._server.wait_closed()


def fetcher(**cfg: Any) -> Fetcher:
    settings: dict[str, Any] = {
        "allow": ("127.0.0.0/8",),
        "connect_timeout": TIMEOUT,
        "first_byte_timeout": TIMEOUT,
        "read_timeout": 5.0,
        "retries": 3,
        "backoff_base": 0.01,
    }
    settings.update(cfg)
    return Fetcher(FetchConfig(**settings))


def slot(host: str) -> HostSlot:
    return HostSlot(host, HostPolicy(concurrency=4, rate=1000.0, burst=100))


async def read(f: Fetcher, url: str, s: HostSlot) -> bytes:
    async with f.stream(url, s) as body:
        return b"".join([chunk async for chunk in body.chunks()])


def fail_fast_config(**cfg: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "fetch.connect_timeout": TIMEOUT,
        "fetch.first_byte_timeout": TIMEOUT,
        "fetch.read_timeout": 5.0,
        "fetch.retries": 3,
        "fetch.late_first_byte_timeout": 0,  # fail fast only: no late attempt (issue 51)
    }
    settings.update(cfg)
    return settings


# -- the fetcher -------------------------------------------------------------------------


async def test_connect_timeout_on_first_contact_is_not_retried() -> None:
    with full_backlog("127.0.29.1") as port:
        url = f"http://127.0.29.1:{port}/robots.txt"
        async with fetcher() as f:
            with pytest.raises(FetchTimeout) as info:
                await read(f, url, slot("127.0.29.1"))
    assert info.value.message == f"connect timeout ({TIMEOUT:g}s) on first contact, not retried"
    assert info.value.url == url
    assert info.value.attempts == 1


async def test_no_first_byte_fails_at_once() -> None:
    async with Silent().serve("127.0.29.2") as silent, fetcher() as f:
        url = f"http://127.0.29.2:{silent.port}/robots.txt"
        with pytest.raises(FetchTimeout) as info:
            await read(f, url, slot("127.0.29.2"))
    assert info.value.message == f"no response within {TIMEOUT:g}s on first contact, not retried"
    assert info.value.attempts == 1
    assert silent.connections == 1


async def test_a_host_that_answered_is_retried_with_the_read_timeout(sites: Sites) -> None:
    hang = asyncio.Event()

    async def stall(request: web.Request) -> web.StreamResponse:
        await hang.wait()
        return web.Response()

    site = await sites.start("127.0.29.3", {"/robots.txt": b"", "/sitemap.xml": stall})
    host_slot = slot("127.0.29.3")
    try:
        async with fetcher(read_timeout=0.2, retries=1) as f:
            assert await read(f, site.url("/robots.txt"), host_slot) == b""
            assert host_slot.answered
            with pytest.raises(FetchTimeout) as info:
                await read(f, site.url("/sitemap.xml"), host_slot)
    finally:
        hang.set()
    assert info.value.message == "no response within 0.2s"  # read_timeout, not first_byte
    assert info.value.attempts == 2
    assert site.hits("/sitemap.xml") == 2


async def test_first_contact_body_gets_the_read_timeout_back(sites: Sites) -> None:
    """first_byte_timeout bounds the wait for the response, not the body's stalls."""
    release = asyncio.Event()

    async def pause(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"<urlset>")
        await asyncio.sleep(3 * TIMEOUT)  # longer than first_byte_timeout, within read_timeout
        await response.write(b"</urlset>")
        release.set()
        return response

    site = await sites.start("127.0.29.4", {"/s.xml": pause})
    async with fetcher() as f:
        assert await read(f, site.url("/s.xml"), slot("127.0.29.4")) == b"<urlset></urlset>"
    assert release.is_set()


def trickle(step: bytes, interval: float, sent: list[int] | None = None) -> Any:
    """200 ``step``s, ``interval`` apart; ``sent`` gets each step's number, -1 at the end."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/xml"})
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):
            for n in range(200):
                await response.write(step)
                if sent is not None:
                    sent.append(n)
                await asyncio.sleep(interval)
            if sent is not None:
                sent.append(-1)
        return response

    return handler


async def test_a_body_under_min_speed_is_too_slow(sites: Sites) -> None:
    sent: list[int] = []  # steps the server wrote, and the last one: -1 once the body ended
    site = await sites.start("127.0.29.5", {"/s.xml": trickle(b" " * 20, 0.05, sent)})  # ~400 B/s
    async with fetcher(min_speed=2000, min_speed_window=0.4) as f:
        started = time.monotonic()
        with pytest.raises(TooSlow) as info:
            await read(f, site.url("/s.xml"), slot("127.0.29.5"))
        elapsed = time.monotonic() - started
    assert info.value.kind == "too_slow"
    assert info.value.url == site.url("/s.xml")
    assert "body slower than 2000 bytes/s over 0.4s" in info.value.message
    assert elapsed >= 0.4  # judged over the whole window, not before it
    assert -1 not in sent  # ... and cut off mid-body, not read to its end


async def test_a_paused_consumer_is_not_too_slow(sites: Sites) -> None:
    payload = b"x" * 65536
    site = await sites.start("127.0.29.6", {"/s.xml": payload})
    got: list[bytes] = []
    async with (
        fetcher(min_speed=10_000_000, min_speed_window=0.2, chunk_size=8192) as f,
        f.stream(site.url("/s.xml"), slot("127.0.29.6")) as body,
    ):
        async for chunk in body.chunks():
            got.append(chunk)
            await asyncio.sleep(0.1)  # the consumer is slow, not the server
    assert b"".join(got) == payload


# -- through the pipeline ----------------------------------------------------------------


async def test_https_connect_timeout_makes_no_http_request() -> None:
    """A bare domain whose https never completes its handshake is not tried over http."""
    async with Silent().serve("127.0.29.7") as silent:
        records, hosts = await collect(
            [f"127.0.29.7:{silent.port}"], **fail_fast_config(**{"run.hosts_in_flight": 1})
        )
    report = hosts[f"127.0.29.7:{silent.port}"]
    assert records == []
    assert report["discovery"] == "failed"
    [failure] = report["failures"]
    assert failure["class"] == "timeout"
    assert failure["url"] == f"https://127.0.29.7:{silent.port}/robots.txt"
    assert "connect timeout" in failure["message"]
    assert silent.connections == 1  # the https attempt only: no retry, no http fallback


async def test_tls_failure_falls_back_to_http(sites: Sites) -> None:
    """A plain-http server on the port: the TLS handshake fails at once, http is tried."""
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.29.8", routes)
    routes.update(
        {
            "/robots.txt": robots(site.url("/sitemap.xml")),
            "/sitemap.xml": urlset(site.url("/page")),
        }
    )
    records, hosts = await collect([f"127.0.29.8:{site.port}"], **fail_fast_config())
    assert [r["loc"] for r in records] == [site.url("/page")]
    assert hosts[f"127.0.29.8:{site.port}"]["failures"] == []


async def test_dead_hosts_cost_one_timeout_each(sites: Sites) -> None:
    """One host at a time: the run takes about one timeout per dead host, not retries of it."""
    silents = [Silent(), Silent()]
    async with contextlib.AsyncExitStack() as stack:
        ports = [stack.enter_context(full_backlog(f"127.0.29.{10 + i}")) for i in range(2)]
        for i, silent in enumerate(silents):
            await stack.enter_async_context(silent.serve(f"127.0.29.{20 + i}"))
        seeds = [f"127.0.29.{10 + i}:{port}" for i, port in enumerate(ports)]  # drop packets
        seeds += [f"http://127.0.29.{20 + i}:{s.port}" for i, s in enumerate(silents)]  # hang
        _, hosts = await collect(seeds, **fail_fast_config(**{"run.hosts_in_flight": 1}))
    assert len(hosts) == 4
    for report in hosts.values():
        [failure] = report["failures"]  # robots.txt only: no fallback path was asked
        assert failure["class"] == "timeout"
        assert failure["url"].endswith("/robots.txt")
        assert failure["message"].endswith("on first contact, not retried")
    assert [s.connections for s in silents] == [1, 1]


async def test_too_slow_body_is_reported_and_not_fetched_again(sites: Sites) -> None:
    site = await sites.start("127.0.29.9", {"/sitemap.xml": trickle(b" " * 20, 0.05)})
    _, hosts = await collect(
        [site.url("/sitemap.xml")],
        **fail_fast_config(**{"fetch.min_speed": 2000, "fetch.min_speed_window": 0.4}),
    )
    [failure] = hosts[site.origin.removeprefix("http://")]["failures"]
    assert failure["class"] == "too_slow"
    assert failure["url"] == site.url("/sitemap.xml")
    assert site.hits("/sitemap.xml") == 1
