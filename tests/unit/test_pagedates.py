"""harvester.audit.pagedates: modification dates and a text fingerprint from real-looking pages."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from lxml import etree

from harvester.audit.pagedates import (
    CHANGED_THRESHOLD,
    Agreement,
    PageSignals,
    Signal,
    compare,
    content_changed,
    distance,
    extract_signals,
    main_text,
    parse_web_date,
    simhash,
)

FETCHED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

WORDPRESS = b"""<!DOCTYPE html>
<html lang="en-US">
<head>
<meta charset="UTF-8">
<title>Council approves transport budget &#8211; City News</title>
<meta property="og:type" content="article" />
<meta property="og:title" content="Council approves transport budget" />
<meta property="article:published_time" content="2024-03-01T08:00:00+00:00" />
<meta property="article:modified_time" content="2024-03-05T14:22:10+00:00" />
<meta property="og:updated_time" content="2024-03-05T15:22:10+01:00" />
<link rel="stylesheet" href="/wp-content/themes/news/style.css">
<script>window.dataLayer = window.dataLayer || [];</script>
</head>
<body class="post-template-default single single-post">
<header id="masthead"><nav><a href="/">Home</a> <a href="/city">City</a></nav></header>
<main><article>
<h1 class="entry-title">Council approves transport budget</h1>
<p>The city council voted on Tuesday to approve a new budget for public transport.</p>
<p>Residents said buses were often late &amp; crowded.</p>
<span class="views">1,234 views</span>
</article></main>
<aside class="widget"><h2>Popular</h2><ul><li>Other story</li></ul></aside>
<footer>&copy; 2024 City News</footer>
</body></html>"""

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


def test_wordpress_main_text_drops_boilerplate() -> None:
    root = etree.fromstring(WORDPRESS, etree.HTMLParser())
    text = main_text(root)
    assert text.startswith("council approves transport budget the city council voted")
    assert "residents said buses were often late & crowded." in text
    for boilerplate in ("home", "popular", "other story", "city news", "datalayer"):
        assert boilerplate not in text
    assert root.find(".//nav") is not None  # main_text works on a copy


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


# --- fingerprint --------------------------------------------------------------------------

TEXT = (
    "the city council voted on tuesday to approve a new budget for public transport after "
    "months of debate residents said buses were often late and crowded while officials "
    "promised more frequent service on main routes the plan includes new electric vehicles "
    "cycle lanes and repairs to stations which critics called overdue mayor said funding "
    "would come from regional grants and a small increase in parking fees opposition members "
    "argued that the costs were underestimated and asked for an independent review"
)
VOCAB = TEXT.split()


def paragraphs(seed: int, n: int = 8, words: int = 60) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(VOCAB) for _ in range(words)) for _ in range(n)]


def article_page(paras: list[str], *, views: int = 1234, nav: str = "Home News Sport") -> bytes:
    body = "".join(f"<p>{p}.</p>" for p in paras)
    return (
        f"<html><body><nav>{nav}</nav><article><h1>Council approves budget</h1>{body}"
        f"<p>{views} views, {views // 100} comments</p></article>"
        f"<script>track({views})</script><footer>{nav}</footer></body></html>"
    ).encode()


def fp(page: bytes) -> int:
    f = extract_signals(page).fingerprint
    assert f is not None
    return f


SEEDS = range(30)


def test_counters_and_boilerplate_do_not_change_the_fingerprint() -> None:
    for seed in SEEDS:
        paras = paragraphs(seed)
        base = fp(article_page(paras))
        assert fp(article_page(paras, views=98_765)) == base
        assert fp(article_page(paras, nav="Home World Weather Login")) == base
        shouted = [p.upper().replace(" ", "  \n ") for p in paras]
        assert fp(article_page(shouted)) == base


def test_a_one_word_edit_is_not_a_content_change() -> None:
    for seed in SEEDS:
        paras = paragraphs(seed)
        edited = list(paras)
        words = edited[2].split()
        words[10] = "zebra"
        edited[2] = " ".join(words)
        assert not content_changed(fp(article_page(paras)), fp(article_page(edited))), seed


def test_real_edits_are_content_changes() -> None:
    changed_one = 0
    for seed in SEEDS:
        paras, other = paragraphs(seed), paragraphs(seed + 100)
        base = fp(article_page(paras))
        # A quarter of the text rewritten: always a change.
        assert content_changed(base, fp(article_page(paras[:3] + other[3:5] + paras[5:]))), seed
        # An eighth (one paragraph of eight): nearly always.
        changed_one += bool(
            content_changed(base, fp(article_page(paras[:3] + other[3:4] + paras[4:])))
        )
        # A different article entirely: far apart.
        assert distance(base, fp(article_page(other))) > 3 * CHANGED_THRESHOLD
    assert changed_one >= 0.8 * len(SEEDS)


def test_fingerprint_is_stable_across_processes() -> None:
    # blake2b-based, not hash(): the value is fixed, so runs can be compared.
    # Pinned: a change here invalidates every fingerprint kept in state files.
    assert simhash(["hello", "world", "again", "and", "again"]) == 0xECAC308A4D80BD83
    assert extract_signals(b"<p>Hello world</p>").fingerprint == simhash(["hello", "world"])


def test_distance_and_content_changed_helpers() -> None:
    assert distance(0, 0) == 0
    assert distance(0, (1 << 64) - 1) == 64
    assert content_changed(0, 0b111111) is False  # 6 bits: at the threshold
    assert content_changed(0, 0b1111111) is True
    assert content_changed(None, 5) is None
    assert extract_signals(b"<script>only code</script>").fingerprint is None


# --- compare ------------------------------------------------------------------------------

LASTMOD = datetime(2024, 3, 5, 14, 22, 10, tzinfo=UTC)


def test_compare_agrees_within_tolerance_and_reports_each_signal() -> None:
    s = extract_signals(WORDPRESS, {"Last-Modified": "Tue, 05 Mar 2024 18:00:00 GMT"})
    c = compare(LASTMOD + timedelta(minutes=1), s)
    assert c.overall is Agreement.AGREE
    assert c.per_signal == {
        "json_ld": Agreement.NO_SIGNAL,
        "itemprop": Agreement.NO_SIGNAL,
        "article_modified_time": Agreement.AGREE,
        "og_updated_time": Agreement.AGREE,
        "http_last_modified": Agreement.DISAGREE,
    }


def test_compare_generation_time_lastmod_disagrees() -> None:
    s = extract_signals(WORDPRESS)
    c = compare(FETCHED, s)
    assert c.overall is Agreement.DISAGREE
    assert compare(LASTMOD + timedelta(minutes=30), s).overall is Agreement.DISAGREE
    assert compare(LASTMOD + timedelta(minutes=30), s, timedelta(hours=1)).overall is (
        Agreement.AGREE
    )


def test_compare_date_only_uses_days() -> None:
    day = Signal(datetime(2024, 3, 5, tzinfo=UTC), "2024-03-05", "itemprop", date_only=True)
    s = PageSignals(itemprop=day)
    assert compare(LASTMOD, s).overall is Agreement.AGREE
    assert compare(LASTMOD + timedelta(days=1), s).overall is Agreement.AGREE  # time zones
    assert compare(LASTMOD + timedelta(days=3), s).overall is Agreement.DISAGREE
    instant = PageSignals(json_ld=Signal(LASTMOD + timedelta(hours=5), "x", "json_ld"))
    assert compare(datetime(2024, 3, 5, tzinfo=UTC), instant).overall is Agreement.DISAGREE
    assert compare(datetime(2024, 3, 5, tzinfo=UTC), instant, sitemap_date_only=True).overall is (
        Agreement.AGREE
    )


def test_compare_without_signal_or_lastmod() -> None:
    assert compare(LASTMOD, PageSignals()).overall is Agreement.NO_SIGNAL
    assert compare(None, extract_signals(WORDPRESS)).overall is Agreement.NO_SIGNAL


def test_signals_as_dict_is_json_ready() -> None:
    d = orjson.loads(orjson.dumps(extract_signals(YOAST).as_dict()))
    assert d["json_ld"] == "2024-03-05T14:22:11Z"
    assert d["article_modified_time"] is None
    assert len(d["fingerprint"]) == 16
