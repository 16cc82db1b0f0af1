"""The coverage check of one host (issue 49 item 1): its sitemaps' list against its links.

In (``HostCoverage``, one per host of a run with ``discovery.coverage = K``): the host's
record batches as they go out (``wrap``: K listed URLs are kept to sample), then, once
its sitemaps are read, what discovery found (its robots.txt rules and home page: never
fetched again), the host's seen-set (what its sitemaps listed, as fingerprints), the
shard's ``Fetcher`` and the host's slot (its politeness). Out: ``HostReport.coverage``,
JSON-ready (``check``'s figures, or ``{"skipped": why}``).

Per host, at most 2K requests: the home page (none when discovery fetched it for the
probes) and up to K - 1 pages reached from it by same-site links (``links.walk``:
robots.txt honoured); then up to K listed URLs, the lowest fingerprints (a
deterministic, uniform sample), each fetched once unless robots.txt disallows it.

- completeness: of the distinct same-site pages the walk found, less those fetched and
  found noindex or not HTML, the share the sitemaps list. A lower bound from a sample:
  pages past the walk's budget are not seen.
- listed but not live: of the sampled listed URLs, the shares that answer 404/410,
  redirect (and to a listed URL), say noindex (meta or X-Robots-Tag) or declare a
  canonical elsewhere.

Every share comes with its count and a 95 % Wilson interval (``share``). ``Spread``
(``crawl/spread.py``) folds the hosts' figures into the run report's summary.
"""

from __future__ import annotations

import heapq
import json
import math
from typing import TYPE_CHECKING, Any

from harvester.crawl.discovery import home_hosts
from harvester.crawl.homepage import fetch_page
from harvester.crawl.links import walk
from harvester.crawl.scheduler import host_key
from harvester.errors import FetchError
from harvester.urls.fingerprint import fingerprint

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from harvester.crawl.batch import RecordBatch, UrlBatch
    from harvester.crawl.discovery import Discovered
    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.homepage import Fetched
    from harvester.crawl.report import HostReport
    from harvester.crawl.robots import RobotsTxt
    from harvester.crawl.scheduler import HostSlot

    Emit = Callable[[RecordBatch], Awaitable[None]]

__all__ = ["OUTCOMES", "HostCoverage", "ListedSample", "check", "completeness", "share"]

# What a sampled listed URL turned out to be (none of them: a live, indexable page).
OUTCOMES = ("dead", "redirect", "redirect_to_listed", "noindex", "canonical_elsewhere")
_Z = 1.96  # 95 %
_NO_BOUND = 1 << 64  # above every fingerprint


def share(hits: int, total: int) -> dict[str, Any]:
    """``hits`` of ``total`` as a share with its 95 % Wilson interval (None when total is 0)."""
    if total <= 0:
        return {"count": hits, "of": total, "share": None, "low": None, "high": None}
    p = hits / total
    centre = (p + _Z * _Z / (2 * total)) / (1 + _Z * _Z / total)
    half = (_Z / (1 + _Z * _Z / total)) * math.sqrt(
        p * (1 - p) / total + _Z * _Z / (4 * total * total)
    )
    return {
        "count": hits,
        "of": total,
        "share": round(p, 4),
        "low": round(max(0.0, centre - half), 4),
        "high": round(min(1.0, centre + half), 4),
    }


def completeness(
    listed: Callable[[str], bool], found: Iterable[str], excluded: set[str]
) -> dict[str, Any]:
    """Of the pages ``found`` (canonical URLs) less ``excluded`` (noindex, not HTML), the
    share ``listed`` says the sitemaps list."""
    pages = [url for url in found if url not in excluded]
    return share(sum(1 for url in pages if listed(url)), len(pages))


class ListedSample:
    """The K listed URLs of the lowest fingerprints, taken from a host's record batches as
    they go out: the same sample for the same list in any order, and uniform."""

    __slots__ = ("_heap", "k")

    def __init__(self, k: int) -> None:
        self.k = k
        self._heap: list[tuple[int, str]] = []  # (-fingerprint, canonical URL): a max-heap

    def wrap(self, emit: Emit) -> Emit:
        """``emit``, each batch sampled on its way."""

        async def sampled(batch: RecordBatch) -> None:
            self.take(batch)
            await emit(batch)

        return sampled

    def take(self, batch: RecordBatch) -> None:
        """Keep what ``batch`` has of the K lowest fingerprints so far."""
        heap, k, fps = self._heap, self.k, batch.fingerprints
        bound = -heap[0][0] if len(heap) >= k else _NO_BOUND
        # Once K are kept, a URL joins with chance K/n: most batches end here.
        hits = [i for i, fp in enumerate(fps) if fp < bound]
        if not hits:
            return
        for fp, url in _pairs(batch, hits):
            if len(heap) < k:
                heapq.heappush(heap, (-fp, url))
            elif fp < -heap[0][0]:
                heapq.heapreplace(heap, (-fp, url))

    def urls(self) -> list[str]:
        """The sample, lowest fingerprint first."""
        return [url for _, url in sorted(self._heap, reverse=True)]


