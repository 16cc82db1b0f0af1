"""Config sections of the URL stage: canonicalization rules and the seen-set.

In: keyword values (the dataclass defaults are the only defaults; ``loader`` fills
them from TOML and flags). Out: the frozen ``NormalizeRules``, ``NormalizeOverride``,
``NormalizeConfig`` (``harvester.urls.normalize``) and ``DedupeConfig``
(``harvester.urls.dedupe``, ``crosshost``, the distributed merge), validated in
``__post_init__`` (a ``ConfigError`` naming the key). Its own module: the sections
``harvester.urls`` takes, apart from the fetching and run ones.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from harvester.config.checks import check_section
from harvester.errors import ConfigError

__all__ = [
    "DedupeConfig",
    "NormalizeConfig",
    "NormalizeOverride",
    "NormalizeRules",
    "bloom_bytes",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class NormalizeRules:
    """One set of URL canonicalization rules (``harvester.urls.normalize`` applies them)."""

    sort_query: bool = True
    # Removed from queries; case-insensitive, '*' as a trailing wildcard.
    tracking_params: tuple[str, ...] = ("utm_*", "fbclid", "gclid", "msclkid")
    # Removed from queries and from ';name=value' path parameters.
    session_params: tuple[str, ...] = ("jsessionid", "phpsessid", "sessionid")
    keep_hashbang: bool = True  # keep '#!' routes (every other fragment is dropped)
    strip_trailing_slash: bool = False  # '/a/' -> '/a' (off: it can change the page)

    def __post_init__(self) -> None:
        check_section(self, "normalize")
        for name in ("tracking_params", "session_params"):
            for pattern in getattr(self, name):
                if not pattern or "*" in pattern[:-1] or pattern == "*":
                    raise ConfigError(
                        f"bad parameter pattern {pattern!r} ('*' only as a suffix)",
                        key=f"normalize.{name}",
                    )


@dataclass(frozen=True, slots=True, kw_only=True)
class NormalizeOverride:
    """Per-host changes to the ``[normalize]`` rules; a key left out inherits them."""

    sort_query: bool | None = None
    tracking_params: tuple[str, ...] | None = None
    session_params: tuple[str, ...] | None = None
    keep_hashbang: bool | None = None
    strip_trailing_slash: bool | None = None

    def __post_init__(self) -> None:
        check_section(self, "normalize")


@dataclass(frozen=True, slots=True, kw_only=True)
class NormalizeConfig(NormalizeRules):
    """Default canonicalization rules plus per-host overrides (keyed by host name)."""

    hosts: MappingProxyType[str, NormalizeOverride] = field(
        default_factory=lambda: MappingProxyType({})
    )

    def rules_for(self, host: str) -> NormalizeRules:
        """The rules for ``host``: the defaults with its override's keys applied."""
        base = {f.name: getattr(self, f.name) for f in dataclasses.fields(NormalizeRules)}
        override = self.hosts.get(host)
        if override is not None:
            for f in dataclasses.fields(override):
                value = getattr(override, f.name)
                if value is not None:
                    base[f.name] = value
        return NormalizeRules(**base)


@dataclass(frozen=True, slots=True, kw_only=True)
class DedupeConfig:
    """The per-host seen-set (``harvester.urls.dedupe.SeenSet``)."""

    mode: Literal["exact", "bloom"] = "exact"  # bloom may drop new URLs (false positives)
    spill_threshold: int = 20_000_000  # fingerprints in memory per host before spilling to disk
    # The writer's run-wide set for cross-host duplicates grows with every URL of the run:
    # it spills sooner, so the writer's memory does not grow with the number of hosts.
    # A hash table (dedupe's table mode) of 2**21 slots holds 1.5 million: 16 MB.
    cross_host_spill_threshold: int = 1_500_000
    bloom_capacity: int = 100_000_000  # URLs per host the Bloom filter is sized for
    bloom_error_rate: float = 0.000001  # its false-positive rate at capacity

    def __post_init__(self) -> None:
        check_section(self, "dedupe")
        for name in ("spill_threshold", "cross_host_spill_threshold", "bloom_capacity"):
            if getattr(self, name) <= 0:
                raise ConfigError("must be > 0", key=f"dedupe.{name}")
        if not 0 < self.bloom_error_rate < 1:
            raise ConfigError("must be between 0 and 1", key="dedupe.bloom_error_rate")
        if self.mode == "bloom":
            self._check_bloom_size()

    def _check_bloom_size(self) -> None:
        """A Bloom filter is allocated whole when a host starts: one larger than this
        machine's memory aborted the worker (rbloom cannot allocate it, and says so by
        ending the process). Refuse it here, naming the key."""
        size = bloom_bytes(self.bloom_capacity, self.bloom_error_rate)
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        if size > memory:
            raise ConfigError(
                f"a Bloom filter for {self.bloom_capacity} URLs at {self.bloom_error_rate:g}"
                f" takes {size / 2**30:.1f} GiB per host, more than this machine's"
                f" {memory / 2**30:.1f} GiB (lower bloom_capacity or raise bloom_error_rate)",
                key="dedupe.bloom_capacity",
            )


def bloom_bytes(capacity: int, error_rate: float) -> int:
    """Bytes of a Bloom filter for ``capacity`` items at ``error_rate`` false positives
    (``-n ln p / ln(2)**2`` bits, as rbloom sizes it).

    >>> bloom_bytes(100_000_000, 1e-6) // 2**20
    342
    """
    return math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2 / 8)
