"""Fetcher against real aiohttp servers on loopback; handlers are inline per test.

Names like ``site-a.test`` resolve through ``LoopbackResolver`` to 127.0.0.1, so no
real DNS is used. Retry waits go through a recording ``sleep`` that returns at
once; the only wall-clock waits are the short read-stall timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import gzip
import hashlib
import os
import socket
import weakref
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from harvester.config import FetchConfig, HostPolicy
from harvester.crawl.fetch import Body, Fetcher
from harvester.crawl.scheduler import HostSlot
from harvester.errors import (
    BodyTooLarge,
    ConnectError,
    DNSError,
    FetchTimeout,
    HTTPStatusError,
    TooManyRedirects,
)
from tests.integration.conftest import LoopbackResolver, free_port

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

    Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

XML = b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>'


class Sleeps:
    """The fetcher's ``sleep``: records each retry delay and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@contextlib.asynccontextmanager
async def serve(routes: Mapping[str, Handler]) -> AsyncIterator[TestServer]:
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_get(path, handler)
    server = TestServer(app, host="127.0.0.1")
    async with server:
        yield server


def site(server: TestServer, path: str, name: str = "site-a.test") -> str:
    return f"http://{name}:{server.port}{path}"


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def resolver() -> LoopbackResolver:
    return LoopbackResolver({"site-a.test": "127.0.0.1", "site-b.test": "127.0.0.1"})


@pytest.fixture
def slot() -> HostSlot:
    return HostSlot("site-a.test", HostPolicy(concurrency=4, rate=1000.0, burst=100))


@pytest.fixture
def make_fetcher(resolver: LoopbackResolver, sleeps: Sleeps) -> Callable[..., Fetcher]:
    def make(**cfg: Any) -> Fetcher:
        # The servers listen on 127.0.0.1: opt in through the SSRF guard's allowlist.
        cfg.setdefault("allow", ("127.0.0.1/32",))
        return Fetcher(FetchConfig(**cfg), resolver=resolver, sleep=sleeps)

    return make


async def fetch_all(fetcher: Fetcher, url: str, slot: HostSlot, **kw: Any) -> tuple[Body, bytes]:
    got: list[bytes] = []
    body = await fetch_into(got, fetcher, url, slot, **kw)
    return body, b"".join(got)


async def fetch_into(
    got: list[bytes], fetcher: Fetcher, url: str, slot: HostSlot, **kw: Any
) -> Body:
    """Stream ``url`` into ``got`` chunk by chunk, so a test sees what arrived before an error."""
    async with fetcher.stream(url, slot, **kw) as body:
        async for chunk in body.chunks():
            got.append(chunk)
    return body


# -- bodies ---------------------------------------------------------------------------


async def test_streams_a_5mb_body_in_chunks(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot
) -> None:
    payload = os.urandom(5 * 1024 * 1024)

    async def big(request: web.Request) -> web.StreamResponse:
        return web.Response(body=payload, content_type="application/xml")

    sizes: list[int] = []
    digest = hashlib.sha256()
    async with (
        serve({"/big.xml": big}) as server,
        make_fetcher(chunk_size=65536) as fetcher,
        fetcher.stream(site(server, "/big.xml"), slot) as body,
    ):
        assert slot.active == 1  # held while the body streams
        async for chunk in body.chunks():
            sizes.append(len(chunk))
            digest.update(chunk)
    assert sum(sizes) == len(payload)
    assert digest.digest() == hashlib.sha256(payload).digest()
    assert len(sizes) > 1
    assert max(sizes) <= 65536
    assert slot.active == 0


async def test_content_encoding_gzip_is_undone(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot
) -> None:
    async def encoded(request: web.Request) -> web.StreamResponse:
        body = gzip.compress(XML)
        headers = {"Content-Encoding": "gzip", "Content-Type": "application/xml"}
        return web.Response(body=body, headers=headers)

    async with serve({"/sitemap.xml": encoded}) as server, make_fetcher() as fetcher:
        body, data = await fetch_all(fetcher, site(server, "/sitemap.xml"), slot)
    assert data == XML
    assert body.headers["Content-Encoding"] == "gzip"


