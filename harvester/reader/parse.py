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
memory does not grow with the file. A ``<url>`` becomes its entry in
``entries.UrlBuilder``; where ``harvester/reader/_cparse.pyx`` is built, the walker
of ``harvester/reader/_cwalk.pyx`` reads a ``<url>``'s values (pointer reads on
libxml2's nodes) and ``_cparse``'s entry builder makes the ``UrlEntry`` in the
usual case, and what they leave over is finished by the ``UrlBuilder`` in
Python. Where ``harvester/reader/_cpush.pyx`` is built too (and lxml is a tested
release: ``compiled.LXML_TESTED``), a urlset skips the ``XMLPullParser``: that
module drives libxml2's push parser with the same settings and slices, hands
each ``<url>`` node to the same entry builder and frees it as it closes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lxml import etree

from harvester import compiled
from harvester.dates import parse_lastmod, parse_rfc822, w3c_common
from harvester.errors import ParseError, TruncatedDocument, XmlTooLarge
from harvester.models import Kind, SitemapChild, UrlEntry
from harvester.reader.entries import (
    DATE,
    LASTMOD,
    LINK,
    LOC,
    PUBDATE,
    EntrySink,
    TagCodes,
    UrlBuilder,
    text_of,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from harvester.models import Entry
    from harvester.reader._cparse import EntryContext
    from harvester.reader._cpush import UrlsetPush
    from harvester.reader.entries import UrlValues

# The compiled walker (harvester/reader/_cparse.pyx, built at install when a C compiler is
# there); without it, or with HARVESTER_PURE_PYTHON=1, the Python path reads every <url>.
_cparse = compiled.load("_cparse")
# Its entry builder: appends the UrlEntry of a <url> (None), or hands back the raw values
# for the UrlBuilder to finish (see XmlSitemapParser._url). It needs the compiled lastmod
# parse too; the tests set it to None to read documents both ways.
_url_entry: Callable[[etree._Element, EntryContext, list[Entry]], UrlValues | None] | None = (
    _cparse.url_entry if _cparse is not None and w3c_common is not None else None
)

# Its loop over the closed entries of a urlset or sitemapindex (XmlSitemapParser._drain).
_drain_sitemap = _cparse.drain if _cparse is not None else None


def _urlset_reader() -> type[UrlsetPush] | None:
    """``_cpush.UrlsetPush`` where it loaded (built, on a tested lxml), else None."""
    module = compiled.load("_cpush")
    return module.UrlsetPush if module is not None else None


# The urlset reader that drives libxml2 itself (harvester/reader/_cpush.pyx): used, with the
# entry builder above, where it loaded, found lxml's libxml2 and lxml is a tested release
# (compiled.LXML_TESTED); the tests set it to None to read documents through lxml's
# XMLPullParser instead and compare.
_urlset_push = _urlset_reader()

__all__ = ["EntrySink", "XmlSitemapParser"]

_ENTRY_TAG = {
    Kind.URLSET: "{*}url",
    Kind.SITEMAPINDEX: "{*}sitemap",
    Kind.RSS: "{*}item",
    Kind.ATOM: "{*}entry",
}
_FEED_SLICE = 16_384  # bytes handed to libxml2 at a time (see XmlSitemapParser.feed)


def _prune(parent: etree._Element, last: etree._Element) -> None:
    """Free what is done: ``last``, a handled entry, and every sibling before it.

    Once per fed slice, in one call, rather than a clear() and a delete per entry
    (cheaper per URL); between slices the tree holds no finished entry.
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
        self.channel_lastmod: datetime | None = None
        self._sink = sink
        self._codes = TagCodes(kind, extensions)  # child tag -> code, shared with _urls
        self._urls = UrlBuilder(sink, self._codes, extensions=extensions)
        # What the compiled entry builder reads per <url>: the named fields of _urls and
        # sink (harvester/reader/_cparse.pxd). It refers to neither this parser nor its reader,
        # so it makes no reference cycle.
        self._entry_ctx: EntryContext | None = None
        if _url_entry is not None and _cparse is not None:
            self._entry_ctx = _cparse.EntryContext(self._urls, sink)
        # A urlset, with both compiled modules there: libxml2 driven from C (_cpush), with
        # the same options and slices as the XMLPullParser below.
        self._push: UrlsetPush | None = None
        self._parser: etree.XMLPullParser | None = None
        if kind is Kind.URLSET and _urlset_push is not None and self._entry_ctx is not None:
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
                # stripped): not building those nodes makes each URL cheaper.
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
            error = self._push.feed(data, out)
            if error is not None:
                raise _parse_error(*error, truncated=False)
            return
        parser = self._parser
        assert parser is not None
        # In slices: libxml2 keeps an input buffer as large as the biggest piece it was
        # fed (about twice), for the parser's life, and the tree holds a whole piece's
        # entries until they are drained. The decompressor hands over up to 256 KiB at
        # once, and hundreds of documents are open per worker (hosts in flight x
        # connections): small slices keep each one's buffers small.
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
            error = self._push.close(out)
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
        ctx = self._entry_ctx
        if _drain_sitemap is not None and ctx is not None and self._sitemap_kind:
            # The same loop in C (harvester/reader/_cparse.pyx); tests turn it off with _url_entry.
            # A urlset's <url>s go to the entry builder (handle None); an index's
            # <sitemap>s to _sitemap, passed for this call only (kept, the bound method
            # would make a reference cycle).
            each = None if self.kind is Kind.URLSET else self._sitemap
            self._root = _drain_sitemap(ctx, self._events, out, self._root, each)
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

    def _url(self, el: etree._Element, out: list[Entry]) -> None:
        ctx = self._entry_ctx
        if _url_entry is not None and ctx is not None:
            # The compiled builder does the whole entry in the usual case; what it hands
            # back (a loc to drop or flag, an unusual lastmod, a count limit) is finished
            # in Python from the values it already read.
            found = _url_entry(el, ctx, out)
            if found is not None:
                self._urls.finish(found, out)
        else:
            self._urls.finish(self._urls.values(el), out)

    def _sitemap(self, el: etree._Element, out: list[Entry]) -> None:
        # Several <loc> in one <sitemap> (an unclosed-element generator bug) are
        # separate children; a lastmod belongs to the loc it follows, never leaks on.
        loc: str | None = None
        lastmod: str | None = None
        found = False
        codes = self._codes
        known = codes.known
        for child in el:
            code = known.get(child.tag)
            if code is None:
                code = codes.classify(child.tag)
            if code == LOC:
                if found:
                    self._child(loc, lastmod, out)
                loc, lastmod, found = text_of(child), None, True
            elif code == LASTMOD:
                lastmod = text_of(child)
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
        codes = self._codes
        known = codes.known
        loc: str | None = None
        when: datetime | None = None
        raw: str | None = None
        for child in el:
            code = known.get(child.tag)
            if code is None:
                code = codes.classify(child.tag)
            if code == LINK and loc is None:
                if self.kind is Kind.ATOM:
                    # Atom: the first link with no rel or rel="alternate" is the page.
                    if child.get("rel", "alternate") == "alternate":
                        loc = child.get("href")
                else:
                    loc = text_of(child)
            elif code == PUBDATE and raw is None:
                text = (child.text or "").strip()
                if text:
                    raw, when = text, parse_rfc822(text)
                    if when is None:
                        # Some feeds put ISO dates in pubDate: read them as a lastmod would be.
                        when = sink.lastmod(text)[0]
            elif code == DATE and raw is None:
                when, raw = sink.lastmod(text_of(child))
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


# libxml2's resource limits (parserInternals.h), met with XML_PARSE_HUGE off (huge_tree=False):
# the words its message starts with, and the limit. The rest: XML_MAX_TEXT_LENGTH.
_LIMITS = (
    ("Excessive depth", "libxml2's limit of 256 nested elements, xmlParserMaxDepth"),
    ("Name too long", "libxml2's limit of 50,000 bytes for a name, XML_MAX_NAME_LENGTH"),
)
_TEXT_LIMIT = (
    "libxml2's limit of 10,000,000 bytes for one text node, attribute value, comment,"
    " CDATA section or PI, XML_MAX_TEXT_LENGTH"
)
_HUGE_HINTS = (", try XML_PARSE_HUGE", ", use XML_PARSE_HUGE option")


def _resource_limit(message: str, line: int, column: int) -> XmlTooLarge | None:
    """A libxml2 message that says a resource limit was met, as ``XmlTooLarge`` naming it."""
    if not (
        message.startswith("Resource limit exceeded")
        or "XML_PARSE_HUGE" in message
        or "too big" in message
        or "too long" in message
    ):
        return None
    what = message.removeprefix("Resource limit exceeded: ")
    for hint in _HUGE_HINTS:
        what = what.replace(hint, "")
    limit = next((name for start, name in _LIMITS if what.startswith(start)), _TEXT_LIMIT)
    return XmlTooLarge(
        f"{what} (over {limit}; harvester never turns on XML_PARSE_HUGE)",
        line=line,
        column=column,
    )


def _parse_error(message: str, line: int, column: int, *, truncated: bool) -> ParseError:
    """The error of a libxml2 message (trimmed) at a position; at the end of input, one
    saying the document stopped early is a ``TruncatedDocument``; one saying a resource
    limit was met an ``XmlTooLarge``."""
    message = message.strip()
    limit = _resource_limit(message, line, column)
    if limit is not None:
        return limit
    if truncated and ("Premature end" in message or "not found" in message):
        return TruncatedDocument(f"document ended early: {message}", line=line, column=column)
    return ParseError(f"malformed XML: {message}", line=line, column=column)


# A text sitemap lists a URL in its first MiB (sniff.MAX_PROLOG, the bound on an XML
# prolog too); more text than this without one is junk, given up before its end.
