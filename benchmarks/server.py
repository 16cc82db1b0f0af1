"""Serve a ``benchmarks.webgen`` corpus on loopback: one listening socket per host address.

One listening socket per host address of the manifest (``127.1.x.y``, all on the
manifest's port; hosts marked ``dead`` are not bound, so connecting to them is refused), each
serving that host's files. Every body is read into memory at start, and every response's
head is made then too, so a request costs a parse and one ``writelines``: the server shares
the machine's cores with what it serves, and its CPU is not what a benchmark measures (on
uvloop when installed). HTTP/1.1 with keep-alive (``Connection: close`` and HTTP/1.0 are
honoured), GET and HEAD; requests are parsed by httptools (uvicorn's parser): aiohttp's
server took ~150 µs of Python a request, ~1.6 CPU s of a ``many`` run on the same two cores.

* Content-Type by suffix: ``.xml`` application/xml, ``.gz`` application/gzip (the bytes are
  a gzip file, never a ``Content-Encoding``), ``.txt`` text/plain, or the manifest's value
  (the demo's HTML page at ``/sitemap.xml`` is text/html).
* Anything not in the manifest (a missing robots.txt, a listed-but-absent child) is a 404.
* A manifest entry of kind ``redirect`` (``messy``) answers its ``status`` (301/302) with
  ``Location: <redirect>`` and no body.
* ``latency``: seconds slept before each response (a real network's round trip).
* ``seeds.txt`` (one origin a line, dead hosts included) is (re)written beside the manifest.

Library::

    async with serve(Path(corpus), latency=0.05) as running:
        ...  # running.seeds_path, running.addresses, running.requests

CLI (prints ``ready <seeds path>`` on stdout once every site is bound, then serves until
SIGINT or SIGTERM; details on stderr)::

    python -m benchmarks.server --corpus benchmarks/.corpus/web-many-h2000-s1-p8765
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import resource
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast
from urllib.parse import unquote

import httptools

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.webgen import load_manifest, write_seeds

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

BACKLOG: Final = 1024
FD_MARGIN: Final = 4096  # descriptors beyond one per listening socket: connections, files
FD_MIN_SPARE: Final = 1024  # fewer spare than this: refuse to start (accept() would fail)


def raise_nofile(need: int) -> tuple[int, int]:
    """Raise this process's ``RLIMIT_NOFILE`` so that ``need`` descriptors fit; return it.

    The soft limit goes up to the hard limit; when even the hard limit is too low, the hard
    limit is raised to ``need`` too, which only a privileged process (``CAP_SYS_RESOURCE``,
    e.g. root) may do, up to ``/proc/sys/fs/nr_open``. A refusal leaves the soft limit at
    the hard one: binding then fails with "Too many open files" (raise ``ulimit -Hn``).
    Children inherit the limit.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return soft, hard
    if hard == resource.RLIM_INFINITY or hard >= need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard, hard
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, need))
        return need, need
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard, hard


@dataclass(frozen=True, slots=True)
class _File:
    body: bytes
    content_type: str
    redirect: str | None = None  # Location of a 301/302 (``status``), no body
    status: int = 200


@dataclass(slots=True)
class Running:
    """A started server: what it serves and counters (updated while it runs)."""

    corpus: Path
    port: int
    addresses: list[str]  # bound addresses (dead hosts excluded)
    seeds_path: Path
    files: int
    bytes: int
    load_seconds: float  # reading the files into memory
    bind_seconds: float  # starting every TCPSite
    latency: float
    nofile: int = 0  # the RLIMIT_NOFILE soft limit it serves with
    requests: int = 0
    not_found: int = 0
    redirects: int = 0
    bytes_sent: int = 0
    status: dict[int, int] = field(default_factory=dict)


def _load(
    corpus: Path, shard: tuple[int, int] = (0, 1)
) -> tuple[Path, dict[str, dict[str, _File]], list[str], int, int]:
    """Read the manifest and every file: (dir, {address: {path: file}}, addresses, port, bytes).

    ``shard`` ``(k, n)``: only the hosts whose position in the manifest is ``k`` mod ``n``.
    Blocking, at start-up only (before any site is bound).
    """
    corpus = Path(corpus).resolve()
    manifest = load_manifest(corpus)
    table: dict[str, dict[str, _File]] = {}
    live: list[str] = []
    total = 0
    k, n = shard
    for position, host in enumerate(manifest["hosts"]):
        if position % n != k:
            continue
        files: dict[str, _File] = {}
        for f in host["files"]:
            if f["kind"] == "redirect":
                files[f["path"]] = _File(b"", "", f["redirect"], int(f["status"]))
                continue
            body = (corpus / f["file"]).read_bytes()
            total += len(body)
            files[f["path"]] = _File(body, f["content_type"])
        table[host["address"]] = files
        if not host.get("dead"):
            live.append(host["address"])
    return corpus, table, live, int(manifest["port"]), total


