"""The fetch stage's response side: the ``Body`` handed over and its payload stream.

In: an aiohttp response the fetcher accepted. Out: ``Body.chunks()``, the
payload in decoded chunks with the size cap, the read-stall timeout, the
per-file deadline and the speed floor (``fetch.min_speed``) enforced while
streaming; every failure as a ``FetchError`` subclass (``map_error`` is the
one place aiohttp's exceptions are translated, for the request side too).
"""

from __future__ import annotations

import asyncio
import re
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import aiohttp
from aiohttp.http_exceptions import (
    ContentEncodingError,
    ContentLengthError,
    HttpProcessingError,
    TransferEncodingError,
)

from harvester.errors import (
    BadContentEncoding,
    BodyTooLarge,
    ConnectError,
    DNSError,
    FetchError,
    FetchTimeout,
    ForbiddenAddress,
    HTTPStatusError,
    InvalidURL,
    MalformedResponse,
    TooManyRedirects,
    TooSlow,
    TruncatedBody,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from harvester.config import FetchConfig

__all__ = ["Body", "BodyStream", "malformed", "map_error", "redact"]

_USERINFO = re.compile(r"(?<=//)[^/@\s]*@")  # "user:pass@" right after a scheme's "//"
_DETAIL = 200  # characters of aiohttp's text kept in a MalformedResponse


def redact(text: str) -> str:
    """Drop credentials from every URL in ``text`` (proxy URLs carry them)."""
    return _USERINFO.sub("***@", text)


def map_error(
    exc: BaseException,
    url: str,
    cfg: FetchConfig,
    response: aiohttp.ClientResponse | None = None,
) -> FetchError:
    """Translate one aiohttp/asyncio exception into our tree; the only place that does.

    ``response``: the response whose body was being read, if any (its status and
    declared length go into a ``TruncatedBody``).
    """
    detail = redact(str(exc)) or type(exc).__name__
    # Order matters: several aiohttp classes subclass each other (and TimeoutError).
    if isinstance(exc, aiohttp.TooManyRedirects):
        return TooManyRedirects(f"more than {cfg.max_redirects} redirects", url=url)
    if isinstance(exc, aiohttp.NonHttpUrlRedirectClientError):
        return ForbiddenAddress(f"redirect to a URL that is not http(s): {detail}", url=url)
    if isinstance(exc, aiohttp.InvalidURL):  # a Location that is no URL ("http://[fe80::1")
        return InvalidURL(detail, url=url)
    if isinstance(exc, aiohttp.ClientResponseError):
        if isinstance(exc.__cause__, HttpProcessingError):
            # aiohttp's parser refused the response before it was handed over; the
            # status it gives (400) is the parser's, none the server sent.
            return malformed(exc.__cause__, url)
        return HTTPStatusError(f"HTTP {exc.status} {exc.message}", url=url, status=exc.status)
    if isinstance(exc, aiohttp.ClientConnectorDNSError) or (
        isinstance(exc, aiohttp.ClientConnectorError) and isinstance(exc.os_error, socket.gaierror)
    ):
        return DNSError(detail, url=url)
    if isinstance(exc, TimeoutError):  # asyncio.TimeoutError, aiohttp.ServerTimeoutError
        return FetchTimeout(detail, url=url)
    if isinstance(exc, aiohttp.ClientPayloadError) and isinstance(
        exc.__cause__, ContentEncodingError
    ):
        # aiohttp undoes Content-Encoding itself; its decoder refused the bytes (gzip on
        # a plain body, say). The next request would get the same bytes: no connect error.
        msg = f"the body does not decode as its Content-Encoding says ({exc.__cause__.message})"
        return BadContentEncoding(msg, url=url)
    if isinstance(exc, aiohttp.ClientPayloadError) and isinstance(
        exc.__cause__, ContentLengthError | TransferEncodingError
    ):
        # Raised when the connection ends (closed or reset: aiohttp's feed_eof) short of the
        # Content-Length, or before a chunked body's last chunk: a truncated transfer.
        # aiohttp's text names its parser's code 400, no status of the response: not used.
        return _truncated(exc.__cause__, url, response)
    if isinstance(exc, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError):
        return ConnectError(detail, url=url)
    return FetchError(detail, url=url)  # any other ClientError


def malformed(cause: HttpProcessingError, url: str) -> MalformedResponse:
    """The ``MalformedResponse`` of a response aiohttp's parser refused (``cause``)."""
    detail = " ".join(cause.message.split()) or type(cause).__name__  # (its text has newlines)
    if len(detail) > _DETAIL:  # it quotes the bytes it refused: a line, maybe a whole body
        detail = detail[:_DETAIL] + "..."
    return MalformedResponse(f"the response is not valid HTTP: {detail}", url=url)


def _truncated(
    cause: BaseException, url: str, response: aiohttp.ClientResponse | None
) -> TruncatedBody:
    """The ``TruncatedBody`` of a body that ended before its declared length."""
    if isinstance(cause, TransferEncodingError):
        what = "before the body's last chunk"
    elif response is not None and response.content_length is not None:
        what = f"before the {response.content_length} bytes its Content-Length declared"
    else:
        what = "before the length its Content-Length declared"
    status = response.status if response is not None else None
    msg = f"the connection ended {what}"
    return TruncatedBody(msg, url=url, status=status)


@dataclass(frozen=True, slots=True)
class Body:
    """One response, handed over while its connection and host slot are held.

    ``url`` is the final URL; ``redirects`` lists, in order, every URL that
    answered with a redirect on the way there (empty when none). ``attempts``
    counts requests made, retries included. Status 304 is a Body with an
    empty payload, not an error.
    """

    url: str
    status: int
    headers: Mapping[str, str]
    redirects: tuple[str, ...]
    attempts: int
    _stream: AsyncIterator[bytes] = field(repr=False, compare=False)

    def chunks(self) -> AsyncIterator[bytes]:
        """Stream the payload (one pass) as the decoded bytes of the response.

        Raises ``BodyTooLarge`` *before* yielding the chunk that would cross
        the cap, so everything yielded fits; ``FetchTimeout`` when the server
        stalls longer than ``read_timeout`` or the file's total deadline
        passes; ``ConnectError`` when the connection breaks mid-body (``TruncatedBody``
        when it ends before the body's declared length);
        ``BadContentEncoding`` when the body does not decode as its
        Content-Encoding says (ask again with ``decompress=False``).
        """
        return self._stream


class _DeadlinePassed(Exception):
    """Set on a response's payload stream when the file's total deadline passes."""


class _TooSlow(Exception):
    """Set on a response's payload stream when the body averages under ``min_speed``."""

    def __init__(self, rate: float) -> None:
        super().__init__(rate)
        self.rate = rate  # bytes per second measured over the window


class BodyStream:
    """Async iterator over one response's payload, with the caps applied.

    The speed floor (``min_speed`` over ``min_speed_window``, curl's
    --speed-limit/--speed-time) is measured on the time spent *waiting for the
    network* inside ``read()``, not on wall time: a consumer that pauses (the
    output is behind, the parser is busy) slows the transfer down itself, and
    that must not count against the server.
    """

    def __init__(
        self,
        response: aiohttp.ClientResponse,
        url: str,
        cfg: FetchConfig,
        cap: int,
        deadline: float,
    ) -> None:
        loop = asyncio.get_running_loop()
        self._response = response
        self._url = url  # the URL asked for: errors name what the caller knows, pre-redirect
        self._cfg = cfg
        self._cap = cap  # max bytes yielded in total
        self._deadline = deadline  # loop time at which the file's total budget ends
        self._received = 0  # bytes yielded so far
        self._closed = False  # set when stream() exits: the connection is gone
        self._time = loop.time  # bound once: two calls per chunk
        self._waited = 0.0  # seconds spent waiting in finished reads, this speed window
        self._window_bytes = 0  # bytes those reads returned
        self._read_since: float | None = None  # loop time the pending read began (None: none)
        # One timer for the whole body, not an asyncio.timeout per chunk (a timer made
        # and cancelled per chunk adds up). When the deadline passes, the read
        # that waits (or the next one) raises; the consumer's code between two
        # chunks is never interrupted. A body already received in full is left to
        # finish: its reads no longer wait.
        self._timer = loop.call_at(deadline, self._expire)
        # The speed check is one timer per window too, re-armed for when the
        # waiting could first add up to a full window.
        self._speed_timer: asyncio.TimerHandle | None = None
        if cfg.min_speed > 0:
            self._speed_timer = loop.call_later(cfg.min_speed_window, self._judge_speed)

    def _expire(self) -> None:
        content = self._response.content
        if not content.is_eof():
            content.set_exception(_DeadlinePassed())

    def _judge_speed(self) -> None:
        """Timer: abort the body if a full window of waiting brought too few bytes."""
        cfg = self._cfg
        now = self._time()
        waited = self._waited
        if self._read_since is not None:
            waited += now - self._read_since
        if waited < cfg.min_speed_window * 0.999:  # the consumer was busy part of the time
            remaining = cfg.min_speed_window - waited
        else:
            content = self._response.content
            if self._window_bytes < cfg.min_speed * waited and not content.is_eof():
                content.set_exception(_TooSlow(self._window_bytes / waited))
                return
            # A fresh window; the pending read's wait so far belongs to the old one.
            self._waited, self._window_bytes = 0.0, 0
            if self._read_since is not None:
                self._read_since = now
            remaining = cfg.min_speed_window
        self._speed_timer = asyncio.get_running_loop().call_later(remaining, self._judge_speed)

    def _end_wait(self, since: float) -> None:
        """Add the read that began at ``since`` to the window's waiting time."""
        # _judge_speed may have moved _read_since on (a new window began meanwhile).
        began, self._read_since = self._read_since, None
        self._waited += self._time() - (since if began is None else began)

    def __aiter__(self) -> BodyStream:
        return self

    async def __anext__(self) -> bytes:
        if self._closed:
            raise RuntimeError("Body.chunks() used after its stream() context exited")
        url = self._url
        cfg = self._cfg
        self._read_since = since = self._time()
        try:
            chunk = await self._response.content.read(cfg.chunk_size)
        except _DeadlinePassed as exc:
            raise FetchTimeout(
                f"total deadline of {cfg.total_timeout:g}s passed while reading", url=url
            ) from exc
        except _TooSlow as exc:
            raise TooSlow(
                f"body slower than {cfg.min_speed} bytes/s over {cfg.min_speed_window:g}s "
                f"({exc.rate:.0f} bytes/s)",
                url=url,
            ) from exc
        except TimeoutError as exc:  # aiohttp's sock_read: the server stalled
            raise FetchTimeout(
                f"no data for {cfg.read_timeout:g}s while reading the body", url=url
            ) from exc
        except aiohttp.ClientError as exc:
            raise map_error(exc, url, cfg, self._response) from exc
        except HttpProcessingError as exc:
            # aiohttp's pure-Python parser puts its framing errors (a malformed chunk
            # size) on the body stream as they are, not as a ClientError.
            raise malformed(exc, url) from exc
        finally:
            self._end_wait(since)
        if not chunk:
            raise StopAsyncIteration
        self._window_bytes += len(chunk)
        # These are bytes after Content-Encoding was undone, so an encoded body
        # is capped on its decoded size: stricter than the wire, never looser.
        self._received += len(chunk)
        if self._received > self._cap:
            raise BodyTooLarge(f"body larger than {self._cap} bytes", url=url)
        return chunk

    def close(self) -> None:
        """Stop the timers; further reads are an error (the fetcher's context exited)."""
        self._closed = True
        self._timer.cancel()
        if self._speed_timer is not None:
            self._speed_timer.cancel()
