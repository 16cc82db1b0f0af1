"""What harvesting one host needs of the run's config, read once per shard.

In: the run's ``Config``. Out: ``HostSettings`` (``HostSettings.of(cfg)``), which a
shard builds once and hands to each ``HostWorker``; each of its parts is one
component's own input, so a component's signature says what it reads:

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
from typing import TYPE_CHECKING

from harvester.crawl.batch import BatchSettings
from harvester.crawl.discovery import DiscoverySettings
from harvester.crawl.filters import compile_filters
from harvester.crawl.incremental import MemorySettings
from harvester.urls.normalize import Normalizer

if TYPE_CHECKING:
    from harvester.config import Config, FetchConfig, LimitsConfig, ReaderConfig
    from harvester.crawl.filters import Filters

__all__ = ["HostSettings"]


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
        )
