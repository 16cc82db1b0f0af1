"""The realweb's HTTP and HTTPS server: one process, :80 and :443 on every address of the web.

In: the web (``web.build(domains, seed, mix)``, rebuilt here: the same seeded bytes the runner
counts as truth) and a directory of certificates (``certs/<domain>.pem``: the domain's EC
key and its certificate for ``<domain>`` and ``www.<domain>``, signed by the run's CA;
written by ``benchmarks.realweb.__main__`` with ``trustme``). Out: responses, ``ready`` on
stdout once bound, and on SIGTERM one line on stderr: requests, responses by status,
CPU seconds (the server's CPU is printed apart from the measured tool's).

Runs inside the bench's network namespace, where only ``lo`` exists, so binding
``0.0.0.0`` is safe: one listening socket per port accepts on every ``127.x`` address
and each connection is dispatched by its local address (``sockname``) to its site; the
``Host`` header then tells the apex from ``www.``. TLS: ``ssl`` with an SNI callback that
gives each connection its domain's context (made on first use from its PEM, kept in an
LRU of ``CONTEXTS``). Sites of kind ``hang`` get their own listening sockets on their
address (``SO_REUSEPORT``: the kernel prefers the exact address to the wildcard) that
accept and never read or write: no TLS handshake, no response. ``refused``, ``dropped``,
``http_only``'s and ``https_dropped``'s :443 are nftables rules (``benchmarks.realweb.netns``);
with ``--no-nft`` (no ``nft`` here) listeners stand in for them (``standins``).

Requests are parsed by httptools (as in ``benchmarks.server``), answers are made per
request from the site's pages after the site's latency (``loop.call_later``: a `slow`
site's TTFB is its latency, the whole response then comes at once); uvloop when
installed. A page ``HANG`` (``robots_hang``'s robots.txt) is never answered.

With ``--generation G`` (the cron benchmark, issue 53) it serves generation G of the web
(``generations.evolve``): sitemaps with their ETag / Last-Modified, a conditional GET
that matches answered 304; ``--stats FILE`` writes its counters as JSON on exit
(requests, by status, sitemap bodies and their bytes sent). ``--hosts FILE`` writes on exit
the request log per domain (JSON ``{domain: [requests, connections, gap]}``: the
connections accepted on the domain's address, and the longest time between an answer and
a later new connection): what the tool really asked of each host (the check of
``limits.requests_needed``), how often it reconnected, and after how long an idle time.

    python -m benchmarks.realweb.serve --domains 2000 --seed 1 [--mix random] --certs DIR
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import resource
import signal
import ssl
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast
from urllib.parse import unquote

import httptools

from benchmarks.realweb import group
from benchmarks.realweb.generations import evolve, not_modified
from benchmarks.realweb.mix import MIXES, mix_for
from benchmarks.realweb.standins import BACKLOG, Silent, stand_ins
from benchmarks.realweb.web import GZIP, HANG, XML, Page, Site, build
from benchmarks.server import new_event_loop, raise_nofile

if TYPE_CHECKING:
    import socket

TICK: Final = 0.25  # seconds between two looks at the loop's lateness (watch_lag)
CONTEXTS: Final = 4096  # TLS contexts kept (one per domain, made on first use)
REASONS: Final = {
    200: "OK",
    301: "Moved Permanently",
    302: "Found",
    304: "Not Modified",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    451: "Unavailable For Legal Reasons",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
VALIDATORS: Final = ("ETag", "Last-Modified")
NOT_FOUND: Final = Page(404, "text/plain", b"404 not found\n")


class Server:
    """The sites by address, TLS contexts by name, counters."""

    def __init__(self, sites: list[Site], certs: Path) -> None:
        self.by_address = {s.address: s for s in sites}
        self.certs = certs
        self.contexts: collections.OrderedDict[str, ssl.SSLContext] = collections.OrderedDict()
        self.connections: set[Connection] = set()
        self.requests = 0
        self.by_status: dict[int, int] = {}
        self.tls_names: set[str] = set()
        self.accepted = 0  # connections accepted (the keep-alive check: vs requests)
        # domain -> [requests, connections, the longest idle gap (s) before a reconnect]
        self.per_site: dict[str, list[float]] = {}
        self.answered_at: dict[str, float] = {}  # domain -> when its last answer went out
        self.handshakes = 0  # TLS handshakes begun (SNI callbacks)
        self.sitemap_bodies = 0  # sitemap bodies sent (200, not HEAD)...
        self.sitemap_bytes = 0  # ...and their bytes (what a 304 saves)
        self.validated_bodies = 0  # sitemap bodies sent that had an ETag or Last-Modified
        self.by_kind: dict[str, int] = {}  # requests by what was asked and the answer (kind)
        # How late a TICK timer fired, at most, and how often by over a second: a server
        # starved of CPU answers late, and a client's timeouts then say so, not the site.
        self.lag_max = 0.0
        self.lagged = 0

    def context(self, name: str) -> ssl.SSLContext | None:
        """The TLS context of domain ``name`` (``www.`` stripped), None when it has none."""
        ctx = self.contexts.get(name)
        if ctx is not None:
            self.contexts.move_to_end(name)
            return ctx
        pem = self.certs / f"{name}.pem"
        if not pem.exists():
            return None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(pem)
        self.contexts[name] = ctx
        if len(self.contexts) > CONTEXTS:
            self.contexts.popitem(last=False)
        return ctx

    def sni(self, sslobj: Any, server_name: str | None, _ctx: ssl.SSLContext) -> int | None:
        """``SSLContext.sni_callback``: switch to the named domain's context."""
        self.handshakes += 1
        if server_name:
            name = server_name.lower().removeprefix("www.")
            ctx = self.context(name)
            if ctx is not None:
                sslobj.context = ctx
                self.tls_names.add(name)
                return None
        return ssl.ALERT_DESCRIPTION_UNRECOGNIZED_NAME

    def route(self, site: Site | None, port: int, host: str, path: str) -> Page:
        """The page for a request on ``port`` to ``host`` ``path`` of ``site``."""
        if site is None:
            return NOT_FOUND
        host = host.split(":", 1)[0].lower().rstrip(".") or site.name
        if site.kind == "hang":
            return HANG
        if site.scheme == "https" and port == 80:
            return Page(301, location=f"https://{site.content_host}{path}")
        if host != site.content_host:
            return Page(301, location=f"{site.scheme}://{site.content_host}{path}")
        page = site.pages.get(path)
        if page is None:
            page = site.default or NOT_FOUND
        return page


