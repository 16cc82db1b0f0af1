"""Config sections of one host's crawl: what is read, fetched, how politely, how far.

In: keyword values (the dataclass defaults are the only defaults; ``loader`` fills
them from TOML and flags). Out: the frozen ``ReaderConfig``, ``FetchConfig``,
``HostPolicy``, ``PolitenessConfig``, ``DiscoveryConfig``, ``LimitsConfig`` and
``FiltersConfig`` that ``harvester.reader`` and ``harvester.crawl`` take, each
validated in ``__post_init__`` (a ``ConfigError`` naming the key); and
``split_nameserver``, which ``fetch.nameservers`` and the resolver both parse with.
Its own module: the sections of the fetching side, apart from the URL and run ones.
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from harvester.config.checks import check_section
from harvester.config.requests import check_proxy, check_request_options, parse_allow
from harvester.errors import ConfigError
from harvester.version import __version__

__all__ = [
    "PROTOCOL_MAX_BYTES",
    "DiscoveryConfig",
    "FetchConfig",
    "FiltersConfig",
    "HostPolicy",
    "LimitsConfig",
    "PolitenessConfig",
    "ReaderConfig",
    "split_nameserver",
]

# sitemaps.org: 50 MiB uncompressed (its caps on entries and loc length: reader/entries.py)
PROTOCOL_MAX_BYTES = 52_428_800


@dataclass(frozen=True, slots=True, kw_only=True)
class ReaderConfig:
    """Caps of the streaming reader (decompress + parse), per document."""

    max_decompressed_bytes: int = PROTOCOL_MAX_BYTES
    max_entries_per_file: int = 1_000_000
    max_url_length: int = 8_192
    extensions: bool = True  # read image/video/news/hreflang data (False: URLs and dates only)

    def __post_init__(self) -> None:
        check_section(self, "reader")


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchConfig:
    """HTTP client settings (one aiohttp session per worker process)."""

    user_agent: str = f"harvester/{__version__} (+https://github.com/harvester/harvester)"
    connect_timeout: float = 10.0  # TCP connect plus TLS handshake
    # A host's first request: seconds from the request sent to the first response byte.
    first_byte_timeout: float = 10.0
    # Issue 51: a host whose first contact timed out (connect or first byte) gets one late,
    # patient attempt in the run, its first byte awaited this long (after an https connect
    # timeout, over plain http); 0: no late attempts (harvester.run.late).
    late_first_byte_timeout: float = 45.0
    # Late attempts of a worker at once (each mostly waits); 0: a sixteenth of the
    # descriptor limit, at most 512 (harvester.run.late.late_slots).
    late_slots: int = 0
    read_timeout: float = 30.0  # longest silence while reading a body
    # A body averaging fewer than min_speed bytes/s over min_speed_window seconds of waiting
    # for the network is aborted as too_slow (curl's --speed-limit/--speed-time); 0: off.
    min_speed: int = 1_024
    min_speed_window: float = 20.0
    total_timeout: float = 300.0  # per file, including retries' waits
    max_redirects: int = 5
    max_body_bytes: int = PROTOCOL_MAX_BYTES  # compressed bytes on the wire
    max_robots_bytes: int = 512_000
    retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    retry_after_max: float = 120.0  # longest Retry-After waited for; longer: host deferred
    proxy: str | None = None
    max_connections: int = 256
    # Response bodies read at once per worker: a response past them waits, its body unread,
    # holding no parser or decompressor. Memory follows the bodies being read, not the
    # hosts in flight (which admission lets grow while they wait on the network).
    max_bodies: int = 64
    dns_cache_ttl: int = 300  # longest a positive answer is cached (its record TTL if lower)
    dns_negative_ttl: float = 60.0  # seconds a "no such name" answer is cached
    dns_cache_size: int = 10_000  # names cached (positive and negative), least recent dropped
    dns_timeout: float = 5.0  # seconds per DNS try; one retry, then the lookup fails as dns
    resolver: Literal["async", "threaded"] = "async"  # async: aiodns (c-ares)
    nameservers: tuple[str, ...] = ()  # "ip" or "ip:port" ("[v6]:port"); () = the system's
    ca_bundle: str = ""  # PEM file of extra trusted CAs, on top of the system's (and SSL_CERT_FILE)
    # Seconds an idle pooled connection stays open. A host's connections close when the
    # host ends (Fetcher.end_host), so this serves hosts at work only: long enough for the
    # gaps between one host's requests under load (issue 51: 2-20 s).
    keepalive_timeout: float = 30.0
    chunk_size: int = 65_536
    # Issue 51: a host's next sitemap (both listed by an index or robots.txt) asked while
    # the current one is read, in the host's second concurrency slot (crawl.prefetch).
    prefetch: bool = True
    # SSRF guard (harvester.crawl.guard): refuse non-public peers unless allowed here.
    allow_private: bool = False
    allow: tuple[str, ...] = ()  # CIDR networks and host names allowed even when private
    # Issue 32: headers sent with every request (a host's own in politeness.hosts add to them).
    headers: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        check_section(self, "fetch")
        if any(c in self.user_agent for c in "\r\n"):
            # It is a header value: a line break would end the request's header there.
            raise ConfigError("must be one line (it is sent as a header)", key="fetch.user_agent")
        check_request_options(self.headers, {}, key="fetch")
        if any(name.lower() == "user-agent" for name in self.headers):
            raise ConfigError("User-Agent: set it with fetch.user_agent", key="fetch.headers")
        if self.proxy:
            check_proxy(self.proxy, key="fetch.proxy")
        if self.max_bodies < 1:
            raise ConfigError(
                "must be >= 1 (a body is read at a time at least)", key="fetch.max_bodies"
            )
        for name in ("connect_timeout", "first_byte_timeout", "read_timeout", "dns_timeout"):
            if not getattr(self, name) > 0:
                raise ConfigError("must be > 0", key=f"fetch.{name}")
        if not self.late_first_byte_timeout >= 0:
            raise ConfigError(
                "must be >= 0 (0: no late attempts)", key="fetch.late_first_byte_timeout"
            )
        if self.late_slots < 0:
            raise ConfigError("must be >= 0 (0: from the descriptor limit)", key="fetch.late_slots")
        if self.min_speed and not self.min_speed_window > 0:
            raise ConfigError("must be > 0 when min_speed is set", key="fetch.min_speed_window")
        if self.dns_cache_size < 1:
            raise ConfigError("must be >= 1", key="fetch.dns_cache_size")
        for i, server in enumerate(self.nameservers):
            try:
                split_nameserver(server)
            except ValueError as exc:
                raise ConfigError(str(exc), key=f"fetch.nameservers[{i}]") from None
        for i, entry in enumerate(self.allow):
            try:
                parse_allow((entry,))
            except ValueError as exc:
                raise ConfigError(str(exc), key=f"fetch.allow[{i}]") from None

    def __repr__(self) -> str:
        # Proxy URLs may carry credentials: never print them.
        proxy = "'***'" if self.proxy else "None"
        return f"FetchConfig(user_agent={self.user_agent!r}, proxy={proxy}, ...)"


@dataclass(frozen=True, slots=True, kw_only=True)
class HostPolicy:
    """Politeness for one host: concurrent requests and requests per second."""

    concurrency: int = 2
    rate: float = 2.0  # requests per second (aiolimiter leaky bucket)
    burst: int = 1
    # Issue 32, per host only (under [politeness.hosts."x"]): request headers and cookies
    # sent to this host alone (redirects elsewhere do not carry them), and TLS verification.
    headers: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}))
    cookies: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}))
    verify_tls: bool = True  # false: the host's certificate is not checked (reported loudly)

    def __post_init__(self) -> None:
        check_section(self, "politeness")
        for name in ("concurrency", "rate", "burst"):
            if not getattr(self, name) > 0:
                raise ConfigError("must be > 0", key=f"politeness.{name}")
        if not math.isfinite(self.burst / self.rate):
            # The limiter's period (burst / rate seconds) overflows: --rate 1e-320 divided
            # by zero in a worker. No host is meant to wait 1e300 years anyway.
            raise ConfigError(
                "is too small (burst / rate seconds must be finite)", key="politeness.rate"
            )
        check_request_options(self.headers, self.cookies, key="politeness")

    def __repr__(self) -> str:
        # Header and cookie values may be credentials (a token, a session): names only.
        headers = {name: "***" for name in self.headers}
        cookies = {name: "***" for name in self.cookies}
        return (
            f"HostPolicy(concurrency={self.concurrency}, rate={self.rate}, burst={self.burst},"
            f" headers={headers}, cookies={cookies}, verify_tls={self.verify_tls})"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PolitenessConfig:
    """Default per-host policy plus per-host overrides (keyed by host name)."""

    default: HostPolicy = field(default_factory=HostPolicy)
    hosts: MappingProxyType[str, HostPolicy] = field(default_factory=lambda: MappingProxyType({}))
    respect_crawl_delay: bool = True
    max_crawl_delay: float = 60.0  # a larger robots.txt Crawl-delay is capped to this

    def __post_init__(self) -> None:
        check_section(self, "politeness")
        if not self.default.verify_tls:
            raise ConfigError(
                'verify_tls = false may only be set per host, under [politeness.hosts."NAME"]',
                key="politeness.default",
            )

    def policy_for(self, host: str) -> HostPolicy:
        """Return the override for ``host`` if any, else the default policy."""
        return self.hosts.get(host, self.default)


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscoveryConfig:
    """Where to look for sitemaps and which children to follow."""

    fallback_paths: tuple[str, ...] = ("/sitemap.xml", "/sitemap_index.xml", "/sitemap.txt")
    cross_host: Literal["same-host", "same-site", "any"] = "same-site"
    # Issue 49: probes past fallback_paths (crawl/probes.toml) within this many requests per
    # host, and a links walk of up to links_fallback pages where no sitemap is found (0: off).
    probe_budget: int = 6
    links_fallback: int = 0
    coverage: int = 0  # the coverage check's K per host in a run (crawl/cover.py; 0: off)

    def __post_init__(self) -> None:
        check_section(self, "discovery")


@dataclass(frozen=True, slots=True, kw_only=True)
class LimitsConfig:
    """Per-host caps on the sitemap tree."""

    max_depth: int = 5
    max_sitemaps_per_host: int = 1_000
    max_urls_per_host: int = 10_000_000
    max_host_seconds: float = 3_600.0
    max_children_per_index: int = 50_000  # the protocol's limit; further children are skipped

    def __post_init__(self) -> None:
        check_section(self, "limits")


@dataclass(frozen=True, slots=True, kw_only=True)
class FiltersConfig:
    """Which page URLs are written and which index children fetched (``crawl.filters``).

    Python regular expressions, matched anywhere in the URL (``re.search``).
    """

    include: tuple[str, ...] = ()  # a page loc must match one of these (none: every loc)
    exclude: tuple[str, ...] = ()  # ...and none of these
    follow: tuple[str, ...] = ()  # an index child must match one of these (none: every child)
    skip_sitemap: tuple[str, ...] = ()  # ...and none of these

    def __post_init__(self) -> None:
        check_section(self, "filters")
        for name in ("include", "exclude", "follow", "skip_sitemap"):
            for i, pattern in enumerate(getattr(self, name)):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ConfigError(
                        f"{pattern!r} is not a regular expression: {exc}",
                        key=f"filters.{name}[{i}]",
                    ) from None


def split_nameserver(entry: str) -> tuple[str, int]:
    """``"ip"``, ``"ip:port"`` or ``"[v6]:port"`` → (ip, port); ValueError naming the entry.

    >>> split_nameserver("127.0.0.1:5353")
    ('127.0.0.1', 5353)
    >>> split_nameserver("::1")
    ('::1', 53)
    """
    text = entry.strip()
    host, port = text, "53"
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"{entry!r} is not an IP address with an optional :port")
        port = rest[1:] or "53"
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    try:
        ipaddress.ip_address(host)
        number = int(port)
    except ValueError:
        raise ValueError(f"{entry!r} is not an IP address with an optional :port") from None
    if not 0 < number < 65536:
        raise ValueError(f"{entry!r}: port out of range")
    return host, number
