"""Fetch stage: the HTTP client. Owns the one aiohttp ``ClientSession`` of this process.

In: a URL, the host's ``HostSlot`` (politeness) and optional request headers
(conditional GETs). Out: a ``Body`` (final URL, status, headers, redirects,
attempts) whose ``chunks()`` stream the payload with the size cap, the
read-stall timeout, the per-file deadline and the speed floor enforced while
streaming (``harvester.crawl.body``).

Content-Encoding (gzip, deflate) is undone by aiohttp; a ``.xml.gz`` *file*
arrives as the gzip bytes it is (the reader sniffs magic bytes). A body that
does not decode as its Content-Encoding says is a ``BadContentEncoding``, not
retried; ``stream(..., decompress=False)`` asks for the bytes as sent. Every failure
leaves as a ``FetchError`` subclass carrying the URL, translated once
(``body.map_error``).

Example::

    async with Fetcher(cfg.fetch) as fetcher:
        async with fetcher.stream(url, slot) as body:
            async for chunk in body.chunks():
                reader.feed(chunk)

Retries (``cfg.retries`` after the first attempt) happen before the body is
handed over: on connection errors, timeouts, 408, 429 and 5xx, with
exponential backoff and full jitter, or the server's Retry-After on 429/503.
A Retry-After longer than ``cfg.retry_after_max`` is not waited for at all:
the error is final at once (``not_before`` says how long the host asked for).
Once ``stream`` has yielded, errors are final. First contact is the
exception (``HostSlot.answered`` is False until the host sent any response):
the response is awaited for ``first_byte_timeout``, and a connect or
first-byte timeout is final at once, so a dead or hanging host costs one
timeout (``FetchTimeout.first_contact`` says which; the run tries such a host once
more, late and patiently: ``harvester.run.late``). A failed TLS handshake is never
retried, nor a 403/503 that is a bot vendor's challenge page (``Blocked``, its first
bytes read: ``harvester.crawl.wall``).

DNS (``harvester.crawl.resolver``) and TLS (one ``ssl.SSLContext``) are set up in
``harvester.crawl.connector``.

The SSRF guard (``harvester.crawl.guard``) is enforced by the session's resolver and
middleware (``harvester.crawl.connector``) on every address about to be dialed,
redirect hops included; a refusal is a ``ForbiddenAddress``, never retried. Only http
and https URLs are requested.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import TYPE_CHECKING

import aiohttp

from harvester.crawl.body import Body, BodyStream
from harvester.crawl.challenge import challenged
from harvester.crawl.connector import close_idle, is_socks, make_session_parts
from harvester.crawl.headers import HostHeaders
from harvester.crawl.resolver import make_resolver
from harvester.crawl.response import body_of, body_read_timeout, check_status
from harvester.crawl.retry import attempt_error, next_delay, not_before, retry_after_seconds
from harvester.crawl.targets import check_target, valid_hop
from harvester.crawl.tdmheaders import HeaderSignals
from harvester.errors import FetchError, ForbiddenAddress, HTTPStatusError, InvalidURL

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
    from contextlib import AbstractAsyncContextManager
    from types import TracebackType

    from harvester.config import FetchConfig, PolitenessConfig
    from harvester.crawl.connector import ConnectionQueue
    from harvester.crawl.resolver import CachingResolver
    from harvester.crawl.scheduler import HostSlot

__all__ = ["Body", "Fetcher", "not_before", "retry_after_seconds"]


class Fetcher:
    """The HTTP client stage: one aiohttp session, streaming bodies with retries.

    Create it with ``async with`` inside the running loop (the session and its
    connector are loop-bound). ``resolver`` replaces aiohttp's threaded
    resolver (tests map names to loopback); the caller owns and closes it. Whatever
    the resolver answers, only addresses ``cfg.allow_private``/``cfg.allow`` permit
    are dialed (``connector.make_session_parts``).
    ``sleep`` and ``rng`` drive the retry backoff, so tests can record delays.
    ``hosts`` (the run's ``PolitenessConfig``) gives the per-host headers and cookies
    (``headers.HostHeaders``, per redirect hop); ``fetch.headers`` go to every host,
    and a slot's ``verify_tls = false`` turns certificate checks off for its requests.

    Example::

        async with Fetcher(cfg.fetch) as fetcher:
            async with fetcher.stream(url, slot, max_bytes=cfg.fetch.max_robots_bytes) as body:
                data = b"".join([chunk async for chunk in body.chunks()])
    """

    def __init__(
        self,
        cfg: FetchConfig,
        *,
        resolver: aiohttp.abc.AbstractResolver | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        hosts: PolitenessConfig | None = None,
    ) -> None:
        self._cfg = cfg
        # Per-host headers and cookies (politeness.hosts; None: none are sent).
        self._hosts = hosts
        # aiohttp's proxy= takes HTTP proxies only; a SOCKS one is the connector's.
        self._http_proxy = None if is_socks(cfg.proxy) else cfg.proxy
        self._resolver = resolver  # None: per cfg.resolver; given: the caller owns and closes it
        self._sleep = sleep  # waits between attempts; injected so tests need not wait
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._session: aiohttp.ClientSession | None = None  # set by __aenter__ only
        # Bodies being read at once (fetch.max_bodies); a stream waits for one before its
        # body is handed over. Never held across another stream: no deadlock.
        self._bodies = asyncio.Semaphore(cfg.max_bodies)
        # As many read ahead of their readers (crawl.prefetch): a reader never waits on one.
        self._ahead_bodies = asyncio.Semaphore(cfg.max_bodies)
        # The tdm-* and X-Robots-Tag headers of each host's responses (issue 48): kept
        # per slot until the host worker takes them for its report.
        self.signals = HeaderSignals()
        self._dns: CachingResolver | None = None  # the caching resolver, set by __aenter__
        self._queue: ConnectionQueue | None = None  # the open session's; set by __aenter__
        # Timeouts of a request to a host that has answered before, and of one that has
        # not (first contact: the wait for the first response byte is first_byte_timeout).
        # No total: the per-file deadline spans retries and body, see stream().
        self._timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=cfg.connect_timeout, sock_read=cfg.read_timeout
        )
        self._first_timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=cfg.connect_timeout, sock_read=cfg.first_byte_timeout
        )

    @property
    def queued(self) -> int:
        """Requests waiting for a free connection (``fetch.max_connections`` binding)."""
        return self._queue.waiting if self._queue is not None else 0

    @property
    def resolver(self) -> CachingResolver | None:
        """The caching resolver of the open fetcher (its counters tell lookups from hits)."""
        return self._dns

    def end_host(self, *hosts: str) -> None:
        """The hosts (``host_key``s) are done: close their idle pooled connections now.

        A host's worker calls this when every request of the host is over, so the
        keep-alive (``fetch.keepalive_timeout``) keeps connections only for hosts at work
        (``connector.close_idle``). Nothing happens on a closed fetcher.
        """
        connector = self._session.connector if self._session is not None else None
        if connector is not None:
            for host in hosts:
                close_idle(connector, host)

    async def __aenter__(self) -> Fetcher:
        if self._session is not None:
            raise RuntimeError("Fetcher is already open")
        cfg = self._cfg
        dns = make_resolver(cfg, self._resolver)
        try:
            parts = make_session_parts(cfg, dns)
        except BaseException:
            await dns.close()
            raise
        self._dns = dns
        self._queue = parts.queue
        host_headers = HostHeaders(self._hosts) if self._hosts is not None else None
        extra = (host_headers,) if host_headers else ()  # (none: no middleware per hop)
        self._session = aiohttp.ClientSession(
            connector=parts.connector,
            # fetch.headers go to every host; a host's own (politeness.hosts) per hop.
            headers={**cfg.headers, "User-Agent": cfg.user_agent},
            # Per hop, in this order: a host no client can name is refused before anything
            # else sees it; the guard's last, so it judges the request as it is sent.
            middlewares=(valid_hop, *extra, *parts.middlewares),
            trace_configs=list(parts.trace_configs),  # the queue count (Fetcher.queued)
            timeout=self._timeout,
            auto_decompress=True,
            trust_env=False,  # proxies come from config only, never from the environment
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        session, self._session = self._session, None
        dns, self._dns = self._dns, None
        self._queue = None  # closed: nothing queued
        if session is not None:
            await session.close()
        if dns is not None:
            await dns.close()  # after the session: the connector does not close it

    def stream(
        self,
        url: str,
        slot: HostSlot,
        *,
        max_bytes: int | None = None,
        headers: Mapping[str, str] | None = None,
        decompress: bool = True,
        retries: int | None = None,
        ahead: bool = False,
    ) -> AbstractAsyncContextManager[Body]:
        """Request ``url`` under ``slot``; yield the ``Body`` once a usable response arrived.

        ``max_bytes`` caps the payload (default ``cfg.max_body_bytes``); a
        larger declared Content-Length fails before any byte is read.
        ``headers`` are added to the request (e.g. If-None-Match). The slot
        and the connection stay held until the context exits. ``decompress``
        False: the body comes as sent, Content-Encoding not undone (after a
        ``BadContentEncoding``: the reader sniffs what the bytes are). ``retries``: the
        attempts after the first (default ``cfg.retries``; 0 for a file worth one try).
        ``ahead``: a body read ahead of its reader (``crawl.prefetch``), under its own gate.

        The total deadline (``cfg.total_timeout``) starts when the slot first
        admits the request and covers retries, their waits and the body.
        Raises a ``FetchError`` subclass; ``HTTPStatusError`` for statuses
        other than 2xx/304 (4xx except 408/429 at once, without retry).
        """
        if self._session is None:
            raise RuntimeError("use 'async with Fetcher(...)' before stream()")
        cap = self._cfg.max_body_bytes if max_bytes is None else max_bytes
        tries = self._cfg.retries if retries is None else retries
        gate = self._ahead_bodies if ahead else self._bodies
        return self._stream(self._session, url, slot, cap, headers, decompress, tries, gate)

    @contextlib.asynccontextmanager
    async def _stream(
        self,
        session: aiohttp.ClientSession,
        url: str,
        slot: HostSlot,
        cap: int,
        headers: Mapping[str, str] | None,
        decompress: bool,
        retries: int,
        gate: asyncio.Semaphore,
    ) -> AsyncIterator[Body]:
        cfg = self._cfg
        check_target(url)  # before the slot: a refused URL costs the host no politeness time
        loop = asyncio.get_running_loop()
        deadline: float | None = None  # loop time; fixed when the slot first admits us
        attempt = 0
        while True:
            attempt += 1
            # The stack holds the slot and the response: backoff sleeps hold neither.
            async with contextlib.AsyncExitStack() as stack:
                budget = asyncio.timeout_at(deadline)
                cause: BaseException | None = None
                error: FetchError
                first = not slot.answered  # re-read after admission, below
                try:
                    async with budget:
                        await stack.enter_async_context(slot.request())
                        if deadline is None:
                            deadline = loop.time() + cfg.total_timeout
                            budget.reschedule(deadline)
                        first = not slot.answered  # (another request's answer may have come)
                        get = self._get(session, url, slot, headers, decompress, first=first)
                        response = await stack.enter_async_context(get)
                        self._answered(slot, response, first)
                except (TimeoutError, aiohttp.ClientError, ForbiddenAddress, InvalidURL) as exc:
                    cause = exc
                    error = attempt_error(cfg, exc, url, first=first, expired=budget.expired())
                else:
                    assert deadline is not None  # set before the request was sent
                    outcome = await challenged(response, check_status(response, url, cap))
                    if outcome is None:
                        async with gate:
                            body_stream = BodyStream(response, url, cfg, cap, deadline)
                            with contextlib.closing(body_stream):
                                yield body_of(response, attempt, body_stream)
                        return
                    error = outcome
                    _back_off(slot, outcome, cfg)
            # Slot and connection are released here; decide whether to try again.
            assert deadline is not None  # any error after admission left it set
            times = (loop.time(), deadline)
            delay = next_delay(cfg, self._rng, (error, cause), first, (attempt, retries), times)
            if delay is None:
                error.attempts = attempt  # the report's retry count
                try:
                    raise error from cause
                finally:  # (next_delay says why)
                    del error, cause
                    outcome = None
            await self._sleep(delay)

    def _answered(self, slot: HostSlot, response: aiohttp.ClientResponse, first: bool) -> None:
        """The host answered: first contact is over, and its signal headers are looked
        at (``tdmheaders``: tdm-*, X-Robots-Tag), whatever its status. A first contact's
        body gets its read timeout."""
        slot.mark_answered()
        self.signals.seen(slot, response.url, response.headers)
        if first:
            body_read_timeout(response, self._cfg.read_timeout)

    def _get(
        self,
        session: aiohttp.ClientSession,
        url: str,
        slot: HostSlot,
        headers: Mapping[str, str] | None,
        decompress: bool,
        *,
        first: bool,
    ) -> AbstractAsyncContextManager[aiohttp.ClientResponse]:
        """The GET of one attempt, with the host's TLS setting and first contact's timeout."""
        return session.get(
            url,
            headers=headers,
            proxy=self._http_proxy,
            # verify_tls = false under politeness.hosts only.
            ssl=slot.policy.verify_tls,
            # aiohttp raises on reaching its max, i.e. follows one fewer; +1 also
            # keeps 0 from meaning "unlimited".
            max_redirects=self._cfg.max_redirects + 1,
            timeout=self._first_timeout if first else self._timeout,
            auto_decompress=decompress,
        )


def _back_off(slot: HostSlot, outcome: HTTPStatusError, cfg: FetchConfig) -> None:
    """A Retry-After the run can wait out makes the whole host wait, not just this file
    (a longer one is final at once, and the host worker defers the host)."""
    if outcome.retry_after is not None and not_before(outcome, cfg) is None:
        slot.back_off(outcome.retry_after)
