"""Lastmod audit, part 3: the per-host audit report (issue 7).

In: a list of ``HostAudit`` dicts, one per host, built with ``host_audit()``
from ``harvester.audit`` results (``verdict.LastmodVerdict``, ``trust.TrustScore``,
``LastmodDistribution.histogram()``) and the sample's ``SignalAgreement``.
Out, all pure (strings/bytes; the caller writes them):

* ``render_json`` → bytes: ``{"schema": "harvester.lastmod-audit/1", "hosts": [...]}``
  with fixed field names, hosts sorted by name; for machines.
* ``render_text`` → str: a plain aligned table (verdict, figures, sample
  agreement, trust); for terminals and logs.
* ``render_html`` → str: one self-contained page (inline CSS and SVG, no
  scripts, no external assets) with a bar chart of each host's lastmod months.

Host names, reasons and labels come from the web (a sitemap can name any
host), so the HTML escapes every one with ``html.escape`` and the text table
replaces control characters, which could otherwise drive a terminal.

Example::

    audits = [host_audit("example.com", dist.verdict(), histogram=dist.histogram(),
                         sample=SignalAgreement(8, 1, 3), score=score)]
    Path("audit.html").write_text(render_html(audits, generated_at=now))
"""

from __future__ import annotations

import html
from dataclasses import asdict
from typing import TYPE_CHECKING, NotRequired, TypedDict

import orjson

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from harvester.audit.trust import SignalAgreement, TrustScore
    from harvester.audit.verdict import LastmodVerdict

__all__ = ["SCHEMA", "HostAudit", "host_audit", "render_html", "render_json", "render_text"]

SCHEMA = "harvester.lastmod-audit/1"
_MAX_HOST_CHARS = 60  # longer names are cut in the text table so columns stay aligned


class HostAudit(TypedDict):
    """One host's audit, as plain JSON-ready data (what crosses to the report)."""

    host: str
    verdict: dict[str, object]  # LastmodVerdict.as_dict(): verdict, reason, figures
    histogram: list[dict[str, object]]  # [{"bucket": "2024-03", "count": 12}, ...]
    sample: NotRequired[dict[str, int] | None]  # agree / disagree / no_signal
    score: NotRequired[dict[str, object] | None]  # TrustScore.as_dict()


def host_audit(
    host: str,
    verdict: LastmodVerdict,
    *,
    histogram: Sequence[tuple[str, int]] = (),
    sample: SignalAgreement | None = None,
    score: TrustScore | None = None,
) -> HostAudit:
    """Build the report entry of one host from the audit objects."""
    return {
        "host": host,
        "verdict": verdict.as_dict(),
        "histogram": [{"bucket": label, "count": n} for label, n in histogram],
        "sample": None if sample is None else asdict(sample),
        "score": None if score is None else score.as_dict(),
    }


def _sorted(audits: Sequence[HostAudit]) -> list[HostAudit]:
    return sorted(audits, key=lambda a: a["host"])


def render_json(audits: Sequence[HostAudit]) -> bytes:
    """Render the report as JSON bytes (indented, keys sorted, hosts by name)."""
    hosts = [
        {
            "host": a["host"],
            "verdict": a["verdict"],
            "histogram": a["histogram"],
            "sample": a.get("sample"),
            "score": a.get("score"),
        }
        for a in _sorted(audits)
    ]
    return orjson.dumps(
        {"schema": SCHEMA, "hosts": hosts}, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
    )


# --- the figures every view shows, as display strings ------------------------------------


def _pct(value: object) -> str:
    return f"{value:.1%}" if isinstance(value, int | float) else "-"


def _row(a: HostAudit) -> dict[str, str]:
    verdict = a["verdict"]
    figs = verdict.get("figures")
    f: dict[str, object] = figs if isinstance(figs, dict) else {}
    sample = a.get("sample") or {}
    score = a.get("score") or {}
    compared = sample.get("agree", 0) + sample.get("disagree", 0)
    distinct = f.get("distinct_timestamps", "-")
    return {
        "host": a["host"],
        "verdict": str(verdict.get("verdict", "-")),
        "urls": str(f.get("total", "-")),
        "undated": _pct(f.get("undated_share")),
        "modal": _pct(f.get("modal_cluster_share")),
        "gen.time": _pct(f.get("generation_share")),
        "future": _pct(f.get("future_share")),
        "<1995": _pct(f.get("before_1995_share")),
        "date-only": _pct(f.get("date_only_share")),
        "distinct": f"{distinct}" if f.get("distinct_exact", True) else f"~{distinct}",
        "sample": f"{sample.get('agree', 0)}/{compared}" if sample else "-",
        "recall": _pct(score.get("recall")),
        "precision": _pct(score.get("precision")),
        "trust": str(score.get("level", "-")),
    }


