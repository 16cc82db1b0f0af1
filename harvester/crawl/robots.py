"""robots.txt for the discovery stage: the sitemaps a site lists, and its rules for us.

In: a robots.txt body (bytes, already size-capped by fetch), the URL it was
served from and our user agent. Out: a frozen ``RobotsTxt`` with the sitemap
URLs (absolute, in file order, deduplicated), the Crawl-delay of our group and
``can_fetch(url)``. Pure and sync: no I/O, no clock.

Example::

    robots = parse_robots(body, "https://example.com/robots.txt", "harvester")
    for sitemap_url in robots.sitemaps:
        ...
    if robots.can_fetch("https://example.com/sitemap.xml"): ...

Groups, Allow/Disallow and Crawl-delay are protego's (Scrapy's robots.txt
parser). The Sitemap list is ours, read line by line from the same decoded text,
because protego's ``sitemaps`` cannot give the conformance result
(cases/robots_*.txt):

* it yields values verbatim: ``/sitemap.xml`` stays relative
  (robots_relative_sitemap, robots_scrapy) and ``HTTP://`` keeps its case
  (robots_scrapy);
* it does not deduplicate (robots_dedup);
* it cannot tell an undecodable byte from text. protego raises
  UnicodeEncodeError on the lone surrogates that mark such bytes, so its input
  has them replaced by U+FFFD first, and a value like ``http://example.com/\\xff.xml``
  would then be kept instead of skipped (robots_invalid_utf8_url).

The first two could be fixed afterwards; the third needs the raw lines, and
once we read them the rest is a few lines. Line syntax, comments and
'Site-map' are handled alike by both (protego passes the other cases once the
body is decoded here: BOMs, UTF-16, CR-only line ends).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from protego import Protego

__all__ = ["RobotsTxt", "parse_robots"]

# RFC 9309: CR, LF and CRLF each end a line. str.splitlines() would also split
# on form feeds, NEL, U+2028 and others, which can sit inside a value.
_EOL = re.compile(r"\r\n|\r|\n").split
# Decoding maps undecodable bytes to lone surrogates (surrogateescape for
# UTF-8, surrogatepass for unpaired UTF-16 units); nothing else produces them.
_UNDECODABLE = re.compile("[\ud800-\udfff]")
# "Site-map" is a spelling Google tolerates; the conformance policy accepts it.
_SITEMAP_KEYS = frozenset({"sitemap", "site-map"})
# RFC 9309 §2.2.1: a product token is letters, '_' and '-'.
_PRODUCT_TOKEN = re.compile(r"[A-Za-z_-]+").match


@dataclass(frozen=True, slots=True)
class RobotsTxt:
    """What one robots.txt says: its sitemaps, and its rules for our user agent.

    ``RobotsTxt()`` (no sitemaps, no delay, everything allowed) stands for a
    missing robots.txt. Use ``parse_robots`` to build one from a body.
    """

    sitemaps: tuple[str, ...] = ()
    """Absolute http(s) sitemap URLs in file order, deduplicated."""
    crawl_delay: float | None = None
    """Seconds between requests asked of our group (or ``*``); None if absent or invalid."""
    # The parsed rules; None means "allow everything".
    _rules: Protego | None = field(default=None, repr=False, compare=False)
    # The product token the rules are matched against.
    _agent: str = field(default="*", repr=False, compare=False)
    # The decoded text, for the per-URL verdicts and AI/TDM signals (crawl/verdicts.py,
    # crawl/allow.py: issue 48); "" for a missing robots.txt.
    text: str = field(default="", repr=False, compare=False)

    def can_fetch(self, url: str) -> bool:
        """Return whether the Allow/Disallow rules of our group permit ``url``.

        ``url`` must be on the host (scheme, host, port) this robots.txt covers;
        that is the caller's business. The robots.txt URL itself is always allowed.
        """
        if self._rules is None:
            return True
        return self._rules.can_fetch(url, self._agent)


def parse_robots(body: bytes, robots_url: str, user_agent: str) -> RobotsTxt:
    """Parse a robots.txt body into a ``RobotsTxt``. Never raises on bad input.

    ``robots_url`` is the URL the body was served from (after redirects): relative
    Sitemap values resolve against it. ``user_agent`` may be a whole User-Agent
    header; only its leading product token (``harvester`` in
    ``harvester/0.1 (+https://…)``) is matched against groups, as RFC 9309 says,
    so that words in the rest of the header cannot select another group.

    >>> robots = parse_robots(b"User-agent: *\\nDisallow: /private\\nSitemap: /sm.xml\\n",
    ...                       "https://example.com/robots.txt", "harvester/0.1")
    >>> robots.sitemaps
    ('https://example.com/sm.xml',)
    >>> robots.can_fetch("https://example.com/private/x"), robots.crawl_delay
    (False, None)
    """
    text = _decode(body)
    token = _PRODUCT_TOKEN(user_agent.strip())
    agent = token.group() if token else "*"
    # protego cannot encode lone surrogates. U+FFFD is what protego itself turns
    # an undecodable %XX escape into, so rules with such bytes still match URLs.
    rules = Protego.parse(_UNDECODABLE.sub("\ufffd", text))
    delay = rules.crawl_delay(agent)
    # protego 0.7 already drops these; pyproject allows >= 0.3, and older releases
    # kept whatever float() accepted ("inf", "-1").
    if delay is not None and not (math.isfinite(delay) and delay >= 0):
        delay = None
    return RobotsTxt(
        sitemaps=_sitemaps(text, robots_url),
        crawl_delay=delay,
        _rules=rules,
        _agent=agent,
        text=text,
    )


def _decode(body: bytes) -> str:
    """Decode a robots.txt body: UTF-8, or UTF-16 when it starts with a UTF-16 BOM.

    Undecodable bytes become lone surrogates (see ``_UNDECODABLE``) rather than
    U+FFFD, so that a genuine U+FFFD in the file is not mistaken for one.
    """
    if body.startswith(b"\xef\xbb\xbf"):
        return body[3:].decode("utf-8", "surrogateescape")
    if body.startswith((b"\xff\xfe", b"\xfe\xff")):
        codec = "utf-16-le" if body[0] == 0xFF else "utf-16-be"
        # Drop an odd last byte (a size cap can cut a code unit in half); the
        # decoder would otherwise raise even with an error handler.
        data = body[2 : len(body) - (len(body) % 2)]
        return data.decode(codec, "surrogatepass")
    return body.decode("utf-8", "surrogateescape")


def _sitemaps(text: str, robots_url: str) -> tuple[str, ...]:
    """Return the Sitemap/Site-map values of ``text`` as absolute http(s) URLs, deduplicated."""
    found: dict[str, None] = {}  # insertion-ordered set
    for line in _EOL(text):
        # Everything after '#' is a comment, also inside a value (as Google does).
        key, colon, value = line.partition("#")[0].partition(":")
        if not colon or key.strip().lower() not in _SITEMAP_KEYS:
            continue
        value = value.strip()
        if not value or _UNDECODABLE.search(value):
            continue
        try:
            # urljoin also lower-cases the scheme ("HTTP://" -> "http://").
            url = urljoin(robots_url, value)
            parts = urlsplit(url)
        except ValueError:  # e.g. an unbalanced '[' in the host
            continue
        if parts.scheme in ("http", "https") and parts.netloc:
            found.setdefault(url, None)
    return tuple(found)
