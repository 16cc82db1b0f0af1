"""Dedupe stage, on disk: a seen-set's fingerprints spilled as sorted runs.

In: from a ``SeenSet`` (``harvester.urls.dedupe``) that reached its
``spill_threshold``, its in-memory fingerprints as sorted parts that together make
one globally sorted run (its buckets, or its hash table sorted in place). Out:
membership (``fp in spilled``), and each run's mapping, Bloom filter, fence and
file (``runs``, ``filters``, ``fences``, ``files``), which the set's compiled bulk
insert (``_cdedupe.add_many``) looks the runs up with. Its own module: the files,
their mappings, the filters and their memory budget, and the merging are a concern
apart from the set's in-memory modes. One ``SeenSet`` owns each ``SpilledRuns``.

Each spill is written to a temporary file in ``spill_dir`` and memory-mapped
read-only; lookups then ``bisect`` each run through the page cache (with the
compiled module: its Bloom filter first, then one page read with ``pread``). Runs
are **merged** as they spill, like a binary counter: while the newest run is at
least as long as the one before, the two become one (``_cdedupe.merge_runs``, a
streaming merge that makes the new filter and fence as it writes). So ``k``
spills leave at most ``log2(k) + 1`` runs and each fingerprint is rewritten
``log2(k)`` times: without it a lookup checked one run per spill, and the
writer's cross-host set, spilling every 1.5 million URLs, made the writer's CPU
per URL grow with the run (realweb 100,000 domains: 16 runs, half of them past
the filter budget and read with a ``pread`` per URL; the writer went from 0.15
to 0.75 of a core). The files are deleted on ``close()`` (or when the set is
collected).
"""

from __future__ import annotations

import mmap
import tempfile
from array import array
from bisect import bisect_left
from typing import TYPE_CHECKING, Any

from harvester import compiled

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

__all__ = ["SpilledRuns"]

_cdedupe = compiled.load("_cdedupe")
# A spilled run's fence: its first fingerprint of every page (FENCE of them). add_many
# bisects the fence, then reads that one page of the run with pread, not through the
# mapping: a page read through a mapping stays in the process's RSS until unmapped.
_FENCE: int = _cdedupe.FENCE if _cdedupe is not None else 512
# A Bloom filter of each spilled run, which add_many tests before bisecting the run.
_run_filter: Callable[[list[array[int]]], bytearray] | None = (
    _cdedupe.run_filter if _cdedupe is not None else None
)
# Two spilled runs merged into one file (SpilledRuns.merge); None: runs are never merged.
_merge_runs: Callable[..., tuple[int, bytearray | None, array[int]]] | None = (
    _cdedupe.merge_runs if _cdedupe is not None else None
)
# Bytes of run filters a set may hold at least (beyond: 8 bytes a fingerprint up to its
# threshold): the writer's cross-host set, at 1.5 million a spill, keeps every run
# filtered up to ~40 million spilled URLs.
_FILTER_FLOOR = 64 << 20


def _fence(buckets: list[array[int]]) -> array[int]:
    """The run the sorted ``buckets`` make, one fingerprint in ``_FENCE``: ``run[::_FENCE]``."""
    fence: array[int] = array("Q")
    start = 0  # the run's index of the bucket's first fingerprint
    for bucket in buckets:
        fence.extend(bucket[-start % _FENCE :: _FENCE])
        start += len(bucket)
    return fence


