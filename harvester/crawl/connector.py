"""The fetcher's connection layer: the SSRF-guarded connector, its resolver and TLS context.

In: ``FetchConfig`` and the fetcher's resolver. Out: ``SessionParts``, what the one
``ClientSession`` of a ``Fetcher`` is built from:

* a ``TCPConnector`` whose ``resolver=`` is a ``GuardedResolver`` around the
  ``CachingResolver`` of ``harvester.crawl.resolver`` (aiohttp's own DNS cache is off:
  the resolver's cache honours record TTLs and keeps "no such name"), so only the
  addresses the ``AddressPolicy`` allows are ever dialed for a name,
* ``HopGuard``, a client middleware refusing IP-literal hosts the policy refuses on
  every request, redirect hops included (aiohttp never resolves a literal),
* one ``ssl.SSLContext`` for every https connection of the process: the
  system's CAs (OpenSSL honours ``SSL_CERT_FILE``/``SSL_CERT_DIR``) plus
  ``fetch.ca_bundle``. Building a context loads the CA store, milliseconds of
  disk and parsing, so it is done once per worker, never per host,
* pooled keep-alive connections per (host, port), ``fetch.keepalive_timeout``, and
  ``close_idle``, which closes one host's idle pooled connections when the host ends
  (its worker is done), so a long keep-alive serves a working host without keeping
  the sockets of finished ones,
* a ``TraceConfig`` feeding ``ConnectionQueue``, the count of requests waiting for a
  free connection (``Fetcher.queued``, read by the run's admission),
* through a SOCKS5 ``fetch.proxy``, aiohttp-socks' connector (``harvester.crawl.socks``).

The guard uses only aiohttp's public API (``resolver=``, ``middlewares=``,
``trace_configs=``): its private connector methods change between releases (issue 46),
and the SSRF guard must not depend on them. ``close_idle`` is the one exception, and
only for memory: aiohttp has no public call to close one key's pooled connections, so
it reads the connector's pool (``_conns``), and when that is not what it expects it
closes nothing and logs once (connections then expire by the keep-alive, as before);
``tests/unit/crawl/test_connector.py`` fails loudly on such an aiohttp.
``harvester.crawl.guard`` says why the guard sits where it does.

Example::

    parts = make_session_parts(cfg.fetch, make_resolver(cfg.fetch))
    session = aiohttp.ClientSession(
        connector=parts.connector,
        middlewares=parts.middlewares,
        trace_configs=list(parts.trace_configs),
    )
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import yarl
from aiohttp.abc import AbstractResolver

from harvester.config.requests import SOCKS_SCHEMES
from harvester.crawl.guard import AddressPolicy, is_literal
from harvester.errors import ConfigError

if TYPE_CHECKING:
    from types import SimpleNamespace

    from aiohttp.abc import ResolveResult
    from aiohttp.client_middlewares import ClientHandlerType, ClientMiddlewareType

    from harvester.config import FetchConfig

__all__ = [
    "ConnectionQueue",
    "GuardedResolver",
    "HopGuard",
    "SessionParts",
    "close_idle",
    "is_socks",
    "make_session_parts",
    "tls_context",
]

logger = logging.getLogger(__name__)

_ALLOWED_LITERALS = 4096  # HopGuard's memory of allowed literal hosts (a few hundred KB)
_TLS_CONTEXTS_MAX = 8  # TLS contexts kept per process (each holds a CA store, ~1 MB)


def tls_context(cfg: FetchConfig) -> ssl.SSLContext:
    """The TLS client context: system CAs (``SSL_CERT_FILE`` honoured) plus ``cfg.ca_bundle``.

    One per process for the same CA sources (``_TLS_CONTEXTS``): a worker's fetchers (the
    run's, the late pool's) share it, so the CA store is loaded once per worker. Raises
    ``ConfigError`` naming ``fetch.ca_bundle`` when that file cannot be loaded.
    """
    key = _ca_sources(cfg.ca_bundle)
    context = _TLS_CONTEXTS.get(key)
    if context is None:
        context = _new_tls_context(cfg)
        if len(_TLS_CONTEXTS) >= _TLS_CONTEXTS_MAX:
            _TLS_CONTEXTS.clear()  # (a process meets a handful of CA sources, tests many)
        _TLS_CONTEXTS[key] = context
    return context


# Contexts by CA sources. Safe to share: a context is only read after it is built (aiohttp
# passes it to each connection; per-host verify_tls = false goes as ssl=False instead),
# and the key changes whenever what it was loaded from did.
_TLS_CONTEXTS: dict[tuple[object, ...], ssl.SSLContext] = {}


def _ca_sources(ca_bundle: str | None) -> tuple[object, ...]:
    """What a context's CAs come from: ``ca_bundle`` and OpenSSL's environment variables,
    the two files by their contents (a file rewritten in place is loaded again; hashing
    a bundle costs far less than parsing it)."""
    cert_file = os.environ.get("SSL_CERT_FILE")
    # (SSL_CERT_DIR is searched at each verification, so its name is all that counts.)
    return (
        ca_bundle,
        _digest(ca_bundle),
        cert_file,
        _digest(cert_file),
        os.environ.get("SSL_CERT_DIR"),
    )


def _digest(path: str | None) -> bytes | None:
    """A digest of the file's bytes; None without a file (a missing ``ca_bundle`` then
    fails in ``_new_tls_context`` and no context is kept)."""
    if not path:
        return None
    try:
        with open(path, "rb") as file:
            return hashlib.blake2b(file.read(), digest_size=16).digest()
    except OSError:
        return None


def _new_tls_context(cfg: FetchConfig) -> ssl.SSLContext:
    # create_default_context() loads OpenSSL's default verify paths, which read
    # SSL_CERT_FILE and SSL_CERT_DIR from the environment when they are set.
    context = ssl.create_default_context()
    if cfg.ca_bundle:
        try:
            context.load_verify_locations(cafile=cfg.ca_bundle)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"cannot load CAs from {cfg.ca_bundle}: {exc}", key="fetch.ca_bundle"
            ) from exc
    return context


def is_socks(proxy: str | None) -> bool:
    """Whether ``proxy`` is a SOCKS proxy URL (``socks5://``, ``socks5h://``)."""
    return bool(proxy) and str(proxy).partition("://")[0].lower() in SOCKS_SCHEMES


@dataclass(frozen=True, slots=True)
class SessionParts:
    """What a ``Fetcher``'s ``ClientSession`` is built from (``make_session_parts``).

    ``middlewares`` go after the fetcher's own host check; ``queue`` counts the
    requests waiting for a connection, through ``trace_configs``.
    """

    connector: aiohttp.BaseConnector
    middlewares: tuple[ClientMiddlewareType, ...]
    trace_configs: tuple[aiohttp.TraceConfig, ...]
    queue: ConnectionQueue


def make_session_parts(cfg: FetchConfig, resolver: AbstractResolver) -> SessionParts:
    """The session's connector and hooks: guarded, on ``resolver``, one TLS context, keep-alive.

    With a SOCKS ``fetch.proxy`` the connector is aiohttp-socks' (``harvester.crawl.socks``);
    an HTTP proxy goes with each request (``proxy=``) through the plain ``TCPConnector``.
    ``resolver`` stays the caller's to close. Raises ``ConfigError`` for a ``ca_bundle``
    that cannot be loaded.
    """
    policy = AddressPolicy(allow_private=cfg.allow_private, allow=cfg.allow)
    options: dict[str, Any] = {
        "limit": cfg.max_connections,
        # The resolver caches (TTL-bounded, negative answers too); a second cache here
        # would keep answers past their TTL. Off, aiohttp also asks the resolver at every
        # new connection, which is what makes GuardedResolver see every dialed name.
        "use_dns_cache": False,
        "keepalive_timeout": cfg.keepalive_timeout,
        "ssl": tls_context(cfg),
    }
    queue = ConnectionQueue()
    trace = aiohttp.TraceConfig()  # one: every config costs each request its signal sends
    queue.install(trace)
    # No guard at all with allow_private (then every address may be dialed anyway).
    middlewares: tuple[ClientMiddlewareType, ...] = (HopGuard(policy),) if policy.enabled else ()
    connector: aiohttp.BaseConnector
    if is_socks(cfg.proxy):
        from harvester.crawl import socks

        connector = socks.make_socks_connector(cfg, **options)
        if policy.enabled and not socks.proxy_resolves_names(cfg):
            socks.LocalNameCheck(policy, resolver).install(trace)
        middlewares = (*middlewares, socks.proxy_errors)
    else:
        guarded = GuardedResolver(resolver, policy, proxy=cfg.proxy)
        connector = aiohttp.TCPConnector(resolver=guarded, **options)
    return SessionParts(connector, middlewares, (trace,), queue)


def close_idle(connector: aiohttp.BaseConnector, host: str) -> int:
    """Close the idle pooled connections to ``host``; return how many were closed.

    In: the session's connector (a ``TCPConnector`` or aiohttp-socks' subclass) and a
    ``host_key`` (``name``, or ``name:port`` for a port other than the scheme's
    default: then that port only, else 80 and 443). Every pooled connection to it,
    whatever its TLS setting or proxy, is closed and leaves the pool. Connections in
    use are not pooled, so a request in flight (another holder of the same name) is
    never cut; one that was pooled is only dialed again when next needed.

    Reads aiohttp's private pool (no public call exists): if it is not a mapping of
    keys with ``host``/``port`` to ``(protocol, time)`` pairs, nothing is closed and
    a warning is logged once.
    """
    pool = getattr(connector, "_conns", None)
    if not isinstance(pool, dict):
        _pool_unknown(connector)
        return 0
    url = yarl.URL(f"//{host}")
    name, port = url.raw_host, url.explicit_port
    ports = (80, 443) if port is None else (port,)
    try:
        keys = [key for key in pool if key.host == name and key.port in ports]
        closed = 0
        for key in keys:
            for protocol, _ in pool.pop(key):
                protocol.close()  # the socket goes now; the server sees the close
                closed += 1
    except (AttributeError, TypeError, ValueError):
        _pool_unknown(connector)
        return 0
    return closed


def _pool_unknown(connector: aiohttp.BaseConnector) -> None:
    global _POOL_WARNED  # one warning per process, not one per host
    if not _POOL_WARNED:
        _POOL_WARNED = True
        logger.warning(
            "aiohttp %s: %s's connection pool is not what harvester knows; finished hosts'"
            " connections stay open until fetch.keepalive_timeout",
            aiohttp.__version__,
            type(connector).__name__,
        )


_POOL_WARNED = False


class GuardedResolver(AbstractResolver):
    """A resolver that answers only with the addresses the ``AddressPolicy`` allows.

    In: a host name, from aiohttp's connector at every new connection (its DNS cache
    is off), never an IP literal (``HopGuard`` judges those). Out: the allowed answers
    of ``inner``; ``ForbiddenAddress`` naming the address and why when it answered and
    none may be dialed; ``inner``'s ``OSError`` as it is. aiohttp dials exactly the
    answers it gets back. The configured HTTP proxy's own name is not judged: it is
    operator configuration. ``inner`` stays its owner's to close.

    Example::

        guarded = GuardedResolver(make_resolver(cfg), AddressPolicy(), proxy=None)
        await guarded.resolve("example.com", 443)  # only the public answers
    """

    def __init__(
        self, inner: AbstractResolver, policy: AddressPolicy, *, proxy: str | None
    ) -> None:
        self._inner = inner  # the caching resolver; the fetcher closes it
        self._policy = policy
        proxy_url = yarl.URL(proxy) if proxy else None
        # The proxy's (name, port): its answers pass unjudged (None: no HTTP proxy).
        self._proxy_key = (proxy_url.raw_host, proxy_url.port) if proxy_url else None

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The allowed addresses of ``host``; see the class docstring."""
        answers = await self._inner.resolve(host, port, family)
        if (host, port) == self._proxy_key:
            return answers
        # Filter, not all-or-nothing (AddressPolicy.allowed). The inner cache keeps the
        # full answer; the filter runs again at every connect (rebinding).
        return self._policy.allowed(answers, host)

    async def close(self) -> None:
        """Nothing to close: the inner resolver is its owner's (the fetcher closes it)."""


class HopGuard:
    """aiohttp client middleware: the SSRF guard for IP-literal hosts.

    In: every request aiohttp sends, the first and each redirect hop (aiohttp runs the
    session's middlewares per hop). Out: the request handed on, or ``ForbiddenAddress``
    before any connection when its host is an IP literal the policy refuses
    (``AddressPolicy.check_literal``). Names pass: ``GuardedResolver`` judges their
    addresses (or, through a proxy, the proxy resolves them and cannot be judged here).
    """

    __slots__ = ("_allowed", "_policy")

    def __init__(self, policy: AddressPolicy) -> None:
        self._policy = policy
        # Literal hosts found allowed: the verdict on a literal never changes (one fixed
        # policy, one address), and parsing it again on every request of its host would
        # cost more than the rest of this middleware. Bounded: cleared when full.
        self._allowed: set[str] = set()

    async def __call__(
        self, req: aiohttp.ClientRequest, handler: ClientHandlerType
    ) -> aiohttp.ClientResponse:
        """Refuse ``req`` if its host is a refused IP literal; else ``handler``'s response."""
        host = req.url.raw_host
        if host is not None and host not in self._allowed and is_literal(host):
            self._policy.check_literal(host)  # raises ForbiddenAddress for a refused one
            if len(self._allowed) >= _ALLOWED_LITERALS:
                self._allowed.clear()
            self._allowed.add(host)
        return await handler(req)


class ConnectionQueue:
    """How many requests of one session wait for a free connection right now.

    A request waits when ``fetch.max_connections`` connections are in use: it waits on
    the limit, not on the network or the CPU, so admitting more hosts would only queue
    more (``Fetcher.queued``, read by the run's admission). Counted from aiohttp's public
    trace signals: a request joins at ``on_connection_queued_start`` and leaves at
    ``on_connection_queued_end``, or, when it is cancelled or fails while it waits (aiohttp
    then sends no queued end), at ``on_request_exception``. A request waits at most once
    at a time; a flag on its trace context makes leaving idempotent.
    """

    def __init__(self) -> None:
        self.waiting = 0  # requests between their queued start and their leaving

    def install(self, trace: aiohttp.TraceConfig) -> None:
        """Count through ``trace``'s signals (before the session freezes it)."""
        trace.on_connection_queued_start.append(self._joined)
        trace.on_connection_queued_end.append(self._left)
        trace.on_request_exception.append(self._left)

    async def _joined(
        self, session: aiohttp.ClientSession, context: SimpleNamespace, params: object
    ) -> None:
        context.queued = True
        self.waiting += 1

    async def _left(
        self, session: aiohttp.ClientSession, context: SimpleNamespace, params: object
    ) -> None:
        if getattr(context, "queued", False):
            context.queued = False
            self.waiting -= 1
