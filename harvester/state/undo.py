"""Undo journal (writer side): what a run changed in the state, until its output is safe.

In: the writer's connection (inside its open transaction), the run being written
(its id, and the highest host and sitemap row ids when it began). Out: the
journal tables of schema 5 filled as a finished host changes its rows, and
``undo``, which puts the state back as the last complete run left it.

Why: a run's ledger commits say "these URLs were written" while the output
holding them is still ``OUT.part`` (or a published ``OUT`` not yet marked in the
state). Should that output be lost before the run completes (deleted, or on a
disk that failed), the URLs it held must be written again; with ``--emit new``
or ``delta`` which URLs those were depends on what the ledger held *before* the
run: a finished host's earlier chunks were retired, its sitemaps' validators
replaced (the next request would get a 304 and read nothing). So a finished
host's rows are journaled before they change:

* its ``hosts`` row and its ``sitemaps`` rows as they were (``journal_host``);
* the ledger chunks it retires are not deleted but listed (``retire_later``,
  called by ``removals.retire``): only ids, no copy of their blobs. Every reader of
  the ledger leaves them out (``LIVE``), so they are gone for all but ``undo``.

Rows added during the run (ids above those the run began with) need no copy:
undoing them is making them new again. ``forget`` deletes the retired chunks and
empties the journal when the run completes (its output is published) or is
abandoned; only one run at a time is unfinished, so the journal never holds two.
``undo`` deletes the run's own chunks, keeps the ones it retired, restores the
journaled rows and resets the run's new rows: redone, the run writes every URL
of the lost output again, with the same events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence

__all__ = ["LIVE", "forget", "journal_host", "retire_later", "undo"]

# The condition on ``url_chunks`` (alias ``c``) that leaves out the chunks a run retired
# and will delete when it completes: every reader of the ledger asks it.
LIVE = "c.id NOT IN (SELECT id FROM undo_retired)"

_HOST_COLUMNS = (
    "discovery, discovered_at, audit, not_before, last_run, last_finished, late_failed_at, "
    "late_interval, late_failures"
)
_SITEMAP_COLUMNS = (
    "parent, kind, etag, last_modified, content_hash, urls, children, index_lastmod, status, "
    "http_status, complete, fetched_at, last_complete, final_url, checked_at, revisit_interval, "
    "quiet, history, news, index_lied"
)


def journal_host(
    db: sqlite3.Connection, host_id: int, hosts_before: int | None, sitemaps_before: int | None
) -> None:
    """Keep the rows of host ``host_id`` as they are before a finished host changes them.

    The first copy in a run wins (a host cut short and redone by a resume is
    journaled once, as the run found it). ``*_before``: the highest ids when the
    run began (None: a run begun before schema 5, every row counts as older).
    """
    if hosts_before is not None and host_id > hosts_before:
        return  # a host new in this run: undone by resetting it (see undo)
    db.execute(
        f"INSERT OR IGNORE INTO undo_hosts (id, {_HOST_COLUMNS}) "  # noqa: S608 - fixed names
        f"SELECT id, {_HOST_COLUMNS} FROM hosts WHERE id = ?",
        (host_id,),
    )
    db.execute(
        f"INSERT OR IGNORE INTO undo_sitemaps (id, {_SITEMAP_COLUMNS}) "  # noqa: S608
        f"SELECT id, {_SITEMAP_COLUMNS} FROM sitemaps WHERE host_id = ? AND id <= ?",
        (host_id, sitemaps_before if sitemaps_before is not None else 1 << 62),
    )


def retire_later(db: sqlite3.Connection, ids: Sequence[int]) -> None:
    """Retire the ledger chunks ``ids`` when the run completes (``forget`` deletes them)."""
    db.executemany("INSERT OR IGNORE INTO undo_retired (id) VALUES (?)", [(i,) for i in ids])


def forget(db: sqlite3.Connection) -> None:
    """The run completed (or was abandoned): its changes stand. The chunks it retired are
    deleted, and the journal is emptied."""
    db.execute("DELETE FROM url_chunks WHERE id IN (SELECT id FROM undo_retired)")
    for table in ("undo_hosts", "undo_sitemaps", "undo_retired"):
        db.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed names


def undo(
    db: sqlite3.Connection, run_id: int, hosts_before: int | None, sitemaps_before: int | None
) -> None:
    """Put the state back as it was before run ``run_id`` began, its own rows kept as new.

    Its ledger chunks are deleted, those it retired stay; journaled host and sitemap
    rows get their values back, rows the run added are reset to a new row's. Then
    the journal is empty.
    """
    db.execute("DELETE FROM url_chunks WHERE run = ?", (run_id,))
    db.execute("DELETE FROM undo_retired")
    _restore(db, "hosts", "undo_hosts", _HOST_COLUMNS)
    _restore(db, "sitemaps", "undo_sitemaps", _SITEMAP_COLUMNS)
    if hosts_before is not None:
        nulls = ", ".join(f"{c} = NULL" for c in _HOST_COLUMNS.split(", "))
        db.execute(f"UPDATE hosts SET {nulls} WHERE id > ?", (hosts_before,))  # noqa: S608
    if sitemaps_before is not None:
        fresh = ", ".join(
            f"{c} = 0" if c == "complete" else f"{c} = NULL" for c in _SITEMAP_COLUMNS.split(", ")
        )
        db.execute(f"UPDATE sitemaps SET {fresh} WHERE id > ?", (sitemaps_before,))  # noqa: S608
    # A host the run checkpointed is never skipped by its redo (whatever the journal held).
    db.execute("UPDATE hosts SET last_run = NULL WHERE last_run = ?", (run_id,))
    for table in ("undo_hosts", "undo_sitemaps"):
        db.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed names


def _restore(db: sqlite3.Connection, table: str, journal: str, columns: str) -> None:
    """Give the rows of ``table`` that ``journal`` holds their journaled values back."""
    db.execute(
        f"UPDATE {table} SET ({columns}) = "  # noqa: S608 - fixed names
        f"(SELECT {columns} FROM {journal} j WHERE j.id = {table}.id) "
        f"WHERE id IN (SELECT id FROM {journal})"
    )
