"""One host's URL batch: reader entries → records, deduplicated, capped, selected, labelled.

In: lists of reader entries (``UrlEntry`` and ``SitemapChild``) and the sitemap
that listed them. Out: ``take`` keeps the URLs' records in the batch and
returns the other entries (index children, for the crawl); ``flush`` hands
over the batch as a ``RecordBatch`` (records or their JSON lines, fingerprints,
ledger rows) once ``full``, or at the host's end; the run's output takes it as it is.

Sync and I/O-free: the host worker (``host.py``) awaits the output; this
module decides what goes into it. Per URL: the canonical form (the host's
``Rules``), the per-host dedupe (``SeenSet``), the ``max_urls_per_host`` cap,
the lastmod audit's sample, the record, and whether its URL is on the sitemap's
host (``at_home``; else a foreign loc, counted in the report). Per batch, with a state file or
``--since``: which records ``--emit``/``--since`` keep and their labels
(``Selection``).

The per-URL loop has a compiled half (harvester/crawl/_chost.pyx, ``url_entries``):
it reads and writes the ``UrlBatch`` fields named in ``_LOOP_FIELDS``, and
nothing else of it; ``_python_loop`` below does the same steps, and tests/unit/crawl/test_chost.py
compares the two.

Usage::

    batch = UrlBatch(host, BatchSettings.of(cfg), rules, report)
    children = batch.take(entries, sitemap_url)
    if batch.full:
        out = batch.flush()  # a RecordBatch, for the run's output
"""

from __future__ import annotations

import operator
from array import array
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from harvester import compiled
from harvester.audit.distribution import LastmodDistribution
from harvester.crawl.selection import Selection
from harvester.models import UrlEntry
from harvester.state.chunks import NO_LASTMOD
from harvester.state.ledger import EMIT_EVENTS
from harvester.urls.dedupe import SeenSet
from harvester.urls.fingerprint import fingerprint
from harvester.urls.records import encode_records, record

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvester.crawl.report import HostReport
    from harvester.crawl.selection import Ledger
    from harvester.crawl.settings import BatchSettings
    from harvester.crawl.verdicts import HostVerdicts
    from harvester.models import Entry
    from harvester.state.memory import HostMemory
    from harvester.state.rows import LedgerRows
    from harvester.urls.normalize import Rules

__all__ = [
    "AUDIT_ALL",
    "BATCH",
    "FOREIGN_EXAMPLES",
    "RecordBatch",
    "UrlBatch",
    "authority",
]

# The compiled URL loop (harvester/crawl/_chost.pyx); None: ``_python_loop`` does it all.
_chost = compiled.load("_chost")
_url_entries: Callable[[UrlBatch, list[Entry], str], list[Entry]] | None = (
    _chost.url_entries if _chost is not None else None
)
# An entry's loc (UrlEntry and SitemapChild are NamedTuples: field 0), in C.
_LOC = operator.itemgetter(0)
# Records per emitted batch: amortises each batch's fixed costs (its flush, message,
# ledger chunk and the writer's insert); x hosts in flight = memory (see
# benchmarks/README.md for the sizes tried).
BATCH = 512
# URLs of a host that all feed the lastmod distribution; then 1 in 8 by fingerprint
# (shares stay within a few percent). The compiled loop reads it from the batch.
AUDIT_ALL = 500
# Locs on another host kept as examples in the host report (``foreign_loc_examples``);
# the compiled loop keeps as many (its own constant: a change here is a change there).
FOREIGN_EXAMPLES = 5


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A batch of one host's records on its way out, in emission order: what
    ``UrlBatch.flush`` makes and the run's output takes, as it is.

    ``records``: the records (dicts), or empty when ``data`` holds them as JSON lines
    (a bytearray when the compiled loop wrote them, never changed once handed over);
    ``fingerprints``: the URL fingerprints, in order (of every URL listed, with a
    filter); ``rows``: with a state file, the ledger rows of every URL listed (records
    filtered out by ``--emit`` or ``--since`` included); ``lines``: how many lines
    ``data`` holds when a filter made it fewer than the fingerprints (else None).
    """

    host: str
    records: list[dict[str, Any]]
    fingerprints: array[int]
    rows: LedgerRows | None = None
    data: bytes | bytearray | None = None
    lines: int | None = None

    def encoded(self) -> bytes | bytearray:
        """The batch's JSON lines: ``data``, or ``records.encode_records`` of ``records``."""
        return self.data if self.data is not None else encode_records(self.records)

    def size(self) -> int:
        """How many records the batch holds (``fingerprints`` also counts filtered ones)."""
        if self.data is None:
            return len(self.records)
        return len(self.fingerprints) if self.lines is None else self.lines


