"""view/: the sitemap tree (tree.py), the SVG charts, the run summary and the HTML page."""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, Any

import pytest
from rich.console import Console

from harvester.errors import InputError
from harvester.view import summary as summary_module
from harvester.view.charts import bars, columns, number
from harvester.view.page import render_page
from harvester.view.summary import RunSummary, read_summary, size_bucket
from harvester.view.tree import human_bytes, render_tree, tree_data

if TYPE_CHECKING:
    from pathlib import Path


def node(url: str, parent: str | None = None, **kw: Any) -> dict[str, Any]:
    base = {
        "url": url,
        "parent": parent,
        "source": "index" if parent else "robots",
        "depth": 1 if parent else 0,
        "kind": "urlset",
        "urls": 0,
        "sitemaps": 0,
        "bytes": 0,
        "gzip": 0,
        "newest": None,
        "status": 200,
        "outcome": "ok",
        "error": None,
        "message": None,
    }
    return base | kw


def report(*nodes: dict[str, Any], failures: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "host": "e.com",
        "discovery": "robots",
        "urls": 5,
        "bytes": 2048,
        "sitemaps_fetched": len(nodes),
        "sitemaps_failed": 0,
        "failures": failures or [],
        "sitemap_log": {
            "robots": {"url": "https://e.com/robots.txt", "status": 200},
            "sitemaps": list(nodes),
            "omitted": 0,
        },
    }


def draw(data: dict[str, Any]) -> str:
    buf = io.StringIO()
    Console(file=buf, width=300, color_system=None).print(render_tree(data))
    return buf.getvalue()


def test_tree_data_nests_children_under_their_index_and_keeps_orphans_on_top() -> None:
    i = "https://e.com/i.xml"
    data = tree_data(
        report(
            node(i, kind="sitemapindex"),
            node("https://e.com/a.xml", i, urls=3),
            node("https://e.com/b.xml", "https://e.com/i.xml", urls=2),
            node("https://e.com/lost.xml", "https://e.com/not-kept.xml"),
        )
    )
    assert [n["url"] for n in data["sitemaps"]] == [i, "https://e.com/lost.xml"]
    assert [c["url"] for c in data["sitemaps"][0]["children"]] == [
        "https://e.com/a.xml",
        "https://e.com/b.xml",
    ]
    assert data["robots"] == {"url": "https://e.com/robots.txt", "status": 200}
    json.dumps(data)  # JSON-ready


def test_host_failures_on_no_sitemap_are_shown_at_the_root() -> None:
    robots_failure = {"class": "connect", "url": "https://e.com/robots.txt", "message": "refused"}
    on_node = {"class": "http_status", "url": "https://e.com/a.xml", "message": "HTTP 404"}
    data = tree_data(report(node("https://e.com/a.xml"), failures=[robots_failure, on_node]))
    assert data["failures"] == [robots_failure]
    assert "✗ connect https://e.com/robots.txt: refused" in draw(data)


def test_text_from_the_web_is_never_markup_nor_a_terminal_escape() -> None:
    evil = "https://e.com/[bold red]x[/]\x1b[2J.xml"
    text = draw(tree_data(report(node(evil, error="bad_xml", message="[link=x]\x07"))))
    assert "[bold red]x[/]" in text
    assert "\\x1b[2J" in text
    assert "\x1b" not in text
    assert "\x07" not in text


def test_text_labels_counts_and_outcomes() -> None:
    i = "https://e.com/i.xml"
    text = draw(
        tree_data(
            report(
                node(i, kind="sitemapindex", sitemaps=2, bytes=300),
                node("https://e.com/a.xml.gz", i, urls=1, gzip=1, bytes=1536, newest="2024-01-02Z"),
                node(
                    "https://e.com/x.xml",
                    i,
                    kind=None,
                    outcome="failed",
                    error="timeout",
                    status=None,
                ),
                node(
                    "https://o.org/s.xml",
                    i,
                    kind=None,
                    outcome="skipped",
                    error="cross_host",
                    status=None,
                ),
            )
        )
    )
    assert "[sitemapindex] https://e.com/i.xml  2 sitemaps · 300 B" in text
    assert "[urlset] https://e.com/a.xml.gz  1 URL · 1.5 KiB · gzip · newest 2024-01-02Z" in text
    assert "✗ [?] https://e.com/x.xml  timeout" in text
    assert "- [?] https://o.org/s.xml  skipped  cross_host" in text


