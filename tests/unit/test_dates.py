"""harvester.dates: every lastmod/pubDate form, valid and invalid, and the corpus values.

The corpus rows take their expected value from expected.json (primary
expectation), so a change to the corpus shows up here as well as in the
conformance suite. ``test_corpus_rows_are_complete`` makes sure every date
string in those files has a row.
"""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from harvester.dates import (
    DateQuality,
    format_utc,
    parse_lastmod,
    parse_lastmod_py,
    parse_rfc822,
)

CONFORMANCE = Path(__file__).parent.parent / "data" / "conformance"

W3C = DateQuality.W3C
NONSTD = DateQuality.NONSTANDARD
INVALID = DateQuality.INVALID


@cache
def expected_entries() -> dict[str, dict[str, Any]]:
    entries = json.loads((CONFORMANCE / "expected.json").read_text(encoding="utf-8"))
    return {e["file"].removeprefix("cases/"): e for e in entries}


# (case file, loc, raw text as the reader hands it over: XML-decoded, trimmed, quality)
CORPUS_LASTMODS = [
    ("urlset_protocol_example.xml", "http://www.example.com/", "2005-01-01", W3C),
    (
        "urlset_protocol_example.xml",
        "http://www.example.com/catalog?item=73&desc=vacation_new_zealand",
        "2004-12-23",
        W3C,
    ),
    (
        "urlset_protocol_example.xml",
        "http://www.example.com/catalog?item=74&desc=vacation_newfoundland",
        "2004-12-23T18:00:15+00:00",
        W3C,
    ),
    (
        "urlset_protocol_example.xml",
        "http://www.example.com/catalog?item=83&desc=vacation_usa",
        "2004-11-23",
        W3C,
    ),
    (
        "sitemapindex_basic.xml",
        "http://www.example.com/sitemap1.xml.gz",
        "2004-10-01T18:23:17+00:00",
        W3C,
    ),
    ("sitemapindex_basic.xml", "http://www.example.com/sitemap2.xml.gz", "2005-01-01", W3C),
    # CDATA and the character reference &#43; ('+') are resolved by the XML parser.
    (
        "sitemapindex_entities_cdata.xml",
        "http://www.example.com/sitemap1.xml.gz",
        "2004-10-01T18:23:17+00:00",
        W3C,
    ),
    (
        "sitemapindex_entities_cdata.xml",
        "http://www.example.com/sitemap2.xml.gz",
        "2005-01-01",
        W3C,
    ),
    (
        "sitemapindex_entities_cdata.xml",
        "http://www.example.com/dynsitemap?date=now&all=true",
        "2004-10-01T18:23:17+00:00",
        W3C,
    ),
    (
        "sitemapindex_no_namespace.xml",
        "http://www.example.com/sitemap_pages.xml",
        "2009-12-17T12:04:56+02:00",
        W3C,
    ),
    (
        "sitemapindex_blanklines_comments.xml",
        "http://www.example.com/sitemap1.xml",
        "2013-07-15",
        W3C,
    ),
    (
        "sitemapindex_comment_before_decl.xml",
        "https://www.bellinghambaymarathon.org/post-sitemap.xml",
        "2019-07-19T10:18:07-07:00",
        W3C,
    ),
    (
        "sitemapindex_comment_before_decl.xml",
        "https://www.bellinghambaymarathon.org/page-sitemap.xml",
        "2019-07-29T06:51:35-07:00",
        W3C,
    ),
    (
        "sitemapindex_comment_before_decl.xml",
        "https://www.bellinghambaymarathon.org/post_tag-sitemap.xml",
        "2019-05-16T10:06:14-07:00",
        W3C,
    ),
    # -07:00 pushes this one across midnight UTC.
    (
        "sitemapindex_comment_before_decl.xml",
        "https://www.bellinghambaymarathon.org/author-sitemap.xml",
        "2018-08-22T17:12:52-07:00",
        W3C,
    ),
    (
        "sitemapindex_multiple_loc_in_one_sitemap.xml",
        "https://www.example.org/sitemap1.xml",
        "2004-10-01T18:23:17+00:00",
        W3C,
    ),
    (
        "sitemapindex_multiple_loc_in_one_sitemap.xml",
        "https://www.example.org/sitemap3.xml",
        "2005-11-02T19:24:18+00:00",
        W3C,
    ),
    ("lastmod_w3c_valid_forms.xml", "http://www.example.com/lastmod/y", "1997", W3C),
    ("lastmod_w3c_valid_forms.xml", "http://www.example.com/lastmod/ym", "1997-07", W3C),
    ("lastmod_w3c_valid_forms.xml", "http://www.example.com/lastmod/ymd", "1997-07-16", W3C),
    (
        "lastmod_w3c_valid_forms.xml",
        "http://www.example.com/lastmod/hm-tz",
        "1997-07-16T19:20+01:00",
        W3C,
    ),
    (
        "lastmod_w3c_valid_forms.xml",
        "http://www.example.com/lastmod/hms-tz",
        "1997-07-16T19:20:30+01:00",
        W3C,
    ),
    (
        "lastmod_w3c_valid_forms.xml",
        "http://www.example.com/lastmod/frac-tz",
        "1997-07-16T19:20:30.45+01:00",
        W3C,
    ),
    (
        "lastmod_w3c_valid_forms.xml",
        "http://www.example.com/lastmod/z",
        "1994-11-05T13:15:30Z",
        W3C,
    ),
    (
        "lastmod_w3c_valid_forms.xml",
        "http://www.example.com/lastmod/neg-tz",
        "1994-11-05T08:15:30-05:00",
        W3C,
    ),
    (
        "lastmod_w3c_valid_forms.xml",
        "http://www.example.com/lastmod/hm-z",
        "2025-06-05T21:00Z",
        W3C,
    ),
    (
        "lastmod_w3c_valid_forms.xml",
        "http://www.example.com/lastmod/frac-z",
        "2014-06-03T10:30:45.82Z",
        W3C,
    ),
    (
        "lastmod_w3c_valid_forms.xml",
        "http://www.example.com/lastmod/frac1-z",
        "2014-06-03T10:30:45.5Z",
        W3C,
    ),
    (
        "lastmod_w3c_valid_forms.xml",
        "http://www.example.com/lastmod/frac-micro",
        "2018-01-12T21:57:27.123456Z",
        W3C,
    ),
    (
        "lastmod_w3c_valid_forms.xml",
        "http://www.example.com/lastmod/minus-zero",
        "2018-01-12T21:57:27-00:00",
        W3C,
    ),
    (
        "lastmod_w3c_valid_forms.xml",
        "http://www.example.com/lastmod/plus14",
        "2018-01-12T01:00:00+14:00",
        W3C,
    ),
    (
        "lastmod_w3c_valid_forms.xml",
        "http://www.example.com/lastmod/half-hour",
        "2018-01-12T21:57:27+05:30",
        W3C,
    ),
    (
        "lastmod_w3c_valid_forms.xml",
        "http://www.example.com/lastmod/day-rollover",
        "2018-12-31T23:30:00-01:00",
        W3C,
    ),
    ("lastmod_w3c_valid_forms.xml", "http://www.example.com/lastmod/leap-day", "2016-02-29", W3C),
    # Published as "  2005-01-01  "; the reader trims before parsing.
    ("lastmod_w3c_valid_forms.xml", "http://www.example.com/lastmod/padded", "2005-01-01", W3C),
    (
        "lastmod_invalid_forms.xml",
        "http://www.example.com/badlastmod/month13",
        "2005-13-01",
        INVALID,
    ),
    ("lastmod_invalid_forms.xml", "http://www.example.com/badlastmod/feb30", "2005-02-30", INVALID),
    (
        "lastmod_invalid_forms.xml",
        "http://www.example.com/badlastmod/nonleap",
        "2015-02-29",
        INVALID,
    ),
    (
        "lastmod_invalid_forms.xml",
        "http://www.example.com/badlastmod/hour25",
        "2005-01-01T25:00:00Z",
        INVALID,
    ),
    ("lastmod_invalid_forms.xml", "http://www.example.com/badlastmod/word", "yesterday", INVALID),
    # The reader never calls the parser for an empty element; if it did, the answer agrees.
    ("lastmod_invalid_forms.xml", "http://www.example.com/badlastmod/empty", "", INVALID),
    (
        "lastmod_invalid_forms.xml",
        "http://www.example.com/badlastmod/slashes",
        "16/07/2005",
        INVALID,
    ),
    (
        "lastmod_invalid_forms.xml",
        "http://www.example.com/badlastmod/no-tz",
        "2005-07-16T19:20:30",
        NONSTD,
    ),
    (
        "lastmod_invalid_forms.xml",
        "http://www.example.com/badlastmod/space-sep",
        "2005-07-16 19:20:30+01:00",
        NONSTD,
    ),
    (
        "lastmod_invalid_forms.xml",
        "http://www.example.com/badlastmod/basic-offset",
        "2005-07-16T19:20:30+0100",
        NONSTD,
    ),
    (
        "lastmod_invalid_forms.xml",
        "http://www.example.com/badlastmod/lowercase-tz",
        "2005-07-16t19:20:30z",
        NONSTD,
    ),
    (
        "lastmod_invalid_forms.xml",
        "http://www.example.com/badlastmod/rfc822",
        "Sat, 16 Jul 2005 19:20:30 GMT",
        NONSTD,
    ),
    ("lastmod_invalid_forms.xml", "http://www.example.com/badlastmod/unix", "1121541630", INVALID),
    (
        "lastmod_invalid_forms.xml",
        "http://www.example.com/badlastmod/basic-date",
        "20050716",
        INVALID,
    ),
    (
        "lastmod_invalid_forms.xml",
        "http://www.example.com/badlastmod/hour24",
        "2005-07-16T24:00:00Z",
        INVALID,
    ),
    (
        "lastmod_invalid_forms.xml",
        "http://www.example.com/badlastmod/usp-gh31",
        "2021-06-18T112:13:04+00:00",
        INVALID,
    ),
    ("lastmod_empty_elements.xml", "http://www.example.com/e/1", "", INVALID),
    # e/4 has two lastmods; the primary expectation keeps the last (2002-02-02).
    # The first one, 2001-01-01, is in FORMS below.
    ("lastmod_empty_elements.xml", "http://www.example.com/e/4", "2002-02-02", W3C),
]

