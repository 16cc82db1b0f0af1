"""DNS for the fetch stage: asynchronous lookups behind a bounded cache of answers.

In: a host name and address family, from aiohttp's connector at every new
connection (``CachingResolver.resolve``). Out: the name's addresses, or an
``OSError`` (``socket.gaierror``) that aiohttp wraps as
``ClientConnectorDNSError`` and ``fetch`` reports as ``dns``. The SSRF guard
(``connector.GuardedResolver``, wrapping this one) judges the answer after this, at every connect,
whether it came from the cache or not.

Why not aiohttp's own pieces: its ``ThreadedResolver`` runs ``getaddrinfo`` in
the default executor, a handful of lookups at a time, so thousands of hosts in
flight queue for DNS; and its connector cache keeps answers for a fixed time,
ignores record TTLs and never keeps "no such name". Here:

* ``AresLookup``: aiodns (c-ares), thousands of queries in flight on one
  socket set, one per-try timeout and one retry (``tries=2``), optional
  ``fetch.nameservers``, no search-domain expansion (a crawled host name is
  absolute: "intranet" must not become "intranet.corp.example"). A channel
  serves ``CHANNEL_LOOKUPS`` lookups, then a new one takes over: c-ares keeps
  its own cache of every answer in the channel (its query cache, on by default
  and not configurable through pycares) for up to an hour, ~1.2 KB a name,
  which over a long run of distinct names grew a worker by hundreds of MB; the
  ``CachingResolver`` below is the bounded cache.
* ``ResolverLookup``: any aiohttp ``AbstractResolver`` (``ThreadedResolver``
  for ``fetch.resolver = "threaded"`` or when aiodns cannot be imported, test
  resolvers), with no TTL information.
* ``CachingResolver``: in front of either. Positive answers are kept for their
  record TTL capped at ``fetch.dns_cache_ttl``; "no such name" (NXDOMAIN, no
  data) for ``fetch.dns_negative_ttl``; transient failures (timeout, SERVFAIL)
  not at all. At most ``fetch.dns_cache_size`` names, least recently used
  dropped first. Concurrent lookups of one name share one query. A lookup
  takes at most two ``fetch.dns_timeout`` (one try and one retry).

Example::

    resolver = make_resolver(cfg.fetch)
    try:
        answers = await resolver.resolve("example.com", 443)
    finally:
        await resolver.close()
"""

from __future__ import annotations

import asyncio
import collections
import logging
import socket
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import ThreadedResolver
from aiohttp.abc import AbstractResolver, ResolveResult

from harvester.config import split_nameserver

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from harvester.config import FetchConfig

__all__ = ["AresLookup", "CachingResolver", "Lookup", "ResolverLookup", "make_resolver"]

logger = logging.getLogger(__name__)

# getaddrinfo's "the name has no address": an answer, so it is cached (RFC 2308).
_NEGATIVE_EAI = frozenset(
    code for code in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", None)) if code is not None
)
# c-ares status codes (ares.h) that are answers, not failures: NODATA, NOTFOUND (NXDOMAIN),
# BADNAME (not a valid name at all).
_ARES_NEGATIVE = frozenset({1, 4, 8})
_NUMERIC = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


class Lookup(Protocol):
    """One uncached DNS lookup: the addresses and the answer's TTL (None when unknown).

    Raises ``OSError`` with a getaddrinfo ``errno``: ``EAI_NONAME`` for "no such
    name" (cached), anything else for a failure (not cached).
    """

    async def lookup(self, host: str, family: int) -> tuple[list[ResolveResult], float | None]:
        """Resolve ``host`` (``port`` 0 in the results; the cache fills in the caller's)."""
        ...

    async def close(self) -> None:
        """Release sockets and threads."""
        ...


# Lookups one c-ares channel serves before a new one takes over (module docstring).
CHANNEL_LOOKUPS = 4096


def _aiodns() -> Any:
    """The aiodns module, or None when it cannot be imported."""
    try:
        import aiodns
    except ImportError:
        return None
    return aiodns


