"""Config sections of a run: processes, output, state, audit and distribution.

In: keyword values (the dataclass defaults are the only defaults; ``loader`` fills
them from TOML and flags). Out: the frozen ``RunConfig`` (``harvester.run``),
``OutputConfig`` (formats, reports, ``--emit``/``--since``), ``StateConfig``
(``harvester.state``), ``AuditConfig`` (``harvester.audit``) and
``DistributedConfig`` (``harvester.distributed``), validated in ``__post_init__``
(a ``ConfigError`` naming the key). Its own module: the sections of the run around
the crawl, apart from the fetching and URL ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harvester.config.checks import check_section
from harvester.errors import ConfigError

__all__ = [
    "MAX_WORKERS",
    "AuditConfig",
    "DistributedConfig",
    "OutputConfig",
    "RunConfig",
    "StateConfig",
]

MAX_WORKERS = 4096  # run.workers: worker processes on one machine at most


@dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    """Process and concurrency shape of a run."""

    workers: int = 0  # 0 = one per CPU; at most MAX_WORKERS
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
    # Issue 51 (docs/scheduling.md): up to `lookahead` upcoming seeds per worker held, the
    # robots.txt of up to `lookahead_results` of them read ahead of admission,
    # `lookahead_probes` at a time, and the hosts with the longest predicted politeness
    # chains admitted first (0: input order, no read-ahead).
    lookahead: int = 16384
    lookahead_results: int = 1024
    lookahead_probes: int = 64

    def __post_init__(self) -> None:
        check_section(self, "run")
        if self.workers > MAX_WORKERS:
            # The pool holds one object a worker before it starts any: 10 million took
            # 2.4 GB and half a minute, 2**63 never ended.
            raise ConfigError(f"must be at most {MAX_WORKERS} (processes)", key="run.workers")
        if self.lookahead and not self.lookahead_probes:
            raise ConfigError("must be >= 1 with run.lookahead on", key="run.lookahead_probes")
        if self.lookahead and self.lookahead_results < 1:
            raise ConfigError("must be >= 1 with run.lookahead on", key="run.lookahead_results")
        if self.max_cpu > 1:
            raise ConfigError("must be between 0 and 1 (a share of the CPU)", key="run.max_cpu")


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputConfig:
    """Where records and the report go, and which records."""

    # jsonl | csv | parquet; "" = from the output's extension (.jsonl, .csv, .parquet), else jsonl
    format: Literal["", "jsonl", "csv", "parquet"] = ""
    report: str | None = None  # default: <output>.report.json
    # delta: new, changed and removed; unverified: see docs/cron.md
    emit: Literal["all", "new", "changed", "delta", "unverified", "delta,unverified"] = "all"
    since: str = ""  # ISO date: only URLs with a later lastmod, plus undated ones labelled
    # Issue 32 (seeing a site): each host report's sitemap tree (``sitemap_log``; always on
    # in ``harvester tree``), and an HTML page of the run report beside the output.
    sitemap_log: bool = False
    html_report: bool = False
    row_group_rows: int = 65_536  # Parquet: rows per row group (memory: about one is buffered)

    def __post_init__(self) -> None:
        check_section(self, "output")
        if self.row_group_rows < 1:
            raise ConfigError("must be >= 1", key="output.row_group_rows")
        if self.since and self.since_epoch is None:
            raise ConfigError(
                f"{self.since!r} is not a W3C date (YYYY-MM-DD[Thh:mm:ssZ])", key="output.since"
            )

    @property
    def since_epoch(self) -> int | None:
        """``since`` as UTC epoch seconds (None when unset or unparseable)."""
        from harvester.dates import parse_lastmod

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
    # Issue 53 item 4, adaptive revisit (docs/cron.md): "due" asks a sitemap read before
    # only once its interval has passed (doubling while it stays unchanged, at most
    # max_revisit_interval seconds); "all" asks every one on every run.
    revisit: Literal["due", "all"] = "due"
    max_revisit_interval: float = 604800.0

    def __post_init__(self) -> None:
        check_section(self, "state")


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditConfig:
    """The lastmod audit (``harvester.audit.distribution``, ``harvester.run.verify``)."""

    distribution: bool = True  # per-host lastmod distribution verdict in every run's report
    sample: int = 0  # pages per host to verify after each run (0: only `harvester audit`)
    max_page_bytes: int = 2_097_152  # bytes of a sampled page read (the rest is not needed)
    # Hosts whose lastmod is not trusted: "unverified" = their URLs are labelled and not
    # filtered by lastmod (--since, --emit changed/delta); "hint" = use it anyway.
    untrusted: Literal["unverified", "hint"] = "unverified"
    require_trust: bool = False  # true: a host without enough evidence counts as untrusted

    def __post_init__(self) -> None:
        check_section(self, "audit")


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
        check_section(self, "distributed")
