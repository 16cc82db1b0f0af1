"""Parse stage: turn decoded sitemap bytes into entries, chunk by chunk.

In: decoded (gunzipped) bytes of one document, fed in any split, plus the
``Kind`` that ``sniff`` decided. Out: lists of ``UrlEntry`` / ``SitemapChild``
as soon as each element closes. Errors are ``HarvesterError``s; entries
returned before an error stay valid (the reader marks the document partial).

XML goes through lxml's ``XMLPullParser`` with entity resolution, network,
DTD loading and huge trees off, listening only to the end of the entry
elements (``{*}url``, ``{*}sitemap``, ``{*}item``, ``{*}entry``), so libxml2
does the walking in C and Python touches each entry once. Input goes to libxml2
in 16 KiB slices; after each slice the handled entries and their earlier
siblings are deleted, so the tree never holds more than one slice's entries:
memory does not grow with the file. Where ``harvester/_cparse.pyx`` is built,
its walker reads a ``<url>``'s values (pointer reads on libxml2's nodes) and
its entry builder makes the ``UrlEntry`` in the usual case; what they leave
over is read by ``_url_values`` and finished by ``_url`` in Python. Where
``harvester/_cpush.pyx`` is built too, a urlset skips the ``XMLPullParser``:
that module drives libxml2's push parser with the same settings and slices,
hands each ``<url>`` node to the same entry builder and frees it as it closes.

Namespaces vary in the wild; core elements match on local name, extension
elements (image, video, news, xhtml:link) by their namespace.
"""

from __future__ import annotations

import codecs
import re
from typing import TYPE_CHECKING, Any, TypeAlias

from lxml import etree

from harvester import compiled
from harvester.dates import DateQuality, parse_lastmod, parse_rfc822, w3c_common
from harvester.errors import LimitExceeded, ParseError, TruncatedDocument
from harvester.extensions import parse_news, parse_video
from harvester.models import Image, Kind, SitemapChild, UrlEntry

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from harvester._cpush import UrlsetPush
    from harvester.config import ReaderConfig
    from harvester.models import Entry, News, ReadStats, Video

# The raw values of one <url>: loc, lastmod, changefreq, priority, images, alternates,
# videos, news (see XmlSitemapParser._url_values).
UrlValues: TypeAlias = """tuple[
    str | None, str | None, str | None, str | None,
    list[Image] | None, list[tuple[str, str]] | None, list[Video] | None, News | None,
]"""

# The compiled walker (harvester/_cparse.pyx, built at install when a C compiler is
# there); without it, or with HARVESTER_PURE_PYTHON=1, the Python path reads every <url>.
_cparse = compiled.load("_cparse")
# Its entry builder: appends the UrlEntry of a <url> (None), or hands back the raw values
# for this module's Python path to finish (see XmlSitemapParser._url). It needs the
# compiled lastmod parse too; the tests set it to None to read documents both ways.
_url_entry: (
    Callable[[etree._Element, tuple[Any, ...], Any, list[Entry]], UrlValues | None] | None
) = _cparse.url_entry if _cparse is not None and w3c_common is not None else None

# Its loop over the closed entries of a urlset or sitemapindex (XmlSitemapParser._drain).
_drain_sitemap: Callable[[Any, Any, list[Entry], bool], None] | None = (
    _cparse.drain if _cparse is not None else None
)


def _urlset_reader() -> type[UrlsetPush] | None:
    """``_cpush.UrlsetPush`` where it loaded (built, on a tested lxml), else None."""
    module = compiled.load("_cpush")
    return module.UrlsetPush if module is not None else None


# The urlset reader that drives libxml2 itself (harvester/_cpush.pyx): used, with the
# entry builder above, where it loaded, found lxml's libxml2 and lxml is a tested release
# (compiled.LXML_TESTED); the tests set it to None to read documents through lxml's
# XMLPullParser instead and compare.
_urlset_push = _urlset_reader()

__all__ = ["EntrySink", "TextSitemapParser", "XmlSitemapParser"]

PROTOCOL_MAX_ENTRIES = 50_000
PROTOCOL_MAX_LOC = 2_048

