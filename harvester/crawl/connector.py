"""The fetcher's connection layer: the SSRF-guarded connector, its resolver and TLS context.

In: ``FetchConfig`` (and optionally a test resolver). Out: the one
``GuardedConnector`` of a ``Fetcher``'s session, with

* the ``CachingResolver`` of ``harvester.crawl.resolver`` (aiohttp's own DNS cache
  is off: the resolver's cache honours record TTLs and keeps "no such name"),
* one ``ssl.SSLContext`` for every https connection of the process: the
  system's CAs (OpenSSL honours ``SSL_CERT_FILE``/``SSL_CERT_DIR``) plus
  ``fetch.ca_bundle``. Building a context loads the CA store, milliseconds of
  disk and parsing, so it is done once per worker, never per host,
* pooled keep-alive connections per (host, port), ``fetch.keepalive_timeout``,
* through a SOCKS5 ``fetch.proxy``, aiohttp-socks' connector (``harvester.crawl.socks``).

Example::

    connector = make_connector(cfg.fetch, make_resolver(cfg.fetch))
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Any

import aiohttp
import yarl

from harvester.config.requests import SOCKS_SCHEMES
from harvester.crawl.guard import AddressPolicy
from harvester.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from aiohttp.abc import AbstractResolver, ResolveResult
    from aiohttp.client_proto import ResponseHandler
    from aiohttp.client_reqrep import ClientRequest, ConnectionKey
    from aiohttp.tracing import Trace

    from harvester.config import FetchConfig

__all__ = ["GuardedConnector", "is_socks", "make_connector", "tls_context"]


def tls_context(cfg: FetchConfig) -> ssl.SSLContext:
    """The TLS client context: system CAs (``SSL_CERT_FILE`` honoured) plus ``cfg.ca_bundle``.

    Raises ``ConfigError`` naming ``fetch.ca_bundle`` when that file cannot be loaded.
    """
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


def make_connector(cfg: FetchConfig, resolver: AbstractResolver) -> aiohttp.TCPConnector:
    """The session's connector: guarded, on ``resolver``, one TLS context, keep-alive.

    With a SOCKS ``fetch.proxy`` it is ``socks.GuardedSocksConnector`` (aiohttp-socks);
    an HTTP proxy goes with each request (``proxy=``) through a ``GuardedConnector``.
    """
    policy = AddressPolicy(allow_private=cfg.allow_private, allow=cfg.allow)
    options: dict[str, Any] = {
        "limit": cfg.max_connections,
        # The resolver caches (TTL-bounded, negative answers too); a second cache
        # here would keep answers past their TTL.
        "use_dns_cache": False,
        "keepalive_timeout": cfg.keepalive_timeout,
        "ssl": tls_context(cfg),
    }
    if is_socks(cfg.proxy):
        from harvester.crawl.socks import make_socks_connector

        return make_socks_connector(cfg, resolver, policy, **options)
    return GuardedConnector(policy, proxy=cfg.proxy, resolver=resolver, **options)


class GuardedConnector(aiohttp.TCPConnector):
    """A ``TCPConnector`` that dials only the addresses the ``AddressPolicy`` allows.

    ``_resolve_host`` is the single step between a request (first or
    redirected) and ``connect()``, for names and IP literals alike, and its
    answer is what gets dialed; see ``harvester.crawl.guard`` for why the check lives
    here. It is aiohttp-private API: tests/integration/test_ssrf.py fails if an
    aiohttp upgrade stops routing connections through it.
    """

    def __init__(self, policy: AddressPolicy, *, proxy: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._policy = policy
        # The configured proxy is operator configuration: its own address is trusted.
        proxy_url = yarl.URL(proxy) if proxy else None
        self._proxy_key = (proxy_url.raw_host, proxy_url.port) if proxy_url else None
        self.queued = 0  # requests waiting for a free connection (the limit is binding)

    async def _wait_for_available_connection(self, key: ConnectionKey, traces: list[Trace]) -> None:
        # Counted for the admission (Fetcher.queued): a host queued here waits on the
        # connection limit, not on the network or the CPU, so more hosts only queue.
        self.queued += 1
        try:
            await super()._wait_for_available_connection(key, traces)
        finally:
            self.queued -= 1

    async def _resolve_host(
        self, host: str, port: int, traces: Sequence[Trace] | None = None
    ) -> list[ResolveResult]:
        answers = await super()._resolve_host(host, port, traces=traces)
        if (host, port) == self._proxy_key:
            return answers
        # Filter, not all-or-nothing (AddressPolicy.allowed). The DNS cache keeps the
        # full answer; the filter runs again at every connect (rebinding).
        return self._policy.allowed(answers, host)

    async def _create_connection(
        self,
        req: ClientRequest,
        traces: list[Trace],
        timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109 - aiohttp's signature
    ) -> ResponseHandler:
        # Through a proxy the target is resolved by the proxy, never here: an
        # IP-literal target is the only address we can still judge.
        if req.proxy is not None and req.url.raw_host is not None:
            self._policy.check_literal(req.url.raw_host)
        return await super()._create_connection(req, traces, timeout)