async def watch_lag(server: Server) -> None:
    """Measure the loop's lateness every ``TICK`` s into ``server`` until cancelled."""
    loop = asyncio.get_running_loop()
    while True:
        start = loop.time()
        await asyncio.sleep(TICK)
        late = loop.time() - start - TICK
        server.lag_max = max(server.lag_max, late)
        server.lagged += late > 1.0


def kind(path: str, page: Page) -> str:
    """What a request asked, and its answer's status: ``robots``, ``tdmrep``, ``sitemap``
    (an XML or gzip body, or a 304 or 301 of one), ``other`` (probes, home pages, 404s).
    A request never answered (``HANG``) is in ``requests`` only."""
    if path == "/robots.txt":
        what = "robots"
    elif path == "/.well-known/tdmrep.json":
        what = "tdmrep"
    elif page.content_type in (XML, GZIP) or page.status in (301, 304):
        what = "sitemap"
    else:
        what = "other"
    return f"{what} {page.status}"


class Connection(asyncio.Protocol):
    """One client connection: parse requests, answer after the site's latency."""

    def __init__(self, server: Server, port: int) -> None:
        self.server = server
        self.port = port
        self.site: Site | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.host = ""
        self.conditional = ("", "")  # If-None-Match, If-Modified-Since
        self.transport: asyncio.Transport | None = None
        self.hanging = False
        self.pending: list[tuple[Page, bool, bool]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)
        sockname = transport.get_extra_info("sockname")
        if sockname:
            self.site = self.server.by_address.get(sockname[0])
        self.server.connections.add(self)
        self.server.accepted += 1
        if self.site is not None:
            name = self.site.name
            counts = self.server.per_site.setdefault(name, [0, 0, 0.0])
            counts[1] += 1
            last = self.server.answered_at.get(name)
            if last is not None:  # a connection after an answer: the idle gap it closes
                counts[2] = max(counts[2], round(time.monotonic() - last, 2))

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        self.transport = None

    def data_received(self, data: bytes) -> None:
        if self.hanging:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            if self.transport is not None:
                self.transport.close()

    def on_message_begin(self) -> None:
        self.url = b""
        self.host = ""
        self.conditional = ("", "")

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"host":
            self.host = value.decode("latin-1")
        elif name == b"if-none-match":
            self.conditional = (value.decode("latin-1"), self.conditional[1])
        elif name == b"if-modified-since":
            self.conditional = (self.conditional[0], value.decode("latin-1"))

    def on_message_complete(self) -> None:
        server = self.server
        server.requests += 1
        if self.site is not None:
            server.per_site.setdefault(self.site.name, [0, 0, 0.0])[0] += 1
        path = unquote(httptools.parse_url(self.url).path.decode("latin-1"))
        page = server.route(self.site, self.port, self.host, path)
        if page is HANG:
            self.hanging = True  # accepted, read, never answered
            return
        if not_modified(page, *self.conditional):
            page = Page(304, headers=page.headers)
        name = kind(path, page)
        server.by_kind[name] = server.by_kind.get(name, 0) + 1
        head_only = self.parser.get_method() == b"HEAD"
        self.pending.append((page, head_only, self.parser.should_keep_alive()))
        if len(self.pending) == 1:
            delay = self.site.latency if self.site is not None else 0.0
            asyncio.get_running_loop().call_later(delay, self.flush)

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        for page, head_only, keep_alive in pending:
            self.send(page, head_only, keep_alive)

    def send(self, page: Page, head_only: bool, keep_alive: bool) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        server = self.server
        server.by_status[page.status] = server.by_status.get(page.status, 0) + 1
        if self.site is not None:
            server.answered_at[self.site.name] = time.monotonic()
        lines = [f"HTTP/1.1 {page.status} {REASONS.get(page.status, 'Other')}"]
        if page.content_type:
            lines.append(f"Content-Type: {page.content_type}")
        if page.location:
            lines.append(f"Location: {page.location}")
        lines.extend(f"{name}: {value}" for name, value in page.headers)
        lines.append(f"Content-Length: {len(page.body)}")
        lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        transport.writelines([head] if head_only or not page.body else [head, page.body])
        if not head_only and page.content_type in (XML, GZIP) and page.status == 200:
            server.sitemap_bodies += 1
            server.sitemap_bytes += len(page.body)
            server.validated_bodies += any(n in VALIDATORS for n, _ in page.headers)
        if not keep_alive:
            transport.close()


