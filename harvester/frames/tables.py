"""Harvest into tables: ``to_arrow(domains, **options)`` and ``to_pandas(...)``.

In: domains (input lines, as in a domains file), keyword options for the common
settings (``OPTIONS``: ``allow_private``, ``rate``, ``max_urls_per_host``,
``timeout``, ...), optionally a ``Config`` or a TOML path underneath them.
Out: ``Tables(urls, hosts)``: the records with the Parquet output's schema
(``output.parquetsink.SCHEMA``: ``lastmod`` a UTC timestamp, nested images,
videos, news), and one row per host from its report (``HOSTS``). pandas gets
the same two as DataFrames (``lastmod`` ``datetime64[us, UTC]``).

The harvest runs in this process (``run.pipeline.harvest``, one event loop, no
worker processes): when the caller's thread already runs an event loop (a
Jupyter kernel), on a thread of its own with its own loop, so the same call
works in a notebook and in a script. Records are converted a block at a time
by pyarrow's JSON reader, so the Python dicts of a whole run are never held.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from harvester.config import Config, load_config
from harvester.errors import ConfigError
from harvester.version import install_hint

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from aiohttp.abc import AbstractResolver

__all__ = ["OPTIONS", "Tables", "to_arrow", "to_pandas"]

# Keyword option → its config key (config.example.toml documents each), the CLI's flags'.
OPTIONS: dict[str, str] = {
    "allow_private": "fetch.allow_private",
    "user_agent": "fetch.user_agent",
    "timeout": "fetch.total_timeout",
    "retries": "fetch.retries",
    "rate": "politeness.default.rate",
    "concurrency": "politeness.default.concurrency",
    "max_urls_per_host": "limits.max_urls_per_host",
    "max_sitemaps_per_host": "limits.max_sitemaps_per_host",
    "max_depth": "limits.max_depth",
    "host_timeout": "limits.max_host_seconds",
    "cross_host": "discovery.cross_host",
    "hosts_in_flight": "run.hosts_in_flight",
    "coverage": "discovery.coverage",  # issue 49: the coverage check's K (the hosts' columns)
    # What the site allows (issue 48): the urls table's robots / tdm_reserved columns.
    "verdicts": "policy.verdicts",
    "respect_robots": "policy.respect_robots",
    "tdmrep": "policy.tdmrep",
}

_BLOCK = 20_000  # records converted at once: a few MB of JSON


class Tables(NamedTuple):
    """What ``to_arrow`` / ``to_pandas`` return: ``urls, hosts = to_arrow([...])``."""

    urls: Any  # pyarrow.Table or pandas.DataFrame: one row per URL
    hosts: Any  # ...: one row per host (its report)


def config_for(
    config: Config | str | Path | None, options: dict[str, Any], overrides: dict[str, Any] | None
) -> Config:
    """The run's ``Config``: defaults (or the TOML at ``config``) < ``overrides`` (dotted
    keys) < keyword ``options``. Raises ``ConfigError`` for an unknown option or bad value."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ConfigError(
            f"unknown option {unknown[0]!r}: one of {', '.join(sorted(OPTIONS))}"
            " (or overrides={'section.key': value})",
            key=unknown[0],
        )
    dotted = dict(overrides or {})
    dotted.update({OPTIONS[name]: value for name, value in options.items() if value is not None})
    # uvloop is the CLI's choice for its own loop; here the loop is asyncio's.
    dotted.setdefault("run.uvloop", False)
    if not isinstance(config, Config):
        return load_config(config, dotted)
    checked = load_config(None, dotted)  # each value checked and typed as from a file
    out: Config = config
    for key in dotted:
        path = key.split(".")
        out = _set(out, path, _get(checked, path))
    return out


def _get(obj: Any, path: list[str]) -> Any:
    for name in path:
        obj = getattr(obj, name)
    return obj


def _set(obj: Any, path: list[str], value: Any) -> Any:
    """Frozen ``obj`` with the field at ``path`` (dotted key's parts) set to ``value``."""
    head, *rest = path
    return dataclasses.replace(
        obj, **{head: _set(getattr(obj, head), rest, value) if rest else value}
    )


