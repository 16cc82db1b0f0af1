"""Google News fields of a ``<url>``: every field the extension defines is kept when present
(issue 30 item 10: keywords, genres, stock tickers and access were lost)."""

from __future__ import annotations

import json

import pytest

from harvester.models import UrlEntry
from harvester.reader.sitemap import read_bytes
from harvester.urls.records import record

NEWS = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:n="http://www.google.com/schemas/sitemap-news/0.9">
<url><loc>https://news.example/a</loc>
  <n:news>
    <n:publication><n:name>The Example Times</n:name><n:language>en</n:language></n:publication>
    <n:access>Subscription</n:access>
    <n:genres>PressRelease, Blog</n:genres>
    <n:publication_date>2024-03-01T10:00:00+01:00</n:publication_date>
    <n:title>Companies A, B in Merger Talks</n:title>
    <n:keywords> business, merger, , acquisition,A </n:keywords>
    <n:stock_tickers>NASDAQ:A, NASDAQ:B</n:stock_tickers>
  </n:news>
</url>
<url><loc>https://news.example/b</loc>
  <n:news><n:publication><n:name>X</n:name><n:language>de</n:language></n:publication>
  <n:publication_date>2024-03-02</n:publication_date><n:title>Plain</n:title></n:news>
</url>
</urlset>"""


@pytest.fixture
def records() -> list[dict[str, object]]:
    entries, result = read_bytes(NEWS, "https://news.example/news.xml")
    assert result.status == "ok"
    return [
        json.loads(json.dumps(record(e, "https://news.example/news.xml", "news.example")))
        for e in entries
        if isinstance(e, UrlEntry)
    ]


def test_every_news_field_is_kept(records: list[dict[str, object]]) -> None:
    assert records[0]["news"] == {
        "name": "The Example Times",
        "language": "en",
        "publication_date": "2024-03-01T09:00:00Z",
        "title": "Companies A, B in Merger Talks",
        "keywords": ["business", "merger", "acquisition", "A"],
        "genres": "PressRelease, Blog",
        "stock_tickers": ["NASDAQ:A", "NASDAQ:B"],
        "access": "Subscription",
    }


def test_absent_optional_fields_are_absent_not_null(records: list[dict[str, object]]) -> None:
    assert records[1]["news"] == {
        "name": "X",
        "language": "de",
        "publication_date": "2024-03-02T00:00:00Z",
        "title": "Plain",
    }
