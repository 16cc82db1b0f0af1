"""State stage (writer side): the SQLite file that makes cron runs incremental and resumable.

In: the state path, the run's options, and from the workers ``LedgerRows``
batches (packed chunks, ``rows.py``) and finished hosts' ``HostState`` (see
``memory.py``). Out: the state file, the removed-URL records of each finished
host, and the run to resume (``runs.RunInfo``).

One process writes it: the run's writer (``writer.Writer``), in batched
transactions; workers read it through ``ledger.LedgerReader`` (WAL mode, so
readers never block the writer). The tables and their migrations are in
``schema.py``: a file from a newer harvester is refused, a file that is not a
harvester state file (``application_id``) or is corrupt is an error, never
replaced. ``removals.py`` retires the ledger chunks a finished host replaced;
``ids.py`` finds or adds the host and sitemap rows; ``runs.py`` has the run's
values and the resumed run's finished hosts; ``lifecycle.py`` the run's status
from start to complete, ``undo.py`` what a run changed until its output is safe.

Exactly-once across a crash (``kill -9``) and its resume. The writer appends
records to ``OUT.part``, and every ``commit``: flushes and fsyncs the output,
then commits in one transaction the ledger chunks of those records, the finished
hosts' checkpoints and the output's length. So the state never refers to a
record that is not on disk. The next run with the same state finds the run
unfinished and resumes it: it cuts ``OUT.part`` back to the committed length
(dropping records the ledger never saw), skips hosts checkpointed as finished,
and redoes the others, where every URL the ledger says this run already
recorded is skipped. Each URL of the run is therefore emitted exactly once
over the interrupted and the resumed invocation (with a file output; standard
output cannot be cut back, so the uncommitted tail may repeat there).

The end of a run, in this order (``writer.Writer.close``): a last commit; the
output made final under its temporary name (fsync); the run marked
``publishing``; the rename (and an fsync of the directory); the run marked
``complete``. So the state never says ``complete`` of an output that is not
published; a run stopped while ``publishing`` is finished by the next
invocation without harvesting again. Should a run's output be lost before it
completes, the next invocation says so and redoes the run from the state the
last complete run left (``redo``), writing every URL of the lost output again.

A lock (``flock`` on ``STATE.lock``) keeps two runs off one state file; the
kernel drops it when its process dies, so a lock left by a killed run is taken
over by the next one.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from harvester.state.access import check_file, state_error
from harvester.state.codec import dump_json, now
from harvester.state.ids import RowIds
from harvester.state.lifecycle import begin, load_counts, restart
from harvester.state.removals import retire
from harvester.state.runs import FinishedHosts, RunInfo
from harvester.state.samples import KEEP, save_samples
from harvester.state.schema import (
    INSERT_CHUNK,
    PAGE_SIZE,
    SCHEMA_VERSION,
    connect,
    lock,
    migrate,
)
from harvester.state.undo import forget, journal_host

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from harvester.state.memory import HostState, SitemapState
    from harvester.state.rows import LedgerRows

__all__ = ["PAGE_SIZE", "SCHEMA_VERSION", "StateStore"]


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _sql_errors(
    method: Callable[Concatenate[StateStore, _P], _R],
) -> Callable[Concatenate[StateStore, _P], _R]:
    """Translate ``sqlite3.Error`` out of a ``StateStore`` method into ``StateError``.

    The boundary rule of ``errors.py``: a disk full, an I/O error or a file
    damaged under us surfaces as the project's error naming the state file, so
    the CLI maps it to its exit status like every other state failure.
    """

    @functools.wraps(method)
    def translated(self: StateStore, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise state_error(exc, self.path) from exc

    return cast("Callable[Concatenate[StateStore, _P], _R]", translated)


class StateStore:
    """The state file, opened for writing by the one writer of a run.

    Usage::

        with StateStore("urls.state.sqlite") as store:   # locks, migrates
            run = store.start_run(emit="delta", output="urls.jsonl")
            store.add_urls("example.com", rows)
            removed = store.finish_host(host_state, report)
            store.commit(output_bytes=sink.bytes)
            store.finish_run("complete")
    """

    def __init__(self, path: str, *, page_size: int = PAGE_SIZE) -> None:
        """Open (creating, locking, migrating) the state file at ``path``.

        ``page_size``: SQLite's, for a file created here (``PAGE_SIZE``; benchmarks
        compare others); a file that exists keeps the one it was made with.
        """
        self.path = path
        # Before the lock: another application's file is refused with nothing made beside it.
        check_file(path, SCHEMA_VERSION)
        self._lock_fd = lock(path)
        try:
            self._db = connect(path, page_size)
        except BaseException:
            os.close(self._lock_fd)
            raise
        try:
            migrate(self._db, path)
        except BaseException:
            self._db.close()
            os.close(self._lock_fd)
            raise
        self.run: RunInfo | None = None
        self._ids = RowIds(self._db)
        self.counts = {"new": 0, "changed": 0, "unchanged": 0, "removed": 0, "hosts": 0}

    # -- runs ------------------------------------------------------------------

    @property
    def run_emit(self) -> str:
        """The ``--emit`` mode of the run (a resumed run keeps its own)."""
        return self._require_run().emit

    def start_run(
        self, *, emit: str, output: str | None, resume: bool = True, fmt: str | None = None
    ) -> RunInfo:
        """Resume the last run if it did not finish (and ``resume``), else start a new one.

        A run left ``running`` (its process died: we hold the lock), ``interrupted``,
        ``failed`` or ``publishing`` (stopped while its output was being published) is
        resumed with its own ``emit`` mode; with ``resume=False`` it is marked
        ``abandoned`` instead (``lifecycle.py``). ``fmt``: the output format, stored
        with a new run; resuming a run into its output in another format raises
        ``ConfigError`` (one file must not mix two). Raises ``StateError`` when the
        file cannot be written or turns out to be corrupt.
        """
        try:
            with self._tx():
                self.run = begin(self._db, emit, output, resume, fmt)
                if self.run.resumed:
                    self.counts.update(load_counts(self._db, self.run.id))
        except sqlite3.Error as exc:
            self._rollback()
            raise state_error(exc, self.path, "starting the run") from exc
        return self.run

    @_sql_errors
    def publishing(self) -> None:
        """Mark the run ``publishing``: every record is written and committed, and the
        output is about to be renamed (a run stopped now is finished, never redone)."""
        run = self._require_run()
        self.commit(None)
        with self._tx():
            self._db.execute("UPDATE runs SET status = 'publishing' WHERE id = ?", (run.id,))
        self.run = replace(run, status="publishing")

    @_sql_errors
    def redo(self, output: str | None) -> None:
        """Start the run over in ``output``: the output it wrote was lost before it completed.

        The state goes back to what the last complete run left (``undo.py``), so
        the redone run writes every URL the lost output held again, with the same
        events. Its counts and committed length restart from zero.
        """
        run = self._require_run()
        with self._tx():
            restart(self._db, run, output)
        self.counts = dict.fromkeys(self.counts, 0)
        self.run = replace(run, output=output, output_bytes=0, status="running")

    @_sql_errors
    def switch_output(self, output: str | None, fmt: str | None) -> None:
        """Go on with the run in another output, of format ``fmt`` (the one it wrote was
        cut back to its commit and stays as it is)."""
        run = self._require_run()
        with self._tx():
            self._db.execute(
                "UPDATE runs SET output = ?, format = ?, output_bytes = 0 WHERE id = ?",
                (output, fmt, run.id),
            )
        self.run = replace(run, output=output, format=fmt, output_bytes=0)

    @_sql_errors
    def finish_run(self, status: str) -> None:
        """Mark the run ``complete``, ``interrupted`` or ``failed`` (committing first)."""
        run = self._require_run()
        self.commit(None)
        with self._tx():
            if status == "complete":
                forget(self._db)  # its output is published: nothing of it will be redone
            self._db.execute(
                "UPDATE runs SET status = ?, finished = ? WHERE id = ?", (status, now(), run.id)
            )

    @_sql_errors
    def finished_hosts(self) -> FinishedHosts:
        """A thread-safe, read-only membership test for this run's finished hosts."""
        return FinishedHosts(self.path, self._require_run().id)

    # -- writes ----------------------------------------------------------------

    @_sql_errors
    def add_urls(self, host: str, rows: LedgerRows) -> None:
        """Record listed URLs of ``host`` (new, changed or unchanged): one chunk per sitemap."""
        self.add_many([(host, rows)])

    @_sql_errors
    def add_many(self, batches: Iterable[tuple[str, LedgerRows]]) -> None:
        """``add_urls`` for each ``(host, rows)``, in one statement (a worker's message
        carries the rows of several batches)."""
        run_id = self._require_run().id
        self._begin()
        values = []
        for host, rows in batches:
            host_id = self._ids.host(host)
            for (sitemap, n), blobs in zip(rows.sitemaps, rows.chunks, strict=True):
                values.append((host_id, self._ids.sitemap(host_id, sitemap), run_id, n, *blobs))
        self._db.executemany(INSERT_CHUNK, values)

    @_sql_errors
    def count(self, events: dict[str, int]) -> None:
        """Add per-event URL counts (from a finished host's report) to the run's totals."""
        for name, value in events.items():
            if name in self.counts:
                self.counts[name] += value

    @_sql_errors
    def finish_host(self, state: HostState) -> list[dict[str, Any]]:
        """Apply a finished host's update; return its removed URLs as output records.

        Removed: URLs of sitemaps in the host's removal scope that were listed by an
        earlier run and not by this one. Also checkpoints the host (not when
        ``state.finished`` is false: a host cut short is redone on resume).
        """
        run = self._require_run()
        self._begin()
        host_id = self._ids.host(state.host)
        journal_host(self._db, host_id, run.hosts_before, run.sitemaps_before)
        t = now()
        for sitemap in state.sitemaps:
            _save_sitemap(self._db, self._ids.sitemap(host_id, sitemap.url), sitemap, t)
        for index in state.lied:  # issue 53 item 5: its lastmods never skip a child again
            self._db.execute(
                "UPDATE sitemaps SET index_lied = 1 WHERE id = ?",
                (self._ids.sitemap(host_id, index),),
            )
        if state.discovery is not None:
            self._db.execute(
                "UPDATE hosts SET discovery = ?, discovered_at = ? WHERE id = ?",
                (dump_json(state.discovery), t, host_id),
            )
        if state.audit is not None:
            self._db.execute(
                "UPDATE hosts SET audit = ? WHERE id = ?", (dump_json(state.audit), host_id)
            )
        if state.samples:  # issue 49: pages the coverage check read, for the next audit
            save_samples(self, host_id, [(host_id, *row) for row in state.samples], KEEP)
        # Also for a host cut short: what it said about coming back holds all the same.
        self._db.execute(
            "UPDATE hosts SET not_before = ? WHERE id = ?", (state.not_before, host_id)
        )
        if (late := state.late) is not None:  # issue 53: its late attempts' backoff
            self._db.execute(
                "UPDATE hosts SET late_failed_at = ?, late_interval = ?, late_failures = ? "
                "WHERE id = ?",
                (late.failed_at, late.interval, late.failures, host_id),
            )
        removed: list[dict[str, Any]] = []
        if not state.finished:
            return removed
        scope = {self._ids.sitemap(host_id, url) for url in state.removal_scope}
        removed = retire(self._db, host_id, state.host, scope, run.id)
        self._db.execute(
            "UPDATE hosts SET last_run = ?, last_finished = ? WHERE id = ?", (run.id, t, host_id)
        )
        self.counts["removed"] += len(removed)
        self.counts["hosts"] += 1
        return removed

    @_sql_errors
    def commit(self, output_bytes: int | None) -> None:
        """Commit everything staged, with the output's length (already flushed and fsynced)."""
        self._begin()
        run = self.run
        if run is not None:
            c = self.counts
            if output_bytes is not None:
                self._db.execute(
                    "UPDATE runs SET output_bytes = ? WHERE id = ?", (output_bytes, run.id)
                )
            self._db.execute(
                "UPDATE runs SET hosts = ?, new = ?, changed = ?, unchanged = ?, removed = ? "
                "WHERE id = ?",
                (c["hosts"], c["new"], c["changed"], c["unchanged"], c["removed"], run.id),
            )
        self._db.execute("COMMIT")

    @property
    def db(self) -> sqlite3.Connection:
        """The writer's connection, for stages that add their own tables (``verify``)."""
        return self._db

    @_sql_errors
    def begin(self) -> None:
        """Open the write transaction if none is open (``commit`` ends it)."""
        self._begin()

    def close(self) -> None:
        """Roll back anything uncommitted, close the database and release the lock.

        Never raises for the rollback: ``close`` runs while another error propagates
        (a disk full), and SQLite may have rolled back already; that first error is
        the one to report, not "cannot rollback - no transaction is active".
        """
        try:
            self._rollback()
            self._db.close()
        finally:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------

    def _require_run(self) -> RunInfo:
        if self.run is None:
            raise RuntimeError("start_run() first")
        return self.run

    def _begin(self) -> None:
        # SQLite's own flag, not one of ours: it rolls a transaction back by itself on
        # some errors (a disk full), and a COMMIT or ROLLBACK of none fails.
        if not self._db.in_transaction:
            self._db.execute("BEGIN IMMEDIATE")

    def _rollback(self) -> None:
        """Roll back the open transaction, if SQLite still has one (errors suppressed:
        this runs on the way out of a failure, whose own error is the one to raise)."""
        if self._db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        self._begin()
        try:
            yield
        except BaseException:
            self._rollback()
            raise
        self._db.execute("COMMIT")