NS_IMAGE = "http://www.google.com/schemas/sitemap-image/1.1"
NS_VIDEO = "http://www.google.com/schemas/sitemap-video/1.1"
NS_NEWS = "http://www.google.com/schemas/sitemap-news/0.9"
NS_XHTML = "http://www.w3.org/1999/xhtml"

# Codes for the children of an entry element; the per-parser tag cache maps a
# full "{ns}local" tag to one of these so the hot loop does one dict lookup.
_IGNORE, _LOC, _LASTMOD, _CHANGEFREQ, _PRIORITY = 0, 1, 2, 3, 4
_IMAGE, _VIDEO, _NEWS, _XLINK, _LINK, _PUBDATE, _DATE = 5, 6, 7, 8, 9, 10, 11

_CORE = {"loc": _LOC, "lastmod": _LASTMOD, "changefreq": _CHANGEFREQ, "priority": _PRIORITY}
_EXTENSION = {
    (NS_IMAGE, "image"): _IMAGE,
    (NS_VIDEO, "video"): _VIDEO,
    (NS_NEWS, "news"): _NEWS,
    (NS_XHTML, "link"): _XLINK,
}
_FEED = {
    "link": _LINK,
    "pubDate": _PUBDATE,  # RSS 2.0 (RFC 822)
    "date": _DATE,  # RSS 1.0 dc:date (W3C)
    "updated": _DATE,  # Atom 1.0
    "modified": _DATE,  # Atom 0.3
    "issued": _DATE,  # Atom 0.3
    "published": _DATE,
}
_ENTRY_TAG = {
    Kind.URLSET: "{*}url",
    Kind.SITEMAPINDEX: "{*}sitemap",
    Kind.RSS: "{*}item",
    Kind.ATOM: "{*}entry",
}
_new_tuple = tuple.__new__
_FEED_SLICE = 16_384  # bytes handed to libxml2 at a time (see XmlSitemapParser.feed)
_CHANGEFREQS = frozenset(("always", "hourly", "daily", "weekly", "monthly", "yearly", "never"))
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)\Z")
_HTTP_URL = re.compile(r"https?://[^/?#\s]", re.IGNORECASE).match


