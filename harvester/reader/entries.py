"""Parse stage, second half: what a closed element of a sitemap becomes.

In: an lxml element that has just closed (a ``<url>``; ``parse`` reads the other
kinds' elements itself with the ``TagCodes`` here), and the document's
``EntrySink``. Out: ``UrlEntry`` values appended to the caller's list, with the
document's counters, caps and in-document dedup kept in the sink.

``UrlBuilder`` is the Python half of the compiled entry builder
(``harvester/reader/_cparse.pyx``). That module receives one ``_cparse.EntryContext``
per parser, made from the public fields of a ``UrlBuilder`` and an
``EntrySink`` (the ones marked "read by _cparse" below), and calls the public
methods of the ``UrlBuilder`` for what it leaves to Python: ``values`` for a
``<url>`` its walker does not read, ``finish`` for values it hands back, and
``changefreq``/``priority`` for a text it has no valid memo for (they count it).
Rename one of these and ``_cparse``'s ``EntryContext`` fails where it is made
(an ``AttributeError`` in every compiled test), not somewhere else.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TypeAlias

from harvester.dates import DateQuality, parse_lastmod, w3c_common
from harvester.errors import LimitExceeded
from harvester.models import Image, Kind, UrlEntry
from harvester.reader.extensions import parse_news, parse_video
from harvester.urls.validate import valid_authority

if TYPE_CHECKING:
    from datetime import datetime

    from lxml import etree

    from harvester.config import ReaderConfig
    from harvester.models import Entry, News, ReadStats, Video

__all__ = ["EntrySink", "TagCodes", "UrlBuilder", "UrlValues"]

# The raw values of one <url>: loc, lastmod, changefreq, priority, images, alternates,
# videos, news (see UrlBuilder.values).
UrlValues: TypeAlias = """tuple[
    str | None, str | None, str | None, str | None,
    list[Image] | None, list[tuple[str, str]] | None, list[Video] | None, News | None,
]"""

PROTOCOL_MAX_ENTRIES = 50_000
PROTOCOL_MAX_LOC = 2_048
INVALID_LOC_EXAMPLES = 5  # dropped invalid locs kept in ReadStats.invalid_loc_examples

NS_IMAGE = "http://www.google.com/schemas/sitemap-image/1.1"
NS_VIDEO = "http://www.google.com/schemas/sitemap-video/1.1"
NS_NEWS = "http://www.google.com/schemas/sitemap-news/0.9"
NS_XHTML = "http://www.w3.org/1999/xhtml"

# Codes for the children of an entry element; the per-parser tag cache maps a
# full "{ns}local" tag to one of these so the hot loop does one dict lookup.
IGNORE, LOC, LASTMOD, CHANGEFREQ, PRIORITY = 0, 1, 2, 3, 4
IMAGE, VIDEO, NEWS, XLINK, LINK, PUBDATE, DATE = 5, 6, 7, 8, 9, 10, 11

_CORE = {"loc": LOC, "lastmod": LASTMOD, "changefreq": CHANGEFREQ, "priority": PRIORITY}
_EXTENSION = {
    (NS_IMAGE, "image"): IMAGE,
    (NS_VIDEO, "video"): VIDEO,
    (NS_NEWS, "news"): NEWS,
    (NS_XHTML, "link"): XLINK,
}
_FEED = {
    "link": LINK,
    "pubDate": PUBDATE,  # RSS 2.0 (RFC 822)
    "date": DATE,  # RSS 1.0 dc:date (W3C)
    "updated": DATE,  # Atom 1.0
    "modified": DATE,  # Atom 0.3
    "issued": DATE,  # Atom 0.3
    "published": DATE,
}
_new_tuple = tuple.__new__
_CHANGEFREQS = frozenset(("always", "hourly", "daily", "weekly", "monthly", "yearly", "never"))
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)\Z")
_HTTP_URL = re.compile(r"https?://[^/?#\s]", re.IGNORECASE).match


class EntrySink:
    """Shared per-document bookkeeping: loc validation, in-document dedup, counters, caps.

    In: raw text of a loc (or text line). Out: the trimmed loc, or None when
    it must be dropped (counted in ``stats``).
    """

    __slots__ = ("_max_url", "cap", "seen", "stats")

    def __init__(self, stats: ReadStats, cfg: ReaderConfig, *, dedupe: bool = True) -> None:
        self.stats = stats  # read by _cparse (its EntryContext adds the entries it counts)
        self.cap = cfg.max_entries_per_file  # read by _cparse
        self._max_url = cfg.max_url_length
        # hash() of each loc: an int per entry instead of the whole string. None when
        # the caller deduplicates anyway (the pipeline does, per host, by canonical URL).
        # Read by _cparse, which adds to it the locs of the entries it builds.
        self.seen: set[int] | None = set() if dedupe else None

    def accept(self, raw: str | None) -> str | None:
        """Validate one loc: trimmed, absolute http(s) with a host and port a client could
        connect to (``harvester.urls.validate``), not too long, not seen before."""
        stats = self.stats
        if raw is None:
            stats.dropped_invalid_loc += 1
            return None
        # str.strip() also removes Unicode blanks (NBSP, EN QUAD) found around CDATA.
        loc = raw.strip()
        if not loc:
            stats.dropped_invalid_loc += 1
            return None
        if _HTTP_URL(loc) is None or not valid_authority(loc):
            _invalid(stats, loc)
            return None
        n = len(loc)
        if n > PROTOCOL_MAX_LOC:
            if n > self._max_url:
                stats.dropped_too_long += 1
                return None
            _flag(stats, f"loc longer than {PROTOCOL_MAX_LOC} characters")
        seen = self.seen
        if seen is not None:
            key = hash(loc)
            if key in seen:
                stats.dropped_duplicate += 1
                return None
            seen.add(key)
        return loc

    def count(self, child: bool = False) -> None:
        """Count one yielded entry; raise ``LimitExceeded`` past the configured cap."""
        stats = self.stats
        total = stats.entries + stats.children
        if total >= self.cap:
            raise LimitExceeded(
                f"more than {self.cap} entries in one file (reader.max_entries_per_file)"
            )
        if child:
            stats.children += 1
        else:
            stats.entries += 1
        if total == PROTOCOL_MAX_ENTRIES:
            _flag(stats, f"more than {PROTOCOL_MAX_ENTRIES} entries")

    def lastmod(self, raw: str | None) -> tuple[datetime | None, str | None]:
        """Parse a lastmod: (UTC datetime or None, trimmed raw or None); counts its quality."""
        if raw is None:
            return None, None
        raw = raw.strip()
        if not raw:
            return None, None
        if w3c_common is not None:  # the compiled parse of the usual shapes
            value = w3c_common(raw)
            if value is not None:
                return value, raw
        value, quality = parse_lastmod(raw)
        if quality is not DateQuality.W3C:
            if quality is DateQuality.NONSTANDARD:
                self.stats.lastmod_nonstandard += 1
            else:
                self.stats.lastmod_invalid += 1
        return value, raw


def _invalid(stats: ReadStats, loc: str) -> None:
    """Count a dropped loc that is no usable http(s) URL; keep the first few as examples."""
    stats.dropped_invalid_loc += 1
    if len(stats.invalid_loc_examples) < INVALID_LOC_EXAMPLES:
        stats.invalid_loc_examples.append(loc[:200])


def _flag(stats: ReadStats, violation: str) -> None:
    if violation not in stats.violations:
        stats.violations.append(violation)


def text_of(el: etree._Element) -> str | None:
    """The string value of an element: its text, or all descendant text when it has children."""
    if len(el):
        return "".join(el.itertext())
    return el.text


class TagCodes:
    """The code of each child tag of a document's entries, worked out once per distinct tag.

    Core elements match on local name in any namespace but the extensions' (the
    wild uses every sitemaps.org variant, Google's old ones and none at all);
    extension elements (image, video, news, xhtml:link) by their namespace, and
    only when ``extensions`` is on.
    """

    __slots__ = ("_extensions", "_table", "known")

    def __init__(self, kind: Kind, extensions: bool) -> None:
        self.known: dict[object, int] = {}  # tag -> code; the hot loops look here first
        self._extensions = extensions
        self._table = _CORE if kind in (Kind.URLSET, Kind.SITEMAPINDEX) else _FEED

    def classify(self, tag: object) -> int:
        """The code of ``tag`` (cached in ``known``)."""
        code = IGNORE
        if isinstance(tag, str):
            # "{ns}local": a local name has no '}', a namespace may (one that is no valid
            # URI, which libxml2 only reports), so split at the last.
            ns, _, local = tag[1:].rpartition("}") if tag[:1] == "{" else ("", "", tag)
            ext = _EXTENSION.get((ns, local))
            if ext is not None:
                code = ext if self._extensions else IGNORE
            elif ns not in (NS_IMAGE, NS_VIDEO, NS_NEWS, NS_XHTML):
                code = self._table.get(local, IGNORE)
        self.known[tag] = code
        return code


class UrlBuilder:
    """The ``UrlEntry`` of one ``<url>``: its raw values read, checked and made an entry.

    Usage (what ``parse`` does for each closed ``<url>`` without ``_cparse``)::

        urls = UrlBuilder(sink, TagCodes(Kind.URLSET, True), extensions=True)
        urls.finish(urls.values(el), out)

    Its public fields and methods are the interface ``_cparse`` uses (module
    docstring); it holds no reference to the parser, so the ``EntryContext``
    that holds it makes no reference cycle.
    """

    __slots__ = ("_codes", "_image_tags", "_sink", "changefreqs", "extensions", "priorities")

    def __init__(self, sink: EntrySink, codes: TagCodes, *, extensions: bool) -> None:
        self._sink = sink
        self._codes = codes
        self._image_tags: dict[object, int] = {}  # image child tag -> Image field index
        # Read by _cparse: False, image/video/news/xhtml children are skipped.
        self.extensions = extensions
        # Raw text -> valid value or None, memoised per distinct text (a file repeats a
        # handful). Read by _cparse, which uses a valid memoised value without a call.
        self.changefreqs: dict[str, str | None] = {}
        self.priorities: dict[str, float | None] = {}

    def finish(self, values: UrlValues, out: list[Entry]) -> None:
        """Append the ``UrlEntry`` of one ``<url>``'s raw values (or drop or flag its loc)."""
        raw_loc, lastmod, changefreq, priority, images, alternates, videos, news = values
        sink = self._sink
        loc = sink.accept(raw_loc)
        if loc is None:
            return
        sink.count()
        when, raw = sink.lastmod(lastmod)
        # tuple.__new__ with every field: what UrlEntry(...) does, without its Python frame.
        out.append(
            _new_tuple(
                UrlEntry,
                (
                    loc,
                    when,
                    raw,
                    self.changefreq(changefreq) if changefreq is not None else None,
                    self.priority(priority) if priority is not None else None,
                    tuple(images) if images else (),
                    tuple(alternates) if alternates else (),
                    tuple(videos) if videos else (),
                    news,
                ),
            )
        )

    def values(self, el: etree._Element) -> UrlValues:
        """The raw values of one ``<url>`` through lxml's Python API (videos and news too).

        Out: ``(loc, lastmod, changefreq, priority, images, alternates, videos, news)``,
        raw text (None when absent) and lists (None when empty). The compiled
        ``_cwalk``'s walker reads the same from the C tree (every extension too) and
        leaves to this the elements it does not handle (nested markup in a value, entity
        references): this is the reference the parity tests hold it to.
        """
        known = self._codes.known
        loc = lastmod = changefreq = priority = None
        images: list[Image] | None = None
        videos: list[Video] | None = None
        alternates: list[tuple[str, str]] | None = None
        news: News | None = None
        for child in el:
            code = known.get(child.tag)
            if code is None:
                code = self._codes.classify(child.tag)
            if code == LOC:
                if loc is None:
                    loc = text_of(child)
            elif code == LASTMOD:
                lastmod = text_of(child)
            elif code == CHANGEFREQ:
                changefreq = child.text
            elif code == PRIORITY:
                priority = child.text
            elif code == IMAGE:
                image = self._image(child)
                if image is not None:
                    (images := images or []).append(image)
            elif code == XLINK:
                href = child.get("href")
                lang = child.get("hreflang")
                if href and lang and child.get("rel") == "alternate":
                    (alternates := alternates or []).append((lang.strip(), href.strip()))
            elif code == VIDEO:
                (videos := videos or []).append(parse_video(child))
            elif code == NEWS:
                news = parse_news(child)
        return loc, lastmod, changefreq, priority, images, alternates, videos, news

    def changefreq(self, raw: str) -> str | None:
        """A changefreq's valid value or None (memoised); an invalid non-blank one counts."""
        try:
            value = self.changefreqs[raw]
        except KeyError:
            text = raw.strip().lower()
            value = self.changefreqs[raw] = text if text in _CHANGEFREQS else None
        if value is None and raw.strip():
            self._sink.stats.changefreq_invalid += 1
        return value

    def priority(self, raw: str) -> float | None:
        """A priority's value or None (memoised); an invalid non-blank one counts."""
        try:
            value = self.priorities[raw]
        except KeyError:
            value = self.priorities[raw] = parse_priority(raw)
        if value is None and raw.strip():
            self._sink.stats.priority_invalid += 1
        return value

    def _image(self, el: etree._Element) -> Image | None:
        """One image:image as an ``Image``, None without an image:loc; first of each field wins."""
        image_tags = self._image_tags
        fields: list[str | None] = [None, None, None, None, None]
        for sub in el:
            index = image_tags.get(sub.tag)
            if index is None:
                index = self._image_field(sub.tag)
            if index >= 0 and fields[index] is None:
                text = text_of(sub)
                if text:
                    fields[index] = text.strip() or None
        return Image._make(fields) if fields[0] is not None else None

    def _image_field(self, tag: object) -> int:
        """Index of an image:image child in ``Image`` fields (-1: not one), cached per tag."""
        index = -1
        if isinstance(tag, str) and tag.startswith("{" + NS_IMAGE + "}"):
            local = tag.rpartition("}")[2]
            if local in Image._fields:
                index = Image._fields.index(local)
        self._image_tags[tag] = index
        return index


def parse_priority(raw: str) -> float | None:
    """A priority in [0.0, 1.0] written as an xsd:decimal; anything else is None."""
    value = raw.strip()
    if _DECIMAL.match(value):
        number = float(value)
        if 0.0 <= number <= 1.0:
            return number
    return None
