"""The caps' choice among one host's sitemaps, reported: what is queued, what is left out.

In: the host's ``Frontier``, its ``HostReport`` and ``SitemapLog``, and the refs the
host worker lets through its policies (cross-host, robots.txt, filters). Out:
``push`` queues a sitemap, ``offer`` puts a child of the index being read to the
choice of its newest, ``children`` queues the chosen ones when the index is done.
Each ref a cap leaves out is counted (``sitemaps_left_out``, ``limits_hit``) and
logged as skipped; one a newer ref took the place of in the queue is no longer
counted as found.

Usage::

    choice = Choice(frontier, report, log)
    choice.offer(child, frontier.key(child.url))   # while the index is read
    choice.children(index, homes)                  # once it is done
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvester.crawl.frontier import Admission

if TYPE_CHECKING:
    from harvester.crawl.frontier import Frontier, SitemapRef
    from harvester.crawl.home import HomeHosts
    from harvester.crawl.report import HostReport
    from harvester.crawl.sitemaps import SitemapLog

__all__ = ["Choice"]


class Choice:
    """One host's frontier, with what its caps choose reported; one per host worker."""

    __slots__ = ("_log", "_report", "frontier")

    def __init__(self, frontier: Frontier, report: HostReport, log: SitemapLog) -> None:
        self.frontier = frontier
        self._report = report
        self._log = log

    def push(self, ref: SitemapRef, key: str) -> None:
        """Queue ``ref`` (``key``: its ``Frontier.key``) unless it is known or a cap says no."""
        frontier = self.frontier
        admission = frontier.push(ref, key)
        if admission is Admission.QUEUED:
            if ref.source != "fallback":  # (a fallback location counts when it hits)
                self._report.sitemaps_found += 1
        elif admission is not Admission.SEEN:
            self._left_out(ref, admission)
        if frontier.displaced:
            self._displaced()

    def offer(self, ref: SitemapRef, key: str) -> None:
        """A child of the index being read, for the choice of its newest."""
        frontier = self.frontier
        admission = frontier.offer(ref, key)
        if admission is not Admission.QUEUED and admission is not Admission.SEEN:
            self._left_out(ref, admission)
        if frontier.displaced:
            self._displaced()

    def children(self, index: SitemapRef, homes: HomeHosts) -> None:
        """The children chosen from ``index`` are queued, the newest first."""
        for child, key in self.frontier.children():
            homes.child(index.url, child.url)
            self.push(child, key)

    def _left_out(self, ref: SitemapRef, cap: Admission) -> None:
        """``ref`` is not fetched: ``cap`` (a depth or count cap) left it out."""
        self._report.limit(cap.value)
        self._log.skipped(ref, cap.value)
        if cap is not Admission.TOO_DEEP:
            self._report.sitemaps_left_out += 1  # newer ones were chosen

    def _displaced(self) -> None:
        """Report the refs a newer one took the place of (``Frontier.displaced``)."""
        for out in self.frontier.displaced:
            if out.queued:
                self._report.sitemaps_found -= 1  # counted when it was queued
            self._left_out(out.ref, out.cap)
        self.frontier.displaced.clear()
