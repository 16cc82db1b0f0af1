"""The fetcher's connection layer extends aiohttp through its public API only (issue 46),
but for ``close_idle``, which reads aiohttp's pool (the tests at the end fail loudly when
an aiohttp release changes it).

aiohttp's private connector methods (``_resolve_host``, ``_create_connection``,
``_wait_for_available_connection``, ...) change between releases; an override of one
breaks at import or, worse, silently stops being called (the SSRF guard!). The guard
and the queue count now live in ``resolver=``, a client middleware and a
``TraceConfig``; tests/integration/test_ssrf.py and test_requests_socks.py prove them
end to end, the tests here each piece on its own.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import socket
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import aiohttp
import pytest
import yarl
from aiohttp.abc import AbstractResolver, ResolveResult
from multidict import CIMultiDict

from harvester.config import FetchConfig
from harvester.crawl import connector as connector_module
from harvester.crawl.connector import (
    ConnectionQueue,
    GuardedResolver,
    HopGuard,
    close_idle,
    make_session_parts,
)
from harvester.crawl.guard import AddressPolicy
from harvester.errors import ForbiddenAddress
from tests.paths import REPO

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = REPO / "harvester"


def _modules_using_aiohttp() -> Iterator[str]:
    for path in sorted(ROOT.rglob("*.py")):
        if "aiohttp" in path.read_text(encoding="utf-8"):
            parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join(parts)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_method(value: object) -> bool:
    return callable(value) or isinstance(value, property | classmethod | staticmethod)


def _from_aiohttp(cls: type) -> bool:
    return cls.__module__.partition(".")[0] in {"aiohttp", "aiohttp_socks"}


def test_no_private_aiohttp_attribute_is_overridden() -> None:
    # A class of ours deriving from one of aiohttp's (or aiohttp-socks') may implement
    # its public or abstract methods only, never replace a private one.
    overrides = []
    for name in _modules_using_aiohttp():
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != name:
                continue
            theirs = [base for base in cls.__mro__[1:] if _from_aiohttp(base)]
            overrides += [
                f"{name}.{cls.__name__}.{attr}"
                for attr, value in vars(cls).items()
                if _is_private(attr)
                and _is_method(value)
                and any(attr in vars(base) for base in theirs)
            ]
    assert overrides == []


def test_the_override_finder_finds_one() -> None:
    class Sneaky(aiohttp.TCPConnector):
        async def _resolve_host(self, *args: object, **kwargs: object) -> list[ResolveResult]:
            raise NotImplementedError

    theirs = [base for base in Sneaky.__mro__[1:] if _from_aiohttp(base)]
    assert any("_resolve_host" in vars(base) for base in theirs)
    assert "harvester.crawl.connector" in set(_modules_using_aiohttp())


# -- GuardedResolver --------------------------------------------------------------------


class Answers(AbstractResolver):
    """A resolver answering every name with the same addresses (and counting the asks)."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses
        self.asked: list[tuple[str, int]] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append((host, port))
        return [
            ResolveResult(hostname=host, host=a, port=port, family=family, proto=0, flags=0)
            for a in self.addresses
        ]

    async def close(self) -> None:
        raise AssertionError("the inner resolver is its owner's to close")


async def test_the_resolver_answers_only_allowed_addresses() -> None:
    inner = Answers("127.0.0.1", "93.184.215.14", "10.0.0.1")
    guarded = GuardedResolver(inner, AddressPolicy(), proxy=None)
    answers = await guarded.resolve("mixed.test", 443)
    assert [a["host"] for a in answers] == ["93.184.215.14"]
    with pytest.raises(ForbiddenAddress, match=r"127\.0\.0\.1 \(resolved from evil\.test\)"):
        await GuardedResolver(Answers("127.0.0.1"), AddressPolicy(), proxy=None).resolve(
            "evil.test", 80
        )
    await guarded.close()  # leaves the inner resolver open


async def test_the_resolver_passes_the_proxy_and_allowlisted_names() -> None:
    inner = Answers("10.0.0.7")
    guarded = GuardedResolver(
        inner, AddressPolicy(allow=("intranet.test",)), proxy="http://proxy.test:3128"
    )
    assert [a["host"] for a in await guarded.resolve("proxy.test", 3128)] == ["10.0.0.7"]
    assert [a["host"] for a in await guarded.resolve("intranet.test", 80)] == ["10.0.0.7"]
    with pytest.raises(ForbiddenAddress):
        await guarded.resolve("proxy.test", 80)  # the proxy's name, not the proxy
    assert inner.asked == [("proxy.test", 3128), ("intranet.test", 80), ("proxy.test", 80)]


# -- HopGuard ---------------------------------------------------------------------------


async def test_the_middleware_refuses_literals_before_the_handler() -> None:
    sent: list[str] = []

    async def handler(req: aiohttp.ClientRequest) -> aiohttp.ClientResponse:
        sent.append(str(req.url))
        raise ConnectionAbortedError("the test stops here")

    def request(url: str) -> aiohttp.ClientRequest:
        return cast("aiohttp.ClientRequest", SimpleNamespace(url=yarl.URL(url)))  # all it reads

    guard = HopGuard(AddressPolicy(allow=("127.0.0.2/32",)))
    for url in ("http://10.0.0.1/", "http://[::1]:8080/", "http://127.1/", "http://127.0.0.3./"):
        with pytest.raises(ForbiddenAddress):
            await guard(request(url), handler)
    for url in ("http://127.0.0.2/", "http://evil.test/", "http://127.0.0.2/x"):
        with pytest.raises(ConnectionAbortedError):  # allowed; a name is not its job
            await guard(request(url), handler)
    assert sent == ["http://127.0.0.2/", "http://evil.test/", "http://127.0.0.2/x"]
    with pytest.raises(ForbiddenAddress):  # a refusal is not remembered as a pass
        await guard(request("http://10.0.0.1/again"), handler)


