"""fetch.proxy = socks5:// and socks5h:// through a small SOCKS5 server on loopback (issue 32).

The proxy (RFC 1928, no authentication or RFC 1929 username/password) logs every
CONNECT it is asked for and only ever connects to loopback, so nothing leaves the
machine. The SSRF guard's documented behaviour with a proxy is checked through it:
an IP-literal target the guard refuses is refused before the proxy is asked (both
schemes); with socks5:// a name is resolved here and refused by its address; with
socks5h:// a name goes to the proxy unresolved.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.conftest import LoopbackResolver
from tests.integration.harvesting import collect
from tests.integration.webs import robots, urlset

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from tests.integration.conftest import Sites

PROXY_HOST = "127.0.0.9"


class Socks5Server:
    """A SOCKS5 CONNECT proxy on loopback that logs the destinations it is asked for."""

    def __init__(self, names: dict[str, str], auth: tuple[str, str] | None = None) -> None:
        self.names = names  # what this proxy resolves a name to (socks5h)
        self.auth = auth
        self.connects: list[tuple[str, int]] = []
        self.logins: list[tuple[str, str]] = []
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, PROXY_HOST, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._session(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _version, count = await reader.readexactly(2)
        methods = await reader.readexactly(count)
        if self.auth is not None:
            assert 2 in methods
            writer.write(b"\x05\x02")
            _v, n = await reader.readexactly(2)
            user = (await reader.readexactly(n)).decode()
            (m,) = await reader.readexactly(1)
            password = (await reader.readexactly(m)).decode()
            self.logins.append((user, password))
            writer.write(b"\x01\x00" if (user, password) == self.auth else b"\x01\x01")
        else:
            writer.write(b"\x05\x00")
        _v, _cmd, _rsv, atyp = await reader.readexactly(4)
        if atyp == 1:
            host = socket.inet_ntoa(await reader.readexactly(4))
        elif atyp == 3:
            (length,) = await reader.readexactly(1)
            host = (await reader.readexactly(length)).decode()
        else:
            host = socket.inet_ntop(socket.AF_INET6, await reader.readexactly(16))
        port = int.from_bytes(await reader.readexactly(2), "big")
        self.connects.append((host, port))
        target = self.names.get(host, host)
        try:
            if not ipaddress.ip_address(target).is_loopback:
                raise ValueError(target)  # never off loopback
            up_reader, up_writer = await asyncio.open_connection(target, port)
        except (OSError, ValueError):
            writer.write(b"\x05\x04\x00\x01" + bytes(6))  # host unreachable
            return
        writer.write(b"\x05\x00\x00\x01" + socket.inet_aton("127.0.0.1") + b"\x00\x00")
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        with contextlib.suppress(OSError):
            writer.close()


@pytest.fixture
async def proxy() -> AsyncIterator[Socks5Server]:
    server = Socks5Server({"site.test": "127.0.0.2", "evil.test": "127.0.0.4"})
    await server.start()
    try:
        yield server
    finally:
        await server.close()


async def served(sites: Sites, host: str = "127.0.0.2") -> Any:
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)
    routes["/robots.txt"] = robots(site.url("/s.xml"))
    routes["/s.xml"] = urlset(site.url("/p/1"), site.url("/p/2"))
    return site


@pytest.mark.parametrize("scheme", ["socks5", "socks5h"])
async def test_harvest_through_a_socks_proxy(
    sites: Sites, proxy: Socks5Server, scheme: str
) -> None:
    site = await served(sites)
    records, hosts = await collect(
        [site.origin],
        **{"fetch.proxy": f"{scheme}://{PROXY_HOST}:{proxy.port}", "fetch.allow": ("127.0.0.2",)},
    )
    assert sorted(r["loc"] for r in records) == [site.url("/p/1"), site.url("/p/2")]
    assert ("127.0.0.2", site.port) in proxy.connects  # every request went through it
    # (and tdmrep.json: policy.tdmrep, on by default, through the proxy like the rest)
    assert {h.path for h in site.log} == {"/robots.txt", "/.well-known/tdmrep.json", "/s.xml"}
    assert hosts[f"127.0.0.2:{site.port}"]["failures"] == []


async def test_socks_credentials_from_the_url(sites: Sites) -> None:
    site = await served(sites)
    server = Socks5Server({}, auth=("team", "s3cret"))
    await server.start()
    try:
        records, _ = await collect(
            [site.origin],
            **{
                "fetch.proxy": f"socks5://team:s3cret@{PROXY_HOST}:{server.port}",
                "fetch.allow": ("127.0.0.2",),
            },
        )
    finally:
        await server.close()
    assert len(records) == 2
    assert server.logins
    assert set(server.logins) == {("team", "s3cret")}


@pytest.mark.parametrize("scheme", ["socks5", "socks5h"])
async def test_the_guard_refuses_an_ip_literal_before_the_proxy_is_asked(
    sites: Sites, proxy: Socks5Server, scheme: str
) -> None:
    # 127.0.0.4 is loopback and not on the allowlist: refused as without a proxy.
    blocked = await served(sites, "127.0.0.4")
    _, hosts = await collect(
        [blocked.origin],
        **{"fetch.proxy": f"{scheme}://{PROXY_HOST}:{proxy.port}", "fetch.allow": ("127.0.0.2",)},
    )
    report = hosts[f"127.0.0.4:{blocked.port}"]
    assert report["failures_by_class"] == {"forbidden_address": 1}
    assert "127.0.0.4" in report["failures"][0]["message"]
    assert proxy.connects == []  # the proxy was never asked
    assert blocked.log == []


async def test_socks5_resolves_names_here_and_refuses_a_forbidden_address(
    sites: Sites, proxy: Socks5Server
) -> None:
    blocked = await served(sites, "127.0.0.4")
    resolver = LoopbackResolver({"evil.test": "127.0.0.4"})
    _, hosts = await collect(
        [f"http://evil.test:{blocked.port}"],
        resolver=resolver,
        **{"fetch.proxy": f"socks5://{PROXY_HOST}:{proxy.port}", "fetch.allow": ("127.0.0.2",)},
    )
    report = hosts[f"evil.test:{blocked.port}"]
    assert report["failures_by_class"] == {"forbidden_address": 1}
    assert "resolved from evil.test" in report["failures"][0]["message"]
    assert "evil.test" in resolver.queries  # resolved on this side, by the fetcher's resolver
    assert proxy.connects == []
    assert blocked.log == []


async def test_socks5h_hands_names_to_the_proxy_unresolved(
    sites: Sites, proxy: Socks5Server
) -> None:
    # As the guard's docstring says: the proxy resolves names, so only IP literals are
    # judged here. The name is never looked up on this side.
    site = await served(sites)
    resolver = LoopbackResolver({})
    records, _ = await collect(
        [f"http://site.test:{site.port}/s.xml"],
        resolver=resolver,
        **{"fetch.proxy": f"socks5h://{PROXY_HOST}:{proxy.port}", "fetch.allow": ("127.0.0.2",)},
    )
    assert len(records) == 2
    assert proxy.connects == [("site.test", site.port)]
    assert resolver.queries == []


@pytest.mark.parametrize("scheme", ["socks5", "socks5h"])
async def test_https_through_the_tunnel_checks_the_certificate(
    proxy: Socks5Server, scheme: str, tmp_path: Path
) -> None:
    import ssl

    import trustme
    from aiohttp import web

    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.2").configure_cert(context)

    async def handle(request: web.Request) -> web.Response:
        return web.Response(body=urlset(f"https://{request.host}/secure"))

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.2", 0, ssl_context=context)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        settings = {
            "fetch.proxy": f"{scheme}://{PROXY_HOST}:{proxy.port}",
            "fetch.allow": ("127.0.0.2",),
        }
        # Without the CA the handshake through the tunnel fails: the certificate is checked.
        records, hosts = await collect([f"https://127.0.0.2:{port}/s.xml"], **settings)
        assert records == []
        assert "certificate verify failed" in hosts[f"127.0.0.2:{port}"]["failures"][0]["message"]
        records, _ = await collect(
            [f"https://127.0.0.2:{port}/s.xml"], **settings, **{"fetch.ca_bundle": str(ca_file)}
        )
    finally:
        await runner.cleanup()
    assert [r["loc"] for r in records] == [f"https://127.0.0.2:{port}/secure"]
    assert proxy.connects.count(("127.0.0.2", port)) >= 2  # both runs went through it


async def test_a_dead_proxy_or_a_refused_connect_is_a_classified_failure(
    sites: Sites, proxy: Socks5Server
) -> None:
    from tests.integration.conftest import free_port

    site = await served(sites)
    dead = free_port(PROXY_HOST)
    _, hosts = await collect(
        [site.origin],
        **{"fetch.proxy": f"socks5://{PROXY_HOST}:{dead}", "fetch.allow": ("127.0.0.2",)},
    )
    report = hosts[f"127.0.0.2:{site.port}"]
    assert report["failures_by_class"] == {"connect": 1}  # robots.txt unreachable: the host
    assert "SOCKS proxy" in report["failures"][0]["message"]
    assert site.log == []
    # The proxy answers "host unreachable" for a name it cannot resolve (socks5h).
    _, hosts = await collect(
        ["http://nowhere.test:8080/s.xml"],
        **{"fetch.proxy": f"socks5h://{PROXY_HOST}:{proxy.port}", "fetch.retries": 0},
    )
    report = hosts["nowhere.test:8080"]
    assert report["failures_by_class"] == {"connect": 1}
    assert "SOCKS proxy" in report["failures"][0]["message"]
    assert proxy.connects == [("nowhere.test", 8080)]
