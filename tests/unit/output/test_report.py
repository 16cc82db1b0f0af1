"""Report stage: HostReport, RunReport aggregation, write_report."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest

from harvester.crawl.records import encode_record
from harvester.crawl.report import KEEP, Failure, HostReport
from harvester.errors import (
    DNSError,
    FetchTimeout,
    HTTPStatusError,
    NotASitemap,
    ParseError,
)
from harvester.models import ReadStats
from harvester.output.report import RunReport, write_report
from harvester.output.sink import JsonlSink

if TYPE_CHECKING:
    from pathlib import Path


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


def test_run_report_aggregates_host_dicts() -> None:
    run = RunReport(workers=2)
    ok = HostReport("a.example", urls=10, bytes=1000, sitemaps_fetched=2, sitemaps_failed=1)
    ok.fail(HTTPStatusError("500", url="https://a.example/x.xml", status=500))
    failed = HostReport("b.example")
    failed.fail(DNSError("nxdomain", url="https://b.example/robots.txt"))
    failed.fail(DNSError("nxdomain", url="https://b.example/sitemap.xml"))
    empty = HostReport("c.example")  # no URLs, no failures: not failed
    for host in (ok, failed, empty):
        run.add_host(host.as_dict())
    assert run.hosts_done == 3
    assert run.hosts_failed == 1
    assert run.urls == 10
    assert run.bytes == 1000
    assert (run.sitemaps_fetched, run.sitemaps_failed) == (2, 1)
    assert run.failures_by_class == {"http_status": 1, "dns": 2}
    assert run.errors == 3


def test_run_report_counts_failures_past_the_cap() -> None:
    host = HostReport("a.example")
    for _ in range(KEEP + 5):
        host.fail(NotASitemap("html", url="https://a.example/"))
    run = RunReport()
    run.add_host(host.as_dict())
    assert run.failures_by_class == {"not_a_sitemap": KEEP + 5}


def test_run_report_accepts_a_dict_without_counts() -> None:
    run = RunReport()
    run.add_host({"host": "a.example", "urls": 0, "failures": [{"class": "dns"}]})
    assert run.failures_by_class == {"dns": 1}
    assert run.hosts_failed == 1


def test_run_report_as_dict_and_finish() -> None:
    run = RunReport(workers=3, input_invalid=2, input_duplicates=4)
    assert run.started.endswith("Z")
    assert run.finished is None
    run.add_host({"urls": 1, "failures_by_class": {"timeout": 1, "dns": 2}})
    run.finish(complete=True)
    data = run.as_dict()
    assert data["complete"] is True
    assert data["interrupted"] is False
    assert data["finished"].endswith("Z")
    assert data["seconds"] >= 0
    assert "_t0" not in data
    assert list(data["failures_by_class"]) == ["dns", "timeout"]
    assert data["hosts_total"] is None
    json.dumps(data)


def test_write_report_is_atomic_and_names_the_hosts_file(tmp_path: Path) -> None:
    hosts_path = str(tmp_path / "out.hosts.jsonl")
    run = RunReport(workers=1, hosts_total=2)
    with JsonlSink(hosts_path) as hosts:
        for name in ("a.example", "b.example"):
            data = HostReport(name, urls=1).as_dict()
            hosts.write(encode_record(data))
            run.add_host(data)
        hosts.close(complete=True)
    run.finish(complete=True)
    path = str(tmp_path / "out.report.json")
    write_report(path, run, hosts_path)
    with open(path, encoding="utf-8") as fh:
        report = json.load(fh)
    assert report["hosts_report"] == hosts_path
    assert report["hosts_done"] == 2
    assert report["urls"] == 2
    assert sorted(os.listdir(tmp_path)) == ["out.hosts.jsonl", "out.report.json"]  # no temp left
    with open(hosts_path, encoding="utf-8") as fh:
        assert [json.loads(line)["host"] for line in fh] == ["a.example", "b.example"]


def test_write_report_failure_leaves_old_report_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "report.json"
    path.write_text("old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        write_report(str(path), RunReport(), None)
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["report.json"]
