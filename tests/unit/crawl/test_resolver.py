"""CachingResolver with a scripted lookup and a fake clock; make_resolver's choices."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import pytest
from aiohttp import ThreadedResolver
from aiohttp.abc import AbstractResolver, ResolveResult

from harvester.config import FetchConfig
from harvester.crawl import resolver as resolver_module
from harvester.crawl.resolver import AresLookup, CachingResolver, ResolverLookup, make_resolver


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def result(host: str, address: str) -> ResolveResult:
    return ResolveResult(
        hostname=host, host=address, port=0, family=socket.AF_INET, proto=0, flags=0
    )


class Script:
    """A Lookup: answers from ``answers`` (address, TTL) or raises ``errors``; logs questions."""

    def __init__(self) -> None:
        self.answers: dict[str, tuple[str, float | None]] = {}
        self.errors: dict[str, OSError] = {}
        self.asked: list[str] = []
        self.gate: asyncio.Event | None = None  # when set, lookups wait for it
        self.closed = False

    async def lookup(self, host: str, family: int) -> tuple[list[ResolveResult], float | None]:
        self.asked.append(host)
        if self.gate is not None:
            await self.gate.wait()
        if host in self.errors:
            raise self.errors[host]
        address, ttl = self.answers[host]
        return [result(host, address)], ttl

    async def close(self) -> None:
        self.closed = True


def caching(script: Script, clock: Clock, **kw: Any) -> CachingResolver:
    settings: dict[str, Any] = {"max_ttl": 300, "negative_ttl": 60.0, "size": 100, "timeout": 5.0}
    settings.update(kw)
    return CachingResolver(script, clock=clock, **settings)


async def test_answer_kept_for_its_ttl_capped_by_max_ttl() -> None:
    script, clock = Script(), Clock()
    script.answers = {"short.test": ("127.0.0.2", 10), "long.test": ("127.0.0.3", 86400)}
    r = caching(script, clock, max_ttl=300)
    for name in ("short.test", "long.test"):
        assert (await r.resolve(name, 443))[0] == result(name, script.answers[name][0]) | {
            "port": 443
        }
    clock.now += 11
    await r.resolve("short.test")  # its own TTL passed
    await r.resolve("long.test")  # capped at 300 s: still cached
    clock.now += 300
    await r.resolve("long.test")
    assert script.asked == ["short.test", "long.test", "short.test", "long.test"]
    assert (r.lookups, r.hits) == (4, 1)


async def test_no_ttl_means_max_ttl_and_zero_means_uncached() -> None:
    script, clock = Script(), Clock()
    script.answers = {"a.test": ("127.0.0.2", None), "zero.test": ("127.0.0.3", 0)}
    r = caching(script, clock, max_ttl=30)
    for _ in range(2):
        await r.resolve("a.test")
        await r.resolve("zero.test")
    assert script.asked == ["a.test", "zero.test", "zero.test"]
    clock.now += 30
    await r.resolve("a.test")
    assert script.asked.count("a.test") == 2


async def test_negative_answer_cached_for_negative_ttl() -> None:
    script, clock = Script(), Clock()
    script.errors = {"nx.test": socket.gaierror(socket.EAI_NONAME, "no such name")}
    r = caching(script, clock, negative_ttl=60.0)
    for _ in range(5):
        with pytest.raises(socket.gaierror) as info:
            await r.resolve("nx.test")
        assert info.value.errno == socket.EAI_NONAME
    assert script.asked == ["nx.test"]
    clock.now += 60
    with pytest.raises(socket.gaierror):
        await r.resolve("nx.test")
    assert script.asked == ["nx.test", "nx.test"]


async def test_transient_failure_is_not_cached() -> None:
    script, clock = Script(), Clock()
    script.errors = {"flaky.test": socket.gaierror(socket.EAI_AGAIN, "SERVFAIL")}
    r = caching(script, clock)
    for _ in range(3):
        with pytest.raises(socket.gaierror) as info:
            await r.resolve("flaky.test")
        assert info.value.errno == socket.EAI_AGAIN
    assert script.asked == ["flaky.test"] * 3


async def test_lookup_timeout_is_a_transient_failure() -> None:
    script, clock = Script(), Clock()
    script.answers = {"slow.test": ("127.0.0.2", 300)}
    script.gate = asyncio.Event()  # never set
    r = caching(script, clock, timeout=0.05)
    with pytest.raises(socket.gaierror, match=r"timed out after 0\.05s") as info:
        await r.resolve("slow.test")
    assert info.value.errno == socket.EAI_AGAIN
    assert r._cache == {}


async def test_cache_is_bounded_least_recently_used_first() -> None:
    script, clock = Script(), Clock()
    script.answers = {f"h{i}.test": (f"127.0.0.{i + 2}", 300) for i in range(4)}
    r = caching(script, clock, size=2)
    await r.resolve("h0.test")
    await r.resolve("h1.test")
    await r.resolve("h0.test")  # h0 used last: h1 goes first
    await r.resolve("h2.test")
    assert list(r._cache) == [("h0.test", socket.AF_INET), ("h2.test", socket.AF_INET)]
    await r.resolve("h1.test")
    assert script.asked == ["h0.test", "h1.test", "h2.test", "h1.test"]


async def test_one_lookup_per_name_in_flight_and_a_cancelled_caller_leaves_it() -> None:
    script, clock = Script(), Clock()
    script.answers = {"a.test": ("127.0.0.2", 300)}
    script.gate = asyncio.Event()
    r = caching(script, clock)
    first = asyncio.ensure_future(r.resolve("a.test", 80))
    others = [asyncio.ensure_future(r.resolve("A.test", 443)) for _ in range(10)]
    await asyncio.sleep(0)
    first.cancel()  # its request timed out: the others still get the answer
    script.gate.set()
    answers = await asyncio.gather(*others)
    assert {a[0]["port"] for a in answers} == {443}
    assert script.asked == ["a.test"]
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_family_is_part_of_the_key() -> None:
    script, clock = Script(), Clock()
    script.answers = {"a.test": ("127.0.0.2", 300)}
    r = caching(script, clock)
    await r.resolve("a.test", family=socket.AF_INET)
    await r.resolve("a.test", family=socket.AF_UNSPEC)
    assert script.asked == ["a.test", "a.test"]


async def test_close_closes_the_lookup() -> None:
    script = Script()
    r = caching(script, Clock())
    await r.close()
    assert script.closed


# -- make_resolver ----------------------------------------------------------------------


class Injected(AbstractResolver):
    closed = False

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [result(host, "127.0.0.2")]

    async def close(self) -> None:
        self.closed = True


async def test_async_is_the_default() -> None:
    r = make_resolver(FetchConfig(nameservers=("127.0.0.1:5353", "[::1]")))
    try:
        lookup = r._lookup
        assert isinstance(lookup, AresLookup)
        assert lookup._servers == ["127.0.0.1:5353", "[::1]:53"]
    finally:
        await r.close()  # never asked anything: no channel was opened


async def test_threaded_on_request(caplog: pytest.LogCaptureFixture) -> None:
    r = make_resolver(FetchConfig(resolver="threaded", nameservers=("127.0.0.1",)))
    try:
        assert isinstance(r._lookup, ResolverLookup)
        assert isinstance(r._lookup._resolver, ThreadedResolver)
    finally:
        await r.close()
    assert "fetch.nameservers is ignored by the threaded resolver" in caplog.text


async def test_falls_back_to_threaded_without_aiodns(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(resolver_module, "_aiodns", lambda: None)
    with caplog.at_level(logging.WARNING, logger="harvester.crawl.resolver"):
        r = make_resolver(FetchConfig())
    try:
        assert isinstance(r._lookup, ResolverLookup)
        assert isinstance(r._lookup._resolver, ThreadedResolver)
    finally:
        await r.close()
    assert "aiodns cannot be imported: DNS falls back to the threaded resolver" in caplog.text


async def test_an_injected_resolver_is_cached_but_not_closed() -> None:
    injected = Injected()
    r = make_resolver(FetchConfig(), injected)
    assert (await r.resolve("a.test", 80))[0]["host"] == "127.0.0.2"
    await r.close()
    assert not injected.closed
