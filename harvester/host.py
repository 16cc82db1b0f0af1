"""Host worker: harvest one host end to end (discovery → frontier → fetch → read → records).

In: a ``Seed`` and the shard's shared parts (``Fetcher``, ``Scheduler``, config).
Out: batches of output records (dicts) through ``emit``, then the host's
``HostReport``. Nothing here raises for a bad host or file: every failure is
classified into the report, and what was harvested before it is kept.

The frontier is local to the worker, so a worker that discovers index children
never waits on a queue that only workers drain: the only queue it waits on is
the output, which the writer drains unconditionally. That is why the pipeline
cannot deadlock (see ``pipeline.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from array import array
from typing import TYPE_CHECKING

from harvester.dedupe import SeenSet, fingerprint
from harvester.discovery import child_allowed, discover
from harvester.errors import (
    Blocked,
    ConnectError,
    FetchError,
    FetchTimeout,
    HTTPStatusError,
    NotASitemap,
)
from harvester.frontier import Admission, Frontier, SitemapRef
from harvester.models import SitemapChild, UrlEntry
from harvester.normalize import Normalizer, host_of
from harvester.reader import SitemapReader
from harvester.records import record
from harvester.report import HostReport
from harvester.robots import RobotsTxt
from harvester.scheduler import host_key

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from typing import Any

    from harvester.config import Config
    from harvester.fetch import Fetcher
    from harvester.models import Entry, ReadResult
    from harvester.scheduler import HostSlot, Scheduler
    from harvester.seeds import Seed

    # A batch of one host's records and their URL fingerprints (same order).
    Emit = Callable[[list[dict[str, Any]], array[int]], Awaitable[None]]

__all__ = ["HostWorker"]

logger = logging.getLogger(__name__)

_BATCH = 256  # records per emitted batch: amortises queue overhead; x hosts in flight = memory


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
    ) -> None:
        """``normalizer`` is shared by a shard's workers (its rules compile once)."""
        self.seed = seed
        self.host = seed.host
        self.report = HostReport(seed.host)
        self._cfg = cfg
        self._fetcher = fetcher
        self._scheduler = scheduler
        self._emit = emit
        self._frontier = Frontier(cfg.limits)
        self._declared: frozenset[str] = frozenset()  # sitemaps the host's robots.txt lists
        self._robots = RobotsTxt()  # the host's robots.txt (everything allowed until read)
        # Fingerprints of the canonical URLs emitted for this host (bounded memory, spills).
        self._seen_urls = SeenSet(cfg.dedupe)
        # The host's canonicalization rules (its [normalize.hosts] override, if any).
        self._canonical = (normalizer or Normalizer(cfg.normalize)).for_host(host_of(seed.origin))
        self._batch: list[dict[str, Any]] = []
        self._batch_fps: array[int] = array("Q")  # fingerprints of _batch, same order
        self._url_cap_hit = False
        self._children = 0  # children of the index being read (reset per sitemap)
        # Re-fetch after a broken body: URL entries the current read of the file has
        # passed, and how far earlier reads of it got (seen-hits up to there are replays).
        self._position = 0
        self._replayed = 0

    async def run(self) -> HostReport:
        """Harvest the host; return its report (never raises for host-level failures)."""
        started = time.monotonic()
        slot = self._scheduler.acquire(self.host)
        try:
            async with asyncio.timeout(self._cfg.limits.max_host_seconds):
                await self._run(slot)
        except TimeoutError:
            self.report.limit("max_host_seconds")
        finally:
            self._scheduler.release(self.host)
            self._seen_urls.close()  # deletes a spill file, if the host was that big
            self.report.seconds = round(time.monotonic() - started, 3)
        # Emitted outside the timeout so records harvested before it are never lost.
        await self._flush()
        return self.report

    async def _run(self, slot: HostSlot) -> None:
        try:
            found = await discover(self.seed, self._fetcher, slot, self._cfg)
        except FetchError as exc:
            self.report.fail(exc, status=getattr(exc, "status", None))
            self.report.discovery = "failed"
            return
        # "fallback" becomes "fallback:<url>" when a probe hits; until then nothing was found.
        self.report.discovery = "none" if found.source == "fallback" else found.source
        self.report.robots_status = found.robots_status
        if found.robots_truncated:
            self.report.limit("max_robots_bytes")
        self._declared = frozenset(found.robots.sitemaps)
        self._robots = found.robots
        for ref in found.refs:
            self._admit(ref)
        while (nxt := self._frontier.pop()) is not None:
            if self._url_cap_hit:
                break
            await self._sitemap(nxt)

    def _admit(self, ref: SitemapRef) -> None:
        if not child_allowed(ref.url, self.host, self._cfg.discovery.cross_host, self._declared):
            self.report.skip_cross_host(ref.url)
            return
        # Sitemaps the site itself lists in robots.txt are meant to be fetched; guesses and
        # index children on this host honour its Disallow rules (other hosts' rules are unknown).
        if (
            ref.source != "robots"
            and host_key(ref.url) == self.host
            and not self._robots.can_fetch(ref.url)
        ):
            self.report.robots_disallowed += 1
            return
        admission = self._frontier.push(ref)
        if admission is Admission.QUEUED:
            if ref.source != "fallback":
                self.report.sitemaps_found += 1
        elif admission is not Admission.SEEN:
            self.report.limit(admission.value)

    async def _sitemap(self, ref: SitemapRef) -> None:
        """Fetch one sitemap and stream it through the reader into records and children.

        A connection that breaks or stalls while the body streams (``ConnectError``,
        or ``FetchTimeout`` before the file's total deadline) is fetched again from
        the start, up to ``fetch.retries`` times: the fetcher retries only until it
        hands over a body, so this is the retry for the body itself. A body that
        used up its whole deadline is not fetched again (it would only do it again).
        The re-read starts a fresh reader; entries the broken attempt already
        emitted are dropped by the host's per-URL dedupe, so no record is emitted
        twice, and they are not counted as duplicates either (see ``_entries``).
        """
        ref_host = host_key(ref.url)
        # A child on another host (a CDN subdomain) is paced by that host's own slot.
        slot = self._scheduler.acquire(ref_host)
        attempts = 0  # requests made for this file, over every re-fetch
        retries = self._cfg.fetch.retries
        self._position = self._replayed = 0
        self._children = 0
        try:
            for refetch in range(retries + 1):
                # The host dedupes by canonical URL; a second per-document set would be waste.
                reader = SitemapReader(ref.url, self._cfg.reader, dedupe=False)
                status: int | None = None
                received = 0  # bytes of this attempt's body
                streaming = False  # set once the body is handed over
                started = time.monotonic()
                # Entries up to where earlier attempts got were already handled once.
                self._replayed = max(self._replayed, self._position)
                self._position = 0
                try:
                    async with self._fetcher.stream(
                        ref.url, slot, max_bytes=self._cfg.fetch.max_body_bytes
                    ) as body:
                        status = body.status
                        attempts += body.attempts
                        streaming = True
                        if body.url != ref.url:
                            self._frontier.mark_seen(body.url)
                            if not self._redirect_allowed(ref, body.url):
                                return
                        async for chunk in body.chunks():
                            received += len(chunk)
                            self.report.bytes += len(chunk)
                            entries = reader.feed(chunk)
                            if entries:
                                await self._entries(entries, ref)
                            if reader.failed:
                                break
                    await self._entries(reader.finish(), ref)
                except HTTPStatusError as exc:
                    if ref.fallbacks and 400 <= exc.status < 500 and not isinstance(exc, Blocked):
                        self._next_probe(ref)
                        return
                    self._failed(exc, status=exc.status, attempts=attempts + (exc.attempts or 1))
                    return
                except (ConnectError, FetchTimeout) as exc:
                    deadline_passed = time.monotonic() - started >= self._cfg.fetch.total_timeout
                    if streaming and refetch < retries and not deadline_passed:
                        logger.debug("re-fetching %s after a broken body: %s", ref.url, exc)
                        continue
                    if not streaming:
                        attempts += exc.attempts or 1
                    # Entries read before the failure were already emitted; keep them.
                    self._failed(exc, status=status, attempts=attempts, bytes_read=received)
                    return
                except FetchError as exc:
                    if not streaming:
                        attempts += exc.attempts or 1
                    self._failed(exc, status=status, attempts=attempts, bytes_read=received)
                    return
                self._done(ref, reader.result())
                return
        finally:
            self._scheduler.release(ref_host)

    def _redirect_allowed(self, ref: SitemapRef, final_url: str) -> bool:
        """Apply the cross-host policy to where a sitemap redirected to.

        aiohttp follows redirects itself, so the request to the other host was
        made (the SSRF guard vetted its address); what the policy decides is
        whether its content counts. Refused targets are reported as cross_host.
        """
        if host_key(final_url) == host_key(ref.url) or child_allowed(
            final_url, self.host, self._cfg.discovery.cross_host, self._declared
        ):
            return True
        self.report.skip_cross_host(final_url)
        return False

    def _done(self, ref: SitemapRef, result: ReadResult) -> None:
        report = self.report
        if ref.source == "fallback":
            if isinstance(result.error, NotASitemap):
                # A guess that found an HTML page or an empty body: a miss, not a failure.
                if ref.fallbacks:
                    self._next_probe(ref)
                return
            report.discovery = f"fallback:{ref.url}"
            report.sitemaps_found += 1
        report.sitemaps_fetched += 1
        report.add_read(result.stats)
        if result.error is not None:
            report.sitemaps_failed += 1
            report.fail(result.error, bytes_read=result.stats.bytes_in)

    def _next_probe(self, ref: SitemapRef) -> None:
        nxt, *rest = ref.fallbacks
        self._frontier.push(SitemapRef(nxt, source="fallback", fallbacks=tuple(rest)))

    def _failed(
        self,
        exc: FetchError,
        *,
        status: int | None,
        attempts: int | None = None,
        bytes_read: int | None = None,
    ) -> None:
        self.report.sitemaps_failed += 1
        self.report.fail(exc, status=status, attempts=attempts, bytes_read=bytes_read)

    async def _entries(self, entries: list[Entry], ref: SitemapRef) -> None:
        """Turn reader entries into records (deduplicated per host) and frontier refs."""
        if not entries:
            return
        seen = self._seen_urls
        canon = self._canonical
        batch = self._batch
        fps = self._batch_fps
        host = self.host
        sitemap = ref.url
        cap = self._cfg.limits.max_urls_per_host
        report = self.report
        position, replayed = self._position, self._replayed
        for entry in entries:
            if type(entry) is UrlEntry:
                if self._url_cap_hit:
                    continue
                url = canon(entry.loc)
                position += 1
                fp = fingerprint(url)
                if not seen.add(fp):
                    # Within what a broken earlier read of this file already handled,
                    # a seen URL is that read's record (or duplicate) again: not counted.
                    if position > replayed:
                        report.duplicates += 1
                    continue
                if report.urls >= cap:
                    # Added to the seen-set above but not emitted: harmless, since every
                    # later URL of this host is skipped too.
                    self._url_cap_hit = True
                    self.report.limit("max_urls_per_host")
                    continue
                report.urls += 1
                batch.append(record(entry, sitemap, host, url=url))
                fps.append(fp)
            elif isinstance(entry, SitemapChild):
                self._children += 1
                if self._children > self._cfg.limits.max_children_per_index:
                    report.limit("max_children_per_index")
                    continue
                self._admit(
                    SitemapRef(entry.loc, ref.depth + 1, "index", entry.lastmod, parent=sitemap)
                )
        self._position = position
        if len(batch) >= _BATCH:
            await self._flush()

    async def _flush(self) -> None:
        if self._batch:
            batch, self._batch = self._batch, []
            fps, self._batch_fps = self._batch_fps, array("Q")
            await self._emit(batch, fps)
