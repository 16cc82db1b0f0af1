"""The coverage check: per host, what its sitemaps list against what its links show.

In: domains (input lines as for ``run``), the config and ``pages`` (K). Out: the
report, ``{"hosts": [...], "summary": {...}}`` (figures.py's shapes).

Per host, within its politeness (the run's ``Scheduler``) and robots.txt:

1. its sitemaps are harvested as ``run`` would (``run.pipeline.harvest``); the
   listed canonical URLs are held in memory, per host (a coverage check is for a
   list of sites, not for a crawl of millions of URLs);
2. the home page and up to K pages reached from it by same-site links are fetched
   (``crawl.links.walk``): completeness is the share of the pages found, less the
   fetched ones that are noindex or not HTML, that the sitemaps list;
3. K listed URLs are sampled (the lowest fingerprints: a deterministic, uniform
   sample) and fetched: the shares that are dead (404/410), redirect (and whether
   to a listed URL), noindex (meta or X-Robots-Tag) or declare a canonical elsewhere.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from harvester.coverage.figures import OUTCOMES, completeness, share, summary
from harvester.crawl.fetch import Fetcher
from harvester.crawl.homepage import fetch_page
from harvester.crawl.links import walk
from harvester.crawl.robots import RobotsTxt, parse_robots
from harvester.crawl.scheduler import Scheduler, host_key
from harvester.errors import FetchError, HTTPStatusError
from harvester.run.pipeline import harvest
from harvester.urls.fingerprint import fingerprint
from harvester.urls.normalize import Normalizer, host_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiohttp.abc import AbstractResolver

    from harvester.config import Config
    from harvester.crawl.homepage import Fetched
    from harvester.crawl.scheduler import HostSlot

__all__ = ["coverage"]

DEFAULT_PAGES = 20  # K: pages walked and listed URLs sampled per host


async def coverage(
    domains: list[str],
    cfg: Config,
    pages: int = DEFAULT_PAGES,
    *,
    resolver: AbstractResolver | None = None,
) -> dict[str, Any]:
    """The coverage report of ``domains`` (see the module)."""
    listed: dict[str, set[str]] = defaultdict(set)
    reports: dict[str, dict[str, Any]] = {}
    async for rec in harvest(
        domains, cfg, resolver=resolver, on_host=lambda r: reports.update({r["host"]: r})
    ):
        if not rec.get("is_sitemap"):
            listed[rec["host"]].add(rec["url"])
    origins = {host_key(_origin(d)): _origin(d) for d in domains}
    scheduler = Scheduler(cfg.politeness)
    normalizer = Normalizer(cfg.normalize)
    async with Fetcher(cfg.fetch, resolver=resolver, hosts=cfg.politeness) as fetcher:

        async def one(host: str, origin: str) -> dict[str, Any]:
            canonical = normalizer.rules_for(host_of(origin)).canonical
            slot = scheduler.acquire(host)
            try:
                return await _host(host, origin, listed[host], fetcher, slot, canonical, pages, cfg)
            finally:
                scheduler.release(host)

        results = await asyncio.gather(*(one(h, o) for h, o in origins.items()))
    for result in results:
        result["urls_listed"] = len(listed[result["host"]])
        result["discovery"] = reports.get(result["host"], {}).get("discovery")
    return {"hosts": list(results), "summary": summary(list(results))}


def _origin(domain: str) -> str:
    """The origin of an input line (a bare domain is https)."""
    text = domain.strip()
    origin = text if "://" in text else f"https://{text}"
    scheme, _, rest = origin.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


async def _host(
    host: str,
    origin: str,
    listed: set[str],
    fetcher: Fetcher,
    slot: HostSlot,
    canonical: Callable[[str], str],
    pages: int,
    cfg: Config,
) -> dict[str, Any]:
    """One host's figures."""
    out: dict[str, Any] = {"host": host}
    try:
        robots = await _robots(origin, fetcher, slot, cfg)
    except FetchError as exc:
        out["error"] = f"{exc.kind}: {exc.message}"
        return out
    found = await walk(origin, robots, fetcher, slot, canonical, pages)
    out["pages_fetched"] = found.pages
    out["pages_found"] = len(found.urls)
    out["completeness"] = completeness(listed, found.urls, found.noindex | found.not_html)
    sample = sorted(listed, key=fingerprint)[:pages]
    counts = dict.fromkeys(OUTCOMES, 0)
    sampled = 0
    for url in sample:
        if not robots.can_fetch(url) or host_key(url) != host:
            continue  # never requested: robots.txt disallows it, or another host's
        try:
            fetched = await fetch_page(url, fetcher, slot)
        except FetchError:
            continue
        sampled += 1
        for name in _outcomes(fetched, listed, canonical):
            counts[name] += 1
    out["sampled"] = sampled
    out["listed_not_live"] = {name: share(n, sampled) for name, n in counts.items()}
    return out


def _outcomes(fetched: Fetched, listed: set[str], canonical: Callable[[str], str]) -> list[str]:
    """What one sampled listed URL turned out to be (none: a live, indexable page)."""
    if fetched.status in (404, 410):
        return ["dead"]
    names = []
    final, page = fetched.final, fetched.page
    if fetched.redirects:
        names.append("redirect")
        if canonical(final) in listed:
            names.append("redirect_to_listed")
    if page is not None:
        if page.noindex:
            names.append("noindex")
        if page.canonical is not None and canonical(page.canonical) != canonical(final):
            names.append("canonical_elsewhere")
    return names


async def _robots(origin: str, fetcher: Fetcher, slot: HostSlot, cfg: Config) -> RobotsTxt:
    """The host's robots.txt rules (a 4xx: none). Raises ``FetchError`` otherwise."""
    url = f"{origin}/robots.txt"
    cap = cfg.fetch.max_robots_bytes
    try:
        async with fetcher.stream(url, slot) as body:
            parts: list[bytes] = []
            size = 0
            async for chunk in body.chunks():
                parts.append(chunk)
                size += len(chunk)
                if size > cap:
                    break
            final = body.url
    except HTTPStatusError as exc:
        if 400 <= exc.status < 500:
            return RobotsTxt()
        raise
    return parse_robots(b"".join(parts)[:cap], final, cfg.fetch.user_agent)
