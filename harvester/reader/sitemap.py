"""The streaming reader: decompress → sniff → parse, for one document.

In: the body of one sitemap as byte chunks of any size (after HTTP
content-encoding was undone). Out: entries as soon as they are complete, and
at the end a ``ReadResult`` (kind, stats, error). Sync and free of I/O, so the
fetch stage can drive it from a socket and tests from plain bytes.

``feed`` never raises a ``HarvesterError``: the first error is stored, later
input is ignored, and ``failed`` tells the caller it may stop downloading.
Everything yielded before the error stays valid (the result is ``partial``).

Example::

    reader = SitemapReader("https://example.com/sitemap.xml.gz")
    async for chunk in response.content.iter_chunked(65536):
        for entry in reader.feed(chunk):
            handle(entry)
        if reader.failed:
            break
    tail = reader.finish()   # entries completed by the end of input
    result = reader.result()  # result.status in {"ok", "partial", "error"}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvester.config import ReaderConfig
from harvester.config.crawl import PROTOCOL_MAX_BYTES
from harvester.errors import HarvesterError
from harvester.models import Kind, ReadResult, ReadStats
from harvester.reader.decompress import GzipStream
from harvester.reader.parse import EntrySink, XmlSitemapParser
from harvester.reader.sniff import MAX_PROLOG, sniff
from harvester.reader.text import TextSitemapParser
from harvester.reader.utf8 import Utf8Repair

if TYPE_CHECKING:
    from collections.abc import Iterable

    from harvester.models import Entry

__all__ = ["UTF8_VIOLATION", "SitemapReader", "read_bytes"]

# The protocol violation flagged when bytes of a UTF-8 document were not (utf8.py).
UTF8_VIOLATION = "bytes that are not UTF-8 (percent-escaped)"


class SitemapReader:
    """Incremental reader for one sitemap document (any kind, gzip or not)."""

    def __init__(
        self, url: str | None = None, cfg: ReaderConfig | None = None, *, dedupe: bool = True
    ) -> None:
        """``dedupe=False`` keeps repeated locs (for callers that deduplicate themselves)."""
        self.url = url
        cfg = cfg or ReaderConfig()
        self.stats = ReadStats()
        self._gzip = GzipStream(cfg.max_decompressed_bytes)
        self._sink = EntrySink(self.stats, cfg, dedupe=dedupe)
        self._max_url_length = cfg.max_url_length
        self._extensions = cfg.extensions
        self._head = b""  # bytes held until sniff() can decide the kind
        self._parser: XmlSitemapParser | TextSitemapParser | None = None
        self._start_at = 0  # offset in _head where the parser starts (past BOM/junk)
        self._kind: Kind | None = None
        self._utf8: Utf8Repair | None = None  # for a document read as UTF-8 (sniff says)
        self._error: HarvesterError | None = None
        self._closed = False

    @property
    def failed(self) -> bool:
        """True once an error ended this document; further input is ignored."""
        return self._error is not None

    @property
    def kind(self) -> Kind | None:
        """The sniffed kind, once known."""
        return self._kind

    def feed(self, chunk: bytes) -> list[Entry]:
        """Feed one chunk of the body; return the entries it completed."""
        if self._error is not None or self._closed:
            return []
        self.stats.bytes_in += len(chunk)
        out: list[Entry] = []
        try:
            for data in self._gzip.feed(chunk):
                self._parse(data, out)
        except HarvesterError as exc:
            self._fail(exc)
        return out

    def finish(self) -> list[Entry]:
        """Signal end of body; return the entries completed by it (then call ``result()``)."""
        out: list[Entry] = []
        if self._closed:
            return out
        self._closed = True
        if self._error is not None:
            return out
        try:
            for data in self._gzip.flush():
                self._parse(data, out)
            parser = self._parser
            if parser is None:
                parser = self._start(final=True)
                assert parser is not None  # sniff(final=True) decides or raises
                parser.feed(self._repaired(self._take_head()), out)
            tail = self._repaired(b"", end=True)  # a UTF-8 sequence cut by the end
            if tail:
                parser.feed(tail, out)
            parser.close(out)
        except HarvesterError as exc:
            self._fail(exc)
        return out

    def result(self) -> ReadResult:
        """The document's outcome; valid after ``finish()``."""
        stats = self.stats
        stats.gzip_layers = self._gzip.layers
        stats.bytes_out = self._gzip.bytes_out
        for warning in self._gzip.warnings:
            if warning not in stats.warnings:
                stats.warnings.append(warning)
        violation = f"larger than {PROTOCOL_MAX_BYTES} bytes uncompressed"
        if stats.bytes_out > PROTOCOL_MAX_BYTES and violation not in stats.violations:
            # Reachable only when reader.max_decompressed_bytes is raised above the protocol limit.
            stats.violations.append(violation)
        channel = (
            self._parser.channel_lastmod if isinstance(self._parser, XmlSitemapParser) else None
        )
        return ReadResult(self.url, self._kind, stats, self._error, channel)

    def _parse(self, data: bytes, out: list[Entry]) -> None:
        parser = self._parser
        if parser is None:
            self._head += data
            parser = self._start(final=False)
            if parser is None:
                return
            data = self._take_head()
        parser.feed(self._repaired(data), out)

    def _repaired(self, data: bytes, *, end: bool = False) -> bytes:
        """``data`` with its bytes that are not UTF-8 escaped, in a document read as UTF-8
        (flagged once); ``end``: the bytes held back at the end of input instead."""
        repair = self._utf8
        if repair is None:
            return data
        data = repair.flush() if end else repair.feed(data)
        if repair.repaired and UTF8_VIOLATION not in self.stats.violations:
            self.stats.violations.append(UTF8_VIOLATION)
        return data

    def _take_head(self) -> bytes:
        """The buffered head from where the parser must start; empties the buffer."""
        data, self._head = self._head[self._start_at :], b""
        return data

    def _start(self, *, final: bool) -> XmlSitemapParser | TextSitemapParser | None:
        """Sniff the buffered head; create and return the parser once the kind is known."""
        sniffed = sniff(self._head, final=final or len(self._head) > MAX_PROLOG)
        if sniffed is None:
            return None
        self._kind = sniffed.kind
        self.stats.warnings.extend(sniffed.warnings)
        self._start_at = sniffed.start
        if sniffed.utf8:
            self._utf8 = Utf8Repair()
        if sniffed.kind is Kind.TEXT:
            self._parser = TextSitemapParser(
                self._sink, self._max_url_length, encoding=sniffed.encoding
            )
        else:
            self._parser = XmlSitemapParser(
                sniffed.kind, self._sink, encoding=sniffed.encoding, extensions=self._extensions
            )
        return self._parser

    def _fail(self, exc: HarvesterError) -> None:
        if exc.url is None:
            exc.url = self.url
        self._error = exc


def read_bytes(
    chunks: Iterable[bytes] | bytes, url: str | None = None, cfg: ReaderConfig | None = None
) -> tuple[list[Entry], ReadResult]:
    """Read a whole document given as bytes or chunks; return (entries, result)."""
    reader = SitemapReader(url, cfg)
    entries: list[Entry] = []
    for chunk in [chunks] if isinstance(chunks, bytes) else chunks:
        entries.extend(reader.feed(chunk))
    entries.extend(reader.finish())
    return entries, reader.result()
