"""Schema 6 (issue 53, adaptive revisit): a version-5 file opens, migrates, and its
sitemaps are due; a host's check history goes in and comes back out."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from harvester.state import schema
from harvester.state.ledger import LedgerReader
from harvester.state.memory import HostState, SitemapState
from harvester.state.revisit import Revisit, due
from harvester.state.store import SCHEMA_VERSION, StateStore

if TYPE_CHECKING:
    from pathlib import Path

SM = "https://a.example/s.xml"
INDEX = "https://a.example/index.xml"


def version_5_file(path: Path) -> None:
    """A state file as harvester with schema 5 left it: one host, one sitemap read in full."""
    db = sqlite3.connect(path)
    for step in schema.MIGRATIONS[:5]:
        if isinstance(step, str):
            db.executescript(step)
        else:
            step(db)
    db.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
    db.execute("PRAGMA user_version = 5")
    db.execute("INSERT INTO hosts (id, name, trust) VALUES (1, 'a.example', 'trusted')")
    db.execute(
        "INSERT INTO sitemaps (host_id, url, etag, complete, status) "
        "VALUES (1, ?, '\"e\"', 1, 'ok')",
        (SM,),
    )
    db.commit()
    db.close()


def test_schema_6_is_a_step_of_the_migrations() -> None:
    assert SCHEMA_VERSION >= 6
    assert len(schema.MIGRATIONS) == SCHEMA_VERSION


def test_a_version_5_file_migrates_and_its_sitemaps_are_due(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    version_5_file(path)
    with StateStore(str(path)) as store:
        run = store.start_run(emit="delta", output=None)
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        store.commit(None)
    reader = LedgerReader(str(path), run.id)
    try:
        memory = reader.host("a.example")
    finally:
        reader.close()
    sitemap = memory.sitemaps[SM]
    assert (sitemap.etag, sitemap.complete) == ('"e"', True)  # kept
    assert sitemap.revisit == Revisit()  # never checked under revisit: due
    assert due(sitemap.revisit, 0.0, 604800.0)
    assert not sitemap.index_lied


def test_a_check_and_a_lying_index_are_stored_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    checked = Revisit(1000.0, 7200.0, 2, "cnn", news=True)
    with StateStore(str(path)) as store:
        run = store.start_run(emit="delta", output=None)
        state = HostState("a.example")
        state.sitemaps.append(
            SitemapState(
                SM, INDEX, "not_modified", 304, complete=True, carried=True, revisit=checked
            )
        )
        state.sitemaps.append(
            SitemapState(INDEX, None, "ok", 200, complete=True, kind="sitemapindex")
        )
        state.lied.append(INDEX)
        store.finish_host(state)
        store.finish_run("complete")
    reader = LedgerReader(str(path), run.id + 1)
    try:
        memory = reader.host("a.example")
    finally:
        reader.close()
    assert memory.sitemaps[SM].revisit == checked
    assert memory.sitemaps[INDEX].index_lied
    assert memory.sitemaps[INDEX].revisit == Revisit()  # (no check recorded for it here)


def test_undo_restores_the_check_history(tmp_path: Path) -> None:
    """A run whose output is lost is redone from the state before it, revisit included."""
    path = tmp_path / "s.sqlite"
    first = Revisit(1000.0, 0.0, 0, "c")
    with StateStore(str(path)) as store:
        store.start_run(emit="delta", output=None)
        state = HostState("a.example")
        state.sitemaps.append(SitemapState(SM, None, "ok", 200, complete=True, revisit=first))
        store.finish_host(state)
        store.finish_run("complete")
    with StateStore(str(path)) as store:
        store.start_run(emit="delta", output=None)
        state = HostState("a.example")
        later = Revisit(5000.0, 8000.0, 1, "cn")
        state.sitemaps.append(
            SitemapState(SM, None, "not_modified", 304, complete=True, carried=True, revisit=later)
        )
        store.finish_host(state)
        store.commit(None)
        store.redo(None)
        row = store.db.execute(
            "SELECT checked_at, revisit_interval, quiet, history FROM sitemaps WHERE url = ?", (SM,)
        ).fetchone()
    assert row == (1000.0, 0.0, 0, "c")
