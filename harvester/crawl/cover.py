"""The coverage check of one host (issue 49 item 1): its sitemaps' list against its links.

In (``HostCoverage``, one per host of a run with ``discovery.coverage = K``): the host's
record batches as they go out (``wrap``: K listed URLs are kept to sample), then, once
its sitemaps are read, what discovery found (its robots.txt rules and home page: never
fetched again), the host's seen-set (what its sitemaps listed, as fingerprints), the
shard's ``Fetcher`` and the host's slot (its politeness). Out: ``HostReport.coverage``,
JSON-ready (``check``'s figures, or ``{"skipped": why}``).

Per host, at most 2K requests: the home page (none when discovery fetched it for the
probes: its answer, bytes included, serves the walk, the sample and the lastmod audit's
sample) and up to K - 1 pages reached from it by same-site links (``links.walk``:
robots.txt honoured); then up to K listed URLs, the lowest fingerprints (a
deterministic, uniform sample), each fetched once unless robots.txt disallows it or
the walk fetched it already (its answer then serves both).

- completeness: of the distinct same-site pages the walk found, less those fetched and
  found noindex or not HTML, the share the sitemaps list. A lower bound from a sample:
  pages past the walk's budget are not seen.
- listed but not live: of the sampled listed URLs, the shares that answer 404/410,
  redirect (and to a listed URL), say noindex (meta or X-Robots-Tag) or declare a
  canonical elsewhere.

With a state file the sampled listed pages it read are also stored as the lastmod
audit's samples (``listed.AuditSamples``): ``harvester audit`` then counts them instead
of fetching them again.

Every share comes with its count and a 95 % Wilson interval (``share``). ``Spread``
(``crawl/spread.py``) folds the hosts' figures into the run report's summary.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from harvester.crawl.discovery import home_hosts
from harvester.crawl.homepage import fetch_page
from harvester.crawl.links import walk
from harvester.crawl.listed import AuditSamples, ListedSample, SampledPages
from harvester.crawl.scheduler import host_key
from harvester.errors import FetchError
from harvester.urls.fingerprint import fingerprint

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from harvester.crawl.batch import UrlBatch
    from harvester.crawl.discovery import Discovered
    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.homepage import Fetched
    from harvester.crawl.listed import Emit, Pick
    from harvester.crawl.report import HostReport
    from harvester.crawl.robots import RobotsTxt
    from harvester.crawl.scheduler import HostSlot
    from harvester.crawl.settings import DiscoverySettings
    from harvester.state.memory import HostState

__all__ = ["OUTCOMES", "HostCoverage", "check", "completeness", "share"]

# What a sampled listed URL turned out to be (none of them: a live, indexable page).
OUTCOMES = ("dead", "redirect", "redirect_to_listed", "noindex", "canonical_elsewhere")
_Z = 1.96  # 95 %


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
    sample: list[Pick],
    fetcher: Fetcher,
    slot: HostSlot,
    canonical: Callable[[str], str],
    pages: int,
    *,
    home: Fetched | None = None,
    own: frozenset[str] = frozenset(),
    audit: AuditSamples | None = None,
) -> dict[str, Any]:
    """One host's figures (see the module): the links walk from ``origin`` (``pages`` at
    most, ``home`` its first when fetched already), then ``sample``'s listed URLs on the
    hosts ``own`` (any, when empty) that robots.txt allows (not fetched again when the
    walk did), each kept in ``audit`` as the lastmod audit's sample when given. Never
    raises a fetch error."""
    walked = SampledPages(sample, audit)  # a sampled page the walk fetched: not again
    found = await walk(origin, robots, fetcher, slot, canonical, pages, home, walked)
    out: dict[str, Any] = {
        "pages_fetched": found.pages,
        "pages_found": len(found.urls),
        "completeness": completeness(listed, found.urls, found.noindex | found.not_html),
    }
    requests = found.pages - (1 if home is not None and home.page is not None else 0)
    counts = dict.fromkeys(OUTCOMES, 0)
    sampled = 0
    for pick in sample:
        url = pick.url
        if not robots.can_fetch(url) or (own and host_key(url) not in own):
            continue  # never requested: robots.txt disallows it, or another host's
        fetched = walked.take(url)
        if fetched is None:
            requests += 1
            try:
                fetched = await fetch_page(url, fetcher, slot, keep_body=audit is not None)
            except FetchError:
                continue  # a transport failure says nothing of the page: not counted
            if audit is not None:
                audit.add(pick, fetched)
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

    __slots__ = ("page_bytes", "pages", "sample")

    def __init__(self, pages: int, page_bytes: int) -> None:
        self.pages = pages
        self.page_bytes = page_bytes  # of a sampled page, as the lastmod audit reads it
        self.sample = ListedSample(pages)

    @classmethod
    def on(cls, settings: DiscoverySettings, emit: Emit) -> tuple[HostCoverage, Emit]:
        """The check of K = ``settings.coverage`` and the host's ``emit`` with its records
        sampled on the way out (``emit`` itself when off)."""
        check = cls(settings.coverage, settings.page_bytes)
        return check, check.sample.wrap(emit) if check.pages else emit

    async def run(
        self,
        found: Discovered,
        origin: str,
        fetcher: Fetcher,
        slot: HostSlot,
        batch: UrlBatch,
        state: HostState | None = None,
    ) -> None:
        """Check the host (its sitemaps read into ``batch``); the figures go to its report
        and, with a state file (``state``), the sampled pages it read to the lastmod
        audit's samples. Off (K = 0): nothing."""
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
        audit = None if state is None else AuditSamples(self.page_bytes)
        figures = await check(
            start,
            found.robots,
            listed,
            self.sample.picks(),
            fetcher,
            slot,
            batch.rules.canonical,
            self.pages,
            home=found.home,
            own=home_hosts(report.host, found.origin),
            audit=audit,
        )
        found.home = None  # (read: its links and bytes are not held to the host's end)
        figures["capped"] = batch.cap_hit  # the listed set stops at max_urls_per_host
        report.coverage = figures
        if state is not None and audit is not None:
            state.samples.extend(audit.rows)


def _skip(report: HostReport) -> str | None:
    """Why the host's figures would say nothing (None: check it)."""
    if report.sitemaps_unchanged:
        return "sitemaps unchanged since the last run were not read: the listed set is partial"
    if not report.sitemaps_fetched:
        return "no sitemap read"
    return None
