"""A host's next sitemap asked while the current one is read: the host's second slot.

In: the shard's ``Fetcher`` and ``Scheduler``, the URL of the sitemap a host worker will
read next, and the fetcher's body cap. Out: a ``Prefetch`` (made by the host worker's
``ReadAhead``, which decides when) whose request is under way at once; ``open()`` is
then the same context ``Fetcher.stream`` is (a ``Body``: head, then chunks), its head
awaited from that request and its chunks from a small buffer (``BUFFER`` chunks) the
request fills ahead of the reader. ``close()`` ends it, opened or not.

Why: a host's sitemaps are read one at a time (its records, dedupe and state are per
read), so a host whose every answer takes a second to its first byte (a sitemap
generated on request) got one sitemap a second, although its politeness (2 requests at
once, 2 a second) allows two. The wait for the next one's first byte now overlaps the
current one's read; the reading itself stays one at a time and in order.

When (``ReadAhead.start``, ``fetch.prefetch``): the current and the next sitemap (the
frontier's next) were both listed, by an index or by robots.txt (not a seed's sitemap,
not a guessed location); the next is on the host's own slot, which has a second place
(``concurrency`` > 1); a sibling of the current one (listed by the same) was read as a
urlset; and with a state file, the next is one no earlier run read (a conditional
request and adaptive revisit are decided only when its turn comes). The next is asked
when the current one is, not once the current one is known to be a urlset: a host slow
to its first byte then has both waits under way at once. Should the current one be an
index after all, the next is put back where it was (``Frontier.unpop``; its request
ended), so the index's children come first as the frontier orders them: what is read,
and in which order, is what it would be without reading ahead (one request may be more:
the next's, when the current one's answer ends the host, e.g. a 429 "not today", or
hits the URL cap). Politeness is exact: the request goes through the host's
``HostSlot`` like any other (its concurrency, rate and Crawl-delay) and holds one of its
places while it runs.

Memory: the buffer holds at most ``BUFFER`` chunks (``fetch.chunk_size`` each); a full
buffer stops reading the socket (the server waits, as for a slow reader). Bodies read
ahead pass their own gate (``fetch.max_bodies`` of them, beside the readers'): a reader
never waits on a body read ahead, so neither gate can wait on the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import TYPE_CHECKING

from harvester.crawl.scheduler import host_key
from harvester.models import Kind

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from harvester.config import FetchConfig
    from harvester.crawl.batch import UrlBatch
    from harvester.crawl.body import Body
    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.frontier import Frontier, SitemapRef
    from harvester.crawl.incremental import HostIncremental
    from harvester.crawl.scheduler import Scheduler

__all__ = ["BUFFER", "Prefetch", "ReadAhead", "siblings", "upcoming"]

BUFFER = 2  # chunks read ahead of the reader, at most

# What the buffer holds: a chunk, the error that ended the body, or None at its end.
_Item = bytes | BaseException | None


class Prefetch:
    """One sitemap's request started ahead of its read (see the module docstring)."""

    __slots__ = ("_chunks", "_closed", "_head", "_host", "_opened", "_scheduler", "_task", "url")

    def __init__(
        self, fetcher: Fetcher, scheduler: Scheduler, host: str, url: str, *, max_bytes: int
    ) -> None:
        """Ask for ``url`` now under ``host``'s slot (a ``host_key``; held until ``close``)."""
        self.url = url
        self._scheduler = scheduler
        self._host = host
        self._closed = self._opened = False
        slot = scheduler.acquire(host)
        self._head: asyncio.Future[Body] = asyncio.get_running_loop().create_future()
        self._chunks: asyncio.Queue[_Item] = asyncio.Queue(BUFFER)
        stream = fetcher.stream(url, slot, max_bytes=max_bytes, ahead=True)
        self._task = asyncio.ensure_future(self._fill(stream))

    async def _fill(self, stream: contextlib.AbstractAsyncContextManager[Body]) -> None:
        """The request: its head to ``_head``, its chunks (then None, or its error) queued."""
        end: _Item = None
        try:
            async with stream as body:
                if self._head.done():  # (the reader was cancelled while it waited)
                    return
                self._head.set_result(body)
                async for chunk in body.chunks():
                    await self._chunks.put(chunk)
        except Exception as exc:  # a classified FetchError, as the reader would have had it
            if not self._head.done():
                self._head.set_exception(exc)
                return
            end = exc
        await self._chunks.put(end)

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[Body]:
        """The response as ``Fetcher.stream`` yields it (raises what it raises); once."""
        if self._opened or self._closed:
            raise RuntimeError(f"prefetch of {self.url} opened twice or after close")
        self._opened = True
        try:
            head = await self._head
            yield dataclasses.replace(head, _stream=self._replay())
        finally:
            self.close()

    async def _replay(self) -> AsyncIterator[bytes]:
        while (item := await self._chunks.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        """End the request (its connection and concurrency slot go back); idempotent."""
        if self._closed:
            return
        self._closed = True
        self._task.cancel()
        if self._head.done() and not self._head.cancelled():
            self._head.exception()  # (retrieved: not logged as never retrieved)
        self._scheduler.release(self._host)


class ReadAhead:
    """A host worker's read ahead: which sitemap is asked early, and when it is put back.

    In: the host's frontier, its state (``HostIncremental`` or None) and URL batch (the
    cap), the shard's fetcher and scheduler, ``fetch`` (``prefetch``, the body cap).
    The worker calls ``next()`` for the sitemap to read now, ``start(current)`` once it
    is about to ask for ``current`` (its file's counts reset), ``take()`` for that
    request if asked ahead, ``sniffed`` as each body's kind is known, ``close()`` at
    its end.
    """

    __slots__ = (
        "_ahead",
        "_batch",
        "_fetch",
        "_fetcher",
        "_following",
        "_frontier",
        "_host",
        "_incremental",
        "_leaves",
        "_scheduler",
        "_taken",
    )

    def __init__(
        self,
        host: str,
        frontier: Frontier,
        incremental: HostIncremental | None,
        batch: UrlBatch,
        fetcher: Fetcher,
        scheduler: Scheduler,
        fetch: FetchConfig,
    ) -> None:
        self._host, self._frontier, self._incremental = host, frontier, incremental
        self._batch = batch
        self._fetcher, self._scheduler, self._fetch = fetcher, scheduler, fetch
        self._ahead: Prefetch | None = None  # the request of ``_following``, under way
        self._taken: Prefetch | None = None  # the one ``take`` handed over last
        self._following: SitemapRef | None = None
        self._leaves: set[str] = set()  # lists (``siblings``) with a urlset read

    def next(self) -> SitemapRef | None:
        """The sitemap to read now (the one asked ahead first, unless the URL cap was
        hit), or None: the host's sitemaps are done. ``take`` has its request."""
        if self._taken is not None:
            self._taken.close()
            self._taken = None
        following, self._following = self._following, None
        if following is not None and not self._batch.cap_hit:
            return following
        self.close()
        frontier, incremental = self._frontier, self._incremental
        nxt = frontier.pop()
        if nxt is None and incremental is not None and not self._batch.cap_hit:
            # Issue 53: those adaptive revisit held back, asked after all (a read lost URLs).
            nxt = incremental.revisits.held_back(incremental.memory, self._batch.seen)
        return None if self._batch.cap_hit else nxt

    def take(self) -> Prefetch | None:
        """The request of the sitemap ``next`` gave, if it was asked ahead (the caller
        uses it at most once; it is closed by the next ``next`` or ``close`` at the
        latest, whatever became of the caller)."""
        self._taken, self._ahead = self._ahead, None
        return self._taken

    def start(self, current: SitemapRef) -> None:
        """``current`` is about to be asked for: ask for the one after it too, when
        ``fetch.prefetch``, the host's slot has a second place, and a sibling of
        ``current`` was a urlset (so it likely is one: ``sniffed`` puts back what an
        index's children must come before)."""
        host, listed = self._host, siblings(current)
        if not self._fetch.prefetch or listed is None or listed not in self._leaves:
            return
        if self._ahead is not None or self._following is not None:
            return
        if self._scheduler.acquire(host).policy.concurrency > 1:
            nxt = upcoming(current, self._frontier, self._incremental, host)
            if nxt is not None:
                args = (self._fetcher, self._scheduler, host, nxt.url)
                self._ahead = Prefetch(*args, max_bytes=self._fetch.max_body_bytes)
                self._following = nxt
        self._scheduler.release(host)

    def sniffed(self, ref: SitemapRef, kind: Kind) -> None:
        """``ref``'s body is ``kind``: an index puts back the sitemap asked ahead (the
        frontier puts the index's children first); a urlset vouches for its siblings."""
        if kind is not Kind.SITEMAPINDEX:
            if (listed := siblings(ref)) is not None:
                self._leaves.add(listed)
        elif (following := self._following) is not None:
            if self._ahead is not None:  # (not the one being read: ``_taken``)
                self._ahead.close()
            self._ahead = self._following = None
            self._frontier.unpop(following)

    def close(self) -> None:
        """End the requests asked ahead, if any (the host ended, or one was put back)."""
        for prefetch in (self._ahead, self._taken):
            if prefetch is not None:
                prefetch.close()
        self._ahead = self._taken = None


def siblings(ref: SitemapRef) -> str | None:
    """What ``ref`` was listed by: its index's URL, or "robots" (robots.txt); None for
    the others (a seed's sitemap, a guessed location: never asked ahead)."""
    if ref.source == "index":
        return ref.parent
    return "robots" if ref.source == "robots" else None


def upcoming(
    current: SitemapRef, frontier: Frontier, incremental: HostIncremental | None, host: str
) -> SitemapRef | None:
    """The sitemap to ask for while ``current`` is read, popped from ``frontier``, or
    None (module docstring: both listed by an index or robots.txt, the next on
    ``host``'s slot, unknown to the state); the caller checks the rest."""
    if siblings(current) is None:
        return None
    nxt = frontier.peek()
    if nxt is None or siblings(nxt) is None or host_key(nxt.url) != host:
        return None
    if incremental is not None and incremental.knows(nxt.url):
        return None
    return frontier.pop()
