"""The run report page: a time axis with its empty months, partly failed hosts, no raw
JSON, value axes."""

from __future__ import annotations

import json
import re
from typing import Any

from harvester.view.charts import columns
from harvester.view.page import render_page
from harvester.view.summary import RunSummary


def host(name: str, urls: int, **kw: Any) -> dict[str, Any]:
    return {"host": name, "urls": urls, "bytes": 10, "seconds": 0.1} | kw


def summary(*hosts: dict[str, Any]) -> RunSummary:
    s = RunSummary({"hosts_done": len(hosts), "urls": 1}, "o.hosts.jsonl")
    for n, h in enumerate(hosts, 1):
        s.add_host(n, h, json.dumps(h))
    return s


def test_empty_months_between_are_kept_so_a_gap_shows() -> None:
    s = summary(host("a.com", 5, lastmod_months={"2021-02": 3, "2023-11": 2}))
    months = s.months()
    assert months[0] == ("2021-02", 3)
    assert months[-1] == ("2023-11", 2)
    assert len(months) == 34  # every month from 2021-02 to 2023-11
    assert sum(n for _, n in months) == 5
    assert ("2022-06", 0) in months


def test_a_long_span_becomes_years_with_the_empty_ones() -> None:
    s = summary(host("a.com", 5, lastmod_months={"2001-01": 1, "2024-03": 4}))
    assert s.months() == [("2001", 1), *((str(y), 0) for y in range(2002, 2024)), ("2024", 4)]


def test_partly_failed_hosts_are_listed_with_their_failures_and_no_raw_json() -> None:
    gz = {"class": "truncated", "url": "https://b.com/s.xml.gz", "message": "cut", "status": 200}
    dead = {"class": "dns", "url": "https://a.com/robots.txt", "message": "no such name"}
    s = summary(
        host("a.com", 0, failures_by_class={"dns": 1}, failures=[dead]),
        host("b.com", 40, failures_by_class={"truncated": 1}, failures=[gz]),
        host("c.com", 7),
    )
    assert (s.failed_total, s.partial_total) == (1, 1)
    page = render_page(s)
    assert "Partly failed hosts (URLs, and failures) (1)" in page
    assert 'href="#line-2">b.com</a>' in page
    assert 'id="line-2"' in page
    assert "https://b.com/s.xml.gz" in page
    assert "40 URLs" in page
    assert "<pre" not in page
    assert '"failures_by_class"' not in page  # no report line as JSON text
    assert "c.com" not in page.split("Failed hosts")[1]


def test_columns_have_a_value_axis_and_labels() -> None:
    svg = columns([("2024-01", 3), ("2024-02", 0), ("2024-03", 7)], label="m", y_title="URLs")
    values = re.findall(r'text-anchor="end">([\d,.]+)</text>', svg)
    assert values == ["0", "5", "10"]
    assert svg.count("<rect") == 3
    assert all(m in svg for m in ("2024-01", "2024-02", "2024-03", ">URLs<"))
