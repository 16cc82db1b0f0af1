"""Runs (parent side): where a run's state file is, which run it is, which hosts it finished.

In: the output path; a run's id and state path. Out: the default state path beside
the output (``default_state_path``); ``RunInfo``, the run an invocation works on
(``store.StateStore.start_run`` makes it: a new run, or an unfinished one resumed);
and ``FinishedHosts``, a read-only membership test the seed reader
(``harvester.run.seeds``) asks, so that a resumed run skips the hosts it
checkpointed as finished.

Its own module: values and a read-only view that ``harvester.output.writer`` hands
out; none of it writes the state file, which ``store.py`` alone does.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

__all__ = ["FinishedHosts", "RunInfo", "default_state_path"]


def default_state_path(output: str) -> str | None:
    """The state file beside ``output``: ``OUTPUT.state.sqlite`` (None for stdout, ``-``).

    Named like the report files (``OUTPUT.report.json``, ``OUTPUT.hosts.jsonl``).
    """
    if output == "-":
        return None
    return output + ".state.sqlite"


@dataclass(frozen=True, slots=True)
class RunInfo:
    """The run this invocation works on; ``resumed`` when it continues an unfinished one."""

    id: int
    emit: str
    resumed: bool
    output: str | None  # output path of the run (the one its commits describe)
    output_bytes: int  # committed resume mark of that output (bytes, or Parquet parts)
    format: str | None = None  # jsonl | csv | parquet (None: a run begun before schema 5)
    # What the run was when this invocation found it (lifecycle.py): running,
    # interrupted, failed or publishing; "running" for a new run.
    status: str = "running"
    # The highest host and sitemap row ids when the run began (undo.py; None: before schema 5).
    hosts_before: int | None = None
    sitemaps_before: int | None = None


class FinishedHosts:
    """``host in finished``: hosts the run being resumed already finished (own connection)."""

    def __init__(self, path: str, run_id: int) -> None:
        self._path = path
        self._run_id = run_id
        self._db: sqlite3.Connection | None = None

    def __contains__(self, host: object) -> bool:
        if self._db is None:  # opened in the thread that asks (the dispatcher)
            self._db = sqlite3.connect(
                f"file:{self._path}?mode=ro", uri=True, timeout=30.0, check_same_thread=False
            )
        row = self._db.execute("SELECT last_run FROM hosts WHERE name = ?", (host,)).fetchone()
        return row is not None and row[0] == self._run_id

    def close(self) -> None:
        """Close the connection (if one was opened)."""
        if self._db is not None:
            self._db.close()
            self._db = None
