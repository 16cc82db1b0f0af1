"""benchmarks.server: the loopback web that the benchmarks and ``make demo`` harvest.

Real sockets on 127.1.0.x; requests written by hand, so keep-alive, ``Connection: close``,
HEAD and malformed requests are what is on the wire.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING

import aiohttp
import pytest

from benchmarks.server import serve
from tests.integration.conftest import free_port

if TYPE_CHECKING:
    from pathlib import Path

    from benchmarks.server import Running

A, DEAD = "127.1.0.1", "127.1.0.2"
BODY = b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>\n'


def corpus(tmp_path: Path, port: int) -> Path:
    """A two-host corpus: a file and a redirect on one host; the other host dead."""
    root = tmp_path / "web"
    (root / "sites" / A).mkdir(parents=True)
    (root / "sites" / A / "sitemap.xml").write_bytes(BODY)
    manifest = {
        "port": port,
        "hosts": [
            {
                "address": A,
                "origin": f"http://{A}:{port}",
                "files": [
                    {
                        "path": "/sitemap.xml",
                        "file": f"sites/{A}/sitemap.xml",
                        "kind": "urlset",
                        "content_type": "application/xml",
                    },
                    {
                        "path": "/old.xml",
                        "kind": "redirect",
                        "redirect": "/sitemap.xml",
                        "status": 301,
                    },
                ],
            },
            {"address": DEAD, "origin": f"http://{DEAD}:{port}", "dead": True, "files": []},
        ],
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


async def read_until(reader: asyncio.StreamReader, end: bytes | None) -> bytes:
    """What the server sends until it ends with ``end`` (None: until it closes)."""
    out = b""
    while end is None or not out.endswith(end):
        data = await asyncio.wait_for(reader.read(65536), 5.0)  # (a hang fails the test)
        if not data:
            break
        out += data
    return out


async def exchange(port: int, request: bytes) -> bytes:
    """Write ``request`` on a new connection; what the server sends until it closes."""
    reader, writer = await asyncio.open_connection(A, port)
    try:
        writer.write(request)
        return await read_until(reader, None)
    finally:
        writer.close()


def get(path: str, *extra: str, method: str = "GET", version: str = "1.1") -> bytes:
    lines = [f"{method} {path} HTTP/{version}", f"Host: {A}", *extra, "", ""]
    return "\r\n".join(lines).encode()


async def test_files_redirects_404s_head_and_counts(tmp_path: Path) -> None:
    await files_redirects_404s_head_and_counts(tmp_path)


def test_the_same_on_uvloop(tmp_path: Path) -> None:
    # The benchmarks serve on uvloop, whose transports differ from asyncio's.
    uvloop = pytest.importorskip("uvloop")
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(files_redirects_404s_head_and_counts(tmp_path))


async def files_redirects_404s_head_and_counts(tmp_path: Path) -> None:
    port = free_port(A)
    async with serve(corpus(tmp_path, port)) as running, aiohttp.ClientSession() as session:
        base = f"http://{A}:{port}"
        async with session.get(f"{base}/sitemap.xml") as r:
            assert r.status == 200
            assert r.headers["Content-Type"] == "application/xml"
            assert await r.read() == BODY
        async with session.head(f"{base}/sitemap.xml") as r:
            assert r.status == 200
            assert r.headers["Content-Length"] == str(len(BODY))
            assert await r.read() == b""
        async with session.get(f"{base}/old.xml", allow_redirects=False) as r:
            assert r.status == 301
            assert r.headers["Location"] == "/sitemap.xml"
        async with session.get(f"{base}/old.xml") as r:  # followed
            assert await r.read() == BODY
        async with session.get(f"{base}/missing.xml?x=1") as r:
            assert r.status == 404
            assert await r.text() == "404 not found\n"
        async with session.post(f"{base}/sitemap.xml") as r:
            assert r.status == 405
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.get(f"http://{DEAD}:{port}/sitemap.xml")  # not bound: refused
    assert (running.requests, running.not_found, running.redirects) == (7, 1, 2)
    assert running.bytes_sent == 3 * len(BODY)  # HEAD sends no body


async def test_keep_alive_close_and_a_malformed_request(tmp_path: Path) -> None:
    port = free_port(A)
    async with serve(corpus(tmp_path, port)):
        # Two requests on one connection (the second in the same write): both answered,
        # and the connection stays open for a third.
        reader, writer = await asyncio.open_connection(A, port)
        writer.write(get("/sitemap.xml") + get("/missing.xml"))
        two = await read_until(reader, b"404 not found\n")
        assert two.count(b"HTTP/1.1 200 OK\r\n") == 1
        assert two.count(b"HTTP/1.1 404 Not Found\r\n") == 1
        assert two.count(b"Connection: keep-alive\r\n") == 2
        writer.write(get("/sitemap.xml"))
        assert (await read_until(reader, BODY)).startswith(b"HTTP/1.1 200 OK\r\n")
        writer.close()
        # Connection: close, and HTTP/1.0 without keep-alive: answered, then closed.
        for request in (
            get("/sitemap.xml", "Connection: close"),
            get("/sitemap.xml", version="1.0"),
        ):
            closed = await exchange(port, request)  # (returns once the server closes)
            assert closed.endswith(b"Connection: close\r\n\r\n" + BODY)
        assert (await exchange(port, b"NOT HTTP\r\n\r\n")).startswith(b"HTTP/1.1 400 ")


async def test_latency_delays_each_response_and_keeps_their_order(tmp_path: Path) -> None:
    port = free_port(A)
    running: Running
    async with serve(corpus(tmp_path, port), latency=0.05) as running:
        started = time.monotonic()
        reply = await exchange(port, get("/sitemap.xml", "Connection: close"))
        assert time.monotonic() - started >= 0.05
        # Pipelined: the 404 asked for first comes first.
        reader, writer = await asyncio.open_connection(A, port)
        writer.write(get("/missing.xml") + get("/sitemap.xml"))
        both = await read_until(reader, BODY)
        writer.close()
    assert reply.endswith(BODY)
    assert both.index(b"404 Not Found") < both.index(b"200 OK")
    assert running.requests == 3
