"""Writer: the one owner of a run's output, host reports, run report and state file.

In: what the shards send (encoded record blocks with their fingerprints and
ledger rows; finished hosts' reports and state). Out: ``OUT.part`` renamed to
``OUT`` when the run completes, ``OUT.hosts.jsonl``, the run report's counts and
the state file's commits. ``open_state`` and ``open_sink`` set up a run's state
file and output (resuming an interrupted run's); ``Writer`` takes what arrives.
Whoever runs the shards (``shards.py``: in this process or in worker processes)
calls it from one thread.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any

from harvester.errors import ConfigError
from harvester.run.formats import output_sink, resolve_format
from harvester.run.parts import cut_back
from harvester.run.sink import JsonlSink, encode_record, encode_records
from harvester.state.ledger import EMIT_EVENTS, Incremental
from harvester.state.runs import default_state_path
from harvester.state.store import StateStore

if TYPE_CHECKING:
    from harvester.config import Config
    from harvester.run.display import Progress
    from harvester.run.formats import Sink
    from harvester.run.report import RunReport
    from harvester.state.memory import HostState
    from harvester.state.rows import LedgerRows
    from harvester.state.runs import FinishedHosts
    from harvester.urls.crosshost import CrossHostTracker

__all__ = ["Writer", "open_output", "open_sink", "open_state"]


class Writer:
    """The one writer of a run: owns the output file, the host-report file, the run
    report and the state file (see ``state.py`` for the commit protocol).

    In: encoded record blocks (``records``) and finished hosts' reports and state
    (``host``), in the order a shard produced them. Out: the files; ``close`` makes
    them final (or leaves ``.part`` files for a resume).
    """

    def __init__(
        self,
        sink: Sink,
        hosts_path: str | None,
        run: RunReport,
        progress: Progress,
        cross: CrossHostTracker,
        store: StateStore | None = None,
        commit_interval: float = 2.0,
    ) -> None:
        self.sink = sink
        self.hosts = JsonlSink(hosts_path) if hosts_path else None
        self.run = run
        self.progress = progress
        self._last_update = 0.0
        self.pending_urls = 0  # records written for hosts that have not reported yet
        self.cross = cross  # URLs listed by more than one host (only the writer sees all)
        self.store = store
        self._emit_removed = store is not None and "removed" in EMIT_EVENTS[store.run_emit]
        self._commit_interval = commit_interval
        self._last_commit = time.monotonic()

    def records(
        self,
        data: bytes | bytearray | memoryview,
        count: int,
        fingerprints: list[tuple[str, bytes]],
        rows: list[tuple[str, LedgerRows]] | None = None,
        *,
        encoded: bool = False,
    ) -> None:
        """Write a block of ``count`` encoded records; their fingerprints feed the
        cross-host count and their ledger rows the state file. ``encoded``: the block
        is in the sink's format already (a worker ran ``formats.block_encoder``)."""
        # run.urls is summed from host reports (add_host); count is for progress only.
        if encoded:
            self.sink.write_encoded(data, count)
        else:
            self.sink.write(data, count)
        for host, fps in fingerprints:
            self.cross.add(host, fps)
        if self.store is not None and rows:
            self.store.add_many(rows)
        self.pending_urls += count
        self.tick()

    def host(self, report: dict[str, Any], state: HostState | None = None) -> None:
        """Take a finished host: its report line, and with a state file its checkpoint
        (the removed URLs it yields are written as records with ``--emit`` asking)."""
        # A host's records always reach the writer before its report, so its count is final.
        report["cross_host_duplicates"] = self.cross.take(report["host"])
        if self.store is not None and state is not None:
            removed = self.store.finish_host(state)
            report["removed"] = len(removed)
            self.store.count({k: report.get(k, 0) for k in ("new", "changed", "unchanged")})
            if removed and self._emit_removed:
                self.sink.write(encode_records(removed))
                report["urls"] = report.get("urls", 0) + len(removed)
                self.pending_urls += len(removed)
        if self.hosts is not None:
            self.hosts.write(encode_record(report))
        self.run.add_host(report)
        self.pending_urls -= report.get("urls", 0)
        self.tick()

    def commit(self) -> None:
        """Make the output durable, then commit the state that describes it (in that order)."""
        if self.store is not None:
            self.sink.sync()
            self.store.commit(self.sink.mark)
            self._last_commit = time.monotonic()

    def tick(self) -> None:
        """Commit when ``commit_interval`` has passed since the last commit; show progress.

        Called on every arrival and, by whoever runs the shards, on a timer: records
        written while the rest of the run stalls (slow hosts) must not wait for the
        next arrival to become durable.
        """
        now = time.monotonic()
        if self.store is not None and now - self._last_commit > self._commit_interval:
            self.commit()
        if now - self._last_update > 0.2:
            self._last_update = now
            self.progress.update(self.run)

    def close(self, *, complete: bool, interrupted: bool = False) -> None:
        """Commit and close every file; ``complete`` renames the ``.part`` files."""
        # The records of an interrupted run stay .part (they are not the whole result);
        # its per-host report is final: every line is a host that finished, and the
        # run report (marked interrupted) names the file.
        if self.store is not None:
            self.commit()  # before the rename: a crash in between resumes, not repeats
            self.store.finish_run(
                "complete" if complete else "interrupted" if interrupted else "failed"
            )
        self.sink.close(complete=complete)
        if self.hosts is not None:
            self.hosts.close(complete=complete or interrupted)
        self.progress.update(self.run)
        self.progress.close()
        self.cross.close()


