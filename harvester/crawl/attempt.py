"""One request for a sitemap, and what it came to (an ``Outcome``).

In: the sitemap (``SitemapRef``), where to ask for it and with which headers,
the host's slot; once per host, the fetcher, its section and the reader's caps,
and the host worker's ``Hooks``: ``head`` (the response's status and final URL:
stop here, or read on), ``chunk`` (each chunk of the body, before it is parsed)
and ``entries`` (what the body parsed into). Out: one ``Outcome`` value.
``Attempts.attempt`` never retries and never raises a ``FetchError``: the host
worker's ``_sitemap`` matches on the outcome, and its loop is the whole retry policy.

Usage::

    attempts = Attempts(fetcher, cfg.fetch, cfg.reader, hooks)
    outcome = await attempts.attempt(ref, target, slot, headers)
    match outcome:
        case Read(result, ...): ...
        case BodyBroken() if refetches < retries: ...
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from harvester.crawl.fetch import not_before
from harvester.crawl.scheduler import host_key
from harvester.crawl.wall import CHALLENGE_MAX, challenge_vendor
from harvester.errors import (
    BadContentEncoding,
    Blocked,
    ConnectError,
    FetchError,
    FetchTimeout,
    HTTPStatusError,
)
from harvester.reader.sitemap import SitemapReader
from harvester.state.codec import iso

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    import xxhash

    from harvester.config import FetchConfig, ReaderConfig
    from harvester.crawl.body import Body
    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.frontier import SitemapRef
    from harvester.crawl.incremental import HostIncremental
    from harvester.crawl.prefetch import Prefetch
    from harvester.crawl.report import HostReport
    from harvester.crawl.scheduler import HostSlot
    from harvester.models import Entry, Kind, ReadResult

__all__ = [
    "Attempts",
    "BodyBroken",
    "Failed",
    "Hooks",
    "Missed",
    "NotModified",
    "Outcome",
    "Read",
    "Refused",
    "RetryListed",
    "Undecodable",
    "defer_if_not_today",
    "http_date",
]

# Client errors that say "busy" (the fetcher retried them), not "not there".
_BUSY = frozenset({408, 429})


@dataclass(frozen=True, slots=True)
class Read:
    """The body was read to its end (or the reader gave up on it: ``result.error``)."""

    result: ReadResult
    status: int | None
    validators: tuple[str | None, str | None]  # ETag, Last-Modified


@dataclass(frozen=True, slots=True)
class NotModified:
    """A 304 for a sitemap an earlier run read: its URLs are carried over."""

    status: int


@dataclass(frozen=True, slots=True)
class Refused:
    """It redirected where the cross-host policy does not follow (already reported)."""


@dataclass(frozen=True, slots=True)
class RetryListed:
    """The remembered redirect target answered 4xx: the listed URL is asked instead."""


@dataclass(frozen=True, slots=True)
class Missed:
    """A fallback probe answered 4xx (not a challenge, 408 or 429), or a challenge page
    with 200 (``challenge``): the next location, if any, is probed; no failure. ``status``
    tells a bot wall (401/403/451) from a missing file (``harvester.crawl.wall``)."""

    status: int | None = None
    challenge: bool = False


@dataclass(frozen=True, slots=True)
class BodyBroken:
    """The connection broke or stalled while the body streamed (entries so far kept)."""

    error: FetchError
    status: int | None
    requests: int
    bytes_read: int
    deadline_passed: bool  # it used up the file's whole deadline: a re-fetch would too


@dataclass(frozen=True, slots=True)
class Undecodable:
    """The body did not decode as its Content-Encoding says (entries so far kept).

    The same bytes would come again: asked once more, not decoded (``raw``).
    """

    error: BadContentEncoding
    status: int | None
    requests: int
    bytes_read: int


@dataclass(frozen=True, slots=True)
class Failed:
    """Any other fetch error: the sitemap failed."""

    error: FetchError
    status: int | None
    requests: int
    bytes_read: int | None


Outcome = Read | NotModified | Refused | RetryListed | Missed | BodyBroken | Undecodable | Failed


class Hooks(Protocol):
    """What an attempt tells the host worker as the response comes in."""

    def head(
        self, ref: SitemapRef, url: str, status: int, validators: tuple[str | None, str | None]
    ) -> Refused | NotModified | None:
        """The response's final URL and status: an outcome to stop at, or None: read on."""

    async def chunk(self, chunk: bytes) -> None:
        """A chunk of the body, before it is parsed (the output may be behind: wait)."""

    async def entries(self, entries: list[Entry], ref: SitemapRef) -> None:
        """Entries the body completed so far."""

    def kind(self, ref: SitemapRef, kind: Kind) -> None:
        """What the body is, once sniffed (before the entries of its first chunks)."""


@dataclass(slots=True)
class _Progress:
    """How far an attempt got: what its outcome, whichever it is, reports."""

    status: int | None = None
    validators: tuple[str | None, str | None] = (None, None)  # ETag, Last-Modified
    requests: int = 0  # the fetcher's requests for it (retries before the body included)
    received: int = 0  # bytes of its body
    streaming: bool = False  # set once the body is handed over
    started: float = field(default_factory=time.monotonic)