def to_arrow(
    domains: Iterable[str],
    *,
    config: Config | str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    resolver: AbstractResolver | None = None,
    **options: Any,
) -> Tables:
    """Harvest ``domains``; return ``Tables(urls, hosts)`` as two ``pyarrow.Table``.

    ``options``: ``OPTIONS``' keywords (``allow_private=True``, ``rate=5``, ...);
    ``config``: a ``Config`` or TOML path under them; ``overrides``: any other
    setting by dotted key. Needs pyarrow (the ``parquet`` extra).

    Example::

        urls, hosts = harvester.to_arrow(["example.com"], max_urls_per_host=10_000)
    """
    pa = _pyarrow()
    cfg = config_for(config, options, overrides)
    return _in_own_loop(_collect(list(domains), cfg, resolver, pa))


def to_pandas(
    domains: Iterable[str],
    *,
    config: Config | str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    resolver: AbstractResolver | None = None,
    **options: Any,
) -> Tables:
    """``to_arrow``'s two tables as ``pandas.DataFrame`` (``lastmod`` in UTC).

    Example::

        urls, hosts = harvester.to_pandas(["example.com"])
        urls.set_index("lastmod").resample("MS").size()
    """
    import importlib.util

    if importlib.util.find_spec("pandas") is None:  # say so before harvesting, not after
        raise ImportError("to_pandas needs pandas: pip install pandas")
    tables = to_arrow(domains, config=config, overrides=overrides, resolver=resolver, **options)
    return Tables(tables.urls.to_pandas(), tables.hosts.to_pandas())


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError as exc:
        raise ImportError(f"to_arrow needs pyarrow ({exc}): {install_hint('parquet')}") from exc
    return pyarrow


def _in_own_loop(coro: Any) -> Tables:
    """Run ``coro`` to completion: here when no loop runs in this thread, else on a
    thread of its own (a notebook's loop is busy running the cell that called us)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        result: Tables = asyncio.run(coro)
        return result
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="harvester") as pool:
        tables: Tables = pool.submit(asyncio.run, coro).result()
    return tables


async def _collect(
    domains: list[str], cfg: Config, resolver: AbstractResolver | None, pa: Any
) -> Tables:
    """Harvest in this loop; records to Arrow a block at a time, host reports to rows."""
    from harvester.frames.hosts import hosts_table
    from harvester.output.parquetsink import SCHEMA
    from harvester.run.pipeline import harvest

    reader = _JsonBlocks(pa, SCHEMA)
    reports: list[dict[str, Any]] = []
    block: list[bytes] = []
    async for record in harvest(domains, cfg, resolver=resolver, on_host=reports.append):
        block.append(_line(record))
        if len(block) >= _BLOCK:
            reader.add(block)
            block = []
    reader.add(block)
    return Tables(reader.table(), hosts_table(pa, reports))


def _line(record: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(record) + b"\n"
    except TypeError:  # a lone surrogate (no UTF-8 carries one): replaced, as Parquet does
        return json.dumps(record, ensure_ascii=False).encode("utf-8", "replace") + b"\n"


class _JsonBlocks:
    """JSON lines → Arrow tables of the Parquet output's schema (``SCHEMA``)."""

    def __init__(self, pa: Any, schema: Any) -> None:
        import pyarrow.json as pj

        self._pa, self._pj, self._schema = pa, pj, schema
        # The JSON reader cannot build dictionaries: those columns are read as strings.
        read = [
            pa.field(f.name, pa.string()) if pa.types.is_dictionary(f.type) else f for f in schema
        ]
        self._options = pj.ParseOptions(
            explicit_schema=pa.schema(read), unexpected_field_behavior="ignore"
        )
        self._tables: list[Any] = []

    def add(self, lines: list[bytes]) -> None:
        if lines:
            data = b"".join(lines)
            self._tables.append(
                self._pj.read_json(
                    self._pa.BufferReader(data),
                    read_options=self._pj.ReadOptions(block_size=len(data) + 1),
                    parse_options=self._options,
                )
            )

    def table(self) -> Any:
        pa = self._pa
        if not self._tables:
            return self._schema.empty_table()
        table = pa.concat_tables(self._tables)
        return table.cast(self._schema)  # event, since: dictionary-encoded as in Parquet
