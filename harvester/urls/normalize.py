"""Normalize stage: the canonical form of a URL, used as the dedup key.

In: a ``loc`` exactly as published (kept as the record's ``loc``). Out: its
canonical string (the record's ``url``, the form that is fingerprinted and
deduplicated). Rules, each configurable in ``[normalize]`` with per-host
overrides in ``[normalize.hosts."example.com"]``:

- scheme and host lower-cased; an IDNA host written in its ASCII (``xn--``)
  form; a trailing dot on the host dropped; default ports (80, 443) dropped;
- the path: percent-encoding normalized (hex upper-cased, unreserved
  characters ``A-Z a-z 0-9 - . _ ~`` decoded, characters that must be encoded,
  such as spaces and non-ASCII, encoded as UTF-8), dot segments resolved
  (RFC 3986 5.2.4), an empty path written ``/``, ``;jsessionid=…``-style
  session path parameters removed; trailing-slash removal is available
  (``strip_trailing_slash``) but off by default, because ``/a/`` and ``/a``
  can be different pages;
- the query: percent-encoding normalized as in the path (``+`` is kept: it
  means a space to some servers and a plus to others), tracking parameters
  (``utm_*``, ``fbclid``, ``gclid``, ``msclkid`` by default) and session
  parameters (``jsessionid``, ``phpsessid``, ``sessionid``) removed, matched
  case-insensitively, ``*`` as a trailing wildcard; the rest sorted by key,
  stably, so repeated keys keep their published order (``a=2&a=1`` may mean
  something); empty pairs and an empty query dropped. Content-bearing
  parameters (``page``, ``id``, ``category``, …) are in no default list, so
  ``?page=2`` never collapses into its neighbour;
- the fragment dropped, except a hash-bang route (``#!/product/5``), which is
  a different page on a single-page site.

Non-http(s) and unparseable URLs (a bad port, a broken IPv6 literal) are
returned unchanged. ``canonical`` is idempotent.

Why our own code rather than a library (``python -m benchmarks.bench_urls
--compare`` runs our 12 rule cases and times each on typical sitemap URLs;
benchmarks/README.md has the figures):

- ``w3lib.url.canonicalize_url`` (Scrapy's): 7/12, and several times slower.
  Keeps ``:443``, sorts repeated keys by value (``a=1&a=0`` becomes
  ``a=0&a=1``), removes no tracking or session parameter, and drops ``#!``
  routes (or keeps every fragment).
- ``url-normalize``: 7/12, slower still. Neither sorts nor filters the query,
  keeps every fragment, rewrites ``#!`` to ``?_escaped_fragment_=``.
- ``yarl.URL`` (already a dependency): 8/12, and slower than ours just to parse
  and print. Neither sorts nor filters the query, keeps every fragment.
- ours: 12/12, fastest on that mix (an already-canonical URL takes the short
  route).

None implements the rule set, so each would still need our query and fragment
pass on top, at several µs more a URL for the ~3 million URLs of a benchmark
run. Ours is stdlib (+ ``idna``, already a dependency): a per-rule-set regex
recognises URLs that are already canonical (most sitemap URLs are) and returns
them untouched; the rest take the general route (a regex split, then each
rule). The property tests check that both routes agree.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit

from harvester import compiled
from harvester.config import NormalizeConfig, NormalizeRules
from harvester.urls.validate import ascii_host

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Normalizer", "Rules", "canonical", "host_of"]

_cnormalize = compiled.load("_cnormalize")
# The compiled canonical form of the usual URLs: no query, or a plain one (sorted in C
# when its keys are out of order). None for the rest, which take the fast regex and the
# general route below; None for everything when the module is not built.
_canonical_query: (
    Callable[[str, bool, frozenset[str], tuple[str, ...], bool], str | None] | None
) = _cnormalize.canonical_query if _cnormalize is not None else None

_DEFAULT_PORTS = {"http": 80, "https": 443}

_QUERY_CHARS = "A-Za-z0-9\\-._~!$'()*+,;:@/?"  # plus '=' in values; '&' separates pairs
# The fast path: a URL this matches is canonical once Rules.canonical has checked what
# the regex does not (default port, dot segments, query order, trailing slash). Lower-case
# http(s) scheme and ASCII host, an optional port, a path (no ';') and a query made only of
# characters that never need encoding: no '%', '#', whitespace or non-ASCII. DROP is a
# negative lookahead per rule set that rejects a tracking or session key ('' for none).
_FAST_TEMPLATE = (
    r"(https?)://[a-z0-9-]+(?:\.[a-z0-9-]+)*(:[1-9][0-9]{{0,4}})?"
    r"(/[A-Za-z0-9\-._~!$&'()*+,=:@/]*)"
    # a query of non-empty pairs with non-empty keys: no '&&', no leading or trailing '&'
    r"(?:\?({DROP}[{Q}]+(?:=[{Q}=]*)?(?:&{DROP}[{Q}]+(?:=[{Q}=]*)?)*))?"
)
_FAST = re.compile(_FAST_TEMPLATE.format(DROP="", Q=_QUERY_CHARS)).fullmatch  # rule-free form
# The general route's split (urlsplit and its netloc properties cost more than this).
_SPLIT = re.compile(
    r"([A-Za-z][A-Za-z0-9+.\-]*)://([^/?#]*)([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.DOTALL
).fullmatch
_NETLOC = re.compile(
    r"(?:(.*)@)?(\[[0-9A-Za-z:.%]+\]|[^:@\[\]]*)(?::([0-9]*))?", re.DOTALL
).fullmatch  # userinfo (up to the last '@'), host or [IPv6], port
_NO_CONTROLS = str.maketrans("", "", "\t\r\n")
_NEEDS_QUOTE = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%#]").search

_PCT = re.compile(r"%([0-9A-Fa-f]{2})")
_STRAY_PCT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Characters left as they are in each component (everything else gets encoded).
_SAFE_PATH = "/:@!$&'()*+,;=-._~%"
_SAFE_QUERY = "/?:@!$'()*+,;=-._~%"  # '&' is the pair separator: a literal one stays encoded
_SAFE_KEY = _SAFE_QUERY.replace("=", "")  # a key ends at the first '='
_SAFE_FRAGMENT = "/?:@!$&'()*+,;=-._~%#"


def _pct_fix(m: re.Match[str]) -> str:
    byte = int(m.group(1), 16)
    return chr(byte) if byte in _UNRESERVED else "%" + m.group(1).upper()


def _encode(text: str, safe: str) -> str:
    """Normalize percent-encoding: encode what must be, decode unreserved, upper-case hex.

    ``safe`` must include every character of ``_NEEDS_QUOTE``'s complement that the
    component may hold unencoded, except '&', '=', '?' and '#', which the callers
    either allow or have already split on.
    """
    if "%" in text:
        text = _STRAY_PCT.sub("%25", text)
        text = _PCT.sub(_pct_fix, text)
    if _NEEDS_QUOTE(text) is None and all(c in safe for c in "&=?#" if c in text):
        return text
    return quote(text, safe=safe)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 for an absolute path."""
    out: list[str] = []
    segments = path.split("/")
    for seg in segments[1:]:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    # A path ending in '.' or '..' names a directory: keep its trailing slash.
    if segments[-1] in (".", ".."):
        out.append("")
    return "/" + "/".join(out)


