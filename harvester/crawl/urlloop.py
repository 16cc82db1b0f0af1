"""The state of one host's URL loop, between the calls of ``UrlBatch.take``.

In: made once per ``UrlBatch`` (the host, its ``Rules``, the report, the cap and which
buffers the batch keeps); then, call by call, lists of reader entries and the sitemap
that listed them. Out: ``take`` appends the records (or their JSON lines) of the new
URLs to the buffers, counts duplicates, the cap and foreign locs into the report, and
returns the entries that are not URLs (index children); ``hand_over`` gives the
buffers to the batch's ``flush`` and starts new ones.

Two implementations with one interface (``UrlLoop``): the compiled one,
``harvester.crawl._chost.UrlLoop`` (a ``cdef class`` declared in ``_chost.pxd``: its
fields are C values read and written in place, nothing copied per call), and
``PyUrlLoop`` below, a dataclass doing the same steps in Python (without a C
compiler, or with ``HARVESTER_PURE_PYTHON=1``). tests/unit/crawl/test_chost.py runs
both on the same entries and compares everything they touch.

The constants here (``AUDIT_ALL``, ``FOREIGN_EXAMPLES``) are the compiled loop's too:
``_chost.pyx`` imports them from this module.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from harvester.models import UrlEntry
from harvester.state.chunks import NO_LASTMOD
from harvester.urls.fingerprint import fingerprint
from harvester.urls.records import record

if TYPE_CHECKING:
    from datetime import datetime

    from harvester.crawl.report import HostReport
    from harvester.models import Entry
    from harvester.urls.dedupe import SeenSet
    from harvester.urls.normalize import Rules

__all__ = ["AUDIT_ALL", "FOREIGN_EXAMPLES", "Buffers", "PyUrlLoop", "UrlLoop", "authority"]

# URLs of a host that all feed the lastmod distribution; then 1 in 8 by fingerprint
# (shares stay within a few percent).
AUDIT_ALL = 500
# Locs on another host kept as examples in the host report (``foreign_loc_examples``).
FOREIGN_EXAMPLES = 5

# What ``hand_over`` gives the batch: records (dicts), fingerprints, lastmod epochs (or
# None), JSON lines (or None), canonical URLs as UTF-8 lines (or None).
Buffers: TypeAlias = (
    "tuple[list[dict[str, Any]], array[int], array[int] | None, bytearray | None, bytearray | None]"
)


def authority(url: str) -> str:
    """The ``host[:port]`` of a canonical URL: after ``://``, up to ``/``, ``?``, ``#``.

    >>> authority("https://e.com:8443/a?b"), authority("http://e.com?x"), authority("e.com")
    ('e.com:8443', 'e.com', '')
    """
    start = url.find("://")
    if start < 0:
        return ""
    start += 3
    end = len(url)
    for mark in "/?#":
        at = url.find(mark, start, end)
        if at >= 0:
            end = at
    return url[start:end]


class UrlLoop(Protocol):
    """What ``UrlBatch`` reads and calls of its loop (both implementations)."""

    seen: SeenSet | None  # the per-host dedupe; set by the batch at its first entries
    label: bytes | None  # with ``encoded``: what every line gets before its closing brace
    # Issue 48: each line's label by its loc (``_crobots.LineLabels``; compiled loop only).
    labels: Any
    replayed: int  # URL entries earlier reads of the current file got through

    @property
    def report(self) -> HostReport:
        """The host's report: the loop counts URLs, duplicates, foreign locs, the cap."""

    @property
    def records(self) -> list[dict[str, Any]]:
        """The records (dicts) of the batch so far, when not ``encoded``."""

    @property
    def fps(self) -> array[int]:
        """``array('Q')``: the fingerprints of the batch's records, in order."""

    @property
    def lastmods(self) -> array[int] | None:
        """``array('q')`` of their lastmod epochs (``NO_LASTMOD``: none) when filtering."""

    @property
    def encoded(self) -> bytearray | None:
        """The batch as JSON lines (compiled loop only), or None: records as dicts."""

    @property
    def urls(self) -> bytearray | None:
        """The records' canonical URLs as UTF-8 lines (the ledger's text), or None."""

    @property
    def sample_lastmods(self) -> list[datetime | None] | None:
        """The lastmod audit's sample (None: no audit); the batch empties it."""

    @property
    def sample_raws(self) -> list[str | None] | None:
        """...and the lastmods' texts, in the same order."""

    @property
    def listed(self) -> int:
        """Distinct URLs of the host listed so far (what the cap counts)."""

    @property
    def position(self) -> int:
        """URL entries the current read of the current file has passed."""

    @property
    def cap_hit(self) -> bool:
        """Whether ``max_urls_per_host`` was reached (every later URL is skipped)."""

    def take(self, entries: list[Entry], sitemap: str) -> list[Entry]:
        """The URL entries' records into the buffers; returns the others, in order."""

    def at_home(self, authorities: tuple[str, ...]) -> None:
        """The authorities the current sitemap's URLs belong on (``authority``)."""

    def new_file(self) -> None:
        """A sitemap starts: no entry of it read yet."""

    def new_read(self) -> None:
        """A (re-)read of the current file starts from its first entry."""

    def hand_over(self) -> Buffers:
        """The buffers as they are; each one kept (not None) starts again empty."""


