"""The fetcher's CPU per request and per host, on loopback (issue 52).

In: ``--hosts`` names (``h0.bench`` ...), ``--requests`` per host, ``--repeat``. A server
process answers every GET with a tiny body on 127.0.52.1; this process runs harvester's
real fetch path against it: one ``Fetcher`` (the run's config: SSRF guard on, the
address allowlisted, per-host politeness table empty), each host's requests through its
own ``HostSlot`` and ``Fetcher.stream``, many hosts at once, a new connection per host
(the real web: a few requests per new host). Out: the client's CPU µs per request and
per host (``time.process_time``: the server's CPU is its own process's), best of
``--repeat``, one line of JSON.

Self-contained (only ``harvester`` and aiohttp), so it measures whichever harvester tree
is first on ``PYTHONPATH``: alternate two trees to compare them::

    PYTHONPATH=/path/to/before python -P benchmarks/bench_hops.py --hosts 2000
    PYTHONPATH=/path/to/after  python -P benchmarks/bench_hops.py --hosts 2000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from harvester.crawl.fetch import Fetcher

T = TypeVar("T")

ADDRESS = "127.0.52.1"
BODY = b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>'


class OneAddress(AbstractResolver):
    """Every name resolves to ``ADDRESS`` (as a real resolver's answer would look)."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host,
                host=ADDRESS,
                port=port,
                family=socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        return None


def serve() -> None:
    """The server process: print the port, answer until stdin closes."""

    async def handle(request: web.Request) -> web.Response:
        return web.Response(body=BODY, content_type="application/xml")

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, ADDRESS, 0, backlog=1024)
        await site.start()
        print(site._server.sockets[0].getsockname()[1], flush=True)  # type: ignore[union-attr]
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await runner.cleanup()

    asyncio.run(main())


async def one_host(fetcher: Fetcher, host: str, port: int, requests: int) -> None:
    """``requests`` GETs of one host, one after the other, as a host worker makes them."""
    from harvester.config import HostPolicy
    from harvester.crawl.scheduler import HostSlot

    slot = HostSlot(host, HostPolicy(concurrency=4, rate=1e6, burst=1000))
    for n in range(requests):
        async with fetcher.stream(f"http://{host}:{port}/s{n}.xml", slot) as body:
            async for _ in body.chunks():
                pass


async def client(port: int, hosts: int, requests: int, parallel: int) -> float:
    """CPU seconds of this process for ``hosts`` times ``requests`` requests (and closing
    their connections: aiohttp closes each host's when its keep-alive runs out)."""
    from harvester.config import FetchConfig, PolitenessConfig
    from harvester.crawl.fetch import Fetcher

    cfg = FetchConfig(allow=(f"{ADDRESS}/32",), max_connections=parallel)
    gate = asyncio.Semaphore(parallel)

    async def host(i: int) -> None:
        async with gate:
            await one_host(fetcher, f"h{i}.bench", port, requests)

    # The fetcher's set-up (its TLS context: once per worker) is not counted.
    async with Fetcher(cfg, resolver=OneAddress(), hosts=PolitenessConfig()) as fetcher:
        start = time.process_time()
        await asyncio.gather(*(host(i) for i in range(hosts)))
        return time.process_time() - start


async def checks_only(hosts: int, requests: int) -> float:
    """CPU seconds of the fetch path's own checks alone, no network: per request
    ``check_target`` and the session's middlewares (a handler that answers at once), per
    host the guard's judgement of its DNS answer (a new connection per host)."""
    from types import SimpleNamespace

    import yarl

    from harvester.config import FetchConfig, PolitenessConfig
    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.targets import check_target

    cfg = FetchConfig(allow=(f"{ADDRESS}/32",))
    # The middlewares and the guarded resolver the tree's own Fetcher installs (private
    # attributes: read here only, to count the same chain as a run).
    fetcher = Fetcher(cfg, resolver=OneAddress(), hosts=PolitenessConfig())
    await fetcher.__aenter__()
    session: Any = fetcher._session
    middlewares: list[Any] = list(session._middlewares)
    guarded = session.connector._resolver

    async def answer(req: Any) -> Any:
        return None

    start = time.process_time()
    for i in range(hosts):
        host = f"h{i}.bench"
        await guarded.resolve(host, 80)
        for n in range(requests):
            url = f"http://{host}/s{n}.xml"
            check_target(url)
            req = SimpleNamespace(url=yarl.URL(url), headers={})
            handler = answer
            for mw in reversed(middlewares):
                handler = _bind(mw, handler)
            await handler(req)
    spent = time.process_time() - start
    await fetcher.__aexit__(None, None, None)
    return spent


def _bind(mw: Any, handler: Any) -> Any:
    async def wrapped(req: Any) -> Any:
        return await mw(req, handler)

    return wrapped


def run(work: Coroutine[None, None, T]) -> T:
    """``work`` on the loop a harvester run uses (uvloop when installed); its result.
    (bench_tls runs its rounds with it too.)"""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(work)
    return uvloop.run(work)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--requests", type=int, default=3, help="per host")
    ap.add_argument("--parallel", type=int, default=50, help="hosts at once")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--checks-only", action="store_true", help="the checks alone, no network")
    args = ap.parse_args(argv)
    if args.serve:
        serve()
        return 0
    if args.checks_only:
        spent = run(checks_only(args.hosts, args.requests))
        print(json.dumps({"checks_cpu_us_per_request": spent / args.hosts / args.requests * 1e6}))
        return 0
    server = subprocess.Popen(
        [sys.executable, "-P", __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        best = min(
            run(client(port, args.hosts, args.requests, args.parallel)) for _ in range(args.repeat)
        )
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=30)
    import harvester

    total = args.hosts * args.requests
    print(
        json.dumps(
            {
                "tree": harvester.__file__,
                "hosts": args.hosts,
                "requests": total,
                "cpu_s": round(best, 3),
                "us_per_request": round(best / total * 1e6, 1),
                "ms_per_host": round(best / args.hosts * 1e3, 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
