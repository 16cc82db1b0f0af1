"""harvester.audit.pagedates: modification dates (and a fingerprint) from real-looking pages."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import orjson
import pytest

from harvester.audit.content import simhash
from harvester.audit.pagedates import PageSignals, extract_signals, parse_web_date
from tests.unit.audit.samples import FETCHED, WORDPRESS

YOAST = b"""<html><head>
<script type="application/ld+json" class="yoast-schema-graph">{"@context":"https://schema.org",
"@graph":[
 {"@type":"Article","@id":"https://news.example/a/#article","headline":"Budget",
  "datePublished":"2024-03-01T08:00:00+00:00","dateModified":"2024-03-05T14:22:10+00:00",
  "author":{"@type":"Person","name":"Ann"}},
 {"@type":["WebPage","FAQPage"],"@id":"https://news.example/a/","url":"https://news.example/a/",
  "datePublished":"2024-03-01T08:00:00+00:00","dateModified":"2024-03-05T14:22:11+00:00"},
 {"@type":"ImageObject","url":"https://news.example/i.jpg","dateModified":"2025-01-01T00:00:00Z"},
 {"@type":"WebSite","@id":"https://news.example/#website","name":"News"},
 {"@type":"Organization","name":"News Ltd","logo":{"@type":"ImageObject","url":"x"}}
]}</script>
</head><body><p>Body text of the article.</p></body></html>"""


# --- dates ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected", "date_only"),
    [
        ("2024-03-05T14:22:10+00:00", datetime(2024, 3, 5, 14, 22, 10, tzinfo=UTC), False),
        ("2024-03-05T15:22:10+01:00", datetime(2024, 3, 5, 14, 22, 10, tzinfo=UTC), False),
        ("2024-03-05T14:22:10.123Z", datetime(2024, 3, 5, 14, 22, 10, 123000, tzinfo=UTC), False),
        ("2024-03-05T16:22:10+0200", datetime(2024, 3, 5, 14, 22, 10, tzinfo=UTC), False),
        ("2024-03-05T09:22:10-05", datetime(2024, 3, 5, 14, 22, 10, tzinfo=UTC), False),
        ("2024-03-05 14:22:10", datetime(2024, 3, 5, 14, 22, 10, tzinfo=UTC), False),
        ("  2024-03-05\n", datetime(2024, 3, 5, tzinfo=UTC), True),
        ("Tue, 05 Mar 2024 14:22:10 GMT", datetime(2024, 3, 5, 14, 22, 10, tzinfo=UTC), False),
    ],
)
def test_web_date_forms_parse_to_utc(raw: str, expected: datetime, date_only: bool) -> None:
    assert parse_web_date(raw) == (expected, date_only)


@pytest.mark.parametrize("raw", ["", "yesterday", "05/03/2024", "2024-13-01", "9" * 200])
def test_unparseable_web_dates_are_none(raw: str) -> None:
    assert parse_web_date(raw) is None


def test_wordpress_page_gives_meta_signals_and_header() -> None:
    s = extract_signals(
        WORDPRESS, {"Content-Type": "text/html", "last-modified": "Tue, 05 Mar 2024 14:22:12 GMT"}
    )
    expected = datetime(2024, 3, 5, 14, 22, 10, tzinfo=UTC)
    assert s.article_modified_time is not None
    assert s.article_modified_time.value == expected
    assert s.article_modified_time.raw == "2024-03-05T14:22:10+00:00"
    assert s.og_updated_time is not None
    assert s.og_updated_time.value == expected  # +01:00 converted to UTC
    assert s.http_last_modified is not None
    assert s.http_last_modified.value == expected + timedelta(seconds=2)
    assert s.json_ld is None
    assert s.itemprop is None
    assert [sig.source for sig in s.signals()] == [
        "article_modified_time",
        "og_updated_time",
        "http_last_modified",
    ]


def test_yoast_graph_takes_the_latest_page_entity_date() -> None:
    s = extract_signals(YOAST)
    assert s.json_ld is not None
    # The WebPage (a @type list) is a second later than the Article; the later
    # ImageObject date is not the page's and is ignored.
    assert s.json_ld.value == datetime(2024, 3, 5, 14, 22, 11, tzinfo=UTC)
    assert s.json_ld.source == "json_ld"


def test_json_ld_arrays_nesting_and_broken_blocks() -> None:
    page = b"""<html><head>
    <script type="application/ld+json">{"broken": </script>
    <script type="application/ld+json; charset=utf-8">[
      {"@type": "Organization", "name": "x"},
      {"@type": "WebPage",
       "mainEntity": {"@type": "NewsArticle", "dateModified": "2023-07-01T10:00:00Z"}}
    ]</script>
    <script type="text/javascript">var dateModified = "2030-01-01";</script>
    </head><body></body></html>"""
    s = extract_signals(page)
    assert s.json_ld is not None
    assert s.json_ld.value == datetime(2023, 7, 1, 10, tzinfo=UTC)


def test_json_ld_without_page_entity_falls_back_to_latest_sensible_date() -> None:
    page = b"""<script type="application/ld+json">{"@graph": [
      {"@type": "Product", "dateModified": "2022-01-01"},
      {"@type": "Product", "dateModified": "2023-02-02"},
      {"@type": "Product", "dateModified": 20240101},
      {"@type": "Product", "dateModified": "0001-01-01"},
      {"@type": "Product", "dateModified": "2099-01-01"}]}</script>"""
    s = extract_signals(page, fetched_at=FETCHED)
    assert s.json_ld is not None
    # Non-strings, pre-1995 placeholders and dates after the fetch are not sensible.
    assert s.json_ld.value == datetime(2023, 2, 2, tzinfo=UTC)
    assert s.json_ld.date_only


def test_itemprop_time_and_other_elements() -> None:
    time_el = (
        b'<article><time itemprop="dateModified" datetime="2024-05-06T07:08:09+02:00">'
        b"6 May</time></article>"
    )
    s = extract_signals(time_el)
    assert s.itemprop is not None
    assert s.itemprop.value == datetime(2024, 5, 6, 5, 8, 9, tzinfo=UTC)
    meta_el = (
        b'<div itemscope><meta itemprop="datePublished dateModified" content="2024-05-06"></div>'
    )
    assert extract_signals(meta_el).itemprop is not None
    text_only = b'<span itemprop="dateModified"> 2024-05-06T07:08:09Z </span>'
    s = extract_signals(text_only)
    assert s.itemprop is not None
    assert s.itemprop.value == datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)


def test_page_without_any_date_has_no_signals_but_a_fingerprint() -> None:
    s = extract_signals(b"<html><body><p>Just some text, no dates at all.</p></body></html>")
    assert list(s.signals()) == []
    assert s.fingerprint is not None
    assert s.words == 7
    assert not s.parse_failed


def test_charset_from_the_header_decodes_the_text() -> None:
    body = "<p>Grüße aus Köln</p>".encode("latin-1")
    latin = extract_signals(body, {"Content-Type": "text/html; charset=ISO-8859-1"})
    assert latin.fingerprint == simhash(["grüße", "aus", "köln"])
    bogus = extract_signals(body, {"content-type": "text/html; charset=no-such-charset"})
    assert bogus.words == 3  # an unknown charset falls back to detection, never raises


def test_dynamic_last_modified_equal_to_fetch_time_is_dropped() -> None:
    now = "Mon, 30 Nov 2026 12:00:01 GMT"
    assert (
        extract_signals(b"<p>x</p>", {"Last-Modified": now}, fetched_at=FETCHED).http_last_modified
        is None
    )
    old = "Mon, 30 Nov 2026 11:00:00 GMT"
    assert extract_signals(
        b"<p>x</p>", {"Last-Modified": old}, fetched_at=FETCHED
    ).http_last_modified


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"   \n ",
        b"\x00" * 100,
        random.Random(1).randbytes(20_000),
        b"<html><head><meta property='article:modified_time' content=",
        b"\xff\xfe<\x00h\x00t\x00m\x00l\x00>",
        b'<script type="application/ld+json">' + b"[" * 100_000 + b"</script>",
        b"<div>" * 50_000,
    ],
    ids=["empty", "blank", "nul", "random", "cut", "utf16", "deep-json", "deep-html"],
)
def test_garbage_never_raises(body: bytes) -> None:
    s = extract_signals(body, {"Last-Modified": "not a date"})
    assert isinstance(s, PageSignals)
    assert s.http_last_modified is None
    assert s.json_ld is None


def test_huge_page_is_capped() -> None:
    article = b"<p>" + b"lorem ipsum dolor sit amet " * 90_000 + b"</p>"  # 2.4 MB
    late_date = b'<meta property="article:modified_time" content="2024-01-01">'
    s = extract_signals(b"<html><body>" + article + late_date + b"</body></html>")
    assert s.truncated
    assert s.article_modified_time is None  # beyond the cap: never read
    assert s.fingerprint is not None
    small = extract_signals(b"<html><body>" + article + late_date, max_bytes=100 * 1024 * 1024)
    assert not small.truncated
    assert small.article_modified_time is not None


def test_signals_as_dict_is_json_ready() -> None:
    d = orjson.loads(orjson.dumps(extract_signals(YOAST).as_dict()))
    assert d["json_ld"] == "2024-03-05T14:22:11Z"
    assert d["article_modified_time"] is None
    assert len(d["fingerprint"]) == 16
