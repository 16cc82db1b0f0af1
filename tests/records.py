"""Output records the tests share: two that every format must carry through (commas,
quotes, line breaks and nested fields: ``RECORDS``), and one made from an entry
(``sample_record``), for the encoder's and the sinks' tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from harvester.models import Image, UrlEntry
from harvester.urls.records import record

RECORDS: list[dict[str, Any]] = [
    {
        "loc": 'https://example.com/a,b"c"?q=1, 2',  # a comma and quotes
        "url": "https://example.com/a,b%22c%22?q=1,%202",
        "host": "example.com",
        "sitemap": "https://example.com/sitemap.xml",
        "source": "sitemap",
        "lastmod": "2024-01-01T10:00:00Z",
        "changefreq": "daily",
        "priority": 0.8,
        "images": [{"loc": "https://example.com/i.png", "caption": 'say "cheese", all'}],
        "alternates": [{"hreflang": "de", "href": "https://example.com/de/a"}],
        "event": "new",
    },
    {
        "loc": "https://example.com/ü\r\nx",  # a line break inside a field (quoted)
        "url": "https://example.com/%C3%BC%0D%0Ax",
        "host": "example.com",
        "sitemap": None,
        "source": "links",
        "lastmod": None,
        "changefreq": None,
        "priority": None,
        "news": {
            "name": "The Paper",
            "language": "en",
            "publication_date": "2024-05-01T00:00:00Z",
            "title": "Title, with a comma",
            "keywords": ["a", "b"],
        },
        "videos": [
            {
                "thumbnail_loc": "https://example.com/t.jpg",
                "title": "v",
                "publication_date": "2024-04-30T22:00:00Z",
                "tags": ["x"],
            }
        ],
        "since": "undated",
    },
]


def sample_record(i: int = 0) -> dict[str, Any]:
    """The record of a URL entry with a non-ASCII loc, quotes, a lastmod and an image."""
    entry = UrlEntry(
        loc=f'https://example.de/bücher/{i}?a=1&b="2"',
        lastmod=datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
        changefreq="daily",
        priority=0.5,
        images=(Image(loc="https://cdn.example.de/1.jpg", caption="line\nbreak"),),
    )
    return record(entry, "https://example.de/sitemap.xml", "example.de")
