"""The state file on its own: schema, migrations, refusals, the lock, runs and removals."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import pytest

from harvester.errors import StateError
from harvester.ledger import (
    NO_LASTMOD,
    HostState,
    LedgerReader,
    LedgerRows,
    SitemapState,
    classify,
    signed,
)
from harvester.sink import JsonlSink
from harvester.state import SCHEMA_VERSION, StateLocked, StateStore, default_state_path

if TYPE_CHECKING:
    from pathlib import Path

SM = "https://a.example/s.xml"


def rows(*names: str, lastmod: int | None = None) -> LedgerRows:
    return LedgerRows.of(
        (signed(hash(n) & (2**64 - 1)), f"https://a.example/{n}", SM, lastmod) for n in names
    )


def test_default_path_sits_beside_the_output() -> None:
    assert default_state_path("out/urls.jsonl") == "out/urls.jsonl.state.sqlite"
    assert default_state_path("-") is None


def test_a_new_file_gets_the_current_schema(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with StateStore(str(path)) as store:
        store.start_run(emit="all", output=None)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_file_from_a_newer_harvester_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    StateStore(str(path)).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StateError, match="newer harvester"):
        StateStore(str(path))


def test_a_corrupt_file_is_an_error_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StateError, match="corrupt"):
        StateStore(str(path))
    assert path.read_bytes().startswith(b"this is not")  # never replaced


def test_another_applications_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE customers (id INTEGER)")
    db.commit()
    db.close()
    with pytest.raises(StateError, match="not a harvester state file"):
        StateStore(str(path))


def test_the_lock_refuses_a_second_writer_and_names_the_holder(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sqlite")
    with StateStore(path), pytest.raises(StateLocked, match="pid"):
        StateStore(path)
    StateStore(path).close()  # released on close


def test_events_against_the_ledger() -> None:
    assert classify(None, None, 3) == "new"
    assert classify((10, 2, None), 11, 3) == "changed"
    assert classify((None, 2, None), 11, 3) == "changed"  # a lastmod appeared
    assert classify((10, 2, None), 9, 3) == "unchanged"  # went back: not news
    assert classify((10, 2, None), None, 3) == "unchanged"
    assert classify((10, 2, 2), 10, 3) == "new"  # removed, and back
    assert classify((10, 3, None), 10, 3) is None  # this run recorded it already


def test_removed_only_from_sitemaps_in_the_removal_scope(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sqlite")
    with StateStore(path) as store:
        store.start_run(emit="delta", output=None)
        store.add_urls("a.example", rows("p1", "p2", "p3"))
        store.finish_host(HostState("a.example", [SitemapState(SM, None, "ok", 200, True)], [SM]))
        store.finish_run("complete")
    with StateStore(path) as store:
        run = store.start_run(emit="delta", output=None)
        store.add_urls("a.example", rows("p1"))
        # The sitemap failed this time: nothing may be marked removed.
        failed = HostState("a.example", [SitemapState(SM, None, "error", 500)], [])
        assert store.finish_host(failed) == []
        store.finish_run("complete")
    with StateStore(path) as store:
        store.start_run(emit="delta", output=None)
        store.add_urls("a.example", rows("p1", "p3"))
        removed = store.finish_host(
            HostState("a.example", [SitemapState(SM, None, "ok", 200, True)], [SM])
        )
        assert [r["url"] for r in removed] == ["https://a.example/p2"]
        assert removed[0]["event"] == "removed"
        store.commit(None)
        reader = LedgerReader(path, run.id + 1)
        memory = reader.host("a.example")
        fps = list(rows("p1", "p2", "p9").fps)
        from array import array

        assert reader.events(memory.host_id, fps, array("q", [0, 0, 0])) == [None, "new", "new"]
        reader.close()
        store.finish_run("complete")


def test_an_unfinished_run_is_resumed_and_its_output_cut_to_the_commit(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sqlite")
    out = str(tmp_path / "o.jsonl")
    store = StateStore(path)
    run = store.start_run(emit="delta", output=out)
    sink = JsonlSink(out)
    sink.write(b'{"a":1}\n')
    sink.sync()
    store.add_urls("a.example", rows("p1"))
    store.commit(sink.bytes)
    sink.write(b'{"never committed":2}\n')
    sink.close(complete=False)
    store.close()  # as if killed: the run stays "running" with one committed record

    with StateStore(path) as store:
        again = store.start_run(emit="all", output=out)
        assert (again.id, again.resumed, again.emit) == (run.id, True, "delta")
        resumed = JsonlSink(out, resume_at=again.output_bytes)
        resumed.write(b'{"b":3}\n')
        resumed.close(complete=True)
        store.finish_run("complete")
    assert (tmp_path / "o.jsonl").read_bytes() == b'{"a":1}\n{"b":3}\n'

    with StateStore(path) as store:  # a finished run is not resumed
        assert store.start_run(emit="all", output=out).resumed is False


def test_no_resume_abandons_the_unfinished_run(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sqlite")
    with StateStore(path) as store:
        first = store.start_run(emit="all", output=None)
    with StateStore(path) as store:
        second = store.start_run(emit="all", output=None, resume=False)
        assert second.id != first.id
        assert not second.resumed
    status = sqlite3.connect(path).execute("SELECT status FROM runs WHERE id = ?", (first.id,))
    assert status.fetchone()[0] == "abandoned"


def test_a_version_1_file_is_migrated_and_keeps_its_data(tmp_path: Path) -> None:
    from harvester import state as state_module

    path = tmp_path / "s.sqlite"
    db = sqlite3.connect(path)
    db.executescript(state_module._MIGRATIONS[0])  # what harvester with schema 1 wrote
    db.execute(f"PRAGMA application_id = {state_module.APPLICATION_ID}")
    db.execute("PRAGMA user_version = 1")
    db.execute("INSERT INTO hosts (name) VALUES ('a.example')")
    db.commit()
    db.close()
    with StateStore(str(path)) as store:
        store.start_run(emit="all", output=None)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("SELECT name, trust FROM hosts").fetchall() == [("a.example", None)]
    assert db.execute("SELECT count(*) FROM samples").fetchone()[0] == 0


def test_a_file_corrupted_inside_is_a_state_error(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with StateStore(str(path)) as store:
        store.start_run(emit="all", output=None)
        store.add_urls("a.example", rows(*(f"p{i}" for i in range(3000))))
        store.finish_run("complete")
    data = bytearray(path.read_bytes())
    data[4096:] = b"\xff" * (len(data) - 4096)  # every page after the first destroyed
    path.write_bytes(bytes(data))
    with pytest.raises(StateError, match="corrupt"), StateStore(str(path)) as store:
        store.start_run(emit="all", output=None)
    assert path.read_bytes() == bytes(data)  # left as it was, for the user to inspect


def test_ledger_rows_travel_as_columns_and_land_as_rows(tmp_path: Path) -> None:
    other = "https://a.example/other.xml"
    tuples = [
        (signed(1), "https://a.example/p1", SM, 1_700_000_000),
        (signed(2**64 - 1), "https://a.example/p2", SM, None),  # the most negative signed
        (signed(3), "https://a.example/p3", other, 0),  # the epoch itself is a lastmod
        (signed(4), "https://a.example/p4", SM, None),
    ]
    columns = LedgerRows.of(tuples)
    assert len(columns) == 4
    assert columns.sitemaps == [(SM, 2), (other, 1), (SM, 1)]
    assert list(columns.fps) == [t[0] for t in tuples]
    assert columns.urls == [t[1] for t in tuples]
    assert list(columns.lastmods) == [1_700_000_000, NO_LASTMOD, 0, NO_LASTMOD]
    path = str(tmp_path / "s.sqlite")
    with StateStore(path) as store:
        store.start_run(emit="delta", output=None)
        store.add_urls("a.example", columns)
        store.commit(None)
        stored = store.db.execute(
            "SELECT u.fp, u.url, s.url, u.lastmod FROM urls u "
            "JOIN sitemaps s ON s.id = u.sitemap_id ORDER BY u.url"
        ).fetchall()
    assert stored == tuples