def open_state(cfg: Config, output: str) -> StateStore | None:
    """Open (lock, migrate) the state file and start or resume its run; None without state."""
    emit = cfg.output.emit
    path = cfg.state.path or default_state_path(output) if cfg.state.enabled else None
    if path is None:
        if emit != "all":
            raise ConfigError(
                f"--emit {emit} needs a state file: give --state PATH (or an output file)",
                key="output.emit",
            )
        return None
    store = StateStore(path)
    try:
        info = store.start_run(emit=emit, output=output, resume=cfg.state.resume)
        if info.resumed and info.emit != emit:
            print(
                f"harvester: resuming run {info.id} with its own --emit {info.emit} (not {emit})",
                file=sys.stderr,
            )
        elif info.resumed:
            print(f"harvester: resuming unfinished run {info.id}", file=sys.stderr)
    except BaseException:
        store.close()
        raise
    return store


def open_sink(output: str, store: StateStore | None, cfg: Config | None = None) -> Sink:
    """The output sink (format from ``cfg.output``; JSON Lines without ``cfg``); a resumed
    run continues (cut back to what the state committed: ``formats.py`` says how)."""
    run = store.run if store is not None else None

    def sink(resume_at: int | None = None) -> Sink:
        return (
            output_sink(cfg, output, resume_at) if cfg else JsonlSink(output, resume_at=resume_at)
        )

    if run is None or not run.resumed or run.output is None or run.output == "-":
        return sink()
    if run.output != output:
        # Another output this time: cut the interrupted run's file (or Parquet parts) back
        # to its committed records, so the two outputs together hold each URL once.
        cut_back(run.output + ".part", run.output_bytes)
        return sink()
    part = output + ".part"
    if (
        cfg is not None
        and os.path.exists(part)
        and os.path.isdir(part) != (resolve_format(output, cfg.output.format) == "parquet")
    ):
        raise ConfigError(
            f"the run to resume wrote {output}.part in another format: give its --format"
            " again, or --no-resume",
            key="output.format",
        )
    return sink(run.output_bytes)


def open_output(
    cfg: Config, output: str, run: RunReport
) -> tuple[Sink, StateStore | None, Incremental | None, FinishedHosts | None]:
    """Open a run's state file and output; note the state's run in ``run``.

    Returns the sink, the state store, the workers' read-only view of the state
    (``Incremental``) and, for a resumed run, the hosts it already finished (the
    last three None without a state file). Nothing is left open when it raises.
    """
    store = open_state(cfg, output)
    incremental: Incremental | None = None
    finished: FinishedHosts | None = None
    try:
        sink = open_sink(output, store, cfg)
        if store is not None:
            assert store.run is not None
            incremental = Incremental(store.path, store.run.id, store.run.emit)
            run.state = store.path
            run.run_id = store.run.id
            run.resumed = store.run.resumed
            if store.run.resumed:
                finished = store.finished_hosts()
    except BaseException:
        if store is not None:
            store.close()
        raise
    return sink, store, incremental, finished