async def test_gz_file_is_not_decompressed(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot
) -> None:
    gz = gzip.compress(XML)

    async def gz_file(request: web.Request) -> web.StreamResponse:
        return web.Response(body=gz, content_type="application/gzip")

    async with serve({"/sitemap.xml.gz": gz_file}) as server, make_fetcher() as fetcher:
        _, data = await fetch_all(fetcher, site(server, "/sitemap.xml.gz"), slot)
    assert data[:2] == b"\x1f\x8b"
    assert data == gz  # the reader sniffs and gunzips, not the fetcher


async def test_user_agent_reaches_the_server(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot
) -> None:
    seen: list[str] = []

    async def echo(request: web.Request) -> web.StreamResponse:
        seen.append(request.headers["User-Agent"])
        return web.Response(body=b"")

    async with serve({"/": echo}) as server, make_fetcher(user_agent="testbot/1.0") as fetcher:
        await fetch_all(fetcher, site(server, "/"), slot)
    assert seen == ["testbot/1.0"]


async def test_304_with_conditional_request(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot
) -> None:
    async def conditional(request: web.Request) -> web.StreamResponse:
        if request.headers.get("If-None-Match") == '"v1"':
            return web.Response(status=304, headers={"ETag": '"v1"'})
        return web.Response(body=XML, headers={"ETag": '"v1"'})

    async with serve({"/s.xml": conditional}) as server, make_fetcher() as fetcher:
        url = site(server, "/s.xml")
        first, _ = await fetch_all(fetcher, url, slot)
        second, data = await fetch_all(fetcher, url, slot, headers={"If-None-Match": '"v1"'})
    assert (first.status, second.status, data) == (200, 304, b"")


# -- size caps ------------------------------------------------------------------------


async def test_declared_length_over_max_bytes(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot
) -> None:
    async def big(request: web.Request) -> web.StreamResponse:
        return web.Response(body=b"x" * 10_000)

    async with serve({"/": big}) as server, make_fetcher() as fetcher:
        url = site(server, "/")
        got: list[bytes] = []
        with pytest.raises(BodyTooLarge, match="Content-Length 10000") as info:
            await fetch_into(got, fetcher, url, slot, max_bytes=1000)
    assert info.value.url == url
    assert got == []  # refused before reading
    assert slot.active == 0


async def test_streamed_body_over_max_bytes(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot
) -> None:
    async def chunked(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()  # no Content-Length: only counting can tell
        await response.prepare(request)
        for _ in range(10):
            await response.write(b"x" * 1000)
        await response.write_eof()
        return response

    got: list[bytes] = []
    async with serve({"/": chunked}) as server, make_fetcher(chunk_size=500) as fetcher:
        with pytest.raises(BodyTooLarge, match="larger than 2048 bytes"):
            await fetch_into(got, fetcher, site(server, "/"), slot, max_bytes=2048)
    assert 0 < sum(map(len, got)) <= 2048
    assert slot.active == 0


# -- timeouts -------------------------------------------------------------------------


async def test_stall_mid_body_is_a_read_timeout(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot
) -> None:
    release = asyncio.Event()

    async def stall(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"<urlset>" + b" " * 1000)
        await release.wait()  # then say nothing
        return response

    got: list[bytes] = []
    async with serve({"/": stall}) as server, make_fetcher(read_timeout=0.3) as fetcher:
        url = site(server, "/")
        try:
            with pytest.raises(FetchTimeout, match=r"no data for 0\.3s") as info:
                await fetch_into(got, fetcher, url, slot)
        finally:
            release.set()
    assert b"".join(got).startswith(b"<urlset>")
    assert info.value.url == url
    assert slot.active == 0


async def test_stall_before_headers_is_retried_then_fails(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot, sleeps: Sleeps
) -> None:
    release = asyncio.Event()
    hits = 0

    async def stall(request: web.Request) -> web.StreamResponse:
        nonlocal hits
        hits += 1
        await release.wait()
        return web.Response(body=b"")

    slot.mark_answered()  # a live host: a first contact that stalls is not retried
    async with (
        serve({"/": stall}) as server,
        make_fetcher(read_timeout=0.2, retries=1) as fetcher,
    ):
        try:
            with pytest.raises(FetchTimeout):
                await fetch_all(fetcher, site(server, "/"), slot)
        finally:
            release.set()
    assert hits == 2
    assert len(sleeps.delays) == 1


async def test_total_deadline_while_reading(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot
) -> None:
    release = asyncio.Event()

    async def trickle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"<urlset>")
        await release.wait()
        return response

    async with (
        serve({"/": trickle}) as server,
        make_fetcher(read_timeout=10.0, total_timeout=0.3) as fetcher,
    ):
        try:
            with pytest.raises(FetchTimeout, match=r"total deadline of 0\.3s"):
                await fetch_all(fetcher, site(server, "/"), slot)
        finally:
            release.set()


