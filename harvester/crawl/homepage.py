"""Fetch one HTML page of a host (its home page, a page of the links walk) and parse it.

In: a URL, the shard's ``Fetcher`` and the host's ``HostSlot`` (so the host's
politeness applies to the request like to any sitemap's). Out: a ``Fetched``
with the status, final URL, redirects and, for an HTML answer, the parsed
``HtmlPage`` (htmlpage.py), parsed chunk by chunk as the body arrives (the bytes
are kept only when asked for). Only the first ``MAX_HTML_BYTES`` of the body are
read: the rest is left unread, not an error.

A 4xx/5xx answer is a ``Fetched`` with its status and no page (the caller
counts it); a transport failure raises the classified ``FetchError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harvester.crawl.htmlpage import MAX_HTML_BYTES, HtmlPage, HtmlReader
from harvester.errors import HTTPStatusError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.scheduler import HostSlot

__all__ = ["Fetched", "fetch_page"]

_HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass(frozen=True, slots=True)
class Fetched:
    """One page request's outcome."""

    url: str  # the URL asked for
    status: int  # the final status (after redirects)
    final: str  # the URL that answered (after redirects)
    redirects: tuple[str, ...] = ()  # URLs that redirected on the way
    headers: Mapping[str, str] | None = None
    page: HtmlPage | None = None  # None: an error status, or not HTML
    body: bytes | None = None  # the HTML bytes read, when asked for (``keep_body``)

    @property
    def html(self) -> bool:
        """Whether the answer was an HTML page."""
        return self.page is not None


async def fetch_page(
    url: str, fetcher: Fetcher, slot: HostSlot, *, keep_body: bool = False
) -> Fetched:
    """GET ``url`` under ``slot``; parse it when it is HTML (``keep_body``: its bytes kept
    in ``Fetched.body`` too). Raises ``FetchError`` on a transport failure (an HTTP error
    status is returned, not raised)."""
    try:
        async with fetcher.stream(url, slot) as body:
            final, status, redirects = body.url, body.status, body.redirects
            headers = dict(body.headers)
            ctype = headers.get("Content-Type", "").split(";")[0].strip().lower()
            if ctype and ctype not in _HTML_TYPES:
                return Fetched(url, status, final, redirects, headers)
            reader = HtmlReader(final, headers)  # parsed as the chunks arrive
            parts: list[bytes] | None = [] if keep_body else None
            size = 0
            async for chunk in body.chunks():
                reader.feed(chunk)
                if parts is not None:
                    parts.append(chunk)
                size += len(chunk)
                if size > MAX_HTML_BYTES:
                    break  # the head and the first links are what matter; the rest is left
    except HTTPStatusError as exc:
        return Fetched(url, exc.status, exc.url or url)
    data = None if parts is None else b"".join(parts)
    return Fetched(url, status, final, redirects, headers, reader.close(), data)
