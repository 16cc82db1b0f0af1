"""Request options of the config, checked at load time: headers, cookies, proxy, allowlist.

In: ``fetch.headers``, ``[politeness.hosts."NAME"]`` ``headers`` and ``cookies``,
``fetch.proxy`` and ``fetch.allow`` as the config holds them. Out: the ``check_*``
functions the config sections call in ``__post_init__`` (a bad value is a
``ConfigError`` naming the key), and ``parse_allow``, the allowlist split into networks
and host names (the SSRF guard, ``harvester.crawl.guard``, parses it with this too).

Pure and stdlib-only: the config is the ground floor every layer imports, so it checks
these values here rather than reaching up into ``harvester.crawl`` (which uses them).
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from harvester.errors import ConfigError
from harvester.version import install_hint

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "PROXY_SCHEMES",
    "SOCKS_SCHEMES",
    "IPNetwork",
    "check_proxy",
    "check_request_options",
    "parse_allow",
]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

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


# A host name in the allowlist: dot-separated labels of letters, digits, '-', '_'.
_HOST_NAME = re.compile(r"(?=.{1,253}\.?$)([a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.?)+").fullmatch


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
                f"a SOCKS proxy needs aiohttp-socks: {install_hint('socks')}", key=key
            )


def parse_allow(entries: Iterable[str]) -> tuple[tuple[IPNetwork, ...], frozenset[str]]:
    """Split allowlist entries into networks and lower-case host names.

    An entry is an IP address, a CIDR network (host bits must be zero) or a
    host name. Raises ``ValueError`` naming the bad entry; config validation
    turns that into a ``ConfigError`` naming the key.

    >>> parse_allow(["127.0.0.2/32", "Intranet.Example"])
    ((IPv4Network('127.0.0.2/32'),), frozenset({'intranet.example'}))
    """
    networks: list[IPNetwork] = []
    hosts: set[str] = set()
    for entry in entries:
        text = entry.strip()
        if "/" in text or ":" in text or text.replace(".", "").isdigit():
            try:
                networks.append(ipaddress.ip_network(text, strict=True))
            except ValueError as exc:
                raise ValueError(f"{entry!r} is not an IP network: {exc}") from None
            continue
        name = text.lower().rstrip(".")
        if not name or not _HOST_NAME(name):
            raise ValueError(f"{entry!r} is neither an IP network (CIDR) nor a host name")
        hosts.add(name)
    return tuple(networks), frozenset(hosts)