class EntrySink:
    """Shared per-document bookkeeping: loc validation, in-document dedup, counters, caps.

    In: raw text of a loc (or text line). Out: the trimmed loc, or None when
    it must be dropped (counted in ``stats``).
    """

    __slots__ = ("_cap", "_max_url", "_seen", "stats")

    def __init__(self, stats: ReadStats, cfg: ReaderConfig, *, dedupe: bool = True) -> None:
        self.stats = stats
        self._cap = cfg.max_entries_per_file
        self._max_url = cfg.max_url_length
        # hash() of each loc: an int per entry instead of the whole string. None when
        # the caller deduplicates anyway (the pipeline does, per host, by canonical URL).
        self._seen: set[int] | None = set() if dedupe else None

    def accept(self, raw: str | None) -> str | None:
        """Validate one loc: trimmed, absolute http(s), not too long, not seen before."""
        stats = self.stats
        if raw is None:
            stats.dropped_invalid_loc += 1
            return None
        # str.strip() also removes Unicode blanks (NBSP, EN QUAD) found around CDATA.
        loc = raw.strip()
        if not loc or _HTTP_URL(loc) is None:
            stats.dropped_invalid_loc += 1
            return None
        n = len(loc)
        if n > PROTOCOL_MAX_LOC:
            if n > self._max_url:
                stats.dropped_too_long += 1
                return None
            _flag(stats, f"loc longer than {PROTOCOL_MAX_LOC} characters")
        seen = self._seen
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
        if total >= self._cap:
            raise LimitExceeded(
                f"more than {self._cap} entries in one file (reader.max_entries_per_file)"
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
        if w3c_common is not None:  # the compiled parse of the usual shapes, ~20x faster
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


def _flag(stats: ReadStats, violation: str) -> None:
    if violation not in stats.violations:
        stats.violations.append(violation)


def _text(el: etree._Element) -> str | None:
    """The string value of an element: its text, or all descendant text when it has children."""
    if len(el):
        return "".join(el.itertext())
    return el.text


def _prune(parent: etree._Element, last: etree._Element) -> None:
    """Free what is done: ``last``, a handled entry, and every sibling before it.

    Once per fed slice, in one call, rather than a clear() and a delete per entry
    (bench_parse: ~0.5 µs a URL less); between slices the tree holds no finished entry.
    """
    del parent[: parent.index(last) + 1]


class XmlSitemapParser:
    """Incremental parser for urlset, sitemapindex, RSS and Atom documents.

    Usage::

        p = XmlSitemapParser(Kind.URLSET, sink)
        for chunk in chunks:
            entries = p.feed(chunk)
        entries = p.close()
    """

    def __init__(
        self, kind: Kind, sink: EntrySink, *, encoding: str | None = None, extensions: bool = True
    ) -> None:
        self.kind = kind
        self._extensions = extensions  # False: image/video/news/xhtml children are skipped
        self.channel_lastmod: datetime | None = None
        self._sink = sink
        self._tags: dict[object, int] = {}  # tag cache, see _classify
        self._image_tags: dict[object, int] = {}  # image child tag -> Image field index
        self._changefreqs: dict[str, str | None] = {}  # raw text -> valid value or None
        self._priorities: dict[str, float | None] = {}
        # What the compiled entry builder reads per <url> (see _url); no bound methods,
        # so it makes no reference cycle.
        self._entry_ctx = (
            extensions,
            sink.stats,
            sink._seen,
            sink._cap,
            w3c_common,
            UrlEntry,
            self._changefreqs,
            self._priorities,
        )
        # A urlset, with both compiled modules there: libxml2 driven from C (_cpush), with
        # the same options and slices as the XMLPullParser below.
        self._push: UrlsetPush | None = None
        self._parser: etree.XMLPullParser | None = None
        if kind is Kind.URLSET and _urlset_push is not None and _url_entry is not None:
            self._push = _urlset_push(self._entry_ctx, encoding)
        else:
            self._parser = etree.XMLPullParser(
                events=("end",),
                tag=_ENTRY_TAG[kind],
                # Hardened settings: nothing external, nothing expanded, no giant nodes.
                resolve_entities=False,
                no_network=True,
                load_dtd=False,
                dtd_validation=False,
                attribute_defaults=False,
                huge_tree=False,
                remove_comments=True,
                remove_pis=True,
                # Whitespace-only text between elements is never read (values are
                # stripped): not building those nodes saves ~0.6 µs a URL (bench_parse).
                remove_blank_text=True,
                encoding=encoding,
            )
            self._events = self._parser.read_events()
        self._sitemap_kind = kind is Kind.URLSET or kind is Kind.SITEMAPINDEX
        self._feed_head_done = False  # channel/feed-level date captured (feeds only)
        self._root: etree._Element | None = None  # the urlset/sitemapindex, once seen
        # The function, not a bound method: that would make a reference cycle, and every
        # document's parser (its libxml2 context and buffers) would wait for the collector.
        self._handle: Callable[[XmlSitemapParser, etree._Element, list[Entry]], None] = {
            Kind.URLSET: XmlSitemapParser._url,
            Kind.SITEMAPINDEX: XmlSitemapParser._sitemap,
            Kind.RSS: XmlSitemapParser._item,
            Kind.ATOM: XmlSitemapParser._item,
        }[kind]

    def feed(self, data: bytes, out: list[Entry]) -> None:
        """Feed decoded bytes; append the entries completed by them to ``out``.

        Entries go into the caller's list rather than a return value so that
        those completed before an error survive the raise.
        """
        if self._push is not None:
            error = self._push.feed(data, out, self)
            if error is not None:
                raise _parse_error(*error, truncated=False)
            return
        parser = self._parser
        assert parser is not None
        # In slices: libxml2 keeps an input buffer as large as the biggest piece it was
        # fed (about twice), for the parser's life, and the tree holds a whole piece's
        # entries until they are drained. The decompressor hands over up to 256 KiB at
        # once; with hundreds of documents open per worker (hosts in flight x
        # connections) that was ~300 KB each, against ~40 KB in 16 KiB slices.
        for start in range(0, len(data) or 1, _FEED_SLICE):
            try:
                parser.feed(data[start : start + _FEED_SLICE])
            except etree.XMLSyntaxError as exc:
                self._drain(out)  # entries that closed before the error are still queued
                raise _syntax_error(exc, truncated=False) from exc
            self._drain(out)

    def close(self, out: list[Entry]) -> None:
        """Signal end of input; append the last entries, or raise if the document is incomplete."""
        if self._push is not None:
            error = self._push.close(out, self)
            if error is not None:
                raise _parse_error(*error, truncated=True)
            return
        assert self._parser is not None
        try:
            self._parser.close()
        except etree.XMLSyntaxError as exc:
            self._drain(out)
            raise _syntax_error(exc, truncated=True) from exc
        self._drain(out)

    def _drain(self, out: list[Entry]) -> None:
        if _drain_sitemap is not None and _url_entry is not None and self._sitemap_kind:
            # The same loop in C (harvester/_cparse.pyx); tests turn it off with _url_entry.
            _drain_sitemap(self, self._events, out, self.kind is Kind.URLSET)
            return
        handle = self._handle
        sitemap = self._sitemap_kind
        last: etree._Element | None = None  # the last entry handled, and its parent
        last_parent: etree._Element | None = None
        for _, el in self._events:
            found = el.getparent()
            if found is None:
                continue
            parent: etree._Element = found  # typed once: the identity test below would widen it
            if sitemap:
                # Only direct children of the root: a <url> nested inside <loc>
                # is part of the loc's string value, not an entry.
                root = self._root
                if root is None and parent.getparent() is None:
                    self._root = root = parent
                if parent is not root:
                    continue
            elif not self._feed_head_done:
                self._feed_head(parent)
            handle(self, el, out)
            if parent is not last_parent:
                if last is not None and last_parent is not None:
                    _prune(last_parent, last)  # entries of another parent (an RSS channel)
                last_parent = parent
            last = el
        if last is not None and last_parent is not None:
            _prune(last_parent, last)

    def _classify(self, tag: object) -> int:
        """Map a child tag to a handler code once per distinct tag (cached in self._tags)."""
        code = _IGNORE
        if isinstance(tag, str):
            ns, _, local = tag[1:].partition("}") if tag[:1] == "{" else ("", "", tag)
            ext = _EXTENSION.get((ns, local))
            if ext is not None:
                code = ext if self._extensions else _IGNORE
            elif ns not in (NS_IMAGE, NS_VIDEO, NS_NEWS, NS_XHTML):
                table = _CORE if self.kind in (Kind.URLSET, Kind.SITEMAPINDEX) else _FEED
                code = table.get(local, _IGNORE)
        self._tags[tag] = code
        return code

    def _url(self, el: etree._Element, out: list[Entry]) -> None:
        if _url_entry is not None:
            # The compiled builder does the whole entry in the usual case; what it hands
            # back (a loc to drop or flag, an unusual lastmod, a count limit) is finished
            # here from the values it already read.
            found = _url_entry(el, self._entry_ctx, self, out)
            if found is not None:
                self._finish(found, out)
        else:
            self._finish(self._url_values(el), out)

    def _finish(self, values: UrlValues, out: list[Entry]) -> None:
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
                    self._changefreq(changefreq) if changefreq is not None else None,
                    self._priority(priority) if priority is not None else None,
                    tuple(images) if images else (),
                    tuple(alternates) if alternates else (),
                    tuple(videos) if videos else (),
                    news,
                ),
            )
        )

    def _url_values(self, el: etree._Element) -> UrlValues:
        """The raw values of one ``<url>`` through lxml's Python API (videos and news too).

        Out: ``(loc, lastmod, changefreq, priority, images, alternates, videos, news)``,
        raw text (None when absent) and lists (None when empty). The compiled
        ``_cparse``'s walker reads the same from the C tree and leaves to this the
        elements it does not handle (video, news, nested markup).
        """
        tags = self._tags
        image_tags = self._image_tags
        loc = lastmod = changefreq = priority = None
        images: list[Image] | None = None
        videos: list[Video] | None = None
        alternates: list[tuple[str, str]] | None = None
        news: News | None = None
        for child in el:
            code = tags.get(child.tag)
            if code is None:
                code = self._classify(child.tag)
            if code == _LOC:
                if loc is None:
                    loc = _text(child)
            elif code == _LASTMOD:
                lastmod = _text(child)
            elif code == _CHANGEFREQ:
                changefreq = child.text
            elif code == _PRIORITY:
                priority = child.text
            elif code == _IMAGE:
                fields: list[str | None] = [None, None, None, None, None]
                for sub in child:
                    index = image_tags.get(sub.tag)
                    if index is None:
                        index = self._image_field(sub.tag)
                    if index >= 0 and fields[index] is None:
                        text = _text(sub)
                        if text:
                            fields[index] = text.strip() or None
                if fields[0] is not None:
                    (images := images or []).append(Image._make(fields))
            elif code == _XLINK:
                href = child.get("href")
                lang = child.get("hreflang")
                if href and lang and child.get("rel") == "alternate":
                    (alternates := alternates or []).append((lang.strip(), href.strip()))
            elif code == _VIDEO:
                (videos := videos or []).append(parse_video(child))
            elif code == _NEWS:
                news = parse_news(child)
        return loc, lastmod, changefreq, priority, images, alternates, videos, news

    def _sitemap(self, el: etree._Element, out: list[Entry]) -> None:
        # Several <loc> in one <sitemap> (an unclosed-element generator bug) are
        # separate children; a lastmod belongs to the loc it follows, never leaks on.
        loc: str | None = None
        lastmod: str | None = None
        found = False
        tags = self._tags
        for child in el:
            code = tags.get(child.tag)
            if code is None:
                code = self._classify(child.tag)
            if code == _LOC:
                if found:
                    self._child(loc, lastmod, out)
                loc, lastmod, found = _text(child), None, True
            elif code == _LASTMOD:
                lastmod = _text(child)
        if found:
            self._child(loc, lastmod, out)
        else:
            self._sink.stats.dropped_invalid_loc += 1

    def _child(self, raw_loc: str | None, raw_lastmod: str | None, out: list[Entry]) -> None:
        sink = self._sink
        loc = sink.accept(raw_loc)
        if loc is None:
            return
        sink.count(child=True)
        when, raw = sink.lastmod(raw_lastmod)
        out.append(SitemapChild(loc, when, raw))

    def _item(self, el: etree._Element, out: list[Entry]) -> None:
        """RSS <item> / Atom <entry>: URL from <link>, date from pubDate/updated/..."""
        sink = self._sink
        tags = self._tags
        loc: str | None = None
        when: datetime | None = None
        raw: str | None = None
        for child in el:
            code = tags.get(child.tag)
            if code is None:
                code = self._classify(child.tag)
            if code == _LINK and loc is None:
                if self.kind is Kind.ATOM:
                    # Atom: the first link with no rel or rel="alternate" is the page.
                    if child.get("rel", "alternate") == "alternate":
                        loc = child.get("href")
                else:
                    loc = _text(child)
            elif code == _PUBDATE and raw is None:
                text = (child.text or "").strip()
                if text:
                    raw, when = text, parse_rfc822(text)
                    if when is None:
                        # Some feeds put ISO dates in pubDate: read them as a lastmod would be.
                        when = sink.lastmod(text)[0]
            elif code == _DATE and raw is None:
                when, raw = sink.lastmod(_text(child))
        loc = sink.accept(loc)
        if loc is None:
            return
        sink.count()
        out.append(UrlEntry(loc, when, raw))

    def _feed_head(self, channel: etree._Element) -> None:
        """Capture the feed-level date before the siblings holding it are deleted."""
        self._feed_head_done = True
        for child in channel:
            local = child.tag.rpartition("}")[2] if isinstance(child.tag, str) else ""
            text = (child.text or "").strip()
            if not text:
                continue
            if local in ("pubDate", "lastBuildDate"):
                self.channel_lastmod = parse_rfc822(text)
            elif local in ("updated", "modified"):
                self.channel_lastmod = parse_lastmod(text)[0]
            if self.channel_lastmod is not None:
                return

    def _changefreq(self, raw: str) -> str | None:
        # Memoised per distinct text (a file repeats a handful); invalid ones still count.
        try:
            value = self._changefreqs[raw]
        except KeyError:
            text = raw.strip().lower()
            value = self._changefreqs[raw] = text if text in _CHANGEFREQS else None
        if value is None and raw.strip():
            self._sink.stats.changefreq_invalid += 1
        return value

    def _priority(self, raw: str) -> float | None:
        try:
            value = self._priorities[raw]
        except KeyError:
            value = self._priorities[raw] = _parse_priority(raw)
        if value is None and raw.strip():
            self._sink.stats.priority_invalid += 1
        return value

    def _image_field(self, tag: object) -> int:
        """Index of an image:image child in ``Image`` fields (-1: not one), cached per tag."""
        index = -1
        if isinstance(tag, str) and tag.startswith("{" + NS_IMAGE + "}"):
            local = tag.rpartition("}")[2]
            if local in Image._fields:
                index = Image._fields.index(local)
        self._image_tags[tag] = index
        return index