# news:publication_date goes through parse_lastmod too (harvester.reader.extensions).
CORPUS_NEWS = [
    ("ext_news.xml", "http://www.example.org/business/article55.html", "2008-12-23", W3C),
    ("ext_news.xml", "http://www.example.org/empty_news_name.html", "2025-05-27", W3C),
    (
        "ext_news_wordpress_real.xml",
        "https://shinpaideshou.wordpress.com/2017/04/25/job-opening-reischauer-policy-research-fellow/",
        "2017-04-25T10:00:36+00:00",
        W3C,
    ),
    (
        "ext_news_wordpress_real.xml",
        "https://shinpaideshou.wordpress.com/2017/04/24/call-for-papers-nation-gender-and-history-asian-cinemas-in-perspective-2/",
        "2017-04-24T10:00:33+00:00",
        W3C,
    ),
    (
        "ext_news_wordpress_real.xml",
        "https://shinpaideshou.wordpress.com/2017/04/24/job-opening-lecturer-in-japanese-studies-university-of-leeds/",
        "2017-04-24T10:00:10+00:00",
        W3C,
    ),
]

NYT = "https://www.nytimes.com/"
# ext_news_nyt_real.xml: the expected values cover the <lastmod>s; the
# publication dates have no expectation, so their raw strings are checked
# against their own reading in FORMS.
CORPUS_LASTMODS += [
    (
        "ext_news_nyt_real.xml",
        NYT + "interactive/2020/05/11/magazine/quarantine-insanity.html",
        "2020-05-19T21:57:45Z",
        W3C,
    ),
    (
        "ext_news_nyt_real.xml",
        NYT + "interactive/2020/05/11/magazine/quarantine-paris.html",
        "2020-05-19T21:57:39Z",
        W3C,
    ),
    (
        "ext_news_nyt_real.xml",
        NYT + "interactive/2020/05/11/magazine/quarantine-nature.html",
        "2020-05-19T21:57:35Z",
        W3C,
    ),
    (
        "ext_news_nyt_real.xml",
        NYT + "interactive/2020/05/16/magazine/covid-quarantine-family.html",
        "2020-05-19T21:57:30Z",
        W3C,
    ),
    (
        "ext_news_nyt_real.xml",
        NYT + "2020/05/19/world/europe/coronavirus-germany-merkel-france.html",
        "2020-05-19T21:57:27Z",
        W3C,
    ),
    (
        "ext_news_nyt_real.xml",
        NYT + "2020/05/19/arts/music/germany-music-coronavirus.html",
        "2020-05-19T21:57:26Z",
        W3C,
    ),
]