class Rules:
    """One compiled rule set; ``canonical`` applies it (see the module docstring).

    Usage::

        Rules(NormalizeRules(strip_trailing_slash=True)).canonical("https://a.com/x/")
    """

    __slots__ = (
        "_drop",
        "_drop_prefixes",
        "_fast",
        "_hashbang",
        "_session",
        "_sort",
        "_strip_slash",
    )

    def __init__(self, rules: NormalizeRules) -> None:
        patterns = [p.lower() for p in (*rules.tracking_params, *rules.session_params)]
        self._drop = frozenset(p for p in patterns if not p.endswith("*"))  # exact names
        self._drop_prefixes = tuple(p[:-1] for p in patterns if p.endswith("*"))  # 'utm_*'
        alternatives = [re.escape(p) for p in sorted(self._drop)]
        alternatives += [re.escape(p) + "[^=&]*" for p in self._drop_prefixes]
        drop = f"(?!(?i:{'|'.join(alternatives)})(?:[=&]|$))" if alternatives else ""
        self._fast = re.compile(_FAST_TEMPLATE.format(DROP=drop, Q=_QUERY_CHARS)).fullmatch
        self._session = tuple(p.lower() for p in rules.session_params)  # also path ';name='
        self._sort = rules.sort_query
        self._hashbang = rules.keep_hashbang
        self._strip_slash = rules.strip_trailing_slash

    @property
    def strip_slash(self) -> bool:
        """Whether this rule set removes a trailing slash (``strip_trailing_slash``)."""
        return self._strip_slash

    # The query rules, for the compiled URL loop (harvester/crawl/_chost.pyx): it calls the
    # compiled canonical form (``_canonical_query``) with them, as ``canonical`` does.
    @property
    def drop(self) -> frozenset[str]:
        """Query parameter names dropped (lower case, exact)."""
        return self._drop

    @property
    def drop_prefixes(self) -> tuple[str, ...]:
        """Query parameter name prefixes dropped (lower case; ``utm_*`` as ``utm_``)."""
        return self._drop_prefixes

    @property
    def sort_query(self) -> bool:
        """Whether the query's parameters are sorted (``sort_query``)."""
        return self._sort

    def _dropped(self, key: str) -> bool:
        key = key.lower()
        return key in self._drop or (
            bool(self._drop_prefixes) and key.startswith(self._drop_prefixes)
        )

    def _query_is_sorted(self, query: str) -> bool:
        """Whether a query the fast regex accepted is in canonical order (sound, not complete).

        With '=' mapped to NUL, below every key character, pairs in string order have
        keys in order, so the stable sort would leave them as they are. Repeated keys
        whose values are out of order are rejected here although they are canonical:
        the general route then returns them unchanged, which is only slower.
        """
        if not self._sort or "&" not in query:
            return True
        pairs = query.replace("=", "\0").split("&")
        return pairs == sorted(pairs)

    def canonical(self, loc: str) -> str:
        """Return the canonical form of an absolute http(s) URL (idempotent).

        >>> canonical("HTTPS://Example.COM:443/a/./b/?utm_source=x&id=5&color=red#top")
        'https://example.com/a/b/?color=red&id=5'
        """
        if _canonical_query is not None:
            out = _canonical_query(
                loc, self._strip_slash, self._drop, self._drop_prefixes, self._sort
            )
            if out is not None:
                return out
        m = self._fast(loc)
        if m is not None:
            scheme, port, path, query = m.groups()
            if (
                (port is None or port != (":80" if scheme == "http" else ":443"))
                and "/." not in path
                and not (self._strip_slash and path.endswith("/") and len(path) > 1)
                and (query is None or self._query_is_sorted(query))
            ):
                return loc
        return self._general(loc)

    def _general(self, loc: str) -> str:
        loc = loc.strip()
        if "\t" in loc or "\n" in loc or "\r" in loc:
            loc = loc.translate(_NO_CONTROLS)  # as urlsplit does (WHATWG)
        m = _SPLIT(loc)
        if m is None:
            return loc  # not an absolute hierarchical URL: keep as published
        scheme, netloc, raw_path, raw_query, raw_fragment = m.groups()
        scheme = scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            return loc
        n = _NETLOC(netloc)
        if n is None:
            return loc  # a broken IPv6 literal, stray brackets or colons: keep as published
        userinfo, host, port = n.groups()
        host = host.lower().rstrip(".")
        if not host.isascii():
            host = ascii_host(host) or host  # not valid IDNA at all: its lower-cased form
        if port:
            number = int(port)
            if number > 65_535:
                return loc  # not a port: keep as published
            port = "" if number == _DEFAULT_PORTS[scheme] else str(number)  # '080' is 80
        out = [scheme, "://"]
        if userinfo is not None:
            out += [userinfo, "@"]
        out += [host, ":", port] if port else [host]
        out.append(self._path(raw_path))
        query = self._query(raw_query) if raw_query else ""
        if query:
            out += ["?", query]
        if self._hashbang and raw_fragment is not None and raw_fragment.startswith("!"):
            out += ["#", _encode(raw_fragment, _SAFE_FRAGMENT)]
        return "".join(out)

    def _path(self, raw: str) -> str:
        path = _encode(raw, _SAFE_PATH) if raw else "/"
        if not path.startswith("/"):
            path = "/" + path
        if ";" in path and self._session:
            path = "/".join(self._strip_path_params(seg) for seg in path.split("/"))
        if "/." in path:
            path = _remove_dot_segments(path)
        if self._strip_slash:
            path = path.rstrip("/") or "/"
        return path

    def _strip_path_params(self, segment: str) -> str:
        head, *params = segment.split(";")
        kept = [p for p in params if p.partition("=")[0].lower() not in self._session]
        return ";".join([head, *kept])

    def _query(self, raw: str) -> str:
        pairs: list[tuple[str, str]] = []
        for pair in raw.split("&"):
            if not pair:
                continue
            key, eq, value = pair.partition("=")
            key = _encode(key, _SAFE_KEY)
            if self._dropped(unquote(key) if "%" in key else key):
                continue
            pairs.append((key, f"{key}{eq}{_encode(value, _SAFE_QUERY)}"))
        if self._sort:
            pairs.sort(key=lambda kv: kv[0])  # stable: repeated keys keep their order
        return "&".join(text for _, text in pairs)


