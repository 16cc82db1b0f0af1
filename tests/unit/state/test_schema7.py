"""Schema 7 (issue 53): a host's late-attempt backoff. A version-6 file migrates with
none (every host gets its late attempt), a backoff goes in, comes back out, and a run
whose output is lost puts it back as it was."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from harvester.state import schema
from harvester.state.ledger import LedgerReader
from harvester.state.memory import HostMemory, HostState
from harvester.state.revisit import LateRevisit, late_due
from harvester.state.store import SCHEMA_VERSION, StateStore

if TYPE_CHECKING:
    from pathlib import Path

HOST = "a.example"


def version_6_file(path: Path) -> None:
    """A state file as harvester with schema 6 left it: one host."""
    db = sqlite3.connect(path)
    for step in schema.MIGRATIONS[:6]:
        if isinstance(step, str):
            db.executescript(step)
        else:
            step(db)
    db.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
    db.execute("PRAGMA user_version = 6")
    db.execute("INSERT INTO hosts (id, name) VALUES (1, ?)", (HOST,))
    db.commit()
    db.close()


def memory_of(path: Path, run_id: int) -> HostMemory:
    reader = LedgerReader(str(path), run_id)
    try:
        return reader.host(HOST)
    finally:
        reader.close()


def test_schema_7_is_the_newest() -> None:
    assert SCHEMA_VERSION == 7
    assert len(schema.MIGRATIONS) == 7


def test_a_version_6_file_migrates_and_its_hosts_get_their_late_attempt(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    version_6_file(path)
    with StateStore(str(path)) as store:
        run = store.start_run(emit="delta", output=None)
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == 7
        store.commit(None)
    late = memory_of(path, run.id).late
    assert late == LateRevisit()
    assert late_due(late, 0.0, 604800.0)


def test_a_backoff_is_stored_read_back_and_undone(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    failed = LateRevisit(1000.0, 7200.0, 2)
    with StateStore(str(path)) as store:
        run = store.start_run(emit="delta", output=None)
        store.finish_host(HostState(HOST, late=failed))
        store.finish_run("complete")
    assert memory_of(path, run.id + 1).late == failed
    # A host state that says nothing of it keeps it.
    with StateStore(str(path)) as store:
        run = store.start_run(emit="delta", output=None)
        store.finish_host(HostState(HOST))
        store.finish_run("complete")
    assert memory_of(path, run.id + 1).late == failed
    # A run whose output is lost is redone from the state before it, backoff included.
    with StateStore(str(path)) as store:
        store.start_run(emit="delta", output=None)
        store.finish_host(HostState(HOST, late=LateRevisit(9000.0, 16000.0, 3)))
        store.commit(None)
        store.redo(None)
        row = store.db.execute(
            "SELECT late_failed_at, late_interval, late_failures FROM hosts"
        ).fetchone()
    assert row == (1000.0, 7200.0, 2)
