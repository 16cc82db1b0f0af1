"""HostWorker's sitemap loop: each attempt's outcome and what the loop does about it.

A fake fetcher answers each request from a script (a body, a body that breaks
while it streams, or an error before any body), so the retry policy is tested
without a server: re-fetches of broken bodies, their limit and deadline, a
stale remembered redirect, fallback probes, 304s and refused redirects.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import weakref
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from harvester.config import Config
from harvester.crawl.attempt import Attempts, BodyBroken, Failed, Read, RetryListed
from harvester.crawl.batch import RecordBatch
from harvester.crawl.frontier import SitemapRef
from harvester.crawl.host import HostWorker
from harvester.crawl.seed import Seed
from harvester.crawl.settings import HostSettings
from harvester.errors import BadContentEncoding, ConnectError, FetchError, HTTPStatusError
from harvester.state.memory import HostMemory, SitemapMemory

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

HOST = "e.com"
ROOT = "https://e.com/sitemap.xml"
CDN = "https://cdn.e.com/sitemap.xml"
URLS = [f"https://e.com/{i}" for i in range(6)]
XML = (
    '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    + "".join(f"<url><loc>{u}</loc></url>" for u in URLS)
    + "</urlset>"
).encode()
HALF = XML[: XML.index(b"<url><loc>https://e.com/3")]


@dataclasses.dataclass
class Body:
    """One response: its chunks, then ``error`` raised while it streams (if any)."""

    chunks_: list[bytes] = dataclasses.field(default_factory=lambda: [XML])
    error: FetchError | None = None
    status: int = 200
    url: str = ROOT
    attempts: int = 1
    headers: dict[str, str] = dataclasses.field(default_factory=dict)

    async def chunks(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks_:
            yield chunk
        if self.error is not None:
            raise self.error


def broken(error: FetchError | None = None) -> Body:
    return Body([HALF], error or ConnectError("reset by peer"))


def fetch_error(error: FetchError, attempts: int = 1) -> FetchError:
    error.attempts = attempts
    return error


class Fetcher:
    """Answers requests from a script: a ``Body``, or an error raised before any body."""

    def __init__(self, *answers: Body | FetchError) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, dict[str, str] | None]] = []
        self.decompress: list[bool] = []  # per request

    @asynccontextmanager
    async def stream(
        self,
        url: str,
        slot: Any,
        *,
        max_bytes: int,
        headers: dict[str, str] | None = None,
        decompress: bool = True,
    ) -> AsyncIterator[Body]:
        self.requests.append((url, headers))
        self.decompress.append(decompress)
        answer = self.answers.pop(0)
        if isinstance(answer, FetchError):
            raise answer
        yield answer


class Scheduler:
    """Counts the slots held per host (each must be given back)."""

    def __init__(self) -> None:
        self.held: dict[str, int] = {}
        self.asked: list[str] = []

    def acquire(self, host: str) -> object:
        self.asked.append(host)
        self.held[host] = self.held.get(host, 0) + 1
        return object()

    def release(self, host: str) -> None:
        self.held[host] -= 1


class Ledger:
    """A state file that remembers one sitemap of the host."""

    def __init__(self, memory: SitemapMemory) -> None:
        self.memory = HostMemory(host_id=1, sitemaps={memory.url: memory})

    def host(self, name: str) -> HostMemory:
        return self.memory

    def fresh(self, memory: HostMemory) -> bool:
        return True

    def events(self, memory: Any, fps: Any, lastmods: Any) -> list[str | None]:
        return ["new"] * len(fps)

    def carry(self, memory: Any, fps: Any, lastmods: Any) -> Any:
        return lastmods


def make(
    fetcher: Fetcher,
    retries: int = 3,
    ledger: Ledger | None = None,
    emit_mode: str = "all",
    total_timeout: float = 300.0,
    batches: list[RecordBatch] | None = None,
) -> tuple[HostWorker, list[dict[str, Any]], Scheduler]:
    cfg = Config()
    fetch = dataclasses.replace(cfg.fetch, retries=retries, total_timeout=total_timeout)
    cfg = dataclasses.replace(cfg, fetch=fetch)
    out: list[dict[str, Any]] = []

    async def emit(batch: RecordBatch) -> None:
        out.extend(batch.records)
        if batches is not None:
            batches.append(batch)

    scheduler = Scheduler()
    seed = Seed(HOST, f"https://{HOST}", None, None, None, True)
    w = HostWorker(
        seed,
        HostSettings.of(cfg),
        fetcher,  # type: ignore[arg-type]
        scheduler,  # type: ignore[arg-type]
        emit,
        ledger=ledger,  # type: ignore[arg-type]
        emit_mode=emit_mode,
    )
    if w.incremental is not None:
        w.incremental.load(seed)
    return w, out, scheduler


def run(w: HostWorker, ref: SitemapRef) -> None:
    async def go() -> None:
        await w._sitemap(ref)
        await w._hooks.flush()

    asyncio.run(go())


def test_the_host_hands_up_the_record_batch_its_url_batch_flushed() -> None:
    # One record batch type from UrlBatch.flush() to the run's output (issue 46 item 2),
    # handed on as it is: not repacked into five arguments and built again.
    got: list[RecordBatch] = []
    w, _, _ = make(Fetcher(Body()), batches=got)
    run(w, SitemapRef(ROOT, source="robots"))
    (batch,) = got
    assert type(batch) is RecordBatch
    assert (batch.host, [r["url"] for r in batch.records]) == (HOST, URLS)
    assert (batch.size(), len(batch.fingerprints), batch.rows) == (6, 6, None)


def test_a_body_that_breaks_is_fetched_again_and_its_urls_come_once() -> None:
    fetcher = Fetcher(broken(), broken(), Body())
    w, out, scheduler = make(fetcher, retries=2)
    run(w, SitemapRef(ROOT, source="robots"))
    assert [r["url"] for r in out] == URLS
    assert len(fetcher.requests) == 3
    report = w.report
    assert (report.failures_total, report.duplicates, report.sitemaps_fetched) == (0, 0, 1)
    assert set(scheduler.held.values()) == {0}


def test_when_the_retries_run_out_the_sitemap_fails_with_every_request_counted() -> None:
    fetcher = Fetcher(Body([HALF], fetch_error(ConnectError("reset"), 2)), broken())
    w, out, _ = make(fetcher, retries=1)
    run(w, SitemapRef(ROOT, source="robots"))
    assert [r["url"] for r in out] == URLS[:3]  # read before the failure: kept
    assert w.report.failures_total == 1
    (failure,) = w.report.failures
    assert (failure.kind, failure.attempts, failure.bytes_read) == ("connect", 2, len(HALF))


def test_a_body_past_the_files_deadline_is_not_fetched_again() -> None:
    fetcher = Fetcher(broken(), Body())
    w, out, _ = make(fetcher, total_timeout=0)
    run(w, SitemapRef(ROOT, source="robots"))
    assert [r["url"] for r in out] == URLS[:3]
    assert len(fetcher.requests) == 1
    assert w.report.failures_total == 1


def test_a_body_that_does_not_decode_is_asked_for_once_more_as_sent() -> None:
    # Not a broken transfer: the same bytes would fail the same way fetch.retries times.
    undecodable = Body([], BadContentEncoding("Content-Encoding gzip on a plain body"))
    fetcher = Fetcher(undecodable, Body())
    w, out, scheduler = make(fetcher, retries=3)
    run(w, SitemapRef(ROOT, source="robots"))
    assert [r["url"] for r in out] == URLS
    assert fetcher.decompress == [True, False]
    report = w.report
    assert (report.failures_total, report.sitemaps_fetched) == (0, 1)
    assert len(report.warnings) == 1
    assert "Content-Encoding" in report.warnings[0]
    assert set(scheduler.held.values()) == {0}


def test_a_body_that_does_not_decode_as_sent_either_fails_after_two_requests() -> None:
    undecodable = Body([], BadContentEncoding("Content-Encoding gzip on a plain body"))
    fetcher = Fetcher(undecodable, dataclasses.replace(undecodable))
    w, out, _ = make(fetcher, retries=3)
    run(w, SitemapRef(ROOT, source="robots"))
    assert out == []
    assert fetcher.decompress == [True, False]
    (failure,) = w.report.failures
    assert (failure.kind, failure.attempts) == ("bad_encoding", 2)


def test_an_error_before_any_body_is_not_refetched_here() -> None:
    # The fetcher made its own retries (attempts=3); the body retry is for bodies only.
    fetcher = Fetcher(fetch_error(ConnectError("refused"), 3))
    w, out, _ = make(fetcher)
    run(w, SitemapRef(ROOT, source="robots"))
    assert out == []
    assert len(fetcher.requests) == 1
    (failure,) = w.report.failures
    assert (failure.attempts, failure.bytes_read) == (3, 0)


@pytest.mark.parametrize("state", [False, True], ids=["no-state", "state"])
def test_a_finished_host_is_freed_at_once_not_by_the_garbage_collector(state: bool) -> None:
    # A host's parts hold no reference back to its worker: a cycle would keep every
    # finished host (its batch, frontier, report) until the next collection, which a
    # worker process makes rare (runtime.tune_gc); issue 46's first cut had one.
    memory = SitemapMemory(ROOT, complete=True)
    w, out, _ = make(Fetcher(Body()), ledger=Ledger(memory) if state else None)
    run(w, SitemapRef(ROOT, source="robots"))
    assert len(out) == len(URLS)
    freed = weakref.ref(w)
    gc.disable()
    try:
        del w
        assert freed() is None
    finally:
        gc.enable()


def test_a_stale_remembered_redirect_sends_the_request_to_the_listed_url() -> None:
    memory = SitemapMemory(ROOT, complete=True, final_url=CDN)
    fetcher = Fetcher(HTTPStatusError("gone", status=404), Body())
    w, out, scheduler = make(fetcher, ledger=Ledger(memory))
    run(w, SitemapRef(ROOT, source="robots"))
    assert [url for url, _ in fetcher.requests] == [CDN, ROOT]
    assert scheduler.asked == ["cdn.e.com", "e.com"]  # each target's own slot
    assert set(scheduler.held.values()) == {0}
    assert [r["url"] for r in out] == URLS
    assert w.state is not None
    (state,) = w.state.sitemaps
    assert (state.status, state.complete, state.final_url) == ("ok", True, None)


def test_a_probe_that_misses_queues_the_next_location() -> None:
    fetcher = Fetcher(HTTPStatusError("not found", status=404))
    w, _, _ = make(fetcher)
    run(w, SitemapRef(ROOT, source="fallback", fallbacks=("https://e.com/sitemap_index.xml",)))
    nxt = w._frontier.pop()
    assert nxt is not None
    assert (nxt.url, nxt.source, nxt.fallbacks) == (
        "https://e.com/sitemap_index.xml",
        "fallback",
        (),
    )
    assert w.report.failures_total == 0


def test_the_last_probe_that_misses_is_no_failure_but_a_busy_one_is() -> None:
    for status, failures in ((404, 0), (410, 0), (403, 0), (429, 1), (500, 1)):
        w, _, _ = make(Fetcher(HTTPStatusError("no", status=status)))
        run(w, SitemapRef(ROOT, source="fallback"))
        assert w._frontier.pop() is None
        assert w.report.failures_total == failures, status


def test_a_304_carries_a_remembered_sitemap_over() -> None:
    memory = SitemapMemory(ROOT, complete=True, etag='"v1"')
    fetcher = Fetcher(Body([], status=304))
    w, out, _ = make(fetcher, ledger=Ledger(memory), emit_mode="delta")
    run(w, SitemapRef(ROOT, source="robots"))
    assert fetcher.requests == [(ROOT, {"If-None-Match": '"v1"'})]
    assert out == []
    assert w.report.sitemaps_unchanged == 1
    assert w.state is not None
    assert [(s.status, s.carried) for s in w.state.sitemaps] == [("not_modified", True)]


def test_a_redirect_the_cross_host_policy_refuses_is_not_read() -> None:
    fetcher = Fetcher(Body(url="https://elsewhere.org/sitemap.xml"))
    w, out, _ = make(fetcher)
    run(w, SitemapRef(ROOT, source="robots"))
    assert out == []
    assert w.report.cross_host == ["https://elsewhere.org/sitemap.xml"]
    assert (w.report.failures_total, w.report.sitemaps_fetched) == (0, 0)


class Hooks:
    """The host worker's side of an attempt, recorded."""

    def __init__(self) -> None:
        self.got: list[Any] = []

    def head(self, ref: SitemapRef, url: str, status: int, validators: Any) -> None:
        return None

    async def chunk(self, chunk: bytes) -> None:
        pass

    async def entries(self, entries: list[Any], ref: SitemapRef) -> None:
        self.got += entries

    def kind(self, ref: SitemapRef, kind: Any) -> None:
        self.got.append(("kind", kind))


