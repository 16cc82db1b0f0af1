"""State-file values: memory as JSON, wall-clock time, a ledger lastmod as records write it.

In: a memory value (discovery memory, index children, an audit verdict, samples),
a ledger lastmod in epoch seconds. Out: the bytes the state file stores
(``dump_json``, compressed when large) and the value again (``load_json``); the
lastmod as ISO 8601 UTC (``iso``); the wall-clock time the file stores (``now``).

Its own module: the writer (``store``, ``samples``), the worker's reader
(``ledger``), the removals and the crawl code all use these few helpers, and
none of them should import another for them.
"""

from __future__ import annotations

import os
import time
import zlib
from datetime import UTC, datetime
from typing import Any

import orjson

from harvester.dates import format_utc

__all__ = ["dump_json", "iso", "load_json", "now"]


def load_json(data: bytes | str | None) -> Any:
    """Decode a memory value written by ``dump_json``."""
    if data is None:
        return None
    if isinstance(data, bytes) and data[:1] == b"x":  # zlib-compressed (robots.txt bodies)
        data = zlib.decompress(data)
    return orjson.loads(data)


def dump_json(value: Any) -> bytes:
    """Encode a memory value for the state file (compressed when large)."""
    data = orjson.dumps(value)
    return zlib.compress(data) if len(data) > 512 else data


def iso(epoch: int | None) -> str | None:
    """A ledger lastmod (epoch seconds) as records write lastmods (``dates.format_utc``)."""
    return None if epoch is None else format_utc(datetime.fromtimestamp(epoch, UTC))


def now() -> float:
    """Wall-clock seconds (the state file stores wall time: runs span processes and days).

    For tests and benchmarks only: ``HARVESTER_CLOCK_OFFSET`` (seconds) is added, so a
    sequence of runs made one after another can stand for runs hours apart (adaptive
    revisit, docs/cron.md) without waiting.
    """
    return time.time() + _offset()


def _offset() -> float:
    try:
        return float(os.environ.get("HARVESTER_CLOCK_OFFSET", "0") or 0)
    except ValueError:
        return 0.0
