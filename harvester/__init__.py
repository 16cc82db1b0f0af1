"""harvester: find every URL a site publishes in its sitemaps, fast, politely, safely.

Public API (everything else is internal). Harvest hosts::

    import asyncio
    from harvester import harvest, load_config

    async def main() -> None:
        async for record in harvest(["example.com"], load_config()):
            print(record["loc"], record["lastmod"])

    asyncio.run(main())

Harvest into tables (pyarrow; pandas for ``to_pandas``), in a script or a notebook::

    import harvester
    urls, hosts = harvester.to_pandas(["example.com"], max_urls_per_host=10_000)

Read one sitemap from bytes::

    from harvester import SitemapReader, load_config
    reader = SitemapReader("https://example.com/sitemap.xml.gz", load_config().reader)
    for chunk in chunks:
        for entry in reader.feed(chunk):
            ...
    last_entries = reader.finish()
    result = reader.result()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvester.config import Config, load_config
from harvester.errors import (
    ConfigError,
    DecodeError,
    DecompressedTooLarge,
    FetchError,
    ForbiddenConstruct,
    HarvesterError,
    NotASitemap,
    ParseError,
)
from harvester.models import (
    Entry,
    Kind,
    ReadResult,
    ReadStats,
    SitemapChild,
    UrlEntry,
)
from harvester.version import __version__

if TYPE_CHECKING:
    from harvester.distributed.client import run_distributed
    from harvester.frames.tables import Tables, to_arrow, to_pandas
    from harvester.reader.sitemap import SitemapReader, read_bytes
    from harvester.run.pipeline import harvest

# The network and parsing layers (aiohttp, lxml) load on first use, so
# processes that only dispatch and write (the run's parent) stay small.
_LAZY = {
    "harvest": "harvester.run.pipeline",
    "SitemapReader": "harvester.reader.sitemap",
    "read_bytes": "harvester.reader.sitemap",
    # Dask is imported only by a distributed run (pip install "harvester-sitemaps[dask]").
    "run_distributed": "harvester.distributed.client",
    # pyarrow (and pandas) are imported by the call, not here.
    "Tables": "harvester.frames.tables",
    "to_arrow": "harvester.frames.tables",
    "to_pandas": "harvester.frames.tables",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harvester' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Config",
    "ConfigError",
    "DecodeError",
    "DecompressedTooLarge",
    "Entry",
    "FetchError",
    "ForbiddenConstruct",
    "HarvesterError",
    "Kind",
    "NotASitemap",
    "ParseError",
    "ReadResult",
    "ReadStats",
    "SitemapChild",
    "SitemapReader",
    "Tables",
    "UrlEntry",
    "__version__",
    "harvest",
    "load_config",
    "read_bytes",
    "run_distributed",
    "to_arrow",
    "to_pandas",
]
