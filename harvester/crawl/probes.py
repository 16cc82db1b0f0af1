"""Where to look for a sitemap when robots.txt lists none: the probe plan of one host.

In: the config's ``discovery.fallback_paths``, the host's origin, the per-host
probe budget, and optionally the host's home page (htmlpage.py's ``HtmlPage``, or
None; ``probe_urls`` fetches it first, see ``home_charged``). Out: the URLs to probe,
in order, at most ``budget`` of them (discovery queues them as one fallback chain: the
first hit stops it).

The locations come from one data file, ``probes.toml`` beside this module,
each entry with the platforms that use it and the source that documents it.
Order: the home page's ``<link rel="sitemap">`` hrefs on the host's own site;
then, when its generator names a platform, that platform's locations; then the
config's ``fallback_paths``; then the data file's entries in file order.

Example::

    plan(("/sitemap.xml",), "https://example.com", 6, home_page)
    # ['https://example.com/wp-sitemap.xml', 'https://example.com/sitemap.xml', ...]
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from harvester.crawl.homepage import fetch_page
from harvester.errors import FetchError

if TYPE_CHECKING:
    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.homepage import Fetched
    from harvester.crawl.htmlpage import HtmlPage
    from harvester.crawl.robots import RobotsTxt
    from harvester.crawl.scheduler import HostSlot
    from harvester.crawl.settings import DiscoverySettings

__all__ = [
    "DEFAULT_BUDGET",
    "Probe",
    "guess_platform",
    "home_charged",
    "plan",
    "probe_urls",
    "probes",
]

DEFAULT_BUDGET = 6  # requests per host spent probing, the home page included (probe_budget)
_DATA = Path(__file__).with_name("probes.toml")


@dataclass(frozen=True, slots=True)
class Probe:
    """One location of the data file."""

    path: str  # absolute path on the host, e.g. "/wp-sitemap.xml"
    platforms: tuple[str, ...]  # lower-case generator substrings that put it there
    source: str  # where the location is documented


@functools.cache
def probes() -> tuple[Probe, ...]:
    """The data file's entries, in file order (read once per process)."""
    with _DATA.open("rb") as f:
        data = tomllib.load(f)
    return tuple(
        Probe(e["path"], tuple(p.lower() for p in e.get("platforms", ())), e["source"])
        for e in data["probe"]
    )


def guess_platform(generator: str | None) -> str | None:
    """The data file's platform named by a generator string (``"WordPress 6.5"`` →
    ``"wordpress"``), None when none is."""
    if not generator:
        return None
    text = generator.lower()
    for probe in probes():
        for platform in probe.platforms:
            if platform in text:
                return platform
    return None


def plan(
    fallback_paths: tuple[str, ...], origin: str, budget: int, home: HtmlPage | None = None
) -> list[str]:
    """The URLs to probe on ``origin``, best guess first, at most ``budget`` (see module)."""
    urls: dict[str, None] = {}
    if home is not None:
        own = urlsplit(origin).netloc.lower()
        for href in home.sitemaps:
            if urlsplit(href).netloc.lower() == own:
                urls.setdefault(href)
    platform = guess_platform(home.generator) if home is not None else None
    preferred = [p.path for p in probes() if platform is not None and platform in p.platforms]
    for path in (*preferred, *fallback_paths, *(p.path for p in probes())):
        urls.setdefault(f"{origin}{path}")
    return list(urls)[: max(budget, 0)]


def home_charged(settings: DiscoverySettings) -> bool | None:
    """Does discovery fetch the home page, and is it one of the budget's requests?

    None: not fetched (a budget under 2 keeps its requests for guesses). True: fetched
    for discovery alone, one request of ``probe_budget``. False: fetched first because the
    links fallback or the coverage walk will read it anyway (not charged to the budget).
    """
    if settings.links_fallback > 0 or settings.coverage > 0:
        return False
    return True if settings.probe_budget >= 2 else None


async def probe_urls(
    origin: str, robots: RobotsTxt, fetcher: Fetcher, slot: HostSlot, settings: DiscoverySettings
) -> tuple[list[str], Fetched | None]:
    """The probe plan for a host whose robots.txt listed no sitemap (discovery's hook),
    and the home page if it was fetched.

    The home page is fetched first (if robots.txt allows it and ``home_charged`` says
    so): its ``<link rel="sitemap">`` (the only way to find a sitemap at a path no probe
    guesses) and its generator order the plan, and discovery keeps it for the walk and
    the coverage check, which never fetch it again. Fetched for discovery alone, it is
    one of the ``probe_budget`` requests, so a host with no sitemap anywhere still costs
    at most the budget. A home page that fails leaves the plan unguessed (a walk reports
    the failure). The home page comes back only when a walk will read it (else None),
    with its bytes when the coverage check is on (``Fetched.body``).
    """
    home: Fetched | None = None
    url = f"{origin}/"
    budget = settings.probe_budget
    charged = home_charged(settings)
    if charged is not None and robots.can_fetch(url):
        budget -= 1 if charged else 0
        try:
            # With the coverage check on, its bytes are kept: when the home page is in the
            # check's sample, the lastmod audit reads it from them (state.samples).
            home = await fetch_page(url, fetcher, slot, keep_body=settings.coverage > 0)
        except FetchError:
            home = None
    page = home.page if home is not None else None
    # Kept only for a walk that will read it: a host's links are not held for nothing.
    return plan(settings.fallback_paths, origin, budget, page), None if charged else home