def _parse_priority(raw: str) -> float | None:
    """A priority in [0.0, 1.0] written as an xsd:decimal; anything else is None."""
    value = raw.strip()
    if _DECIMAL.match(value):
        number = float(value)
        if 0.0 <= number <= 1.0:
            return number
    return None


def _syntax_error(exc: etree.XMLSyntaxError, *, truncated: bool) -> ParseError:
    """Translate an lxml error once, keeping its message and position."""
    line, column = exc.position
    message = str(exc.msg or exc).strip()
    # lxml appends the position (", line N, column M", or ", line N" without a column);
    # ParseError adds it itself.
    for suffix in (f", line {line}, column {column}", f", line {line}"):
        if line > 0 and message.endswith(suffix):
            message = message[: -len(suffix)]
            break
    return _parse_error(message, line, column, truncated=truncated)


def _parse_error(message: str, line: int, column: int, *, truncated: bool) -> ParseError:
    """The error of a libxml2 message (trimmed) at a position; at the end of input, one
    saying the document stopped early is a ``TruncatedDocument``."""
    message = message.strip()
    if truncated and ("Premature end" in message or "not found" in message):
        return TruncatedDocument(f"document ended early: {message}", line=line, column=column)
    return ParseError(f"malformed XML: {message}", line=line, column=column)


