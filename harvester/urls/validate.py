"""Normalize stage, the gate before it: can a loc's authority name a server at all?

In: an absolute http(s) URL as published (``entries.EntrySink.accept`` checked the
scheme). Out: True when its host is a DNS name or an IP literal and its port, if
any, is 1-65535; False for what no client could connect to, which the reader drops
and counts (``ReadStats.dropped_invalid_loc``) instead of emitting a record whose
``url`` is the broken string and whose ``host`` is empty or holds a space.

The rules (WHATWG's URL parser, narrowed to what DNS and IP can name):

- tabs and newlines anywhere are removed first, as the URL parser does (the loc
  stays as published; its canonical ``url`` has them removed too);
- userinfo (up to the last ``@``) is skipped;
- a host in brackets is an IPv6 address (no zone);
- any other host: labels of ``A-Z a-z 0-9 - _`` (underscores are common in the
  wild and browsers accept them), 1-63 characters each, at most 253 in all, one
  trailing dot allowed; a non-ASCII host is checked in its IDNA (``xn--``) form and
  must have one; a label that claims to be an IDNA A-label (``xn--...``) must decode
  (``xn--zz`` does not: browsers refuse such a URL, and yarl, under aiohttp, raises
  on it); a host whose last label is all digits must be a dotted-quad IPv4
  address (no top-level domain is numeric);
- a port, when there is one, is ASCII digits and 1-65535 (an empty one means the
  default, as in the URL parser).

The compiled entry builder (``harvester/reader/_cparse.pyx``) accepts only the
plain case (ASCII labels, no userinfo, a numeric port in range) itself and hands
everything else to ``EntrySink.accept``, so both paths decide by this module.
"""

from __future__ import annotations

import functools
import ipaddress
import re

import idna

__all__ = ["alabel_error", "ascii_host", "valid_authority"]

_NO_CONTROLS = str.maketrans("", "", "\t\r\n")
_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://([^/?#]*)").match
_LABELS = r"(?:[A-Za-z0-9_-]{1,63}\.)*[A-Za-z0-9_-]{1,63}\.?"
_HOST = re.compile(_LABELS).fullmatch
_HOST_PORT = re.compile(f"({_LABELS})(?::(.*))?", re.DOTALL).fullmatch
_MAX_HOST = 253  # characters of a DNS name, without its trailing dot
# Unicode's default-ignorable code points: IDNA maps them to nothing, so "e<ZWSP>vil.com"
# would name evil.com, a host the sitemap did not spell. yarl (1.25 on) refuses them, as
# idna, httpx and urllib3 do; the gate refuses them too, so nothing it passes makes the
# client raise.
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f-\u1160\u17b4-\u17b5\u1806\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
).search


def valid_authority(loc: str) -> bool:
    """Whether ``loc``'s host can be a DNS name or an IP literal and its port 1-65535.

    >>> valid_authority("https://exa mple.com/x"), valid_authority("http://[::1]:8080/")
    (False, True)
    """
    if "\t" in loc or "\n" in loc or "\r" in loc:
        loc = loc.translate(_NO_CONTROLS)
    m = _AUTHORITY(loc)
    if m is None:
        return False
    authority = m.group(1)
    if "@" in authority:
        authority = authority.rpartition("@")[2]
    plain = _HOST_PORT(authority)
    if plain is not None:
        host, port = plain.groups()
        return _dns_name(host) and _port(port)
    if authority.startswith("["):
        literal, bracket, rest = authority[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return False
        return _ipv6(literal) and _port(rest[1:] if rest else None)
    if authority.isascii():
        return False  # a space, '%', a backslash, a stray bracket or colon...
    host, colon, port = authority.rpartition(":")
    if not colon:
        host, port = authority, ""
    name = ascii_host(host)
    return name is not None and _dns_name(name) and _port(port or None)


def _dns_name(host: str) -> bool:
    """``host`` (labels already matched by ``_LABELS``, or an IDNA result) can be named."""
    name = host[:-1] if host.endswith(".") else host
    if not name or len(name) > _MAX_HOST or _HOST(name) is None:
        return False
    if "--" in name and alabel_error(name) is not None:  # (every A-label has "--")
        return False
    last = name.rpartition(".")[2]
    if last.isdigit():
        try:
            ipaddress.IPv4Address(name)
        except ValueError:
            return False
    return True


def _ipv6(literal: str) -> bool:
    if "%" in literal:
        return False  # a zone is no part of a URL's host
    try:
        ipaddress.IPv6Address(literal)
    except ValueError:
        return False
    return True


def _port(port: str | None) -> bool:
    if not port:
        return True  # none, or empty (the default port)
    # (Length first: int() of thousands of digits is slow, and refused past 4,300.)
    return len(port) <= 10 and port.isascii() and port.isdigit() and 1 <= int(port) <= 65_535


def alabel_error(host: str) -> str | None:
    """Why the ``xn--`` labels of the ASCII host name ``host`` are no IDNA A-labels, or None.

    A label is accepted when it decodes as IDNA 2008 (UTS 46) or, failing that, as
    IDNA 2003: exactly the test yarl applies when aiohttp asks a URL for its host, so
    every name this accepts can be requested, and every name it refuses would raise
    there. Labels not starting with ``xn--`` (any case) are not looked at.

    >>> alabel_error("xn--bcher-kva.de") is None, alabel_error("xn--zz.test")
    (True, "invalid IDNA label 'xn--zz'")
    """
    for label in host.split("."):
        if label[:4].lower() == "xn--" and not _alabel_decodes(label.lower()):
            return f"invalid IDNA label {label!r}"
    return None


@functools.lru_cache(maxsize=4096)
def _alabel_decodes(label: str) -> bool:
    # (Cached: a sitemap's locs share a handful of hosts.)
    try:
        idna.decode(label)
    except (idna.IDNAError, UnicodeError):
        try:
            label.encode("ascii").decode("idna")
        except UnicodeError:
            return False
    return True


def ascii_host(host: str) -> str | None:
    """The ASCII form of a non-ASCII host (UTS 46, as browsers; IDNA 2003 as a fallback).

    None when no client can name it: IDNA refuses it, or it holds a default-ignorable
    code point (which IDNA would silently delete).
    """
    if _IGNORABLE(host):
        return None
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except idna.IDNAError:
        pass
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return None