# -- connection failures --------------------------------------------------------------


async def test_connection_refused(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot, sleeps: Sleeps
) -> None:
    # Bound but not listening: the kernel refuses connections to this port.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        async with make_fetcher(retries=2) as fetcher:
            with pytest.raises(ConnectError) as info:
                await fetch_all(fetcher, f"http://127.0.0.1:{port}/sitemap.xml", slot)
    assert info.value.url == f"http://127.0.0.1:{port}/sitemap.xml"
    assert isinstance(info.value.__cause__, OSError)
    assert len(sleeps.delays) == 2  # connection errors are retried
    assert slot.active == 0


async def test_dns_failure(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot, sleeps: Sleeps, resolver: LoopbackResolver
) -> None:
    async with make_fetcher() as fetcher:
        with pytest.raises(DNSError, match="unknown host") as info:
            await fetch_all(fetcher, "http://nowhere.test/sitemap.xml", slot)
    assert info.value.url == "http://nowhere.test/sitemap.xml"
    assert info.value.kind == "dns"
    assert resolver.queries == ["nowhere.test"]
    assert sleeps.delays == []  # a missing name is not retried


# -- retries --------------------------------------------------------------------------


async def test_503_then_200(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot, sleeps: Sleeps
) -> None:
    hits = 0

    async def flaky(request: web.Request) -> web.StreamResponse:
        nonlocal hits
        hits += 1
        if hits == 1:
            return web.Response(status=503)
        return web.Response(body=XML)

    async with serve({"/": flaky}) as server, make_fetcher() as fetcher:
        body, data = await fetch_all(fetcher, site(server, "/"), slot)
    assert (body.status, body.attempts, data) == (200, 2, XML)
    assert len(sleeps.delays) == 1


async def test_429_retry_after_zero(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot, sleeps: Sleeps
) -> None:
    hits = 0

    async def limited(request: web.Request) -> web.StreamResponse:
        nonlocal hits
        hits += 1
        if hits == 1:
            return web.Response(status=429, headers={"Retry-After": "0"})
        return web.Response(body=XML)

    async with serve({"/": limited}) as server, make_fetcher() as fetcher:
        body, _ = await fetch_all(fetcher, site(server, "/"), slot)
    assert body.attempts == 2
    assert sleeps.delays == [0.0]


async def test_404_is_final(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot, sleeps: Sleeps
) -> None:
    hits = 0

    async def missing(request: web.Request) -> web.StreamResponse:
        nonlocal hits
        hits += 1
        return web.Response(status=404)

    async with serve({"/": missing}) as server, make_fetcher() as fetcher:
        with pytest.raises(HTTPStatusError) as info:
            await fetch_all(fetcher, site(server, "/"), slot)
    assert (info.value.status, hits, sleeps.delays) == (404, 1, [])


# -- redirects ------------------------------------------------------------------------


def redirect_to(location: str) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(location)

    return handler


async def test_redirect_chain_is_recorded(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot
) -> None:
    async def final(request: web.Request) -> web.StreamResponse:
        return web.Response(body=XML)

    async def to_other_name(request: web.Request) -> web.StreamResponse:
        raise web.HTTPMovedPermanently(f"http://site-b.test:{request.url.port}/c")

    routes = {"/a": redirect_to("/b"), "/b": to_other_name, "/c": final}
    async with serve(routes) as server, make_fetcher() as fetcher:
        body, data = await fetch_all(fetcher, site(server, "/a"), slot)
        assert data == XML
        assert body.redirects == (site(server, "/a"), site(server, "/b"))
        assert body.url == site(server, "/c", name="site-b.test")


async def test_max_redirects_is_the_number_followed(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot
) -> None:
    async def final(request: web.Request) -> web.StreamResponse:
        return web.Response(body=XML)

    routes = {"/r1": redirect_to("/r2"), "/r2": redirect_to("/r3"), "/r3": final}
    async with serve(routes) as server:
        async with make_fetcher(max_redirects=2) as fetcher:
            body, _ = await fetch_all(fetcher, site(server, "/r1"), slot)
            assert len(body.redirects) == 2
        async with make_fetcher(max_redirects=1) as fetcher:
            with pytest.raises(TooManyRedirects, match="more than 1 redirects") as info:
                await fetch_all(fetcher, site(server, "/r1"), slot)
            assert info.value.url == site(server, "/r1")
        async with make_fetcher(max_redirects=0) as fetcher:
            with pytest.raises(TooManyRedirects):
                await fetch_all(fetcher, site(server, "/r2"), slot)


