"""Normalize stage: the canonical form of a URL, used as the dedup key.

In: a ``loc`` exactly as published. Out: a canonical string (the record's
``url`` field). This is the basic form: scheme and host lower-cased, default
port dropped, an empty path written ``/``, the fragment dropped unless it is a
hash-bang route (``#!``). Query strings are kept byte for byte: parameter
order and tracking parameters are the full normalization issue's business.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["canonical", "host_of"]

_DEFAULT_PORTS = {"http": 80, "https": 443}

# Most published URLs are already canonical: lower-case scheme and host, no
# userinfo, no default port, a path, no fragment, nothing urlsplit would strip.
# Recognising them with one regex skips urlsplit/urlunsplit (~6 µs a URL on the
# hot path); anything else takes the general route below.
_ALREADY_CANONICAL = re.compile(
    r"(?:http://[a-z0-9-]+(?:\.[a-z0-9-]+)*(?::(?!80/)[1-9][0-9]{0,4})?"
    r"|https://[a-z0-9-]+(?:\.[a-z0-9-]+)*(?::(?!443/)[1-9][0-9]{0,4})?)"
    r"/[^#\t\r\n\x00-\x20]*",
).fullmatch


def canonical(loc: str) -> str:
    """Return the canonical form of an absolute http(s) URL (idempotent).

    >>> canonical("HTTPS://Example.COM:443/a?b=1#top")
    'https://example.com/a?b=1'
    """
    if _ALREADY_CANONICAL(loc) is not None:
        return loc
    try:
        parts = urlsplit(loc)
        port = parts.port
    except ValueError:
        return loc  # unparseable (bad port, bad IPv6 literal): keep as published
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if ":" in host:
        host = f"[{host}]"  # IPv6 literal
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    if parts.username is not None:
        userinfo = parts.username + (f":{parts.password}" if parts.password is not None else "")
        netloc = f"{userinfo}@{netloc}"
    fragment = parts.fragment if parts.fragment.startswith("!") else ""
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, fragment))


def host_of(url: str) -> str:
    """The lower-case host of a URL ('' when it has none); the per-host key of the pipeline."""
    try:
        return (urlsplit(url).hostname or "").rstrip(".")
    except ValueError:
        return ""