@dataclass(slots=True, eq=False)
class PyUrlLoop:
    """``_chost.UrlLoop`` in Python: the same fields, the same steps."""

    host: str
    rules: Rules
    report: HostReport
    cap: int  # max_urls_per_host
    filtering: bool  # keep lastmod epochs (a state file or --since selects)
    audit: bool  # keep the lastmod audit's sample
    seen: SeenSet | None = None
    label: bytes | None = None  # (only used with encoded lines: never here)
    labels: Any = None  # (likewise)
    replayed: int = 0
    records: list[dict[str, Any]] = field(default_factory=list)
    fps: array[int] = field(default_factory=lambda: array("Q"))
    lastmods: array[int] | None = None
    encoded: bytearray | None = None  # the Python loop keeps records as dicts
    urls: bytearray | None = None
    sample_lastmods: list[datetime | None] | None = None
    sample_raws: list[str | None] | None = None
    listed: int = 0
    position: int = 0
    cap_hit: bool = False
    home: tuple[str, ...] | None = None
    home_prefixes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.lastmods = array("q") if self.filtering else None
        self.sample_lastmods = [] if self.audit else None
        self.sample_raws = [] if self.audit else None

    def at_home(self, authorities: tuple[str, ...]) -> None:
        """The authorities the current sitemap's URLs belong on (``authority``)."""
        self.home = authorities
        # The usual URL's test: one startswith, not a split.
        self.home_prefixes = tuple(f"{s}://{a}/" for a in authorities for s in ("http", "https"))

    def new_file(self) -> None:
        """A sitemap starts: no entry of it read yet."""
        self.position = self.replayed = 0

    def new_read(self) -> None:
        """A (re-)read of the current file starts from its first entry."""
        self.replayed = max(self.replayed, self.position)
        self.position = 0

    def hand_over(self) -> Buffers:
        """The buffers as they are; each one kept (not None) starts again empty."""
        out = (self.records, self.fps, self.lastmods, self.encoded, self.urls)
        self.records, self.fps = [], array("Q")
        if self.lastmods is not None:
            self.lastmods = array("q")
        return out

    def take(self, entries: list[Entry], sitemap: str) -> list[Entry]:
        """The URL entries' records into the buffers; returns the others, in order."""
        seen, canon, report = self.seen, self.rules.canonical, self.report
        assert seen is not None  # (made by the batch's take)
        others: list[Entry] = []
        position, listed = self.position, self.listed
        try:
            for entry in entries:
                if type(entry) is not UrlEntry:
                    others.append(entry)
                    continue
                if self.cap_hit:
                    continue
                url = canon(entry.loc)
                position += 1
                fp = fingerprint(url)
                if not seen.add(fp):
                    # Within what a broken earlier read of this file already handled,
                    # a seen URL is that read's record (or duplicate) again: not counted.
                    if position > self.replayed:
                        report.duplicates += 1
                    continue
                if listed >= self.cap:
                    # Added to the seen-set above but not emitted: harmless, since every
                    # later URL of this host is skipped too.
                    self.cap_hit = True
                    report.limit("max_urls_per_host")
                    continue
                listed += 1
                self._keep(entry, url, fp, sitemap, listed)
        finally:
            self.position, self.listed = position, listed
        return others

    def _keep(self, entry: UrlEntry, url: str, fp: int, sitemap: str, listed: int) -> None:
        """A new URL within the cap: its audit sample, record, foreign check, fingerprint."""
        report = self.report
        report.urls += 1
        sample, raws = self.sample_lastmods, self.sample_raws
        if sample is not None and raws is not None and (listed <= AUDIT_ALL or not fp & 7):
            sample.append(entry.lastmod)
            raws.append(entry.lastmod_raw)
        self.records.append(record(entry, sitemap, self.host, url=url))
        home = self.home
        if (
            home is not None
            and not url.startswith(self.home_prefixes)
            and authority(url) not in home
        ):
            report.foreign_locs += 1  # emitted all the same
            if len(report.foreign_loc_examples) < FOREIGN_EXAMPLES:
                report.foreign_loc_examples.append(entry.loc)
        self.fps.append(fp)
        if self.lastmods is not None:
            when = entry.lastmod
            self.lastmods.append(NO_LASTMOD if when is None else int(when.timestamp()))
