"""One host's side of each request for a sitemap: what a response does to the host.

In: what an attempt (``attempt.Attempts``) meets as a response comes in: its final
URL and status (``head``), each chunk of its body before it is parsed (``chunk``)
and the entries the body parsed into (``entries``). Out: the decisions and the data
path of the host worker: a redirect the cross-host policy refuses, a 304 for a
remembered sitemap (``head``'s outcome); the URLs into the host's ``UrlBatch``
and out as ``RecordBatch``es through ``emit`` once the batch is full (``flush``);
the index children into the host's ``SitemapQueue``. The host worker
(``host.py``) keeps the control: which sitemap next, and the retry policy.

Usage::

    hooks = HostHooks(batch, queue, homes, inc, sitemaps, emit, ready)
    outcome = await Attempts(fetcher, cfg.fetch, cfg.reader, hooks).attempt(...)
    await hooks.flush()
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from harvester.crawl.attempt import NotModified, Refused, http_date
from harvester.crawl.frontier import SitemapRef
from harvester.models import SitemapChild

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from harvester.crawl.batch import RecordBatch, UrlBatch
    from harvester.crawl.home import HomeHosts
    from harvester.crawl.incremental import HostIncremental
    from harvester.crawl.policy import SitemapQueue
    from harvester.crawl.sitemaps import SitemapLog
    from harvester.models import Entry, Kind

__all__ = ["HostHooks"]


class HostHooks:
    """The host worker's side of an attempt (``attempt.Hooks``); one per host.

    ``emit``: where the host's record batches go (the run's output; the host waits
    while it does). ``ready``: awaited before each body chunk is parsed (the output
    is behind: wait with the body unparsed; see ``run_shard``).
    """

    def __init__(
        self,
        batch: UrlBatch,
        queue: SitemapQueue,
        homes: HomeHosts,
        incremental: HostIncremental | None,
        sitemaps: SitemapLog,
        emit: Callable[[RecordBatch], Awaitable[None]],
        ready: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self._batch = batch
        self._report = batch.report
        self._sitemaps = sitemaps
        self._queue = queue
        self._homes = homes
        self._incremental = incremental
        self.emit = emit  # (also the links fallback's records, crawl/links.py)
        self._ready = ready
        # Told what each body is once sniffed (the host worker's read ahead; None: nobody).
        self.sniffed: Callable[[SitemapRef, Kind], None] | None = None

    def head(
        self, ref: SitemapRef, url: str, status: int, validators: tuple[str | None, str | None]
    ) -> Refused | NotModified | None:
        """Where the response came from and its status: stop the attempt, or read on."""
        inc = self._incremental
        if url != ref.url:
            if not self._queue.redirected(ref, url):
                return Refused()
            if inc is not None:
                inc.redirected(url)
        if status == 304 and inc is not None and inc.knows(ref.url):
            return NotModified(status)
        self._batch.sitemap_dates(http_date(validators[1]), datetime.now(UTC))
        self._batch.at_home(self._homes.of(ref.url, url))  # the same-host rule (home.py)
        return None

    async def chunk(self, chunk: bytes) -> None:
        """A chunk of the body, before it is parsed."""
        self._report.bytes += len(chunk)
        self._sitemaps.chunk(len(chunk))
        if self._ready is not None:
            await self._ready()  # the output is behind: wait unparsed

    def kind(self, ref: SitemapRef, kind: Kind) -> None:
        """What ``ref``'s body is, once sniffed: to ``sniffed``."""
        if self.sniffed is not None:
            self.sniffed(ref, kind)

    async def entries(self, entries: list[Entry], ref: SitemapRef) -> None:
        """Turn reader entries into records (the batch) and index children (the queue)."""
        if not entries:
            return
        self._sitemaps.entries(entries)
        others = self._batch.take(entries, ref.url)
        # While the output is behind, the flush waits: only the batch it sends may wait
        # with it, not the parsed entries (no frame holds them).
        del entries
        for entry in others:
            if isinstance(entry, SitemapChild):
                when = entry.lastmod
                child = SitemapRef(entry.loc, ref.depth + 1, "index", when, parent=ref.url)
                self._queue.offer(child, read=True)
        if self._batch.full:
            await self.flush()

    async def flush(self) -> None:
        """Hand the batch's records so far to ``emit`` (nothing when it holds none)."""
        out = self._batch.flush()
        if out is not None:
            await self.emit(out)
