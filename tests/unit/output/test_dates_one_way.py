"""Every date of a record in one form (issue 47 item 5): pandas reads the columns as dates.

A sitemap's lastmods mix whole seconds and fractions of a second; the records write
them all as ``YYYY-MM-DDTHH:MM:SSZ`` (``dates.format_utc_seconds``), on the compiled
path (``_chost._write_record``, ``_cdates``) and the Python one alike, so
``pd.read_json(lines=True)``, ``pd.read_csv(parse_dates=...)`` and
``pd.to_datetime(utc=True)`` give ``datetime64[..., UTC]`` columns, not strings.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from harvester import dates
from harvester.config import Config
from harvester.crawl.batch import UrlBatch
from harvester.crawl.report import HostReport
from harvester.crawl.settings import BatchSettings
from harvester.models import News, UrlEntry, Video
from harvester.output.csvsink import csv_rows
from harvester.reader.sitemap import read_bytes
from harvester.state.memory import HostMemory
from harvester.urls.normalize import Normalizer
from harvester.urls.records import encode_records, record

if TYPE_CHECKING:
    from typing import Any

pd = pytest.importorskip("pandas")

SITEMAP = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:video="http://www.google.com/schemas/sitemap-video/1.1">
<url><loc>https://e.com/a</loc><lastmod>2024-05-01T08:00:00.123456Z</lastmod></url>
<url><loc>https://e.com/b</loc><lastmod>2024-05-01T08:00:00Z</lastmod></url>
<url><loc>https://e.com/c</loc><lastmod>2024-05-01</lastmod></url>
<url><loc>https://e.com/d</loc><lastmod>2024-05-01T10:00:00.5+02:00</lastmod>
  <video:video><video:thumbnail_loc>https://e.com/t.jpg</video:thumbnail_loc>
  <video:publication_date>2024-04-30T22:00:00.25+00:00</video:publication_date>
  </video:video></url>
<url><loc>https://e.com/e</loc></url>
</urlset>
"""
WANT = [
    "2024-05-01T08:00:00Z",
    "2024-05-01T08:00:00Z",
    "2024-05-01T00:00:00Z",
    "2024-05-01T08:00:00Z",
    None,
]


def lines() -> bytes:
    """The JSON lines a run writes for ``SITEMAP``: the URL batch's encoded lines (the
    compiled loop's, or the Python loop's with ``HARVESTER_PURE_PYTHON=1``), checked
    against the records encoded one by one."""
    entries, _ = read_bytes(SITEMAP, "https://e.com/sitemap.xml")
    cfg = Config()
    b = UrlBatch(
        "e.com",
        BatchSettings.of(cfg),
        Normalizer(cfg.normalize).rules_for("e.com"),
        HostReport("e.com"),
        encoded=True,
    )
    b.remember(HostMemory(), False)
    b.take(entries, "https://e.com/sitemap.xml")
    out = b.flush()
    b.close()
    assert out is not None
    # The Python loop keeps dicts, which the writer encodes.
    data = bytes(out.data) if out.data is not None else encode_records(out.records)
    assert data == encode_records(record(e, "https://e.com/sitemap.xml", "e.com") for e in entries)
    return data


def test_every_lastmod_has_the_one_form() -> None:
    got = [r["lastmod"] for r in pd.read_json(io.BytesIO(lines()), lines=True, dtype=False)
           .to_dict("records")]  # fmt: skip
    assert [None if g is None or g != g else g for g in got] == WANT


def test_pandas_reads_json_lines_and_csv_as_utc_datetimes() -> None:
    data = lines()
    frame = pd.read_json(io.BytesIO(data), lines=True, dtype=False)
    # pandas infers one format from the first value: with a mix, the others raised.
    when = pd.to_datetime(frame["lastmod"], utc=True)
    assert str(when.dtype).startswith("datetime64")
    assert str(when.dt.tz) == "UTC"
    assert when.iloc[0] == pd.Timestamp("2024-05-01T08:00:00Z")
    assert when.isna().tolist() == [False, False, False, False, True]
    table = pd.read_csv(io.BytesIO(csv_rows(data)), header=None, parse_dates=[5])
    assert str(table[5].dtype).startswith("datetime64")
    assert table[4].tolist() == ["sitemap"] * 5  # the source column
    # One format: pandas infers it from the first value and every other one parses.
    raw = [v for v in pd.read_csv(io.BytesIO(csv_rows(data)), header=None, dtype=str)[5] if v == v]
    parsed = pd.to_datetime(pd.Series(raw), utc=True, format="%Y-%m-%dT%H:%M:%SZ")
    assert parsed.notna().all()


def test_video_and_news_dates_have_it_too() -> None:
    video = Video(publication_date="2024-04-30T22:00:00.25+00:00", expiration_date="bad")
    news = News(name="n", language="en", publication_date=datetime(2024, 1, 1, 0, 0, 0, 7, UTC))
    rec: dict[str, Any] = record(UrlEntry("https://e.com/x", videos=(video,), news=news), None)
    assert rec["videos"] == [{"publication_date": "2024-04-30T22:00:00Z"}]  # "bad": dropped
    assert rec["news"]["publication_date"] == "2024-01-01T00:00:00Z"


@pytest.mark.parametrize(
    "when",
    [
        datetime(2024, 5, 1, 8, 0, 0, 999999, UTC),
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 1, UTC),
    ],
)
def test_both_formatters_agree(when: datetime) -> None:
    assert dates.format_utc_seconds(when) == dates.format_utc_seconds_py(when)
    assert dates.format_utc_seconds(when) == when.strftime("%Y-%m-%dT%H:%M:%SZ").rjust(20, "0")
