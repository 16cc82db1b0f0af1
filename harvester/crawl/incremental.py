"""Incremental harvesting of one host: its memory of earlier runs, and what this run leaves.

In: the state file (a ``LedgerReader``, read-only) and what the host worker
meets: the discovery it made or recalled, each sitemap it plans, reads in full,
finds unchanged or fails on. Out: conditional request headers and redirect
targets for the crawl, the host's memory and trust for the URL batch's
selection (``UrlBatch.remember``), and at the end the ``HostState`` the writer
stores (``state``).

Sync and I/O-free apart from the ledger's own reads. Without a state file
there is no ``HostIncremental`` at all (the host worker holds None).

Usage::

    inc = HostIncremental(host, MemorySettings.of(cfg), ledger, report, emit_mode)
    memory = inc.load(seed)  # its discovery memory to recall, or None: discover
    plan = inc.plan(ref)  # (target, headers), or None: carried over unchanged
    ...
    inc.finish(frontier, audit)  # then inc.state is the writer's
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from harvester.crawl import rediscover
from harvester.crawl.frontier import Newest, SitemapRef
from harvester.crawl.revisits import LateAttempts, ReadDigest, Revisits
from harvester.errors import NotASitemap
from harvester.state.codec import now
from harvester.state.ledger import EMIT_EVENTS
from harvester.state.memory import HostMemory, HostState, SitemapState

if TYPE_CHECKING:
    from collections.abc import Callable

    import xxhash

    from harvester.crawl.discovery import Discovered
    from harvester.crawl.frontier import Frontier
    from harvester.crawl.report import HostReport
    from harvester.crawl.seed import Seed
    from harvester.crawl.settings import MemorySettings
    from harvester.models import ReadResult
    from harvester.state.ledger import LedgerReader

__all__ = ["HostIncremental"]

# Distribution verdicts that prove a host's lastmod useless as a change hint.
_USELESS = ("absent", "generation_time", "constant", "future")


class HostIncremental:
    """One host's state-file memory and state update; create one per host with a ledger."""

    def __init__(
        self,
        host: str,
        settings: MemorySettings,
        ledger: LedgerReader,
        report: HostReport,
        emit_mode: str,
        clock: Callable[[], float] = now,
    ) -> None:
        """``emit_mode`` ``all`` must output every URL, so it downloads everything.
        ``clock``: wall-clock seconds (``codec.now``; tests inject one)."""
        self.host = host
        self._settings = settings
        # Issue 53 items 4 and 5: which sitemaps are not asked, those held back (``_next``).
        self.revisits = Revisits(settings, clock, ledger, report)
        self._skip = "skipped"  # why ``plan`` said not to ask: skipped | not_due
        self._ledger = ledger
        self._report = report
        self._events = EMIT_EVENTS[emit_mode]
        self.state = HostState(host)  # for the writer, once ``finish``ed
        self.late = LateAttempts(settings, clock, report, self.state)  # run.late asks it
        self.memory = HostMemory()  # what earlier runs left (``load``)
        self.conditional = emit_mode != "all"  # conditional GETs (validators of a full read)
        self.unverified = False  # the host's lastmod is not trusted (see _trust_lastmod)
        self.remembered = False  # discovery came from the state's memory
        self.robots_fresh = False  # robots.txt was read in full this run
        self.rediscovery = rediscover.Rediscovery(settings.max_revisit_interval)  # issue 53
        self.discovered: Discovered | None = None
        self._stale = False  # ...and a remembered sitemap is gone: rediscover next run
        self._missing: list[str] = []  # fallback locations that missed
        self._final_url: str | None = None  # where the sitemap being read redirected to
        self._direct: set[str] = set()  # sitemaps whose remembered redirect went stale
        # The children of the index being read, the newest max_children_per_index.
        self._children: Newest[tuple[str, int | None]] = self._new_children()

    def load(self, seed: Seed) -> dict[str, Any] | None:
        """Read the host's memory from the state file; decide whether its lastmod is trusted.
        Returns the discovery memory to use instead of discovering again (``recall``)."""
        self.memory = self._ledger.host(self.host)
        self.late.memory = self.memory.late
        self._trust_lastmod()
        return self.recall(seed)

    def deferred(self) -> float | None:
        """Until when the host is still deferred (wall-clock seconds), or None: go ahead.

        An earlier run was told "not today" (a Retry-After beyond ``fetch.retry_after_max``,
        see ``fetch.not_before``); until then the host is not asked at all, and that time
        is kept for the next run.
        """
        until = self.memory.not_before
        if until is None or until <= now():
            return None
        self.state.not_before = until
        return until

    def defer(self, until: float) -> None:
        """The host said "not today": runs before ``until`` (wall-clock) skip it."""
        self.state.not_before = until

    def _trust_lastmod(self) -> None:
        """Decide from the state's memory whether this host's lastmod may filter URLs.

        Not trusted: its last distribution verdict proved lastmod useless, or sampled
        verification scored it ``untrusted`` (or not yet ``trusted``, with
        ``audit.require_trust``). Its URLs then go to the ``unverified`` group instead
        of being filtered by lastmod. Its sitemaps are asked conditionally like any
        other (issue 53: downloading an unchanged list again reveals nothing a 304
        does not), except where the emit mode writes ``unverified`` records: those
        need every listed URL in hand, so the sitemaps are then read in full.
        """
        memory, settings = self.memory, self._settings
        if settings.untrusted == "hint":
            return
        self.unverified = (
            memory.trust == "untrusted"
            or memory.verdict in _USELESS
            or (settings.require_trust and memory.host_id is not None and memory.trust != "trusted")
        )
        if self.unverified and self.conditional and "unverified" in self._events:
            self.conditional = False

    # -- discovery ---------------------------------------------------------------------

    def recall(self, seed: Seed) -> dict[str, Any] | None:
        """The discovery memory to use instead of discovering again, or None: discover."""
        memory = self.memory.discovery
        if memory is None or memory.get("source") == "stale" or seed.sitemap is not None:
            return None
        self.remembered = self.rediscovery.recall(self.memory, now(), self._settings)
        return memory if self.remembered else None

    def found(self, discovered: Discovered) -> None:
        """What discovery found (or recalled) this run."""
        self.discovered = discovered
        # Only a robots.txt read in full this run can say a sitemap is no longer listed.
        fresh = discovered.robots_status == 200 and not discovered.robots_truncated
        self.robots_fresh = fresh and not self.remembered
        if discovered.kept:  # robots.txt asked, unchanged: the rest is the memory's
            self.remembered = self.rediscovery.kept = True
            self.robots_fresh = fresh and discovered.source == "robots"

    def missed(self, url: str) -> None:
        """A fallback location that missed: not probed again until rediscovery."""
        self._missing.append(url)

    def gone(self) -> None:
        """A remembered discovery no longer holds: rediscover next run."""
        self._stale = self.remembered

    # -- sitemaps ----------------------------------------------------------------------

    def start(
        self, ref: SitemapRef, admit: Callable[[SitemapRef], None]
    ) -> tuple[str | None, dict[str, str]]:
        """Where and how to ask for ``ref`` (``plan``), or None when its index lastmod has
        not advanced: then its URLs carry over and its children go to ``admit``."""
        plan = self.plan(ref)
        if plan is None:
            memory = self.memory.sitemaps[ref.url]
            if self._skip == "not_due" and memory.kind != "sitemapindex" and not memory.children:
                self.revisits.held.append(ref)  # until the frontier is empty (held_back)
                return None, {}
            for child in self.carry(ref, self._skip, None):
                admit(child)
            return None, {}
        return plan

    def plan(self, ref: SitemapRef) -> tuple[str, dict[str, str]] | None:
        """Where to ask for ``ref`` and with which headers; None: skip it (``carry``).

        Headers: the validators of its last full read. Target: a sitemap that
        redirected last time is asked for where it ended up (one request, not two);
        if that fails with a 4xx, ``redirect_stale`` sends it back to its own URL.
        """
        self._final_url = None
        memory = self.memory.sitemaps.get(ref.url)
        if memory is None or not memory.complete:
            return ref.url, {}
        target = ref.url
        if memory.final_url and ref.url not in self._direct:
            target = memory.final_url
        if not self.conditional:
            return target, {}
        skip = self.revisits.skip(ref, memory, self.memory, self.unverified)
        if skip is not None:
            self._skip = skip
            return None
        headers: dict[str, str] = {}
        if memory.etag:
            headers["If-None-Match"] = memory.etag
        if memory.last_modified:
            headers["If-Modified-Since"] = memory.last_modified
        return target, headers

    def knows(self, url: str) -> bool:
        """Whether earlier runs read this sitemap (a 304 for it means: unchanged)."""
        return url in self.memory.sitemaps

    def carry(self, ref: SitemapRef, status: str, http: int | None) -> list[SitemapRef]:
        """An unchanged sitemap: its URLs stay listed; returns an index's children to admit."""
        memory = self.memory.sitemaps[ref.url]
        if ref.source == "fallback":  # a probe location read before: the hit, unchanged
            self.rediscovery.hits.append(ref.url)
        if status == "not_due":
            self._report.sitemaps_not_due += 1  # its URLs are kept, never removed
        else:
            self._report.sitemaps_unchanged += 1
        checked = self.revisits.carried(memory.revisit, status)
        self.state.sitemaps.append(
            SitemapState(
                ref.url, ref.parent, status, http, complete=True, carried=True, revisit=checked
            )
        )
        out = []
        for url, lastmod in memory.children:
            when = datetime.fromtimestamp(lastmod, UTC) if lastmod is not None else None
            out.append(SitemapRef(url, ref.depth + 1, "index", when, parent=ref.url))
        return out

    def redirect_stale(self, ref: SitemapRef) -> None:
        """The remembered redirect target of ``ref`` answered 4xx: ask its own URL."""
        self._direct.add(ref.url)
        self._final_url = None

    def redirected(self, final_url: str) -> None:
        """The sitemap being read ended up at ``final_url`` (remembered for next run)."""
        self._final_url = final_url

    def new_read(self) -> xxhash.xxh3_128:
        """A (re-)read of a sitemap starts: the hash of its bytes, its children afresh.

        XXH3-128: the hash only tells "the same bytes as the last full read"
        (``sitemaps_unchanged``); a site that wanted to fool it could just serve what
        it likes, so a cryptographic hash (several times slower) buys nothing here.
        """
        self._children = self._new_children()
        # The crawl only updates it and hands it back (``read``): duck-typed as the hash.
        return cast("xxhash.xxh3_128", ReadDigest())  # news or not: revisits.py

    def _new_children(self) -> Newest[tuple[str, int | None]]:
        return Newest(self._settings.max_children)

    def child(self, url: str, lastmod: datetime | None) -> None:
        """An index child of the sitemap being read (remembered with the index: the
        ``limits.max_children_per_index`` newest, the ones a full read would follow)."""
        stamp = None if lastmod is None else int(lastmod.timestamp())
        self._children.offer((url, stamp), stamp)

    def read(
        self,
        ref: SitemapRef,
        result: ReadResult,
        status: int | None,
        validators: tuple[str | None, str | None],
        digest: xxhash.xxh3_128,
        cap_hit: bool,
    ) -> None:
        """Remember a downloaded sitemap: validators and hash only from a complete read."""
        if ref.source == "fallback" and isinstance(result.error, NotASitemap):
            return  # a probe that missed is discovery's business
        complete = result.status == "ok" and not cap_hit
        content_hash = digest.digest()[:16]
        memory = self.memory.sitemaps.get(ref.url)
        same = complete and memory is not None and memory.content_hash == content_hash
        if same:
            self._report.sitemaps_unchanged += 1  # same bytes as last time, no validators
        is_index = result.kind is not None and result.kind.value == "sitemapindex"
        checked = None
        if complete:
            news = bool(getattr(digest, "news", False))  # (a ReadDigest: new_read)
            known = memory.revisit if memory is not None and memory.complete else None
            checked = self.revisits.checked(known, "s" if same else "c", news, validators[1])
            if memory is not None and memory.complete and not same:
                lied = self.revisits.changed(ref, memory, is_index, result.stats.entries)
                if lied and ref.parent is not None and ref.parent not in self.state.lied:
                    self.state.lied.append(ref.parent)
        self.state.sitemaps.append(
            SitemapState(
                ref.url,
                ref.parent,
                result.status,
                status,
                complete=complete,
                kind=None if result.kind is None else result.kind.value,
                etag=validators[0],
                last_modified=validators[1],
                content_hash=content_hash,
                urls=result.stats.entries,
                children=self._children.best_first() if is_index else None,
                index_lastmod=int(ref.lastmod.timestamp()) if ref.lastmod is not None else None,
                final_url=self._final_url,
                revisit=checked,
            )
        )
        if complete:
            self.state.removal_scope.append(ref.url)

    def failed(self, ref: SitemapRef, status: int | None) -> None:
        """A sitemap that failed (the report has counted it)."""
        if ref.source == "fallback":
            self._missing.append(ref.url)
        else:
            self.state.sitemaps.append(SitemapState(ref.url, ref.parent, "error", status))
        if self.remembered and ref.parent is None and status in (404, 410):
            self._stale = True  # a remembered sitemap is gone: rediscover next run

    # -- the end -----------------------------------------------------------------------

    def finish(self, frontier: Frontier, audit: dict[str, Any] | None) -> None:
        """Close the host's state: audit, discovery memory, delisted sitemaps, finished or not."""
        state, report = self.state, self._report
        for ref in self.revisits.held:  # not due, not asked after all: its URLs are kept
            self.carry(ref, "not_due", None)
        self.revisits.held = []
        state.audit = audit
        self.late.finish()
        if self.unverified:  # listed, not new, change unknown (written only on request)
            report.unverified = report.changed + report.unchanged
        cut_short = bool(report.limits_hit)
        state.finished = "max_host_seconds" not in report.limits_hit
        found = self.discovered
        if self._stale:
            state.discovery = {"source": "stale"}
        elif found is not None and (found.kept or not self.remembered) and found.source != "seed":
            seen = _discovery_memory(found, report, self._missing, self.rediscovery.hits)
            state.discovery = self.rediscovery.remember(seen, self.memory.discovery, found)
        # Sitemaps known from earlier runs that nothing read in full this run lists any
        # more (robots.txt dropped it, its index did): their URLs are removed too.
        complete = {s.url for s in state.sitemaps if s.complete}
        if not cut_short:
            for url, memory in self.memory.sitemaps.items():
                if frontier.seen(url):
                    continue
                parent = memory.parent
                if (parent is None and self.robots_fresh) or parent in complete:
                    state.removal_scope.append(url)


def _discovery_memory(
    found: Discovered, report: HostReport, missing: list[str], hits: list[str]
) -> dict[str, Any] | None:
    """What to remember of this run's discovery (None: it told us nothing reliable);
    ``missing``: the fallback locations that missed; ``hits``: those carried over."""
    discovery = report.discovery
    memory: dict[str, Any] = {
        "origin": found.origin,
        "robots_url": found.robots_url,
        "robots_status": found.robots_status,
        "robots": found.robots_text.decode("utf-8", "replace"),
        "redirects": list(found.redirects),
        "missing": list(missing),
    }
    if tdm := (report.allows or {}).get("tdmrep"):  # issue 48: kept like robots.txt
        memory["tdmrep"] = tdm
    if found.source == "robots":
        memory.update(source="robots", refs=[r.url for r in found.refs])
    elif discovery.startswith("fallback:"):
        hit = discovery.removeprefix("fallback:")
        memory.update(source="fallback", refs=[hit])
    elif hits:  # a hit carried over (304, not due): still the host's sitemap
        memory.update(source="fallback", refs=hits[:1])
    elif report.failures_total:
        return None  # probes failed for other reasons than "not there": ask again
    else:
        memory.update(source="none", refs=[])
    return memory