async def serve(
    domains: int,
    seed: int,
    mix: str,
    certs: Path,
    *,
    nft: bool = True,
    generation: int = -1,
    helper: bool = False,
) -> Server:
    """Bind :80 and :443 (and the ``hang`` addresses), serve until SIGTERM/SIGINT.

    ``helper``: the wildcard :80 and :443 only (``group``: the main process binds the
    per-address listeners).

    ``nft=False``: no nftables rules stand for ``refused``, ``dropped``, ``http_only``'s
    and ``https_dropped``'s :443, so their addresses get listeners of their own: ``Reset``
    (accepted, then a reset: not quite a refused SYN) and ``full_backlog`` (SYNs dropped).
    """
    loop = asyncio.get_running_loop()
    sites = build(domains, seed, mix_for(mix, seed))
    if generation >= 0:
        evolve(sites, seed, generation)
    raise_nofile(65_536)
    server = Server(sites, certs)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    first = next((s for s in sites if (certs / f"{s.name}.pem").exists()), None)
    if first is not None:  # (for a client that sends no SNI)
        tls.load_cert_chain(certs / f"{first.name}.pem")
    tls.sni_callback = server.sni
    listeners = [
        await loop.create_server(Silent, site.address, port, backlog=BACKLOG, reuse_port=True)
        for site in sites
        if site.kind == "hang" and not helper
        for port in (80, 443)
    ]
    held: list[socket.socket] = []
    if not nft and not helper:
        held = await stand_ins(sites, listeners)
    listeners.append(
        await loop.create_server(
            lambda: Connection(server, 80), "0.0.0.0", 80, backlog=BACKLOG, reuse_port=True
        )
    )
    listeners.append(
        await loop.create_server(
            lambda: Connection(server, 443),
            "0.0.0.0",
            443,
            ssl=tls,
            backlog=BACKLOG,
            reuse_port=True,
            ssl_handshake_timeout=60,
        )
    )
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    watcher = asyncio.create_task(watch_lag(server))
    await stop.wait()
    watcher.cancel()
    for listener in listeners:
        listener.close()
    for conn in list(server.connections):
        if conn.transport is not None:
            conn.transport.abort()
    for sock in held:
        sock.close()
    return server


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.realweb.serve", description=__doc__)
    ap.add_argument("--domains", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mix", choices=MIXES, default="fixed")
    ap.add_argument("--certs", type=Path, required=True)
    ap.add_argument("--no-nft", action="store_true", help="no nftables rules: see serve()")
    ap.add_argument("--generation", type=int, default=-1, help="serve this generation (cron)")
    ap.add_argument("--stats", type=Path, help="write the counters here (JSON) on exit")
    ap.add_argument("--hosts", type=Path, help="write the per-domain request log here on exit")
    ap.add_argument("--processes", type=int, default=1, help="serving processes (group.py)")
    ap.add_argument("--helper", action="store_true", help=argparse.SUPPRESS)  # (group.py)
    args = ap.parse_args(argv)
    if args.processes > 1 and (args.stats or not args.hosts):
        ap.error("--processes > 1 needs --hosts (its helpers' logs) and no --stats")
    helpers: list[group.Helper] = []
    if args.processes > 1:
        web = [f"--domains={args.domains}", f"--seed={args.seed}", f"--mix={args.mix}"]
        web += [f"--certs={args.certs}", f"--generation={args.generation}"]
        web += ["--no-nft"] if args.no_nft else []
        helpers = group.start(web, args.processes - 1, args.hosts.parent, sys.stderr)
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        server = runner.run(
            serve(
                *(args.domains, args.seed, args.mix, args.certs),
                nft=not args.no_nft,
                generation=args.generation,
                helper=args.helper,
            )
        )
    if helpers:
        server.per_site = group.merge([server.per_site, group.stop(helpers)])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    if args.hosts:
        args.hosts.write_text(json.dumps(server.per_site, sort_keys=True))
    if args.stats:
        stats = {
            "requests": server.requests,
            "by_status": server.by_status,
            "sitemap_bodies": server.sitemap_bodies,
            "sitemap_bytes": server.sitemap_bytes,
            "validated_bodies": server.validated_bodies,
            "by_kind": dict(sorted(server.by_kind.items())),
            "loop_lag_max_s": round(server.lag_max, 2),
            "loop_lagged_over_1s": server.lagged,
            "connections": server.accepted,
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "at": time.time(),
        }
        args.stats.write_text(json.dumps(stats))
    who = "serve (helper)" if args.helper else "serve"
    print(
        f"# {who}: {server.requests} requests {dict(sorted(server.by_status.items()))};"
        f" {server.accepted} connections, {server.handshakes} TLS handshakes,"
        f" {len(server.tls_names)} TLS names; cpu {usage.ru_utime + usage.ru_stime:.2f} s;"
        f" loop late by {server.lag_max:.2f} s at most, {server.lagged} times over 1 s",
        file=sys.stderr,
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
