"""A host's report: what harvesting one host amounted to.

In: the host worker's counts, failures (``HarvesterError`` values) and policy skips,
as it goes. Out: ``HostReport.as_dict()``, the JSON-ready line of the per-host report
file; reports cross process boundaries as plain dicts, and the run's writer sums them
into the run report (``harvester.output.report``).

Failure classes are the ``kind`` of the classes in ``harvester.errors``.

Example::

    report = HostReport("example.com")
    report.fail(FetchTimeout("no answer", url="https://example.com/sitemap.xml"))
    line = report.as_dict()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harvester.errors import HarvesterError
    from harvester.models import ReadStats

__all__ = ["KEEP", "Failure", "HostReport"]

KEEP = 100  # failures and cross-host URLs kept per host; the totals count all of them
_INVALID_EXAMPLES = 5  # dropped locs kept as examples per host


@dataclass(slots=True)
class Failure:
    """One failed fetch or read: its class (``HarvesterError.kind``), URL and message."""

    kind: str
    url: str | None
    message: str
    status: int | None = None
    attempts: int | None = None
    bytes_read: int | None = None
    retry_after: float | None = None  # the wait a 429/503 asked for (Retry-After), seconds

    def as_dict(self) -> dict[str, Any]:
        """JSON shape: ``{"class", "url", "message"}`` plus the optional fields that are set."""
        out: dict[str, Any] = {"class": self.kind, "url": self.url, "message": self.message}
        for name in ("status", "attempts", "bytes_read", "retry_after"):
            if (value := getattr(self, name)) is not None:
                out[name] = value
        return out


@dataclass(slots=True)
class HostReport:
    """What harvesting one host amounted to; owned and mutated by its host worker only.

    Lists are capped: ``failures`` and ``cross_host`` keep the first ``KEEP``
    (100) entries, ``failures_total``/``cross_host_total`` count all, and
    ``failures_by_class`` counts all by class. ``violations``, ``warnings`` and
    ``limits_hit`` are deduplicated (violations and warnings capped at ``KEEP`` too).
    """

    host: str
    sitemaps_found: int = 0  # queued to fetch: robots lines, fallback hits, index children
    sitemaps_fetched: int = 0
    sitemaps_failed: int = 0
    # Issue 50: the sitemaps the host named (robots.txt lines, index children, a fallback
    # location that hit; one already queued or fetched is not counted again), and those
    # the caps left out for newer ones (max_sitemaps_per_host, max_children_per_index).
    sitemaps_listed: int = 0
    sitemaps_left_out: int = 0
    urls: int = 0  # records emitted
    duplicates: int = 0  # URLs already emitted for this host
    dropped: int = 0  # invalid/relative/too long locs (reader stats)
    bytes: int = 0  # bytes downloaded
    seconds: float = 0.0
    # "robots" | "fallback:<url>" | "seed" | "none" (no sitemap found: no failure either)
    # | "failed" (robots.txt) | "memory:<one of these>" (recalled from the state file).
    discovery: str = ""
    robots_status: int | None = None
    cross_host: list[str] = field(default_factory=list)
    cross_host_total: int = 0
    violations: list[str] = field(default_factory=list)
    # What the reader read despite a fault (a DOCTYPE ignored, a body read as sent
    # after its Content-Encoding failed to decode, ...): distinct texts, capped.
    warnings: list[str] = field(default_factory=list)
    limits_hit: list[str] = field(default_factory=list)
    robots_disallowed: int = 0  # same-host sitemaps not fetched: robots.txt disallows them
    # Records whose URL is on another host than their sitemap's (and than the host whose
    # robots.txt declared it): the protocol's same-host rule broken. Emitted all the same.
    foreign_locs: int = 0
    foreign_loc_examples: list[str] = field(default_factory=list)  # the first few locs
    invalid_loc_examples: list[str] = field(default_factory=list)  # dropped locs, the first few
    # With a state file: sitemaps not downloaded or unchanged (304, skipped by index
    # lastmod, same content hash), and the URL events (removed is set by the writer;
    # replayed: recorded by this run before it was cut short, so not emitted again).
    sitemaps_unchanged: int = 0
    sitemaps_not_due: int = 0  # not asked: adaptive revisit (state.revisit), URLs kept
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    replayed: int = 0
    # Listed, not new URLs of a host whose lastmod is not trusted, read this run: whether
    # they changed is unknown (written only by --emit unverified / delta,unverified).
    unverified: int = 0
    # The lastmod audit's distribution verdict of this run (None: disabled or nothing read).
    lastmod_audit: dict[str, Any] | None = None
    # ISO-8601 UTC time before which the host is not asked again: it answered 429/503
    # with a Retry-After beyond fetch.retry_after_max (this run, or an earlier one whose
    # time has not come: then nothing was requested). None: not deferred.
    deferred: str | None = None
    failures: list[Failure] = field(default_factory=list)
    failures_total: int = 0
    failures_by_class: dict[str, int] = field(default_factory=dict)
    # Issue 32 (seeing a site): URLs per lastmod month ("YYYY-MM", or years when the
    # range is long; "<1995", "future"), from the lastmod audit's sample (every URL up
    # to 500, then 1 in 8); and the host's sitemaps (``SitemapLog.as_dict``,
    # crawl/sitemaps.py) when output.sitemap_log is on (None: off).
    lastmod_months: dict[str, int] | None = None
    sitemap_log: dict[str, Any] | None = None
    # Issue 32: page URLs left out by [filters] include/exclude (not written, not
    # "dropped"), index children not downloaded by follow/skip_sitemap, and whether
    # the host's TLS certificates went unverified (politeness.hosts verify_tls = false).
    filtered: int = 0
    sitemaps_filtered: int = 0
    tls_unverified: bool = False
    # Issue 49: the links fallback's counts (crawl/links.py ``Walk.counts``; None: not run).
    links: dict[str, int] | None = None
    # Issue 49: the coverage check's figures with --coverage K (crawl/cover.py; None: off).
    coverage: dict[str, Any] | None = None
    # Issue 48 (what the site allows, crawl/verdicts.py and crawl/allow.py): page URLs
    # dropped by --respect-robots (robots_disallowed above counts sitemaps); why the
    # verdicts are "unknown" (no robots.txt read; None: they are not); the host's AI and
    # TDM signals (``allow.signals``; None: policy.signals off).
    robots_disallowed_urls: int = 0
    robots_unknown: str | None = None
    allows: dict[str, Any] | None = None
    # Issue 51 (harvester.run.late): which wait of the host's first contact timed out
    # ("connect" or "first_byte"; None: none did), whether the late, patient attempt that
    # followed reached the host (its report is this one then), and its seconds.
    first_contact_timeout: str | None = None
    recovered_late: bool = False
    late_seconds: float = 0.0
    # Issue 53: no late attempt this run, its last one having failed (state.revisit: it
    # waits, doubling); its stored URLs are kept.
    late_not_due: bool = False

    def fail(
        self,
        exc: HarvesterError,
        *,
        status: int | None = None,
        attempts: int | None = None,
        bytes_read: int | None = None,
    ) -> None:
        """Record a failure; ``status`` defaults to the error's own (``HTTPStatusError``)."""
        if status is None:
            status = getattr(exc, "status", None)
        if self.first_contact_timeout is None:
            self.first_contact_timeout = getattr(exc, "first_contact", None)
        self.failures_total += 1
        self.failures_by_class[exc.kind] = self.failures_by_class.get(exc.kind, 0) + 1
        if len(self.failures) < KEEP:
            retry_after = getattr(exc, "retry_after", None)
            self.failures.append(
                Failure(exc.kind, exc.url, exc.message, status, attempts, bytes_read, retry_after)
            )

    def skip_cross_host(self, url: str) -> None:
        """Record a child sitemap skipped by the cross-host policy."""
        self.cross_host_total += 1
        if len(self.cross_host) < KEEP:
            self.cross_host.append(url)

    def violation(self, text: str) -> None:
        """Record a protocol violation (once per distinct text)."""
        if text not in self.violations and len(self.violations) < KEEP:
            self.violations.append(text)

    def limit(self, name: str) -> None:
        """Record that a cap (``"max_depth"``, ``"max_sitemaps_per_host"``, ...) was reached."""
        if name not in self.limits_hit:
            self.limits_hit.append(name)

    def sitemap_read(self, stats: ReadStats, error: HarvesterError | None) -> None:
        """A sitemap downloaded and read (in full, or up to ``error``)."""
        self.sitemaps_fetched += 1
        self.add_read(stats)
        if error is not None:
            self.sitemaps_failed += 1
            self.fail(error, bytes_read=stats.bytes_in)

    def sitemap_failed(
        self, error: HarvesterError, status: int | None, attempts: int, bytes_read: int | None
    ) -> None:
        """A sitemap that could not be fetched (or broke off); what it read was kept."""
        self.sitemaps_failed += 1
        self.fail(error, status=status, attempts=attempts, bytes_read=bytes_read)

    def add_read(self, stats: ReadStats) -> None:
        """Fold in one document's reader stats: dropped locs, protocol violations, warnings."""
        self.dropped += stats.dropped_invalid_loc + stats.dropped_too_long
        for loc in stats.invalid_loc_examples:
            if len(self.invalid_loc_examples) < _INVALID_EXAMPLES:
                self.invalid_loc_examples.append(loc)
        for text in stats.violations:
            self.violation(text)
        for text in stats.warnings:
            if text not in self.warnings and len(self.warnings) < KEEP:
                self.warnings.append(text)

    def as_dict(self) -> dict[str, Any]:
        """Return the JSON-ready form (one line of the per-host report file)."""
        out: dict[str, Any] = {name: getattr(self, name) for name in self.__slots__}
        out["seconds"] = round(self.seconds, 3)
        out["failures"] = [f.as_dict() for f in self.failures]
        out["cross_host"] = list(self.cross_host)
        out["violations"] = list(self.violations)
        out["warnings"] = list(self.warnings)
        out["foreign_loc_examples"] = list(self.foreign_loc_examples)
        out["limits_hit"] = list(self.limits_hit)
        out["failures_by_class"] = dict(self.failures_by_class)
        return out
