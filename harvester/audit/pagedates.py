"""Lastmod audit, part 2: what does the page itself say about its last change? (issue 7)

Pure and I/O-free: the sampled-verification fetcher hands over a page's body
and headers; nothing here touches the network.

In: an HTML page's bytes (only the first ``max_bytes`` are read) and its HTTP
response headers. Out: ``PageSignals``, each independent modification-date
signal as a UTC ``Signal`` (or None) and a 64-bit simhash ``fingerprint`` of
the page's main text (``audit/content.py``, whose ``distance()`` /
``content_changed()`` compare fingerprints across runs); ``compare()`` in
``audit/agreement.py`` checks a sitemap lastmod against them.

Signals (``Signal.source``): ``json_ld`` (schema.org ``dateModified`` in
``<script type="application/ld+json">``), ``itemprop`` (microdata
``itemprop="dateModified"``), ``article_modified_time``
(``<meta property="article:modified_time">``), ``og_updated_time``
(``<meta property="og:updated_time">``) and ``http_last_modified``.

Parsing is hardened and total: lxml's HTML parser with ``no_network`` and
``recover`` (libxml2's HTML parser never loads a DTD or external entity, so
there is nothing else to switch off), comments and PIs dropped, and any
parser failure gives an empty result, never an exception.

Example::

    signals = extract_signals(body, response.headers)
    result = compare(entry.lastmod, signals)                          # audit/agreement.py
    result.overall            # Agreement.AGREE / DISAGREE / NO_SIGNAL
    changed = content_changed(old_fingerprint, signals.fingerprint)   # audit/content.py
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from lxml import etree

from harvester.audit.content import MAX_FINGERPRINT_WORDS, main_words, simhash
from harvester.dates import format_utc, parse_lastmod

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = [
    "MAX_PAGE_BYTES",
    "SIGNAL_NAMES",
    "PageSignals",
    "Signal",
    "extract_signals",
    "parse_web_date",
]

# Only the head of a page is parsed: dates live in <head> and the first part of
# the body, and 2 MiB is the main text of any article many times over.
MAX_PAGE_BYTES = 2 * 1024 * 1024
# An HTTP Last-Modified this close to the fetch is "now" from a dynamic page,
# not a modification date, and is dropped.
_GENERATED_HEADER_WINDOW = timedelta(seconds=5)
# Dates outside this window are not sensible modification dates.
_OLDEST = datetime(1995, 1, 1, tzinfo=UTC)
_FUTURE_SKEW = timedelta(days=1)

_CHARSET = re.compile(r"""charset\s*=\s*["']?([\w.:-]{1,40})""", re.ASCII | re.IGNORECASE).search
_DATE_ONLY = re.compile(r"\d{4}(?:-\d{2}(?:-\d{2})?)?", re.ASCII).fullmatch
# "+01" (hour-only offset) is valid ISO 8601 and seen in the wild; W3C wants "+01:00".
_HOUR_OFFSET = re.compile(r"(T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?[+-]\d{2})$", re.ASCII)
# JSON-LD types whose dateModified is the page's own (the "main entity").
_PAGE_TYPES = frozenset(
    {
        "webpage",
        "itempage",
        "aboutpage",
        "faqpage",
        "qapage",
        "profilepage",
        "collectionpage",
        "article",
        "newsarticle",
        "blogposting",
        "reportagenewsarticle",
        "analysisnewsarticle",
        "opinionnewsarticle",
        "techarticle",
        "scholarlyarticle",
        "report",
        "socialmediaposting",
        "liveblogposting",
    }
)
_MAX_JSON_NODES = 10_000  # bounds the walk over a hostile JSON-LD block


@dataclass(frozen=True, slots=True)
class Signal:
    """One modification date found on a page: UTC value, text as found, where."""

    value: datetime
    raw: str
    source: str
    date_only: bool = False  # the page gave a day, not an instant