class TextSitemapParser:
    """Plain-text sitemap: one URL per line; blank, comment and junk lines skipped.

    Lines may end in LF, CRLF or CR. A line longer than the URL cap is dropped
    without buffering it whole.
    """

    def __init__(self, sink: EntrySink, max_line: int, *, encoding: str | None = None) -> None:
        self._sink = sink
        self._max_line = max_line
        self._decoder = codecs.getincrementaldecoder(encoding or "utf-8-sig")(errors="replace")
        self._pending = ""  # the unfinished last line
        self._skipping = False  # inside an over-long line: drop until its end

    def feed(self, data: bytes, out: list[Entry]) -> None:
        """Feed bytes; append the URLs on the lines completed by them to ``out``."""
        self._lines(self._decoder.decode(data), out, final=False)

    def close(self, out: list[Entry]) -> None:
        """Signal end of input; append the URL on the last line, if any."""
        self._lines(self._decoder.decode(b"", final=True), out, final=True)

    def _lines(self, text: str, out: list[Entry], *, final: bool) -> None:
        lines = (self._pending + text).splitlines()
        if not final and lines and not text.endswith(("\n", "\r")):
            self._pending = lines.pop()
        else:
            self._pending = ""
        sink = self._sink
        for line in lines:
            if self._skipping:
                self._skipping = False
                continue
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            loc = sink.accept(stripped)
            if loc is not None:
                sink.count()
                out.append(UrlEntry(loc))
        if len(self._pending) > self._max_line:
            # Do not buffer a runaway line: drop it now and skip its remainder.
            self._pending = ""
            if not self._skipping:
                sink.stats.dropped_too_long += 1
            self._skipping = True
