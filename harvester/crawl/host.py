"""Host worker: harvest one host end to end (discovery → frontier → fetch → read → records).

In: a ``Seed`` and the shard's shared parts (``Fetcher``, ``Scheduler``, the
``HostSettings`` read from the config once per shard). Out: ``RecordBatch``es of
output records through ``emit``, then the host's ``HostReport``. Nothing here
raises for a bad host or file: every failure is classified into the report, and
what was harvested before it is kept.

The worker is crawl control only: which sitemaps to fetch, each fetch's
outcome and what to do about it (``_sitemap``). Whether a sitemap may be fetched
at all is its ``SitemapPolicy``'s (policy.py); one request and its outcome is
``Attempts``' (attempt.py). The URLs go to a ``UrlBatch`` (batch.py: records,
dedupe, caps, selection); with a state file, the memory of earlier runs is a
``HostIncremental`` (incremental.py; None without one).

The frontier is local to the worker, so a worker that discovers index children
never waits on a queue that only workers drain: the only queue it waits on is
the output, which the writer drains unconditionally. That is why the pipeline
cannot deadlock (see ``pipeline.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from harvester.crawl import allow, cover, links, prefetch, tdmrep, verdicts
from harvester.crawl.attempt import (
    Attempts,
    BodyBroken,
    Failed,
    Missed,
    NotModified,
    Read,
    RetryListed,
    Undecodable,
    defer_if_not_today,
)
from harvester.crawl.batch import UrlBatch
from harvester.crawl.discovery import discover, recall
from harvester.crawl.frontier import Frontier, SitemapRef
from harvester.crawl.home import HomeHosts
from harvester.crawl.hooks import HostHooks
from harvester.crawl.incremental import HostIncremental
from harvester.crawl.policy import SitemapPolicy, SitemapQueue
from harvester.crawl.report import HostReport
from harvester.crawl.scheduler import host_key
from harvester.crawl.sitemaps import SitemapLog
from harvester.crawl.wall import Wall
from harvester.errors import FetchError, NotASitemap
from harvester.state.codec import iso
from harvester.urls.normalize import host_of

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import xxhash

    from harvester.crawl.attempt import Outcome
    from harvester.crawl.batch import RecordBatch
    from harvester.crawl.discovery import Discovered
    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.scheduler import HostSlot, Scheduler
    from harvester.crawl.seed import Seed
    from harvester.crawl.settings import HostSettings
    from harvester.crawl.tdmrep import HostTdmRep
    from harvester.models import ReadResult
    from harvester.state.ledger import LedgerReader
    from harvester.state.memory import HostState

    # Where the host's record batches go: the run's output (the host waits while it does).
    Emit = Callable[[RecordBatch], Awaitable[None]]

__all__ = ["HostWorker"]

logger = logging.getLogger(__name__)

# The reader's warning on a body read as sent after it failed to decode as its
# Content-Encoding said (``Undecodable``).
_UNDECODED = "the body did not decode as its Content-Encoding says: read as sent"


class HostWorker:
    """Harvests one host; create one per seed and ``await run()``.

    Usage::

        report = await HostWorker(seed, settings, fetcher, scheduler, emit).run()
    """

    def __init__(
        self,
        seed: Seed,
        settings: HostSettings,
        fetcher: Fetcher,
        scheduler: Scheduler,
        emit: Emit,
        ledger: LedgerReader | None = None,
        emit_mode: str = "all",
        *,
        encoded: bool = False,
        ready: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """``ledger`` (the state file, read-only) turns on incremental harvesting (see
        ``HostIncremental``), its ``HostState`` left in ``self.state`` for the writer.
        ``encoded``: batches may come as JSON lines (``UrlBatch``). ``ready``: awaited
        before each body chunk is parsed (see ``run_shard``).
        """
        self.seed = seed
        self.host = seed.host
        self.report = HostReport(seed.host)
        self._settings = settings
        self._fetcher = fetcher
        self._scheduler = scheduler
        self._frontier = Frontier(settings.limits)
        # Where robots.txt was served from when not this host (apex -> www): its slot is
        # held for the host's life, so the robots.txt's Crawl-delay paces it too.
        self._site_host: str | None = None
        self._deferred = False  # the host said "not today": nothing more is asked of it
        self._wall = Wall()  # robots.txt and the probes as a bot wall (discovery's)
        # The host's canonicalization rules (its [normalize.hosts] override, if any).
        rules = settings.normalizer.rules_for(host_of(seed.origin))
        args = (self.host, settings.batch, rules, self.report)
        self.batch = UrlBatch(*args, ledger=ledger, emit_mode=emit_mode, encoded=encoded)
        self._homes = HomeHosts(rules.canonical)  # where each sitemap's locs belong
        self.incremental: HostIncremental | None = None
        if ledger is not None:
            memory = settings.memory
            self.incremental = HostIncremental(self.host, memory, ledger, self.report, emit_mode)
        # The host's state update for the writer (None without a state file).
        self.state: HostState | None = self.incremental.state if self.incremental else None
        # Each sitemap's counts and failure for the report (issue 32; a no-op unless asked for).
        self.sitemaps = SitemapLog(enabled=settings.sitemap_log)
        cross_host = settings.discovery.cross_host
        self._policy = SitemapPolicy(self.host, cross_host, self.report, self.sitemaps)
        inc = self.incremental
        self._queue = SitemapQueue(self._policy, self._frontier, settings.filters, self._homes, inc)
        self._cover, emit = cover.HostCoverage.on(settings.discovery, emit)  # issue 49
        self._tdm = tdmrep.HostTdmRep(settings.policy, self.report, fetcher, scheduler, inc, emit)
        self._hooks = HostHooks(
            self.batch, self._queue, self._homes, inc, self.sitemaps, self._tdm.emit, ready
        )
        self._attempts = Attempts(fetcher, settings.fetch, settings.reader, self._hooks)
        # Issue 51: the next sitemap asked while the current one is read (crawl/prefetch.py).
        parts = (self.host, self._frontier, self.incremental, self.batch, fetcher, scheduler)
        self._ahead = prefetch.ReadAhead(*parts, settings.fetch)
        self._hooks.sniffed = self._ahead.sniffed

    async def run(self, found: Awaitable[Discovered] | None = None) -> HostReport:
        """Harvest the host; return its report (never raises for host-level failures).

        ``found``: its discovery read ahead of its admission (``crawl.probe``), awaited
        instead of discovering again.
        """
        self._found_ahead = found
        started = time.monotonic()
        slot = self._scheduler.acquire(self.host)
        self.report.tls_unverified = not slot.policy.verify_tls
        try:
            async with asyncio.timeout(self._settings.limits.max_host_seconds):
                await self._run(slot)
        except TimeoutError:
            self.report.limit("max_host_seconds")
        finally:
            self._ahead.close()  # (a deferral or the host's time ended it)
            _end(self._scheduler, self._fetcher, self.host, self._site_host)
            self.batch.close()
            self.report.seconds = round(time.monotonic() - started, 3)
        # Emitted outside the timeout so records harvested before it are never lost.
        await self._hooks.flush()
        await self._tdm.release(self.batch)  # (records held for tdmrep.json, if any)
        _finish(self.report, self.batch, self.incremental, self._frontier, self.sitemaps, self._tdm)
        return self.report

    async def _run(self, slot: HostSlot) -> None:
        found = await self._discover(slot)
        if found is None:
            return
        await self._tdm.ask(slot, found, self.batch)  # issue 48: tdmrep.json, once answered
        for ref in found.refs:
            self._queue.admit(ref)
        while nxt := self._ahead.next():
            await self._sitemap(nxt, self._ahead.take())
            self._queue.children(nxt)  # the newest of its children, if an index
            # Its records go out before the host waits for the next fetch (its rate limit,
            # the network): a waiting host holds no batch (issue 29; the outbox joins them).
            await self._hooks.flush()
            if self._deferred:
                return
            await self._tdm.ask(slot, found, self.batch)  # (a seed sitemap: after it)
        self._wall.close(self.report, found.robots_url or self.seed.origin)
        # Issue 49: links as a safety net where no sitemap was found; --coverage K's check.
        args = (self._fetcher, slot, self._settings, self.batch.rules, self.report)
        await links.fallback(found, self.seed.origin, *args, self._hooks.emit)
        await self._cover.run(found, self.seed.origin, self._fetcher, slot, self.batch, self.state)

    async def _discover(self, slot: HostSlot) -> Discovered | None:
        """The host's first sitemaps, recalled or discovered; None: nothing to fetch."""
        inc = self.incremental
        memory = None
        if inc is not None:
            memory = inc.load(self.seed)
            self.batch.remember(inc.memory, inc.unverified)
            if (until := inc.deferred()) is not None:
                self.report.deferred = iso(int(until))  # an earlier run was told "not today"
                return None
        if memory is not None:
            found = recall(memory, self.seed, self._settings.discovery, slot)
        else:
            known = inc.rediscovery.known if inc is not None else None  # robots.txt unchanged: kept
            try:
                found = await (
                    self._found_ahead
                    or discover(self.seed, self._fetcher, slot, self._settings.discovery, known)
                )
            except FetchError as exc:
                self.report.fail(exc, status=getattr(exc, "status", None))
                self.report.discovery = "failed"
                self._deferred = self._not_today(exc)
                return None
        if inc is not None:
            inc.found(found)
        if (memory is not None or found.kept) and found.source == "none":
            self.report.discovery = "memory:none"  # nothing was found last time: no probes
            return None
        self._found(found, recalled=memory is not None or found.kept)
        return found

    def _found(self, found: Discovered, *, recalled: bool) -> None:
        """What discovery found, into the report, the policy and the site's pace."""
        report = self.report
        # "fallback" becomes "fallback:<url>" when a probe hits; until then nothing was found.
        report.discovery = "none" if found.source == "fallback" else found.source
        if recalled:
            report.discovery = f"memory:{found.source}"
        report.robots_status = found.robots_status
        if found.warning is not None:
            report.warnings.append(found.warning)
        self.sitemaps.robots(found.robots_url, found.robots_status)
        if found.robots_truncated:
            report.limit("max_robots_bytes")
        self._policy.discovered(found)
        policy, agent = self._settings.policy, self._settings.discovery.user_agent
        self.batch.verdicts = verdicts.for_host(policy, agent, found, report)  # issue 48
        if policy.signals and found.robots.text:
            report.allows = allow.signals(found.robots.text, found.robots_url or "")
        self._wall = found.wall
        own = self._policy.own
        self._site_host = _pace_site(self._scheduler, self._settings, self.host, own, found)
        self._homes.robots(self.seed.origin, found.origin, self._policy.declared)

    def _not_today(self, error: FetchError) -> bool:
        """Defer the host if ``error`` asks for more than a run waits (see below)."""
        inc, own, fetch = self.incremental, self._policy.own, self._settings.fetch
        return defer_if_not_today(error, own, self.seed.origin, fetch, self.report, inc)

    async def _sitemap(self, ref: SitemapRef, ahead: prefetch.Prefetch | None = None) -> None:
        """Fetch one sitemap, attempt by attempt, acting on each ``Outcome``: the retry policy.

        ``BodyBroken`` (the body broke or stalled): fetched again from the start, up to
        ``fetch.retries`` times, unless it used the file's whole deadline (the fetcher
        retries only until it hands a body over); the host's dedupe drops what the
        broken read emitted. ``RetryListed`` (a remembered redirect target answered
        4xx): the listed URL, once. ``Undecodable`` (not the Content-Encoding it
        claims): once more as sent (``raw``), the reader sniffs it. Any other outcome
        ends it (``_ended``). ``ahead``: its first request, made while the sitemap before
        it was read (``ReadAhead.start``).
        """
        inc = self.incremental
        target, headers = self._start(ref)
        if ahead is not None and (ahead.url != target or headers):
            ahead.close()  # (the state planned it otherwise: asked as planned)
            ahead = None
        if target is None:
            return
        self._ahead.start(ref)
        retries, refetches, requests = self._settings.fetch.retries, 0, 0
        raw = False  # asking for the body as sent, its Content-Encoding not undone
        slot_host = host_key(target)  # a child on another host is paced by that host's slot
        slot = self._scheduler.acquire(slot_host)
        try:
            while True:
                digest = inc.new_read() if inc is not None else None
                self.batch.new_read()
                self.sitemaps.attempt(ref)
                args = (ref, target, slot, headers, digest)
                outcome = await self._attempts.attempt(*args, raw=raw, ahead=ahead)
                ahead = None  # (once: a retry asks again)
                self.sitemaps.outcome(outcome)
                match outcome:
                    case BodyBroken() if refetches < retries and not outcome.deadline_passed:
                        logger.debug("re-fetching %s after a broken body", ref.url)
                        refetches += 1
                        requests += outcome.requests
                    case Undecodable() if not raw:
                        logger.debug("re-fetching %s as sent: %s", ref.url, outcome.error.message)
                        raw = True
                        requests += outcome.requests
                    case RetryListed() if inc is not None:
                        inc.redirect_stale(ref)
                        self._scheduler.release(slot_host)
                        target, headers = self._start(ref)
                        assert target is not None  # (its plan was not a skip a moment ago)
                        refetches, requests, raw = 0, 0, False
                        slot_host = host_key(target)
                        slot = self._scheduler.acquire(slot_host)
                    case _:
                        self._ended(ref, outcome, requests, digest, raw=raw)
                        return
        finally:
            if ahead is not None:
                ahead.close()
            self._scheduler.release(slot_host)

    def _ended(
        self,
        ref: SitemapRef,
        outcome: Outcome,
        requests: int,
        digest: xxhash.xxh3_128 | None,
        *,
        raw: bool,
    ) -> None:
        """Act on the outcome that ends a sitemap's fetch (``requests``: those before it)."""
        inc = self.incremental
        match outcome:
            case Read(result, status, validators):
                if raw:
                    result.stats.warnings.append(_UNDECODED)
                self._done(ref, result)
                if inc is not None and digest is not None:
                    inc.read(ref, result, status, validators, digest, self.batch.cap_hit)
            case NotModified(status) if inc is not None:
                for child in inc.carry(ref, "not_modified", status):
                    self._queue.offer(child)
            case Missed(status, challenge):
                self._wall.probe(status, challenge=challenge)
                self._next_probe(ref)
            case BodyBroken() | Undecodable() | Failed():
                # Entries read before the failure were already emitted; kept.
                attempts = requests + outcome.requests
                error, status = outcome.error, outcome.status
                self.report.sitemap_failed(error, status, attempts, outcome.bytes_read)
                if inc is not None:
                    inc.failed(ref, status)
                self._deferred = self._not_today(error)
            case _:  # Refused (reported where it was found)
                pass

    def _start(self, ref: SitemapRef) -> tuple[str | None, dict[str, str]]:
        """Where and how to ask for ``ref`` (None: not at all); resets the per-file counts."""
        self.batch.new_file()
        self._frontier.new_file()
        if self.incremental is None:
            return ref.url, {}
        return self.incremental.start(ref, self._queue.offer)

    # -- a sitemap read, or missed ---------------------------------------------------------

    def _done(self, ref: SitemapRef, result: ReadResult) -> None:
        report = self.report
        if ref.source == "fallback":
            if isinstance(result.error, NotASitemap):
                # A guess that found an HTML page or an empty body: a miss, not a failure.
                self._wall.probe(200)
                self._next_probe(ref)
                return
            report.discovery = f"fallback:{ref.url}"
            report.sitemaps_found += 1
            report.sitemaps_listed += 1
        report.sitemap_read(result.stats, result.error)

    def _next_probe(self, ref: SitemapRef) -> None:
        """A fallback location missed (4xx, or no sitemap there): the next one, if any, is
        probed. None left: discovery stays "none", with no failure."""
        if self.incremental is not None:
            self.incremental.missed(ref.url)  # not probed again until rediscovery
            self.incremental.gone()  # a remembered hit is gone: rediscover next run
        self._queue.next_location(ref)