class SpilledRuns:
    """A seen-set's spilled runs: sorted files of fingerprints, mapped read-only.

    Not thread-safe; one owner (the ``SeenSet``), which reads ``runs``, ``filters``,
    ``fences`` and ``files`` for its bulk insert and never changes them.
    """

    __slots__ = ("_spill_dir", "fences", "files", "filter_budget", "filters", "runs")

    def __init__(self, threshold: int, spill_dir: str | Path | None = None) -> None:
        """``threshold``: the owner's in-memory fingerprints before a spill (its budget
        for filters follows from it); ``spill_dir``: where the files go."""
        self._spill_dir = spill_dir  # where the spill file goes (None: the system temp dir)
        self.files: list[Any] = []  # each run's spill file (a NamedTemporaryFile)
        self.runs: list[tuple[mmap.mmap, memoryview]] = []  # spilled sorted runs, mapped
        self.filters: list[bytearray | None] = []  # a Bloom filter per run, or None
        self.fences: list[array[int] | None] = []  # a fence per run, or None
        # Bytes the runs' filters may hold: 8 a fingerprint up to the threshold (what the
        # buckets may take), at least _FILTER_FLOOR (the writer's cross-host set).
        self.filter_budget = max(8 * threshold, _FILTER_FLOOR)

    def __contains__(self, fp: int) -> bool:
        for _, run in self.runs:
            j = bisect_left(run, fp)
            if j < len(run) and run[j] == fp:
                return True
        return False

    def _new_file(self) -> Any:
        return tempfile.NamedTemporaryFile(  # closed in close() or merge
            prefix="harvester-seen-", suffix=".u64", dir=self._spill_dir
        )

    def add(self, runs: list[Any], count: int, *, fenced: bool) -> None:
        """Write ``runs`` (sorted parts of one sorted run, ``count`` fingerprints in all)
        to a file of its own and map it, with its filter and (if ``fenced``) its fence."""
        fh = self._new_file()
        try:
            for part in runs:
                fh.write(part)
            fh.flush()
            mapped = mmap.mmap(fh.fileno(), count * 8, access=mmap.ACCESS_READ)
        except BaseException:
            fh.close()
            raise
        self.files.append(fh)
        self.runs.append((mapped, memoryview(mapped).cast("Q")))
        # The run's filter and fence are made from the run still in memory: read back
        # through the mapping, every page of the run would count in this process's RSS
        # (12 MB a run at the writer's threshold). add_many reads a run with pread.
        # A filter costs 1-2 bytes a spilled fingerprint; fit_filters keeps them within
        # the budget, so memory stays bounded however much a long run spills.
        made = _run_filter(runs) if _run_filter is not None else None
        self.filters.append(made)
        self.fences.append(_fence(runs) if fenced else None)

    def fit_filters(self) -> None:
        """Drop the filters of the longest runs until the rest fit the budget.

        An unfiltered run costs one ``pread`` a lookup whatever its length, and a filter
        costs memory in proportion to it: within a budget, filtering the shortest runs
        leaves the fewest runs unfiltered.
        """
        held = 0
        for index in sorted(range(len(self.runs)), key=lambda i: len(self.runs[i][1])):
            made = self.filters[index]
            if made is None:
                continue
            if held + len(made) > self.filter_budget:
                self.filters[index] = None
            else:
                held += len(made)

    def merge(self) -> None:
        """While the newest run is at least as long as the one before, merge the two into
        one (module docstring: a lookup checks a few runs, not one per spill)."""
        while (
            _merge_runs is not None
            and len(self.runs) >= 2
            and len(self.runs[-1][1]) >= len(self.runs[-2][1])
        ):
            older, newer = self.files[-2:]
            n_a, n_b = len(self.runs[-2][1]), len(self.runs[-1][1])
            # A filter takes at least a byte a fingerprint: none for a run that alone is
            # surely over the budget (fit_filters judges the others among the rest).
            filtered = n_a + n_b <= self.filter_budget
            fh = self._new_file()
            try:
                count, made, fence = _merge_runs(
                    older.fileno(), 0, n_a, newer.fileno(), 0, n_b, fh.fileno(), filtered
                )
                mapped = mmap.mmap(fh.fileno(), count * 8, access=mmap.ACCESS_READ)
            except BaseException:
                fh.close()
                raise
            for old_mapped, old_view in self.runs[-2:]:
                old_view.release()
                old_mapped.close()
            for old in self.files[-2:]:
                old.close()  # NamedTemporaryFile deletes itself on close
            for parts in (self.runs, self.files, self.filters, self.fences):
                del parts[-2:]
            self.files.append(fh)
            self.runs.append((mapped, memoryview(mapped).cast("Q")))
            self.filters.append(made)
            self.fences.append(fence)

    def close(self) -> None:
        """Unmap and delete the spill files; no run is left. Idempotent."""
        for mapped, view in self.runs:
            view.release()
            mapped.close()
        self.runs = []
        self.filters = []
        self.fences = []
        for fh in self.files:
            fh.close()  # NamedTemporaryFile deletes itself on close
        self.files = []