@dataclass(frozen=True, slots=True, kw_only=True)
class PageSignals:
    """Everything ``extract_signals`` found; a signal is None when absent or unparseable."""

    json_ld: Signal | None = None
    itemprop: Signal | None = None
    article_modified_time: Signal | None = None
    og_updated_time: Signal | None = None
    http_last_modified: Signal | None = None
    # simhash of the main text, numbers read as 0; None if it has no words.
    fingerprint: int | None = None
    words: int = 0  # words of main text (before the MAX_FINGERPRINT_WORDS cap)
    truncated: bool = False  # the body was longer than max_bytes
    parse_failed: bool = False  # no document could be built (garbage or empty)

    def signals(self) -> Iterator[Signal]:
        """Yield the signals present, in-page ones first."""
        for s in (
            self.json_ld,
            self.itemprop,
            self.article_modified_time,
            self.og_updated_time,
            self.http_last_modified,
        ):
            if s is not None:
                yield s

    def as_dict(self) -> dict[str, object]:
        """Return a JSON-ready dict (dates as ``format_utc``, fingerprint as 16 hex digits)."""
        out: dict[str, object] = {}
        for name in SIGNAL_NAMES:
            s: Signal | None = getattr(self, name)
            out[name] = None if s is None else format_utc(s.value)
        out["fingerprint"] = None if self.fingerprint is None else f"{self.fingerprint:016x}"
        out["words"] = self.words
        out["truncated"] = self.truncated
        out["parse_failed"] = self.parse_failed
        return out


SIGNAL_NAMES = (
    "json_ld",
    "itemprop",
    "article_modified_time",
    "og_updated_time",
    "http_last_modified",
)


def parse_web_date(raw: str) -> tuple[datetime, bool] | None:
    """Parse a date as pages publish it: ``(UTC datetime, date_only)`` or None.

    Takes what ``harvester.dates.parse_lastmod`` takes (W3C, the usual ISO 8601
    near-misses, RFC 822) plus an hour-only offset (``+01``).

    >>> parse_web_date("2024-03-05T10:00:00+01")
    (datetime.datetime(2024, 3, 5, 9, 0, tzinfo=datetime.timezone.utc), False)
    """
    text = raw.strip()
    if not text or len(text) > 64:
        return None
    dt, _ = parse_lastmod(_HOUR_OFFSET.sub(r"\1:00", text))
    if dt is None:
        return None
    return dt, _DATE_ONLY(text) is not None


def _signal(raw: object, source: str, now: datetime | None) -> Signal | None:
    if not isinstance(raw, str):
        return None
    parsed = parse_web_date(raw)
    if parsed is None:
        return None
    value, date_only = parsed
    if value < _OLDEST or (now is not None and value > now + _FUTURE_SKEW):
        return None
    return Signal(value, raw.strip(), source, date_only)


def extract_signals(
    body: bytes,
    headers: Mapping[str, str] | None = None,
    *,
    fetched_at: datetime | None = None,
    max_bytes: int = MAX_PAGE_BYTES,
) -> PageSignals:
    """Extract modification-date signals and a main-text fingerprint from a page.

    ``fetched_at`` (aware) drops dates after it (beyond a day) and an HTTP
    Last-Modified within 5 s of it (a dynamic page's "now"). Never raises.

    >>> s = extract_signals(b'<meta property="article:modified_time" content="2024-01-02">')
    >>> s.article_modified_time.value.isoformat()
    '2024-01-02T00:00:00+00:00'
    """
    header, charset = None, None
    for name, value in (headers or {}).items():
        if name.lower() == "last-modified":
            header = _signal(value, "http_last_modified", fetched_at)
        elif name.lower() == "content-type":
            found = _CHARSET(value)
            charset = found.group(1) if found else None
    if (
        header is not None
        and fetched_at is not None
        and abs(header.value - fetched_at) <= _GENERATED_HEADER_WINDOW
    ):
        header = None
    truncated = len(body) > max_bytes
    root = _parse(body[:max_bytes], charset)
    if root is None:
        return PageSignals(http_last_modified=header, truncated=truncated, parse_failed=True)
    metas: dict[str, Signal | None] = {"article:modified_time": None, "og:updated_time": None}
    for meta in root.iter("meta"):
        key = (meta.get("property") or meta.get("name") or "").strip().lower()
        if key in metas and metas[key] is None:
            source = "article_modified_time" if key.startswith("article") else "og_updated_time"
            metas[key] = _signal(meta.get("content"), source, fetched_at)
    json_ld = _json_ld_signal(root, fetched_at)
    itemprop = _itemprop_signal(root, fetched_at)
    # Last: it strips <script> (JSON-LD) and other elements from the tree.
    words = main_words(root)
    return PageSignals(
        json_ld=json_ld,
        itemprop=itemprop,
        article_modified_time=metas["article:modified_time"],
        og_updated_time=metas["og:updated_time"],
        http_last_modified=header,
        fingerprint=simhash(words[:MAX_FINGERPRINT_WORDS]) if words else None,
        words=len(words),
        truncated=truncated,
    )


