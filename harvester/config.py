"""Configuration: one frozen ``Config`` built once from defaults < TOML file < CLI flags.

In: an optional TOML path and a flat ``{"section.key": value}`` override dict.
Out: a frozen, validated ``Config``. The dataclass defaults below are the only
defaults in the code base; ``config.example.toml`` mirrors them (a test keeps
the two equal). Unknown keys and ill-typed values raise ``ConfigError`` naming
the dotted key.

Example::

    cfg = load_config("harvester.toml", {"fetch.user_agent": "mybot/1.0"})
    cfg.reader.max_decompressed_bytes  # 52428800
"""

from __future__ import annotations

import copyreg
import dataclasses
import ipaddress
import re
import tomllib
import types
import typing
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from harvester import __version__
from harvester.crawl.guard import parse_allow
from harvester.crawl.headers import check_proxy, check_request_options
from harvester.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

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


def _frozen_mapping(items: dict[str, Any]) -> MappingProxyType[str, Any]:
    """Rebuild a pickled MappingProxyType (see the copyreg registration below)."""
    return MappingProxyType(items)


# MappingProxyType (our frozen per-host overrides) cannot be pickled by default, and
# the config travels to worker processes: pickle it as the dict it wraps.
copyreg.pickle(MappingProxyType, lambda m: (_frozen_mapping, (dict(m),)))

PROTOCOL_MAX_BYTES = 52_428_800  # sitemaps.org: 50 MiB uncompressed
PROTOCOL_MAX_ENTRIES = 50_000
PROTOCOL_MAX_LOC = 2_048


@dataclass(frozen=True, slots=True, kw_only=True)
class ReaderConfig:
    """Caps of the streaming reader (decompress + parse), per document."""

    max_decompressed_bytes: int = PROTOCOL_MAX_BYTES
    max_entries_per_file: int = 1_000_000
    max_url_length: int = 8_192
    extensions: bool = True  # read image/video/news/hreflang data (False: URLs and dates only)

    def __post_init__(self) -> None:
        _positive(self, "reader")


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchConfig:
    """HTTP client settings (one aiohttp session per worker process)."""

    user_agent: str = f"harvester/{__version__} (+https://github.com/harvester/harvester)"
    connect_timeout: float = 10.0  # TCP connect plus TLS handshake
    # A host's first request: seconds from the request sent to the first response byte.
    first_byte_timeout: float = 10.0
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
    keepalive_timeout: float = 2.0  # seconds an idle pooled connection stays open
    chunk_size: int = 65_536
    # SSRF guard (harvester.crawl.guard): refuse non-public peers unless allowed here.
    allow_private: bool = False
    allow: tuple[str, ...] = ()  # CIDR networks and host names allowed even when private
    # Issue 32: headers sent with every request (a host's own in politeness.hosts add to them).
    headers: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        _positive(self, "fetch")
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
        for name in ("concurrency", "rate", "burst"):
            if getattr(self, name) <= 0:
                raise ConfigError("must be > 0", key=f"politeness.{name}")
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
        _positive(self, "politeness")
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


