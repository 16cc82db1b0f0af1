"""Reading a distributed run's committed output: merge, cross-host count, run report.

In: an output directory (its ``Layout``) and the manifests of the run. Out:
``merge`` (one JSON Lines file, shards in manifest order: ``harvester merge``),
``CrossHostCount`` (per host, URLs an earlier host had listed, streaming over the
shards' fingerprint logs as they commit) and ``combine`` (the shards' run reports summed into one).

Only files a manifest names are read: a killed attempt's leftovers never count.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import TYPE_CHECKING, Any

from harvester.distributed.fingerprints import read_fingerprints
from harvester.distributed.manifest import committed
from harvester.errors import InputError
from harvester.output.sink import JsonlSink
from harvester.urls.crosshost import CrossHostTracker

if TYPE_CHECKING:
    from harvester.config import DedupeConfig
    from harvester.distributed.layout import Layout
    from harvester.output.report import RunReport

__all__ = ["CrossHostCount", "combine", "committed_files", "merge"]

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


class CrossHostCount:
    """Cross-host duplicates over the committed shards' fingerprint logs, counted in a
    thread of the client while the other shards still run (``add`` a shard's log as it
    commits; ``fingerprints.py``).

    Which host counts a URL listed by several depends on the order the logs come in
    (as in one process, where it is the order records reach the writer); the run's
    total does not.
    """

    def __init__(self, cfg: DedupeConfig) -> None:
        self._tracker = CrossHostTracker(cfg)
        self._files: queue.Queue[str | None] = queue.Queue()  # None: no more files
        self._error: BaseException | None = None  # what ended the thread early
        self.counts: dict[str, int] = {}  # host -> its URLs an earlier host had listed
        self._thread = threading.Thread(target=self._run, name="harvester-crosshost")
        self._thread.start()

    def add(self, path: str) -> None:
        """Count the fingerprints of ``path`` (a committed fingerprint log)."""
        self._files.put(path)

    def finish(self) -> dict[str, int]:
        """Wait for every added log; return ``counts`` (re-raises what failed the thread)."""
        self._files.put(None)
        self._thread.join()
        self._tracker.close()
        if self._error is not None:
            raise self._error
        return self.counts

    def _run(self) -> None:
        try:
            while (path := self._files.get()) is not None:
                for host, fps in read_fingerprints(path):
                    self._tracker.add(host, fps)
                    if n := self._tracker.take(host):
                        self.counts[host] = self.counts.get(host, 0) + n
        except BaseException as exc:  # reported by finish(), in the client's thread
            self._error = exc


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
