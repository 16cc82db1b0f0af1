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

__all__ = ["COVERAGE_SHARES", "HOST_COUNTS", "hosts_table"]

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


# Issue 49: the coverage check's figures (crawl/cover.py, with --coverage K), one block of
# columns: completeness with its 95 % interval and the pages it counts, the listed sample's
# size and each listed-but-not-live share; ``coverage_skipped`` says why a host has none.
# Null where the check did not run (or had nothing to count).
COVERAGE_SHARES = ("dead", "redirect", "redirect_to_listed", "noindex", "canonical_elsewhere")


def _coverage_fields(pa: Any) -> list[tuple[str, Any]]:
    return [
        ("coverage_completeness", pa.float64()),
        ("coverage_completeness_low", pa.float64()),
        ("coverage_completeness_high", pa.float64()),
        ("coverage_pages", pa.int64()),
        ("coverage_sampled", pa.int64()),
        *((f"coverage_{name}", pa.float64()) for name in COVERAGE_SHARES),
        ("coverage_skipped", pa.string()),
    ]


def _coverage_row(figures: dict[str, Any] | None) -> dict[str, Any]:
    """A host's ``coverage`` figures (None: not checked) as the block's cells."""
    figures = figures or {}
    done = figures.get("completeness") or {}
    shares = figures.get("listed_not_live") or {}
    row: dict[str, Any] = {
        "coverage_completeness": done.get("share"),
        "coverage_completeness_low": done.get("low"),
        "coverage_completeness_high": done.get("high"),
        "coverage_pages": done.get("of"),
        "coverage_sampled": figures.get("sampled"),
        "coverage_skipped": figures.get("skipped"),
    }
    for name in COVERAGE_SHARES:
        row[f"coverage_{name}"] = (shares.get(name) or {}).get("share")
    return row


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
            *_coverage_fields(pa),
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
        **_coverage_row(report.get("coverage")),
    }
    for name in HOST_COUNTS:
        row[name] = int(report.get(name) or 0)
    return row


def hosts_table(pa: Any, reports: list[dict[str, Any]]) -> Any:
    """One row per host report, in the order the hosts finished."""
    return pa.Table.from_pylist([_row(r) for r in reports], schema=_schema(pa))
