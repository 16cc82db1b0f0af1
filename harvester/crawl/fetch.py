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
import datetime
import email.utils
import logging
import random
import re
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import aiohttp

from harvester.crawl.body import Body, BodyStream, map_error, redact
from harvester.crawl.connector import is_socks, make_session_parts
from harvester.crawl.guard import ALLOWED_SCHEMES
from harvester.crawl.headers import HostHeaders
from harvester.crawl.resolver import make_resolver
from harvester.crawl.wall import CHALLENGE_MAX, challenge_vendor
from harvester.errors import (
    Blocked,
    BodyTooLarge,
    ConnectError,
    FetchError,
    FetchTimeout,
    ForbiddenAddress,
    HTTPStatusError,
    InvalidURL,
)
from harvester.urls.validate import valid_authority

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
    from contextlib import AbstractAsyncContextManager
    from types import TracebackType

    from aiohttp.client_middlewares import ClientHandlerType

    from harvester.config import FetchConfig, PolitenessConfig
    from harvester.crawl.connector import ConnectionQueue
    from harvester.crawl.resolver import CachingResolver
    from harvester.crawl.scheduler import HostSlot

__all__ = ["Body", "Fetcher", "not_before", "retry_after_seconds"]

logger = logging.getLogger(__name__)

_DELTA_SECONDS = re.compile(r"\d+(?:\.\d+)?")
_HONOUR_RETRY_AFTER = frozenset({429, 503})
# Statuses a bot vendor's challenge page comes with (a 200 one is the reader's to see).
_CHALLENGE_STATUSES = frozenset({403, 503})


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait per a Retry-After header: delta-seconds or an HTTP-date.

    ``now`` is the wall-clock time (``time.time()`` by default) an HTTP-date is
    measured from; a date in the past means 0. Returns None when the header is
    absent or unreadable (the caller then falls back to its own backoff).

    >>> retry_after_seconds("120")
    120.0
    >>> retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0)
    10.0
    """
    if value is None:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000" or no zone: not quite HTTP-date; read it as GMT
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def not_before(error: BaseException, cfg: FetchConfig) -> float | None:
    """The seconds a 429/503 asked to be left alone, when longer than a run waits.

    None for any other error, and for a Retry-After within ``cfg.retry_after_max``
    (the fetcher waited it out and retried). Otherwise the fetcher gave up at
    once, and the host is not to be asked again before that many seconds.
    """
    if not isinstance(error, HTTPStatusError) or error.retry_after is None:
        return None
    return error.retry_after if error.retry_after > cfg.retry_after_max else None


def _body_read_timeout(response: aiohttp.ClientResponse, seconds: float) -> None:
    """Let the body of a first-contact response stall up to ``read_timeout`` again.

    The request waited for its first byte with ``first_byte_timeout`` as the
    socket read timeout; the body gets the usual one, counted from now.
    ``read_timeout`` and ``start_timeout`` are public on aiohttp's protocol
    (aiohttp itself clears the timeout that way for websockets).
    """
    connection = response.connection
    protocol = connection.protocol if connection is not None else None
    if protocol is not None:
        protocol.read_timeout = seconds
        protocol.start_timeout()  # re-arm: the running timer still has the first-byte wait


def _retryable(error: FetchError) -> bool:
    # Transient by nature: resets, stalls, overload. A missing name (DNSError),
    # a redirect loop, a bad URL or a refused address (ForbiddenAddress) will not
    # change in the next few seconds.
    if isinstance(error, Blocked):  # a challenge page: it would be met again
        return False
    if isinstance(error, HTTPStatusError):
        return error.status in (408, 429) or error.status >= 500
    return isinstance(error, ConnectError | FetchTimeout)


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
        extra = (HostHeaders(self._hosts),) if self._hosts is not None else ()
        self._session = aiohttp.ClientSession(
            connector=parts.connector,
            # fetch.headers go to every host; a host's own (politeness.hosts) per hop.
            headers={**cfg.headers, "User-Agent": cfg.user_agent},
            # Per hop, in this order: a host no client can name is refused before anything
            # else sees it; the guard's last, so it judges the request as it is sent.
            middlewares=(_valid_hop, *extra, *parts.middlewares),
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
    ) -> AbstractAsyncContextManager[Body]:
        """Request ``url`` under ``slot``; yield the ``Body`` once a usable response arrived.

        ``max_bytes`` caps the payload (default ``cfg.max_body_bytes``); a
        larger declared Content-Length fails before any byte is read.
        ``headers`` are added to the request (e.g. If-None-Match). The slot
        and the connection stay held until the context exits. ``decompress``
        False: the body comes as sent, Content-Encoding not undone (after a
        ``BadContentEncoding``: the reader sniffs what the bytes are).

        The total deadline (``cfg.total_timeout``) starts when the slot first
        admits the request and covers retries, their waits and the body.
        Raises a ``FetchError`` subclass; ``HTTPStatusError`` for statuses
        other than 2xx/304 (4xx except 408/429 at once, without retry).
        """
        if self._session is None:
            raise RuntimeError("use 'async with Fetcher(...)' before stream()")
        cap = self._cfg.max_body_bytes if max_bytes is None else max_bytes
        return self._stream(self._session, url, slot, cap, headers, decompress)

    @contextlib.asynccontextmanager
    async def _stream(
        self,
        session: aiohttp.ClientSession,
        url: str,
        slot: HostSlot,
        cap: int,
        headers: Mapping[str, str] | None,
        decompress: bool,
    ) -> AsyncIterator[Body]:
        cfg = self._cfg
        _check_target(url)  # before the slot: a refused URL costs the host no politeness time
        loop = asyncio.get_running_loop()
        deadline: float | None = None  # loop time; fixed when the slot first admits us
        attempt = 0
        while True:
            attempt += 1
            # The stack holds the slot and the response; leaving it releases
            # both, so backoff sleeps between attempts hold neither.
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
                        # Another request may have had the host's answer while we waited.
                        first = not slot.answered
                        response = await stack.enter_async_context(
                            self._get(session, url, slot, headers, decompress, first=first)
                        )
                        slot.mark_answered()
                        if first:
                            _body_read_timeout(response, cfg.read_timeout)
                except (TimeoutError, aiohttp.ClientError, ForbiddenAddress, InvalidURL) as exc:
                    cause = exc
                    error = _failed(cfg, exc, url, first=first, expired=budget.expired())
                else:
                    assert deadline is not None  # set before the request was sent
                    outcome = await _challenged(response, self._check_response(response, url, cap))
                    if outcome is None:
                        async with self._bodies:
                            body_stream = BodyStream(response, url, cfg, cap, deadline)
                            try:
                                yield _body(response, attempt, body_stream)
                            finally:
                                body_stream.close()
                        return
                    error = outcome
                    if outcome.retry_after is not None and not_before(outcome, cfg) is None:
                        # The whole host waits, not just this file. A longer wait than a
                        # run's is final at once, and the host worker defers the host.
                        slot.back_off(outcome.retry_after)
            # Slot and connection are released here; decide whether to try again.
            assert deadline is not None  # any error after admission left it set
            await self._after_failure(error, cause, first=first, attempt=attempt, deadline=deadline)

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

    async def _after_failure(
        self,
        error: FetchError,
        cause: BaseException | None,
        *,
        first: bool,
        attempt: int,
        deadline: float,
    ) -> None:
        """Raise ``error`` when it is final (the retry policy); else wait out the delay."""
        # First contact decides quickly: a host that let a connect or its first
        # response time out is dead or hanging, and each retry would cost the
        # same timeout again. A failed TLS handshake (a certificate problem, no
        # TLS on the port) will not mend in a few seconds either.
        if (first and isinstance(error, FetchTimeout)) or isinstance(cause, aiohttp.ClientSSLError):
            delay = None
        else:
            delay = self._retry_delay(error, attempt)
        # Give up now rather than sleep into a FetchTimeout: the last real
        # error (say, the 429 and its Retry-After) says more to the report.
        if delay is None or asyncio.get_running_loop().time() + delay >= deadline:
            error.attempts = attempt  # the report's retry count
            raise error from cause
        logger.debug(
            "retrying %s in %.2fs after attempt %d: %s",
            redact(error.url or ""),
            delay,
            attempt,
            error.message,
        )
        await self._sleep(delay)

    def _check_response(
        self, response: aiohttp.ClientResponse, url: str, cap: int
    ) -> HTTPStatusError | None:
        """None if the body may be handed over; the status error to retry or raise otherwise."""
        status = response.status
        if 200 <= status < 300 or status == 304:
            # Content-Length is the size on the wire; refusing here saves the
            # download. A 304 may repeat the length of the body it stands for.
            declared = response.content_length
            if declared is not None and declared > cap and status != 304:
                raise BodyTooLarge(f"Content-Length {declared} is larger than {cap} bytes", url=url)
            return None
        retry_after = None  # as the server asked (see _retry_delay and not_before)
        if status in _HONOUR_RETRY_AFTER:
            retry_after = retry_after_seconds(response.headers.get("Retry-After"))
        reason = response.reason or ""
        message = f"HTTP {status} {reason}".rstrip()
        if status == 403 and response.headers.get("cf-mitigated", "").lower() == "challenge":
            # A bot challenge page, not the file: say so, a retry would meet it again.
            return Blocked(f"{message} (bot challenge)", url=url, status=status)
        return HTTPStatusError(message, url=url, status=status, retry_after=retry_after)

    def _retry_delay(self, error: FetchError, attempt: int) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or None to give up."""
        if attempt > self._cfg.retries or not _retryable(error):
            return None
        if isinstance(error, HTTPStatusError) and error.retry_after is not None:
            # The server said when. Longer than a run waits ("come back tomorrow"):
            # give up now, rather than ask again after retry_after_max.
            return None if not_before(error, self._cfg) is not None else error.retry_after
        # Full jitter (AWS architecture blog): uniform over [0, capped exponential].
        ceiling = min(self._cfg.backoff_max, self._cfg.backoff_base * 2 ** min(attempt - 1, 62))
        return self._rng.uniform(0.0, ceiling)