# -- ConnectionQueue --------------------------------------------------------------------


async def test_the_queue_count_leaves_once_per_wait() -> None:
    queue = ConnectionQueue()
    trace = aiohttp.TraceConfig()
    queue.install(trace)
    trace.freeze()  # as the session does
    session = cast("aiohttp.ClientSession", None)  # not read
    joined = aiohttp.TraceConnectionQueuedStartParams()
    ended = aiohttp.TraceConnectionQueuedEndParams()
    failed = aiohttp.TraceRequestExceptionParams(
        "GET", yarl.URL("http://a.test/"), CIMultiDict[str](), asyncio.CancelledError()
    )
    first, second = SimpleNamespace(), SimpleNamespace()
    await trace.on_connection_queued_start.send(session, first, joined)
    await trace.on_connection_queued_start.send(session, second, joined)
    assert queue.waiting == 2
    await trace.on_connection_queued_end.send(session, first, ended)
    await trace.on_request_exception.send(session, first, failed)  # failed later: not queued
    assert queue.waiting == 1
    # Cancelled while it waited: aiohttp sends no queued end, only the request's exception.
    await trace.on_request_exception.send(session, second, failed)
    assert queue.waiting == 0
    await trace.on_request_exception.send(session, SimpleNamespace(), failed)  # never queued
    assert queue.waiting == 0


async def test_session_parts_follow_the_policy() -> None:
    guarded = make_session_parts(FetchConfig(), Answers())
    assert [type(m) for m in guarded.middlewares] == [HopGuard]
    assert len(guarded.trace_configs) == 1  # each one costs every request its signal sends
    assert isinstance(guarded.connector, aiohttp.TCPConnector)
    await guarded.connector.close()
    open_ = make_session_parts(FetchConfig(allow_private=True), Answers())
    assert open_.middlewares == ()  # allow_private: nothing to refuse
    await open_.connector.close()


# -- close_idle: a finished host's pooled connections (issue 51) --------------------------


class Protocol:
    """A pooled connection's protocol: ``close`` is all close_idle calls."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _key(host: str, port: int, *, is_ssl: bool = False) -> object:
    return aiohttp.client_reqrep.ConnectionKey(host, port, is_ssl, is_ssl, None, None, None)


async def test_the_pool_close_idle_reads_is_the_one_aiohttp_has() -> None:
    # close_idle reads aiohttp's private pool: a dict keyed by ConnectionKey (host, port)
    # of (protocol, time) pairs. If a release changes that, this fails, not the memory.
    # The SOCKS connector (aiohttp-socks) derives from TCPConnector: the same pool.
    plain = make_session_parts(FetchConfig(), Answers()).connector
    socks = make_session_parts(FetchConfig(proxy="socks5://127.0.0.1:1080"), Answers()).connector
    try:
        for connector in (plain, socks):
            assert isinstance(getattr(connector, "_conns", None), dict)
        fields = aiohttp.client_reqrep.ConnectionKey._fields
        assert fields[:3] == ("host", "port", "is_ssl")
        assert "_conns" in inspect.getsource(aiohttp.BaseConnector._release)
        assert "popleft()" in inspect.getsource(aiohttp.BaseConnector._get)
    finally:
        await plain.close()
        await socks.close()


def test_close_idle_closes_the_hosts_connections_on_its_ports_only() -> None:
    a80, a443, a8080 = Protocol(), Protocol(), Protocol()
    other, tls_off = Protocol(), Protocol()
    pool: dict[object, list[tuple[Protocol, float]]] = {
        _key("a.example", 80): [(a80, 1.0)],
        _key("a.example", 443, is_ssl=True): [(a443, 1.0), (tls_off, 2.0)],
        _key("a.example", 8080): [(a8080, 1.0)],
        _key("b.example", 443, is_ssl=True): [(other, 1.0)],
    }
    connector = cast("aiohttp.BaseConnector", SimpleNamespace(_conns=pool))
    assert close_idle(connector, "a.example") == 3
    assert (a80.closed, a443.closed, tls_off.closed) == (True, True, True)
    assert (a8080.closed, other.closed) == (False, False)
    assert close_idle(connector, "a.example:8080") == 1
    assert (a8080.closed, other.closed) == (True, False)
    assert list(pool) == [_key("b.example", 443, is_ssl=True)]
    assert close_idle(connector, "a.example") == 0
    assert close_idle(connector, "[::1]:8080") == 0


def test_close_idle_on_a_pool_it_does_not_know_closes_nothing_and_says_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(connector_module, "_POOL_WARNED", False)
    unknown = cast("aiohttp.BaseConnector", SimpleNamespace(_conns=[("a.example", 80)]))
    renamed = cast("aiohttp.BaseConnector", SimpleNamespace(_pool={}))
    with caplog.at_level("WARNING", logger="harvester.crawl.connector"):
        assert close_idle(unknown, "a.example") == 0
        assert close_idle(renamed, "a.example") == 0
    assert len(caplog.records) == 1
    assert "keepalive_timeout" in caplog.records[0].getMessage()