# RSS pubDate goes through parse_rfc822; loc None is the channel's pubDate.
RSS = "rss20_pubdate_variants.xml"
CORPUS_PUBDATES = [
    (RSS, None, "Thu, 05 Jan 2017 12:34:50 GMT"),
    (RSS, "http://www.example.com/article_1", "Thu, 05 Jan 2017 13:34:51 +0100"),
    (RSS, "http://www.example.com/article_2", "Thu, 05 Jan 17 13:34:52 +0100"),
    (RSS, "http://www.example.com/article_3", "05 Jan 2017 13:34:53 +0100"),
    (RSS, "http://www.example.com/article_4", "05 Jan 17 13:34:54 +0100"),
    (RSS, "http://www.example.com/article_5", "05 Jan 17 13:34:55"),  # no zone
    (RSS, "http://www.example.com/article_6", ""),
]

# Hand-written forms beyond the corpus: (raw, expected canonical string or None, quality).
FORMS = [
    ("2001-01-01", "2001-01-01T00:00:00Z", W3C),  # lastmod_empty_elements.xml e/4, first
    ("2020-05-11T09:00:01Z", "2020-05-11T09:00:01Z", W3C),  # ext_news_nyt_real.xml
    ("2020-05-11T09:00:02Z", "2020-05-11T09:00:02Z", W3C),
    ("2020-05-16T09:00:05Z", "2020-05-16T09:00:05Z", W3C),
    ("2020-05-19T21:57:27Z", "2020-05-19T21:57:27Z", W3C),
    ("2020-05-19T17:53:42Z", "2020-05-19T17:53:42Z", W3C),
    # strict W3C
    ("0001-01-01", "0001-01-01T00:00:00Z", W3C),
    ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z", W3C),
    ("2000-02-29", "2000-02-29T00:00:00Z", W3C),
    ("2005-07-16T19:20:30+00:00", "2005-07-16T19:20:30Z", W3C),
    ("2005-07-16T00:00:00.000Z", "2005-07-16T00:00:00Z", W3C),  # zero fraction: not printed
    ("2005-07-16T19:20:30.1234567891Z", "2005-07-16T19:20:30.123456Z", W3C),  # truncated
    ("2005-07-16T19:20:30.1Z", "2005-07-16T19:20:30.100000Z", W3C),
    ("2005-07-16T19:20:30-14:00", "2005-07-17T09:20:30Z", W3C),
    ("2005-07-16T19:20:30+23:59", "2005-07-15T19:21:30Z", W3C),
    ("2005-01-01T00:30:00+01:00", "2004-12-31T23:30:00Z", W3C),  # year boundary
    ("0001-01-01T00:00:00-01:00", "0001-01-01T01:00:00Z", W3C),
    # unambiguous deviations: parsed, counted as non-standard
    ("2005-07-16 19:20:30", "2005-07-16T19:20:30Z", NONSTD),  # space, no zone
    ("2005-07-16T19:20", "2005-07-16T19:20:00Z", NONSTD),  # no seconds, no zone
    ("2005-07-16T19:20:30.5", "2005-07-16T19:20:30.500000Z", NONSTD),
    ("2005-07-16 19:20:30Z", "2005-07-16T19:20:30Z", NONSTD),
    ("2005-07-16T19:20:30Z".lower(), "2005-07-16T19:20:30Z", NONSTD),
    ("2005-07-16T19:20:30-0530", "2005-07-17T00:50:30Z", NONSTD),
    ("2005-07-16 19:20+0100", "2005-07-16T18:20:00Z", NONSTD),
    ("Sat, 16 Jul 2005 19:20:30 +0000", "2005-07-16T19:20:30Z", NONSTD),
    ("Sat,16 Jul 2005 19:20:30 UT", "2005-07-16T19:20:30Z", NONSTD),
    ("16 Jul 2005 19:20 EST", "2005-07-17T00:20:00Z", NONSTD),  # no seconds, US zone
    ("Saturday, 16 July 2005 19:20:30 PDT", "2005-07-17T02:20:30Z", NONSTD),
    ("sat, 16 jul 2005 19:20:30 gmt", "2005-07-16T19:20:30Z", NONSTD),
    # RFC 5322 §3.3: -0000 is still UT (email.utils would call it zone-less).
    ("Sat, 16 Jul 2005 19:20:30 -0000", "2005-07-16T19:20:30Z", NONSTD),
    # A wrong weekday is ignored: the date itself is unambiguous.
    ("Mon, 16 Jul 2005 19:20:30 GMT", "2005-07-16T19:20:30Z", NONSTD),
    # impossible or ambiguous
    ("", None, INVALID),
    ("2005-7-16", None, INVALID),
    ("05-07-16", None, INVALID),
    ("07/16/2005", None, INVALID),
    ("2005", "2005-01-01T00:00:00Z", W3C),  # (the year alone *is* W3C)
    ("2005-00", None, INVALID),
    ("2005-07-00", None, INVALID),
    ("2005-07-32", None, INVALID),
    ("0000-01-01", None, INVALID),
    ("2005-07-16T19Z", None, INVALID),
    ("2005-07-16T19:60:00Z", None, INVALID),
    ("2005-07-16T19:20:60Z", None, INVALID),  # leap second: no datetime can hold it
    ("2005-07-16T19:20:30.Z", None, INVALID),
    ("2005-07-16T19:20:30+01", None, INVALID),  # hour-only offset: not in the policy list
    ("2005-07-16T19:20:30+01:60", None, INVALID),
    ("2005-07-16T19:20:30+24:00", None, INVALID),
    ("2005-07-16T19:20:30,5Z", None, INVALID),  # ISO comma fraction: not in the policy list
    ("2005-07-16Z", None, INVALID),
    ("2005-07-16T19:20:30 +01:00", None, INVALID),
    ("2005-07-16T24:00Z", None, INVALID),
    ("2005-W28-6", None, INVALID),  # ISO week date (fromisoformat would take it)
    ("2005-197", None, INVALID),  # ordinal date
    ("0001-01-01T00:00:00+01:00", None, INVALID),  # before datetime.min in UTC
    ("9999-12-31T23:59:59-01:00", None, INVALID),  # after datetime.max in UTC
    ("\u0662\u0660\u0660\u0665-\u0660\u0667-\u0661\u0666", None, INVALID),  # Arabic-Indic digits
    ("\uff12\uff10\uff10\uff15-\uff10\uff17-\uff11\uff16", None, INVALID),  # fullwidth digits
    ("1121541630000", None, INVALID),
    ("16 Jul 2005 19:20:30", None, INVALID),  # RFC 822 without a zone
    ("Sat, 16 Jul 2005 19:20:30 A", None, INVALID),  # military zone (RFC 1123: unreliable)
    ("Sat, 16 Jul 2005 19:20:30 XYZ", None, INVALID),
    ("Sat, 16 Jul 2005 19:20:30 GMT extra", None, INVALID),
    ("Foo, 16 Jul 2005 19:20:30 GMT", None, INVALID),
    ("Sat, 30 Feb 2005 19:20:30 GMT", None, INVALID),
    ("Sat, 16 Jul 2005 25:20:30 GMT", None, INVALID),
    ("Sat, 16 Jul 2005 19:20:30 +2500", None, INVALID),
    ("Jul 16 2005 19:20:30 GMT", None, INVALID),  # month first: not RFC 822
    ("now", None, INVALID),
    ("null", None, INVALID),
]


