"""Real HTTP on loopback: several simulated hosts, each an aiohttp server on 127.0.0.N.

``sites`` starts servers on demand: ``site = await sites.start("127.0.0.2", routes)``
where ``routes`` maps a path to bytes, a ``Reply`` or an aiohttp handler. Every
request is logged server-side with its arrival and end time (``site.log``), so
politeness is measured where it matters, at the server.

``LoopbackResolver`` maps host names to loopback addresses (and fails the rest
with a DNS error), so tests can use real-looking names without any DNS query.
"""

from __future__ import annotations

import asyncio
import asyncio.base_events
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from harvester.config import Config, load_config

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Reply:
    """A canned response."""

    body: bytes = b""
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)


Route = bytes | Reply | Handler


@dataclass
class Hit:
    path: str
    start: float
    end: float = 0.0


@dataclass
class Site:
    host: str
    port: int
    log: list[Hit] = field(default_factory=list)
    active: int = 0
    max_active: int = 0

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return self.origin + path

    def hits(self, path: str) -> int:
        return sum(1 for h in self.log if h.path == path)


class Sites:
    """Starts and stops the loopback servers of one test."""

    def __init__(self) -> None:
        self._runners: list[web.AppRunner] = []

    async def start(self, host: str, routes: Mapping[str, Route], port: int = 0) -> Site:
        site = Site(host, port)

        async def handle(request: web.Request) -> web.StreamResponse:
            hit = Hit(request.path_qs, time.monotonic())
            site.log.append(hit)
            site.active += 1
            site.max_active = max(site.max_active, site.active)
            try:
                route = routes.get(request.path_qs, routes.get(request.path))
                if route is None:
                    return web.Response(status=404, text="not found")
                if isinstance(route, bytes):
                    return web.Response(body=route, content_type="application/xml")
                if isinstance(route, Reply):
                    return web.Response(body=route.body, status=route.status, headers=route.headers)
                return await route(request)
            finally:
                site.active -= 1
                hit.end = time.monotonic()

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        tcp = web.TCPSite(runner, host, port)
        await tcp.start()
        self._runners.append(runner)
        server = tcp._server
        assert isinstance(server, asyncio.base_events.Server)
        site.port = server.sockets[0].getsockname()[1]
        return site

    async def close(self) -> None:
        for runner in self._runners:
            await runner.cleanup()


@pytest.fixture
async def sites() -> AsyncIterator[Sites]:
    s = Sites()
    try:
        yield s
    finally:
        await s.close()


def free_port(host: str) -> int:
    """A port with nothing listening on ``host`` (for dead-host tests)."""
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
    return port


class LoopbackResolver(AbstractResolver):
    """Resolves the names it was given to loopback addresses; every other name fails like DNS."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = dict(names)
        self.queries: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.queries.append(host)
        address = self.names.get(host)
        if address is None:
            raise socket.gaierror(socket.EAI_NONAME, f"test resolver: unknown host {host}")
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        return None


def fast_config(**overrides: Any) -> Config:
    """Config for tests: loopback allowed, quick politeness and timeouts, plain asyncio loop."""
    base: dict[str, Any] = {
        # The SSRF guard stays on: loopback is allowed explicitly, as a user would for an intranet.
        "fetch.allow": ("127.0.0.0/8",),
        "fetch.connect_timeout": 2.0,
        "fetch.read_timeout": 2.0,
        "fetch.total_timeout": 10.0,
        "fetch.retries": 1,
        "fetch.backoff_base": 0.01,
        "fetch.backoff_max": 0.05,
        "politeness.default.rate": 1000.0,
        "politeness.default.concurrency": 4,
        "run.workers": 1,
        "run.hosts_in_flight": 8,
        "run.uvloop": False,
        # The admission's load checks off: they read the whole test process (its RSS
        # after thousands of tests, a loaded CI machine's lag and CPU), which held runs
        # to one host at a time in CI, and tests that need hosts side by side then
        # failed. Admission's own tests set these explicitly.
        "run.memory_budget": 0,
        "run.max_cpu": 0.0,
        "run.max_loop_lag": 0.0,
    }
    base.update(overrides)
    return load_config(None, base)
