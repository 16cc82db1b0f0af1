"""The end-of-run limit of a realweb run (issue 51, item 3): no schedule can end sooner.

In: the web (``list[Site]``), the measured tool's politeness (``Politeness``: read from
harvester's effective config, the run's extra TOML included) and its CPU seconds. Out:
``chain(site)`` (seconds a polite, patient client needs for one host counted from the
run's start), ``longest_chain(sites)`` and ``end_limit`` = max(CPU limit, longest chain).

A host's chain is the largest of three lower bounds:

* politeness: its requests start one interval apart, the interval being
  max(1 / rate, its robots.txt ``Crawl-delay``, capped at ``max_crawl_delay``), so the
  last one starts (requests - 1) intervals after the first, and its answer comes after the
  site's latency. The requests are every one a default harvester makes on the host
  (``requests_needed``): robots.txt (and the apex's redirect to www), tdmrep.json
  (``policy.tdmrep``), for a robots.txt without ``Sitemap:`` the home page and the probes
  that miss before the one that finds the sitemap (``discovery.fallback_paths`` and
  ``probes.toml`` in harvester's own ``probes.plan`` order), and the sitemaps;
* dependency: robots.txt (and the apex's redirect to www), tdmrep.json, the home page and
  each missed probe,
  then the sitemap, then an index's children: each step waits for the answer before, a
  latency (a `slow` site's TTFB) each;
* concurrency: at most ``concurrency`` requests of a host at once, a latency each.

The CPU limit is the tool's CPU seconds over the machine's cores (the report's column).
Target of issue 51: wall <= 1.15 x the end limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchmarks.realweb.web import GZIP, HTML, XML, Site

if TYPE_CHECKING:
    from pathlib import Path

TARGET = 1.15  # issue 51: wall / end limit


@dataclass(frozen=True, slots=True)
class Politeness:
    """What spaces a host's requests in the measured tool (harvester's settings)."""

    rate: float = 2.0  # requests per second per host
    concurrency: int = 2  # requests of a host at once
    respect_crawl_delay: bool = True
    max_crawl_delay: float = 60.0
    tdmrep: bool = True  # policy.tdmrep: /.well-known/tdmrep.json once per host
    fallback_paths: tuple[str, ...] = ("/sitemap.xml", "/sitemap_index.xml", "/sitemap.txt")
    probe_budget: int = 6  # discovery.probe_budget

    def interval(self, site: Site) -> float:
        """Seconds between two request starts on ``site``."""
        delay = site.crawl_delay if self.respect_crawl_delay else 0.0
        return max(1.0 / self.rate, min(delay, self.max_crawl_delay))


def politeness(config: Path | None = None) -> Politeness:
    """harvester's politeness with its defaults and the TOML at ``config`` (if any)."""
    from harvester.config import load_config

    loaded = load_config(config)
    cfg, discovery = loaded.politeness, loaded.discovery
    policy = cfg.default
    return Politeness(
        policy.rate,
        policy.concurrency,
        cfg.respect_crawl_delay,
        cfg.max_crawl_delay,
        loaded.policy.tdmrep,
        tuple(discovery.fallback_paths),
        discovery.probe_budget,
    )


def missed_probes(site: Site, polite: Politeness) -> int:
    """The requests harvester makes in vain before the one that finds ``site``'s sitemap:
    0 when robots.txt names it (``Sitemap:``), else the home page (read for its
    ``<link rel="sitemap">``, one of the budget's requests: ``probes.home_charged``) and
    the sitemap's place in harvester's probe plan (``harvester.crawl.probes.plan``)."""
    from harvester.crawl.htmlpage import parse_html
    from harvester.crawl.probes import plan

    robots = site.pages.get("/robots.txt")
    if robots is not None and b"\nSitemap:" in robots.body:
        return 0
    origin = f"{site.scheme}://{site.content_host}"
    home, budget, page = polite.probe_budget >= 2, polite.probe_budget, None
    if home:  # (no realweb robots.txt disallows /)
        budget -= 1
        answer = site.pages.get("/")
        if answer is not None and answer.content_type == HTML:
            page = parse_html(answer.body, f"{origin}/", {"Content-Type": HTML})
    urls = plan(polite.fallback_paths, origin, budget, page)
    for k, url in enumerate(urls):
        found = site.pages.get(url.removeprefix(origin))
        if found is not None and found.content_type in (XML, GZIP):
            return home + k
    return home + len(urls)  # (no probe finds it: the site is not healthy, its chain is 0)


def requests_needed(site: Site, polite: Politeness | None = None) -> int:
    """The requests a default harvester makes to a healthy site (redirects included):
    robots.txt, tdmrep.json, the missed probes and the sitemaps (module docstring)."""
    polite = polite or Politeness()
    sitemaps = sum(1 for p in site.pages.values() if p.content_type in (XML, GZIP))
    robots = 1 + (site.kind == "www")  # the apex robots.txt answers 301 to www
    return robots + polite.tdmrep + missed_probes(site, polite) + sitemaps


def depth(site: Site, polite: Politeness | None = None) -> int:
    """Answers a client waits for one after another: robots.txt (+ the www redirect),
    tdmrep.json, each missed probe, the sitemap, and an index's children."""
    polite = polite or Politeness()
    # An index's children are the only sitemaps at these paths (web.py)
    indexed = any(path.startswith(("/sitemap-", "/sitemaps/")) for path in site.pages)
    before = polite.tdmrep + missed_probes(site, polite)
    return 2 + (site.kind == "www") + indexed + before


def chain(site: Site, polite: Politeness) -> float:
    """Seconds from the run's start before a polite client can be done with ``site``
    (0 for a site expected to fail: its end is a timeout, not a chain)."""
    if site.expect != "ok":
        return 0.0
    requests = requests_needed(site, polite)
    spaced = (requests - 1) * polite.interval(site) + site.latency
    waits = depth(site, polite) * site.latency
    return max(spaced, waits, requests * site.latency / polite.concurrency)


def longest_chain(sites: list[Site], polite: Politeness) -> tuple[float, Site | None]:
    """The longest ``chain`` of the web and its site (None for a web with no healthy site)."""
    best, where = 0.0, None
    for site in sites:
        seconds = chain(site, polite)
        if seconds > best:
            best, where = seconds, site
    return best, where


def end_limit(cpu_s: float, cores: int, longest: float) -> tuple[float, str]:
    """(the end limit, ``cpu`` or ``chain``: which of the two it is)."""
    cpu_limit = cpu_s / max(1, cores)
    return (cpu_limit, "cpu") if cpu_limit >= longest else (longest, "chain")