async def test_redirect_loop(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot, sleeps: Sleeps
) -> None:
    async with serve({"/loop": redirect_to("/loop")}) as server, make_fetcher() as fetcher:
        with pytest.raises(TooManyRedirects):
            await fetch_all(fetcher, site(server, "/loop"), slot)
    assert sleeps.delays == []


async def test_requests_waiting_for_a_free_connection_are_counted(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot
) -> None:
    # fetch.max_connections binding: the second request waits for the first's connection
    # (aiohttp takes the slot before it resolves the name); the admission reads the count.
    release, started = asyncio.Event(), asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        started.set()
        await release.wait()
        return web.Response(body=XML, content_type="application/xml")

    async with (
        serve({"/a.xml": slow, "/b.xml": slow}) as server,
        make_fetcher(max_connections=1) as fetcher,
    ):
        assert fetcher.queued == 0
        first = asyncio.create_task(fetch_all(fetcher, site(server, "/a.xml"), slot))
        second = asyncio.create_task(
            fetch_all(fetcher, site(server, "/b.xml", "site-b.test"), slot)
        )
        async with asyncio.timeout(5):
            await started.wait()  # the first holds the only connection
            # The second queues on the loop's side (no server event to wait on): poll.
            while not fetcher.queued:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        assert fetcher.queued == 1
        release.set()
        for task in (first, second):
            _, data = await task
            assert data == XML
        assert fetcher.queued == 0
    assert fetcher.queued == 0  # closed: no session, nothing queued


async def test_a_request_cancelled_while_it_waits_for_a_connection_leaves_the_count(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot
) -> None:
    # aiohttp sends no "queued end" for a waiter that is cancelled (a per-file deadline,
    # a host given up): the count must drop it all the same, or the admission would see
    # a binding connection limit for the rest of the run.
    release, started = asyncio.Event(), asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        started.set()
        await release.wait()
        return web.Response(body=XML, content_type="application/xml")

    async with (
        serve({"/a.xml": slow, "/b.xml": slow}) as server,
        make_fetcher(max_connections=1) as fetcher,
    ):
        first = asyncio.create_task(fetch_all(fetcher, site(server, "/a.xml"), slot))
        second = asyncio.create_task(
            fetch_all(fetcher, site(server, "/b.xml", "site-b.test"), slot)
        )
        async with asyncio.timeout(5):
            await started.wait()
            while not fetcher.queued:  # noqa: ASYNC110 - no server event to wait on
                await asyncio.sleep(0.01)
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await second
        assert fetcher.queued == 0
        release.set()
        _, data = await first
        assert data == XML
        assert fetcher.queued == 0


# -- what a failure leaves behind --------------------------------------------------------


@pytest.mark.parametrize("failure", ["status", "refused"])
async def test_a_failed_requests_error_is_freed_without_the_collector(
    make_fetcher: Callable[..., Fetcher], slot: HostSlot, failure: str
) -> None:
    """The raised error is in no reference cycle: once the caller drops it, it is gone,
    with the collector off. A real web answers a third of the requests with a 4xx
    (tdmrep.json, robots.txt, probes), and a cycle per failure was most of what a
    worker's collector had to find. (A refused connect's cause, aiohttp's own error,
    stays in a cycle of aiohttp's frames: not ours to break.)"""

    async def missing(request: web.Request) -> web.StreamResponse:
        return web.Response(status=404)

    refs: list[weakref.ref[BaseException]] = []
    async with serve({"/": missing}) as server, make_fetcher() as fetcher:
        url = site(server, "/")
        if failure == "refused":
            url = f"http://site-a.test:{free_port('127.0.0.1')}/"
        gc.collect()
        gc.disable()
        try:
            try:
                await fetch_all(fetcher, url, slot)
            except (HTTPStatusError, ConnectError) as exc:
                refs.append(weakref.ref(exc))
            assert refs
            assert [ref() for ref in refs] == [None] * len(refs)
        finally:
            gc.enable()