def test_human_bytes() -> None:
    assert [human_bytes(n) for n in (0, 1023, 1024, 5 * 2**20)] == [
        "0 B",
        "1,023 B",
        "1.0 KiB",
        "5.0 MiB",
    ]


def test_charts_escape_labels_and_say_when_empty() -> None:
    svg = bars([("<script>alert(1)</script>", 3), ("dns", 1)], label="failures")
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    assert svg.count('class="bar"') == 2
    assert "No data" in bars([], label="x")
    assert "No data" in columns([("a", 0)], label="x")
    many = columns([(f"2024-{m:02d}", m) for m in range(1, 13)] + [("2025-01", 1)], label="m")
    assert many.count("<rect") == 13
    assert "2024-01" in many
    assert "2025-01" in many


def test_numbers_are_whole_or_two_decimals_never_scientific() -> None:
    assert [number(v) for v in (0, 16634300.0, 0.5, 1234.567)] == [
        "0",
        "16,634,300",
        "0.50",
        "1,234.57",
    ]


def test_size_buckets() -> None:
    got = [size_bucket(n) for n in (0, 1, 9, 10, 999, 1000, 99_999, 100_000, 10**6, 10**9)]
    assert got[:5] == ["0", "1-9", "1-9", "10-99", "100-999"]
    assert got[5:] == ["1k-9.9k", "10k-99k", "100k-999k", "1M+", "1M+"]


def host_line(name: str, urls: int, seconds: float, **kw: Any) -> dict[str, Any]:
    return {"host": name, "urls": urls, "bytes": urls * 10, "seconds": seconds} | kw


def test_summary_keeps_top_hosts_months_and_failed_hosts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(summary_module, "KEEP_FAILED", 2)
    hosts = [
        host_line(f"h{i}.com", i * 10, i / 10, lastmod_months={"2024-01": i}) for i in range(15)
    ]
    dead = {
        "failures_by_class": {"dns": 1},
        "failures": [{"class": "dns", "url": "u", "message": "m"}],
    }
    hosts += [host_line(f"dead{i}.com", 0, 0.5, **dead) for i in range(3)]
    hosts.append(host_line("old.com", 1, 0.1, lastmod_months={"2019": 4, "future": 2}))
    lines = [json.dumps(h) for h in hosts]
    lines.insert(3, "{not json")
    (tmp_path / "o.hosts.jsonl").write_text("\n".join(lines) + "\n")
    run = {"hosts_done": 19, "urls": 1051, "hosts_report": "o.hosts.jsonl"}
    (tmp_path / "o.report.json").write_text(json.dumps(run))
    s = read_summary(str(tmp_path / "o.report.json"))  # the hosts file found beside it
    assert s.hosts_read == 19
    assert s.unreadable_lines == 1
    assert sorted(s.largest, reverse=True)[0] == (140, 1400, "h14.com")
    assert len(s.largest) == summary_module.TOP
    assert sorted(s.slowest, reverse=True)[0] == (1.4, "h14.com")
    assert s.sizes["0"] == 4  # h0 and the three dead hosts
    assert s.failed_total == 3
    assert [(f.host, f.line) for f in s.failed] == [("dead0.com", 17), ("dead1.com", 18)]
    assert json.loads(s.failed[0].text)["host"] == "dead0.com"
    # A host with years makes the whole histogram yearly; <1995 and future stay at the ends;
    # the years between are there, empty.
    assert s.months() == [
        ("2019", 4),
        *((str(y), 0) for y in range(2020, 2024)),
        ("2024", sum(range(15))),
        ("future", 2),
    ]


def test_read_summary_names_the_file_that_is_not_a_run_report(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cannot read the run report .*nope"):
        read_summary(str(tmp_path / "nope.json"))
    (tmp_path / "x.json").write_text("[1, 2]")
    with pytest.raises(InputError, match=r"x\.json is not a run report"):
        read_summary(str(tmp_path / "x.json"))


def test_page_escapes_everything_from_the_web_and_links_failed_hosts() -> None:
    evil = '"><script>alert(1)</script>'
    s = RunSummary({"hosts_done": 1, "urls": 0, "failures_by_class": {evil: 1}}, "h.jsonl")
    line = json.dumps(host_line(evil, 0, 1.0, failures_by_class={evil: 1}))
    s.add_host(7, json.loads(line), line)
    page = render_page(s)
    assert "<script" not in page
    assert "&lt;script&gt;" in page
    assert 'href="#line-7"' in page
    assert 'id="line-7"' in page
    assert '<span id="total-URLs">0</span>' in page
    assert "http" not in page.replace("http-equiv", "")  # no external asset of any kind
