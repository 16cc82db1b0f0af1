"""Writer: the one owner of a run's output, host reports, run report and state file.

In: what the shards send (encoded record blocks with their fingerprints and
ledger rows; finished hosts' reports and state). Out: ``OUT.part`` renamed to
``OUT`` when the run completes, ``OUT.hosts.jsonl``, the run report's counts and
the state file's commits. ``opening.py`` sets up a run's state file and output
(resuming an interrupted run's); ``Writer`` takes what arrives and closes it all
in the order ``state/store.py`` explains (``faults.STEPS`` names the steps).
Whoever runs the shards (``shards.py``: in this process or in worker processes)
calls it from one thread.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sqlite3
import sys
import time
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from harvester.errors import HarvesterError
from harvester.output.faults import fault_point
from harvester.output.parts import discard, publish_file
from harvester.output.report import write_report
from harvester.output.sink import JsonlSink
from harvester.state.ledger import EMIT_EVENTS
from harvester.urls.records import encode_record, encode_records

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import TracebackType

    from harvester.output.display import Progress
    from harvester.output.formats import Sink
    from harvester.output.report import RunReport
    from harvester.state.memory import HostState
    from harvester.state.rows import LedgerRows
    from harvester.state.store import StateStore
    from harvester.urls.crosshost import CrossHostTracker

__all__ = [
    "FirstError",
    "Writer",
    "close_run",
    "finish_published",
    "keep_previous",
    "unless",
    "writer_error",
]

logger = logging.getLogger(__name__)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _stops_on_error(
    method: Callable[Concatenate[Writer, _P], _R],
) -> Callable[Concatenate[Writer, _P], _R]:
    """A ``Writer`` method that raises the writer's first error once there was one.

    Why: after a disk fills up, the writer is called from several places (each host
    task of a shard, the commit timer). The first failure is the cause; a later call
    would fail otherwise (SQLite's "cannot commit - no transaction is active" after it
    rolled back on its own), and whichever error reached the user first won.
    """

    @functools.wraps(method)
    def guarded(self: Writer, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if self.failure is not None:
            raise self.failure
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            self.failure = exc
            raise

    return cast("Callable[Concatenate[Writer, _P], _R]", guarded)


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
        # The first error writing the output or the state: every later call raises it
        # again (_stops_on_error), so whichever caller reports it reports the cause.
        self.failure: Exception | None = None

    @_stops_on_error
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

    @_stops_on_error
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

    @_stops_on_error
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
        """Commit and close every file; ``complete`` publishes the output and the host report.

        A complete run's close, in this order (``state/store.py`` says why): commit;
        the output made final under its temporary name; the state marked
        ``publishing``; the rename (``faults.STEPS`` names each step). The state is
        marked ``complete`` only by ``finish``, after the run report is written.
        An incomplete run's records stay ``.part`` (not the whole result); its
        per-host report is final: every line is a host that finished, and the run
        report (marked interrupted) names the file. Every file is closed whatever
        fails; the first error is the one raised.
        """
        errors = FirstError()
        try:
            if complete:
                self._publish()
            else:
                with errors:
                    self.commit()
                if self.store is not None:
                    with errors:
                        self.store.finish_run("interrupted" if interrupted else "failed")
        finally:
            with errors:
                self.sink.close(complete=False)  # (a no-op once published)
            if self.hosts is not None:
                with errors:
                    self.hosts.close(complete=interrupted)
            with errors:
                self.progress.update(self.run)
                self.progress.close()
            with errors:
                self.cross.close()
        errors.raise_first()

    def _publish(self) -> None:
        """The output, then the host report, made final and renamed (state in between)."""
        self.commit()
        fault_point("committed")
        self.sink.prepare()
        fault_point("prepared")
        if self.store is not None:
            self.store.publishing()
            fault_point("publishing")
        if not (self._nothing_succeeded() and keep_previous(self.sink, self.store, self.run)):
            self.sink.publish()
        fault_point("published")
        if self.hosts is not None:
            self.hosts.close(complete=True)
        fault_point("hosts")

    def _nothing_succeeded(self) -> bool:
        """Every host of this run failed and none wrote a record (nor did an earlier
        invocation of it): the output holds nothing but the failures."""
        run = self.run
        return (
            run.hosts_done > 0
            and run.hosts_failed == run.hosts_done
            and not run.resumed
            and self.sink.records == 0
        )

    def finish(self) -> None:
        """Mark a complete run ``complete`` in the state: the last step of its close."""
        if self.store is not None:
            self.store.finish_run("complete")
            fault_point("complete")


class FirstError:
    """Runs cleanup steps (``with errors:``) whatever each raises; ``raise_first`` raises
    the first error, the others are only logged.

    Why: when a disk fills up, every later write fails too, and a close that lets the
    last failure replace the first reports the wrong thing (``ArrowInvalid: Operation
    on closed file``, "cannot rollback - no transaction is active"). The first error is
    the cause; the user sees it, with its errno. ``KeyboardInterrupt`` passes through.
    """

    def __init__(self) -> None:
        self.first: Exception | None = None

    def __enter__(self) -> FirstError:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if not isinstance(exc, Exception):
            return False
        if self.first is None:
            self.first = exc
        else:
            logger.debug("after %r, also: %r", self.first, exc)
        return True

    def raise_first(self) -> None:
        """Raise the first error a step raised, if any."""
        if self.first is not None:
            raise self.first


def keep_previous(sink: Sink, store: StateStore | None, run: RunReport) -> bool:
    """A complete run whose every host failed: keep the previous output, or not; say so.

    With ``--emit all`` the output is a listing of the hosts' URLs: one of nothing
    would replace a good one, so an existing ``OUT`` is kept and this run's empty
    output deleted (True). With ``--emit new``, ``changed`` or ``delta`` the output
    is this run's events, and there are none: keeping the last run's file would
    have its records read twice, so the empty output replaces it (False). Either
    way stderr and the run report (``output_kept``) say so.
    """
    path = getattr(sink, "path", "-")
    failed = f"every host failed ({run.hosts_failed} of {run.hosts_done})"
    emit = store.run_emit if store is not None else "all"
    if path == "-" or not os.path.isfile(path):
        return False
    if emit == "all":
        discard(path + ".part")
        run.output_kept = True
        _say(f"WARNING: {failed}: {path} was kept as it was (an earlier run's); no record written")
        return True
    _say(
        f"WARNING: {failed}: {path} now holds no record (--emit {emit}: this run's events,"
        " none); the earlier run's file it replaces was not kept"
    )
    return False


def close_run(
    writer: Writer,
    store: StateStore | None,
    run: RunReport,
    report_path: str | None,
    hosts_path: str | None,
    complete: bool,
    interrupted: bool,
) -> None:
    """Close the output (published if ``complete``), write the run report, and only then
    mark the run complete in the state (``faults.STEPS``); the state file is closed."""
    try:
        writer.close(complete=complete, interrupted=interrupted)
        if store is not None:
            run.events = dict(store.counts)
        if report_path:
            write_report(report_path, run, hosts_path)
        if complete:
            fault_point("report")
            writer.finish()
    finally:
        if store is not None:
            store.close()


@contextlib.contextmanager
def unless(failure: BaseException | None) -> Iterator[None]:
    """Errors of the block propagate, unless ``failure`` is already on its way up."""
    try:
        yield
    except Exception as exc:
        if failure is None:
            raise
        logger.debug("closing after %r also failed: %r", failure, exc)


def finish_published(
    run: RunReport,
    store: StateStore,
    output: str,
    report_path: str | None,
    hosts_path: str | None,
) -> RunReport:
    """Finish a run that was stopped while publishing (its output is published now): its
    host report published too, a run report written if it has none, the state complete.

    The reports are the run's, so they go beside its output: this invocation's paths
    when it names the same output, else the default ones beside the run's own.
    """
    recorded = store.run.output if store.run is not None else None
    if recorded not in (None, "-", output):
        report_path = f"{recorded}.report.json" if report_path else None
        hosts_path = f"{recorded}.hosts.jsonl" if hosts_path else None
    try:
        if hosts_path and os.path.isfile(hosts_path + ".part"):
            publish_file(hosts_path + ".part", hosts_path)
        run.finish(complete=True)
        run.events = dict(store.counts)
        if report_path and not os.path.exists(report_path):
            write_report(report_path, run, hosts_path)
        store.finish_run("complete")
    finally:
        store.close()
    return run


def writer_error(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The first writer error (``OSError``, ``HarvesterError``, ``sqlite3.Error``) of a
    group holding nothing else (anything else is a bug: its traceback is shown)."""
    match, rest = group.split((OSError, HarvesterError, sqlite3.Error))
    if match is None or rest is not None:
        return None
    first: BaseException = match
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first


def _say(text: str) -> None:
    print(f"harvester: {text}", file=sys.stderr)