def _pace_site(
    scheduler: Scheduler, settings: HostSettings, host: str, own: frozenset[str], found: Discovered
) -> str | None:
    """Apply robots.txt's Crawl-delay to the host it was served from, when that is not
    ``host`` (discovery paced its slot; the sitemaps live over there) but one of its
    ``own``; return that host (its slot then held until the host ends), or None."""
    site = host_key(found.origin) if found.origin else host
    if site == host or site not in own:
        return None
    settings.discovery.pace(scheduler.acquire(site), found.robots)
    return site


def _end(scheduler: Scheduler, fetcher: Fetcher, host: str, site_host: str | None) -> None:
    """A host's requests are over: its slots (and its robots.txt host's) go back, and its
    pooled connections close now rather than at the keep-alive (``Fetcher.end_host``)."""
    hosts = (host,) if site_host is None else (host, site_host)
    for name in hosts:
        scheduler.release(name)
    fetcher.end_host(*hosts)


def _finish(
    report: HostReport,
    batch: UrlBatch,
    incremental: HostIncremental | None,
    frontier: Frontier,
    sitemaps: SitemapLog,
    tdm: HostTdmRep,
) -> None:
    """At a host's end: its lastmod audit into the state's memory and ``report`` (the
    months with URLs: a line per host stays short), and its sitemap log when kept."""
    tdm.close()  # the tdm-* and X-Robots-Tag headers of its responses (issue 48)
    audit = batch.audit()
    if incremental is not None:
        incremental.finish(frontier, audit)
    if audit is not None:
        report.lastmod_months = {k: n for k, n in audit["histogram"] if n}
    if sitemaps.enabled:
        report.sitemap_log = sitemaps.as_dict()
