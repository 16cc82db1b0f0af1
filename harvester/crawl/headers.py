"""Request options: extra headers, per-host headers and cookies, and the proxy URL.

In: ``fetch.headers`` (every request), ``[politeness.hosts."NAME"]`` ``headers`` and
``cookies`` (that host only), ``fetch.proxy``. Out: config checks (``check_*``, pure and
stdlib-only, so ``harvester.config.crawl`` can call them; a bad value is a ``ConfigError``
naming the key) and ``HostHeaders``, the aiohttp client middleware that adds a host's own
headers and cookies to each request sent to that host.

Why a middleware and not the ``headers=`` of the request: aiohttp sends a request's
headers again on every redirect hop, to whatever host it goes to, so a login cookie
for ``a.example`` would leak to a redirect target on ``b.example``. A middleware runs
once per hop (aiohttp >= 3.12), on the hop's own URL, so a host's headers and cookies
reach that host only. ``fetch.headers`` are meant for every host and go on the session.

Example::

    extra = HostHeaders(cfg.politeness)
    session = aiohttp.ClientSession(middlewares=(extra,) if extra else ())
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from harvester.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aiohttp import ClientRequest, ClientResponse
    from aiohttp.client_middlewares import ClientHandlerType

    from harvester.config import PolitenessConfig

__all__ = [
    "PROXY_SCHEMES",
    "SOCKS_SCHEMES",
    "HostHeaders",
    "check_proxy",
    "check_request_options",
    "parse_header",
]

PROXY_SCHEMES = frozenset({"http", "https", "socks5", "socks5h"})
SOCKS_SCHEMES = frozenset({"socks5", "socks5h"})  # through aiohttp-socks (extra "socks")

# RFC 9110 token (a header or cookie name) and field value (no CR, LF or NUL: a value
# with a line break would smuggle a header of its own into the request).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+").fullmatch
_FIELD_VALUE = re.compile(r"[^\r\n\x00]*").fullmatch
# RFC 6265 cookie-octet: printable ASCII but space, '"', ',', ';' and '\'.
_COOKIE_VALUE = re.compile(r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*").fullmatch
# Set by the HTTP layer itself: overriding them would break the request framing.
_RESERVED = frozenset({"host", "content-length", "transfer-encoding", "connection"})


def parse_header(text: str) -> tuple[str, str]:
    """``"Name: value"`` (the ``--header`` flag) → (name, value); ValueError if malformed.

    >>> parse_header("X-Team: data ")
    ('X-Team', 'data')
    """
    name, sep, value = text.partition(":")
    name = name.strip()
    if not sep or not name:
        raise ValueError(f"{text!r} is not 'Name: value'")
    return name, value.strip()


def check_request_options(
    headers: Mapping[str, str], cookies: Mapping[str, str], *, key: str
) -> None:
    """Reject header and cookie names or values that would not go on the wire as given.

    ``key`` is the config section (``"fetch"``, ``"politeness"``); the error's key is
    ``KEY.headers`` or ``KEY.cookies`` and its message names the entry.
    """
    for name, value in headers.items():
        if not _TOKEN(name) or name.lower() in _RESERVED:
            raise ConfigError(
                f"{name!r} is not a header name that may be set", key=f"{key}.headers"
            )
        if not _FIELD_VALUE(value):
            raise ConfigError(f"{name}: the value has a line break or NUL", key=f"{key}.headers")
    for name, value in cookies.items():
        if not _TOKEN(name):
            raise ConfigError(f"{name!r} is not a cookie name", key=f"{key}.cookies")
        if not _COOKIE_VALUE(value):
            raise ConfigError(
                f"{name}: a cookie value may not hold spaces, quotes, ',', ';' or '\\\\'",
                key=f"{key}.cookies",
            )


def check_proxy(url: str, *, key: str) -> None:
    """A proxy URL: http(s):// or socks5(h):// with a host and a port (socks needs the extra).

    The message never repeats the URL: it may hold credentials.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ConfigError("is not a URL (scheme://host:port)", key=key) from None
    scheme = parts.scheme.lower()
    if scheme not in PROXY_SCHEMES:
        raise ConfigError(
            f"scheme {scheme or '(none)'!r} is not one of {', '.join(sorted(PROXY_SCHEMES))}",
            key=key,
        )
    if not parts.hostname:
        raise ConfigError("has no host", key=key)
    if scheme in SOCKS_SCHEMES:
        if port is None:
            raise ConfigError("a SOCKS proxy needs a port (socks5://host:1080)", key=key)
        import importlib.util

        if importlib.util.find_spec("aiohttp_socks") is None:
            raise ConfigError(
                "a SOCKS proxy needs aiohttp-socks: pip install 'harvester[socks]'", key=key
            )


class HostHeaders:
    """aiohttp client middleware: each request gets its host's own headers and cookies.

    The host is the request's ``host[:port]`` (``scheduler.host_key``'s spelling);
    an override keyed ``"NAME:PORT"`` falls back to ``"NAME"``'s, as the scheduler's
    politeness does. Cookies are added to any the session's jar already set.
    False (``bool``) when no host has any, so the session needs no middleware.
    """

    __slots__ = ("_hosts",)

    def __init__(self, cfg: PolitenessConfig) -> None:
        # host key -> (headers, the Cookie header value); only hosts that have any.
        self._hosts: dict[str, tuple[Mapping[str, str], str]] = {
            host: (policy.headers, "; ".join(f"{k}={v}" for k, v in policy.cookies.items()))
            for host, policy in cfg.hosts.items()
            if policy.headers or policy.cookies
        }

    def __bool__(self) -> bool:
        return bool(self._hosts)

    def extra_for(self, host: str) -> tuple[Mapping[str, str], str] | None:
        """The headers and Cookie value for ``host`` (a ``host_key``), or None."""
        found = self._hosts.get(host)
        if found is None:
            name, sep, port = host.rpartition(":")
            if sep and port.isdigit():
                found = self._hosts.get(name)
        return found

    async def __call__(self, req: ClientRequest, handler: ClientHandlerType) -> ClientResponse:
        """Add the hop's host's headers and cookies, then send it on."""
        host = req.url.host_port_subcomponent
        found = self.extra_for(host) if host else None
        if found is not None:
            headers, cookie = found
            req.headers.update(headers)
            if cookie:
                jar = req.headers.get("Cookie")  # what the session's cookie jar set, if any
                req.headers["Cookie"] = f"{jar}; {cookie}" if jar else cookie
        return await handler(req)
