"""SOCKS5 proxies (``fetch.proxy = "socks5://..."`` or ``"socks5h://..."``) behind the SSRF guard.

In: ``FetchConfig`` with a SOCKS proxy URL, the fetcher's resolver and its
``AddressPolicy``. Out: the session's connector, an aiohttp-socks ``ProxyConnector``
(optional extra ``harvester[socks]``) that asks the guard before every connection.

What the guard can see, per scheme (``harvester.crawl.guard`` documents the same):

* ``socks5h://``: the proxy resolves target names (the ``h``), so as with an HTTP
  proxy only an IP-literal target can be judged here, and it is: ``http://10.0.0.1/``
  is refused before the proxy is asked to connect.
* ``socks5://``: names are resolved on this side. Each name is resolved by the
  fetcher's resolver and refused when none of its addresses may be dialed (an
  IP literal likewise); python-socks then resolves it again to connect, since the
  TLS handshake through the tunnel needs the name. A name that changes its answer
  between the two lookups is not caught: use ``socks5h://`` or an HTTP proxy where
  that matters.

The proxy itself is operator configuration and is trusted (never checked).

Example::

    connector = make_socks_connector(cfg.fetch, resolver, policy, ssl=context)
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
    from collections.abc import Sequence

    from aiohttp.abc import AbstractResolver, ResolveResult
    from aiohttp.tracing import Trace

    from harvester.config import FetchConfig
    from harvester.crawl.guard import AddressPolicy

__all__ = ["GuardedSocksConnector", "make_socks_connector"]


class GuardedSocksConnector(ProxyConnector):
    """aiohttp-socks' ``ProxyConnector`` with the SSRF guard in front of every connection.

    ``_resolve_host`` is the step before each connection (aiohttp-private API, as in
    ``connector.GuardedConnector``; tests/integration/test_requests_socks.py fails
    if an upgrade stops routing connections through it).
    """

    def __init__(
        self,
        policy: AddressPolicy,
        resolver: AbstractResolver,
        *,
        rdns: bool,
        **kwargs: Any,
    ) -> None:
        super().__init__(rdns=rdns, **kwargs)  # its resolver answers each name as itself
        self._policy = policy
        self._dns = resolver  # the fetcher's: names are checked with it (socks5:// only)
        self._remote_dns = rdns  # socks5h: the proxy resolves names

    async def _resolve_host(
        self, host: str, port: int, traces: Sequence[Trace] | None = None
    ) -> list[ResolveResult]:
        policy = self._policy
        if policy.enabled:
            policy.check_literal(host)  # an IP literal is judged whoever resolves names
            if not self._remote_dns and not _is_literal(host):
                policy.allowed(await self._dns.resolve(host, port), host)
        # The name as it is (aiohttp-socks' NoResolver): python-socks or the proxy
        # resolves it, and TLS through the tunnel is checked against it.
        return await super()._resolve_host(host, port, traces=traces)

    async def _wrap_create_connection(self, *args: Any, **kwargs: Any) -> Any:
        # aiohttp-socks raises its own plain Exceptions, which aiohttp passes on as
        # they are: as aiohttp's, they reach body.map_error and the report as connect
        # and timeout failures naming the proxy's answer, and never crash the run.
        try:
            return await super()._wrap_create_connection(*args, **kwargs)
        except ProxyTimeoutError as exc:
            raise aiohttp.ConnectionTimeoutError(f"SOCKS proxy: {exc}") from exc
        except (ProxyConnectionError, ProxyError) as exc:
            raise aiohttp.ClientConnectionError(f"SOCKS proxy: {exc}") from exc


def _is_literal(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host.removeprefix("[").removesuffix("]").partition("%")[0])
    except ValueError:
        return False
    return True


def make_socks_connector(
    cfg: FetchConfig, resolver: AbstractResolver, policy: AddressPolicy, **kwargs: Any
) -> GuardedSocksConnector:
    """The session's connector through the SOCKS proxy of ``cfg.proxy``.

    ``kwargs`` go to aiohttp's ``TCPConnector`` (limit, keep-alive, ssl, ...).
    Credentials in the URL (``socks5://user:pass@host:1080``) are sent to the proxy.
    """
    assert cfg.proxy is not None  # (the caller checked that it is a SOCKS URL)
    parts = urlsplit(cfg.proxy)
    # Both checked at load time (headers.check_proxy).
    assert parts.hostname is not None
    assert parts.port is not None
    return GuardedSocksConnector(
        policy,
        resolver,
        rdns=parts.scheme.lower() == "socks5h",
        proxy_type=ProxyType.SOCKS5,
        host=parts.hostname,
        port=parts.port,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        **kwargs,
    )
