"""The per-host reports of a harvest as one Arrow table (``to_arrow``'s second table).

In: pyarrow and the host report dicts (``crawl.report.HostReport.as_dict``).
Out: a table of ``HOSTS``' columns, one row per host: its counts, how its
sitemaps were found, ``failed`` (no URL and at least one failure, as the run
report counts a failed host), ``partial`` (URLs, but failures too: a truncated
gzip, a failed child) and its failures as a list of structs; what the site allows
(``ALLOWS``, issue 48: a summary of the report's ``allows`` block, ``allows_row``).
The columns are fixed, so every run's table has the same schema, whatever its
hosts met.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ALLOWS", "COVERAGE_SHARES", "HOST_COUNTS", "allows_row", "hosts_table"]

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


# What the site allows (issue 48), one block after ``deferred``: the host report's
# ``allows`` summarized (the report keeps each signal's file and line), and the
# verdict counts. A list: the ai_crawlers.txt tokens; a content signal: yes/no/null.
ALLOWS = (
    ("robots_disallowed_urls", "int"),  # page URLs --respect-robots dropped
    ("robots_unknown", "str"),  # why no verdict could be given (robots.txt not read)
    ("ai_crawlers_disallowed", "list"),  # AI crawlers robots.txt disallows entirely
    ("ai_crawlers_partly", "list"),  # ...and partly
    ("content_signal_search", "str"),  # the "*" group's Content-Signal values
    ("content_signal_ai_input", "str"),
    ("content_signal_ai_train", "str"),
    ("tdm_reservation", "int"),  # 1: tdmrep.json or a header reserves (anywhere); 0: not
    ("tdm_policy", "str"),  # the first tdm-policy URL given
)


def allows_row(report: dict[str, Any]) -> dict[str, Any]:
    """The ``ALLOWS`` columns of one host report (None where it says nothing)."""
    allows = report.get("allows") or {}
    crawlers = allows.get("ai_crawlers") or {}
    row: dict[str, Any] = {
        "robots_disallowed_urls": int(report.get("robots_disallowed_urls") or 0),
        "robots_unknown": report.get("robots_unknown"),
        "ai_crawlers_disallowed": [
            t for t, c in crawlers.items() if c.get("disallowed") == "entirely"
        ],
        "ai_crawlers_partly": [t for t, c in crawlers.items() if c.get("disallowed") == "partly"],
    }
    for key in ("search", "ai-input", "ai-train"):
        row["content_signal_" + key.replace("-", "_")] = next(
            (
                line["signals"][key]
                for line in allows.get("content_signals") or ()
                if "*" in line.get("agents", ()) and key in (line.get("signals") or {})
            ),
            None,
        )
    tdmrep = allows.get("tdmrep") or {}
    rules = [r for r in tdmrep.get("rules") or () if r.get("tdm-reservation") in (0, 1)]
    said = [r["tdm-reservation"] for r in rules]
    # The response headers (crawl/tdmheaders.py): each distinct (header, value) once.
    headers = [h for h in allows.get("headers") or () if isinstance(h, dict)]
    said += [
        int(v)
        for h in headers
        if h.get("header") == "tdm-reservation"
        and (v := str(h.get("value", "")).strip()) in "01"
        and v
    ]
    row["tdm_reservation"] = max(said) if said else None
    policies = [r["tdm-policy"] for r in rules if r.get("tdm-policy")]
    policies += [h.get("value") for h in headers if h.get("header") == "tdm-policy"]
    row["tdm_policy"] = policies[0] if policies else None
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
    kinds = {"int": pa.int64(), "str": pa.string(), "list": pa.list_(pa.string())}
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
            *((name, kinds[kind]) for name, kind in ALLOWS),
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
    row.update(allows_row(report))
    return row


def hosts_table(pa: Any, reports: list[dict[str, Any]]) -> Any:
    """One row per host report, in the order the hosts finished."""
    return pa.Table.from_pylist([_row(r) for r in reports], schema=_schema(pa))
