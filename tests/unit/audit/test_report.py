"""harvester.audit.report: the per-host audit as JSON, a text table and an HTML page."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import orjson
import pytest

from harvester.audit.distribution import LastmodDistribution
from harvester.audit.report import (
    SCHEMA,
    HostAudit,
    host_audit,
    render_html,
    render_json,
    render_text,
)
from harvester.audit.trust import SignalAgreement, score_trust

if TYPE_CHECKING:
    from collections.abc import Sequence

FETCHED = datetime(2026, 11, 30, 12, tzinfo=UTC)
HOSTILE = '<script>alert("x")</script>\x1b[2J&evil.example'


def audit_of(host: str, lastmods: Sequence[datetime | None], **kw: object) -> HostAudit:
    dist = LastmodDistribution()
    for lm in lastmods:
        dist.add(lm, None, sitemap_last_modified=None, fetched_at=FETCHED)
    return host_audit(host, dist.verdict(), histogram=dist.histogram(), **kw)  # type: ignore[arg-type]


@pytest.fixture
def audits() -> list[HostAudit]:
    honest = [datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=7 * i) for i in range(60)]
    score = score_trust(
        [(True, True)] * 6 + [(False, False)] * 4, SignalAgreement(9, 1, 2), verdict="plausible"
    )
    return [
        audit_of("news.example", [FETCHED] * 50),
        audit_of("honest.example", honest, sample=SignalAgreement(9, 1, 2), score=score),
        audit_of("archive.example", [None] * 100),
        audit_of(HOSTILE, honest[:20]),
    ]


def test_json_has_schema_stable_fields_and_hosts_by_name(audits: list[HostAudit]) -> None:
    doc = orjson.loads(render_json(audits))
    assert doc["schema"] == SCHEMA
    hosts = doc["hosts"]
    assert [h["host"] for h in hosts] == sorted(a["host"] for a in audits)
    for h in hosts:
        assert set(h) == {"host", "verdict", "histogram", "sample", "score"}
        assert set(h["verdict"]) == {"verdict", "reason", "figures"}
    by_host = {h["host"]: h for h in hosts}
    assert by_host["news.example"]["verdict"]["verdict"] == "generation_time"
    assert by_host["archive.example"]["verdict"]["verdict"] == "absent"
    honest = by_host["honest.example"]
    assert honest["score"]["level"] == "trusted"
    assert honest["sample"] == {"agree": 9, "disagree": 1, "no_signal": 2}
    assert honest["histogram"][0] == {"bucket": "2024-01", "count": 5}
    assert render_json(audits) == render_json(list(reversed(audits)))  # stable output


def test_text_table_is_aligned_and_readable(audits: list[HostAudit]) -> None:
    text = render_text(audits)
    lines = text.splitlines()
    assert lines[0].split() == [
        "host",
        "verdict",
        "urls",
        "undated",
        "modal",
        "gen.time",
        "future",
        "<1995",
        "date-only",
        "distinct",
        "sample",
        "recall",
        "precision",
        "trust",
    ]
    assert len(lines) == 1 + len(audits)
    # Every row starts its verdict where the header's column starts.
    col = lines[0].index("verdict")
    verdicts = {line[col:].split()[0] for line in lines[1:]}
    assert verdicts == {"generation_time", "plausible", "absent"}
    honest = next(line for line in lines if line.startswith("honest.example"))
    assert "9/10" in honest
    assert "100.0%" in honest  # recall
    assert "trusted" in honest
    archive = next(line for line in lines if line.startswith("archive.example"))
    assert archive.split()[1:4] == ["absent", "100", "100.0%"]


def test_text_table_neutralises_control_characters_in_host_names(
    audits: list[HostAudit],
) -> None:
    text = render_text(audits)
    assert "\x1b" not in text
    assert "\\x1b[2J" in text
    long_host = "a" * 300 + ".example"
    line = render_text([audit_of(long_host, [None])]).splitlines()[1]
    assert len(line.split()[0]) == 60
    assert line.split()[0].endswith("…")


def test_html_escapes_a_hostile_host_name(audits: list[HostAudit]) -> None:
    page = render_html(audits, generated_at=FETCHED)
    assert "<script" not in page
    assert 'alert("x")' not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "&amp;evil.example" in page


def test_html_escapes_reasons_and_bucket_labels() -> None:
    audit = audit_of("x.example", [FETCHED - timedelta(days=400)] * 3)
    audit["verdict"]["reason"] = "<img src=x onerror=alert(1)>"
    audit["histogram"] = [{"bucket": "<b>2024</b>", "count": 3}]
    page = render_html([audit])
    assert "<img" not in page
    assert "<b>" not in page
    assert "&lt;b&gt;2024&lt;/b&gt;: 3" in page


def test_html_is_self_contained_with_one_chart_per_dated_host(audits: list[HostAudit]) -> None:
    page = render_html(audits, title="Audit <run 7>", generated_at=FETCHED)
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>Audit &lt;run 7&gt;</title>" in page
    for external in ("src=", "href=", "<link", "@import", "url("):
        assert external not in page
    assert page.count("<svg") == 3  # the archive host has no dated entries
    assert "No dated entries." in page
    assert "2026-11-30T12:00:00+00:00" in page
    # The honest host's histogram: 14 months from 2024-01 to 2025-02, one bar each.
    honest = page[page.index("<h2>honest.example</h2>") :]
    honest_svg = honest[: honest.index("</svg>")]
    assert len(re.findall(r"<rect ", honest_svg)) == 14
    assert "<title>2024-01: 5</title>" in honest_svg


def test_empty_report_renders() -> None:
    assert orjson.loads(render_json([])) == {"schema": SCHEMA, "hosts": []}
    assert render_text([]).splitlines()[0].startswith("host")
    assert "<tbody></tbody>" in render_html([])