@dataclass(frozen=True, slots=True, kw_only=True)
class LimitsConfig:
    """Per-host caps on the sitemap tree."""

    max_depth: int = 5
    max_sitemaps_per_host: int = 1_000
    max_urls_per_host: int = 10_000_000
    max_host_seconds: float = 3_600.0
    max_children_per_index: int = 50_000  # the protocol's limit; further children are skipped

    def __post_init__(self) -> None:
        _positive(self, "limits")


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
        _positive(self, "dedupe")
        for name in ("spill_threshold", "cross_host_spill_threshold", "bloom_capacity"):
            if getattr(self, name) <= 0:
                raise ConfigError("must be > 0", key=f"dedupe.{name}")
        if not 0 < self.bloom_error_rate < 1:
            raise ConfigError("must be between 0 and 1", key="dedupe.bloom_error_rate")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    """Process and concurrency shape of a run."""

    workers: int = 0  # 0 = one per CPU
    # Most hosts harvested at once per worker (0 = auto: what the descriptor limit allows
    # beside fetch.max_connections); fewer while memory or CPU say so (run.admission).
    hosts_in_flight: int = 0
    memory_budget: int = 536_870_912  # bytes of RSS per worker beyond which no host is added
    max_loop_lag: float = 0.1  # seconds of event loop lag beyond which no host is added (0: off)
    # Share of wall time a worker's event loop runs or waits for a core from which no
    # host is added, and, sustained, hosts drain (0: off): past it more hosts add memory.
    max_cpu: float = 0.9
    queue_size: int = 256
    uvloop: bool = True  # use uvloop when installed
    shutdown_grace: float = 10.0  # seconds in-flight hosts get to finish after SIGINT/SIGTERM

    def __post_init__(self) -> None:
        _positive(self, "run")
        if self.max_cpu > 1:
            raise ConfigError("must be between 0 and 1 (a share of the CPU)", key="run.max_cpu")


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputConfig:
    """Where records and the report go, and which records."""

    # jsonl | csv | parquet; "" = from the output's extension (.jsonl, .csv, .parquet), else jsonl
    format: Literal["", "jsonl", "csv", "parquet"] = ""
    report: str | None = None  # default: <output>.report.json
    emit: Literal["all", "new", "changed", "delta"] = "all"  # delta: new, changed and removed
    since: str = ""  # ISO date: only URLs with a later lastmod, plus undated ones labelled
    # Issue 32 (seeing a site): each host report's sitemap tree (``sitemap_log``; always on
    # in ``harvester tree``), and an HTML page of the run report beside the output.
    sitemap_log: bool = False
    html_report: bool = False
    row_group_rows: int = 65_536  # Parquet: rows per row group (memory: about one is buffered)

    def __post_init__(self) -> None:
        if self.row_group_rows < 1:
            raise ConfigError("must be >= 1", key="output.row_group_rows")
        if self.since and self.since_epoch is None:
            raise ConfigError(
                f"{self.since!r} is not a W3C date (YYYY-MM-DD[Thh:mm:ssZ])", key="output.since"
            )

    @property
    def since_epoch(self) -> int | None:
        """``since`` as UTC epoch seconds (None when unset or unparseable)."""
        from harvester.reader.dates import parse_lastmod

        if not self.since:
            return None
        when, _quality = parse_lastmod(self.since.strip())
        return None if when is None else int(when.timestamp())


