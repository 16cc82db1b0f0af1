"""What harvesting one host needs of the run's config, read once per shard.

In: the run's ``Config``. Out: ``HostSettings`` (``HostSettings.of(cfg)``), which a
shard builds once and hands to each ``HostWorker``; each of its parts is one
component's own input, so a component's signature says what it reads (and this
module, what the crawl reads of the config):

- ``fetch``, ``reader``: the attempt's sections (the body's cap, the file's deadline,
  the retries; the reader's caps);
- ``limits``: the frontier's caps and the host's deadline;
- ``discovery``: ``DiscoverySettings`` (where to look, robots.txt, Crawl-delay, whose
  children count as the host's own);
- ``batch``: ``BatchSettings`` (dedupe, the URL cap, ``--since``, the audit sample,
  the page filters);
- ``memory``: ``MemorySettings`` (the state file's memory of earlier runs);
- what is compiled once for every host of the shard: the normalizer's rules and the
  ``[filters]``; and whether each host keeps its sitemap log.

Example::

    settings = HostSettings.of(cfg)
    report = await HostWorker(seed, settings, fetcher, scheduler, emit).run()
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from harvester.crawl.filters import compile_filters
from harvester.urls.normalize import Normalizer

if TYPE_CHECKING:
    from harvester.config import Config, DedupeConfig, FetchConfig, LimitsConfig, ReaderConfig
    from harvester.config.policy import PolicyConfig
    from harvester.crawl.filters import Filters
    from harvester.crawl.robots import RobotsTxt
    from harvester.crawl.scheduler import HostSlot

__all__ = ["BatchSettings", "DiscoverySettings", "HostSettings", "MemorySettings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscoverySettings:
    """What discovery needs of the config (``of``): where to look, how much robots.txt
    to read, whose rules to follow, how far a Crawl-delay may slow a host, and which
    hosts' children count as the host's own."""

    fallback_paths: tuple[str, ...]  # discovery.fallback_paths
    user_agent: str  # robots.txt's groups are matched against it (fetch.user_agent)
    max_robots_bytes: int  # fetch.max_robots_bytes
    # The longest Crawl-delay applied (politeness.max_crawl_delay); None: not respected.
    max_crawl_delay: float | None
    cross_host: Literal["same-host", "same-site", "any"]  # discovery.cross_host
    probe_budget: int = 6  # discovery.probe_budget (issue 49, crawl/probes.py)
    links_fallback: int = 0  # discovery.links_fallback: pages walked without a sitemap
    coverage: int = 0  # discovery.coverage: K of the coverage check (crawl/cover.py)
    page_bytes: int = 2_097_152  # audit.max_page_bytes: of a page it samples, for the audit

    @classmethod
    def of(cls, cfg: Config) -> DiscoverySettings:
        """The settings in ``cfg``."""
        politeness = cfg.politeness
        return cls(
            fallback_paths=cfg.discovery.fallback_paths,
            user_agent=cfg.fetch.user_agent,
            max_robots_bytes=cfg.fetch.max_robots_bytes,
            max_crawl_delay=politeness.max_crawl_delay if politeness.respect_crawl_delay else None,
            cross_host=cfg.discovery.cross_host,
            probe_budget=cfg.discovery.probe_budget,
            links_fallback=cfg.discovery.links_fallback,
            coverage=cfg.discovery.coverage,
            page_bytes=cfg.audit.max_page_bytes,
        )

    def pace(self, slot: HostSlot, robots: RobotsTxt) -> None:
        """Slow ``slot`` down to robots.txt's Crawl-delay, if respected (capped)."""
        if robots.crawl_delay and self.max_crawl_delay is not None:
            slot.slow_down(min(robots.crawl_delay, self.max_crawl_delay))


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchSettings:
    """What a host's URL batch needs of the config (``of``), the same for every host."""

    dedupe: DedupeConfig  # the seen-set's mode and sizes
    max_urls: int  # limits.max_urls_per_host
    since: int | None  # output.since as epoch seconds (None: no --since)
    audit: bool  # audit.distribution: a sample of the lastmods for the distribution
    pages: Filters | None  # [filters] include/exclude on the locs (None: none)

    @classmethod
    def of(cls, cfg: Config) -> BatchSettings:
        """The settings in ``cfg`` (``output.since`` parsed, the filters compiled)."""
        filters = compile_filters(cfg.filters)
        return cls(
            dedupe=cfg.dedupe,
            max_urls=cfg.limits.max_urls_per_host,
            since=cfg.output.since_epoch,
            audit=cfg.audit.distribution,
            pages=filters if filters is not None and filters.pages else None,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class MemorySettings:
    """What a host's memory of earlier runs needs of the config (``of``)."""

    # audit.untrusted, audit.require_trust: whether an untrusted lastmod may filter URLs.
    untrusted: Literal["unverified", "hint"]
    require_trust: bool
    rediscover_after: float  # state.rediscover_after: seconds a discovery memory holds
    skip_unchanged_children: bool  # state.skip_unchanged_children
    max_children: int  # limits.max_children_per_index
    revisit: str = "all"  # state.revisit: due (adaptive, issue 53) | all
    max_revisit_interval: float = 604800.0  # state.max_revisit_interval, seconds

    @classmethod
    def of(cls, cfg: Config) -> MemorySettings:
        """The settings in ``cfg``."""
        return cls(
            untrusted=cfg.audit.untrusted,
            require_trust=cfg.audit.require_trust,
            rediscover_after=cfg.state.rediscover_after,
            skip_unchanged_children=cfg.state.skip_unchanged_children,
            max_children=cfg.limits.max_children_per_index,
            revisit=cfg.state.revisit,
            max_revisit_interval=cfg.state.max_revisit_interval,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class HostSettings:
    """What a host worker needs of the config, the same for every host of a shard."""

    fetch: FetchConfig
    reader: ReaderConfig
    limits: LimitsConfig
    discovery: DiscoverySettings
    batch: BatchSettings
    memory: MemorySettings
    normalizer: Normalizer  # the canonical form, its rules compiled once
    filters: Filters | None  # [filters] follow/skip_sitemap on children (None: none set)
    sitemap_log: bool  # output.sitemap_log: each sitemap's counts into the host report
    policy: PolicyConfig  # [policy]: robots.txt verdicts, AI/TDM signals (issue 48)

    @classmethod
    def of(cls, cfg: Config) -> HostSettings:
        """The settings in ``cfg`` (its patterns and rules compiled here, once)."""
        return cls(
            fetch=cfg.fetch,
            reader=cfg.reader,
            limits=cfg.limits,
            discovery=DiscoverySettings.of(cfg),
            batch=BatchSettings.of(cfg),
            memory=MemorySettings.of(cfg),
            normalizer=Normalizer(cfg.normalize),
            filters=compile_filters(cfg.filters),
            sitemap_log=cfg.output.sitemap_log,
            policy=cfg.policy,
        )
