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

The per-URL loop and its state are the batch's ``loop`` (urlloop.py): compiled
(``_chost.UrlLoop``, a ``cdef class`` declared in harvester/crawl/_chost.pxd) or its
Python twin (``PyUrlLoop``); made with the batch and kept, it holds the buffers and
where the host's reading stands. tests/unit/crawl/test_chost.py compares the two.

Usage::

    batch = UrlBatch(host, BatchSettings.of(cfg), rules, report)
    children = batch.take(entries, sitemap_url)
    if batch.full:
        out = batch.flush()  # a RecordBatch, for the run's output
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from harvester import compiled
from harvester.audit.distribution import LastmodDistribution
from harvester.crawl.selection import Selection
from harvester.crawl.urlloop import AUDIT_ALL, FOREIGN_EXAMPLES, PyUrlLoop, authority
from harvester.models import UrlEntry
from harvester.state.ledger import EMIT_EVENTS
from harvester.urls.dedupe import SeenSet
from harvester.urls.records import encode_records

if TYPE_CHECKING:
    from array import array
    from collections.abc import Callable

    from harvester.crawl.report import HostReport
    from harvester.crawl.selection import Ledger
    from harvester.crawl.settings import BatchSettings
    from harvester.crawl.urlloop import UrlLoop
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

# The compiled URL loop (harvester/crawl/_chost.pyx); None: each batch's loop is a
# ``PyUrlLoop``. (Tests set it to None to run the Python loop.)
_chost = compiled.load("_chost")
_url_entries: Callable[..., list[Entry]] | None = _chost.url_entries if _chost is not None else None
# An entry's loc (UrlEntry and SitemapChild are NamedTuples: field 0), in C.
_LOC = operator.itemgetter(0)
# Records per emitted batch: amortises each batch's fixed costs (its flush, message,
# ledger chunk and the writer's insert); x hosts in flight = memory (see
# benchmarks/README.md for the sizes tried).
BATCH = 512


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


