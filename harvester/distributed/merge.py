"""Reading a distributed run's committed output: merge, cross-host count, run report.

In: an output directory (its ``Layout``) and the manifests of the run. Out:
``merge`` (one JSON Lines file, shards in manifest order: ``harvester merge``),
``cross_host`` (per host, URLs an earlier host had listed, streaming over the
committed records) and ``combine`` (the shards' run reports summed into one).

Only files a manifest names are read: a killed attempt's leftovers never count.
"""

from __future__ import annotations

import os
from array import array
from typing import TYPE_CHECKING, Any

import orjson

from harvester.distributed.manifest import committed
from harvester.errors import InputError
from harvester.run.sink import JsonlSink
from harvester.urls.crosshost import CrossHostTracker
from harvester.urls.dedupe import fingerprint

if TYPE_CHECKING:
    from collections.abc import Iterator

    from harvester.config import DedupeConfig
    from harvester.distributed.layout import Layout
    from harvester.run.report import RunReport

__all__ = ["combine", "committed_files", "cross_host", "merge"]

_COPY = 1 << 20  # bytes per read while concatenating


def committed_files(layout: Layout) -> list[str]:
    """The records files of the run's committed shards, in shard (manifest) order."""
    return [
        os.path.join(layout.shard_dir(shard), manifest["records"])
        for shard, manifest in committed(layout)
    ]


def merge(layout: Layout, output: str) -> int:
    """Concatenate the committed records into ``output`` ('-' = stdout); return bytes.

    Raises ``InputError`` when the run has not finished (no ``_SUCCESS``): its
    shards are not all committed yet.
    """
    if not os.path.exists(layout.success_path):
        raise InputError(
            f"{layout.root}: run {layout.run} has not finished (no _SUCCESS); merge it after"
        )
    sink = JsonlSink(output)
    try:
        for path in committed_files(layout):
            with open(path, "rb") as fh:
                while lines := fh.readlines(_COPY):  # whole lines, about _COPY bytes
                    sink.write(b"".join(lines), len(lines))
    except BaseException:
        sink.close(complete=False)
        raise
    sink.close(complete=True)
    return sink.bytes


def _records(path: str) -> Iterator[dict[str, Any]]:
    with open(path, "rb") as fh:
        for line in fh:
            record: dict[str, Any] = orjson.loads(line)
            yield record


def cross_host(layout: Layout, cfg: DedupeConfig) -> dict[str, int]:
    """Per host, how many of its emitted URLs an earlier host had listed (hosts with one
    or more), over the committed records in shard order (``removed`` records aside).
    """
    tracker = CrossHostTracker(cfg)
    counts: dict[str, int] = {}
    try:
        for path in committed_files(layout):
            for record in _records(path):
                if record.get("event") == "removed":
                    continue
                host = record["host"]
                tracker.add(host, array("Q", [fingerprint(record["url"])]))
                if n := tracker.take(host):
                    counts[host] = counts.get(host, 0) + n
    finally:
        tracker.close()
    return counts


_SUMMED = (
    "hosts_done",
    "hosts_failed",
    "hosts_deferred",
    "urls",
    "bytes",
    "sitemaps_fetched",
    "sitemaps_failed",
    "resumed_hosts_skipped",
)


def combine(reports: list[dict[str, Any]], run: RunReport) -> None:
    """Add the shards' run reports (``RunReport.as_dict()`` forms) into ``run``."""
    for report in reports:
        for name in _SUMMED:
            setattr(run, name, getattr(run, name) + int(report.get(name) or 0))
        for kind, count in (report.get("failures_by_class") or {}).items():
            run.failures_by_class[kind] = run.failures_by_class.get(kind, 0) + count
        if report.get("events") is not None:
            events = run.events if run.events is not None else {}
            for name, count in report["events"].items():
                events[name] = events.get(name, 0) + count
            run.events = events
