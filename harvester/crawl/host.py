"""Host worker: harvest one host end to end (discovery → frontier → fetch → read → records).

In: a ``Seed`` and the shard's shared parts (``Fetcher``, ``Scheduler``, config).
Out: batches of output records (dicts) through ``emit``, then the host's
``HostReport``. Nothing here raises for a bad host or file: every failure is
classified into the report, and what was harvested before it is kept.

The worker is crawl control only: which sitemaps to fetch, each fetch's
outcome and what to do about it (``_sitemap``). The URLs go to a ``UrlBatch``
(batch.py: records, dedupe, caps, selection); with a state file, the memory of
earlier runs is a ``HostIncremental`` (incremental.py; None without one).

The frontier is local to the worker, so a worker that discovers index children
never waits on a queue that only workers drain: the only queue it waits on is
the output, which the writer drains unconditionally. That is why the pipeline
cannot deadlock (see ``pipeline.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from harvester.crawl.attempt import (
    BodyBroken,
    Failed,
    Missed,
    NotModified,
    Read,
    Refused,
    RetryListed,
    Undecodable,
    attempt,
    defer_if_not_today,
    http_date,
)
from harvester.crawl.batch import UrlBatch
from harvester.crawl.choice import Choice
from harvester.crawl.discovery import child_allowed, discover, home_hosts, recall
from harvester.crawl.filters import compile_filters
from harvester.crawl.frontier import Frontier, SitemapRef
from harvester.crawl.home import HomeHosts
from harvester.crawl.incremental import HostIncremental
from harvester.crawl.report import HostReport
from harvester.crawl.robots import RobotsTxt
from harvester.crawl.scheduler import host_key
from harvester.crawl.sitemaps import SitemapLog
from harvester.errors import FetchError, InvalidURL, NotASitemap
from harvester.models import SitemapChild
from harvester.state.codec import iso
from harvester.urls.normalize import Normalizer, host_of
from harvester.urls.validate import valid_authority

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from harvester.config import Config
    from harvester.crawl.batch import RecordBatch
    from harvester.crawl.discovery import Discovered
    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.scheduler import HostSlot, Scheduler
    from harvester.crawl.seed import Seed
    from harvester.models import Entry, ReadResult
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

        report = await HostWorker(seed, cfg, fetcher, scheduler, emit).run()
    """

    def __init__(
        self,
        seed: Seed,
        cfg: Config,
        fetcher: Fetcher,
        scheduler: Scheduler,
        emit: Emit,
        normalizer: Normalizer | None = None,
        ledger: LedgerReader | None = None,
        emit_mode: str = "all",
        *,
        encoded: bool = False,
        ready: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """``normalizer`` is shared by a shard's workers (its rules compile once).

        ``ledger`` (the state file, read-only) turns on incremental harvesting (see
        ``HostIncremental``), its ``HostState`` left in ``self.state`` for the writer.
        ``encoded``: batches may come as JSON lines (``UrlBatch``). ``ready``: awaited
        before each body chunk is parsed (see ``run_shard``).
        """
        self.seed = seed
        self.host = seed.host
        self.report = HostReport(seed.host)
        self._cfg = cfg
        self._fetcher = fetcher
        self._scheduler = scheduler
        self._emit = emit
        self._ready = ready
        self._frontier = Frontier(cfg.limits)
        self._declared: frozenset[str] = frozenset()  # sitemaps the host's robots.txt lists
        # The hosts that are this one's own: it, and where its robots.txt was served from.
        self._own: frozenset[str] = frozenset({self.host})
        # Where robots.txt was served from when not this host (apex -> www): its slot is
        # held for the host's life, so the robots.txt's Crawl-delay paces it too.
        self._site_host: str | None = None
        self._robots = RobotsTxt()  # the host's robots.txt (everything allowed until read)
        self._deferred = False  # the host said "not today": nothing more is asked of it
        # The host's canonicalization rules (its [normalize.hosts] override, if any).
        rules = (normalizer or Normalizer(cfg.normalize)).rules_for(host_of(seed.origin))
        self.batch = UrlBatch(
            self.host, cfg, rules, self.report, ledger=ledger, emit_mode=emit_mode, encoded=encoded
        )
        self._homes = HomeHosts(rules.canonical)  # where each sitemap's locs belong
        self._filters = compile_filters(cfg.filters)  # [filters]; None: every child followed
        self.incremental: HostIncremental | None = None
        if ledger is not None:
            self.incremental = HostIncremental(self.host, cfg, ledger, self.report, emit_mode)
        # The host's state update for the writer (None without a state file).
        self.state: HostState | None = self.incremental.state if self.incremental else None
        # Each sitemap's counts and failure for the report (issue 32; a no-op unless asked for).
        self.sitemaps = SitemapLog(enabled=cfg.output.sitemap_log)
        self._choice = Choice(self._frontier, self.report, self.sitemaps)  # the caps, reported

    async def run(self) -> HostReport:
        """Harvest the host; return its report (never raises for host-level failures)."""
        started = time.monotonic()
        slot = self._scheduler.acquire(self.host)
        self.report.tls_unverified = not slot.policy.verify_tls
        try:
            async with asyncio.timeout(self._cfg.limits.max_host_seconds):
                await self._run(slot)
        except TimeoutError:
            self.report.limit("max_host_seconds")
        finally:
            self._scheduler.release(self.host)
            if self._site_host is not None:
                self._scheduler.release(self._site_host)
            self.batch.close()
            self.report.seconds = round(time.monotonic() - started, 3)
        # Emitted outside the timeout so records harvested before it are never lost.
        await self._flush()
        audit = self.batch.audit()
        if self.incremental is not None:
            self.incremental.finish(self._frontier, audit)
        if audit is not None:  # (the months with URLs: a line per host stays short)
            self.report.lastmod_months = {k: n for k, n in audit["histogram"] if n}
        if self.sitemaps.enabled:
            self.report.sitemap_log = self.sitemaps.as_dict()
        return self.report

    async def _run(self, slot: HostSlot) -> None:
        inc = self.incremental
        memory = None
        if inc is not None:
            memory = inc.load(self.seed)
            self.batch.remember(inc.memory, inc.unverified)
            if (until := inc.deferred()) is not None:
                self.report.deferred = iso(int(until))  # an earlier run was told "not today"
                return
        if memory is not None:
            found = recall(memory, self.seed, self._cfg, slot)
            if found.source == "none":
                self.report.discovery = "memory:none"  # nothing was found last time: no probes
                return
        else:
            try:
                found = await discover(self.seed, self._fetcher, slot, self._cfg)
            except FetchError as exc:
                self.report.fail(exc, status=getattr(exc, "status", None))
                self.report.discovery = "failed"
                self._deferred = self._not_today(exc)
                return
        if inc is not None:
            inc.found(found)
        # "fallback" becomes "fallback:<url>" when a probe hits; until then nothing was found.
        self.report.discovery = "none" if found.source == "fallback" else found.source
        if memory is not None:
            self.report.discovery = f"memory:{found.source}"
        self.report.robots_status = found.robots_status
        if found.warning is not None:
            self.report.warnings.append(found.warning)
        self.sitemaps.robots(found.robots_url, found.robots_status)
        if found.robots_truncated:
            self.report.limit("max_robots_bytes")
        self._declared = frozenset(found.robots.sitemaps)
        # (From the remembered origin too, so a recalling run decides as the first did.)
        self._own = home_hosts(self.host, found.origin)
        self._pace_site(found)
        self._robots = found.robots
        self._homes.robots(self.seed.origin, found.origin, self._declared)
        for ref in found.refs:
            self._admit(ref)
        while (nxt := self._frontier.pop()) is not None and not self.batch.cap_hit:
            await self._sitemap(nxt)
            self._choice.children(nxt, self._homes)  # the newest of its children, if an index
            # Its records go out before the host waits for the next fetch (its rate limit,
            # the network): a waiting host holds no batch (issue 29; the outbox joins them).
            await self._flush()
            if self._deferred:
                return

    def _not_today(self, error: FetchError) -> bool:
        """Defer the host if ``error`` asks for more than a run waits (see below)."""
        inc = self.incremental
        return defer_if_not_today(error, self._own, self.seed.origin, self._cfg, self.report, inc)

    def _pace_site(self, found: Discovered) -> None:
        """Apply robots.txt's Crawl-delay to the host it was served from, when that is not
        this one (discovery paced this host's slot; the sitemaps live over there)."""
        site = host_key(found.origin) if found.origin else self.host
        if site == self.host or site not in self._own:
            return
        self._site_host = site
        slot = self._scheduler.acquire(site)
        delay = found.robots.crawl_delay
        if delay and self._cfg.politeness.respect_crawl_delay:
            slot.slow_down(min(delay, self._cfg.politeness.max_crawl_delay))

    def _admit(self, ref: SitemapRef) -> None:
        """A sitemap from discovery (robots.txt, a fallback location, a seed): queued
        unless a policy or cap says no (each reported)."""
        key = self._frontier.key(ref.url)
        if ref.source != "fallback" and not self._frontier.knows(key):
            self.report.sitemaps_listed += 1  # (a fallback location: when it hits)
        if self._permitted(ref):
            self._choice.push(ref, key)

    def _offer(self, ref: SitemapRef, *, read: bool = False) -> None:
        """A child of the index being read (``read``), or carried from the state file:
        among the newest it lists (``Frontier.offer``) unless a policy says no. The
        chosen ones are queued once the index is done (``Choice.children``)."""
        frontier = self._frontier
        key = frontier.key(ref.url)
        known = frontier.knows(key)
        if not known:
            self.report.sitemaps_listed += 1
        if self._filters is not None and not self._filters.follow(ref.url):
            self.report.sitemaps_filtered += 1  # --follow/--skip-sitemap: not fetched
            return
        if read and self.incremental is not None:
            self.incremental.child(ref.url, ref.lastmod)
        if not known:
            if self._permitted(ref):
                self._choice.offer(ref, key)
        elif ref.parent is not None:
            self._homes.child(ref.parent, ref.url)  # (queued by another index, say)

    def _permitted(self, ref: SitemapRef) -> bool:
        """Whether the cross-host policy and robots.txt let ``ref`` be fetched (a refusal
        is reported; a disallowed fallback location passes to the next one)."""
        if not valid_authority(ref.url):
            # A robots.txt Sitemap: line (or a remembered one) whose host no client can
            # name; the reader already dropped such index children. Never requested.
            message = "the sitemap's host can be no DNS name or IP address"
            self.report.fail(InvalidURL(message, url=ref.url), attempts=0)
            self.sitemaps.skipped(ref, "invalid_url")
            return False
        if not self._allowed(ref.url):
            self.report.skip_cross_host(ref.url)
            self.sitemaps.skipped(ref, "cross_host")
            return False
        # Sitemaps the site itself lists in robots.txt are meant to be fetched; guesses and
        # index children on this host honour its Disallow rules, as do those on the host
        # robots.txt was served from (the rules are its own); other hosts' rules are unknown.
        if (
            ref.source != "robots"
            and host_key(ref.url) in self._own
            and not self._robots.can_fetch(ref.url)
        ):
            self.report.robots_disallowed += 1
            self.sitemaps.skipped(ref, "robots_disallowed")
            if ref.source == "fallback":
                self._next_location(ref)  # a guess it disallows is not there for us
            return False
        return True

    def _allowed(self, url: str) -> bool:
        """The cross-host policy (``discovery.cross_host``) for a sitemap at ``url``."""
        policy = self._cfg.discovery.cross_host
        return child_allowed(url, self.host, self._own, policy, self._declared)

    async def _sitemap(self, ref: SitemapRef) -> None:
        """Fetch one sitemap, attempt by attempt, acting on each ``Outcome``: the retry policy.

        ``BodyBroken`` (the body broke or stalled): fetched again from the start, up to
        ``fetch.retries`` times, unless it used the file's whole deadline (the fetcher
        retries only until it hands a body over); the host's dedupe drops what the
        broken read emitted. ``RetryListed`` (a remembered redirect target answered
        4xx): the listed URL, once. ``Undecodable`` (not the Content-Encoding it
        claims): once more as sent (``raw``), the reader sniffs it. Else it ends.
        """
        inc = self.incremental
        target, headers = self._start(ref)
        if target is None:
            return
        retries, refetches, requests = self._cfg.fetch.retries, 0, 0
        raw = False  # asking for the body as sent, its Content-Encoding not undone
        slot_host = host_key(target)  # a child on another host is paced by that host's slot
        slot = self._scheduler.acquire(slot_host)
        try:
            while True:
                digest = inc.new_read() if inc is not None else None
                self.batch.new_read()
                self.sitemaps.attempt(ref)
                outcome = await attempt(
                    self._fetcher, self._cfg, ref, target, slot, headers, self, digest, raw=raw
                )
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
                    case Read(result, status, validators):
                        if raw:
                            result.stats.warnings.append(_UNDECODED)
                        self._done(ref, result)
                        if inc is not None and digest is not None:
                            inc.read(ref, result, status, validators, digest, self.batch.cap_hit)
                        return
                    case NotModified(status) if inc is not None:
                        for child in inc.carry(ref, "not_modified", status):
                            self._offer(child)
                        return
                    case Missed():
                        self._next_probe(ref)
                        return
                    case BodyBroken() | Undecodable() | Failed():
                        # Entries read before the failure were already emitted; kept.
                        self.report.sitemap_failed(
                            outcome.error,
                            outcome.status,
                            requests + outcome.requests,
                            outcome.bytes_read,
                        )
                        if inc is not None:
                            inc.failed(ref, outcome.status)
                        self._deferred = self._not_today(outcome.error)
                        return
                    case _:  # Refused (reported where it was found)
                        return
        finally:
            self._scheduler.release(slot_host)

    def _start(self, ref: SitemapRef) -> tuple[str | None, dict[str, str]]:
        """Where and how to ask for ``ref`` (None: not at all); resets the per-file counts."""
        self.batch.new_file()
        self._frontier.new_file()
        if self.incremental is None:
            return ref.url, {}
        return self.incremental.start(ref, self._offer)

    # -- the attempt's hooks (``attempt.Hooks``) -----------------------------------------

    def head(
        self, ref: SitemapRef, url: str, status: int, validators: tuple[str | None, str | None]
    ) -> Refused | NotModified | None:
        """Where the response came from and its status: stop the attempt, or read on."""
        inc = self.incremental
        if url != ref.url:
            self._frontier.mark_seen(url)
            # aiohttp followed it (the SSRF guard vetted the address); the cross-host
            # policy decides whether its content counts.
            if host_key(url) != host_key(ref.url) and not self._allowed(url):
                self.report.skip_cross_host(url)
                return Refused()
            if inc is not None:
                inc.redirected(url)
        if status == 304 and inc is not None and inc.knows(ref.url):
            return NotModified(status)
        self.batch.sitemap_dates(http_date(validators[1]), datetime.now(UTC))
        self.batch.at_home(self._homes.of(ref.url, url))  # the same-host rule (home.py)
        return None

    async def chunk(self, chunk: bytes) -> None:
        """A chunk of the body, before it is parsed."""
        self.report.bytes += len(chunk)
        self.sitemaps.chunk(len(chunk))
        if self._ready is not None:
            await self._ready()  # the output is behind: wait unparsed

    def _done(self, ref: SitemapRef, result: ReadResult) -> None:
        report = self.report
        if ref.source == "fallback":
            if isinstance(result.error, NotASitemap):
                # A guess that found an HTML page or an empty body: a miss, not a failure.
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
        self._next_location(ref)

    def _next_location(self, ref: SitemapRef) -> None:
        """Probe the fallback location after ``ref``, if any (through ``_admit``: the
        robots.txt rules apply to each guess, and a disallowed one passes to the next)."""
        if ref.fallbacks:
            nxt, *rest = ref.fallbacks
            self._admit(SitemapRef(nxt, source="fallback", fallbacks=tuple(rest)))

    async def entries(self, entries: list[Entry], ref: SitemapRef) -> None:
        """Turn reader entries into records (the batch) and index children (the frontier)."""
        if not entries:
            return
        self.sitemaps.entries(entries)
        others = self.batch.take(entries, ref.url)
        # While the output is behind, the flush waits: only the batch it sends may wait
        # with it, not the parsed entries (no frame holds them).
        del entries
        for entry in others:
            if isinstance(entry, SitemapChild):
                when = entry.lastmod
                child = SitemapRef(entry.loc, ref.depth + 1, "index", when, parent=ref.url)
                self._offer(child, read=True)
        if self.batch.full:
            await self._flush()

    async def _flush(self) -> None:
        out = self.batch.flush()
        if out is not None:
            await self._emit(out)
