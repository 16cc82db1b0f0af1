"""Which sitemaps a host fetches: the policies a sitemap passes on its way to the frontier.

In: a sitemap (``SitemapRef``) that discovery found, an index listed or the state
file carried, and what discovery learned of the host (``discovered``: its
robots.txt, the hosts that are its own, the sitemaps its robots.txt declares).

Out: ``SitemapPolicy.refusal``: None (it may be fetched) or why not, each refusal
counted in the host report and the sitemap log: ``invalid_url`` (its host can be no
DNS name or IP address), ``cross_host`` (``discovery.cross_host``),
``robots_disallowed`` (the host's robots.txt rules); ``allowed`` is the cross-host
policy alone (a redirect's target). ``SitemapQueue`` takes each ref through the
policy, the ``--follow``/``--skip-sitemap`` filters and the caps' choice
(``choice.Choice``) into the host's frontier, counts what its host listed, and
says whether a redirect's target may be read (``redirected``).
Sync and I/O-free; one of each per host, owned by its host worker.

Usage::

    policy = SitemapPolicy(host, "same-site", report, sitemaps)
    queue = SitemapQueue(policy, frontier, filters, homes)
    policy.discovered(found)
    for ref in found.refs:
        queue.admit(ref)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvester.crawl.choice import Choice
from harvester.crawl.discovery import child_allowed, home_hosts
from harvester.crawl.frontier import SitemapRef
from harvester.crawl.robots import RobotsTxt
from harvester.crawl.scheduler import host_key
from harvester.errors import InvalidURL
from harvester.urls.validate import valid_authority

if TYPE_CHECKING:
    from harvester.crawl.discovery import Discovered
    from harvester.crawl.filters import Filters
    from harvester.crawl.frontier import Frontier
    from harvester.crawl.home import HomeHosts
    from harvester.crawl.incremental import HostIncremental
    from harvester.crawl.report import HostReport
    from harvester.crawl.sitemaps import SitemapLog

__all__ = ["SitemapPolicy", "SitemapQueue"]


class SitemapPolicy:
    """The policies one host's sitemaps pass before they are fetched (module docstring)."""

    def __init__(
        self, host: str, cross_host: str, report: HostReport, sitemaps: SitemapLog
    ) -> None:
        self.host = host
        self._cross_host = cross_host  # discovery.cross_host
        self.report = report
        self.sitemaps = sitemaps
        # The hosts that are this one's own: it, and where its robots.txt was served from.
        self.own: frozenset[str] = frozenset({host})
        self.declared: frozenset[str] = frozenset()  # sitemaps the host's robots.txt lists
        self._robots = RobotsTxt()  # the host's robots.txt (everything allowed until read)

    def discovered(self, found: Discovered) -> None:
        """What discovery learned: the robots.txt, its sitemaps, where it was served from."""
        self.declared = frozenset(found.robots.sitemaps)
        # (From the remembered origin too, so a recalling run decides as the first did.)
        self.own = home_hosts(self.host, found.origin)
        self._robots = found.robots

    def allowed(self, url: str) -> bool:
        """The cross-host policy (``discovery.cross_host``) for a sitemap at ``url``."""
        return child_allowed(url, self.host, self.own, self._cross_host, self.declared)

    def refusal(self, ref: SitemapRef) -> str | None:
        """Why ``ref`` may not be fetched (reported here), or None: it may."""
        if not valid_authority(ref.url):
            # A robots.txt Sitemap: line (or a remembered one) whose host no client can
            # name; the reader already dropped such index children. Never requested.
            message = "the sitemap's host can be no DNS name or IP address"
            self.report.fail(InvalidURL(message, url=ref.url), attempts=0)
            self.sitemaps.skipped(ref, "invalid_url")
            return "invalid_url"
        if not self.allowed(ref.url):
            self.report.skip_cross_host(ref.url)
            self.sitemaps.skipped(ref, "cross_host")
            return "cross_host"
        # Sitemaps the site itself lists in robots.txt are meant to be fetched; guesses and
        # index children on this host honour its Disallow rules, as do those on the host
        # robots.txt was served from (the rules are its own); other hosts' rules are unknown.
        if (
            ref.source != "robots"
            and host_key(ref.url) in self.own
            and not self._robots.can_fetch(ref.url)
        ):
            self.report.robots_disallowed += 1
            self.sitemaps.skipped(ref, "robots_disallowed")
            return "robots_disallowed"
        return None


