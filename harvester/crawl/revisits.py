"""One host's sitemaps not asked this run: adaptive revisit and the audited index lastmod.

In: a sitemap about to be asked (its ``SitemapRef`` and ``SitemapMemory``), the host's
memory and trust, ``MemorySettings`` and a clock. Out: whether it is asked, or
``skipped`` (its index's lastmod for it did not move, issue 53 item 5) or ``not_due``
(adaptive revisit, item 4: ``state.revisit.due``); the not-due urlsets held back until
the host's frontier is empty, then asked after all when a sitemap read this run lost
URLs (they may have moved into one held back); and the check history a 304 or a full
read leaves (``checked``).

Its own module: ``HostIncremental`` (``incremental.py``) calls it at its plan, carry
and read points; the interval rule itself is ``state.revisit``'s.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

import xxhash

from harvester.crawl.report import KEEP
from harvester.state.revisit import (
    LateRevisit,
    Revisit,
    after,
    due,
    heuristic,
    late_after,
    late_due,
    overdue,
)

# The host report's warning when the set rule could not decide (Revisits._lost).
INEXACT = (
    "dedupe.mode = bloom: held-back sitemaps asked after all (a Bloom seen-set cannot"
    " prove that a changed sitemap lost no URL)"
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvester.crawl.frontier import SitemapRef
    from harvester.crawl.report import HostReport
    from harvester.crawl.settings import MemorySettings
    from harvester.state.ledger import LedgerReader
    from harvester.state.memory import HostMemory, HostState, SitemapMemory
    from harvester.urls.dedupe import SeenSet

__all__ = ["LateAttempts", "ReadDigest", "Revisits"]

# Google News sitemaps declare this namespace in their root element (the first bytes).
_NEWS_NS = b"http://www.google.com/schemas/sitemap-news/0.9"
_HEAD = 4096  # bytes of a body searched for it
_GZIP_MAGIC = b"\x1f\x8b"


class ReadDigest:
    """The hash of a body's bytes (XXH3-128), and whether its first bytes declare Google
    News; used where an ``xxhash.xxh3_128`` is (``update``, ``digest``).

    (A news sitemap is always due. A gzipped one, ``.xml.gz``, is recognised by the
    start of its decompressed bytes.)
    """

    __slots__ = ("_hash", "head")

    def __init__(self) -> None:
        self._hash = xxhash.xxh3_128()
        self.head = b""

    def update(self, data: bytes) -> None:
        """Hash ``data``; keep the first ``_HEAD`` bytes of the body."""
        if len(self.head) < _HEAD:
            self.head += bytes(data[: _HEAD - len(self.head)])
        self._hash.update(data)

    def digest(self) -> bytes:
        """The hash so far."""
        return self._hash.digest()

    @property
    def news(self) -> bool:
        """Whether the body's first bytes (decompressed, if gzip) declare Google News."""
        head = self.head
        if head[:2] == _GZIP_MAGIC:
            try:  # (a head cut mid-stream gives what it holds; a broken one, what it can)
                head = zlib.decompressobj(wbits=31).decompress(head, _HEAD)
            except zlib.error:
                return False
        return _NEWS_NS in head


