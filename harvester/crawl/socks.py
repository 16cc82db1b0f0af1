"""SOCKS5 proxies (``fetch.proxy = "socks5://..."`` or ``"socks5h://..."``) behind the SSRF guard.

In: ``FetchConfig`` with a SOCKS proxy URL (and, for ``socks5://``, the fetcher's
resolver and its ``AddressPolicy``). Out: the session's connector, aiohttp-socks'
``ProxyConnector`` (optional extra ``harvester-sitemaps[socks]``) as it is, plus two hooks
``connector.make_session_parts`` adds to the session: ``LocalNameCheck`` (a trace
signal) and ``proxy_errors`` (a client middleware).

What the guard can see, per scheme (``harvester.crawl.guard`` documents the same):

* ``socks5h://``: the proxy resolves target names (the ``h``), so as with an HTTP
  proxy only an IP-literal target can be judged here, and it is
  (``connector.HopGuard``): ``http://10.0.0.1/`` is refused before the proxy is asked.
* ``socks5://``: names are resolved on this side. At every new connection
  ``LocalNameCheck`` resolves the name with the fetcher's resolver and refuses it when
  none of its addresses may be dialed (an IP literal: ``HopGuard`` again);
  python-socks then resolves it again to connect, since the TLS handshake through
  the tunnel needs the name. A name that changes its answer between the two lookups
  is not caught: use ``socks5h://`` or an HTTP proxy where that matters.

The proxy itself is operator configuration and is trusted (never checked).

Why a trace signal for the name check: aiohttp-socks' connector sets its own resolver
(one answering each name as itself), so ``resolver=`` is not ours to give, and
overriding the connector's resolving step is aiohttp-private API (issue 46).
``on_dns_resolvehost_start`` is sent by aiohttp, with the name, right before it asks
the resolver, at every new connection (its DNS cache is off), in the request's task:
what the check raises is the request's error.

Example::

    connector = make_socks_connector(cfg.fetch, ssl=context)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import aiohttp
from aiohttp_socks import (
    ProxyConnectionError,
    ProxyConnector,
    ProxyError,
    ProxyTimeoutError,
    ProxyType,
)

if TYPE_CHECKING:
    from types import SimpleNamespace

    from aiohttp.abc import AbstractResolver
    from aiohttp.client_middlewares import ClientHandlerType

    from harvester.config import FetchConfig
    from harvester.crawl.guard import AddressPolicy

__all__ = ["LocalNameCheck", "make_socks_connector", "proxy_errors", "proxy_resolves_names"]


def proxy_resolves_names(cfg: FetchConfig) -> bool:
    """Whether the SOCKS proxy of ``cfg.proxy`` resolves target names (``socks5h://``)."""
    return urlsplit(cfg.proxy or "").scheme.lower() == "socks5h"


def make_socks_connector(cfg: FetchConfig, **kwargs: Any) -> ProxyConnector:
    """The session's connector through the SOCKS proxy of ``cfg.proxy``.

    ``kwargs`` go to aiohttp's ``TCPConnector`` (limit, keep-alive, ssl, ...).
    Credentials in the URL (``socks5://user:pass@host:1080``) are sent to the proxy.
    """
    assert cfg.proxy is not None  # (the caller checked that it is a SOCKS URL)
    parts = urlsplit(cfg.proxy)
    # Both checked at load time (headers.check_proxy).
    assert parts.hostname is not None
    assert parts.port is not None
    return ProxyConnector(
        rdns=proxy_resolves_names(cfg),
        proxy_type=ProxyType.SOCKS5,
        host=parts.hostname,
        port=parts.port,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        **kwargs,
    )


class LocalNameCheck:
    """The SSRF guard for target names a ``socks5://`` proxy connects to (resolved here).

    In: each name aiohttp is about to resolve for a new connection (the trace signal
    ``on_dns_resolvehost_start``). Out: nothing when one of the name's addresses (by the
    fetcher's ``resolver``) may be dialed, else ``ForbiddenAddress`` naming why, raised
    into that connection attempt before the proxy is asked.
    """

    __slots__ = ("_dns", "_policy")

    def __init__(self, policy: AddressPolicy, resolver: AbstractResolver) -> None:
        self._policy = policy
        self._dns = resolver  # the fetcher's, so its cache and its counters serve this too

    def install(self, trace: aiohttp.TraceConfig) -> None:
        """Check through ``trace``'s signal (before the session freezes it)."""
        trace.on_dns_resolvehost_start.append(self._resolving)

    async def _resolving(
        self,
        session: aiohttp.ClientSession,
        context: SimpleNamespace,
        params: aiohttp.TraceDnsResolveHostStartParams,
    ) -> None:
        host = params.host
        # The port does not change a name's addresses (the resolver caches by name).
        self._policy.allowed(await self._dns.resolve(host, 0), host)


async def proxy_errors(
    req: aiohttp.ClientRequest, handler: ClientHandlerType
) -> aiohttp.ClientResponse:
    """aiohttp client middleware: aiohttp-socks' errors as aiohttp's.

    aiohttp-socks raises its own plain Exceptions, which aiohttp passes on as they
    are: as aiohttp's, they reach ``body.map_error`` and the report as connect and
    timeout failures naming the proxy's answer, and never crash the run.
    """
    try:
        return await handler(req)
    except ProxyTimeoutError as exc:
        raise aiohttp.ConnectionTimeoutError(f"SOCKS proxy: {exc}") from exc
    except (ProxyConnectionError, ProxyError) as exc:
        raise aiohttp.ClientConnectionError(f"SOCKS proxy: {exc}") from exc