class Attempts:
    """One host's requests for its sitemaps: ``await attempts.attempt(...)`` asks once.

    ``fetch`` is the fetcher's section (the body's cap, the file's deadline, how long a
    Retry-After a run waits); ``reader`` the reader's caps; ``hooks`` the host worker.
    """

    def __init__(
        self, fetcher: Fetcher, fetch: FetchConfig, reader: ReaderConfig, hooks: Hooks
    ) -> None:
        self._fetcher = fetcher
        self._fetch = fetch
        self._reader = reader
        self._hooks = hooks

    async def attempt(
        self,
        ref: SitemapRef,
        target: str,
        slot: HostSlot,
        headers: dict[str, str],
        digest: xxhash.xxh3_128 | None = None,
        *,
        raw: bool = False,
        ahead: Prefetch | None = None,
    ) -> Outcome:
        """One request for ``ref`` (at ``target``), its body streamed through a fresh reader.

        ``digest`` (with a state file) is fed the body's bytes. ``raw``: the body as
        sent, its Content-Encoding not undone (the reader sniffs gzip by magic bytes).
        ``ahead``: that request, already made (``crawl.prefetch``: plain, at ``target``).
        """
        got = _Progress()
        response: AbstractAsyncContextManager[Body]
        if ahead is not None:
            response = ahead.open()
        else:
            cap = self._fetch.max_body_bytes
            response = self._fetcher.stream(
                target, slot, max_bytes=cap, headers=headers, decompress=not raw
            )
        try:
            return await self._read(ref, response, digest, got)
        except HTTPStatusError as exc:
            # A 429 that says "not today" is about the host, not about where the file is.
            client_error = 400 <= exc.status < 500 and not_before(exc, self._fetch) is None
            if target != ref.url and client_error:
                return RetryListed()
            # A guessed location that is not there (404, 410, a plain 403) is a miss, the
            # last one too: a site without a sitemap is discovery "none", not a failed
            # host, as when its guesses find HTML pages. A challenge (Blocked) is no
            # answer about the file, and a 408/429 the fetcher gave up on says the host
            # is busy, not empty: failures.
            if (
                ref.source == "fallback"
                and client_error
                and exc.status not in _BUSY
                and not isinstance(exc, Blocked)
            ):
                return Missed(exc.status)
            return Failed(exc, exc.status, got.requests + (exc.attempts or 1), None)
        except (ConnectError, FetchTimeout) as exc:
            if got.streaming:
                passed = time.monotonic() - got.started >= self._fetch.total_timeout
                return BodyBroken(exc, got.status, got.requests, got.received, passed)
            return Failed(exc, got.status, exc.attempts or 1, got.received)
        except BadContentEncoding as exc:
            requests = got.requests if got.streaming else exc.attempts or 1
            return Undecodable(exc, got.status, requests, got.received)
        except FetchError as exc:
            requests = got.requests if got.streaming else exc.attempts or 1
            return Failed(exc, got.status, requests, got.received)

    async def _read(
        self,
        ref: SitemapRef,
        response: AbstractAsyncContextManager[Body],
        digest: xxhash.xxh3_128 | None,
        got: _Progress,
    ) -> Outcome:
        """The request and its body to the end: ``Read``, or what ``hooks.head`` stopped at."""
        # The host dedupes by canonical URL; a second per-document set would be waste.
        reader = SitemapReader(ref.url, self._reader, dedupe=False)
        hooks = self._hooks
        async with response as body:
            got.status, got.requests, got.streaming = body.status, body.attempts, True
            got.validators = (body.headers.get("ETag"), body.headers.get("Last-Modified"))
            stop = hooks.head(ref, body.url, got.status, got.validators)
            if stop is not None:
                return stop
            guess = ref.source == "fallback" and got.status == 200
            async for chunk in body.chunks():
                if guess and not got.received and challenge_vendor(chunk[:CHALLENGE_MAX]):
                    return Missed(got.status, challenge=True)  # a bot wall's page, no file
                got.received += len(chunk)
                if digest is not None:
                    digest.update(chunk)
                await hooks.chunk(chunk)
                # No local name for the entries: once turned into records they die,
                # instead of waiting with this frame while the output is behind.
                await hooks.entries(_fed(reader, chunk, ref, hooks), ref)
                if reader.failed:
                    break
        await hooks.entries(reader.finish(), ref)
        return Read(reader.result(), got.status, got.validators)


def _fed(reader: SitemapReader, chunk: bytes, ref: SitemapRef, hooks: Hooks) -> list[Entry]:
    """``reader.feed(chunk)``, and ``hooks.kind`` told when this chunk sniffed the kind."""
    known = reader.kind is not None
    entries = reader.feed(chunk)
    if not known and (kind := reader.kind) is not None:
        hooks.kind(ref, kind)
    return entries


def http_date(value: str | None) -> datetime | None:
    """An HTTP date header as aware UTC, or None when absent or unparseable."""
    if not value:
        return None
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return when.astimezone(UTC) if when.tzinfo is not None else when.replace(tzinfo=UTC)


def defer_if_not_today(
    error: FetchError,
    homes: frozenset[str],
    origin: str,
    fetch: FetchConfig,
    report: HostReport,
    incremental: HostIncremental | None,
) -> bool:
    """Whether ``error`` is the host's own 429/503 asking for more than a run waits
    (``fetch.retry_after_max``); if so, say until when in the report and the state.

    Its other sitemaps are not asked this run either (the host asked to be left
    alone, not one file); with a state file, runs before that time skip it.
    ``homes``: the hosts that are the host's own (itself, and where its robots.txt
    was served from: an apex that sends everything to ``www.``).
    """
    if host_key(error.url or origin) not in homes:
        return False  # another host's answer (a child on a CDN): that file failed, no more
    seconds = not_before(error, fetch)
    if seconds is None:
        return False
    until = time.time() + seconds
    report.deferred = iso(int(until))
    if incremental is not None:
        incremental.defer(until)
    return True
