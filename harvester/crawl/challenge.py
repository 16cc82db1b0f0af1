"""The fetcher's challenge-page check: a 403/503 that is a bot vendor's challenge page.

In: a response that came with an error status, and the ``HTTPStatusError`` the fetcher
made of it. Out: that error, or a ``Blocked`` naming the vendor when the response's first
bytes are a challenge page (``wall.challenge_vendor``). A ``Blocked`` is never retried
(the next attempt would meet the same page) and tells the host's wall what it met.

Its own module so the fetcher keeps to the request and its retries; the page markers
live in ``wall.py`` with the rest of what a bot wall looks like.
"""

from __future__ import annotations

import aiohttp

from harvester.crawl.wall import CHALLENGE_MAX, challenge_vendor
from harvester.errors import Blocked, HTTPStatusError

__all__ = ["CHALLENGE_STATUSES", "challenged"]

# Statuses a bot vendor's challenge page comes with (a 200 one is the reader's to see).
CHALLENGE_STATUSES = frozenset({403, 503})


async def challenged(
    response: aiohttp.ClientResponse, error: HTTPStatusError | None
) -> HTTPStatusError | None:
    """``error``, or a ``Blocked`` when the 403/503 came with a bot vendor's challenge
    page (its first bytes read: a small page, ``harvester.crawl.wall``)."""
    if error is None or isinstance(error, Blocked) or error.status not in CHALLENGE_STATUSES:
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