_COLUMNS = (
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
)
_LEFT = frozenset({"host", "verdict", "trust"})  # text left-aligned, numbers right


def _printable(text: str) -> str:
    # Control characters (ESC sequences, newlines, bidi overrides) would let a
    # hostile host name rewrite the terminal or break the table's lines.
    out = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
    return out if len(out) <= _MAX_HOST_CHARS else out[: _MAX_HOST_CHARS - 1] + "…"


def render_text(audits: Sequence[HostAudit]) -> str:
    """Render the report as a plain table with aligned columns, one host per line.

    ``modal`` is the share of dated entries within the tolerance of the modal
    timestamp; ``sample`` is ``agreeing/compared`` sampled pages.
    """
    rows = [{k: _printable(v) for k, v in _row(a).items()} for a in _sorted(audits)]
    widths = {c: max([len(c)] + [len(r[c]) for r in rows]) for c in _COLUMNS}

    def line(cells: dict[str, str]) -> str:
        parts = [
            cells[c].ljust(widths[c]) if c in _LEFT else cells[c].rjust(widths[c]) for c in _COLUMNS
        ]
        return "  ".join(parts).rstrip()

    out = [line({c: c for c in _COLUMNS})]
    out.extend(line(r) for r in rows)
    return "\n".join(out) + "\n"


# --- HTML ------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}th,td{padding:.25em .6em;border-bottom:1px solid #ddd}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.v{font-weight:600}.plausible{color:#1a7f37}.absent,.constant{color:#9a6700}
.generation_time,.future{color:#cf222e}
section{margin-top:2em}svg{background:#fafafa;border:1px solid #eee}
rect{fill:#4c78a8}text{font-size:10px;fill:#555}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _chart(histogram: list[dict[str, object]], width: int = 640, height: int = 140) -> str:
    """Inline SVG bar chart of (bucket, count); each bar's label is in its <title>."""
    counts = [c if isinstance(c, int) else 0 for c in (b.get("count") for b in histogram)]
    if not counts or max(counts) == 0:
        return "<p>No dated entries.</p>"
    top, plot_h = max(counts), height - 20
    bar_w = width / len(counts)
    bars = []
    for i, (bucket, n) in enumerate(zip(histogram, counts, strict=True)):
        h = n / top * plot_h
        bars.append(
            f'<rect x="{i * bar_w:.2f}" y="{plot_h - h:.2f}" width="{max(bar_w - 1, 0.5):.2f}"'
            f' height="{h:.2f}"><title>{_e(bucket.get("bucket"))}: {n}</title></rect>'
        )
    first, last = _e(histogram[0].get("bucket")), _e(histogram[-1].get("bucket"))
    return (
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img"'
        f' aria-label="lastmod histogram">{"".join(bars)}'
        f'<text x="0" y="{height - 5}">{first}</text>'
        f'<text x="{width}" y="{height - 5}" text-anchor="end">{last}</text>'
        f'<text x="{width}" y="10" text-anchor="end">max {top}</text></svg>'
    )


def render_html(
    audits: Sequence[HostAudit],
    *,
    title: str = "Lastmod audit",
    generated_at: datetime | None = None,
) -> str:
    """Render the report as one self-contained HTML page: summary table, then a chart per host."""
    rows = [_row(a) for a in _sorted(audits)]
    head = "".join(f"<th>{_e(c)}</th>" for c in _COLUMNS)
    body_rows = []
    for r in rows:
        cells = []
        for c in _COLUMNS:
            css = (
                f' class="v {_e(r[c])}"' if c == "verdict" else ("" if c in _LEFT else ' class="n"')
            )
            cells.append(f"<td{css}>{_e(r[c])}</td>")
        body_rows.append(f"<tr>{''.join(cells)}</tr>")
    sections = []
    for a in _sorted(audits):
        verdict = a["verdict"]
        score = a.get("score") or {}
        sections.append(
            f"<section><h2>{_e(a['host'])}</h2>"
            f'<p><span class="v {_e(verdict.get("verdict"))}">{_e(verdict.get("verdict"))}</span>'
            f": {_e(verdict.get('reason', ''))}</p>"
            + (
                f"<p>Trust: {_e(score.get('level'))}: {_e(score.get('reason'))}</p>"
                if score
                else ""
            )
            + _chart(a["histogram"])
            + "</section>"
        )
    stamp = f"<p>Generated {_e(generated_at.isoformat())}</p>" if generated_at else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1>{stamp}"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body_rows)}</tbody></table>"
        f"{''.join(sections)}</body></html>\n"
    )
