"""Issue 48 in the table outputs: each record's ``robots`` and ``tdm_reserved`` in CSV and
Parquet, and each host's ``allows`` summary in the hosts table, read back."""

from __future__ import annotations

import csv
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from harvester.frames.hosts import ALLOWS, HOST_COUNTS, hosts_table
from harvester.output.csvsink import COLUMNS, CsvSink
from harvester.output.parquetsink import SCHEMA, ParquetSink
from harvester.urls.records import encode_records

if TYPE_CHECKING:
    from pathlib import Path

RECORDS: list[dict[str, Any]] = [
    {"loc": "https://e.com/a", "url": "https://e.com/a", "robots": "allowed", "tdm_reserved": None},
    {
        "loc": "https://e.com/p",
        "url": "https://e.com/p",
        "robots": "disallowed",
        "tdm_reserved": True,
    },
    {
        "loc": "https://e.com/q",
        "url": "https://e.com/q",
        "robots": "unknown",
        "tdm_reserved": False,
    },
    {"loc": "https://e.com/r", "url": "https://e.com/r"},  # neither policy on
]


def test_csv_reads_back_robots_and_tdm_reserved(tmp_path: Path) -> None:
    out = tmp_path / "urls.csv"
    sink = CsvSink(str(out))
    sink.write(encode_records(RECORDS))
    sink.close(complete=True)
    with out.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, strict=True))
    assert list(rows[0]) == list(COLUMNS)
    assert [(r["robots"], r["tdm_reserved"]) for r in rows] == [
        ("allowed", ""),
        ("disallowed", "true"),
        ("unknown", "false"),
        ("", ""),
    ]


def test_parquet_reads_back_robots_and_tdm_reserved(tmp_path: Path) -> None:
    out = tmp_path / "urls.parquet"
    sink = ParquetSink(str(out))
    sink.write(encode_records(RECORDS))
    sink.close(complete=True)
    table = pq.read_table(out)
    assert table.schema == SCHEMA
    assert pa.types.is_dictionary(table.schema.field("robots").type)
    assert table.schema.field("tdm_reserved").type == pa.bool_()
    rows = table.to_pylist()
    assert [(r["robots"], r["tdm_reserved"]) for r in rows] == [
        ("allowed", None),
        ("disallowed", True),
        ("unknown", False),
        (None, None),
    ]


def _report(host: str, **fields: Any) -> dict[str, Any]:
    return {"host": host, "discovery": "robots", "urls": 3, **fields}


ALLOWS_BLOCK = {
    "robots_url": "https://e.com/robots.txt",
    "ai_crawlers": {
        "GPTBot": {"disallowed": "entirely", "group": "gptbot", "lines": [2]},
        "CCBot": {"disallowed": "partly", "group": "*", "lines": [9]},
        "ClaudeBot": {"disallowed": "not", "group": "claudebot", "lines": []},
    },
    "content_signals": [
        {"agents": ["gptbot"], "line": 3, "signals": {"ai-train": "yes"}, "value": "ai-train=yes"},
        {
            "agents": ["*"],
            "line": 8,
            "signals": {"search": "yes", "ai-train": "no"},
            "value": "search=yes, ai-train=no",
        },
    ],
    "tdmrep": {
        "url": "https://e.com/.well-known/tdmrep.json",
        "status": 200,
        "rules": [
            {"location": "/free/", "tdm-reservation": 0},
            {"location": "/", "tdm-reservation": 1, "tdm-policy": "https://e.com/policy.json"},
        ],
    },
}


def test_hosts_table_reads_back_the_allows_summary(tmp_path: Path) -> None:
    reports = [
        _report("e.com", allows=ALLOWS_BLOCK, robots_disallowed_urls=4),
        _report("f.com", robots_unknown="robots.txt timed out"),
        _report(
            "g.com",
            allows={
                "tdmrep": {"url": "u", "rules": []},
                # (as crawl/tdmheaders.py keeps them: each distinct header value once)
                "headers": [
                    {"header": "tdm-reservation", "value": "0", "url": "u", "responses": 2},
                    {
                        "header": "tdm-policy",
                        "value": "https://g.com/p",
                        "url": "u",
                        "responses": 1,
                    },
                ],
            },
        ),
    ]
    path = tmp_path / "hosts.parquet"
    pq.write_table(hosts_table(pa, reports), path)
    table = pq.read_table(path)
    names = table.schema.names
    block = [name for name, _ in ALLOWS]
    start = names.index(block[0])
    assert names[start : start + len(block)] == block  # one contiguous block
    assert set(HOST_COUNTS) <= set(names)
    e, f, g = table.to_pylist()
    assert e["ai_crawlers_disallowed"] == ["GPTBot"]
    assert e["ai_crawlers_partly"] == ["CCBot"]
    assert (e["content_signal_search"], e["content_signal_ai_train"]) == ("yes", "no")
    assert e["content_signal_ai_input"] is None
    assert (e["tdm_reservation"], e["tdm_policy"]) == (1, "https://e.com/policy.json")
    assert e["robots_disallowed_urls"] == 4
    assert e["robots_unknown"] is None
    assert f["robots_unknown"] == "robots.txt timed out"
    assert f["ai_crawlers_disallowed"] == []
    assert (f["tdm_reservation"], f["content_signal_search"]) == (None, None)
    assert (g["tdm_reservation"], g["tdm_policy"]) == (0, "https://g.com/p")
