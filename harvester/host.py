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
from collections import Counter
from datetime import UTC, datetime
from itertools import chain, compress, groupby, repeat
from typing import TYPE_CHECKING

import xxhash

from harvester import compiled
from harvester.audit import LastmodDistribution
from harvester.dedupe import SeenSet, fingerprint
from harvester.discovery import child_allowed, discover, recall
from harvester.errors import (
    Blocked,
    ConnectError,
    FetchError,
    FetchTimeout,
    HTTPStatusError,
    NotASitemap,
)
from harvester.frontier import Admission, Frontier, SitemapRef
from harvester.ledger import (
    EMIT_EVENTS,
    NO_LASTMOD,
    HostMemory,
    HostState,
    LedgerRows,
    SitemapState,
    now,
)
from harvester.models import SitemapChild, UrlEntry
from harvester.normalize import Normalizer, host_of
from harvester.reader import SitemapReader
from harvester.records import lastmod_iso, record
from harvester.report import HostReport
from harvester.robots import RobotsTxt
from harvester.scheduler import host_key
from harvester.sink import encode_records

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from typing import Any

    from harvester.config import Config
    from harvester.discovery import Discovered
    from harvester.fetch import Fetcher
    from harvester.ledger import LedgerReader, SitemapMemory
    from harvester.models import Entry, ReadResult
    from harvester.scheduler import HostSlot, Scheduler
    from harvester.seeds import Seed

    # A batch of one host's records, their URL fingerprints (same order) and, with a
    # state file, the ledger rows of every URL listed (emitted or not).
    # ``data``: the batch already encoded as JSON lines (``records`` then empty), when the
    # worker was made with ``encoded=True`` (see HostWorker); ``lines``: how many lines
    # ``data`` holds when a filter made it fewer than the fingerprints (else None).
    Emit = Callable[
        [
            list[dict[str, Any]],
            array[int],
            LedgerRows | None,
            bytes | bytearray | None,
            int | None,
        ],
        Awaitable[None],
    ]

__all__ = ["HostWorker"]

# The compiled URL loop (harvester/_chost.pyx); None: _entries' Python loop does it all.
_chost = compiled.load("_chost")
_url_entries: Callable[..., tuple[int, int, bool, list[Entry]]] | None = (
    _chost.url_entries if _chost is not None else None
)
# Its one-pass labelling of a batch's lines (_select_lines); None: bytearray.replace.
_label_lines: Callable[[bytearray, bytes], bytes] | None = (
    _chost.label_lines if _chost is not None else None
)

logger = logging.getLogger(__name__)

# ``_select_lines``' labels, as orjson writes the keys ``_select`` adds to a record.
_EVENT_LABELS = {e: b',"event":"%s"' % e.encode() for e in EMIT_EVENTS["all"] | {"removed"}}
_SINCE_LABELS = {s: b',"since":"%s"' % s.encode() for s in ("after", "undated", "unverified")}

