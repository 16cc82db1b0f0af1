"""Dedupe stage: a per-host seen-set of URL fingerprints.

In: 64-bit fingerprints of canonical URLs (``harvester.urls.fingerprint``). Out:
``SeenSet.add(fp)`` says whether a fingerprint is new (emit the record) or already
seen (count a duplicate). Usage::

    seen = SeenSet(cfg.dedupe, spill_dir=tmpdir)
    if seen.add(fingerprint(url)):
        emit(record)
    seen.close()  # removes the spill file, if any

**Exact mode** (default) keeps the fingerprints as sorted ``array('Q')``
buckets keyed by their top bits: a lookup is a ``bisect`` in one bucket of a
few hundred entries, an insert a short ``memmove``. Buckets split in two when
they average more than ``_SPLIT_AT`` entries, so a small host costs one bucket
and a big one ~8.6 bytes a URL (8 for the fingerprint, ~6 % array
over-allocation, one bucket header per few hundred URLs); no numpy needed.
Past ``spill_threshold`` fingerprints in memory, the buckets (already one
globally sorted run) spill to disk: a file in ``spill_dir``, memory-mapped, the
runs merged as they spill (``harvester.urls.spill``). The files are deleted on
``close()`` (or when the set is collected).

**Table mode** (``SeenSet(table=True)``, with the compiled module): the
in-memory part is one open-addressing hash table (``_cdedupe.FpTable``) instead
of the buckets, sorted (in place) only when it spills. A lookup is one probe
instead of a bisection and an insert no ``memmove``: 2-3 times faster on a
3-million-URL set (``benchmarks/bench_writer.py``), for 11-21 bytes a URL instead
of ~8.6. The writer's run-wide cross-host set
uses it (every URL of the run goes through it); per-host sets keep the buckets.

**Small sets**: every set but the table-mode and Bloom ones starts as a small
``FpTable`` (a plain ``set`` of ints without the compiled module) and moves to
the buckets past ``SMALL_LIMIT`` fingerprints, so a host of a few thousand URLs
never bisects. ``_chost``'s loop adds to the table in C: the set of ints cost
a 32-byte int object, a hash and a set slot per URL (~0.5 s of the workers' CPU
on the ``many`` benchmark), for 4 times the memory of the table's 16 bytes.

**Bloom mode** (``mode = "bloom"``, needs the optional ``rbloom`` package) is
for billion-URL runs: ``-ln(p) / ln(2)**2`` bits a URL, ~3.6 bytes at the
default ``p = 1e-6`` allocated up front for ``bloom_capacity`` URLs. It can
drop URLs: each new URL is wrongly taken as seen with probability ``p`` while
the filter holds at most ``bloom_capacity`` URLs (and rising beyond), so it is
off by default. Its "seen" is not proof (``exact`` False): the cron path's lost-URL
rule then asks held-back sitemaps after all (``crawl.revisits``, docs/cron.md).
"""

from __future__ import annotations

import importlib
import sys
from array import array
from bisect import bisect_left
from typing import TYPE_CHECKING, Any, TypeAlias

from harvester import compiled
from harvester.config import DedupeConfig
from harvester.urls.spill import SpilledRuns

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from harvester.urls._cdedupe import Compact, FpTable

__all__ = ["SeenSet"]

_SPLIT_AT = 512  # average entries per bucket that triggers doubling the bucket count
_MAX_BITS = 20  # at most 2**20 buckets (~0.5 million entries each beyond 2**29 URLs)


_cdedupe = compiled.load("_cdedupe")
# Bulk inserts into the compact buckets (SeenSet.add_many); None: one add() at a time.
_AddMany: TypeAlias = (
    "Callable[[list[array[int]], int, array[int], list[memoryview],"
    " list[bytearray | None] | None, list[array[int] | None] | None,"
    " list[tuple[int, int] | None] | None],"
    " tuple[int, int]]"
)
_add_many: _AddMany | None = _cdedupe.add_many if _cdedupe is not None else None
# Table mode's in-memory set (see the module docstring); None: the buckets instead.
_FpTable: type[FpTable] | None = _cdedupe.FpTable if _cdedupe is not None else None
# The compiled URL loop's inserts past the small set (SeenSet.compact); None: add() each.
_Compact: type[Compact] | None = _cdedupe.Compact if _cdedupe is not None else None


# Fingerprints kept in the small set before the compact buckets take over: a table of
# 16,384 takes 256 KiB at most, as the plain set of 4,096 ints it replaced did.
SMALL_LIMIT = 16384 if _FpTable is not None else 4096