class UrlBatch:
    """The records of one host's URLs, in batches; create one per host."""

    __slots__ = (
        "_audit",
        "_dedupe",
        "_encode_selected",
        "_ends",
        "_filters",
        "_label_decided",
        "_runs",
        "dist",
        "fetched_at",
        "host",
        "loop",
        "modified",
        "report",
        "rules",
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
        self.host, self.rules, self.report = host, rules, report
        filtering = ledger is not None or settings.since is not None
        events = EMIT_EVENTS[emit_mode]
        self.selection = Selection(ledger, events, settings.since) if filtering else None
        # The loop's state, kept for the host (urlloop.py). Compiled, with ``encoded`` it
        # writes JSON lines: a filter labels the lines (``Selection.select_lines``), since
        # a line is a fraction of its record dict and the writer would encode it anyway;
        # with a state file too, the ledger rows' URLs as UTF-8 lines (``LedgerRows.
        # pack_text``).
        lines = encoded and _url_entries is not None
        self.loop: UrlLoop
        if _chost is not None and _url_entries is not None:
            self.loop = _chost.UrlLoop(
                host,
                rules,
                report,
                settings.max_urls,
                filtering=filtering,
                encoded=lines,
                ledger_text=ledger is not None,
                audit=settings.audit,
            )
        else:
            self.loop = PyUrlLoop(host, rules, report, settings.max_urls, filtering, settings.audit)
        # The seen-set and the audit's sketch are made at the first entries (``take``):
        # a host waiting on its robots.txt or rate limit holds neither (issue 29).
        self._dedupe = settings.dedupe
        # With lines and a state file: the sitemaps of the ledger rows (runs of
        # (sitemap, count)) and where each run ends in the loop's URL text.
        self._runs: list[tuple[str, int]] | None = [] if lines and ledger is not None else None
        self._ends: list[int] = []
        self._encode_selected = encoded and filtering and not lines
        self._label_decided = False  # label is decided at the first batch (ledger read)
        # The lastmod audit's distribution checks (issue 7): sampled URLs with their sitemap's
        # Last-Modified and fetch time; the sketch's 1,024 hashes cost a host little memory.
        self._audit = settings.audit
        self.dist: LastmodDistribution | None = None
        self.modified: datetime | None = None
        self.fetched_at = datetime.now(UTC)
        self._filters = settings.pages  # [filters] on the locs (None: no pass over the entries)
        # Each URL's robots.txt verdict (crawl/verdicts.py, issue 48); set at discovery.
        self.verdicts: HostVerdicts | None = None

    # What others read of the loop (the host worker, the verdicts, the tests).
    @property
    def cap_hit(self) -> bool:
        """Whether ``max_urls_per_host`` was reached: every later URL is skipped."""
        return self.loop.cap_hit

    @property
    def listed(self) -> int:
        """Distinct URLs of the host listed so far (what the cap counts)."""
        return self.loop.listed

    @property
    def seen(self) -> SeenSet | None:
        """The host's dedupe set (None before its first entries): what it listed."""
        return self.loop.seen

    @property
    def fps(self) -> array[int]:
        """The fingerprints of the open batch's records, in order."""
        return self.loop.fps

    @property
    def lastmods(self) -> array[int] | None:
        """Their lastmod epochs (``NO_LASTMOD``: none) when filtering, else None."""
        return self.loop.lastmods

    @property
    def encoded(self) -> bytearray | None:
        """The open batch as JSON lines (None: its records are dicts)."""
        return self.loop.encoded

    @property
    def label(self) -> bytes | None:
        """What the compiled loop writes before each line's closing brace (or None)."""
        return self.loop.label

    @label.setter
    def label(self, value: bytes | None) -> None:
        self.loop.label = value

    def at_home(self, authorities: tuple[str, ...]) -> None:
        """The URLs of the sitemap being read belong on these authorities (``authority``).

        A record whose URL is elsewhere is still emitted, and counted in the report
        (``foreign_locs``, the first ``FOREIGN_EXAMPLES`` locs as examples).
        """
        self.loop.at_home(authorities)

    @property
    def full(self) -> bool:
        """Whether the batch holds enough records to be flushed."""
        return len(self.loop.fps) >= BATCH

    def remember(self, memory: HostMemory, unverified: bool) -> None:
        """The host's state-file memory, and whether its lastmod is not trusted."""
        if self.selection is not None:
            self.selection.memory = memory
            self.selection.unverified = unverified

    def new_file(self) -> None:
        """A sitemap starts: no entry of it has been read yet."""
        self.loop.new_file()

    def new_read(self) -> None:
        """A (re-)read of the current file starts from its first entry.

        Entries up to where earlier reads got were already handled once.
        """
        self.loop.new_read()

    def sitemap_dates(self, modified: datetime | None, fetched_at: datetime) -> None:
        """The Last-Modified header and fetch time of the body being read (the audit's)."""
        self.modified, self.fetched_at = modified, fetched_at

    def take(self, entries: list[Entry], sitemap: str) -> list[Entry]:
        """Records of ``entries``' URLs into the batch; returns the others, in order."""
        loop = self.loop
        if not self._label_decided and self.selection is not None:
            loop.label = self.selection.every_line_label(loop.encoded is not None)
        self._label_decided = True
        if loop.seen is None:
            loop.seen = SeenSet(self._dedupe)
        if self._audit and self.dist is None:
            self.dist = LastmodDistribution(distinct_cap=1024)
        if self._filters is not None:
            entries = self._filter(entries)
        verdicts = self.verdicts
        marks = (len(loop.records), len(loop.encoded) if loop.encoded is not None else 0)
        if verdicts is not None:
            entries = verdicts.drop(entries, self)  # --respect-robots; a host's constant label
            loop.labels = verdicts.line_labels  # (set by drop: the compiled loop's labels)
        try:
            others = loop.take(entries, sitemap)
        finally:
            # What was sampled reaches the distribution even if a step raised.
            self._count_sample()
            if verdicts is not None and loop.labels is not None:
                loop.label = verdicts.base_label  # (the loop leaves its last line's label)
        if verdicts is not None:
            verdicts.label(loop.records, loop.encoded, marks)  # each record's "robots"
        runs = self._runs
        if runs is not None and loop.urls is not None:
            added = len(loop.fps) - sum(n for _, n in runs)
            if added and runs and runs[-1][0] == sitemap:
                # The same sitemap as the last take: one run, so one chunk.
                runs[-1] = (sitemap, runs[-1][1] + added)
                self._ends[-1] = len(loop.urls)
            elif added:
                runs.append((sitemap, added))
                self._ends.append(len(loop.urls))
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

    def _count_sample(self) -> None:
        lastmods, raws = self.loop.sample_lastmods, self.loop.sample_raws
        if self.dist is not None and lastmods and raws is not None:
            self.dist.add_many(
                lastmods, raws, sitemap_last_modified=self.modified, fetched_at=self.fetched_at
            )
            lastmods.clear()
            raws.clear()

    def flush(self) -> RecordBatch | None:
        """Hand over the batch (selected and labelled when filtering); None when empty."""
        if not self.loop.fps:
            return None
        # The loop's buffers as they are (data may be its lines, handed on without a
        # copy, which would move every output byte once more in the workers); it
        # starts new ones.
        records, fps, lastmods, encoded, text = self.loop.hand_over()
        rows: LedgerRows | None = None
        data: bytes | bytearray | None = encoded
        lines: int | None = None
        selection = self.selection
        if selection is not None and lastmods is not None:
            if encoded is not None:
                urls: tuple[bytearray, list[int]] | None = None
                runs = self._runs
                if text is not None and runs is not None:
                    urls = (text, self._ends)
                    self._runs, self._ends = [], []
                data, lines, rows = selection.select_lines(
                    self.report, encoded, fps, lastmods, urls, runs, self.loop.label
                )
            else:
                records, rows = selection.select_records(self.report, records, fps, lastmods)
                if self._encode_selected:
                    data, lines = encode_records(records), len(records)
                    records = []
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
        if self.loop.seen is not None:
            self.loop.seen.close()
