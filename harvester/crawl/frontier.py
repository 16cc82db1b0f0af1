"""Per-host sitemap frontier: which sitemap to fetch next, and which never to fetch.

In: ``SitemapRef``s from discovery (robots.txt lines, fallback probes, seeds)
and from index children. Out: the next ref to fetch, newest ``lastmod`` first
(so a capped run reads the freshest part of a big site first), refs without a
lastmod after dated ones, ties in discovery order.

Owned by exactly one host worker, so it is plain sync code with no locks.
The seen-set makes loops, self-references and children shared by several
indexes harmless: each sitemap URL is admitted once per host. Caps (depth,
files per host, children per index) are checked here and reported back as values.

The caps choose by the same order: the newest. The children of the index being
read are ``offer``-ed, and ``children()`` hands over, at the end of the read, the
``max_children_per_index`` newest of them, never more than the files-per-host cap
leaves room for (so the choice holds at most that many refs, however many the
index lists). ``push`` admits refs while ``max_sitemaps_per_host`` allows; over
it, an index child newer than a queued (not yet fetched) index child takes its
place, so children listed by a later index compete with those still queued.
A ref a cap left out after it was chosen is in ``displaced`` for the caller to report.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Generic, TypeVar

from harvester.urls.normalize import canonical

if TYPE_CHECKING:
    from datetime import datetime

    from harvester.config import LimitsConfig

__all__ = ["Admission", "Displaced", "Frontier", "Newest", "SitemapRef"]

T = TypeVar("T")

# Fetch order: (undated, -timestamp, discovery order); the smallest is fetched first.
_Key = tuple[int, float, int]


@dataclass(frozen=True, slots=True)
class SitemapRef:
    """A sitemap to fetch: its URL, how deep in the index tree, and why we know of it.

    ``source`` is ``seed``, ``robots``, ``fallback`` or ``index``; ``fallbacks``
    holds the remaining fallback URLs to probe if this probe misses.
    """

    url: str
    depth: int = 0
    source: str = "index"
    lastmod: datetime | None = None
    parent: str | None = None
    fallbacks: tuple[str, ...] = ()


class Admission(StrEnum):
    """What ``Frontier.push``/``offer`` did with a ref (a value, not an exception)."""

    QUEUED = "queued"  # (offer: chosen among the index's children so far)
    SEEN = "seen"  # already fetched or queued for this host
    TOO_DEEP = "max_depth"
    TOO_MANY = "max_sitemaps_per_host"
    TOO_MANY_CHILDREN = "max_children_per_index"


@dataclass(frozen=True, slots=True)
class Displaced:
    """A ref a cap left out after it had been chosen: a newer one took its place.

    ``queued``: it had been admitted by ``push`` (the caller counted it as found).
    """

    ref: SitemapRef
    cap: Admission
    queued: bool


def _key(stamp: float | None, order: int) -> _Key:
    # heapq is a min-heap: dated (0) before undated (1), larger timestamps first.
    return (1, 0.0, order) if stamp is None else (0, -stamp, order)


def _worst_first(key: _Key) -> _Key:
    """The key negated: a min-heap of these has the last to fetch on top."""
    return (-key[0], -key[1], -key[2])


class Newest(Generic[T]):
    """The ``size`` newest of the items offered (by lastmod; undated after dated; ties:
    the first offered), in memory for ``size`` items, whatever the number offered.

    >>> n = Newest[str](2)
    >>> [n.offer(u, s) for u, s in [("a", 1.0), ("b", None), ("c", 3.0)]]
    [None, None, 'b']
    >>> n.best_first()
    ['c', 'a']
    """

    __slots__ = ("_heap", "_order", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self._heap: list[tuple[_Key, T]] = []  # worst first
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def offer(self, item: T, stamp: float | None) -> T | None:
        """Keep ``item`` (``stamp``: its lastmod's timestamp) if it is among the newest;
        return the one left out (``item`` or one kept before), None when none was."""
        entry = (_worst_first(_key(stamp, next(self._order))), item)
        heap = self._heap
        if len(heap) < self.size:
            heapq.heappush(heap, entry)
            return None
        if not heap or entry[0] <= heap[0][0]:
            return item  # no newer than the oldest kept (or nothing may be kept)
        return heapq.heapreplace(heap, entry)[1]

    def best_first(self) -> list[T]:
        """The items kept, the newest first; the selection starts afresh."""
        out = [item for _, item in sorted(self._heap, key=lambda e: e[0], reverse=True)]
        self._heap = []
        return out


class Frontier:
    """Newest-first queue of sitemaps for one host, with a seen-set and caps."""

    def __init__(self, limits: LimitsConfig) -> None:
        self._limits = limits
        # Heap of (key, ref) to fetch, best first. Entries whose order is not in _live
        # were taken out by a newer ref (see push) and are skipped (lazy deletion).
        self._heap: list[tuple[_Key, SitemapRef]] = []
        # The queued index children, last to fetch on top: the ones a newer child may
        # replace under max_sitemaps_per_host. Lazy as well.
        self._evictable: list[tuple[_Key, SitemapRef]] = []
        self._live: dict[int, str] = {}  # order of each queued ref -> its canonical URL
        self._evictable_live = 0  # queued index children
        self._order = itertools.count()  # discovery order breaks ties stably
        self._seen: set[str] = set()  # canonical URLs admitted (or fetched outside)
        # The children of the index being read, chosen so far (canonical URLs beside).
        self._children: Newest[tuple[SitemapRef, str]] = Newest(0)
        self._chosen: set[str] = set()
        self.admitted = 0  # refs queued or fetched (the files-per-host cap counts these)
        self.displaced: list[Displaced] = []  # for the caller to report, then clear
        self._popped: tuple[_Key, SitemapRef, str] | None = None  # for unpop

    def __len__(self) -> int:
        return len(self._live)

    def __repr__(self) -> str:
        return (
            f"<Frontier queued={len(self._live)} admitted={self.admitted} seen={len(self._seen)}>"
        )

    @staticmethod
    def key(url: str) -> str:
        """The form the seen-set knows ``url`` by (its canonical form)."""
        return canonical(url)

    def knows(self, key: str) -> bool:
        """Was the URL of this ``key`` queued, fetched, or chosen from the index being read?"""
        return key in self._seen or key in self._chosen

    def push(self, ref: SitemapRef, key: str | None = None) -> Admission:
        """Admit ``ref`` unless it was seen or a cap forbids it; say which.

        Over ``max_sitemaps_per_host``, an index child newer than the last queued index
        child to fetch takes its place (that one goes to ``displaced``).
        """
        key = canonical(ref.url) if key is None else key
        if key in self._seen:
            return Admission.SEEN
        if ref.depth > self._limits.max_depth:
            return Admission.TOO_DEEP
        stamp = ref.lastmod.timestamp() if ref.lastmod is not None else None
        sort_key = _key(stamp, next(self._order))
        full = self.admitted >= self._limits.max_sitemaps_per_host
        if full and (ref.source != "index" or not self._replace(sort_key)):
            return Admission.TOO_MANY
        self._seen.add(key)
        self.admitted += 1
        self._live[sort_key[2]] = key
        heapq.heappush(self._heap, (sort_key, ref))
        if ref.source == "index":
            heapq.heappush(self._evictable, (_worst_first(sort_key), ref))
            self._evictable_live += 1
        return Admission.QUEUED

    def _replace(self, newer: _Key) -> bool:
        """Take the last queued index child out for a ref of key ``newer``, if that is
        newer; False when there is none to take out."""
        evictable = self._evictable
        while evictable and -evictable[0][0][2] not in self._live:
            heapq.heappop(evictable)  # fetched, or taken out before
        if not evictable or _worst_first(newer) <= evictable[0][0]:
            return False
        worst_key, worst = heapq.heappop(evictable)
        self._seen.discard(self._live.pop(-worst_key[2]))  # it may be listed again later
        self._evictable_live -= 1
        self.admitted -= 1
        self.displaced.append(Displaced(worst, Admission.TOO_MANY, queued=True))
        self._compact()
        return True

    def _compact(self) -> None:
        """Drop the entries taken out from both heaps once they outnumber the live ones:
        with an index of 50,000 children and a small cap, they would pile up."""
        live = self._live
        if len(self._heap) > 2 * len(live) + 64:
            self._heap = [e for e in self._heap if e[0][2] in live]
            heapq.heapify(self._heap)
        if len(self._evictable) > 2 * self._evictable_live + 64:
            self._evictable = [e for e in self._evictable if -e[0][2] in live]
            heapq.heapify(self._evictable)

    def new_file(self) -> None:
        """A new sitemap is being read: its index children are chosen afresh.

        At most ``max_children_per_index`` of them, and no more than the files-per-host
        cap leaves room for: the refs fetched and those no child can take the place of.
        """
        room = self._limits.max_sitemaps_per_host - (self.admitted - self._evictable_live)
        self._children = Newest(max(0, min(self._limits.max_children_per_index, room)))
        self._chosen = set()

    def offer(self, ref: SitemapRef, key: str | None = None) -> Admission:
        """A child of the index being read: QUEUED if it is among the newest so far (one
        chosen before may go to ``displaced``), else why not (SEEN: known already)."""
        key = canonical(ref.url) if key is None else key
        if self.knows(key):
            return Admission.SEEN
        if ref.depth > self._limits.max_depth:
            return Admission.TOO_DEEP
        stamp = ref.lastmod.timestamp() if ref.lastmod is not None else None
        out = self._children.offer((ref, key), stamp)
        cap = self._children_cap()
        if out is not None and out[0] is ref:
            return cap
        self._chosen.add(key)
        if out is not None:
            self._chosen.discard(out[1])
            self.displaced.append(Displaced(out[0], cap, queued=False))
        return Admission.QUEUED

    def _children_cap(self) -> Admission:
        """The cap that bounds the choice of children: the lesser of the two."""
        if self._children.size >= self._limits.max_children_per_index:
            return Admission.TOO_MANY_CHILDREN
        return Admission.TOO_MANY

    def children(self) -> list[tuple[SitemapRef, str]]:
        """The children chosen from the index read (with their canonical URLs), the
        newest first, for ``push``; the choice starts afresh."""
        self._chosen = set()
        return self._children.best_first()

    def seen(self, url: str) -> bool:
        """Was ``url`` (canonically) admitted or marked seen for this host?"""
        return canonical(url) in self._seen

    def mark_seen(self, url: str) -> None:
        """Record a URL fetched outside the frontier (a redirect target): never fetch it again."""
        self._seen.add(canonical(url))

    def peek(self) -> SitemapRef | None:
        """The sitemap ``pop`` would give now, left queued; None when the frontier is empty."""
        heap, live = self._heap, self._live
        while heap and heap[0][0][2] not in live:
            heapq.heappop(heap)  # (taken out by a newer ref: see push)
        return heap[0][1] if heap else None

    def pop(self) -> SitemapRef | None:
        """The next sitemap to fetch, or None when the frontier is empty."""
        heap, live = self._heap, self._live
        while heap:
            sort_key, ref = heapq.heappop(heap)
            if (url := live.pop(sort_key[2], None)) is not None:
                if ref.source == "index":
                    self._evictable_live -= 1
                self._popped = (sort_key, ref, url)
                return ref
        return None

    def unpop(self, ref: SitemapRef) -> None:
        """Queue ``ref``, the last one ``pop`` gave, again as it was (its request was made
        ahead of its turn, then given up: crawl/prefetch.py)."""
        popped, self._popped = self._popped, None
        if popped is None or popped[1] is not ref:
            raise ValueError(f"{ref.url} is not the sitemap popped last")
        sort_key, _, url = popped
        heapq.heappush(self._heap, (sort_key, ref))
        self._live[sort_key[2]] = url
        if ref.source == "index":
            heapq.heappush(self._evictable, (_worst_first(sort_key), ref))
            self._evictable_live += 1