def _expected(file: str, field: str, loc: str | None) -> str | None:
    entry = expected_entries()[file]
    value: str | None
    if loc is None:
        value = entry["channel_lastmod"]
    elif field == "news":
        value = entry["news"][loc]["publication_date"]
    else:
        value = entry["lastmods"][loc]
    return value


def _check(
    result: tuple[datetime | None, DateQuality], want: str | None, quality: DateQuality
) -> None:
    value, got_quality = result
    assert got_quality is quality
    if want is None:
        assert value is None
    else:
        assert value is not None
        assert value.tzinfo is UTC
        assert format_utc(value) == want


@pytest.mark.parametrize(
    ("file", "loc", "raw", "quality"),
    CORPUS_LASTMODS,
    ids=[f"{f}:{loc}" for f, loc, _, _ in CORPUS_LASTMODS],
)
def test_corpus_lastmods(file: str, loc: str, raw: str, quality: DateQuality) -> None:
    _check(parse_lastmod(raw), _expected(file, "lastmods", loc), quality)


@pytest.mark.parametrize(
    ("file", "loc", "raw", "quality"),
    CORPUS_NEWS,
    ids=[f"{f}:{loc}" for f, loc, _, _ in CORPUS_NEWS],
)
def test_corpus_news_publication_dates(file: str, loc: str, raw: str, quality: DateQuality) -> None:
    _check(parse_lastmod(raw), _expected(file, "news", loc), quality)


