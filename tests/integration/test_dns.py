"""DNS through aiodns (c-ares) against a real DNS server on loopback that counts queries.

``Zone`` is a tiny UDP name server (dnslib for the wire format) on
127.0.0.1: it answers A queries for its names with loopback addresses only,
"no data" for other types of its names, NXDOMAIN (without SOA, so c-ares'
own cache keeps nothing) for the rest, and logs every question. The fetcher
is pointed at it with ``fetch.nameservers``; nothing else is ever asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from typing import TYPE_CHECKING, Any, cast

import aiodns
import dnslib  # type: ignore[import-untyped]
import pytest

from harvester.config import FetchConfig, HostPolicy
from harvester.crawl.fetch import Fetcher
from harvester.crawl.resolver import AresLookup, CachingResolver, make_resolver
from harvester.crawl.scheduler import HostSlot
from harvester.errors import DNSError, ForbiddenAddress

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.integration.conftest import Sites


class Zone(asyncio.DatagramProtocol):
    """Answers ``names`` (name → (IPv4 on loopback, TTL)); ``silent`` answers nothing.

    ``hold_until``: replies are held until that many distinct names were asked, then
    all sent at once (``released`` says whether that happened): questions that were all
    in flight together, counted where they arrive.
    """

    def __init__(
        self, names: dict[str, tuple[str, int]], *, silent: bool = False, hold_until: int = 0
    ) -> None:
        for address, _ in names.values():
            assert address.startswith("127."), "test names map to loopback only"
        self.names = names
        self.silent = silent
        self.queries: list[tuple[str, str]] = []  # (name, type) in arrival order
        self.transport: asyncio.DatagramTransport | None = None
        self.hold_until = hold_until
        self.held: list[tuple[bytes, tuple[str, int]]] = []  # replies not sent yet
        self.released = hold_until == 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.DatagramTransport", transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        request = dnslib.DNSRecord.parse(data)
        question = request.q
        name = str(question.qname).rstrip(".").lower()
        qtype = dnslib.QTYPE[question.qtype]
        self.queries.append((name, qtype))
        if self.silent:
            return
        reply = request.reply()
        entry = self.names.get(name)
        if entry is None:
            reply.header.rcode = dnslib.RCODE.NXDOMAIN
        elif qtype == "A":
            address, ttl = entry
            reply.add_answer(
                dnslib.RR(question.qname, dnslib.QTYPE.A, rdata=dnslib.A(address), ttl=ttl)
            )
        assert self.transport is not None
        self.held.append((reply.pack(), addr))
        if not self.released and len({n for n, _ in self.queries}) >= self.hold_until:
            self.released = True
        if self.released:
            for packet, to in self.held:
                self.transport.sendto(packet, to)
            self.held.clear()

    def asked(self, name: str, qtype: str = "A") -> int:
        return self.queries.count((name, qtype))


@contextlib.asynccontextmanager
async def zone(names: dict[str, tuple[str, int]], **kw: Any) -> AsyncIterator[tuple[Zone, str]]:
    """Start a ``Zone`` on 127.0.0.1; yield it and its "ip:port" for fetch.nameservers."""
    server = Zone(names, **kw)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # Room for a thousand queries arriving at once while Python answers them one by one
    # (the default buffer holds a few hundred and the kernel drops the rest).
    force = getattr(socket, "SO_RCVBUFFORCE", None)  # Linux, root: past net.core.rmem_max
    try:
        sock.setsockopt(socket.SOL_SOCKET, force or socket.SO_RCVBUF, 8 << 20)
    except PermissionError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind(("127.0.0.1", 0))
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
        lambda: server, sock=sock
    )
    try:
        port = transport.get_extra_info("sockname")[1]
        yield server, f"127.0.0.1:{port}"
    finally:
        transport.close()


def dns_config(nameserver: str, **cfg: Any) -> FetchConfig:
    settings: dict[str, Any] = {"nameservers": (nameserver,), "dns_timeout": 1.0}
    settings.update(cfg)
    return FetchConfig(**settings)


class Clock:
    """A clock the test moves (the cache's ``clock``): TTLs expire when the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def clocked_resolver(nameserver: str, clock: Clock, **cfg: Any) -> CachingResolver:
    """``make_resolver``'s c-ares resolver and cache, on ``clock`` (make_resolver takes none)."""
    c = dns_config(nameserver, **cfg)
    return CachingResolver(
        AresLookup(nameservers=c.nameservers, timeout=c.dns_timeout, tries=2),
        max_ttl=c.dns_cache_ttl,
        negative_ttl=c.dns_negative_ttl,
        size=c.dns_cache_size,
        timeout=2 * c.dns_timeout,
        clock=clock,
    )


def slot(host: str) -> HostSlot:
    return HostSlot(host, HostPolicy(concurrency=8, rate=1000.0, burst=100))


# -- the resolver ---------------------------------------------------------------------


async def test_positive_answers_are_cached() -> None:
    async with zone({"a.test": ("127.0.30.1", 300)}) as (server, ns):
        resolver = make_resolver(dns_config(ns))
        try:
            assert isinstance(resolver, CachingResolver)
            answers = await asyncio.gather(
                *(resolver.resolve("a.test", 443, socket.AF_INET) for _ in range(50))
            )
            again = await resolver.resolve("a.test", 80, socket.AF_INET)
        finally:
            await resolver.close()
    assert {a[0]["host"] for a in answers} == {"127.0.30.1"}
    assert {a[0]["port"] for a in answers} == {443}
    assert again[0]["port"] == 80  # the cache keeps addresses; the caller's port is filled in
    assert server.asked("a.test") == 1  # fifty concurrent questions, one query
    assert resolver.lookups == 1


async def test_positive_answers_expire_with_their_ttl() -> None:
    clock = Clock()
    async with zone({"short.test": ("127.0.30.1", 1)}) as (server, ns):
        resolver = clocked_resolver(ns, clock)
        try:
            await resolver.resolve("short.test", 80, socket.AF_INET)
            clock.now += 0.9  # within the record's TTL of 1 s
            await resolver.resolve("short.test", 80, socket.AF_INET)
            assert server.asked("short.test") == 1
            clock.now += 0.2  # past it
            # c-ares keeps the answer in its own query cache for the TTL, on the real clock:
            # a lower bound, waited for (how much longer it takes cannot fail the test).
            await asyncio.sleep(1.1)
            await resolver.resolve("short.test", 80, socket.AF_INET)
        finally:
            await resolver.close()
    assert server.asked("short.test") == 2


async def test_negative_answers_are_not_asked_again_within_their_ttl() -> None:
    clock = Clock()
    async with zone({}) as (server, ns):
        resolver = clocked_resolver(ns, clock, dns_negative_ttl=0.5)
        try:
            for _ in range(20):
                with pytest.raises(socket.gaierror) as info:
                    await resolver.resolve("nx.test", 80, socket.AF_INET)
                assert info.value.errno == socket.EAI_NONAME
                clock.now += 0.02  # 20 questions within the 0.5 s, however slow the machine
            assert server.asked("nx.test") == 1
            clock.now += 0.2  # past the TTL (no SOA: c-ares keeps no negative answer)
            with pytest.raises(socket.gaierror):
                await resolver.resolve("nx.test", 80, socket.AF_INET)
        finally:
            await resolver.close()
    assert server.asked("nx.test") == 2  # asked again once its TTL had passed


async def test_a_silent_server_costs_one_timeout_and_one_retry() -> None:
    async with zone({}, silent=True) as (server, ns):
        resolver = make_resolver(dns_config(ns, dns_timeout=0.3))
        try:
            started = time.monotonic()
            with pytest.raises(socket.gaierror) as info:
                await resolver.resolve("slow.test", 80, socket.AF_INET)
            elapsed = time.monotonic() - started
            assert "timed out" in str(info.value)
            assert server.asked("slow.test") == 2  # the try and its one retry
            # A failure is not an answer: the next question asks again.
            with pytest.raises(socket.gaierror):
                await resolver.resolve("slow.test", 80, socket.AF_INET)
        finally:
            await resolver.close()
    assert elapsed >= 0.5  # the try and the retry each waited (their upper bound: counts)
    assert server.asked("slow.test") == 4


async def test_a_thousand_lookups_in_flight() -> None:
    """All thousand questions reach the server before it answers any: the server holds
    its replies until all thousand names were asked. A threaded resolver, a handful of
    lookups at a time, would never get there (the 30 s guard then fails the test)."""
    names = {f"h{i}.test": (f"127.0.{31 + i // 250}.{1 + i % 250}", 300) for i in range(1000)}
    async with zone(names, hold_until=len(names)) as (server, ns):
        # A long try: no question may time out and be re-sent while the others arrive.
        resolver = make_resolver(dns_config(ns, dns_timeout=15.0))
        try:
            async with asyncio.timeout(30):
                answers = await asyncio.gather(
                    *(resolver.resolve(name, 80, socket.AF_INET) for name in names)
                )
        finally:
            await resolver.close()
    assert server.released
    assert [a[0]["host"] for a in answers] == [address for address, _ in names.values()]
    assert {name for name, _ in server.queries} == set(names)
    # c-ares may re-send a query the (slow, Python) server has not answered yet: at most once.
    assert len(server.queries) <= 2000


async def test_a_channel_is_replaced_after_its_lookups_and_closed_once_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # c-ares keeps every answer in its channel (its query cache): a long run of
    # distinct names grew a worker ~1.2 KB a name until the channel was replaced.
    monkeypatch.setattr("harvester.crawl.resolver.CHANNEL_LOOKUPS", 5)
    names = {f"c{i}.test": (f"127.0.40.{1 + i}", 300) for i in range(23)}
    closed: list[object] = []
    async with zone(names) as (server, ns):
        lookup = AresLookup(nameservers=(ns,), timeout=1.0)
        real_close = aiodns.DNSResolver.close

        async def counting_close(self: Any) -> None:
            closed.append(self)
            await real_close(self)

        monkeypatch.setattr(aiodns.DNSResolver, "close", counting_close)
        try:
            # Lookups in flight across replacements (all 23 at once), then one by one.
            answers = await asyncio.gather(*(lookup.lookup(n, socket.AF_INET) for n in names))
            for name in list(names)[:7]:
                await lookup.lookup(name, socket.AF_INET)
            live = len(lookup._pending)
        finally:
            await lookup.close()
    assert [a[0][0]["host"] for a in answers] == [address for address, _ in names.values()]
    assert live == 1  # only the current channel is open; every replaced one was closed
    # 30 lookups, 5 a channel: 6 channels, each closed once (the last by close()).
    assert len(closed) == len(set(map(id, closed))) == 6
    assert {name for name, _ in server.queries} == set(names)


# -- through the fetcher: the guard still judges every answer -------------------------


async def test_fetcher_resolves_through_the_configured_server(sites: Sites) -> None:
    site = await sites.start("127.0.30.1", {"/s.xml": b"<urlset/>"})
    async with zone({"site.test": ("127.0.30.1", 300)}) as (server, ns):
        cfg = dns_config(ns, allow=("127.0.30.1/32",), keepalive_timeout=0.0)
        async with Fetcher(cfg) as fetcher:
            url = f"http://site.test:{site.port}/s.xml"
            for _ in range(3):
                async with fetcher.stream(url, slot("site.test")) as body:
                    assert b"".join([c async for c in body.chunks()]) == b"<urlset/>"
            dns = fetcher.resolver
            assert dns is not None
            assert isinstance(dns._lookup, AresLookup)
    assert server.asked("site.test", "A") == 1  # three connects, one A query
    assert site.hits("/s.xml") == 3


async def test_guard_refuses_a_name_resolving_outside_the_allowlist(sites: Sites) -> None:
    evil = await sites.start("127.0.30.2", {"/s.xml": b"<urlset/>"})
    url = f"http://evil.test:{evil.port}/s.xml"
    async with (
        zone({"evil.test": ("127.0.30.2", 300)}) as (_, ns),
        Fetcher(dns_config(ns, allow=("127.0.30.1/32",))) as fetcher,
    ):
        with pytest.raises(ForbiddenAddress) as info:
            async with fetcher.stream(url, slot("evil.test")):
                pass
    assert "127.0.30.2 (resolved from evil.test): loopback" in info.value.message
    assert evil.log == []


async def test_no_such_name_is_a_dns_failure_asked_once() -> None:
    async with zone({}) as (server, ns), Fetcher(dns_config(ns, retries=3)) as fetcher:
        for _ in range(3):
            with pytest.raises(DNSError) as info:
                async with fetcher.stream("http://gone.test/robots.txt", slot("gone.test")):
                    pass
            assert info.value.kind == "dns"
            assert info.value.url == "http://gone.test/robots.txt"
    # The connector asks for any family: one A and one AAAA question, once.
    assert server.asked("gone.test", "A") == 1
    assert server.asked("gone.test", "AAAA") == 1


async def test_a_dns_timeout_through_the_fetcher_is_a_dns_failure() -> None:
    async with (
        zone({}, silent=True) as (server, ns),
        Fetcher(dns_config(ns, dns_timeout=0.2, retries=3)) as fetcher,
    ):
        with pytest.raises(DNSError, match="timed out") as info:
            async with fetcher.stream("http://mute.test/robots.txt", slot("mute.test")):
                pass
    assert info.value.kind == "dns"  # not "timeout": the name never resolved
    assert info.value.attempts == 1  # a DNS failure is not retried by the fetcher
    assert server.asked("mute.test", "A") == 2  # c-ares' one retry (no more, for any try)
