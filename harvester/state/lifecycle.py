"""Run lifecycle (writer side): a run's row in the ``runs`` table, from start to complete.

In: the writer's connection (inside the transaction ``store.StateStore`` opened),
the invocation's options. Out: the ``runs.RunInfo`` it works on, and the row's
status as the run goes:

    running ──► publishing ──► complete
       │  ▲          │
       ▼  │ resume   └─ resume: publish what is left (never harvested again)
    interrupted | failed        abandoned (--no-resume)

``publishing``: every record is written and committed, the output is being
renamed. A run found ``running``, ``interrupted``, ``failed`` or ``publishing``
is unfinished: the next invocation resumes it (or abandons it). The writer
(``harvester.output.writer``) decides what a resumed run does with its output;
``restart`` is its way back to an empty output when the one a run wrote is lost.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from harvester.errors import ConfigError, StateError
from harvester.state.codec import now
from harvester.state.ledger import EMIT_EVENTS
from harvester.state.runs import RunInfo
from harvester.state.undo import forget, undo

if TYPE_CHECKING:
    import sqlite3

__all__ = ["COUNTS", "UNFINISHED", "begin", "load_counts", "restart"]

UNFINISHED = ("running", "interrupted", "failed", "publishing")  # resumable statuses
COUNTS = ("new", "changed", "unchanged", "removed", "hosts")  # the run's totals (runs columns)


def begin(
    db: sqlite3.Connection, emit: str, output: str | None, resume: bool, fmt: str | None
) -> RunInfo:
    """Resume the last run if it is unfinished (and ``resume``), else start a new one.

    With ``resume=False`` an unfinished run is marked ``abandoned`` (its committed
    records stay recorded; its undo journal is dropped, its changes stand).
    Resuming a run into the output it writes in another format than ``fmt`` raises
    ``ConfigError`` (into another output, any format: no file mixes two).
    """
    row = db.execute(
        "SELECT id, status, emit, output, output_bytes, format, hosts_before, sitemaps_before "
        "FROM runs ORDER BY id DESC LIMIT 1"
    ).fetchone()
    if row is not None and row[1] in UNFINISHED:
        run_id, status, old_emit, old_output, committed, old_fmt, *before = row
        if resume:
            if output == old_output and None not in (fmt, old_fmt) and fmt != old_fmt:
                raise ConfigError(
                    f"the run to resume (run {run_id}) writes {old_output} as {old_fmt}, not"
                    f" {fmt}: give --format {old_fmt} (one file must not mix two formats),"
                    " another -o, or --no-resume to start a new run",
                    key="output.format",
                )
            # A run stopped while publishing stays so: all its records are written.
            db.execute(
                "UPDATE runs SET status = ?, pid = ?, invocations = invocations + 1 WHERE id = ?",
                ("publishing" if status == "publishing" else "running", os.getpid(), run_id),
            )
            return RunInfo(run_id, old_emit, True, old_output, committed, old_fmt, status, *before)
        db.execute(
            "UPDATE runs SET status = 'abandoned', finished = ? WHERE id = ?", (now(), run_id)
        )
    if emit not in EMIT_EVENTS:
        raise StateError(f"unknown emit mode {emit!r}")
    forget(db)  # (an abandoned run's journal)
    # Rows with higher ids are the run's own: its undo resets them (undo.py).
    before = [
        db.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]  # noqa: S608
        for table in ("hosts", "sitemaps")
    ]
    cur = db.execute(
        "INSERT INTO runs (started, status, pid, emit, output, format, hosts_before, "
        "sitemaps_before) VALUES (?, 'running', ?, ?, ?, ?, ?, ?)",
        (now(), os.getpid(), emit, output, fmt, *before),
    )
    assert cur.lastrowid is not None
    return RunInfo(cur.lastrowid, emit, False, output, 0, fmt, "running", *before)


def load_counts(db: sqlite3.Connection, run_id: int) -> dict[str, int]:
    """The totals a resumed run had committed (``COUNTS``)."""
    row = db.execute(
        f"SELECT {', '.join(COUNTS)} FROM runs WHERE id = ?",  # noqa: S608 - fixed names
        (run_id,),
    ).fetchone()
    return dict(zip(COUNTS, row, strict=True))


def restart(db: sqlite3.Connection, run: RunInfo, output: str | None) -> None:
    """Start ``run`` over in ``output``: the state as the last complete run left it, the
    run's totals and committed length back to zero (its output was lost)."""
    undo(db, run.id, run.hosts_before, run.sitemaps_before)
    zeros = ", ".join(f"{name} = 0" for name in COUNTS)
    db.execute(
        f"UPDATE runs SET status = 'running', output = ?, output_bytes = 0, {zeros} "  # noqa: S608
        "WHERE id = ?",
        (output, run.id),
    )
