"""https on loopback with a throwaway CA (trustme): one TLS context per fetcher, extra CAs.

The server certificates are issued for IP literals on 127.0.30.x, so no name
is resolved. The CA is trusted only through ``fetch.ca_bundle`` or
``SSL_CERT_FILE``, so a test also shows that the system store alone refuses it.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Any

import pytest
import trustme
from aiohttp import web

from harvester.config import FetchConfig, HostPolicy
from harvester.crawl.fetch import Fetcher
from harvester.crawl.scheduler import HostSlot
from harvester.errors import ConfigError, ConnectError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

HOSTS = ("127.0.30.5", "127.0.30.6")


class TLSSite:
    def __init__(self, host: str, port: int, peers: list[tuple[str, int]]) -> None:
        self.host = host
        self.port = port
        self.peers = peers  # the client (address, port) of every request: one per connection

    def url(self, path: str) -> str:
        return f"https://{self.host}:{self.port}{path}"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture
async def tls_sites(ca: trustme.CA) -> AsyncIterator[list[TLSSite]]:
    runners: list[web.AppRunner] = []
    found: list[TLSSite] = []
    try:
        for host in HOSTS:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ca.issue_cert(host).configure_cert(context)
            peers: list[tuple[str, int]] = []

            async def handle(request: web.Request, peers: list[Any] = peers) -> web.Response:
                assert request.transport is not None
                peers.append(request.transport.get_extra_info("peername")[:2])
                return web.Response(body=b"<urlset/>")

            app = web.Application()
            app.router.add_get("/{tail:.*}", handle)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            runners.append(runner)
            site = web.TCPSite(runner, host, 0, ssl_context=context)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            found.append(TLSSite(host, port, peers))
        yield found
    finally:
        for runner in runners:
            await runner.cleanup()


def fetcher(**cfg: Any) -> Fetcher:
    settings: dict[str, Any] = {"allow": ("127.0.30.0/24",), "keepalive_timeout": 30.0}
    settings.update(cfg)
    return Fetcher(FetchConfig(**settings))


def slot(host: str) -> HostSlot:
    return HostSlot(host, HostPolicy(concurrency=4, rate=1000.0, burst=100))


async def read(f: Fetcher, url: str, s: HostSlot) -> bytes:
    async with f.stream(url, s) as body:
        return b"".join([chunk async for chunk in body.chunks()])


async def test_an_unknown_ca_fails_the_handshake_once(tls_sites: list[TLSSite]) -> None:
    site = tls_sites[0]
    async with fetcher(retries=3) as f:
        with pytest.raises(ConnectError, match="certificate verify failed") as info:
            await read(f, site.url("/robots.txt"), slot(site.host))
    assert info.value.attempts == 1  # a certificate problem is not retried
    assert site.peers == []


async def test_ca_bundle_adds_trusted_cas_and_connections_are_kept_alive(
    tls_sites: list[TLSSite], ca_file: str
) -> None:
    async with fetcher(ca_bundle=ca_file) as f:
        for site in tls_sites:
            host_slot = slot(site.host)
            for path in ("/robots.txt", "/a.xml", "/b.xml"):
                assert await read(f, site.url(path), host_slot) == b"<urlset/>"
    for site in tls_sites:
        assert len(site.peers) == 3
        assert len(set(site.peers)) == 1  # one connection per host, reused


async def test_ssl_cert_file_is_honoured(
    tls_sites: list[TLSSite], ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", ca_file)
    site = tls_sites[0]
    async with fetcher() as f:
        assert await read(f, site.url("/robots.txt"), slot(site.host)) == b"<urlset/>"


async def test_one_tls_context_per_fetcher(
    tls_sites: list[TLSSite], ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[ssl.SSLContext] = []
    real = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        context = real(*args, **kwargs)
        made.append(context)
        return context

    monkeypatch.setattr("harvester.crawl.connector.ssl.create_default_context", counting)
    async with fetcher(ca_bundle=ca_file, keepalive_timeout=0.0) as f:
        for site in tls_sites:
            for path in ("/robots.txt", "/a.xml"):
                assert await read(f, site.url(path), slot(site.host)) == b"<urlset/>"
    assert len(made) == 1  # four connections to two hosts, one context
    assert sum(len(set(site.peers)) for site in tls_sites) == 4  # no keep-alive here


async def test_fetchers_share_the_context_until_its_cas_change(
    tls_sites: list[TLSSite], ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[ssl.SSLContext] = []
    real = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        context = real(*args, **kwargs)
        made.append(context)
        return context

    monkeypatch.setattr("harvester.crawl.connector.ssl.create_default_context", counting)
    site = tls_sites[0]
    for _ in range(2):  # the run's fetcher and the late pool's, in one worker
        async with fetcher(ca_bundle=ca_file) as f:
            assert await read(f, site.url("/robots.txt"), slot(site.host)) == b"<urlset/>"
    assert len(made) == 1
    # The bundle rewritten in place with another CA's certificate: loaded again, and the
    # site's CA is no longer trusted.
    trustme.CA().cert_pem.write_to_path(ca_file)
    async with fetcher(ca_bundle=ca_file) as f:
        with pytest.raises(ConnectError):
            await read(f, site.url("/robots.txt"), slot(site.host))
    assert len(made) == 2


async def test_a_ca_bundle_that_cannot_be_read_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"fetch\.ca_bundle"):
        async with fetcher(ca_bundle=str(tmp_path / "missing.pem")):
            pass
