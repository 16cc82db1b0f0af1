"""A host's report: failures, caps, counts, its JSON line (``crawl.report.HostReport``)."""

from __future__ import annotations

import json

from harvester.crawl.report import KEEP, Failure, HostReport
from harvester.errors import (
    DNSError,
    FetchTimeout,
    HTTPStatusError,
    ParseError,
)
from harvester.models import ReadStats
from harvester.urls.records import encode_record


def test_fail_records_class_url_and_status() -> None:
    host = HostReport("example.com")
    host.fail(
        HTTPStatusError("404 Not Found", url="https://example.com/s.xml", status=404), attempts=1
    )
    host.fail(FetchTimeout("read stalled", url="https://example.com/t.xml"), bytes_read=123)
    assert host.failures == [
        Failure("http_status", "https://example.com/s.xml", "404 Not Found", 404, 1, None),
        Failure("timeout", "https://example.com/t.xml", "read stalled", None, None, 123),
    ]
    assert host.failures_by_class == {"http_status": 1, "timeout": 1}
    assert host.failures[0].as_dict() == {
        "class": "http_status",
        "url": "https://example.com/s.xml",
        "message": "404 Not Found",
        "status": 404,
        "attempts": 1,
    }


def test_failures_and_cross_host_are_capped_but_counted() -> None:
    host = HostReport("example.com")
    for i in range(KEEP + 50):
        host.fail(ParseError("bad", url=f"https://example.com/{i}.xml"))
        host.skip_cross_host(f"https://other.example/{i}.xml")
    assert len(host.failures) == KEEP
    assert host.failures_total == KEEP + 50
    assert host.failures_by_class == {"bad_xml": KEEP + 50}
    assert len(host.cross_host) == KEEP
    assert host.cross_host_total == KEEP + 50


def test_violations_and_limits_are_deduplicated() -> None:
    host = HostReport("example.com")
    host.violation("more than 50,000 URLs")
    host.violation("more than 50,000 URLs")
    host.limit("max_depth")
    host.limit("max_depth")
    host.limit("max_sitemaps_per_host")
    assert host.violations == ["more than 50,000 URLs"]
    assert host.limits_hit == ["max_depth", "max_sitemaps_per_host"]


def test_add_read_folds_reader_stats() -> None:
    host = HostReport("example.com")
    stats = ReadStats(dropped_invalid_loc=3, dropped_too_long=2, dropped_duplicate=7)
    stats.violations.append("loc longer than 2,048 characters")
    host.add_read(stats)
    host.add_read(stats)
    assert host.dropped == 10
    assert host.violations == ["loc longer than 2,048 characters"]


def test_host_as_dict_is_json_ready_and_round_trips() -> None:
    host = HostReport("example.com", urls=5, seconds=1.23456, discovery="robots")
    host.fail(DNSError("no such host", url="https://example.com/robots.txt"))
    data = host.as_dict()
    assert json.loads(encode_record(data)) == data
    assert data["host"] == "example.com"
    assert data["seconds"] == 1.235
    assert data["failures"] == [
        {"class": "dns", "url": "https://example.com/robots.txt", "message": "no such host"}
    ]
    assert data["failures_total"] == 1
    assert list(data)[:3] == ["host", "sitemaps_found", "sitemaps_fetched"]
    data["cross_host"].append("x")  # the dict does not alias the report's lists
    assert host.cross_host == []