class AresLookup:
    """Lookups through aiodns (c-ares): non-blocking, with the record TTLs.

    The c-ares channel is created on the first lookup, in the running loop, so
    a fetcher that only ever dials IP literals never opens it.
    """

    def __init__(self, *, nameservers: Sequence[str] = (), timeout: float, tries: int = 2) -> None:
        servers = []
        for entry in nameservers:
            ip, port = split_nameserver(entry)
            servers.append(f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}")
        self._servers = servers  # c-ares "ip:port" / "[v6]:port" forms; [] = the system's
        self._timeout = timeout  # seconds for the first try of a query
        self._tries = tries  # tries per query (2: one retry)
        self._dns: Any = None  # the aiodns.DNSResolver taking lookups, once created
        self._used = 0  # lookups the current channel has taken
        # Channels still answering lookups (the current one too): resolver -> pending.
        # A replaced channel is closed when its last lookup is done.
        self._pending: dict[Any, int] = {}

    def __repr__(self) -> str:
        servers = ",".join(self._servers) or "system"
        return f"<AresLookup servers={servers} timeout={self._timeout:g}s tries={self._tries}>"

    def _channel(self) -> tuple[Any, Any]:
        """The channel for the next lookup, and a replaced idle one to close (or None).

        A new channel every ``CHANNEL_LOOKUPS`` lookups; the replaced one is closed
        now if idle, else by the last lookup it answers (``_release``).
        """
        retired = None
        if self._dns is not None and self._used >= CHANNEL_LOOKUPS:
            old, self._dns = self._dns, None
            if self._pending[old] == 0:
                del self._pending[old]
                retired = old
        if self._dns is None:
            aiodns = _aiodns()
            import pycares

            self._dns = aiodns.DNSResolver(
                nameservers=self._servers or None,
                loop=asyncio.get_running_loop(),
                timeout=self._timeout,
                tries=self._tries,
                flags=pycares.ARES_FLAG_NOSEARCH,
            )
            self._used = 0
            self._pending[self._dns] = 0
        self._used += 1
        self._pending[self._dns] += 1
        return self._dns, retired

    def _release(self, dns: Any) -> Any:
        """A lookup on ``dns`` ended; return ``dns`` if it was replaced and is now idle."""
        left = self._pending.get(dns)
        if left is None:
            return None  # closed meanwhile (``close``)
        left = self._pending[dns] = left - 1
        if left == 0 and dns is not self._dns:
            del self._pending[dns]
            return dns
        return None

    async def lookup(self, host: str, family: int) -> tuple[list[ResolveResult], float | None]:
        """Resolve ``host`` through c-ares; see ``Lookup``."""
        aiodns = _aiodns()
        dns, retired = self._channel()
        if retired is not None:
            await retired.close()
        try:
            # No AI_ADDRCONFIG (aiohttp's AsyncResolver sets it): on a host with
            # loopback only it can suppress every answer; happy eyeballs in the
            # connector copes with an address family that has no route.
            answer = await dns.getaddrinfo(
                host, family=socket.AddressFamily(family), type=socket.SOCK_STREAM
            )
        except aiodns.error.DNSError as exc:
            code = exc.args[0] if exc.args else None
            message = exc.args[1] if len(exc.args) > 1 else "DNS lookup failed"
            errno = socket.EAI_NONAME if code in _ARES_NEGATIVE else socket.EAI_AGAIN
            raise socket.gaierror(errno, f"{message} ({host})") from exc
        finally:
            # (after the state change: a cancellation in close() leaves nothing half-done)
            if (idle := self._release(dns)) is not None:
                await idle.close()
        results: list[ResolveResult] = []
        ttl: float | None = None
        for node in answer.nodes:
            address = node.addr[0].decode("ascii")
            if node.family == socket.AF_INET6 and len(node.addr) > 3 and node.addr[3]:
                address = f"{address}%{node.addr[3]}"  # link-local scope (the guard refuses it)
            results.append(
                ResolveResult(
                    hostname=host, host=address, port=0, family=node.family, proto=0, flags=_NUMERIC
                )
            )
            ttl = node.ttl if ttl is None else min(ttl, node.ttl)
        if not results:
            raise socket.gaierror(socket.EAI_NONAME, f"no address ({host})")
        return results, ttl

    async def close(self) -> None:
        """Close the c-ares channels (pending queries fail as cancelled)."""
        channels, self._dns = list(self._pending), None
        self._pending.clear()
        for dns in channels:
            await dns.close()


class ResolverLookup:
    """Lookups through an aiohttp ``AbstractResolver`` (no TTLs: the cache's cap applies).

    ``owned``: ``close`` closes the resolver too (not for one the caller passed in).
    """

    def __init__(self, resolver: AbstractResolver, *, owned: bool) -> None:
        self._resolver = resolver
        self._owned = owned

    def __repr__(self) -> str:
        return f"<ResolverLookup {type(self._resolver).__name__}>"

    async def lookup(self, host: str, family: int) -> tuple[list[ResolveResult], float | None]:
        """Resolve ``host`` through the wrapped resolver; see ``Lookup``."""
        results = await self._resolver.resolve(host, 0, family=socket.AddressFamily(family))
        return results, None

    async def close(self) -> None:
        """Close the wrapped resolver if this lookup owns it."""
        if self._owned:
            await self._resolver.close()


@dataclass(frozen=True, slots=True)
class _Failure:
    """A lookup that gave no address: raised anew for every caller (``cache``: an answer)."""

    errno: int
    message: str
    cache: bool


_Answer = list[ResolveResult] | _Failure


