"""The run report: RunReport aggregation, write_report."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest

from harvester.crawl.report import KEEP, HostReport
from harvester.errors import (
    DNSError,
    HTTPStatusError,
    NotASitemap,
)
from harvester.output.report import RunReport, write_report
from harvester.output.sink import JsonlSink
from harvester.urls.records import encode_record

if TYPE_CHECKING:
    from pathlib import Path


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
