"""What the fetcher does with a response's head: the status verdict, the first-contact
body timeout, and the ``Body`` handed to the caller (``harvester.crawl.fetch``).

In: an aiohttp ``ClientResponse`` whose headers arrived. Out: ``check_status``'s None
(the body may be handed over) or the status error to retry or raise; ``body_of``'s
``Body``. No I/O here: the body is read by ``harvester.crawl.body``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvester.crawl.body import Body
from harvester.crawl.retry import HONOUR_RETRY_AFTER, retry_after_seconds
from harvester.errors import Blocked, BodyTooLarge, HTTPStatusError

if TYPE_CHECKING:
    import aiohttp

    from harvester.crawl.body import BodyStream

__all__ = ["body_of", "body_read_timeout", "check_status"]


def body_read_timeout(response: aiohttp.ClientResponse, seconds: float) -> None:
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


def check_status(response: aiohttp.ClientResponse, url: str, cap: int) -> HTTPStatusError | None:
    """None if the body may be handed over; the status error to retry or raise otherwise.

    Raises ``BodyTooLarge`` when a 2xx declares a Content-Length over ``cap`` bytes.
    """
    status = response.status
    if 200 <= status < 300 or status == 304:
        # Content-Length is the size on the wire; refusing here saves the
        # download. A 304 may repeat the length of the body it stands for.
        declared = response.content_length
        if declared is not None and declared > cap and status != 304:
            raise BodyTooLarge(f"Content-Length {declared} is larger than {cap} bytes", url=url)
        return None
    retry_after = None  # as the server asked (see Fetcher._retry_delay and not_before)
    if status in HONOUR_RETRY_AFTER:
        retry_after = retry_after_seconds(response.headers.get("Retry-After"))
    reason = response.reason or ""
    message = f"HTTP {status} {reason}".rstrip()
    if status == 403 and response.headers.get("cf-mitigated", "").lower() == "challenge":
        # A bot challenge page, not the file: say so, a retry would meet it again.
        return Blocked(f"{message} (bot challenge)", url=url, status=status)
    return HTTPStatusError(message, url=url, status=status, retry_after=retry_after)


def body_of(response: aiohttp.ClientResponse, attempts: int, stream: BodyStream) -> Body:
    """The ``Body`` handed to the caller: the final URL and status, then the stream."""
    return Body(
        url=str(response.url),
        status=response.status,
        headers=response.headers,
        redirects=tuple(str(r.url) for r in response.history),
        attempts=attempts,
        _stream=stream,
    )
