"""Parse stage helpers: Google sitemap extensions (video, news) of one ``<url>``.

In: the ``video:video`` / ``news:news`` element (already complete). Out: frozen
``Video`` / ``News`` values with trimmed text, empty values as None. (Images,
far commoner, are read inline in ``parse.XmlSitemapParser._url`` for speed.)
Sub-elements match on local name: they live in the extension's namespace,
whatever prefix the document chose.

These are the reference: ``harvester/reader/_cwalk.pyx`` (``_video``, ``_news``) reads
the same from libxml2's nodes, and the parity tests (tests/unit/reader/test_cparse.py,
test_cwalk_extensions.py) hold the two together; a change here needs the same there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvester.dates import parse_lastmod
from harvester.models import News, Video

if TYPE_CHECKING:
    from lxml import etree

__all__ = ["parse_news", "parse_video"]

_VIDEO_FIELDS = frozenset(
    (
        "thumbnail_loc",
        "title",
        "description",
        "content_loc",
        "player_loc",
        "duration",
        "publication_date",
        "expiration_date",
        "family_friendly",
        "live",
    )
)


_NEWS_FIELDS = frozenset(
    ("publication_date", "title", "keywords", "genres", "stock_tickers", "access")
)


def _fields(el: etree._Element, wanted: frozenset[str]) -> dict[str, str]:
    """Trimmed, non-empty text of the wanted direct children, first occurrence wins."""
    found: dict[str, str] = {}
    for child in el:
        tag = child.tag
        if not isinstance(tag, str):
            continue
        local = tag.rpartition("}")[2]
        if local in wanted and local not in found:
            text = "".join(child.itertext()).strip() if len(child) else (child.text or "").strip()
            if text:
                found[local] = text
    return found


def parse_video(el: etree._Element) -> Video:
    """One ``video:video``; every field optional (values kept as published, trimmed)."""
    f = _fields(el, _VIDEO_FIELDS)
    tags = tuple(
        (child.text or "").strip()
        for child in el
        if isinstance(child.tag, str) and child.tag.endswith("}tag") and (child.text or "").strip()
    )
    return Video(
        thumbnail_loc=f.get("thumbnail_loc"),
        title=f.get("title"),
        description=f.get("description"),
        content_loc=f.get("content_loc"),
        player_loc=f.get("player_loc"),
        duration=f.get("duration"),
        publication_date=f.get("publication_date"),
        expiration_date=f.get("expiration_date"),
        family_friendly=f.get("family_friendly"),
        live=f.get("live"),
        tags=tags,
    )


def parse_news(el: etree._Element) -> News:
    """The ``news:news`` block: publication name/language, date (parsed as W3C), title,
    and the optional keywords, genres, stock tickers and access."""
    f = _fields(el, _NEWS_FIELDS)
    name = language = None
    for child in el:
        if isinstance(child.tag, str) and child.tag.endswith("}publication"):
            p = _fields(child, frozenset(("name", "language")))
            name, language = p.get("name"), p.get("language")
            break
    raw = f.get("publication_date")
    return News(
        name=name,
        language=language,
        publication_date=parse_lastmod(raw)[0] if raw else None,
        publication_date_raw=raw,
        title=f.get("title"),
        keywords=_split(f.get("keywords")),
        genres=f.get("genres"),
        stock_tickers=_split(f.get("stock_tickers")),
        access=f.get("access"),
    )


def _split(text: str | None) -> tuple[str, ...]:
    """A comma-separated list as published, each item trimmed, empty items dropped."""
    if not text:
        return ()
    return tuple(item for part in text.split(",") if (item := part.strip()))
