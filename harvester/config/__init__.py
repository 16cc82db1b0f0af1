"""Configuration: one frozen ``Config`` built once from defaults < TOML file < CLI flags.

In: an optional TOML path and a flat ``{"section.key": value}`` override dict.
Out: a frozen, validated ``Config``. The section dataclasses' defaults are the only
defaults in the code base; ``config.example.toml`` mirrors them (a test keeps the
two equal). Unknown keys and ill-typed values raise ``ConfigError`` naming the
dotted key.

On the ground floor, beside errors, models, dates, compiled and version: every layer
may import it.

May import: nothing but the other modules of the ground floor. It checks request
options and parses dates with what the ground floor has (``requests.py``,
``harvester.dates``) rather than reaching up into the layers that use them.

This package's names below are the public surface (import them from
``harvester.config``); the modules behind them:

- ``crawl``: the sections of one host's crawl (reader, fetch, politeness,
  discovery, limits, filters) and ``split_nameserver``;
- ``urls``: the URL stage's sections (normalize, dedupe);
- ``run``: the run's sections (run, output, state, audit, distributed);
- ``checks``: the checks every section shares (numbers finite, >= 0, 64-bit; no NUL);
- ``requests``: the request options' checks (headers, cookies, proxy) and the allowlist;
- ``loader``: the root ``Config`` and ``load_config``.

Example::

    cfg = load_config("harvester.toml", {"fetch.user_agent": "mybot/1.0"})
    cfg.reader.max_decompressed_bytes  # 52428800
"""

from __future__ import annotations

from harvester.config.crawl import (
    DiscoveryConfig,
    FetchConfig,
    FiltersConfig,
    HostPolicy,
    LimitsConfig,
    PolitenessConfig,
    ReaderConfig,
    split_nameserver,
)
from harvester.config.loader import Config, load_config
from harvester.config.run import (
    AuditConfig,
    DistributedConfig,
    OutputConfig,
    RunConfig,
    StateConfig,
)
from harvester.config.urls import (
    DedupeConfig,
    NormalizeConfig,
    NormalizeOverride,
    NormalizeRules,
)

__all__ = [
    "AuditConfig",
    "Config",
    "DedupeConfig",
    "DiscoveryConfig",
    "DistributedConfig",
    "FetchConfig",
    "FiltersConfig",
    "HostPolicy",
    "LimitsConfig",
    "NormalizeConfig",
    "NormalizeOverride",
    "NormalizeRules",
    "OutputConfig",
    "PolitenessConfig",
    "ReaderConfig",
    "RunConfig",
    "StateConfig",
    "load_config",
    "split_nameserver",
]