@dataclass(frozen=True, slots=True, kw_only=True)
class StateConfig:
    """The SQLite state file of incremental runs (``harvester.state.store``)."""

    enabled: bool = True  # off: no state, every run downloads and emits everything
    path: str = ""  # "" = beside the output: OUTPUT.state.sqlite (none for stdout)
    resume: bool = True  # continue an unfinished run (crash, kill -9, Ctrl-C) of this state
    rediscover_after: float = 86400.0  # seconds a host's discovery memory is trusted
    skip_unchanged_children: bool = False  # skip index children whose index lastmod is unchanged
    commit_interval: float = 2.0  # seconds between commits (each fsyncs the output)


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditConfig:
    """The lastmod audit (``harvester.audit.distribution``, ``harvester.audit.verify``)."""

    distribution: bool = True  # per-host lastmod distribution verdict in every run's report
    sample: int = 0  # pages per host to verify after each run (0: only `harvester audit`)
    max_page_bytes: int = 2_097_152  # bytes of a sampled page read (the rest is not needed)
    # Hosts whose lastmod is not trusted: "unverified" = their URLs are labelled and not
    # filtered by lastmod (--since, --emit changed/delta); "hint" = use it anyway.
    untrusted: Literal["unverified", "hint"] = "unverified"
    require_trust: bool = False  # true: a host without enough evidence counts as untrusted


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
        for name in ("include", "exclude", "follow", "skip_sitemap"):
            for i, pattern in enumerate(getattr(self, name)):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ConfigError(
                        f"{pattern!r} is not a regular expression: {exc}",
                        key=f"filters.{name}[{i}]",
                    ) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class DistributedConfig:
    """Shards on Dask distributed (``harvester run --scheduler``; harvester.distributed)."""

    scheduler: str = ""  # "" = this machine's process pool; local, local:N or tcp://HOST:PORT
    scheduler_file: str = ""  # a Dask scheduler file (instead of ``scheduler``)
    shards: int = 0  # 0 = 4 per Dask worker on an output dir's first run, then what it stored
    shard_by: Literal["host", "domain"] = "host"  # domain: a site's subdomains share a shard
    shard_retries: int = 2  # times a shard task that raised is run again
    # --scheduler local: where its cluster serves Dask's dashboard ("" = none). Loopback:
    # the cluster is this machine's; Dask takes another port when this one is taken.
    dashboard_address: str = "127.0.0.1:8787"

    def __post_init__(self) -> None:
        _positive(self, "distributed")


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """The whole configuration; frozen after ``load_config``."""

    reader: ReaderConfig = field(default_factory=ReaderConfig)
    fetch: FetchConfig = field(default_factory=FetchConfig)
    politeness: PolitenessConfig = field(default_factory=PolitenessConfig)
    discovery: DiscoveryConfig = field(default_factory=DiscoveryConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    normalize: NormalizeConfig = field(default_factory=NormalizeConfig)
    dedupe: DedupeConfig = field(default_factory=DedupeConfig)
    run: RunConfig = field(default_factory=RunConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    state: StateConfig = field(default_factory=StateConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    filters: FiltersConfig = field(default_factory=FiltersConfig)  # issue 32
    distributed: DistributedConfig = field(default_factory=DistributedConfig)


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


def _positive(obj: object, section: str) -> None:
    """Reject negative numbers in any numeric field of a config section.

    The key names the field within ``section``; ``load_config`` replaces it
    with the full dotted path (e.g. ``politeness.hosts.'a.com'.rate``).
    """
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            raise ConfigError("must be >= 0", key=f"{section}.{f.name}")


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Build the frozen ``Config``: defaults < TOML at ``path`` < ``overrides``.

    ``overrides`` maps dotted keys (``"fetch.user_agent"``) to already-typed
    values, as the CLI produces them. Raises ``ConfigError`` naming the key.
    """
    data: dict[str, Any] = {}
    if path is not None:
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"invalid TOML in {path}: {exc}") from exc
    for dotted, value in (overrides or {}).items():
        *parents, leaf = dotted.split(".")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        if isinstance(value, dict) and isinstance(node.get(leaf), dict):
            value = {**node[leaf], **value}  # a table flag (--header) adds to the file's table
        node[leaf] = value
    cfg: Config = _build(Config, data, "")
    return cfg


def _build(cls: type[Any], data: Any, prefix: str) -> Any:
    """Instantiate dataclass ``cls`` from a TOML table, checking keys and types."""
    if not isinstance(data, dict):
        raise ConfigError("must be a table", key=prefix or "<root>")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        key = f"{prefix}.{unknown[0]}" if prefix else unknown[0]
        raise ConfigError(f"unknown key (known: {', '.join(sorted(names))})", key=key)
    kwargs: dict[str, Any] = {}
    for name, raw in data.items():
        key = f"{prefix}.{name}" if prefix else name
        kwargs[name] = _coerce(hints[name], raw, key)
    try:
        return cls(**kwargs)
    except ConfigError as exc:
        field_name = (exc.key or "").rpartition(".")[2]
        full = f"{prefix}.{field_name}" if prefix else field_name
        raise ConfigError(exc.message.partition(": ")[2] or exc.message, key=full) from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc), key=prefix or "<root>") from exc


def _coerce(tp: Any, raw: Any, key: str) -> Any:
    """Check/convert one TOML value against the annotated type ``tp``."""
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return _build(tp, raw, key)  # type: ignore[arg-type]
    if origin is MappingProxyType:
        _, value_tp = typing.get_args(tp)
        if not isinstance(raw, dict):
            raise ConfigError("must be a table", key=key)
        return MappingProxyType(
            {str(k): _coerce(value_tp, v, f"{key}.{k!r}") for k, v in raw.items()}
        )
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(tp)
        if raw is None and type(None) in args:
            return None
        non_none = [a for a in args if a is not type(None)]
        return _coerce(non_none[0], raw, key)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if raw not in allowed:
            raise ConfigError(f"must be one of {', '.join(map(repr, allowed))}", key=key)
        return raw
    if origin is tuple:
        (item_tp, *_) = typing.get_args(tp)
        if not isinstance(raw, list | tuple):
            raise ConfigError("must be a list", key=key)
        return tuple(_coerce(item_tp, v, f"{key}[{i}]") for i, v in enumerate(raw))
    if tp is bool:
        if not isinstance(raw, bool):
            raise ConfigError("must be true or false", key=key)
        return raw
    if tp is int:
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise ConfigError("must be an integer", key=key)
        return raw
    if tp is float:
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise ConfigError("must be a number", key=key)
        return float(raw)
    if tp is str:
        if not isinstance(raw, str):
            raise ConfigError("must be a string", key=key)
        return raw
    raise ConfigError(f"unsupported type {tp!r}", key=key)  # pragma: no cover