@pytest.mark.parametrize(
    ("file", "loc", "raw"), CORPUS_PUBDATES, ids=[raw or "<empty>" for _, _, raw in CORPUS_PUBDATES]
)
def test_corpus_rss_pubdates(file: str, loc: str | None, raw: str) -> None:
    want = _expected(file, "lastmods", loc)
    value = parse_rfc822(raw)
    if want is None:
        assert value is None
    else:
        assert value is not None
        assert value.tzinfo is UTC
        assert format_utc(value) == want


@pytest.mark.parametrize(
    ("raw", "want", "quality"), FORMS, ids=[r or "<empty>" for r, _, _ in FORMS]
)
def test_forms(raw: str, want: str | None, quality: DateQuality) -> None:
    _check(parse_lastmod(raw), want, quality)


_DATE_ELEMENT = re.compile(
    r"<((?:news:)?(?:lastmod|publication_date)|pubDate)\s*>(.*?)</\1\s*>|<(?:lastmod|pubDate)\s*/>",
    re.DOTALL,
)
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.DOTALL)


@pytest.mark.parametrize(
    "file",
    sorted(
        name
        for name in expected_entries()
        if name.startswith(("lastmod_", "sitemapindex_", "ext_news"))
        or name in ("urlset_protocol_example.xml", RSS)
    ),
)
def test_corpus_rows_are_complete(file: str) -> None:
    """Every date string in the listed corpus files has a row above."""
    text = (CONFORMANCE / "cases" / file).read_text(encoding="utf-8")
    covered = {raw for _, _, raw, _ in CORPUS_LASTMODS + CORPUS_NEWS}
    covered |= {raw for _, _, raw in CORPUS_PUBDATES} | {raw for raw, _, _ in FORMS}
    for match in _DATE_ELEMENT.finditer(text):
        # What the reader hands over: CDATA unwrapped, references resolved, trimmed.
        raw = html.unescape(_CDATA.sub(r"\1", match.group(2) or "")).strip()
        assert raw in covered, f"{file}: no test row for {raw!r}"