def one(answer: Body | FetchError, ref: SitemapRef, target: str = ROOT) -> Any:
    hooks = Hooks()
    fetcher = Fetcher(answer)
    cfg = Config()
    attempts = Attempts(fetcher, cfg.fetch, cfg.reader, hooks)  # type: ignore[arg-type]
    return asyncio.run(attempts.attempt(ref, target, None, {}))  # type: ignore[arg-type]


def test_one_attempt_is_one_outcome_value() -> None:
    ref = SitemapRef(ROOT)
    read = one(Body(), ref)
    assert isinstance(read, Read)
    assert (read.result.status, read.status) == ("ok", 200)
    body_broken = one(broken(), ref)
    assert isinstance(body_broken, BodyBroken)
    assert (body_broken.requests, body_broken.bytes_read) == (1, len(HALF))
    assert not body_broken.deadline_passed
    assert isinstance(one(HTTPStatusError("x", status=404), ref, CDN), RetryListed)
    failed = one(HTTPStatusError("x", status=500), ref)
    assert isinstance(failed, Failed)
    assert (failed.status, failed.requests, failed.bytes_read) == (500, 1, None)


def test_dates_of_the_body_reach_the_audit() -> None:
    fetcher = Fetcher(Body(headers={"Last-Modified": "Wed, 01 May 2024 00:00:00 GMT"}))
    w, _, _ = make(fetcher)
    run(w, SitemapRef(ROOT, source="robots"))
    assert w.batch.modified == datetime(2024, 5, 1, tzinfo=UTC)