# The fields of ``UrlBatch`` that its compiled loop (harvester/crawl/_chost.pyx, ``url_entries``)
# reads and writes, by name: its whole interface to the batch. A change here is a change
# there.
_LOOP_FIELDS = (
    "rules",  # the host's Rules (canonical forms)
    "seen",  # SeenSet of the canonical URLs' fingerprints (the per-host dedupe)
    "records",  # the batch's records (dicts), when not ``encoded``
    "fps",  # array('Q'): fingerprints of the batch's records, in order
    "lastmods",  # array('q') of their lastmod epochs (NO_LASTMOD: none) when filtering
    "host",  # the host harvested (each record's ``host``)
    "cap",  # max_urls_per_host
    "audit_all",  # AUDIT_ALL
    "listed",  # distinct URLs listed so far (what the cap counts); written back
    "position",  # URL entries the current read of the file has passed; written back
    "replayed",  # how far earlier reads of it got (seen-hits up to there: replays)
    "cap_hit",  # the cap was reached: every later URL is skipped; written back
    "report",  # the HostReport (urls, duplicates, limits)
    "encoded",  # bytearray of the batch as JSON lines, or None (records as dicts)
    "urls",  # bytearray of the canonical URLs as UTF-8 lines (ledger text), or None
    "label",  # bytes every line gets before its closing brace, or None
    "sample_lastmods",  # the audit's sample (lastmods), or None without the audit
    "sample_raws",  # ...and their texts, same order
    "home",  # authorities a record's URL may have (``at_home``), or None: not checked
    "verdicts",  # HostVerdicts or None: its ``line_labels`` label each line by its loc
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


class UrlBatch:
    """The records of one host's URLs, in batches; create one per host."""

    __slots__ = (
        *_LOOP_FIELDS,
        "_audit",
        "_dedupe",
        "_encode_selected",
        "_ends",
        "_filters",
        "_home_prefixes",
        "_label_decided",
        "_runs",
        "dist",
        "fetched_at",
        "modified",
        "selection",
        "verdicts",
    )

    def __init__(
        self,
        host: str,
        settings: BatchSettings,
        rules: Rules,
        report: HostReport,
        *,
        ledger: Ledger | None = None,
        emit_mode: str = "all",
        encoded: bool = False,
    ) -> None:
        """``ledger`` (a state file) and ``settings.since`` turn on selection.

        ``encoded``: the caller writes JSON Lines, so batches may come as their
        encoded bytes (``records.encode_records``' exact output) instead of dicts. The
        compiled loop then writes each record's line itself; when filtering, a batch
        is encoded once selected; without the compiled loop, batches stay dicts.
        """
        self.rules = rules
        # The seen-set and the audit's sketch are made at the first entries (``take``):
        # a host waiting on its robots.txt or rate limit holds neither (issue 29).
        self._dedupe = settings.dedupe
        self.seen: SeenSet | None = None
        self.records: list[dict[str, Any]] = []
        self.fps: array[int] = array("Q")
        self.host = host
        self.cap = settings.max_urls
        self.audit_all = AUDIT_ALL
        self.listed = self.position = self.replayed = 0
        self.cap_hit = False
        self.report = report
        filtering = ledger is not None or settings.since is not None
        events = EMIT_EVENTS[emit_mode]
        self.selection = Selection(ledger, events, settings.since) if filtering else None
        self.lastmods: array[int] | None = array("q") if filtering else None
        # A filter labels the lines (``Selection.select_lines``): a line is a fraction of its
        # record dict with its strings and datetime, and the writer would encode it anyway.
        self.encoded = bytearray() if encoded and _url_entries is not None else None
        # With a state file and lines, the ledger rows' URLs (UTF-8 lines: ``LedgerRows.
        # pack_text``), sitemaps (runs of (sitemap, count)) and where each run ends in them.
        lines_ledger = self.encoded is not None and ledger is not None
        self.urls = bytearray() if lines_ledger else None
        self._runs: list[tuple[str, int]] | None = [] if lines_ledger else None
        self._ends: list[int] = []
        self._encode_selected = encoded and filtering and self.encoded is None
        self.label: bytes | None = None
        self._label_decided = False  # label is decided at the first batch (ledger read)
        # The lastmod audit's distribution checks (issue 7): sampled URLs with their sitemap's
        # Last-Modified and fetch time; the sketch's 1,024 hashes cost a host little memory.
        self._audit = settings.audit
        self.dist: LastmodDistribution | None = None
        self.sample_lastmods: list[datetime | None] | None = [] if self._audit else None
        self.sample_raws: list[str | None] | None = [] if self._audit else None
        self.modified: datetime | None = None
        self.fetched_at = datetime.now(UTC)
        self.home: tuple[str, ...] | None = None
        self._home_prefixes: tuple[str, ...] = ()
        self._filters = settings.pages  # [filters] on the locs (None: no pass over the entries)
        # Each URL's robots.txt verdict (crawl/verdicts.py, issue 48); set at discovery.
        self.verdicts: HostVerdicts | None = None

    def at_home(self, authorities: tuple[str, ...]) -> None:
        """The URLs of the sitemap being read belong on these authorities (``authority``).

        A record whose URL is elsewhere is still emitted, and counted in the report
        (``foreign_locs``, the first ``FOREIGN_EXAMPLES`` locs as examples).
        """
        self.home = authorities
        # The usual URL's test in the Python loop: one startswith, not a split.
        self._home_prefixes = tuple(f"{s}://{a}/" for a in authorities for s in ("http", "https"))

    @property
    def full(self) -> bool:
        """Whether the batch holds enough records to be flushed."""
        return len(self.fps) >= BATCH

    def remember(self, memory: HostMemory, unverified: bool) -> None:
        """The host's state-file memory, and whether its lastmod is not trusted."""
        if self.selection is not None:
            self.selection.memory = memory
            self.selection.unverified = unverified

    def new_file(self) -> None:
        """A sitemap starts: no entry of it has been read yet."""
        self.position = self.replayed = 0

    def new_read(self) -> None:
        """A (re-)read of the current file starts from its first entry.

        Entries up to where earlier reads got were already handled once.
        """
        self.replayed = max(self.replayed, self.position)
        self.position = 0

    def sitemap_dates(self, modified: datetime | None, fetched_at: datetime) -> None:
        """The Last-Modified header and fetch time of the body being read (the audit's)."""
        self.modified, self.fetched_at = modified, fetched_at

    def take(self, entries: list[Entry], sitemap: str) -> list[Entry]:
        """Records of ``entries``' URLs into the batch; returns the others, in order."""
        if not self._label_decided and self.selection is not None:
            self.label = self.selection.every_line_label(self.encoded is not None)
        self._label_decided = True
        if self.seen is None:
            self.seen = SeenSet(self._dedupe)
        if self._audit and self.dist is None:
            self.dist = LastmodDistribution(distinct_cap=1024)
        if self._filters is not None:
            entries = self._filter(entries)
        verdicts = self.verdicts
        marks = (len(self.records), len(self.encoded) if self.encoded is not None else 0)
        if verdicts is not None:
            entries = verdicts.drop(entries, self)  # --respect-robots; a host's constant label
        try:
            if _url_entries is not None:
                others = _url_entries(self, entries, sitemap)
            else:
                others = self._python_loop(entries, sitemap)
        finally:
            # What was sampled reaches the distribution even if a step raised.
            self._count_sample()
        if verdicts is not None:
            verdicts.label(self.records, self.encoded, marks)  # each record's "robots"
        runs = self._runs
        if runs is not None and self.urls is not None:
            added = len(self.fps) - sum(n for _, n in runs)
            if added and runs and runs[-1][0] == sitemap:
                # The same sitemap as the last take: one run, so one chunk.
                runs[-1] = (sitemap, runs[-1][1] + added)
                self._ends[-1] = len(self.urls)
            elif added:
                runs.append((sitemap, added))
                self._ends.append(len(self.urls))
        return others

    def _filter(self, entries: list[Entry]) -> list[Entry]:
        """``entries`` less the URLs ``[filters]`` leave out, counted as ``filtered``.

        Before the loop: a filtered URL is not deduplicated, capped, sampled or put
        in the ledger, as if the sitemap did not list it.
        """
        filters = self._filters
        assert filters is not None
        if set(map(type, entries)) == {UrlEntry}:  # (a urlset's: all page URLs)
            kept = filters.select(entries, _LOC)
        else:  # index children pass (their filter is the host worker's)
            kept = [e for e in entries if type(e) is not UrlEntry or filters.keep(e.loc)]
        self.report.filtered += len(entries) - len(kept)
        return kept

    def _python_loop(self, entries: list[Entry], sitemap: str) -> list[Entry]:
        """``url_entries``' steps in Python (the compiled module is missing)."""
        seen, canon, report = self.seen, self.rules.canonical, self.report
        assert seen is not None  # (made by take)
        records, fps, lastmods = self.records, self.fps, self.lastmods
        home, prefixes = self.home, self._home_prefixes
        sample, raws = self.sample_lastmods, self.sample_raws
        host, cap, replayed = self.host, self.cap, self.replayed
        position, listed = self.position, self.listed
        others: list[Entry] = []
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
                    if position > replayed:
                        report.duplicates += 1
                    continue
                if listed >= cap:
                    # Added to the seen-set above but not emitted: harmless, since every
                    # later URL of this host is skipped too.
                    self.cap_hit = True
                    report.limit("max_urls_per_host")
                    continue
                listed += 1
                report.urls += 1
                if sample is not None and raws is not None and (listed <= AUDIT_ALL or not fp & 7):
                    sample.append(entry.lastmod)
                    raws.append(entry.lastmod_raw)
                records.append(record(entry, sitemap, host, url=url))
                if home is not None and not url.startswith(prefixes) and authority(url) not in home:
                    report.foreign_locs += 1  # emitted all the same
                    if len(report.foreign_loc_examples) < FOREIGN_EXAMPLES:
                        report.foreign_loc_examples.append(entry.loc)
                fps.append(fp)
                if lastmods is not None:
                    when = entry.lastmod
                    lastmods.append(NO_LASTMOD if when is None else int(when.timestamp()))
        finally:
            self.position, self.listed = position, listed
        return others

    def _count_sample(self) -> None:
        lastmods, raws = self.sample_lastmods, self.sample_raws
        if self.dist is not None and lastmods and raws is not None:
            self.dist.add_many(
                lastmods, raws, sitemap_last_modified=self.modified, fetched_at=self.fetched_at
            )
            lastmods.clear()
            raws.clear()

    def flush(self) -> RecordBatch | None:
        """Hand over the batch (selected and labelled when filtering); None when empty."""
        if not self.fps:
            return None
        records, self.records = self.records, []
        fps, self.fps = self.fps, array("Q")
        rows: LedgerRows | None = None
        data: bytes | bytearray | None = None
        lines: int | None = None
        encoded = self.encoded
        selection = self.selection
        if selection is not None and self.lastmods is not None:
            lastmods, self.lastmods = self.lastmods, array("q")
            if encoded is not None:
                urls: tuple[bytearray, list[int]] | None = None
                runs = self._runs
                if self.urls is not None and runs is not None:
                    urls = (self.urls, self._ends)
                    self.urls, self._runs, self._ends = bytearray(), [], []
                data, lines, rows = selection.select_lines(
                    self.report, encoded, fps, lastmods, urls, runs, self.label
                )
                self.encoded = bytearray()  # data may be this one (see select_lines)
            else:
                records, rows = selection.select_records(self.report, records, fps, lastmods)
                if self._encode_selected:
                    data, lines = encode_records(records), len(records)
                    records = []
        elif encoded is not None:
            # Handed on as it is, and the next batch gets a new buffer: a copy
            # (bytes(encoded)) would move every output byte once more in the workers.
            data, self.encoded = encoded, bytearray()
        return RecordBatch(self.host, records, fps, rows, data, lines)

    def audit(self) -> dict[str, Any] | None:
        """The host's lastmod distribution verdict (also into the report); None: nothing read.

        With the histogram, for the state file; nothing downloaded (everything 304):
        None, and the state keeps the last verdict.
        """
        dist = self.dist
        if dist is None or dist.total == 0:
            return None
        verdict = dist.verdict().as_dict()
        verdict["urls_listed"] = self.listed  # figures.total of them were counted
        self.report.lastmod_audit = verdict
        return {**verdict, "histogram": dist.histogram()}

    def close(self) -> None:
        """Delete the seen-set's spill file, if the host was that big."""
        if self.seen is not None:
            self.seen.close()