_REASONS: Final = {
    200: "OK",
    301: "Moved Permanently",
    302: "Found",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
}
_NOT_FOUND: Final = b"404 not found\n"


def _head(status: int, headers: list[tuple[str, str]], length: int) -> bytes:
    """A response's status line and headers, up to the ``Connection`` header."""
    lines = [f"HTTP/1.1 {status} {_REASONS[status]}"]
    lines += [f"{name}: {value}" for name, value in headers]
    lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


@dataclass(frozen=True, slots=True)
class _Reply:
    """A response made at start: its head (without ``Connection``) and body."""

    head: bytes
    body: bytes
    kind: str  # "file", "redirect", "missing" (the counters) or "error" (counted in none)


def _replies(files: dict[str, _File]) -> dict[str, _Reply]:
    """Each path's response, made once."""
    out: dict[str, _Reply] = {}
    for path, f in files.items():
        if f.redirect is not None:
            out[path] = _Reply(_head(f.status, [("Location", f.redirect)], 0), b"", "redirect")
        else:
            out[path] = _Reply(
                _head(200, [("Content-Type", f.content_type)], len(f.body)), f.body, "file"
            )
    return out


_MISSING: Final = _Reply(
    _head(404, [("Content-Type", "text/plain; charset=utf-8")], len(_NOT_FOUND)),
    _NOT_FOUND,
    "missing",
)
_BAD_METHOD: Final = _Reply(_head(405, [("Allow", "GET, HEAD")], 0), b"", "error")
_BAD_REQUEST: Final = _Reply(_head(400, [], 0), b"", "error")


class _Connection(asyncio.Protocol):
    """One client connection to one host address: parse requests, answer from ``replies``."""

    def __init__(
        self, replies: dict[str, _Reply], running: Running, connections: set[_Connection]
    ) -> None:
        self._replies = replies
        self._running = running
        self._connections = connections
        self._parser = httptools.HttpRequestParser(self)
        self._url = b""
        self._transport: asyncio.Transport | None = None
        self._closing = False
        # Replies waiting out --latency, in request order (a pipelining client's
        # replies must not overtake each other; timers of equal time need not keep
        # their order).
        self._delayed: list[tuple[_Reply, bool, bool]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports do not subclass asyncio.Transport, but are one.)
        self._transport = cast("asyncio.Transport", transport)
        self._connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self)
        self._transport = None

    def abort(self) -> None:
        """Drop the connection now (the server is stopping)."""
        if self._transport is not None:
            self._transport.abort()

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            self._send(_BAD_REQUEST, head_only=False, keep_alive=False)

    # httptools' callbacks
    def on_message_begin(self) -> None:
        self._url = b""

    def on_url(self, url: bytes) -> None:
        self._url += url  # (may come in pieces)

    def on_message_complete(self) -> None:
        running = self._running
        running.requests += 1
        method = self._parser.get_method()
        path = unquote(httptools.parse_url(self._url).path.decode("latin-1"))
        reply = self._replies.get(path, _MISSING)
        if method not in (b"GET", b"HEAD"):
            reply = _BAD_METHOD
        elif reply.kind == "missing":
            running.not_found += 1
        elif reply.kind == "redirect":
            running.redirects += 1
        else:
            running.bytes_sent += len(reply.body)
        keep_alive = self._parser.should_keep_alive()
        if running.latency > 0:
            self._delayed.append((reply, method == b"HEAD", keep_alive))
            if len(self._delayed) == 1:
                asyncio.get_running_loop().call_later(running.latency, self._send_delayed)
        else:
            self._send(reply, method == b"HEAD", keep_alive)

    def _send_delayed(self) -> None:
        delayed, self._delayed = self._delayed, []
        for reply, head_only, keep_alive in delayed:
            self._send(reply, head_only, keep_alive)

    def _send(self, reply: _Reply, head_only: bool, keep_alive: bool) -> None:
        transport = self._transport
        if transport is None or self._closing:
            return
        connection = (
            b"Connection: keep-alive\r\n\r\n" if keep_alive else b"Connection: close\r\n\r\n"
        )
        if head_only or not reply.body:
            transport.writelines([reply.head, connection])
        else:
            transport.writelines([reply.head, connection, reply.body])
        if not keep_alive:
            self._closing = True
            transport.close()  # after the buffered response is written


