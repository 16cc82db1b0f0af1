"""``crawl.prefetch``: a request made ahead, handed over as ``Fetcher.stream`` would; and
``Frontier.unpop``, which puts back what was asked ahead of its turn.

The fetcher here is a stand-in with ``stream``'s contract (a context yielding a ``Body``,
raising a ``FetchError``); real sockets are in tests/integration/test_prefetch.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from harvester.config import FetchConfig, LimitsConfig, PolitenessConfig
from harvester.crawl.body import Body
from harvester.crawl.frontier import Frontier, SitemapRef
from harvester.crawl.prefetch import Prefetch, ReadAhead
from harvester.crawl.scheduler import Scheduler
from harvester.errors import FetchTimeout
from harvester.models import Kind

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

URL = "https://e.com/s1.xml"


class Stub:
    """``Fetcher.stream`` as the prefetch uses it: a head (or ``head_error``), then
    ``chunks``, then ``body_error`` if any. ``open`` counts contexts not exited yet."""

    def __init__(
        self,
        chunks: tuple[bytes, ...] = (),
        *,
        head_error: Exception | None = None,
        body_error: Exception | None = None,
    ) -> None:
        self.chunks, self.head_error, self.body_error = chunks, head_error, body_error
        self.open = 0
        self.asked: list[tuple[str, bool]] = []

    def stream(self, url: str, slot: object, *, max_bytes: int, ahead: bool) -> Any:
        self.asked.append((url, ahead))
        return self._context(url)

    @contextlib.asynccontextmanager
    async def _context(self, url: str) -> AsyncIterator[Body]:
        self.open += 1
        try:
            if self.head_error is not None:
                raise self.head_error
            yield Body(url, 200, {}, (), 1, _stream=self._chunks())
        finally:
            self.open -= 1

    async def _chunks(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        if self.body_error is not None:
            raise self.body_error


def _prefetch(stub: Stub, scheduler: Scheduler) -> Prefetch:
    return Prefetch(stub, scheduler, "e.com", URL, max_bytes=1000)  # type: ignore[arg-type]


async def _read(prefetch: Prefetch) -> list[bytes]:
    async with prefetch.open() as body:
        assert (body.url, body.status) == (URL, 200)
        return [chunk async for chunk in body.chunks()]


async def test_the_body_asked_ahead_is_handed_over_whole_and_in_order() -> None:
    scheduler = Scheduler(PolitenessConfig())
    chunks = tuple(bytes([i]) * 10 for i in range(7))  # more than the buffer holds
    stub = Stub(chunks)
    prefetch = _prefetch(stub, scheduler)
    assert len(scheduler) == 1  # the host's slot is held while the request runs
    assert await _read(prefetch) == list(chunks)
    assert stub.asked == [(URL, True)]  # under the gate of bodies read ahead
    await asyncio.sleep(0)
    assert (stub.open, len(scheduler)) == (0, 0)


async def test_an_error_before_the_head_is_raised_where_the_reader_opens_it() -> None:
    scheduler = Scheduler(PolitenessConfig())
    prefetch = _prefetch(Stub(head_error=FetchTimeout("no answer", url=URL)), scheduler)
    with pytest.raises(FetchTimeout, match="no answer"):
        await _read(prefetch)
    assert len(scheduler) == 0


async def test_an_error_in_the_body_comes_after_the_chunks_before_it() -> None:
    scheduler = Scheduler(PolitenessConfig())
    stub = Stub((b"a", b"b"), body_error=FetchTimeout("stalled", url=URL))
    got: list[bytes] = []

    async def read() -> None:
        async with _prefetch(stub, scheduler).open() as body:
            async for chunk in body.chunks():
                got.append(chunk)

    with pytest.raises(FetchTimeout, match="stalled"):
        await read()
    assert got == [b"a", b"b"]


async def test_one_never_read_is_ended_and_gives_its_slot_back() -> None:
    scheduler = Scheduler(PolitenessConfig())
    stub = Stub(tuple(b"x" * 10 for _ in range(10)))  # it fills its buffer, then waits
    prefetch = _prefetch(stub, scheduler)
    for _ in range(5):
        await asyncio.sleep(0)
    assert stub.open == 1
    prefetch.close()
    prefetch.close()  # (idempotent)
    for _ in range(5):
        await asyncio.sleep(0)
    assert (stub.open, len(scheduler)) == (0, 0)
    with pytest.raises(RuntimeError):
        await _read(prefetch)


def _ref(url: str, day: int | None = None) -> SitemapRef:
    lastmod = datetime(2024, 1, day, tzinfo=UTC) if day else None
    return SitemapRef(url, depth=1, source="index", lastmod=lastmod, parent="https://e.com/i")


def test_unpop_puts_the_last_popped_back_in_its_place() -> None:
    frontier = Frontier(LimitsConfig())
    for r in (_ref("https://e.com/a", 3), _ref("https://e.com/b", 2), _ref("https://e.com/c")):
        frontier.push(r)
    first = frontier.pop()
    assert first is not None
    assert first.url == "https://e.com/a"
    assert frontier.peek() == _ref("https://e.com/b", 2)
    ahead = frontier.pop()
    assert ahead is not None
    frontier.unpop(ahead)
    frontier.push(_ref("https://e.com/new", 9))  # (an index's child, newer than all)
    order = []
    while (nxt := frontier.pop()) is not None:
        order.append(nxt.url)
    assert order == ["https://e.com/new", "https://e.com/b", "https://e.com/c"]
    assert frontier.seen("https://e.com/b")


def test_unpop_of_anything_but_the_last_popped_is_refused() -> None:
    frontier = Frontier(LimitsConfig())
    frontier.push(_ref("https://e.com/a", 3))
    frontier.push(_ref("https://e.com/b", 2))
    a, b = frontier.pop(), frontier.pop()
    assert a is not None
    assert b is not None
    with pytest.raises(ValueError, match="popped last"):
        frontier.unpop(a)


def test_an_unpopped_index_child_can_still_make_room_for_a_newer_one() -> None:
    # max_sitemaps_per_host: a queued index child gives its place to a newer child; one
    # put back is queued again, so it can give its place as before.
    limits = LimitsConfig(max_sitemaps_per_host=2)
    frontier = Frontier(limits)
    frontier.push(_ref("https://e.com/old", 1))
    frontier.push(_ref("https://e.com/older"))
    ahead = frontier.pop()
    assert ahead is not None
    assert ahead.url == "https://e.com/old"
    frontier.unpop(ahead)
    frontier.new_file()
    frontier.offer(_ref("https://e.com/new", 9))
    for child, key in frontier.children():
        frontier.push(child, key)
    order = []
    while (nxt := frontier.pop()) is not None:
        order.append(nxt.url)
    assert order[0] == "https://e.com/new"


class _Batch:
    cap_hit = False
    seen: frozenset[str] = frozenset()


def _read_ahead(stub: Stub, scheduler: Scheduler, frontier: Frontier) -> ReadAhead:
    args = ("e.com", frontier, None, _Batch(), stub, scheduler, FetchConfig())
    return ReadAhead(*args)  # type: ignore[arg-type]


def _children(frontier: Frontier, n: int) -> list[SitemapRef]:
    refs = [_ref(f"https://e.com/c{i}", 20 - i) for i in range(n)]
    for r in refs:
        frontier.push(r)
    return refs


async def test_the_next_child_is_asked_once_a_sibling_was_a_urlset() -> None:
    scheduler, frontier = Scheduler(PolitenessConfig()), Frontier(LimitsConfig())
    stub = Stub(tuple(b"x" for _ in range(10)))  # more than its buffer: it waits for a reader
    ahead = _read_ahead(stub, scheduler, frontier)
    c0, c1, c2 = _children(frontier, 3)
    assert ahead.next() is c0
    ahead.start(c0)  # no sibling read yet: nothing asked ahead
    assert (stub.asked, ahead.take()) == ([], None)
    ahead.sniffed(c0, Kind.URLSET)
    assert ahead.next() is c1
    ahead.start(c1)
    assert stub.asked == [(c2.url, True)]
    assert ahead.next() is c2  # the one asked ahead, taken out of the frontier
    taken = ahead.take()
    assert taken is not None
    assert taken.url == c2.url
    assert frontier.pop() is None
    ahead.close()  # the reader may have failed before using it: closed all the same
    for _ in range(3):
        await asyncio.sleep(0)
    assert (stub.open, len(scheduler)) == (0, 0)


async def test_an_index_read_puts_the_one_asked_ahead_back() -> None:
    scheduler, frontier, stub = Scheduler(PolitenessConfig()), Frontier(LimitsConfig()), Stub()
    ahead = _read_ahead(stub, scheduler, frontier)
    c0, c1, c2 = _children(frontier, 3)
    ahead.next()
    ahead.sniffed(c0, Kind.URLSET)
    assert ahead.next() is c1
    ahead.start(c1)
    assert stub.asked == [(c2.url, True)]
    ahead.sniffed(c1, Kind.SITEMAPINDEX)  # c1's children come before c2
    for _ in range(3):
        await asyncio.sleep(0)
    assert (stub.open, len(scheduler)) == (0, 0)  # its request ended
    assert ahead.take() is None
    assert frontier.peek() is c2
    assert ahead.next() is c2  # back in its place: asked as usual, in its turn
    assert ahead.take() is None
