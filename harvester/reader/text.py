"""Parse stage, text sitemaps: one URL a line, fed in any split.

In: decoded (gunzipped) bytes of a document ``sniff`` found to be text, and its
encoding. Out: a ``UrlEntry`` per URL line (through the ``EntrySink``, which checks
and counts each loc), as soon as its line ends; ``NotASitemap`` when the text has
no URL line at all (an error page, a "Service Unavailable").
"""

from __future__ import annotations

import codecs
import re
from typing import TYPE_CHECKING

from harvester.errors import NotASitemap
from harvester.models import UrlEntry

if TYPE_CHECKING:
    from harvester.models import Entry
    from harvester.reader.entries import EntrySink

__all__ = ["TextSitemapParser"]

_JUNK_TEXT = 1 << 20
_URL_LINE = re.compile(r"https?://", re.IGNORECASE).match  # what makes a line a URL line


class TextSitemapParser:
    """Plain-text sitemap: one URL per line; blank, comment and junk lines skipped.

    Lines may end in LF, CRLF or CR. A line longer than the URL cap is dropped
    without buffering it whole. Text with no URL line at all (an error message,
    "Service Unavailable") is no sitemap: ``NotASitemap`` at the end, or once its
    first MiB had none.
    """

    def __init__(self, sink: EntrySink, max_line: int, *, encoding: str | None = None) -> None:
        self._sink = sink
        self._max_line = max_line
        self._decoder = codecs.getincrementaldecoder(encoding or "utf-8-sig")(errors="replace")
        self._pending = ""  # the unfinished last line
        self._skipping = False  # inside an over-long line: drop until its end
        self._url_line = False  # a line started with http(s):// (kept or dropped)
        self._text = 0  # characters read before one did
        self._first = ""  # the first non-blank line, for the NotASitemap message

    def feed(self, data: bytes, out: list[Entry]) -> None:
        """Feed bytes; append the URLs on the lines completed by them to ``out``."""
        text = self._decoder.decode(data)
        self._lines(text, out, final=False)
        if not self._url_line:
            self._text += len(text)
            if self._text > _JUNK_TEXT and not _URL_LINE(self._pending.lstrip()):
                raise self._junk(f"in its first {_JUNK_TEXT:,} characters")

    def close(self, out: list[Entry]) -> None:
        """Signal end of input; append the URL on the last line, if any."""
        self._lines(self._decoder.decode(b"", final=True), out, final=True)
        if not self._url_line:
            raise self._junk("")

    def _junk(self, where: str) -> NotASitemap:
        where = f" {where}" if where else ""
        return NotASitemap(f"plain text with no URL line{where} (it begins {self._first!r})")

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
            if not stripped:
                continue
            if not self._url_line:
                if not self._first:
                    self._first = stripped[:60]
                if _URL_LINE(stripped):
                    self._url_line = True
            if stripped.startswith("#"):
                continue
            loc = sink.accept(stripped)
            if loc is not None:
                sink.count()
                out.append(UrlEntry(loc))
        if len(self._pending) > self._max_line:
            # Do not buffer a runaway line: drop it now and skip its remainder.
            if not self._url_line and _URL_LINE(self._pending.lstrip()):
                self._url_line = True  # an over-long URL is still a URL line
            self._pending = ""
            if not self._skipping:
                sink.stats.dropped_too_long += 1
            self._skipping = True
