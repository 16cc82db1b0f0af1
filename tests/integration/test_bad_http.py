"""Responses cut short or not valid HTTP, from raw socket servers: classified, never a crash.

A body that ends before its declared length is ``truncated`` with the status the
server sent; a response aiohttp's parser refuses is ``bad_http``, not the parser's
code 400 as an ``http_status`` (issue 50 item 8). aiohttp's pure-Python parser
(``AIOHTTP_NO_EXTENSIONS=1``, or where its C parser is not built) raised such an
error mid-body past the fetcher, and the run died: that case runs ``harvester run``
in a subprocess with the pure parser.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from typing import TYPE_CHECKING

from tests.integration.harvesting import collect, locs, only_failure
from tests.integration.webs import raw_server, urlset

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nTransfer-Encoding: chunked\r\n\r\n"


def _first_forty(origin: str) -> bytes:
    doc = urlset(*(f"{origin}/p/{i}" for i in range(100)))
    return doc[: doc.index(b"/p/40</loc>")]


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


async def test_a_chunked_body_without_its_last_chunk_is_truncated() -> None:
    def cut(origin: str) -> bytes:
        doc = urlset(*(f"{origin}/p/{i}" for i in range(100)))
        sent = doc[: doc.index(b"/p/40</loc>")]
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        return head + b"%x\r\n" % len(sent) + sent + b"\r\n"  # then FIN, no "0" chunk

    async with raw_server("127.0.0.79", cut) as raw:
        records, hosts = await collect([f"{raw.origin}/sitemap.xml"], **{"fetch.retries": 0})
    assert locs(records) == [f"{raw.origin}/p/{i}" for i in range(40)]
    failure = only_failure(hosts[raw.origin.removeprefix("http://")])
    assert failure["class"] == "truncated"
    assert failure["message"] == "the connection ended before the body's last chunk"
    assert failure["status"] == 200


async def test_a_truncated_robots_txt_fails_the_host_with_its_status() -> None:
    def short(origin: str) -> bytes:
        body = f"User-agent: *\nSitemap: {origin}/sitemap.xml\n".encode()
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
        return head % (len(body) + 100) + body

    async with raw_server("127.0.0.80", short) as raw:
        records, hosts = await collect([raw.origin], **{"fetch.retries": 0})
    assert records == []
    report = hosts[raw.origin.removeprefix("http://")]
    assert report["discovery"] == "failed"  # RFC 9309: robots.txt not read, nothing fetched
    failure = only_failure(report)
    assert failure["class"] == "truncated"
    assert failure["url"] == f"{raw.origin}/robots.txt"
    assert failure["status"] == 200
    assert raw.hits == 1


async def test_a_malformed_chunk_is_bad_http_not_a_status_400() -> None:
    # The bad chunk size comes with the headers: aiohttp's parser refuses the response
    # before it is handed over, as a ClientResponseError with its own code, 400.
    async with raw_server("127.0.0.81", lambda o: CHUNKED + _chunk(b"<urlset") + b"ZZZ\r\n") as raw:
        records, hosts = await collect([f"{raw.origin}/sitemap.xml"], **{"fetch.retries": 1})
    assert records == []
    failure = only_failure(hosts[raw.origin.removeprefix("http://")])
    assert failure["class"] == "bad_http"
    assert failure["message"].startswith("the response is not valid HTTP: ")
    assert "status" not in failure  # the server's was not read; 400 was never sent
    assert raw.hits == 1  # the same bytes would come again: not retried


@contextlib.asynccontextmanager
async def _bad_chunk_after(first: float) -> AsyncIterator[str]:
    """A server whose body turns invalid ``first`` seconds in (after 40 entries)."""
    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(CHUNKED + _chunk(_first_forty(origin)))
            await writer.drain()
            await asyncio.sleep(first)  # the body is being read by now
            writer.write(b"ZZZ\r\nabc\r\n")
            await writer.drain()
            await reader.read()  # until the client hangs up
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()

    server = await asyncio.start_server(handle, "127.0.0.82", 0)
    origin = f"http://127.0.0.82:{server.sockets[0].getsockname()[1]}"
    try:
        yield origin
    finally:
        server.close()
        await server.wait_closed()
        await asyncio.gather(*handlers, return_exceptions=True)


async def test_a_malformed_chunk_mid_body_with_the_pure_parser_fails_the_file_only(
    tmp_path: Path,
) -> None:
    config = tmp_path / "h.toml"
    config.write_text(
        "[fetch]\nallow_private = true\nretries = 0\n[run]\nuvloop = false\nworkers = 1\n"
    )
    out = tmp_path / "out.jsonl"
    async with _bad_chunk_after(0.3) as origin:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "harvester",
            "run",
            "--config",
            str(config),
            "--no-state",
            "-o",
            str(out),
            f"{origin}/sitemap.xml",
            env={**os.environ, "AIOHTTP_NO_EXTENSIONS": "1"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert locs(records) == [f"{origin}/p/{i}" for i in range(40)]  # kept
    (report,) = map(json.loads, (tmp_path / "out.jsonl.hosts.jsonl").read_text().splitlines())
    failure = only_failure(report)
    assert failure["class"] == "bad_http"
    assert failure["status"] == 200


@contextlib.asynccontextmanager
async def _keep_alive(routes: dict[str, tuple[bytes, int]]) -> AsyncIterator[str]:
    """A keep-alive server: path -> (body, how many bytes its Content-Length leaves out)."""
    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                body, short = routes.get(head.split(b" ")[1].decode(), (b"", 0))
                status = b"200 OK" if body else b"404 Not Found"
                length = b"Content-Length: %d\r\n" % (len(body) - short)
                writer.write(b"HTTP/1.1 " + status + b"\r\n" + length + b"\r\n" + body)
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.83", 0)
    try:
        yield f"http://127.0.0.83:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)


async def test_a_robots_txt_longer_than_its_content_length_is_read_as_missing() -> None:
    # A Content-Length in characters, not bytes: the rest of the body is read as the next
    # response, which is not HTTP. robots.txt is then missing (as after a 4xx), not a
    # failure of the host, and the host report says why; the sitemap is harvested.
    robots = "User-agent: *\n# é à ü\nDisallow: /private\n".encode()
    routes = {"/robots.txt": (robots, len(robots) - len(robots.decode()))}
    async with _keep_alive(routes) as origin:
        routes["/sitemap.xml"] = (urlset(f"{origin}/page"), 0)
        records, hosts = await collect([origin], **{"fetch.retries": 0})
    assert locs(records) == [f"{origin}/page"]
    report = hosts[origin.removeprefix("http://")]
    assert report["discovery"] == f"fallback:{origin}/sitemap.xml"
    assert report["failures"] == []
    (warning,) = report["warnings"]
    assert warning.startswith("robots.txt read as missing: the response is not valid HTTP: ")
