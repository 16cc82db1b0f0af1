"""Normalize stage: the canonical form of a URL, used as the dedup key.

In: a ``loc`` exactly as published. Out: a canonical string (the record's
``url`` field). This is the basic form: scheme and host lower-cased, default
port dropped, an empty path written ``/``, the fragment dropped unless it is a
hash-bang route (``#!``). Query strings are kept byte for byte: parameter
order and tracking parameters are the full normalization issue's business.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["canonical", "host_of"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def canonical(loc: str) -> str:
    """Return the canonical form of an absolute http(s) URL (idempotent).

    >>> canonical("HTTPS://Example.COM:443/a?b=1#top")
    'https://example.com/a?b=1'
    """
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
