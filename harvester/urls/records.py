"""The output record of one URL (or one index child), and its JSON line.

In: an entry from the reader plus the sitemap it came from. Out: the JSON-ready
dict whose field names are a contract (DESIGN.md, "Output record"), and its
encoding as one JSON line (``encode_record``; a batch: ``encode_records``), what
the sinks and the writer take:

``loc`` exactly as published; ``url`` its canonical form (the dedup key);
``host`` the site being harvested (whose sitemaps listed the URL; it differs
from the URL's own host for cross-host entries); ``sitemap`` the sitemap that
listed it; ``source`` how the URL was found (``"sitemap"``; ``"links"`` for the
links fallback); ``lastmod`` ISO-8601 UTC (``dates.format_utc_seconds``: whole seconds,
``YYYY-MM-DDTHH:MM:SSZ``) or null; ``changefreq``; ``priority``;
then extension fields only when present: ``images``, ``alternates``,
``videos``, ``news``. Index children carry ``"is_sitemap": true`` and no
changefreq/priority.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

import orjson

from harvester.dates import format_utc_seconds, format_utc_seconds_py, parse_lastmod
from harvester.models import SitemapChild, UrlEntry
from harvester.urls.normalize import canonical, host_of

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from harvester.models import Entry, Image, News, Video

__all__ = [
    "add_extensions",
    "encode_record",
    "encode_records",
    "iso_text",
    "lastmod_iso",
    "record",
]

_OPTIONS = orjson.OPT_APPEND_NEWLINE

# The compiled formatter beats a cache lookup; the Python one is memoised,
# for the sitemaps that repeat a handful of timestamps thousands of times.
lastmod_iso = (
    format_utc_seconds
    if format_utc_seconds is not format_utc_seconds_py
    else functools.lru_cache(8192)(format_utc_seconds)
)


def record(
    entry: Entry,
    sitemap: str | None,
    host: str | None = None,
    *,
    url: str | None = None,
    source: str = "sitemap",
) -> dict[str, Any]:
    """Build the output record for ``entry`` listed in ``sitemap`` while harvesting ``host``.

    ``host`` defaults to the URL's own host (the pipeline always passes the harvested host);
    ``url`` is the canonical form when the caller already computed it for dedup;
    ``source`` how the URL was found (``"sitemap"``, or ``"links"`` for the links fallback).
    """
    if url is None:
        url = canonical(entry.loc)
    if type(entry) is UrlEntry:
        # The per-URL case, unpacked in one step (nine field reads cost a third more).
        loc, lastmod, _raw, changefreq, priority, images, alternates, videos, news = entry
        out: dict[str, Any] = {
            "loc": loc,
            "url": url,
            "host": host if host is not None else host_of(url),
            "sitemap": sitemap,
            "source": source,
            "lastmod": lastmod_iso(lastmod) if lastmod is not None else None,
            "changefreq": changefreq,
            "priority": priority,
        }
        if images or alternates or videos or news is not None:
            add_extensions(out, entry)
        return out
    out = {
        "loc": entry.loc,
        "url": url,
        "host": host if host is not None else host_of(url),
        "sitemap": sitemap,
        "source": source,
        "lastmod": lastmod_iso(entry.lastmod) if entry.lastmod is not None else None,
    }
    if isinstance(entry, SitemapChild):
        out["is_sitemap"] = True
        return out
    out["changefreq"] = entry.changefreq
    out["priority"] = entry.priority
    add_extensions(out, entry)
    return out


def encode_record(record: Mapping[str, Any]) -> bytes:
    """Encode one record as a JSON line: UTF-8 without ASCII escapes, fields in the given order.

    orjson: an order of magnitude faster than ``json.dumps(...).encode()`` on our
    records. It writes NaN as null. A string holding a
    lone surrogate (which no UTF-8 can carry) falls back to ``json`` with
    ``\\uXXXX`` escapes, so one odd value never loses its record.

    >>> encode_record({"loc": "https://example.com/ü", "priority": 0.5})
    b'{"loc":"https://example.com/\\xc3\\xbc","priority":0.5}\\n'
    """
    try:
        return orjson.dumps(record, option=_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: surrogates, ints over 64 bits, non-str keys
        return json.dumps(record, separators=(",", ":")).encode("ascii") + b"\n"


def encode_records(records: Iterable[Mapping[str, Any]]) -> bytes:
    """Encode a batch of records as JSON lines, each as ``encode_record`` would.

    Why not ``b"".join(map(encode_record, records))``: that keeps every line's
    bytes object alive until the join, and orjson's output allocation is then
    several times slower than when each result is released before the next call.

    >>> encode_records([{"a": 1}, {"b": None}])
    b'{"a":1}\\n{"b":null}\\n'
    """
    out = bytearray()
    append = out.extend
    dumps = orjson.dumps
    for record in records:
        try:
            append(dumps(record, option=_OPTIONS))
        except TypeError:  # as in encode_record
            append(encode_record(record))
    return bytes(out)


def add_extensions(out: dict[str, Any], entry: UrlEntry) -> None:
    """Add the extension fields ``entry`` has (images, alternates, videos, news) to ``out``."""
    if entry.images:
        out["images"] = [_image(i) for i in entry.images]
    if entry.alternates:
        out["alternates"] = [{"hreflang": lang, "href": href} for lang, href in entry.alternates]
    if entry.videos:
        out["videos"] = [_video(v) for v in entry.videos]
    if entry.news is not None:
        out["news"] = _news(entry.news)


def _image(image: Image) -> dict[str, Any]:
    return {k: v for k, v in image._asdict().items() if v is not None}


def _video(video: Video) -> dict[str, Any]:
    out = {k: getattr(video, k) for k in video.__slots__ if getattr(video, k) not in (None, ())}
    if video.tags:
        out["tags"] = list(video.tags)
    # The two dates as every other date of a record (format_utc_seconds), so a reader
    # parses one form and Parquet holds a timestamp; a date that is not one is left out
    # (as a field the sitemap did not give).
    for key in ("publication_date", "expiration_date"):
        if key in out:
            when = iso_text(out[key])
            if when is None:
                del out[key]
            else:
                out[key] = when
    return out


def iso_text(raw: str) -> str | None:
    """A date as published (W3C Datetime, or a lenient form) as ``format_utc_seconds``;
    None if it is not a date."""
    when = parse_lastmod(raw)[0]
    return None if when is None else format_utc_seconds(when)


def _news(news: News) -> dict[str, Any]:
    return {
        "name": news.name,
        "language": news.language,
        "publication_date": (
            format_utc_seconds(news.publication_date) if news.publication_date is not None else None
        ),
        "title": news.title,
        # The optional ones only when the sitemap gave them (fields appear, never null).
        **({"keywords": list(news.keywords)} if news.keywords else {}),
        **({"genres": news.genres} if news.genres else {}),
        **({"stock_tickers": list(news.stock_tickers)} if news.stock_tickers else {}),
        **({"access": news.access} if news.access else {}),
    }
