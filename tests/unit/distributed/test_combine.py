"""distributed/merge.py ``combine``: the shards' run reports summed into the run's, every
count a single run's report has, and its coverage summary from every shard's hosts."""

from __future__ import annotations

from typing import Any

from harvester.distributed.merge import combine
from harvester.output.report import RunReport

COUNTS = (
    "hosts_done",
    "hosts_failed",
    "hosts_deferred",
    "hosts_recovered_late",
    "hosts_blocked",
    "urls",
    "bytes",
    "sitemaps_fetched",
    "sitemaps_failed",
    "filtered",
    "sitemaps_filtered",
    "hosts_tls_unverified",
    "sitemaps_not_due",
    "unverified",
    "resumed_hosts_skipped",
)


def _host(name: str, n: int, done: float | None) -> dict[str, Any]:
    """A finished host's report, every count ``n``; its coverage ``done`` (None: skipped)."""
    coverage: dict[str, Any] = {"skipped": "no sitemap read"}
    if done is not None:
        dead = {"count": n, "of": 10}
        coverage = {
            "completeness": {"share": done},
            "sampled": 10,
            "listed_not_live": {"dead": dead},
        }
    return {
        "host": name,
        "urls": n,
        "bytes": n,
        "sitemaps_fetched": n,
        "sitemaps_failed": n,
        "failures_by_class": {"http_status": n},
        "deferred": True,
        "recovered_late": True,
        "discovery": "blocked",
        "filtered": n,
        "sitemaps_filtered": n,
        "tls_unverified": True,
        "sitemaps_not_due": n,
        "unverified": n,
        "coverage": coverage,
    }


def test_shards_combined_give_the_single_run_s_report() -> None:
    shards = [
        [_host("a", 1, 0.2), _host("b", 2, 0.9)],
        [_host("c", 3, None)],
        [_host("d", 4, 0.5), _host("e", 5, 0.5), _host("f", 6, 1.0)],
    ]
    single = RunReport()
    reports = []
    for hosts in shards:
        shard = RunReport()
        for host in hosts:
            single.add_host(host)
            shard.add_host(host)
        reports.append(shard.as_dict(parts=True))
    merged = RunReport()
    combine(reports, merged)
    one, both = single.as_dict(), merged.as_dict()
    for name in COUNTS:
        assert both[name] == one[name], name
    assert both["failures_by_class"] == one["failures_by_class"]
    assert both["coverage"] == one["coverage"]
    assert both["coverage"]["completeness"]["median"] == 0.5
    assert "coverage_spread" not in one  # only a shard's result carries its parts