# Records per emitted batch: amortises each batch's fixed costs (its flush, message,
# ledger chunk and the writer's insert); x hosts in flight = memory. 512 rather than
# 256 halves the ledger's chunks (and the writer's inserts) for no measured peak RSS
# (bench_pipeline many: 249 MB either way); 1024 added ~20 MB.
_BATCH = 512
_AUDIT_ALL = 500  # URLs of a host that all feed the lastmod distribution; then 1 in 8


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

        ``ledger`` (the state file, read-only) turns on incremental harvesting:
        URL events, conditional GETs (except with ``emit_mode`` ``all``, which
        must output every URL and so downloads everything), discovery memory,
        and the ``HostState`` left in ``self.state`` for the writer.

        ``encoded``: the caller writes JSON Lines, so batches may come as their
        encoded bytes (``sink.encode_records``' exact output) instead of dicts. The
        compiled loop then writes each record's line itself; with a state file or
        ``--since`` (whose filter reads the dicts) a batch is encoded once selected;
        without the compiled loop, batches stay dicts.

        ``ready``: awaited before each body chunk is parsed (see ``run_shard``).
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
        self._robots = RobotsTxt()  # the host's robots.txt (everything allowed until read)
        # Fingerprints of the canonical URLs emitted for this host (bounded memory, spills).
        self._seen_urls = SeenSet(cfg.dedupe)
        # The host's canonicalization rules (its [normalize.hosts] override, if any).
        rules = (normalizer or Normalizer(cfg.normalize)).rules_for(host_of(seed.origin))
        self._canonical = rules.canonical
        self._strip_slash = rules.strip_slash  # for the compiled loop's own check
        self._batch: list[dict[str, Any]] = []
        self._batch_fps: array[int] = array("Q")  # fingerprints of _batch, same order
        self._url_cap_hit = False
        self._children = 0  # children of the index being read (reset per sitemap)
        # Re-fetch after a broken body: URL entries the current read of the file has
        # passed, and how far earlier reads of it got (seen-hits up to there are replays).
        self._position = 0
        self._replayed = 0
        self._listed = 0  # distinct URLs listed (the max_urls_per_host cap counts these)
        # Incremental harvesting (a state file) and the --since filter.
        self._ledger = ledger
        self._events = EMIT_EVENTS[emit_mode]
        self._conditional = ledger is not None and emit_mode != "all"
        self._since = cfg.output.since_epoch
        self._filtering = ledger is not None or self._since is not None
        self._batch_lastmods: array[int] = array("q")  # lastmod epochs of _batch (filtering)
        # The batch as JSON lines (see ``encoded``); None: records go to _batch as dicts.
        # A filter labels the lines (``_select_lines``): a line (~190 bytes here) is a
        # fraction of its record dict with its strings and datetime, and the writer
        # would encode the dict anyway.
        self._encoded: bytearray | None = (
            bytearray() if encoded and _url_entries is not None else None
        )
        # With a state file and lines, the ledger rows' URLs (same order, as UTF-8 lines:
        # see ``LedgerRows.pack_text``), sitemaps (runs of (sitemap, count)) and where
        # each run ends in the text.
        lines_ledger = self._encoded is not None and ledger is not None
        self._batch_urls: bytearray | None = bytearray() if lines_ledger else None
        self._batch_sitemaps: list[tuple[str, int]] | None = [] if lines_ledger else None
        self._batch_ends: list[int] = []
        # Without the compiled loop, filtered dicts are encoded once selected.
        self._encode_selected = encoded and self._filtering and self._encoded is None
        self._memory = HostMemory()
        # The label the compiled loop writes into each line (_take), or None: decided
        # at the host's first batch (False until then), once its ledger is read.
        self._line_label: bytes | bool | None = False
        self.state: HostState | None = HostState(self.host) if ledger is not None else None
        self._child_refs: list[tuple[str, int | None]] = []  # the index being read (ledger)
        self._robots_fresh = False  # robots.txt was read in full this run
        self._remembered = False  # discovery came from the state's memory
        self._remembered_stale = False  # ...and a remembered sitemap is gone: rediscover next run
        self._discovered: Discovered | None = None
        self._missing: list[str] = []  # fallback locations that missed
        self._final_url: str | None = None  # where the sitemap being read redirected to
        self._direct: set[str] = set()  # sitemaps whose remembered redirect went stale
        # The lastmod audit's distribution checks (issue 7): every URL listed, with the
        # Last-Modified header and fetch time of its sitemap (generation-time detection).
        # A host's first _AUDIT_ALL URLs all count, then 1 in 8 by fingerprint (shares
        # stay within a few percent; the sketch's 1,024 hashes keep 64 hosts in flight
        # at ~10 MB per worker).
        self._dist = LastmodDistribution(distinct_cap=1024) if cfg.audit.distribution else None
        self._sitemap_modified: datetime | None = None
        self._fetched_at = datetime.now(UTC)
        self._unverified = False  # the host's lastmod is not trusted (see _trust_lastmod)

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
        audit = self._audit()
        if self.state is not None:
            self.state.audit = audit
            self._finish_state()
        return self.report

    def _audit(self) -> dict[str, Any] | None:
        """The host's lastmod distribution verdict (into the report; None: nothing read)."""
        dist = self._dist
        if dist is None or dist.total == 0:
            # Nothing downloaded (everything 304): the state keeps the last verdict.
            return None
        verdict = dist.verdict().as_dict()
        verdict["urls_listed"] = self._listed  # figures.total of them were counted
        self.report.lastmod_audit = verdict
        return {**verdict, "histogram": dist.histogram()}

    def _trust_lastmod(self) -> None:
        """Decide from the state's memory whether this host's lastmod may filter URLs.

        Not trusted: its last distribution verdict proved lastmod useless
        (``absent``, ``generation_time``, ``constant``, ``future``), or sampled
        verification scored it ``untrusted`` (or not yet ``trusted``, with
        ``audit.require_trust``). Its URLs then go to the ``unverified`` group
        instead of being filtered by lastmod, and its sitemaps are downloaded in
        full (a 304 would hide URLs whose pages changed behind an unchanged list).
        """
        memory = self._memory
        audit = self._cfg.audit
        if audit.untrusted == "hint":
            return
        self._unverified = (
            memory.trust == "untrusted"
            or memory.verdict in ("absent", "generation_time", "constant", "future")
            or (audit.require_trust and memory.host_id is not None and memory.trust != "trusted")
        )
        if self._unverified and self._conditional and "unverified" in self._events:
            self._conditional = False

    async def _run(self, slot: HostSlot) -> None:
        if self._ledger is not None:
            self._memory = self._ledger.host(self.host)
            self._trust_lastmod()
        memory = self._memory.discovery
        if (
            memory is not None
            and memory.get("source") != "stale"
            and self.seed.sitemap is None
            and now() - self._memory.discovered_at < self._cfg.state.rediscover_after
        ):
            found = recall(memory, self.seed, self._cfg, slot)
            self._remembered = True
            if found.source == "none":
                self.report.discovery = "memory:none"  # nothing was found last time: no probes
                return
        else:
            try:
                found = await discover(self.seed, self._fetcher, slot, self._cfg)
            except FetchError as exc:
                self.report.fail(exc, status=getattr(exc, "status", None))
                self.report.discovery = "failed"
                return
            self._robots_fresh = found.robots_status == 200 and not found.robots_truncated
        self._discovered = found
        # "fallback" becomes "fallback:<url>" when a probe hits; until then nothing was found.
        self.report.discovery = "none" if found.source == "fallback" else found.source
        if self._remembered:
            self.report.discovery = f"memory:{found.source}"
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
        memory = self._memory.sitemaps.get(ref.url)
        headers = self._conditions(ref, memory)
        if headers is None:
            assert memory is not None
            self._carry(ref, memory, "skipped", None)  # its index lastmod has not advanced
            return
        # A sitemap that redirected last time is asked for where it ended up (one
        # request, not two); if that fails with a 4xx the listed URL is tried again.
        target = ref.url
        if (
            memory is not None
            and memory.complete
            and memory.final_url
            and ref.url not in self._direct
        ):
            target = memory.final_url
        self._final_url = None
        ref_host = host_key(target)
        # A child on another host (a CDN subdomain) is paced by that host's own slot.
        slot = self._scheduler.acquire(ref_host)
        attempts = 0  # requests made for this file, over every re-fetch
        retry_listed = False
        retries = self._cfg.fetch.retries
        self._position = self._replayed = 0
        self._children = 0
        try:
            for refetch in range(retries + 1):
                # The host dedupes by canonical URL; a second per-document set would be waste.
                reader = SitemapReader(ref.url, self._cfg.reader, dedupe=False)
                # XXH3-128 (the xxhash package): ~11 GB/s here, against SHA-256's 1.3
                # (with the CPU's SHA instructions; 1.5-2 % of a worker's CPU) and
                # BLAKE2b's 0.7. The hash only tells "the same bytes as the last full
                # read" (sitemaps_unchanged); a site that wanted to fool it could just
                # serve what it likes, so a cryptographic hash buys nothing here.
                digest = xxhash.xxh3_128() if self._ledger is not None else None
                self._child_refs = []
                status: int | None = None
                received = 0  # bytes of this attempt's body
                streaming = False  # set once the body is handed over
                started = time.monotonic()
                # Entries up to where earlier attempts got were already handled once.
                self._replayed = max(self._replayed, self._position)
                self._position = 0
                try:
                    async with self._fetcher.stream(
                        target, slot, max_bytes=self._cfg.fetch.max_body_bytes, headers=headers
                    ) as body:
                        status = body.status
                        attempts += body.attempts
                        streaming = True
                        if body.url != ref.url:
                            self._frontier.mark_seen(body.url)
                            if not self._redirect_allowed(ref, body.url):
                                return
                            self._final_url = body.url
                        if status == 304 and memory is not None:
                            self._carry(ref, memory, "not_modified", status)
                            return
                        validators = (body.headers.get("ETag"), body.headers.get("Last-Modified"))
                        self._fetched_at = datetime.now(UTC)
                        self._sitemap_modified = _http_date(validators[1])
                        async for chunk in body.chunks():
                            received += len(chunk)
                            self.report.bytes += len(chunk)
                            if digest is not None:
                                digest.update(chunk)
                            if self._ready is not None:
                                await self._ready()  # the output is behind: wait unparsed
                            # No local name for the entries: once the loop below has
                            # turned them into records they die, instead of waiting with
                            # this frame while the output is behind (~19k per worker).
                            await self._entries(reader.feed(chunk), ref)
                            if reader.failed:
                                break
                    await self._entries(reader.finish(), ref)
                except HTTPStatusError as exc:
                    if target != ref.url and 400 <= exc.status < 500:
                        self._direct.add(ref.url)  # the remembered redirect is stale
                        retry_listed = True
                        break  # (out of the attempts: the slot is released first)
                    if ref.fallbacks and 400 <= exc.status < 500 and not isinstance(exc, Blocked):
                        self._next_probe(ref)
                        return
                    self._failed(
                        ref, exc, status=exc.status, attempts=attempts + (exc.attempts or 1)
                    )
                    return
                except (ConnectError, FetchTimeout) as exc:
                    deadline_passed = time.monotonic() - started >= self._cfg.fetch.total_timeout
                    if streaming and refetch < retries and not deadline_passed:
                        logger.debug("re-fetching %s after a broken body: %s", ref.url, exc)
                        continue
                    if not streaming:
                        attempts += exc.attempts or 1
                    # Entries read before the failure were already emitted; keep them.
                    self._failed(ref, exc, status=status, attempts=attempts, bytes_read=received)
                    return
                except FetchError as exc:
                    if not streaming:
                        attempts += exc.attempts or 1
                    self._failed(ref, exc, status=status, attempts=attempts, bytes_read=received)
                    return
                self._done(ref, reader.result())
                if self.state is not None:
                    self._record_read(ref, reader.result(), status, validators, digest)
                return
        finally:
            self._scheduler.release(ref_host)
        if retry_listed:
            await self._sitemap(ref)

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
                else:
                    self._missing.append(ref.url)
                self._remembered_stale = self._remembered  # the remembered hit is gone
                return
            report.discovery = f"fallback:{ref.url}"
            report.sitemaps_found += 1
        report.sitemaps_fetched += 1
        report.add_read(result.stats)
        if result.error is not None:
            report.sitemaps_failed += 1
            report.fail(result.error, bytes_read=result.stats.bytes_in)

    def _next_probe(self, ref: SitemapRef) -> None:
        self._missing.append(ref.url)  # remembered: not probed again until rediscovery
        nxt, *rest = ref.fallbacks
        self._frontier.push(SitemapRef(nxt, source="fallback", fallbacks=tuple(rest)))

    def _failed(
        self,
        ref: SitemapRef,
        exc: FetchError,
        *,
        status: int | None,
        attempts: int | None = None,
        bytes_read: int | None = None,
    ) -> None:
        self.report.sitemaps_failed += 1
        self.report.fail(exc, status=status, attempts=attempts, bytes_read=bytes_read)
        if ref.source == "fallback":
            self._missing.append(ref.url)
        if self.state is not None and ref.source != "fallback":
            self.state.sitemaps.append(SitemapState(ref.url, ref.parent, "error", status))
        if self._remembered and ref.parent is None and status in (404, 410):
            self._remembered_stale = True  # a remembered sitemap is gone: rediscover next run

    # -- incremental harvesting (a state file) -------------------------------------

    def _conditions(self, ref: SitemapRef, memory: SitemapMemory | None) -> dict[str, str] | None:
        """Request headers for ``ref``: validators of its last full read; None: skip it."""
        headers: dict[str, str] = {}
        if not self._conditional or memory is None or not memory.complete:
            return headers
        if (
            self._cfg.state.skip_unchanged_children
            and self._memory.trust == "trusted"  # only where lastmod earned it
            and ref.source == "index"
            and ref.lastmod is not None
            and memory.index_lastmod is not None
            and int(ref.lastmod.timestamp()) <= memory.index_lastmod
        ):
            return None
        if memory.etag:
            headers["If-None-Match"] = memory.etag
        if memory.last_modified:
            headers["If-Modified-Since"] = memory.last_modified
        return headers

    def _carry(self, ref: SitemapRef, memory: SitemapMemory, status: str, http: int | None) -> None:
        """An unchanged sitemap: its URLs stay listed; an index's children are re-admitted."""
        assert self.state is not None
        self.report.sitemaps_unchanged += 1
        self.state.sitemaps.append(
            SitemapState(ref.url, ref.parent, status, http, complete=True, carried=True)
        )
        for url, lastmod in memory.children:
            when = datetime.fromtimestamp(lastmod, UTC) if lastmod is not None else None
            self._admit(SitemapRef(url, ref.depth + 1, "index", when, parent=ref.url))

    def _record_read(
        self,
        ref: SitemapRef,
        result: ReadResult,
        status: int | None,
        validators: tuple[str | None, str | None],
        digest: xxhash.xxh3_128 | None,
    ) -> None:
        """Remember a downloaded sitemap: validators and hash only from a complete read."""
        assert self.state is not None
        if ref.source == "fallback" and isinstance(result.error, NotASitemap):
            return  # a probe that missed is discovery's business
        complete = result.status == "ok" and not self._url_cap_hit
        content_hash = digest.digest()[:16] if digest is not None else None
        memory = self._memory.sitemaps.get(ref.url)
        if complete and memory is not None and memory.content_hash == content_hash:
            self.report.sitemaps_unchanged += 1  # same bytes as last time, no validators
        is_index = result.kind is not None and result.kind.value == "sitemapindex"
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
                children=list(self._child_refs) if is_index else None,
                index_lastmod=int(ref.lastmod.timestamp()) if ref.lastmod is not None else None,
                final_url=self._final_url,
            )
        )
        if complete:
            self.state.removal_scope.append(ref.url)

    def _finish_state(self) -> None:
        """Close the host's state: discovery memory, delisted sitemaps, finished or not."""
        state = self.state
        assert state is not None
        report = self.report
        cut_short = bool(report.limits_hit)
        state.finished = "max_host_seconds" not in report.limits_hit
        found = self._discovered
        if self._remembered_stale:
            state.discovery = {"source": "stale"}
        elif found is not None and not self._remembered and found.source != "seed":
            state.discovery = self._discovery_memory(found)
        # Sitemaps known from earlier runs that nothing read in full this run lists any
        # more (robots.txt dropped it, its index did): their URLs are removed too.
        complete = {s.url for s in state.sitemaps if s.complete}
        if not cut_short:
            for url, memory in self._memory.sitemaps.items():
                if self._frontier.seen(url):
                    continue
                parent = memory.parent
                if (parent is None and self._robots_fresh) or parent in complete:
                    state.removal_scope.append(url)

    def _discovery_memory(self, found: Discovered) -> dict[str, Any] | None:
        """What to remember of this run's discovery (None: it told us nothing reliable)."""
        discovery = self.report.discovery
        memory: dict[str, Any] = {
            "origin": found.origin,
            "robots_url": found.robots_url,
            "robots_status": found.robots_status,
            "robots": found.robots_text.decode("utf-8", "replace"),
            "redirects": list(found.redirects),
            "missing": list(self._missing),
        }
        if found.source == "robots":
            memory.update(source="robots", refs=[r.url for r in found.refs])
        elif discovery.startswith("fallback:"):
            hit = discovery.removeprefix("fallback:")
            memory.update(source="fallback", refs=[hit])
        elif self.report.failures_total:
            return None  # probes failed for other reasons than "not there": ask again
        else:
            memory.update(source="none", refs=[])
        return memory

    async def _entries(self, entries: list[Entry], ref: SitemapRef) -> None:
        """Turn reader entries into records (deduplicated per host) and frontier refs."""
        if not entries:
            return
        self._take(entries, ref)
        # While the output is behind, the flush waits: only the batch it sends may wait
        # with it, not the parsed entries nor the batch's records (no frame holds them).
        del entries
        if len(self._batch_fps) >= _BATCH:
            await self._flush()

    def _take(self, entries: list[Entry], ref: SitemapRef) -> None:
        """``_entries`` up to the flush: records into the batch, children into the frontier."""
        seen = self._seen_urls
        canon = self._canonical
        batch = self._batch
        fps = self._batch_fps
        host = self.host
        sitemap = ref.url
        cap = self._cfg.limits.max_urls_per_host
        report = self.report
        position, replayed = self._position, self._replayed
        lastmods = self._batch_lastmods if self._filtering else None
        dist = self._dist
        listed = self._listed
        modified, fetched_at = self._sitemap_modified, self._fetched_at
        if _url_entries is not None:
            label = self._line_label
            if label is False:
                label = self._line_label = self._every_line_label()
            assert label is None or isinstance(label, bytes)
            # The compiled loop does the URL entries (the same steps as below, see
            # harvester/_chost.pyx) and hands back the rest: index children.
            listed, position, self._url_cap_hit, entries = _url_entries(
                entries,
                canon,
                self._strip_slash,
                seen,
                batch,
                fps,
                lastmods,
                NO_LASTMOD,
                host,
                sitemap,
                cap,
                listed,
                position,
                replayed,
                self._url_cap_hit,
                dist,
                modified,
                fetched_at,
                lastmod_iso,
                record,
                UrlEntry,
                report,
                self._encoded,
                self._batch_urls,
                label,
            )
            runs = self._batch_sitemaps
            if runs is not None and self._batch_urls is not None:
                added = len(fps) - sum(n for _, n in runs)
                if added and runs and runs[-1][0] == sitemap:
                    # The same sitemap as the last feed: one run, so one chunk.
                    runs[-1] = (sitemap, runs[-1][1] + added)
                    self._batch_ends[-1] = len(self._batch_urls)
                elif added:
                    runs.append((sitemap, added))
                    self._batch_ends.append(len(self._batch_urls))
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
                if listed >= cap:
                    # Added to the seen-set above but not emitted: harmless, since every
                    # later URL of this host is skipped too.
                    self._url_cap_hit = True
                    self.report.limit("max_urls_per_host")
                    continue
                listed += 1
                report.urls += 1
                if dist is not None and (listed <= _AUDIT_ALL or not fp & 7):
                    dist.add(
                        entry.lastmod,
                        entry.lastmod_raw,
                        sitemap_last_modified=modified,
                        fetched_at=fetched_at,
                    )
                batch.append(record(entry, sitemap, host, url=url))
                fps.append(fp)
                if lastmods is not None:
                    when = entry.lastmod
                    lastmods.append(NO_LASTMOD if when is None else int(when.timestamp()))
            elif isinstance(entry, SitemapChild):
                self._children += 1
                if self._children > self._cfg.limits.max_children_per_index:
                    report.limit("max_children_per_index")
                    continue  # (a capped index is never complete: limits_hit is set)
                if self.state is not None:
                    when = entry.lastmod
                    self._child_refs.append(
                        (entry.loc, None if when is None else int(when.timestamp()))
                    )
                self._admit(
                    SitemapRef(entry.loc, ref.depth + 1, "index", entry.lastmod, parent=sitemap)
                )
        self._position = position
        self._listed = listed

    async def _flush(self) -> None:
        if self._batch_fps:
            batch, self._batch = self._batch, []
            fps, self._batch_fps = self._batch_fps, array("Q")
            rows: LedgerRows | None = None
            data: bytes | bytearray | None = None
            lines: int | None = None
            encoded = self._encoded
            if self._filtering:
                lastmods, self._batch_lastmods = self._batch_lastmods, array("q")
                if encoded is not None:
                    data, lines, rows = self._select_lines(encoded, fps, lastmods)
                    self._encoded = bytearray()  # data may be this one (see below)
                else:
                    batch, rows = self._select(batch, fps, lastmods)
                    if self._encode_selected:
                        data, lines = encode_records(batch), len(batch)
                        batch = []
            elif encoded is not None:
                # Handed on as it is, and the next batch gets a new buffer: a copy
                # (bytes(encoded)) moved every output byte once more in the workers.
                data, self._encoded = encoded, bytearray()
            await self._emit(batch, fps, rows, data, lines)

    def _every_line_label(self) -> bytes | None:
        """The label of every line of this host, when the compiled loop may write it: a
        host new to the state file, each of its URLs kept as ``new`` (``_labels``' one
        event for a whole batch), its lines made by the loop. Else None.

        Why: ``_select_lines`` otherwise inserts it into each line of each batch
        afterwards, a pass and a copy of every byte (~0.2 s of the workers' CPU on the
        many benchmark, where every host is new).
        """
        ledger = self._ledger
        if ledger is None or self._encoded is None or self._since is not None:
            return None
        if "new" not in self._events or not ledger.fresh(self._memory):
            return None
        return _EVENT_LABELS["new"]

    def _select(
        self, batch: list[dict[str, Any]], fps: array[int], lastmods: array[int]
    ) -> tuple[list[dict[str, Any]], LedgerRows | None]:
        """Label records with their event and keep those ``--emit``/``--since`` ask for.

        Returns the records to write and the ledger rows of every URL listed (also
        the ones not written: the ledger must know they are still listed).
        """
        runs = [(s, len(list(group))) for s, group in groupby(r["sitemap"] for r in batch)]
        kept, rows, every = self._labels(fps, lastmods, [r["url"] for r in batch], runs)
        if every is not None:
            for rec in batch:
                rec["event"] = every
            return batch, rows
        out: list[dict[str, Any]] = []
        for i, event, since in kept:
            rec = batch[i]
            if event is not None:
                rec["event"] = event
            if since is not None:
                rec["since"] = since
            out.append(rec)
        return out, rows

    def _select_lines(
        self, data: bytearray, fps: array[int], lastmods: array[int]
    ) -> tuple[bytes | bytearray, int, LedgerRows | None]:
        """``_select`` for a batch the compiled loop wrote as JSON lines.

        Returns the kept lines, labelled (``data`` itself when it needs no change: the
        caller then leaves it be), their count and the ledger rows. A label
        goes before its line's closing brace, in the order ``_select`` adds the
        keys (``event``, then ``since``): the bytes are those of the labelled dicts.
        """
        text, sitemaps, ends = self._batch_urls, self._batch_sitemaps, self._batch_ends
        urls: tuple[bytearray, list[int]] | None = None
        if text is not None and sitemaps is not None:
            self._batch_urls, self._batch_sitemaps, self._batch_ends = bytearray(), [], []
            urls = (text, ends)
        kept, rows, every = self._labels(fps, lastmods, urls, sitemaps)
        if every is not None:
            label = _EVENT_LABELS[every]
            if label == self._line_label:
                return data, len(fps), rows  # the compiled loop wrote it
            # One label for every line: one pass in C. A raw "}\n" ends a line and
            # nothing else (JSON escapes a newline inside a string).
            if _label_lines is not None:
                return _label_lines(data, label), len(fps), rows
            return bytes(data.replace(b"}\n", label + b"}\n")), len(fps), rows
        assert not self._line_label  # (set only where every line gets one label)
        lines = data.split(b"\n")  # one more than the records: the empty tail
        out = bytearray()
        for i, event, since in kept:
            line = lines[i]
            if event is not None or since is not None:
                del line[-1]  # the closing brace (the split made this copy of the line)
                if event is not None:
                    line += _EVENT_LABELS[event]
                if since is not None:
                    line += _SINCE_LABELS[since]
                line += b"}"
            out += line
            out += b"\n"
        return bytes(out), len(kept), rows

    def _labels(
        self,
        fps: array[int],
        lastmods: array[int],
        urls: list[str] | tuple[bytearray, list[int]] | None,
        sitemaps: list[tuple[str, int]] | None,
    ) -> tuple[list[tuple[int, str | None, str | None]], LedgerRows | None, str | None]:
        """Decide, for a batch, which records ``--emit``/``--since`` keep and their labels.

        In: the batch's fingerprints, lastmod epochs and, with a state file, its
        canonical URLs (a list, or the compiled loop's text and run ends: see
        ``LedgerRows.pack_text``) and sitemaps as runs (for the ledger rows). Out: ``(index,
        event, since)`` of each record to write (a label None: that key is not
        added); the ledger rows of every URL listed but the replayed ones (also
        those not written: the ledger must know they are still listed); and, when
        every record is kept with one same event and no ``since`` (a host new to
        the state file, say), that event, with no per-record list. Counts the
        events into the report.
        """
        report = self.report
        since = self._since
        out: list[tuple[int, str | None, str | None]] = []
        rows: LedgerRows | None = None
        events: list[str | None] = []
        signed_fps = array("q", fps.tobytes())  # same bits, as SQLite's signed integers
        if self._ledger is not None and urls is not None and sitemaps is not None:
            # A host new to the ledger (every host of a first run) needs no lookup, and
            # no count of a list of "new": Counter took ~30 µs a batch of 512.
            fresh = self._ledger.fresh(self._memory)
            stored = lastmods  # the rows' lastmods (the filter below uses this run's)
            if not fresh:
                events = self._ledger.events(self._memory, signed_fps, lastmods)
                stored = self._ledger.carry(self._memory, signed_fps, lastmods)
            counts: Counter[str | None] = (
                Counter({"new": len(lastmods)}) if fresh else Counter(events)
            )
            replayed = counts.pop(None, 0)
            for name, count in counts.items():
                setattr(report, name, getattr(report, name) + count)  # type: ignore[arg-type]
            if replayed:
                # Recorded by this run before it was cut short: in the output and ledger.
                report.replayed += replayed
                if isinstance(urls, tuple):  # (rare: a resumed host) as a list, then
                    urls = bytes(urls[0]).decode("utf-8", "surrogatepass").split("\n")[:-1]
                keep = [event is not None for event in events]
                each = chain.from_iterable(repeat(s, n) for s, n in sitemaps)  # row by row
                sitemaps = [(s, len(list(g))) for s, g in groupby(compress(each, keep))]
                rows = LedgerRows.pack(
                    array("q", compress(signed_fps, keep)),
                    list(compress(urls, keep)),
                    array("q", compress(stored, keep)),
                    sitemaps,
                )
            else:
                if isinstance(urls, tuple):
                    rows = LedgerRows.pack_text(signed_fps, *urls, stored, sitemaps)
                else:
                    rows = LedgerRows.pack(signed_fps, urls, stored, sitemaps)
                if since is None and len(counts) == 1:
                    (only,) = counts
                    if self._unverified and only != "new":
                        only = "unverified"
                    if only in self._events:
                        return out, rows, only
                    report.urls -= len(lastmods)
                    return out, rows, None
                if fresh:
                    events = ["new"] * len(lastmods)  # labelled one by one below
        wanted = self._events
        unverified = self._unverified
        for i, lastmod in enumerate(lastmods):
            event: str | None = None
            label: str | None = None
            if events:
                event = events[i]
                if event is None:
                    continue  # replayed (counted above)
                if unverified and event != "new":
                    event = "unverified"  # its lastmod cannot say whether it changed
                if event not in wanted:
                    continue
            if since is not None:
                if unverified:
                    label = "unverified"  # not filtered by a lastmod that may lie
                elif lastmod == NO_LASTMOD:
                    label = "undated"  # may have changed: the caller decides
                elif lastmod <= since:
                    continue
                else:
                    label = "after"
            out.append((i, event, label))
        report.urls -= len(lastmods) - len(out)
        return out, rows, None


def _http_date(value: str | None) -> datetime | None:
    """An HTTP date header as aware UTC, or None when absent or unparseable."""
    if not value:
        return None
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return when.astimezone(UTC) if when.tzinfo is not None else when.replace(tzinfo=UTC)