class Revisits:
    """What one host asks of the sitemaps earlier runs read in full; one per host."""

    def __init__(
        self,
        settings: MemorySettings,
        clock: Callable[[], float],
        ledger: LedgerReader,
        report: HostReport | None = None,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._ledger = ledger
        self._report = report  # where an inexact seen-set's warning goes (_lost)
        self.held: list[SitemapRef] = []  # not-due urlsets, until the frontier is empty
        self.lost = False  # a sitemap read this run lost a URL (or an index changed)
        self._changed: list[str] = []  # urlsets read this run that changed: lost any URL?
        self._forced: set[str] = set()  # held back, then asked after all

    def skip(
        self, ref: SitemapRef, memory: SitemapMemory, host: HostMemory, unverified: bool
    ) -> str | None:
        """Why ``ref`` (read in full before) is not asked: ``skipped``, ``not_due``; None: ask.

        ``skipped``: its index's lastmod for it has not moved, on a host whose lastmod
        the audit trusts (``unverified`` false, sampled trust ``trusted``) and from an
        index never caught lying, and it was asked within ``state.max_revisit_interval``.
        ``not_due``: adaptive revisit. A child whose lastmod in its index moved is always
        asked (unless that lastmod is known to say nothing: the host's is not trusted,
        or the index lied before), and so is a news sitemap (``revisit.due``).
        """
        parent = host.sitemaps.get(ref.parent) if ref.parent is not None else None
        honest = not unverified and not (parent is not None and parent.index_lied)
        moved = (
            ref.source == "index"
            and ref.lastmod is not None
            and (
                memory.index_lastmod is None or int(ref.lastmod.timestamp()) > memory.index_lastmod
            )
        )
        if moved and honest:
            return None
        settings, t = self._settings, self._clock()
        cap = settings.max_revisit_interval
        if (
            settings.skip_unchanged_children
            and host.trust == "trusted"  # only where the audit found lastmod honest
            and honest
            and ref.source == "index"
            and ref.lastmod is not None
            and not overdue(memory.revisit, t, cap)
        ):
            return "skipped"
        if settings.revisit == "due" and ref.url not in self._forced:
            return None if due(memory.revisit, t, cap) else "not_due"
        return None

    def held_back(self, memory: HostMemory, seen: SeenSet | None) -> SitemapRef | None:
        """Once the frontier is empty: a held-back sitemap to ask after all, or None.

        Asked after all when a sitemap read this run lost URLs (or an index changed): a
        URL that moved from it into a sitemap not asked would otherwise be ``removed``
        now and ``new`` at that sitemap's due run (moved is not removed, issue 53 item 3).
        Lost: a URL its last read listed (the ledger's, ``memory``'s host) that nothing
        read this run listed (``seen``, the host's seen-set): the set, not a count, so a
        list that loses some URLs and gains as many is noticed too.
        """
        if not self.held:
            return None
        while not self.lost and self._changed:
            self.lost = self._lost(self._changed.pop(), memory, seen)
        if not self.lost:
            return None
        ref = self.held.pop(0)
        self._forced.add(ref.url)
        return ref

    def checked(
        self, memory: Revisit | None, outcome: str, news: bool, last_modified: str | None = None
    ) -> Revisit:
        """The history a check now with ``outcome`` (``n``, ``s``, ``c``) leaves; a first
        read (``memory`` None) waits what its ``Last-Modified`` says (``revisit.heuristic``)."""
        t, cap = self._clock(), self._settings.max_revisit_interval
        first = heuristic(last_modified, t, cap) if memory is None else 0.0
        return after(memory, outcome, t, cap, news, first)

    def carried(self, memory: Revisit, status: str) -> Revisit | None:
        """The history a sitemap carried over with ``status`` leaves (None: as it was).

        ``not_modified``: a check, unchanged. ``skipped`` by its index's lastmod, never
        checked (a state file from before schema 6): the cap counts from now, so that it
        is asked in time. ``not_due``: no check.
        """
        if status == "not_modified":
            return self.checked(memory, "n", memory.news)
        if status == "skipped" and memory.checked_at is None:
            return Revisit(self._clock(), 0.0, 0, memory.history, memory.news)
        return None

    def _lost(self, url: str, memory: HostMemory, seen: SeenSet | None) -> bool:
        """Whether the sitemap ``url`` (read this run) lost a URL nothing else read listed."""
        if memory.host_id is None:
            return False
        fps = self._ledger.sitemap_fps(memory.host_id, url)
        if seen is None:
            return bool(fps)
        if any(fp not in seen for fp in fps):  # (a Bloom filter's "not seen" is certain)
            return True
        if fps and not seen.exact:
            # dedupe.mode = "bloom": each "seen" may be a false positive hiding a URL that
            # moved into a held-back sitemap (then "removed" now, "new" at its due run):
            # not provable either way, so the held-back sitemaps are asked after all.
            report = self._report
            if (
                report is not None
                and INEXACT not in report.warnings
                and len(report.warnings) < KEEP
            ):
                report.warnings.append(INEXACT)
            return True
        return False

    def changed(self, ref: SitemapRef, memory: SitemapMemory, is_index: bool, urls: int) -> bool:
        """``ref``, read before, changed (now ``urls`` entries). Notes a loss (an index, fewer
        URLs; else its URLs are checked once the frontier is empty, ``held_back``); returns
        whether its index lied: it gave it the lastmod of its last read (issue 53 item 5:
        that index's lastmods skip no child from now on)."""
        fewer = memory.urls is not None and urls < memory.urls
        self.lost = self.lost or is_index or fewer
        if not self.lost:
            self._changed.append(ref.url)
        return (
            ref.source == "index"
            and ref.parent is not None
            and ref.lastmod is not None
            and memory.index_lastmod is not None
            and int(ref.lastmod.timestamp()) <= memory.index_lastmod
        )


class LateAttempts:
    """A host's late attempt (``run.late``) under the state's backoff (issue 53): ``due``
    (asked by ``LatePool.wanted``), ``tried`` (its outcome), ``finish`` (at the host's end).

    ``memory``: its failed late attempts as earlier runs left them (``HostIncremental.load``
    sets it); what this run leaves goes to ``state.late``.
    """

    def __init__(
        self,
        settings: MemorySettings,
        clock: Callable[[], float],
        report: HostReport,
        state: HostState,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._report = report
        self._state = state
        self.memory = LateRevisit()

    def due(self) -> bool:
        """Whether the host, its first contact timed out, gets its late attempt: not while
        its last failed one waits (``revisit.late_due``; ``--revisit all``: always). Not
        due: the report says ``late_not_due``; its stored URLs are kept."""
        settings = self._settings
        cap = settings.max_revisit_interval
        due = settings.revisit != "due" or late_due(self.memory, self._clock(), cap)
        self._report.late_not_due = not due
        return due

    def tried(self, reached: bool) -> None:
        """The late attempt ended, having ``reached`` the host or not."""
        cap = self._settings.max_revisit_interval
        self._state.late = late_after(self.memory, reached, self._clock(), cap)

    def finish(self) -> None:
        """The host answered its first contact: its late attempts start over."""
        if self._report.first_contact_timeout is None and self.memory.failed_at is not None:
            self._state.late = LateRevisit()
