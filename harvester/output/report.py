"""The run report: what a run amounted to, summed from its hosts' reports.

In: each finished host's ``HostReport.as_dict()`` (``harvester.crawl.report``), as the
writer takes it. Out: the run's totals (``RunReport``) and the run report as JSON
(``write_report``); the per-host lines go to a separate file during the run, so
millions of hosts are never held in memory. What the run shows of it on stderr (a
progress line, a summary at the end) is ``harvester.output.display``.

Example::

    run = RunReport(workers=4)
    with JsonlSink("out.hosts.jsonl") as hosts:
        for host_dict in finished_hosts:
            hosts.write(encode_record(host_dict))
            run.add_host(host_dict)
        hosts.close(complete=True)
    run.finish(complete=True)
    write_report("out.report.json", run, "out.hosts.jsonl")
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from harvester.crawl.spread import Spread
from harvester.output.parts import write_atomic

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["RunReport", "write_report"]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(slots=True)
class RunReport:
    """Totals of a run, aggregated in the main process from finished hosts' dicts.

    ``hosts_total`` is None until the whole input has been read. A host counts
    in ``hosts_failed`` when it produced no URL and had at least one failure.
    """

    started: str = field(default_factory=_now)  # ISO-8601 UTC
    finished: str | None = None
    complete: bool = False
    interrupted: bool = False
    hosts_total: int | None = None
    hosts_done: int = 0
    hosts_failed: int = 0
    hosts_deferred: int = 0  # hosts whose report says ``deferred`` (a Retry-After: not today)
    # Issue 51: hosts found by their late attempt after a first-contact timeout, and hosts
    # behind a bot wall (discovery "blocked"; docs/late-and-walls.md).
    hosts_recovered_late: int = 0
    hosts_blocked: int = 0
    hosts_late_not_due: int = 0  # issue 53: a late attempt that failed before waits
    urls: int = 0
    bytes: int = 0
    sitemaps_fetched: int = 0
    sitemaps_failed: int = 0
    failures_by_class: dict[str, int] = field(default_factory=dict)
    cross_host_duplicates: int = 0  # URLs a host listed that another host had listed first
    input_invalid: int = 0
    input_duplicates: int = 0
    # With a state file: its path, the run id, whether this invocation resumed an
    # unfinished run (and skipped the hosts it had finished), and the run's URL events.
    state: str | None = None
    run_id: int | None = None
    resumed: bool = False
    resumed_hosts_skipped: int = 0
    events: dict[str, int] | None = None
    workers: int = 0
    workers_started: int = 0  # worker processes actually started (one per shard with a host)
    # Issue 32: page URLs and index children left out by [filters], and the hosts whose
    # TLS certificates went unverified (politeness.hosts verify_tls = false).
    filtered: int = 0
    sitemaps_filtered: int = 0
    hosts_tls_unverified: int = 0
    # Issue 53: sitemaps adaptive revisit did not ask (their URLs kept), and listed URLs
    # of hosts whose lastmod is not trusted (written only with --emit unverified).
    sitemaps_not_due: int = 0
    unverified: int = 0
    # Issue 50: every host failed and the earlier output was kept (writer.keep_previous).
    output_kept: bool = False
    seconds: float = 0.0
    # Issue 49: the hosts' coverage figures (--coverage K), summed up in ``as_dict``.
    _coverage: Spread = field(default_factory=Spread, init=False, repr=False, compare=False)
    _t0: float = field(default_factory=time.monotonic, init=False, repr=False, compare=False)

    def add_host(self, host: Mapping[str, Any]) -> None:
        """Aggregate one finished host, given in its ``HostReport.as_dict()`` form."""
        self.hosts_done += 1
        urls = int(host.get("urls", 0))
        self.urls += urls
        self.bytes += int(host.get("bytes", 0))
        self.sitemaps_fetched += int(host.get("sitemaps_fetched", 0))
        self.sitemaps_failed += int(host.get("sitemaps_failed", 0))
        self.cross_host_duplicates += int(host.get("cross_host_duplicates", 0))
        by_class: Mapping[str, int] | None = host.get("failures_by_class")
        if by_class is None:  # a dict without the counts: the kept failures are all we have
            by_class = {}
            for failure in host.get("failures", ()):
                by_class[failure["class"]] = by_class.get(failure["class"], 0) + 1
        for kind, count in by_class.items():
            self.failures_by_class[kind] = self.failures_by_class.get(kind, 0) + count
        if urls == 0 and sum(by_class.values()) > 0:
            self.hosts_failed += 1
        if host.get("deferred"):
            self.hosts_deferred += 1
        if host.get("recovered_late"):
            self.hosts_recovered_late += 1
        if host.get("late_not_due"):
            self.hosts_late_not_due += 1
        if host.get("discovery") == "blocked":
            self.hosts_blocked += 1
        self.filtered += int(host.get("filtered", 0))
        self.sitemaps_filtered += int(host.get("sitemaps_filtered", 0))
        if host.get("tls_unverified"):
            self.hosts_tls_unverified += 1
        self.sitemaps_not_due += int(host.get("sitemaps_not_due", 0))
        self.unverified += int(host.get("unverified", 0))
        self._coverage.add(host.get("coverage"))

    @property
    def errors(self) -> int:
        """All failures of all hosts so far."""
        return sum(self.failures_by_class.values())

    def elapsed(self) -> float:
        """Seconds since the report was created (the run's start)."""
        return time.monotonic() - self._t0

    def finish(self, *, complete: bool, interrupted: bool = False) -> None:
        """Stamp the end of the run: ``finished``, ``seconds``, ``complete``, ``interrupted``."""
        self.finished = _now()
        self.seconds = self.elapsed()
        self.complete = complete
        self.interrupted = interrupted

    def as_dict(self, *, parts: bool = False) -> dict[str, Any]:
        """Return the JSON-ready form of the run report; ``parts``: with what ``merge``
        needs to fold it into another run's (a shard's report, ``distributed/merge.py``)."""
        out: dict[str, Any] = {
            name: getattr(self, name) for name in self.__slots__ if not name.startswith("_")
        }
        out["seconds"] = round(self.seconds, 3)
        out["failures_by_class"] = dict(sorted(self.failures_by_class.items()))
        if self._coverage.hosts:
            out["coverage"] = self._coverage.summary()
            if parts:
                out["coverage_spread"] = self._coverage.state()
        return out

    def merge_coverage(self, state: Mapping[str, Any] | None) -> None:
        """Fold in a shard's coverage (``as_dict(parts=True)["coverage_spread"]``)."""
        self._coverage.merge(state)


def write_report(path: str, run: RunReport, hosts_jsonl_path: str | None) -> None:
    """Write the run report as JSON to ``path`` atomically (``parts.write_atomic``).

    The per-host reports are not in it: they go, one JSON line per finished
    host, to ``hosts_jsonl_path`` during the run (a ``JsonlSink`` fed
    ``encode_record(host.as_dict())``), and the run report names that file
    under ``"hosts_report"``.
    """
    data = run.as_dict()
    data["hosts_report"] = hosts_jsonl_path
    write_atomic(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")
