"""Per-host sitemap frontier: which sitemap to fetch next, and which never to fetch.

In: ``SitemapRef``s from discovery (robots.txt lines, fallback probes, seeds)
and from index children. Out: the next ref to fetch, newest ``lastmod`` first
(so a capped run reads the freshest part of a big site first), refs without a
lastmod after dated ones, ties in discovery order.

Owned by exactly one host worker, so it is plain sync code with no locks.
The seen-set makes loops, self-references and children shared by several
indexes harmless: each sitemap URL is admitted once per host. Caps (depth,
files per host) are checked here and reported back as values.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from harvester.urls.normalize import canonical

if TYPE_CHECKING:
    from datetime import datetime

    from harvester.config import LimitsConfig

__all__ = ["Admission", "Frontier", "SitemapRef"]


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
    """What ``Frontier.push`` did with a ref (a value, not an exception)."""

    QUEUED = "queued"
    SEEN = "seen"  # already fetched or queued for this host
    TOO_DEEP = "max_depth"
    TOO_MANY = "max_sitemaps_per_host"


class Frontier:
    """Newest-first queue of sitemaps for one host, with a seen-set and caps."""

    def __init__(self, limits: LimitsConfig) -> None:
        self._limits = limits
        # Heap of (sort key, tie-breaker, ref): the key puts dated refs first, newest first.
        self._heap: list[tuple[tuple[int, float], int, SitemapRef]] = []
        self._order = itertools.count()  # discovery order breaks ties stably
        self._seen: set[str] = set()  # canonical URLs ever admitted
        self._children = 0  # children of the index being read (reset per file)
        self.admitted = 0  # refs ever admitted (the files-per-host cap counts these)

    def __len__(self) -> int:
        return len(self._heap)

    def __repr__(self) -> str:
        return (
            f"<Frontier queued={len(self._heap)} admitted={self.admitted} seen={len(self._seen)}>"
        )

    def push(self, ref: SitemapRef) -> Admission:
        """Admit ``ref`` unless it was seen or a cap forbids it; say which."""
        key = canonical(ref.url)
        if key in self._seen:
            return Admission.SEEN
        if ref.depth > self._limits.max_depth:
            return Admission.TOO_DEEP
        if self.admitted >= self._limits.max_sitemaps_per_host:
            return Admission.TOO_MANY
        self._seen.add(key)
        self.admitted += 1
        stamp = ref.lastmod.timestamp() if ref.lastmod is not None else 0.0
        # heapq is a min-heap: dated (0) before undated (1), larger timestamps first.
        sort_key = (0, -stamp) if ref.lastmod is not None else (1, 0.0)
        heapq.heappush(self._heap, (sort_key, next(self._order), ref))
        return Admission.QUEUED

    def new_file(self) -> None:
        """A new sitemap is being read: its index children are counted afresh."""
        self._children = 0

    def child_of_index(self) -> bool:
        """Count a child of the index being read; False once it is over
        ``max_children_per_index`` (the caller reports that limit and drops the child)."""
        self._children += 1
        return self._children <= self._limits.max_children_per_index

    def seen(self, url: str) -> bool:
        """Was ``url`` (canonically) admitted or marked seen for this host?"""
        return canonical(url) in self._seen

    def mark_seen(self, url: str) -> None:
        """Record a URL fetched outside the frontier (a redirect target): never fetch it again."""
        self._seen.add(canonical(url))

    def pop(self) -> SitemapRef | None:
        """The next sitemap to fetch, or None when the frontier is empty."""
        if not self._heap:
            return None
        return heapq.heappop(self._heap)[2]