class CachingResolver(AbstractResolver):
    """A bounded TTL cache of positive and negative DNS answers in front of a ``Lookup``.

    ``max_ttl`` caps how long an answer is kept (its own TTL when shorter; 0
    keeps none); ``negative_ttl`` is how long "no such name" is kept; ``size``
    bounds the names kept; ``timeout`` bounds one lookup, retry included.
    ``clock`` (seconds, monotonic) is injectable for tests. ``lookups`` counts
    the questions passed on to the lookup, ``hits`` those the cache answered.

    Example::

        resolver = CachingResolver(AresLookup(timeout=5.0), max_ttl=300, negative_ttl=60.0,
                                   size=10_000, timeout=10.0)
        await resolver.resolve("example.com", 443)   # asks c-ares
        await resolver.resolve("example.com", 80)    # from the cache
    """

    def __init__(
        self,
        lookup: Lookup,
        *,
        max_ttl: float,
        negative_ttl: float,
        size: int,
        timeout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lookup = lookup
        self._max_ttl = max_ttl
        self._negative_ttl = negative_ttl
        self._size = size
        self._timeout = timeout
        self._clock = clock
        # (name, family) -> (expiry on clock, answer); order = least recently used first
        self._cache: collections.OrderedDict[tuple[str, int], tuple[float, _Answer]] = (
            collections.OrderedDict()
        )
        # (name, family) -> the one lookup in flight for it, shared by every caller
        self._inflight: dict[tuple[str, int], asyncio.Task[_Answer]] = {}
        self.lookups = 0  # questions passed on to the lookup
        self.hits = 0  # questions answered from the cache

    def __repr__(self) -> str:
        return (
            f"<CachingResolver {self._lookup!r} cached={len(self._cache)}/{self._size} "
            f"in_flight={len(self._inflight)} lookups={self.lookups} hits={self.hits}>"
        )

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The addresses of ``host`` with ``port`` filled in; ``socket.gaierror`` if none."""
        key = (host.lower(), int(family))
        answer = self._cached(key)
        if answer is None:
            task = self._inflight.get(key)
            if task is None:
                task = asyncio.ensure_future(self._ask(host, key))
                self._inflight[key] = task
            # Shielded: a caller that is cancelled (its request timed out) must not
            # cancel the lookup the other callers of this name are waiting for.
            answer = await asyncio.shield(task)
        if isinstance(answer, _Failure):
            raise socket.gaierror(answer.errno, answer.message)
        return [
            ResolveResult(
                hostname=host,
                host=a["host"],
                port=port,
                family=a["family"],
                proto=a["proto"],
                flags=a["flags"],
            )
            for a in answer
        ]

    async def close(self) -> None:
        """Cancel lookups in flight, drop the cache, close the lookup."""
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._inflight.clear()
        self._cache.clear()
        await self._lookup.close()

    # State transitions below are plain defs (no await between check and mutation).

    def _cached(self, key: tuple[str, int]) -> _Answer | None:
        entry = self._cache.get(key)
        if entry is None:
            return None
        expires, answer = entry
        if expires <= self._clock():
            del self._cache[key]
            return None
        self._cache.move_to_end(key)
        self.hits += 1
        return answer

    def _store(self, key: tuple[str, int], answer: _Answer, ttl: float | None) -> None:
        if isinstance(answer, _Failure):
            keep = self._negative_ttl if answer.cache else 0.0
        else:
            keep = self._max_ttl if ttl is None else min(ttl, self._max_ttl)
        if keep <= 0:
            return
        self._cache[key] = (self._clock() + keep, answer)
        self._cache.move_to_end(key)
        while len(self._cache) > self._size:
            self._cache.popitem(last=False)

    async def _ask(self, host: str, key: tuple[str, int]) -> _Answer:
        self.lookups += 1
        ttl: float | None = None
        answer: _Answer
        try:
            async with asyncio.timeout(self._timeout):
                answer, ttl = await self._lookup.lookup(host, key[1])
        except TimeoutError:
            answer = _Failure(
                socket.EAI_AGAIN, f"DNS lookup of {host} timed out after {self._timeout:g}s", False
            )
        except OSError as exc:
            negative = exc.errno in _NEGATIVE_EAI
            answer = _Failure(exc.errno or socket.EAI_FAIL, exc.strerror or str(exc), negative)
        finally:
            self._inflight.pop(key, None)
        if not isinstance(answer, _Failure) and not answer:
            answer = _Failure(socket.EAI_NONAME, f"no address ({host})", True)
        self._store(key, answer, ttl)
        return answer


def make_resolver(cfg: FetchConfig, resolver: AbstractResolver | None = None) -> CachingResolver:
    """The fetcher's resolver: ``resolver`` (tests) or per ``cfg.resolver``, behind the cache.

    ``"async"`` without an importable aiodns falls back to the threaded
    resolver, saying so in the log.
    """
    lookup: Lookup
    if resolver is not None:
        lookup = ResolverLookup(resolver, owned=False)
    elif cfg.resolver == "async" and _aiodns() is not None:
        lookup = AresLookup(nameservers=cfg.nameservers, timeout=cfg.dns_timeout, tries=2)
    else:
        if cfg.resolver == "async":
            logger.warning(
                "aiodns cannot be imported: DNS falls back to the threaded resolver "
                "(a few lookups at a time); install aiodns for fetch.resolver = 'async'"
            )
        if cfg.nameservers:
            logger.warning("fetch.nameservers is ignored by the threaded resolver")
        lookup = ResolverLookup(ThreadedResolver(), owned=True)
    return CachingResolver(
        lookup,
        max_ttl=cfg.dns_cache_ttl,
        negative_ttl=cfg.dns_negative_ttl,
        size=cfg.dns_cache_size,
        timeout=2 * cfg.dns_timeout,  # one try and one retry
    )
