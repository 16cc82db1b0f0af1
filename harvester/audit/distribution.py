"""Lastmod audit, part 1: is a host's ``<lastmod>`` worth anything? (issue 7)

Pure and I/O-free; the pipeline feeds it, the state store keeps its outputs.

In: per URL of one host, the parsed lastmod (``UrlEntry.lastmod``), the text
as published (``lastmod_raw``), the sitemap file's HTTP ``Last-Modified`` and
the time the sitemap was fetched. Out:

* ``LastmodDistribution.verdict()`` → ``LastmodVerdict``: one of ``absent``,
  ``generation_time``, ``future``, ``constant``, ``plausible``, with the
  ``LastmodFigures`` that led to it (those types: ``audit/verdict.py``).
* ``LastmodDistribution.histogram()`` → month buckets for a chart.

Across runs, whether lastmod is to be trusted is ``audit/trust.py``'s.

Memory stays bounded for hosts with millions of URLs (see ``LastmodDistribution``).

Example::

    dist = LastmodDistribution()
    for entry in entries_of_host:
        dist.add(entry.lastmod, entry.lastmod_raw,
                 sitemap_last_modified=ref_header, fetched_at=fetched_at)
    verdict = dist.verdict()          # LastmodVerdict(verdict=<Verdict.PLAUSIBLE>, ...)
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from harvester import compiled
from harvester.audit.verdict import LastmodFigures, LastmodVerdict, VerdictThresholds, judge
from harvester.dates import format_utc

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "DEFAULT_FUTURE_SKEW",
    "DEFAULT_TOLERANCE",
    "LastmodDistribution",
    "count_python",
    "month_buckets",
]

# Generation-time tolerance. A generator that stamps "now" on every entry while
# writing a file crosses at most one second boundary for one sitemap (the
# issue's news sitemap: two timestamps a second apart), and HTTP Last-Modified
# has whole-second resolution (truncated), so entries fall within ±2 s of it.
DEFAULT_TOLERANCE = timedelta(seconds=2)
# Beyond this after the fetch a lastmod is "in the future". NTP-synced clocks
# differ by well under a second; 5 minutes forgives an unsynced server but is
# far below the smallest real time-zone offset (30 min), so a local time
# mislabelled as UTC east of Greenwich still shows up as future.
DEFAULT_FUTURE_SKEW = timedelta(minutes=5)
# Before this nothing was published on the web; such dates are placeholders
# (0001-01-01, 1970-01-01 from a zero timestamp, 1900-01-01 defaults).
WEB_EPOCH = datetime(1995, 1, 1, tzinfo=UTC)

_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_WEB_EPOCH_US = (WEB_EPOCH - _UNIX_EPOCH) // _MICROSECOND
_DAY_US = timedelta(days=1) // _MICROSECOND
_DATE_ONLY = re.compile(r"\s*\d{4}(?:-\d{2}(?:-\d{2})?)?\s*", re.ASCII).fullmatch
_MASK64 = (1 << 64) - 1

# The compiled counter (harvester/audit/_cdistribution.pyx, ``count_lastmods``):
# ``count_entries`` for the usual entries in C; None: ``count_entries`` counts them all.
_cdistribution = compiled.load("_cdistribution")
_count_lastmods: (
    Callable[[LastmodDistribution, list[datetime | None], list[str | None]], None] | None
) = _cdistribution.count_lastmods if _cdistribution is not None else None


def _mix64(x: int) -> int:
    """Splitmix64 finaliser: a deterministic, well-spread 64-bit hash of an int.

    Python's own ``hash(int)`` is the identity for small ints, which would make
    the distinct-count sketch estimate garbage for sequential timestamps.
    """
    z = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _fill_heap(heap: list[int], kmv: set[int]) -> None:
    """Make ``heap`` (in place: the distribution holds it) the max-heap of ``kmv``, negated."""
    heap[:] = [-h for h in kmv]
    heapq.heapify(heap)


@dataclass(slots=True)
class LastmodDistribution:
    """Streaming per-host accumulator of lastmod figures, with bounded memory.

    Counters are exact. Two figures need per-value state, kept bounded:

    * **distinct timestamps**: a KMV sketch, the ``distinct_cap`` smallest
      64-bit hashes seen. Below the cap it holds every distinct value, so the
      count is exact; above it the estimate is ``(k - 1) / kth_smallest`` (about
      ``1/sqrt(k)`` = 1.6 % standard error at 4096) and ``distinct_exact`` is False.
    * **modal timestamp**: a Misra-Gries counter of ``modal_cap`` values. Exact
      while there are at most that many distinct values; beyond, any value
      with more than ``dated / (modal_cap + 1)`` entries is still found and its
      count is a lower bound off by at most that much (``modal_exact`` False).

    Both merge (``merge``), so per-worker partials combine; while within the
    caps, merging gives exactly what one accumulation would.

    >>> d = LastmodDistribution()
    >>> d.add(None, None, sitemap_last_modified=None, fetched_at=datetime(2026, 1, 1, tzinfo=UTC))
    >>> d.verdict().verdict
    <Verdict.ABSENT: 'absent'>
    """

    tolerance: timedelta = DEFAULT_TOLERANCE
    future_skew: timedelta = DEFAULT_FUTURE_SKEW
    distinct_cap: int = 4096
    modal_cap: int = 256
    total: int = field(default=0, init=False)
    dated: int = field(default=0, init=False)
    generation: int = field(default=0, init=False)  # within tolerance of Last-Modified/fetch
    future: int = field(default=0, init=False)
    before_1995: int = field(default=0, init=False)
    date_only: int = field(default=0, init=False)
    # KMV sketch: hashes kept (set for membership) and, once the set is full, the same as
    # a max-heap (negated): below the cap only the set is needed (an exact count), and a
    # heap push per distinct timestamp was most of what a new one cost (_fill_heap).
    _kmv: set[int] = field(default_factory=set, init=False, repr=False)
    _kmv_heap: list[int] = field(default_factory=list, init=False, repr=False)
    # Misra-Gries counter, keyed by whole microseconds since the epoch.
    _modal: dict[int, int] = field(default_factory=dict, init=False, repr=False)
    _modal_evicted: bool = field(default=False, init=False, repr=False)
    # Month index (year*12 + month-1) → count; pre-1995 and future go to -1 / -2
    # so the number of buckets is bounded by the months since 1995.
    _months: dict[int, int] = field(default_factory=dict, init=False, repr=False)
    # UTC days of the generation references, for date-only "lastmod = today";
    # one or two per sitemap, capped because only its membership is asked.
    _ref_days: set[int] = field(default_factory=set, init=False, repr=False)
    # The last (fetched_at, Last-Modified) objects and their microsecond forms
    # (fetch, header, future limit); see _set_references.
    _ref: tuple[datetime | None, datetime | None, int, int | None, int] = field(
        default=(None, None, 0, None, 0), init=False, repr=False
    )
    _tol_us: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._tol_us = self.tolerance // _MICROSECOND

    def add(
        self,
        lastmod: datetime | None,
        raw: str | None,
        *,
        sitemap_last_modified: datetime | None,
        fetched_at: datetime,
    ) -> None:
        """Count one URL entry (``lastmod`` aware UTC or None, as the reader yields it)."""
        self.add_many(
            (lastmod,), (raw,), sitemap_last_modified=sitemap_last_modified, fetched_at=fetched_at
        )

    def add_many(
        self,
        lastmods: Sequence[datetime | None],
        raws: Sequence[str | None],
        *,
        sitemap_last_modified: datetime | None,
        fetched_at: datetime,
    ) -> None:
        """Count URL entries of one sitemap: ``lastmods[i]`` with its text ``raws[i]``.

        The one entry point of the count: ``add`` is this for one entry, and the URL
        batch (harvester/crawl/batch.py, its Python and its compiled loop alike) hands over
        the sample of each list of entries it takes. The references are set once per
        call; the count is ``count_entries``, or its compiled path.
        """
        if not lastmods:
            return
        if fetched_at is not self._ref[0] or sitemap_last_modified is not self._ref[1]:
            self._set_references(fetched_at, sitemap_last_modified)
        if _count_lastmods is not None:
            _count_lastmods(
                self,
                lastmods if type(lastmods) is list else list(lastmods),
                raws if type(raws) is list else list(raws),
            )
        else:
            self.count_entries(lastmods, raws)

    def count_entries(
        self, lastmods: Sequence[datetime | None], raws: Sequence[str | None]
    ) -> None:
        """Count entries against the references ``add_many`` set (``count_python``).

        The compiled counter does the same for the usual entries (no lastmod, or a
        ``datetime`` in UTC) and hands every other one to this method.
        """
        count_python(self, lastmods, raws)

    # -- the compiled counter's surface (harvester/audit/_cdistribution.pyx, count_lastmods) --
    # It updates the containers ``counting_tables`` returns in place, exactly as
    # ``count_entries`` does, calls ``sketch``/``count_entries`` for the rare cases,
    # and adds its counters with ``add_counts``.

    def counting_tables(
        self,
    ) -> tuple[dict[int, int], dict[int, int], set[int], list[int], int, int | None, int, int]:
        """``(months, modal, kmv, kmv_heap, fetch_us, header_us, future_us, tolerance_us)``.

        The containers a count updates in place (month counts, the Misra-Gries
        counter, the KMV sketch's set and heap) and the references ``add_many`` set
        (microseconds since 1970: fetch time, Last-Modified or None, future limit).
        """
        _, _, fetch_us, header_us, future_us = self._ref
        return (
            self._months,
            self._modal,
            self._kmv,
            self._kmv_heap,
            fetch_us,
            header_us,
            future_us,
            self._tol_us,
        )

    def add_counts(
        self,
        total: int,
        dated: int,
        generation: int,
        future: int,
        before: int,
        date_only: int,
        *,
        modal_evicted: bool = False,
    ) -> None:
        """Add a count's exact counters (``before``: to ``before_1995``).

        ``modal_evicted``: the count evicted values from the modal counter itself
        (``count_modal``'s eviction for one entry, in place), so it is no longer exact.
        """
        self._modal_evicted |= modal_evicted
        self.total += total
        self.dated += dated
        self.generation += generation
        self.future += future
        self.before_1995 += before
        self.date_only += date_only

    def _set_references(self, fetched_at: datetime, header: datetime | None) -> None:
        # Called once per sitemap in practice (callers pass the same objects for
        # all of its entries), so the conversions are off the per-URL path.
        fetch_us = (fetched_at - _UNIX_EPOCH) // _MICROSECOND
        header_us = None if header is None else (header - _UNIX_EPOCH) // _MICROSECOND
        future_us = fetch_us + self.future_skew // _MICROSECOND
        self._ref = (fetched_at, header, fetch_us, header_us, future_us)
        for ref in (fetched_at, header):
            if ref is not None and len(self._ref_days) < 64:
                self._ref_days.add(ref.astimezone(UTC).toordinal())

    def count_modal(self, key: int, n: int) -> None:
        """Count ``n`` entries of the timestamp ``key`` (µs) in the Misra-Gries counter."""
        modal = self._modal
        if key in modal:
            modal[key] += n
        elif len(modal) < self.modal_cap:
            modal[key] = n
        else:
            # Misra-Gries: the new value and every kept one lose the same count.
            # Amortised O(1): each round removes cap+1 counts that were added once.
            self._modal_evicted = True
            dec = min(n, *modal.values())
            for k in list(modal):
                modal[k] -= dec
                if modal[k] == 0:
                    del modal[k]
            if n > dec:
                self.count_modal(key, n - dec)

    def sketch(self, h: int) -> None:
        """Offer the hash ``h`` of a timestamp to the KMV sketch."""
        kmv = self._kmv
        if h in kmv:
            return
        heap = self._kmv_heap
        if len(kmv) < self.distinct_cap:
            kmv.add(h)
            if len(kmv) == self.distinct_cap:
                _fill_heap(heap, kmv)
        elif h < -heap[0]:
            kmv.discard(-heapq.heappushpop(heap, -h))
            kmv.add(h)

    def merge(self, other: LastmodDistribution) -> None:
        """Fold another accumulator of the same host into this one.

        Raises ``ValueError`` when the two were built with different settings:
        their counts would not mean the same thing.
        """
        if self._settings() != other._settings():
            raise ValueError(f"cannot merge {other._settings()} into {self._settings()}")
        self.total += other.total
        self.dated += other.dated
        self.generation += other.generation
        self.future += other.future
        self.before_1995 += other.before_1995
        self.date_only += other.date_only
        for month, n in other._months.items():
            self._months[month] = self._months.get(month, 0) + n
        for h in other._kmv:
            self.sketch(h)
        self._modal_evicted |= other._modal_evicted
        for key, n in other._modal.items():
            self.count_modal(key, n)
        for day in other._ref_days:
            if len(self._ref_days) < 64:
                self._ref_days.add(day)

    def _settings(self) -> tuple[timedelta, timedelta, int, int]:
        return (self.tolerance, self.future_skew, self.distinct_cap, self.modal_cap)

    def distinct(self) -> tuple[int, bool]:
        """Return ``(distinct timestamps, exact?)``; an estimate past ``distinct_cap``."""
        if len(self._kmv) < self.distinct_cap:
            return len(self._kmv), True
        kth = -self._kmv_heap[0] + 1  # the k-th smallest hash, as a count of 2^-64
        return max(self.distinct_cap, round((self.distinct_cap - 1) * 2**64 / kth)), False

    def histogram(self, max_buckets: int = 120) -> list[tuple[str, int]]:
        """Return ``(label, count)`` in time order: ``YYYY-MM`` buckets, or years.

        Months are merged into years when more than ``max_buckets`` would be
        needed between the first and last. ``<1995`` and ``future`` come first
        and last when present. Empty months inside the range are included so a
        chart's x axis is linear.
        """
        return month_buckets(self._months, max_buckets)

    def figures(self) -> LastmodFigures:
        """Return the figures so far (cheap: O(modal_cap))."""
        dated = self.dated
        modal_key, modal_n, cluster_n = None, 0, 0
        if self._modal:
            # The most counted value, the earliest of a tie: max by (count, -value) made a
            # tuple per kept value through a lambda, for every host (~0.1 s a run).
            modal = self._modal
            modal_n = max(modal.values())
            modal_key = min(k for k, n in modal.items() if n == modal_n)
            low, high = modal_key - self._tol_us, modal_key + self._tol_us
            cluster_n = sum(n for k, n in modal.items() if low <= k <= high)
        distinct, exact = self.distinct()

        def share(n: int) -> float:
            return round(n / dated, 6) if dated else 0.0

        return LastmodFigures(
            total=self.total,
            dated=dated,
            undated_share=round((self.total - dated) / self.total, 6) if self.total else 0.0,
            modal_timestamp=(
                None if modal_key is None else format_utc(_UNIX_EPOCH + modal_key * _MICROSECOND)
            ),
            modal_share=share(modal_n),
            modal_cluster_share=share(cluster_n),
            modal_exact=not self._modal_evicted,
            distinct_timestamps=distinct,
            distinct_exact=exact,
            generation_share=share(self.generation),
            future_share=share(self.future),
            before_1995_share=share(self.before_1995),
            date_only_share=share(self.date_only),
            tolerance_seconds=self.tolerance.total_seconds(),
        )

    def verdict(self, thresholds: VerdictThresholds | None = None) -> LastmodVerdict:
        """Classify the distribution (``verdict.judge``: its rules, in ``Verdict`` order).

        Order matters: generation timestamps are also one constant value, so
        ``generation_time`` (the more specific diagnosis) is tried before
        ``constant``; an impossible ``future`` beats ``constant`` too.
        """
        return judge(self.figures(), thresholds or VerdictThresholds(), self._ref_days)


def count_python(
    dist: LastmodDistribution, lastmods: Sequence[datetime | None], raws: Sequence[str | None]
) -> None:
    """``LastmodDistribution.count_entries`` in Python, through the surface the compiled
    counter uses too (``counting_tables``, ``count_modal``, ``sketch``, ``add_counts``)."""
    months, modal, kmv, heap, fetch_us, header_us, future_us, tol = dist.counting_tables()
    modal_cap, distinct_cap = dist.modal_cap, dist.distinct_cap
    total = dated = generation = future = before = date_only = 0
    try:
        for lastmod, raw in zip(lastmods, raws, strict=True):
            total += 1
            if lastmod is None:
                continue
            dated += 1
            # Whole microseconds since 1970: exact, hashable, and int comparisons
            # are several times cheaper than datetime arithmetic on this path.
            key = (lastmod - _UNIX_EPOCH) // _MICROSECOND
            month = lastmod.year * 12 + lastmod.month - 1
            if abs(key - fetch_us) <= tol or (
                header_us is not None and abs(key - header_us) <= tol
            ):
                generation += 1
            limit = future_us
            # Parsed date-only forms (YYYY, YYYY-MM, YYYY-MM-DD) are the only ones
            # this short.
            if raw is not None and len(raw) <= 10 and _DATE_ONLY(raw) is not None:
                date_only += 1
                # A day, not an instant: "today" east of Greenwich is midnight UTC
                # of a day that has not begun there yet; only later days are future.
                limit += _DAY_US
            if key > limit:
                future += 1
                month = -2
            elif key < _WEB_EPOCH_US:
                before += 1
                month = -1
            months[month] = months.get(month, 0) + 1
            # The common cases of count_modal and sketch, inlined.
            if key in modal:
                modal[key] += 1
            elif len(modal) < modal_cap:
                modal[key] = 1
            else:
                dist.count_modal(key, 1)
            h = _mix64(key)
            if h not in kmv and (len(kmv) < distinct_cap or h < -heap[0]):
                dist.sketch(h)
    finally:
        # What was counted stays counted even if an entry raised.
        dist.add_counts(total, dated, generation, future, before, date_only)


def month_buckets(months_in: dict[int, int], max_buckets: int) -> list[tuple[str, int]]:
    """``LastmodDistribution.histogram`` of the month counts ``months_in`` (month index
    ``year * 12 + month - 1``; -1: before 1995, -2: future)."""
    months = sorted(m for m in months_in if m >= 0)
    out: list[tuple[str, int]] = []
    if -1 in months_in:
        out.append(("<1995", months_in[-1]))
    if months:
        if months[-1] - months[0] + 1 <= max_buckets:
            out.extend(
                (f"{m // 12:04d}-{m % 12 + 1:02d}", months_in.get(m, 0))
                for m in range(months[0], months[-1] + 1)
            )
        else:
            years: dict[int, int] = {}
            for m in months:
                years[m // 12] = years.get(m // 12, 0) + months_in[m]
            out.extend((f"{y:04d}", years.get(y, 0)) for y in range(min(years), max(years) + 1))
    if -2 in months_in:
        out.append(("future", months_in[-2]))
    return out
