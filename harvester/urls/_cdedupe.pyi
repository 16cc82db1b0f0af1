"""Types of the compiled fingerprint and bulk seen-set insert (harvester/urls/_cdedupe.pyx)."""

from array import array
from collections.abc import Iterator

def fingerprint(url: str) -> int:
    """``int.from_bytes(blake2b(url.encode(), digest_size=8).digest(), "big")``."""

def add_many(
    buckets: list[array[int]],
    shift: int,
    fps: array[int],
    runs: list[memoryview],
    filters: list[bytearray | None] | None = None,
    fences: list[array[int] | None] | None = None,
    reads: list[tuple[int, int] | None] | None = None,
    ahead: int = 8,
) -> tuple[int, int]:
    """Insert ``fps`` into ``SeenSet``'s sorted buckets: ``(added, already_there)``."""

class FpTable:
    """A hash set of 64-bit fingerprints (``SeenSet``'s table mode)."""

    def __init__(self, capacity: int = 0) -> None: ...
    def __len__(self) -> int: ...
    def __contains__(self, fp: int) -> bool: ...
    def __iter__(self) -> Iterator[int]:
        """Its fingerprints (from a copy)."""
    def add(self, fp: int) -> bool:
        """Insert ``fp``: True if it was new."""
    @property
    def nbytes(self) -> int:
        """The table's bytes."""
    def add_many(
        self,
        fps: array[int],
        runs: list[memoryview],
        filters: list[bytearray | None] | None = None,
        fences: list[array[int] | None] | None = None,
        reads: list[tuple[int, int] | None] | None = None,
        ahead: int = 8,
    ) -> tuple[int, int]:
        """Insert ``fps`` (also checking the spilled runs): ``(added, already_there)``."""
    def sort(self) -> memoryview:
        """Its fingerprints sorted in place, as a view of its memory (valid until ``clear``)."""
    def clear(self) -> None:
        """Empty it, back to its first capacity."""

class Compact:
    """One call's handle on a ``SeenSet``'s compact buckets (``SeenSet.compact``)."""

    def __init__(
        self,
        buckets: list[array[int]],
        shift: int,
        runs: list[memoryview],
        filters: list[bytearray | None] | None = None,
        fences: list[array[int] | None] | None = None,
        reads: list[tuple[int, int] | None] | None = None,
        room: int = ...,
    ) -> None: ...
    @property
    def room(self) -> int:
        """The adds after which the set must split or spill (``settle``, a new handle)."""
    def add(self, fp: int) -> bool:
        """Insert ``fp`` (also checking the spilled runs): True if it was new."""
    @property
    def count(self) -> int:
        """Fingerprints this handle added."""

FENCE: int
"""Fingerprints a fence entry stands for (one 4 KiB page of a run)."""

def run_filter(run: memoryview | array[int] | list[array[int]]) -> bytearray:
    """A Bloom filter of a sorted run, for ``add_many``'s ``filters``."""

def merge_runs(
    fd_a: int,
    off_a: int,
    n_a: int,
    fd_b: int,
    off_b: int,
    n_b: int,
    fd_out: int,
    filtered: bool = True,
) -> tuple[int, bytearray | None, array[int]]:
    """Merge two spilled sorted runs into ``fd_out``: ``(count, filter, fence)``."""

def sort_unique(fps: array[int], lastmods: array[int]) -> tuple[array[int], array[int]]:
    """Sorted unique ``fps`` (signed) with the newest lastmod any entry gave each."""

def find_many(view: array[int], fps: array[int]) -> array[int]:
    """The position of each of ``fps`` in the sorted ``view`` (``-1``: absent)."""

def classify_many(
    listed: array[int],
    listed_lastmods: array[int],
    recorded: array[int],
    fps: array[int],
    lastmods: array[int],
    labels: tuple[str, str, str],
) -> list[str | None]:
    """The event of each of ``fps`` against a host's ledger views (``LedgerReader.events``)."""
