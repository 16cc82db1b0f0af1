"""Links as a safety net (issue 49 item 2): a bounded breadth-first walk of a host's pages.

In: the host's origin, its robots.txt rules, the home page if discovery already
fetched it (``Discovered.home``), the shard's ``Fetcher`` and the host's slot
(politeness applies to each page as to any sitemap), the page budget and the
host's canonical form. Out: a ``Walk`` with the same-site URLs found, in
breadth-first order, and its counts.

Bounds: at most ``max_pages`` pages fetched (the home page included) and links
followed to ``max_depth`` (3) clicks from the home page. A URL robots.txt
disallows is never requested (counted as ``disallowed``); links to other hosts
are not followed. HTML is parsed by htmlpage.py (hardened lxml, size cap).

What is kept: every distinct robots-allowed same-site URL linked within the
depth, less those that were fetched and did not answer a page (an error
status, a transport failure). Links found but not fetched once the budget ran
out are kept unverified, like a sitemap's locs; redirected pages are kept at
their final URL.

``emit_links`` turns a walk into the host's records, ``"source": "links"``.
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from harvester.crawl.batch import RecordBatch
from harvester.crawl.homepage import fetch_page
from harvester.errors import FetchError
from harvester.models import UrlEntry
from harvester.urls.fingerprint import fingerprint
from harvester.urls.records import record

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from harvester.crawl.discovery import Discovered
    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.homepage import Fetched
    from harvester.crawl.report import HostReport
    from harvester.crawl.robots import RobotsTxt
    from harvester.crawl.scheduler import HostSlot
    from harvester.crawl.settings import HostSettings
    from harvester.urls.normalize import Rules

__all__ = ["MAX_DEPTH", "PageWatch", "Walk", "emit_links", "walk"]

MAX_DEPTH = 3  # clicks from the home page


class PageWatch(Protocol):
    """Who wants some of the walk's pages as fetched (the coverage check: its sample)."""

    def wants(self, key: str) -> bool:
        """Whether the page of canonical URL ``key`` is wanted (its body then kept)."""

    def saw(self, key: str, fetched: Fetched) -> None:
        """The wanted page ``key``, as the walk fetched it."""


@dataclass(slots=True)
class Walk:
    """What one links walk found."""

    urls: dict[str, str] = field(default_factory=dict)  # canonical URL -> loc as linked
    pages: int = 0  # pages requested (the home page included)
    failed: int = 0  # requested and no page: an error status or a transport failure
    disallowed: int = 0  # same-site links robots.txt disallows (never requested)
    # Fetched pages (canonical) that say noindex, or are not HTML (the coverage check).
    noindex: set[str] = field(default_factory=set)
    not_html: set[str] = field(default_factory=set)

    def counts(self) -> dict[str, int]:
        """The walk's counts for the host report."""
        return {
            "urls": len(self.urls),
            "pages": self.pages,
            "failed": self.failed,
            "disallowed": self.disallowed,
        }


async def walk(
    origin: str,
    robots: RobotsTxt,
    fetcher: Fetcher,
    slot: HostSlot,
    canonical: Callable[[str], str],
    max_pages: int,
    home: Fetched | None = None,
    watch: PageWatch | None = None,
) -> Walk:
    """Walk ``origin``'s links breadth first (see the module); never raises a fetch error.
    ``watch`` sees each page it ``wants`` as fetched, its body kept."""
    out = Walk()
    start = f"{origin}/"
    own = {urlsplit(origin).netloc.lower()}
    if home is not None and home.page is not None:
        own.add(urlsplit(home.final).netloc.lower())
    queue: deque[tuple[str, int]] = deque()
    seen: set[str] = set()
    if robots.can_fetch(start):
        seen.add(_canon(canonical, start) or start)
        queue.append((start, 0))
    else:
        out.disallowed += 1
    while queue and out.pages < max_pages:
        url, depth = queue.popleft()
        key = _canon(canonical, url) or url
        fetched = await _fetch(url, key, home if depth == 0 else None, fetcher, slot, watch)
        out.pages += 1
        if fetched is None or fetched.status >= 400:
            out.failed += 1
            out.urls.pop(key, None)
            continue
        final = _canon(canonical, fetched.final) or key
        out.urls.pop(key, None)
        if urlsplit(fetched.final).netloc.lower() not in own:
            continue  # redirected off the site: not this host's page
        out.urls.setdefault(final, fetched.final)
        seen.add(final)
        if fetched.page is None or fetched.page.noindex:
            (out.noindex if fetched.page else out.not_html).add(final)
        if fetched.page is None or depth >= MAX_DEPTH:
            continue
        for link in fetched.page.links:
            if urlsplit(link).netloc.lower() not in own:
                continue
            linked = _canon(canonical, link)
            if linked is None or linked in seen:
                continue
            seen.add(linked)
            if not robots.can_fetch(link):
                out.disallowed += 1
                continue
            out.urls[linked] = link
            queue.append((link, depth + 1))
    return out


async def _fetch(
    url: str,
    key: str,
    home: Fetched | None,
    fetcher: Fetcher,
    slot: HostSlot,
    watch: PageWatch | None,
) -> Fetched | None:
    """One page of the walk (``home``: fetched by discovery already; probes.py); None for
    a transport failure. ``watch`` sees it when it wants ``key`` (canonical)."""
    wanted = watch is not None and watch.wants(key)
    if home is not None:
        fetched = home
    else:
        try:
            fetched = await fetch_page(url, fetcher, slot, keep_body=wanted)
        except FetchError:
            return None
    if wanted and watch is not None:
        watch.saw(key, fetched)
    return fetched


def _canon(canonical: Callable[[str], str], url: str) -> str | None:
    """``url``'s canonical form; None when the normalizer rejects it."""
    try:
        return canonical(url)
    except ValueError:
        return None


async def emit_links(
    found: Walk,
    host: str,
    report: HostReport,
    max_urls: int,
    emit: Callable[[RecordBatch], Awaitable[None]],
) -> None:
    """The walk's URLs (at most ``max_urls``) as the host's records, counted in ``report``."""
    records = []
    fps: array[int] = array("Q")
    for url, loc in list(found.urls.items())[:max_urls]:
        records.append(record(UrlEntry(loc), None, host, url=url, source="links"))
        fps.append(fingerprint(url))
    report.urls += len(records)
    report.links = found.counts()
    if len(found.urls) > max_urls:
        report.limit("max_urls_per_host")
    if records:
        report.discovery = "links"
        await emit(RecordBatch(host, records, fps))


async def fallback(
    found: Discovered,
    origin: str,
    fetcher: Fetcher,
    slot: HostSlot,
    settings: HostSettings,
    rules: Rules,
    report: HostReport,
    emit: Callable[[RecordBatch], Awaitable[None]],
) -> None:
    """The links fallback of a host whose discovery found no sitemap (none else: nothing
    is done): walk its links from ``found.origin`` (else ``origin``, the seed's), at most
    ``discovery.links_fallback`` pages (0: off), and ``emit`` what the walk found as the
    host's records, counted in ``report``."""
    n = settings.discovery.links_fallback
    if not n or report.discovery != "none":
        return
    start = found.origin or origin
    pages = await walk(start, found.robots, fetcher, slot, rules.canonical, n, found.home)
    await emit_links(pages, report.host, report, settings.batch.max_urls, emit)
