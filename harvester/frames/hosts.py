"""The per-host reports of a harvest as one Arrow table (``to_arrow``'s second table).

In: pyarrow and the host report dicts (``crawl.report.HostReport.as_dict``).
Out: a table of ``HOSTS``' columns, one row per host: its counts, how its
sitemaps were found, ``failed`` (no URL and at least one failure, as the run
report counts a failed host), ``partial`` (URLs, but failures too: a truncated
gzip, a failed child) and its failures as a list of structs. The columns are
fixed, so every run's table has the same schema, whatever its hosts met.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HOST_COUNTS", "hosts_table"]

# Whole-number columns, in this order after ``host`` and ``discovery``.
HOST_COUNTS = (
    "urls",
    "duplicates",
    "dropped",
    "filtered",
    "bytes",
    "sitemaps_found",
    "sitemaps_fetched",
    "sitemaps_failed",
    "sitemaps_listed",
    "sitemaps_left_out",
    "sitemaps_unchanged",
    "robots_disallowed",
    "foreign_locs",
    "cross_host_total",
    "cross_host_duplicates",
    "failures_total",
    "new",
    "changed",
    "unchanged",
    "removed",
)


def _schema(pa: Any) -> Any:
    failure = pa.struct(
        [
            ("class", pa.string()),
            ("url", pa.string()),
            ("message", pa.string()),
            ("status", pa.int64()),
        ]
    )
    return pa.schema(
        [
            ("host", pa.string()),
            ("discovery", pa.string()),
            ("robots_status", pa.int64()),
            *((name, pa.int64()) for name in HOST_COUNTS),
            ("seconds", pa.float64()),
            ("failed", pa.bool_()),
            ("partial", pa.bool_()),
            ("failures", pa.list_(failure)),
            ("limits_hit", pa.list_(pa.string())),
            ("warnings", pa.list_(pa.string())),
            ("deferred", pa.string()),
        ]
    )


def _row(report: dict[str, Any]) -> dict[str, Any]:
    failures = report.get("failures") or []
    urls = int(report.get("urls") or 0)
    row: dict[str, Any] = {
        "host": report.get("host"),
        "discovery": report.get("discovery"),
        "robots_status": report.get("robots_status"),
        "seconds": float(report.get("seconds") or 0.0),
        "failed": bool(failures) and urls == 0,
        "partial": bool(failures) and urls > 0,
        "failures": [
            {k: f.get(k) for k in ("class", "url", "message", "status")} for f in failures
        ],
        "limits_hit": list(report.get("limits_hit") or ()),
        "warnings": list(report.get("warnings") or ()),
        "deferred": report.get("deferred"),
    }
    for name in HOST_COUNTS:
        row[name] = int(report.get(name) or 0)
    return row


def hosts_table(pa: Any, reports: list[dict[str, Any]]) -> Any:
    """One row per host report, in the order the hosts finished."""
    return pa.Table.from_pylist([_row(r) for r in reports], schema=_schema(pa))