async def _challenged(
    response: aiohttp.ClientResponse, error: HTTPStatusError | None
) -> HTTPStatusError | None:
    """``error``, or a ``Blocked`` when the 403/503 came with a bot vendor's challenge
    page (its first bytes read: a small page, ``harvester.crawl.wall``)."""
    if error is None or isinstance(error, Blocked) or error.status not in _CHALLENGE_STATUSES:
        return error
    declared = response.content_length
    if declared is not None and declared > CHALLENGE_MAX:
        return error
    try:
        head = await response.content.read(CHALLENGE_MAX)
    except (aiohttp.ClientError, TimeoutError):
        return error  # the status is the answer; its page could not be read
    if (vendor := challenge_vendor(head)) is None:
        return error
    message = f"{error.message} (challenge page: {vendor})"
    return Blocked(message, url=error.url, status=error.status, retry_after=error.retry_after)


def _check_target(url: str) -> None:
    """Raise ``ForbiddenAddress`` for a scheme other than http(s), ``InvalidURL`` for a host
    no client can name (aiohttp would raise a bare ``UnicodeError`` on ``xn--zz``)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise ForbiddenAddress(f"scheme {scheme or '(none)'!r} is not http or https", url=url)
    if not valid_authority(url):
        raise InvalidURL("the URL's host can be no DNS name or IP address", url=url)


async def _valid_hop(
    req: aiohttp.ClientRequest, handler: ClientHandlerType
) -> aiohttp.ClientResponse:
    """aiohttp client middleware: no request, redirect hops included, to a host no client
    can name (``stream`` checks the first URL itself; aiohttp follows redirects).

    Before the connection, so such a name is never looked up; and yarl would raise a bare
    ``UnicodeError`` on an A-label that does not decode (``xn--zz``), which no caller
    expects.
    """
    if not valid_authority(target := str(req.url)):
        raise InvalidURL(f"redirect to a host that can be no DNS name or IP address: {target}")
    return await handler(req)


def _body(response: aiohttp.ClientResponse, attempts: int, stream: BodyStream) -> Body:
    """The ``Body`` handed to the caller: the final URL and status, then the stream."""
    return Body(
        url=str(response.url),
        status=response.status,
        headers=response.headers,
        redirects=tuple(str(r.url) for r in response.history),
        attempts=attempts,
        _stream=stream,
    )


def _failed(
    cfg: FetchConfig, exc: BaseException, url: str, *, first: bool, expired: bool
) -> FetchError:
    """The ``FetchError`` of an attempt that got no response; raised when it is final.

    In: what the attempt raised, whether it was first contact and whether the file's
    total deadline had passed. A refused address or redirect hop is never retried.
    """
    if isinstance(exc, TimeoutError):
        if expired:
            msg = f"total deadline of {cfg.total_timeout:g}s passed"
            raise FetchTimeout(msg, url=url) from exc
        return _timeout_error(cfg, exc, url, first)
    if isinstance(exc, aiohttp.ClientError):
        return map_error(exc, url, cfg)
    if isinstance(exc, ForbiddenAddress):
        # Raised by the guard (connector, socks): it knows the peer, not the URL.
        raise ForbiddenAddress(exc.message, url=url) from exc
    if isinstance(exc, InvalidURL):  # a redirect hop (_valid_hop)
        raise InvalidURL(exc.message, url=url) from exc
    raise exc


def _timeout_error(cfg: FetchConfig, exc: TimeoutError, url: str, first: bool) -> FetchTimeout:
    """The ``FetchTimeout`` of a connect or response-wait timeout, saying which it was."""
    connect = isinstance(exc, aiohttp.ConnectionTimeoutError)
    if connect:
        what = f"connect timeout ({cfg.connect_timeout:g}s)"
    else:
        waited = cfg.first_byte_timeout if first else cfg.read_timeout
        what = f"no response within {waited:g}s"
    if first:
        what += " on first contact, not retried"
    error = FetchTimeout(what, url=url)
    if first:
        error.first_contact = "connect" if connect else "first_byte"
    return error