def test_rfc822_two_and_three_digit_years() -> None:
    # RFC 2822 §4.3: 00-49 -> 20xx, 50-99 -> 19xx, three digits -> +1900.
    assert parse_rfc822("01 Jan 49 00:00:00 GMT") == datetime(2049, 1, 1, tzinfo=UTC)
    assert parse_rfc822("01 Jan 50 00:00:00 GMT") == datetime(1950, 1, 1, tzinfo=UTC)
    assert parse_rfc822("01 Jan 105 00:00:00 GMT") == datetime(2005, 1, 1, tzinfo=UTC)


def test_rfc822_rejects_w3c_forms() -> None:
    # Each parser takes its own format; parse_lastmod is the one that takes both.
    assert parse_rfc822("2017-01-05T12:34:50Z") is None
    assert parse_lastmod("2017-01-05T12:34:50Z")[1] is W3C


def test_results_are_cached_per_string() -> None:
    # (the Python path's cache; the compiled one answers the usual shapes uncached)
    info = parse_lastmod_py.cache_info()
    assert info.maxsize == 8192
    first = parse_lastmod("2011-11-11T11:11:11.5+11:00")
    assert parse_lastmod("2011-11-11T11:11:11.5+11:00") is first
    assert parse_lastmod_py.cache_info().hits > info.hits


def test_quality_is_an_ordered_int_enum() -> None:
    # Callers may keep the worst quality seen with max().
    assert [int(q) for q in DateQuality] == [0, 1, 2]
    assert max(W3C, NONSTD) is NONSTD


def test_format_utc_converts_and_trims() -> None:
    cet = timezone(timedelta(hours=1))
    assert format_utc(datetime(2005, 7, 16, 19, 20, 30, tzinfo=cet)) == "2005-07-16T18:20:30Z"
    assert format_utc(datetime(2005, 7, 16, 19, 20, 30, 450000, tzinfo=UTC)) == (
        "2005-07-16T19:20:30.450000Z"
    )
    assert format_utc(datetime(900, 1, 1, tzinfo=UTC)) == "0900-01-01T00:00:00Z"


def test_format_utc_refuses_naive_datetimes() -> None:
    with pytest.raises(ValueError, match="naive"):
        format_utc(datetime(2005, 7, 16, 19, 20, 30))