class Normalizer:
    """The ``[normalize]`` rules with their per-host overrides, compiled once.

    Usage::

        canon = Normalizer(cfg.normalize).canonical
        canon("https://Example.com:443/p/1?utm_source=x&id=5")  # 'https://example.com/p/1?id=5'
        canon_for_host = Normalizer(cfg.normalize).for_host("example.com")  # skips the lookup
    """

    __slots__ = ("_default", "_hosts")

    def __init__(self, cfg: NormalizeConfig | None = None) -> None:
        cfg = cfg if cfg is not None else NormalizeConfig()
        self._default = Rules(cfg)
        self._hosts = {host.lower(): Rules(cfg.rules_for(host)) for host in cfg.hosts}

    def rules_for(self, host: str) -> Rules:
        """The rule set for URLs of ``host`` (its override, or the default rules)."""
        return self._hosts.get(host.lower(), self._default)

    def for_host(self, host: str) -> Callable[[str], str]:
        """The canonicalizer for URLs of ``host`` (its override, or the default rules)."""
        return self._hosts.get(host.lower(), self._default).canonical

    def canonical(self, loc: str) -> str:
        """Canonical form of ``loc`` under the rules of the URL's own host."""
        if not self._hosts:
            return self._default.canonical(loc)
        return self._hosts.get(host_of(loc), self._default).canonical(loc)


_DEFAULT_RULES = Rules(NormalizeConfig())


def canonical(loc: str) -> str:
    """Canonical form of ``loc`` under the default rules (see the module docstring).

    >>> canonical("HTTPS://Example.COM:443/a?b=1#top")
    'https://example.com/a?b=1'
    """
    return _DEFAULT_RULES.canonical(loc)


def host_of(url: str) -> str:
    """The lower-case host of a URL ('' when it has none); the per-host key of the pipeline."""
    try:
        return (urlsplit(url).hostname or "").rstrip(".")
    except ValueError:
        return ""