class SeenSet:
    """A per-host set of 64-bit fingerprints with bounded memory; see the module docstring.

    Not thread-safe; one owner (the host worker). ``add`` is the only hot call.
    """

    __slots__ = (
        "_bits",
        "_bloom",
        "_buckets",
        "_in_memory",
        "_shift",
        "_small",
        "_small_limit",
        "_spilled",
        "_split_at",
        "_table",
        "_threshold",
        "count",
    )

    def __init__(
        self,
        cfg: DedupeConfig | None = None,
        *,
        spill_dir: str | Path | None = None,
        table: bool = False,
    ):
        """``table``: keep the in-memory fingerprints in a hash table (table mode, in
        the module docstring; where the compiled module is missing, the buckets)."""
        cfg = cfg if cfg is not None else DedupeConfig()
        self.count = 0  # distinct fingerprints added (for bloom: believed distinct)
        self._threshold = cfg.spill_threshold  # in-memory fingerprints before a spill
        self._bits = 0  # log2 of the bucket count
        self._shift = 64  # fp >> shift is the bucket index
        self._split_at = _SPLIT_AT  # in-memory count that triggers the next split
        self._buckets: list[array[int]] = [array("Q")]  # sorted, partitioned by top bits
        self._in_memory = 0  # fingerprints in _buckets
        # The runs spilled to disk (spill.py), their files in spill_dir (None: the
        # system temp dir).
        self._spilled = SpilledRuns(self._threshold, spill_dir)
        self._bloom: Any = None  # rbloom.Bloom in bloom mode
        # Most hosts list a few thousand URLs: a hash set answers ~10x faster than
        # bisect + insert (module docstring, small sets). Past SMALL_LIMIT its
        # contents move into the compact buckets (None from then on).
        self._small_limit = min(SMALL_LIMIT, self._threshold)
        self._small: FpTable | set[int] | None = self._new_small()
        # Table mode: the hash table from the first fingerprint (fast at any size); it
        # expects at most the threshold (see FpTable's capacity).
        self._table: FpTable | None = (
            _FpTable(self._threshold) if table and _FpTable is not None else None
        )
        if self._table is not None:
            self._small = None
        if cfg.mode == "bloom":
            rbloom = importlib.import_module("rbloom")  # optional dependency
            self._bloom = rbloom.Bloom(cfg.bloom_capacity, cfg.bloom_error_rate)
            self._small = None
            self._table = None

    # The small mode's set, for the compiled URL loop (harvester/crawl/_chost.pyx), which adds
    # to it directly while it holds fewer than ``small_limit - 1`` fingerprints (then
    # adds what it added to ``count``) and calls ``add`` from there on.
    @property
    def exact(self) -> bool:
        """Whether ``fp in set`` is always right: False in bloom mode (a false positive
        says seen; "not seen" is always right). The cron path's lost-URL rule asks it."""
        return self._bloom is None

    @property
    def small(self) -> FpTable | set[int] | None:
        """The small set (an ``FpTable`` or a set of ints); None once left, or never used."""
        return self._small

    @property
    def small_limit(self) -> int:
        """Fingerprints at which ``add`` moves the small set into the compact buckets."""
        return self._small_limit

    def add(self, fp: int) -> bool:
        """Record ``fp``; return True if it was not seen before."""
        small = self._small
        if small is not None:
            if fp in small:
                return False
            small.add(fp)
            self.count += 1
            if len(small) >= self._small_limit:
                self._leave_small(small)
            return True
        if self._bloom is not None:
            if fp in self._bloom:
                return False
            self._bloom.add(fp)
            self.count += 1
            return True
        if self._table is not None:
            return self.add_many(array("Q", [fp])) == 0
        if self._add_compact(fp):
            self.count += 1
            return True
        return False

    def add_many(self, fps: array[int]) -> int:
        """Record every fingerprint of ``fps`` (an ``array('Q')``); return how many were seen.

        The same as ``add`` on each in turn. In the compact mode with the compiled
        module, one call inserts the whole batch (far cheaper than one call each)
        and the buckets split or spill afterwards, at most one batch later than
        ``add`` would have: membership is the same either way.
        """
        if _add_many is None or self._small is not None or self._bloom is not None:
            return sum(1 for fp in fps if not self.add(fp))
        runs, filters, fences, reads = self._runs()
        if self._table is not None:
            added, repeated = self._table.add_many(fps, runs, filters, fences, reads)
        else:
            added, repeated = _add_many(
                self._buckets, self._shift, fps, runs, filters, fences, reads
            )
        self.settle(added)
        return repeated

    def compact(self) -> Compact | None:
        """For the compiled URL loop (``_chost``): a handle that adds to the compact
        buckets in C (``Compact``), or None where ``add`` must be called (the small set,
        bloom or table mode, no compiled module). Its adds count once it is dropped and
        ``settle`` is given its ``count`` (at the latest once it has added its ``room``);
        nothing else may touch the set meanwhile.
        """
        if (
            _Compact is None
            or self._small is not None
            or self._bloom is not None
            or self._table is not None
        ):
            return None
        # add splits once past _split_at, spills at the threshold: the handle's room.
        room = min(self._split_at + 1, self._threshold) - self._in_memory
        return _Compact(self._buckets, self._shift, *self._runs(), max(room, 1))

    def settle(self, added: int) -> None:
        """``added`` fingerprints went into the in-memory part in bulk (``add_many``,
        a ``compact`` handle): count them, then split or spill as ``add`` would have."""
        self.count += added
        self._in_memory += added
        while self._table is None and self._in_memory > self._split_at:
            self._split()
        if self._in_memory >= self._threshold:
            self._spill()

    def _runs(
        self,
    ) -> tuple[
        list[memoryview],
        list[bytearray | None] | None,
        list[array[int] | None] | None,
        list[tuple[int, int] | None],
    ]:
        """The spilled runs as the compiled inserts read them: views, their filters and
        fences (None: not one each), and where each is read from."""
        spilled = self._spilled
        runs = [view for _, view in spilled.runs]
        filters = spilled.filters if len(spilled.filters) == len(runs) else None
        fences = spilled.fences if len(spilled.fences) == len(runs) else None
        # Each run is a whole file of its own (offset 0).
        reads: list[tuple[int, int] | None] = [(fh.fileno(), 0) for fh in spilled.files]
        return runs, filters, fences, reads

    def _new_small(self) -> FpTable | set[int]:
        return _FpTable(self._small_limit) if _FpTable is not None else set()

    def _leave_small(self, small: FpTable | set[int]) -> None:
        """Move the small set's fingerprints into the compact buckets (``_small`` None)."""
        self._small = None
        if _add_many is not None:
            # One compiled call for them all, not one _add_compact (bisect, insert) each.
            self.count -= len(small)  # counted already; add_many counts them again
            self.add_many(array("Q", sorted(small)))
        else:
            for old in sorted(small):
                self._add_compact(old)

    def _add_compact(self, fp: int) -> bool:
        """Add to the sorted buckets (and check the spilled runs); True if new."""
        bucket = self._buckets[fp >> self._shift]
        i = bisect_left(bucket, fp)
        if i < len(bucket) and bucket[i] == fp:
            return False
        if self._spilled.runs and fp in self._spilled:
            return False
        bucket.insert(i, fp)
        self._in_memory += 1
        if self._in_memory > self._split_at:
            self._split()
        if self._in_memory >= self._threshold:
            self._spill()
        return True

    def __contains__(self, fp: int) -> bool:
        if self._small is not None:
            return fp in self._small
        if self._bloom is not None:
            return fp in self._bloom
        if self._table is not None:
            return fp in self._table or fp in self._spilled
        bucket = self._buckets[fp >> self._shift]
        i = bisect_left(bucket, fp)
        return (i < len(bucket) and bucket[i] == fp) or fp in self._spilled

    def __len__(self) -> int:
        return self.count

    def _split(self) -> None:
        """Double the bucket count: each sorted bucket splits at its midpoint value."""
        self._bits += 1
        self._shift = 64 - self._bits
        # Past _MAX_BITS buckets only grow (the split threshold can no longer be reached).
        self._split_at = _SPLIT_AT << self._bits if self._bits < _MAX_BITS else 1 << 64
        new: list[array[int]] = []
        for index, bucket in enumerate(self._buckets):
            mid = bisect_left(bucket, ((index << 1) | 1) << self._shift)
            new.append(bucket[:mid])
            new.append(bucket[mid:])
        self._buckets = new

    def _spill(self) -> None:
        """Write the in-memory fingerprints (one sorted run) to a file of its own and map
        it (``SpilledRuns.add``); then merge runs (``SpilledRuns.merge``)."""
        # Table mode: sorted once, here, in the table's own memory (cleared below).
        runs: list[Any] = [self._table.sort()] if self._table is not None else self._buckets
        try:
            self._spilled.add(runs, self._in_memory, fenced=_add_many is not None)
        finally:
            if self._table is not None:  # (also if the write failed: the view must end)
                runs[0].release()
                self._table.clear()
        self._buckets = [array("Q")]
        self._bits, self._shift, self._split_at, self._in_memory = 0, 64, _SPLIT_AT, 0
        self._spilled.merge()
        self._spilled.fit_filters()

    @property
    def memory_bytes(self) -> int:
        """Bytes this set holds in memory (excluding spilled runs, which live in the page cache)."""
        if self._bloom is not None:
            return int(self._bloom.size_in_bits) // 8
        small = 0
        if isinstance(self._small, set):
            small = sys.getsizeof(self._small)
        elif self._small is not None:
            small = self._small.nbytes
        table = self._table.nbytes if self._table is not None else 0
        filters = sum(sys.getsizeof(f) for f in self._spilled.filters if f is not None)
        return (
            small
            + table
            + filters
            + sys.getsizeof(self._buckets)
            + sum(map(sys.getsizeof, self._buckets))
        )

    @property
    def spilled(self) -> int:
        """Fingerprints that live in spilled runs on disk."""
        return sum(len(run) for _, run in self._spilled.runs)

    def close(self) -> None:
        """Unmap and delete the spill file; the set is empty afterwards. Idempotent."""
        self._spilled.close()
        self._buckets = [array("Q")]
        self._bits, self._shift, self._split_at, self._in_memory = 0, 64, _SPLIT_AT, 0
        if self._table is not None:
            self._table.clear()
        self._small = self._new_small() if self._bloom is None and self._table is None else None
        self.count = 0

    def __enter__(self) -> SeenSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