def _save_sitemap(db: sqlite3.Connection, sid: int, s: SitemapState, t: float) -> None:
    """Write what a finished host's run learned of its sitemap ``sid`` (at time ``t``)."""
    if s.revisit is not None:  # it was asked (a 304 or a full read): its check history
        r = s.revisit
        db.execute(
            "UPDATE sitemaps SET checked_at = ?, revisit_interval = ?, quiet = ?, history = ?, "
            "news = ? WHERE id = ?",
            (r.checked_at, r.interval, r.quiet, r.history, int(r.news), sid),
        )
    if s.complete and not s.carried:
        db.execute(
            "UPDATE sitemaps SET parent = ?, kind = ?, etag = ?, last_modified = ?, "
            "content_hash = ?, urls = ?, children = ?, index_lastmod = ?, status = ?, "
            "http_status = ?, complete = 1, fetched_at = ?, last_complete = ?, "
            "final_url = ? WHERE id = ?",
            (
                s.parent,
                s.kind,
                s.etag,
                s.last_modified,
                s.content_hash,
                s.urls,
                None if s.children is None else dump_json(s.children),
                s.index_lastmod,
                s.status,
                s.http_status,
                t,
                t,
                s.final_url,
                sid,
            ),
        )
    elif s.carried:
        # Unchanged (304 or a skip by index lastmod): validators stay; its URLs
        # are confirmed as still listed.
        db.execute(
            "UPDATE sitemaps SET status = ?, http_status = ?, fetched_at = ?, "
            "last_complete = ? WHERE id = ?",
            (s.status, s.http_status, t, t, sid),
        )
        # Its ledger chunks stand as they are (rewriting them would rewrite the
        # whole ledger of an unchanged site); the sitemap's last_complete says
        # they were confirmed, and a carried sitemap is never in the removal scope.
    else:
        # A failed or partial read keeps the validators of the last full read
        # (sending them next time must not make a 304 cover a file never read).
        db.execute(
            "UPDATE sitemaps SET status = ?, http_status = ?, fetched_at = ? WHERE id = ?",
            (s.status, s.http_status, t, sid),
        )