class SitemapQueue:
    """One host's sitemaps on their way into its frontier (module docstring).

    ``homes``: the host's ``HomeHosts`` (a child queued by another index is a child of
    this one too); ``incremental``: the host's memory of earlier runs, told each child
    the index being read lists (None without a state file).
    """

    def __init__(
        self,
        policy: SitemapPolicy,
        frontier: Frontier,
        filters: Filters | None,
        homes: HomeHosts,
        incremental: HostIncremental | None = None,
    ) -> None:
        self._policy = policy
        self._report = report = policy.report
        self._frontier = frontier
        self._choice = Choice(frontier, report, policy.sitemaps)  # the caps, reported
        self._filters = filters  # [filters] follow/skip_sitemap (None: every child followed)
        self._homes = homes
        # (Not a callback of the host worker's: the worker holds this queue, and a cycle
        # would keep every finished host's parts alive until the next collection.)
        self._incremental = incremental

    def admit(self, ref: SitemapRef) -> None:
        """A sitemap from discovery (robots.txt, a fallback location, a seed): queued
        unless a policy or cap says no (each reported)."""
        key = self._frontier.key(ref.url)
        if ref.source != "fallback" and not self._frontier.knows(key):
            self._report.sitemaps_listed += 1  # (a fallback location: when it hits)
        if self._permitted(ref):
            self._choice.push(ref, key)

    def offer(self, ref: SitemapRef, *, read: bool = False) -> None:
        """A child of the index being read (``read``), or carried from the state file:
        among the newest it lists (``Frontier.offer``) unless a policy says no. The
        chosen ones are queued once the index is done (``Choice.children``)."""
        key = self._frontier.key(ref.url)
        known = self._frontier.knows(key)
        if not known:
            self._report.sitemaps_listed += 1
        if self._filters is not None and not self._filters.follow(ref.url):
            self._report.sitemaps_filtered += 1  # --follow/--skip-sitemap: not fetched
            return
        if read and self._incremental is not None:
            self._incremental.child(ref.url, ref.lastmod)
        if not known:
            if self._permitted(ref):
                self._choice.offer(ref, key)
        elif ref.parent is not None:
            self._homes.child(ref.parent, ref.url)  # (queued by another index, say)

    def children(self, index: SitemapRef) -> None:
        """The index is done: the children the caps chose from it are queued."""
        self._choice.children(index, self._homes)

    def redirected(self, ref: SitemapRef, url: str) -> bool:
        """``ref``'s response came from ``url``, which is then never queued itself;
        False when the cross-host policy refuses its content (reported)."""
        self._frontier.mark_seen(url)
        # aiohttp followed it (the SSRF guard vetted the address); the cross-host
        # policy decides whether its content counts.
        if host_key(url) != host_key(ref.url) and not self._policy.allowed(url):
            self._report.skip_cross_host(url)
            return False
        return True

    def next_location(self, ref: SitemapRef) -> None:
        """Probe the fallback location after ``ref``, if any (through ``admit``: the
        robots.txt rules apply to each guess, and a disallowed one passes to the next)."""
        if ref.fallbacks:
            nxt, *rest = ref.fallbacks
            self.admit(SitemapRef(nxt, source="fallback", fallbacks=tuple(rest)))

    def _permitted(self, ref: SitemapRef) -> bool:
        """Whether the policy lets ``ref`` be fetched (a refusal is reported; a fallback
        location robots.txt disallows passes to the next one)."""
        why = self._policy.refusal(ref)
        if why == "robots_disallowed" and ref.source == "fallback":
            self.next_location(ref)  # a guess it disallows is not there for us
        return why is None