@contextlib.asynccontextmanager
async def serve(
    corpus: Path,
    *,
    port: int | None = None,
    latency: float = 0.0,
    shard: tuple[int, int] = (0, 1),
) -> AsyncIterator[Running]:
    """Serve ``corpus`` until the block exits. ``port`` must be the manifest's (the default).

    ``shard`` ``(k, n)`` serves only every ``n``-th host from the ``k``-th (0-based): ``n``
    processes, one per shard, serve the corpus together when one process cannot hold a
    listening socket per host (``RLIMIT_NOFILE``). Raises ``ValueError`` when ``port``
    differs from the port the corpus's URLs name, and ``OSError`` when an address cannot
    be bound (e.g. the port is taken) or the descriptors would not suffice.
    """
    started = time.perf_counter()
    corpus, table, live, corpus_port, total = _load(corpus, shard)
    if port is not None and port != corpus_port:
        raise ValueError(f"the corpus names port {corpus_port} in its URLs; cannot serve on {port}")
    loaded = time.perf_counter()
    nofile, _ = raise_nofile(len(live) + FD_MARGIN)
    if len(live) + FD_MIN_SPARE > nofile:
        raise OSError(
            f"{len(live)} listening sockets and {FD_MIN_SPARE} spare descriptors do not fit"
            f" in RLIMIT_NOFILE {nofile} (hard limit; raising it needs CAP_SYS_RESOURCE):"
            f" serve in --shard K/N processes of at most {nofile - FD_MARGIN} hosts each"
        )
    running = Running(
        corpus=corpus,
        port=corpus_port,
        addresses=live,
        # seeds.txt lists every host (all shards): written by shard 0 only
        seeds_path=(
            write_seeds(corpus, load_manifest(corpus)) if shard[0] == 0 else corpus / "seeds.txt"
        ),
        files=sum(len(files) for files in table.values()),
        bytes=total,
        load_seconds=loaded - started,
        bind_seconds=0.0,
        latency=latency,
        nofile=nofile,
    )
    loop = asyncio.get_running_loop()
    connections: set[_Connection] = set()
    servers: list[asyncio.AbstractServer] = []
    try:
        for address in live:
            servers.append(
                await loop.create_server(
                    functools.partial(_Connection, _replies(table[address]), running, connections),
                    address,
                    corpus_port,
                    backlog=BACKLOG,
                    reuse_address=True,
                )
            )
        running.bind_seconds = time.perf_counter() - loaded
        yield running
    finally:
        for server in servers:
            server.close()
        for connection in list(connections):
            connection.abort()
        for server in servers:
            await server.wait_closed()


async def _main(corpus: Path, port: int | None, latency: float, shard: tuple[int, int]) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with serve(corpus, port=port, latency=latency, shard=shard) as running:
        print(
            f"# serving {running.files} files ({running.bytes / 1e6:.1f} MB) of"
            f" {len(running.addresses)} hosts on port {running.port}; loaded in"
            f" {running.load_seconds:.2f} s, bound in {running.bind_seconds:.2f} s;"
            f" latency {latency * 1000:.0f} ms; RLIMIT_NOFILE {running.nofile}",
            file=sys.stderr,
            flush=True,
        )
        print(f"ready {running.seeds_path}", flush=True)
        await stop.wait()
        print(
            f"# served {running.requests} requests ({running.not_found} 404,"
            f" {running.redirects} redirects),"
            f" {running.bytes_sent / 1e6:.1f} MB",
            file=sys.stderr,
            flush=True,
        )
    return 0


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop when installed, else asyncio's."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.server",
        description="Serve a benchmarks.webgen corpus on its loopback addresses until signalled.",
    )
    ap.add_argument("--corpus", type=Path, required=True, help="directory with manifest.json")
    ap.add_argument("--port", type=int, help="must equal the corpus's port (the default)")
    ap.add_argument("--latency", type=float, default=0.0, help="seconds before each response")
    ap.add_argument(
        "--shard",
        default="0/1",
        metavar="K/N",
        help="serve only every N-th host from the K-th (0-based; default 0/1: all)",
    )
    args = ap.parse_args(argv)
    if args.latency < 0:
        ap.error("--latency must be >= 0")
    try:
        k, n = (int(x) for x in args.shard.split("/"))
        if not 0 <= k < n:
            raise ValueError(args.shard)
    except ValueError:
        ap.error("--shard K/N with 0 <= K < N please")
    try:
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            return runner.run(_main(args.corpus, args.port, args.latency, (k, n)))
    except (ValueError, OSError) as exc:
        print(f"server: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
