"""Reading a distributed run's committed output: merge, cross-host count, run report.

In: an output directory (its ``Layout``) and the manifests of the run. Out:
``merge`` (one file of the shards' records, shards in manifest order, in the format
its output names: ``harvester merge``),
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
from harvester.output.concat import concat
from harvester.output.formats import FORMATS, resolve_format
from harvester.urls.crosshost import CrossHostTracker

if TYPE_CHECKING:
    from harvester.config import DedupeConfig
    from harvester.distributed.layout import Layout
    from harvester.output.formats import Format
    from harvester.output.report import RunReport

__all__ = ["CrossHostCount", "combine", "committed_files", "merge", "shards_format"]


def committed_files(layout: Layout) -> list[str]:
    """The records files of the run's committed shards, in shard (manifest) order."""
    return [
        os.path.join(layout.shard_dir(shard), manifest["records"])
        for shard, manifest in committed(layout)
    ]


def shards_format(layout: Layout) -> Format:
    """The format the run's committed shards wrote (JSON Lines when none committed).

    A manifest from before the format was stored: its records file's extension says.
    """
    found: set[Format] = set()
    for _, manifest in committed(layout):
        name = manifest.get("format") or os.path.splitext(manifest["records"])[1][1:]
        found.add(next((f for f in FORMATS if f == name), "jsonl"))
    if len(found) > 1:  # (one run's shards share its config: not seen in practice)
        raise InputError(f"{layout.root}: run {layout.run}'s shards wrote {sorted(found)}")
    return found.pop() if found else "jsonl"


def merge(layout: Layout, output: str, fmt: str = "") -> int:
    """Write the committed records into ``output`` ('-' = stdout); return its bytes.

    The format written: ``fmt``, else the one ``output``'s extension names, else the
    shards' own (``output/concat.py`` says which conversions it makes). Raises
    ``InputError`` when the run has not finished (no ``_SUCCESS``): its shards are
    not all committed yet; ``ConfigError`` for a conversion it does not make.
    """
    if not os.path.exists(layout.success_path):
        raise InputError(
            f"{layout.root}: run {layout.run} has not finished (no _SUCCESS); merge it after"
        )
    src = shards_format(layout)
    named = resolve_format(output, fmt)
    dst = named if fmt or output.lower().endswith(tuple("." + f for f in FORMATS)) else src
    return concat(committed_files(layout), src, output, dst)


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
    "hosts_recovered_late",
    "hosts_blocked",
    "filtered",
    "sitemaps_filtered",
    "hosts_tls_unverified",
    "sitemaps_not_due",
    "unverified",
)


def combine(reports: list[dict[str, Any]], run: RunReport) -> None:
    """Add the shards' run reports (``RunReport.as_dict(parts=True)`` forms) into ``run``:
    the counts summed, the coverage summary made from every shard's hosts."""
    for report in reports:
        run.merge_coverage(report.get("coverage_spread"))
        for name in _SUMMED:
            setattr(run, name, getattr(run, name) + int(report.get(name) or 0))
        for kind, count in (report.get("failures_by_class") or {}).items():
            run.failures_by_class[kind] = run.failures_by_class.get(kind, 0) + count
        if report.get("events") is not None:
            events = run.events if run.events is not None else {}
            for name, count in report["events"].items():
                events[name] = events.get(name, 0) + count
            run.events = events