def _html_parser(encoding: str | None) -> etree.HTMLParser:
    return etree.HTMLParser(
        encoding=encoding,
        recover=True,
        no_network=True,
        remove_comments=True,
        remove_pis=True,
        remove_blank_text=True,
        default_doctype=False,
        huge_tree=False,
    )


def _parse(data: bytes, charset: str | None = None) -> etree._Element | None:
    # A fresh parser per page: lxml parsers are not thread-safe, and this may
    # run in worker threads. The HTML parser resolves only HTML's own entities.
    try:
        # The header's charset, when it names one lxml knows, so the text (and
        # so the fingerprint) does not depend on libxml2's guess, run to run.
        parser = _html_parser(charset)
    except LookupError:
        parser = _html_parser(None)
    try:
        # None, despite the stubs, when recovery leaves nothing (e.g. only whitespace).
        root: etree._Element | None = etree.fromstring(data, parser)
    except (etree.LxmlError, ValueError):  # ValueError: e.g. bytes lxml refuses outright
        return None
    return root


def _itemprop_signal(root: etree._Element, now: datetime | None) -> Signal | None:
    # Microdata: the value is @datetime on <time>, @content on <meta> and
    # others, else the element's text (the microdata spec's order).
    # XPath filters in C; most elements of a large page carry no itemprop.
    candidates = root.xpath("//*[@itemprop]")
    if not isinstance(candidates, list):
        return None
    for el in candidates:
        if not isinstance(el, etree._Element):
            continue
        if "datemodified" not in (el.get("itemprop") or "").lower().split():
            continue
        raw = el.get("datetime") or el.get("content") or "".join(el.itertext())
        found = _signal(raw, "itemprop", now)
        if found is not None:
            return found
    return None


def _json_ld_signal(root: etree._Element, now: datetime | None) -> Signal | None:
    """The main entity's dateModified, else the latest sensible one of any node.

    The main entity is any node of a page or article type (``WebPage``,
    ``Article``, ``NewsArticle``…; Yoast's ``@graph`` has both, normally
    equal). Among several, the latest wins: a page is as new as its newest
    part, and the sitemap lastmod should say so.
    """
    main: list[Signal] = []
    other: list[Signal] = []
    for script in root.iter("script"):
        kind = (script.get("type") or "").split(";")[0].strip().lower()
        if kind != "application/ld+json" or not script.text:
            continue
        try:
            data = json.loads(script.text, strict=False)  # strict=False: raw newlines in strings
        except (ValueError, RecursionError):
            continue
        for node in _json_nodes(data):
            found = _signal(node.get("dateModified"), "json_ld", now)
            if found is None:
                continue
            types = node.get("@type")
            names = types if isinstance(types, list) else [types]
            is_page = any(isinstance(t, str) and t.lower() in _PAGE_TYPES for t in names)
            (main if is_page else other).append(found)
    best = main or other
    return max(best, key=lambda s: s.value) if best else None


def _json_nodes(data: object) -> Iterator[dict[str, object]]:
    # Iterative walk over every object (top level, arrays, @graph, nested
    # values), bounded so a hostile block cannot make it run long.
    stack = [data]
    seen = 0
    while stack and seen < _MAX_JSON_NODES:
        item = stack.pop()
        seen += 1
        if isinstance(item, dict):
            yield item
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