def _pairs(batch: RecordBatch, hits: list[int]) -> Iterable[tuple[int, str]]:
    """(fingerprint, URL) of the records at ``hits``; of every record when a filter left
    fewer records than fingerprints (the indices do not line up then)."""
    fps = batch.fingerprints
    if batch.data is None:
        records = batch.records
        if len(records) == len(fps):
            return ((fps[i], records[i]["url"]) for i in hits)
        return ((fingerprint(r["url"]), r["url"]) for r in records)
    lines = bytes(batch.data).split(b"\n")
    if batch.lines is None:
        return ((fps[i], json.loads(lines[i])["url"]) for i in hits)
    urls = (json.loads(line)["url"] for line in lines if line)
    return ((fingerprint(url), url) for url in urls)


def _outcomes(
    fetched: Fetched, listed: Callable[[str], bool], canonical: Callable[[str], str]
) -> list[str]:
    """What one sampled listed URL turned out to be (none: a live, indexable page)."""
    if fetched.status in (404, 410):
        return ["dead"]
    names = []
    final, page = fetched.final, fetched.page
    if fetched.redirects:
        names.append("redirect")
        if listed(canonical(final)):
            names.append("redirect_to_listed")
    if page is not None:
        if page.noindex:
            names.append("noindex")
        if page.canonical is not None and canonical(page.canonical) != canonical(final):
            names.append("canonical_elsewhere")
    return names


async def check(
    origin: str,
    robots: RobotsTxt,
    listed: Callable[[str], bool],
    sample: list[str],
    fetcher: Fetcher,
    slot: HostSlot,
    canonical: Callable[[str], str],
    pages: int,
    *,
    home: Fetched | None = None,
    own: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """One host's figures (see the module): the links walk from ``origin`` (``pages`` at
    most, ``home`` its first when fetched already), then ``sample``'s listed URLs on the
    hosts ``own`` (any, when empty) that robots.txt allows. Never raises a fetch error."""
    found = await walk(origin, robots, fetcher, slot, canonical, pages, home)
    out: dict[str, Any] = {
        "pages_fetched": found.pages,
        "pages_found": len(found.urls),
        "completeness": completeness(listed, found.urls, found.noindex | found.not_html),
    }
    requests = found.pages - (1 if home is not None and home.page is not None else 0)
    counts = dict.fromkeys(OUTCOMES, 0)
    sampled = 0
    for url in sample:
        if not robots.can_fetch(url) or (own and host_key(url) not in own):
            continue  # never requested: robots.txt disallows it, or another host's
        requests += 1
        try:
            fetched = await fetch_page(url, fetcher, slot)
        except FetchError:
            continue  # a transport failure says nothing of the page: not counted
        sampled += 1
        for name in _outcomes(fetched, listed, canonical):
            counts[name] += 1
    out["sampled"] = sampled
    out["listed_not_live"] = {name: share(n, sampled) for name, n in counts.items()}
    out["requests"] = max(requests, 0)
    return out


class HostCoverage:
    """``--coverage K`` in a run, for one host: made by ``on`` (its emit sampled), then
    ``run`` once the sitemaps are read. K = 0: off, nothing sampled nor requested."""

    __slots__ = ("pages", "sample")

    def __init__(self, pages: int) -> None:
        self.pages = pages
        self.sample = ListedSample(pages)

    @classmethod
    def on(cls, pages: int, emit: Emit) -> tuple[HostCoverage, Emit]:
        """The check of K = ``pages`` and the host's ``emit`` with its records sampled on
        the way out (``emit`` itself when off)."""
        check = cls(pages)
        return check, check.sample.wrap(emit) if pages else emit

    async def run(
        self, found: Discovered, origin: str, fetcher: Fetcher, slot: HostSlot, batch: UrlBatch
    ) -> None:
        """Check the host (its sitemaps read into ``batch``); the figures go to its report.
        Off (K = 0): nothing."""
        if not self.pages:
            return
        report = batch.report
        why = _skip(report)
        if why is not None:
            report.coverage = {"skipped": why}
            return
        seen = batch.seen

        def listed(url: str) -> bool:
            return seen is not None and fingerprint(url) in seen

        start = found.origin or origin
        figures = await check(
            start,
            found.robots,
            listed,
            self.sample.urls(),
            fetcher,
            slot,
            batch.rules.canonical,
            self.pages,
            home=found.home,
            own=home_hosts(report.host, found.origin),
        )
        figures["capped"] = batch.cap_hit  # the listed set stops at max_urls_per_host
        report.coverage = figures


def _skip(report: HostReport) -> str | None:
    """Why the host's figures would say nothing (None: check it)."""
    if report.sitemaps_unchanged:
        return "sitemaps unchanged since the last run were not read: the listed set is partial"
    if not report.sitemaps_fetched:
        return "no sitemap read"
    return None
