"""harvester.audit.agreement: a sitemap lastmod against the page's own dates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from harvester.audit.agreement import Agreement, compare
from harvester.audit.pagedates import PageSignals, Signal, extract_signals
from tests.unit.audit.samples import FETCHED, WORDPRESS

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
