"""Values that cross stage boundaries: what the reader yields and reports.

In: nothing (plain data). Out: frozen slots dataclasses used by ``parse``,
``decompress``, the pipeline and the sinks.

* ``UrlEntry``: one ``<url>`` (or feed item, or text line) with its extension data.
* ``SitemapChild``: one ``<sitemap>`` of an index, to be fetched next.
* ``ReadStats`` / ``ReadResult``: what one document amounted to (kind, counts, error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime  # noqa: TC003 - NamedTuple fields are evaluated at runtime
from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from harvester.errors import HarvesterError

__all__ = [
    "Entry",
    "Image",
    "Kind",
    "News",
    "ReadResult",
    "ReadStats",
    "SitemapChild",
    "UrlEntry",
    "Video",
]


class Kind(StrEnum):
    """What a document turned out to be, sniffed from its content."""

    URLSET = "urlset"
    SITEMAPINDEX = "sitemapindex"
    RSS = "rss"
    ATOM = "atom"
    TEXT = "text"


class Image(NamedTuple):
    """One ``image:image`` of a ``<url>`` (Google image extension)."""

    loc: str
    caption: str | None = None
    title: str | None = None
    geo_location: str | None = None
    license: str | None = None


@dataclass(frozen=True, slots=True)
class Video:
    """One ``video:video`` of a ``<url>``; only the commonly used fields, as published (trimmed)."""

    thumbnail_loc: str | None = None
    title: str | None = None
    description: str | None = None
    content_loc: str | None = None
    player_loc: str | None = None
    duration: str | None = None
    publication_date: str | None = None
    expiration_date: str | None = None
    family_friendly: str | None = None
    live: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class News:
    """The ``news:news`` block of a ``<url>`` (Google News extension)."""

    name: str | None = None
    language: str | None = None
    publication_date: datetime | None = None
    publication_date_raw: str | None = None
    title: str | None = None
    keywords: tuple[str, ...] = ()  # split on commas, each trimmed; empty ones dropped
    genres: str | None = None  # as published ("PressRelease, Blog")
    stock_tickers: tuple[str, ...] = ()  # split on commas ("NASDAQ:AMAT, BOM:500325")
    access: str | None = None  # "Subscription" | "Registration", as published


class UrlEntry(NamedTuple):
    """One page URL as listed by a sitemap, feed or text sitemap.

    ``loc`` is exactly as published (XML-decoded and trimmed, nothing else).
    ``lastmod`` is timezone-aware UTC or None; ``lastmod_raw`` keeps the text.
    ``alternates`` holds ``(hreflang, href)`` pairs from ``xhtml:link rel=alternate``.

    A NamedTuple rather than a frozen dataclass: one is built per URL on the
    hot path, and a tuple builds in a fifth of the time (frozen dataclasses set
    each field through ``object.__setattr__``). It is just as immutable.
    """

    loc: str
    lastmod: datetime | None = None
    lastmod_raw: str | None = None
    changefreq: str | None = None
    priority: float | None = None
    images: tuple[Image, ...] = ()
    alternates: tuple[tuple[str, str], ...] = ()
    videos: tuple[Video, ...] = ()
    news: News | None = None


class SitemapChild(NamedTuple):
    """One ``<sitemap>`` of a sitemap index: a sitemap to fetch next."""

    loc: str
    lastmod: datetime | None = None
    lastmod_raw: str | None = None


Entry = UrlEntry | SitemapChild


@dataclass(slots=True)
class ReadStats:
    """Counters for one document; mutated only by the reader that owns it."""

    bytes_in: int = 0  # bytes fed to the reader (after HTTP content-encoding)
    bytes_out: int = 0  # bytes after gunzip, i.e. what the parser saw
    gzip_layers: int = 0
    entries: int = 0  # UrlEntry yielded
    children: int = 0  # SitemapChild yielded
    # Missing, empty, relative or non-http(s) loc, or one whose host can be no DNS name or
    # IP literal or whose port is not 1-65535 (harvester.urls.validate).
    dropped_invalid_loc: int = 0
    dropped_duplicate: int = 0  # same loc earlier in this document
    dropped_too_long: int = 0  # loc over the hard URL-length cap
    lastmod_nonstandard: int = 0  # parsed, but not strict W3C Datetime
    lastmod_invalid: int = 0  # present but unparseable: lastmod is None
    changefreq_invalid: int = 0
    priority_invalid: int = 0
    # The first few of those locs (INVALID_LOC_EXAMPLES, each cut to 200 characters), to
    # say what was dropped; the missing and empty ones have nothing to show.
    invalid_loc_examples: list[str] = field(default_factory=list)
    # Protocol limits (50,000 entries, 50 MiB, 2,048-char loc): flagged, not enforced.
    violations: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """Return the counters as a JSON-ready dict."""
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class ReadResult:
    """What one document amounted to, returned by ``SitemapReader.close()``.

    ``status`` is ``ok`` (no error), ``partial`` (an error, but complete entries
    before it were yielded and stay valid) or ``error`` (nothing usable).
    """

    url: str | None
    kind: Kind | None
    stats: ReadStats
    error: HarvesterError | None = None
    channel_lastmod: datetime | None = None

    @property
    def status(self) -> str:
        """``ok``, ``partial`` or ``error`` (see the class docstring)."""
        if self.error is None:
            return "ok"
        if self.stats.entries or self.stats.children:
            return "partial"
        return "error"
