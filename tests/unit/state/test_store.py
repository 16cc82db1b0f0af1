"""The state file on its own: schema, migrations, refusals, the lock, runs and removals."""

from __future__ import annotations

import hashlib
import sqlite3
from array import array
from typing import TYPE_CHECKING, Any

import pytest

from harvester.errors import StateError, StateLocked
from harvester.output.sink import JsonlSink
from harvester.state import ids
from harvester.state.chunks import NO_LASTMOD, LedgerView, pack, unpack_fps, unpack_urls
from harvester.state.ledger import LedgerReader, classify
from harvester.state.memory import HostState, SitemapState
from harvester.state.rows import LedgerRows, signed
from harvester.state.store import PAGE_SIZE, SCHEMA_VERSION, StateStore

if TYPE_CHECKING:
    from pathlib import Path

SM = "https://a.example/s.xml"


def fps(*names: str) -> array[int]:
    return array("q", [signed(hash(n) & (2**64 - 1)) for n in names])


def rows(*names: str, lastmod: int | None = None) -> LedgerRows:
    return LedgerRows.of(
        (fp, f"https://a.example/{n}", SM, lastmod)
        for fp, n in zip(fps(*names), names, strict=True)
    )


def test_a_new_file_gets_the_current_schema(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with StateStore(str(path)) as store:
        store.start_run(emit="all", output=None)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_new_file_has_large_pages_and_an_older_file_keeps_its_own(tmp_path: Path) -> None:
    def page_size(path: Path) -> int:
        db = sqlite3.connect(path)
        try:
            return int(db.execute("PRAGMA page_size").fetchone()[0])
        finally:
            db.close()

    new, old = tmp_path / "new.sqlite", tmp_path / "old.sqlite"
    StateStore(str(new)).close()
    assert page_size(new) == PAGE_SIZE == 16384
    StateStore(str(old), page_size=4096).close()  # as files made before PAGE_SIZE were
    last = 0
    for _ in range(2):  # reopened by this version: the pages stay, and the ledger works
        with StateStore(str(old)) as store:
            last = store.start_run(emit="delta", output=None).id
            store.add_urls("a.example", rows("p1", "p2", lastmod=last))
            store.commit(None)
            store.finish_run("complete")
        assert page_size(old) == 4096
    reader = LedgerReader(str(old), run_id=last + 1)
    try:
        memory = reader.host("a.example")
        assert reader.events(memory, fps("p1", "p3"), array("q", [1, 1])) == ["unchanged", "new"]
    finally:
        reader.close()


def test_a_host_is_fresh_until_the_ledger_holds_a_url_of_it(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sqlite")
    with StateStore(path) as store:
        run = store.start_run(emit="delta", output=None)
        store.finish_host(HostState("known.example", finished=True))  # a host, no URL
        store.add_urls("a.example", rows("p1"))
        store.commit(None)
    reader = LedgerReader(path, run.id + 1)
    try:
        for host, fresh in [("never.example", True), ("known.example", True), ("a.example", False)]:
            memory = reader.host(host)
            assert reader.fresh(memory) is fresh, host
            events = reader.events(memory, fps("p1", "p2"), array("q", [NO_LASTMOD] * 2))
            assert events == (["new", "new"] if fresh else ["unchanged", "new"]), host
    finally:
        reader.close()


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


@pytest.mark.parametrize("returning", [True, False], ids=["returning", "insert-select"])
def test_removed_only_from_sitemaps_in_the_removal_scope(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, returning: bool
) -> None:
    # Both ways to learn a new row's id (INSERT ... RETURNING needs SQLite 3.35): the
    # hosts and sitemaps of later runs are found again, not added twice.
    monkeypatch.setattr(ids, "RETURNING", returning)
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
        events = reader.events(memory, fps("p1", "p2", "p9"), array("q", [0, 0, 0]))
        assert events == [None, "new", "new"]
        reader.close()
        store.finish_run("complete")


def test_a_url_listed_without_its_lastmod_keeps_the_ledgers(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sqlite")
    with StateStore(path) as store:
        run = store.start_run(emit="delta", output=None)
        store.add_urls("a.example", rows("p1", "p2", lastmod=1_700_000_000))
        store.finish_host(HostState("a.example", [SitemapState(SM, None, "ok", 200, True)], [SM]))
        store.finish_run("complete")
    reader = LedgerReader(path, run.id + 1)
    memory = reader.host("a.example")
    lastmods = array("q", [NO_LASTMOD, 1_800_000_000, NO_LASTMOD])
    # p1 listed undated keeps 1_700_000_000; a dated URL and an unknown one stay as listed.
    carried = reader.carry(memory, fps("p1", "p2", "p9"), lastmods)
    assert list(carried) == [1_700_000_000, 1_800_000_000, NO_LASTMOD]
    assert list(lastmods) == [NO_LASTMOD, 1_800_000_000, NO_LASTMOD]  # not changed in place
    dated = array("q", [5, 6])
    assert reader.carry(memory, fps("p1", "p2"), dated) is dated  # nothing to carry
    reader.close()


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
    from harvester.state import schema as state_module

    path = tmp_path / "s.sqlite"
    db = sqlite3.connect(path)
    schema_1 = state_module.MIGRATIONS[0]
    assert isinstance(schema_1, str)
    db.executescript(schema_1)  # what harvester with schema 1 wrote
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


def test_a_version_3_file_gets_not_before_and_keeps_its_hosts(tmp_path: Path) -> None:
    from harvester.state import schema as state_module

    path = tmp_path / "s.sqlite"
    db = sqlite3.connect(path)
    for step in state_module.MIGRATIONS[:3]:  # schema 3, as a released harvester left it
        if isinstance(step, str):
            db.executescript(step)
        else:
            step(db)
    db.execute(f"PRAGMA application_id = {state_module.APPLICATION_ID}")
    db.execute("PRAGMA user_version = 3")
    db.execute("INSERT INTO hosts (name, trust) VALUES ('a.example', 'trusted')")
    db.commit()
    db.close()
    with StateStore(str(path)) as store:
        store.start_run(emit="all", output=None)
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert store.db.execute("SELECT name, trust, not_before FROM hosts").fetchall() == [
            ("a.example", "trusted", None)
        ]
        # A host deferred by this run is remembered; a later finish without it clears it.
        store.finish_host(HostState("a.example", not_before=2e9))
        store.commit(None)
        reader = LedgerReader(str(path), 1)
        assert reader.host("a.example").not_before == 2e9
        assert reader.host("b.example").not_before is None
        store.finish_host(HostState("a.example"))
        store.commit(None)
        assert reader.host("a.example").not_before is None
        reader.close()


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


def stored_urls(db: sqlite3.Connection) -> list[tuple[int, str, str, int | None, int]]:
    """Every URL of the ledger's chunks: (fp, url, sitemap, lastmod or None, run), by URL.

    Chunks a run retired are left out (until it completes they wait to be deleted).
    """
    out = []
    retiring = db.execute("SELECT 1 FROM sqlite_schema WHERE name = 'undo_retired'").fetchone()
    for sitemap, run, n, fp_blob, lm_blob, url_blob in db.execute(
        "SELECT s.url, c.run, c.n, c.fps, c.lastmods, c.urls FROM url_chunks c "
        "JOIN sitemaps s ON s.id = c.sitemap_id "
        + ("WHERE c.id NOT IN (SELECT id FROM undo_retired) " if retiring else "")
        + "ORDER BY c.id"
    ):
        chunk = zip(unpack_fps(fp_blob), unpack_urls(url_blob), unpack_fps(lm_blob), strict=True)
        listed = [
            (fp, url, sitemap, None if lm == NO_LASTMOD else lm, run) for fp, url, lm in chunk
        ]
        assert len(listed) == n
        out += listed
    return sorted(out, key=lambda r: (r[1], r[4]))


def test_ledger_rows_travel_as_chunks_and_land_as_one_row_per_sitemap(tmp_path: Path) -> None:
    other = "https://a.example/other.xml"
    tuples = [
        (signed(1), "https://a.example/p1", SM, 1_700_000_000),
        (signed(2**64 - 1), "https://a.example/p2", SM, None),  # the most negative signed
        (signed(3), "https://a.example/p3", other, 0),  # the epoch itself is a lastmod
        (signed(4), "https://a.example/p4\u00e9", SM, None),  # not ASCII
    ]
    packed = LedgerRows.of(tuples)
    assert len(packed) == 4
    assert packed.sitemaps == [(SM, 2), (other, 1), (SM, 1)]
    assert len(packed.chunks) == 3
    path = str(tmp_path / "s.sqlite")
    with StateStore(path) as store:
        run = store.start_run(emit="delta", output=None)
        store.add_urls("a.example", packed)
        store.commit(None)
        assert store.db.execute("SELECT count(*) FROM url_chunks").fetchone()[0] == 3
        assert stored_urls(store.db) == [(*t, run.id) for t in tuples]


def test_a_url_with_a_raw_newline_keeps_the_chunk_aligned() -> None:
    urls = ["https://a.example/1", "https://a.example/x\ny", "https://a.example/3"]
    _, _, blob = pack(array("q", [1, 2, 3]), array("q", [0, 0, 0]), urls)
    assert unpack_urls(blob) == [
        "https://a.example/1",
        "https://a.example/x%0Ay",
        "https://a.example/3",
    ]
    assert unpack_urls(pack(array("q"), array("q"), [])[2]) == []


def test_url_text_is_lz4_and_zstd_and_zlib_chunks_still_read() -> None:
    import zlib

    import zstandard

    urls = ["https://a.example/1", "https://a.example/é"]
    blob = pack(array("q", [1, 2]), array("q", [0, 0]), urls)[2]
    assert blob[:4] == b"\x04\x22\x4d\x18"  # an LZ4 frame
    assert unpack_urls(blob) == urls
    text = "\n".join(urls).encode()
    # written by earlier versions: zstd (level 1), and zlib before that
    assert unpack_urls(zstandard.ZstdCompressor(level=1).compress(text)) == urls
    assert unpack_urls(zlib.compress(text, 1)) == urls


def test_the_view_keeps_the_newest_lastmod_and_finds_each_fingerprint() -> None:
    older = (array("q", [5, -3, 9]).tobytes(), array("q", [50, 30, 90]).tobytes())
    newer = (array("q", [9, 5, 7]).tobytes(), array("q", [NO_LASTMOD, 51, 70]).tobytes())
    view = LedgerView.build([older, newer])
    assert list(view.fps) == [-3, 5, 7, 9]
    assert list(view.lastmods) == [30, 51, 70, 90]  # 9 listed again without one: keeps 90
    assert list(view.find(array("q", [9, 4, -3, 10, -4]))) == [3, -1, 0, -1, -1]
    assert len(LedgerView.build([])) == 0
    assert list(LedgerView.build([]).find(array("q", [1]))) == [-1]


def test_a_version_2_ledger_becomes_chunks_and_keeps_its_events(tmp_path: Path) -> None:
    from harvester.state import schema as state_module

    path = tmp_path / "s.sqlite"
    db = sqlite3.connect(path)
    for step in state_module.MIGRATIONS[:2]:
        assert isinstance(step, str)
        db.executescript(step)
    db.execute(f"PRAGMA application_id = {state_module.APPLICATION_ID}")
    db.execute("PRAGMA user_version = 2")
    db.execute("INSERT INTO runs (id, started, status, emit) VALUES (1, 0, 'complete', 'all')")
    db.execute("INSERT INTO hosts (id, name) VALUES (1, 'a.example')")
    db.execute("INSERT INTO sitemaps (id, host_id, url) VALUES (1, 1, ?)", (SM,))
    (p1, p2, gone) = fps("p1", "p2", "gone")
    db.executemany(
        "INSERT INTO urls (host_id, fp, url, sitemap_id, first_seen, last_seen, lastmod, removed)"
        " VALUES (1, ?, ?, 1, 1, 1, ?, ?)",
        [
            (p1, "https://a.example/p1", 100, None),
            (p2, "https://a.example/p2", None, None),
            (gone, "https://a.example/gone", 100, 1),  # removed by run 1
        ],
    )
    db.commit()
    db.close()
    with StateStore(str(path)) as store:
        run = store.start_run(emit="delta", output=None)
        assert stored_urls(store.db) == [
            (p1, "https://a.example/p1", SM, 100, 1),
            (p2, "https://a.example/p2", SM, None, 1),
        ]
        assert store.db.execute(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'urls'"
        ).fetchone() == (0,)
        reader = LedgerReader(str(path), run.id)
        memory = reader.host("a.example")
        events = reader.events(memory, fps("p1", "p2", "gone"), array("q", [101, 5, 100]))
        assert events == ["changed", "changed", "new"]
        assert reader.events(memory, fps("p1", "p2"), array("q", [100, NO_LASTMOD])) == [
            "unchanged",
            "unchanged",
        ]
        reader.close()
        # The migrated chunks retire like any: p2 is no longer listed.
        store.add_urls("a.example", rows("p1", lastmod=100))
        removed = store.finish_host(
            HostState("a.example", [SitemapState(SM, None, "ok", 200, True)], [SM])
        )
        assert [r["url"] for r in removed] == ["https://a.example/p2"]


def test_a_url_still_listed_by_an_unchanged_sitemap_is_not_removed(tmp_path: Path) -> None:
    other = "https://a.example/other.xml"
    both = LedgerRows.of(
        [
            (fp, f"https://a.example/{n}", s, None)
            for fp, n, s in zip(
                fps("p1", "shared", "shared"),
                ["p1", "shared", "shared"],
                [SM, SM, other],
                strict=True,
            )
        ]
    )
    path = str(tmp_path / "s.sqlite")
    with StateStore(path) as store:
        store.start_run(emit="delta", output=None)
        store.add_urls("a.example", both)
        read = [SitemapState(SM, None, "ok", 200, True), SitemapState(other, None, "ok", 200, True)]
        store.finish_host(HostState("a.example", read, [SM, other]))
        store.finish_run("complete")
    with StateStore(path) as store:
        store.start_run(emit="delta", output=None)
        # SM dropped "shared"; the other sitemap answered 304 (carried): it still lists it.
        store.add_urls("a.example", rows("p1"))
        carried = SitemapState(other, None, "not_modified", 304, True, carried=True)
        removed = store.finish_host(
            HostState("a.example", [SitemapState(SM, None, "ok", 200, True), carried], [SM])
        )
        assert removed == []
        # The retired chunk of SM is gone; the other sitemap's chunk stands.
        assert [(u, s) for _, u, s, _, _ in stored_urls(store.db)] == [
            ("https://a.example/p1", SM),
            ("https://a.example/shared", other),
        ]


def test_a_sitemap_read_in_part_every_run_does_not_grow_the_ledger(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sqlite")
    partial = HostState("a.example", [SitemapState(SM, None, "partial", 200)], [])
    counts = []
    for _ in range(4):
        with StateStore(path) as store:
            store.start_run(emit="delta", output=None)
            store.add_urls("a.example", rows("p1", "p2"))
            assert store.finish_host(partial) == []
            store.finish_run("complete")
            counts.append(store.db.execute("SELECT count(*) FROM url_chunks").fetchone()[0])
    assert counts == [1, 1, 1, 1]


def test_audit_picks_go_round_the_sitemaps_and_take_the_newest_listing(tmp_path: Path) -> None:
    from harvester.state.samples import picks as pick

    other = "https://a.example/other.xml"
    path = str(tmp_path / "s.sqlite")
    low, mid, high = signed(1), signed(2), signed(3)
    with StateStore(path) as store:
        store.start_run(emit="delta", output=None)
        store.add_urls(
            "a.example",
            LedgerRows.of(
                [
                    (mid, "https://a.example/mid", SM, 100),
                    (low, "https://a.example/low", SM, 100),
                    (high, "https://a.example/high", other, None),
                ]
            ),
        )
        # A partial read of SM lists "low" again with a newer lastmod (both chunks stand).
        store.add_urls("a.example", LedgerRows.of([(low, "https://a.example/low", SM, 200)]))
        store.commit(None)
        host_id = store.db.execute("SELECT id FROM hosts").fetchone()[0]
        picks = pick(store, host_id, 3)
        assert picks == [
            (low, "https://a.example/low", 200),  # rank 0 of SM, its newest listing
            (high, "https://a.example/high", None),  # rank 0 of the other sitemap
            (mid, "https://a.example/mid", 100),  # rank 1 of SM
        ]
        assert [p[0] for p in pick(store, host_id, 2)] == [low, high]


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_another_applications_database_is_left_byte_for_byte(tmp_path: Path, journal: str) -> None:
    """Refused before any write (issue 50 item 7): a read-write open switched it to WAL."""
    path = tmp_path / "app.sqlite"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA journal_mode = {journal}")
    db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    db.executemany("INSERT INTO customers (name) VALUES (?)", [(f"c{i}",) for i in range(500)])
    db.commit()
    db.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    files = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(StateError, match="not a harvester state file") as info:
        StateStore(str(path))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == files  # no -wal, -shm, .lock
    assert "--state" in str(info.value)  # the advice: a path of its own


def test_a_store_whose_last_commit_failed_follows_sqlites_transaction(tmp_path: Path) -> None:
    """After SQLite rolled a transaction back on its own, the store neither commits nor
    rolls back one that is not there ("cannot commit/rollback - no transaction is active")."""
    path = str(tmp_path / "s.sqlite")
    store = StateStore(path)
    store.start_run(emit="all", output=None)
    store.add_urls("a.example", rows("p1"))
    store.db.execute("ROLLBACK")  # as SQLite does itself on SQLITE_FULL
    store.commit(None)  # a transaction of its own, committed
    store.add_urls("a.example", rows("p2"))
    store.db.execute("ROLLBACK")
    store.close()  # no error: nothing to roll back
    with StateStore(path) as again:
        assert again.db.execute("SELECT count(*) FROM url_chunks").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("code", "words", "not_words"),
    [
        (8, "cannot write the state file", "corrupt"),  # SQLITE_READONLY
        (14, "cannot write the state file", "corrupt"),  # SQLITE_CANTOPEN
        (26, "corrupt state file", "permissions"),  # SQLITE_NOTADB
        (11, "corrupt state file", "permissions"),  # SQLITE_CORRUPT
        (13, "errno 28 ENOSPC", "corrupt"),  # SQLITE_FULL
    ],
)
def test_sqlite_errors_are_worded_by_what_they_mean(code: int, words: str, not_words: str) -> None:
    from harvester.state.access import state_error

    exc = sqlite3.OperationalError("what SQLite said")
    exc.sqlite_errorcode = code
    exc.sqlite_errorname = "SQLITE_X"
    message = str(state_error(exc, "s.sqlite", "opening it"))
    assert words in message
    assert not_words not in message
    assert "what SQLite said" in message


def test_a_read_only_filesystem_is_worded_as_cannot_write() -> None:
    import errno

    from harvester.state.access import state_error

    exc = OSError(errno.EROFS, "Read-only file system")
    message = str(state_error(exc, "s.sqlite"))
    assert "cannot write the state file" in message
    assert "errno 30 EROFS" in message
    assert "move it away to start afresh" not in message


def test_a_run_keeps_its_format_for_its_output_and_may_go_on_in_another(tmp_path: Path) -> None:
    from harvester.errors import ConfigError

    path = str(tmp_path / "s.sqlite")
    with StateStore(path) as store:
        run = store.start_run(emit="all", output="o.jsonl", fmt="jsonl")
    with StateStore(path) as store, pytest.raises(ConfigError, match="as jsonl, not csv"):
        store.start_run(emit="all", output="o.jsonl", fmt="csv")
    with StateStore(path) as store:  # another output: no file would mix two formats
        again = store.start_run(emit="all", output="o.csv", fmt="csv")
        assert (again.id, again.format, again.output) == (run.id, "jsonl", "o.jsonl")
        store.switch_output("o.csv", "csv")
    with StateStore(path) as store:  # from now on the run writes o.csv, as CSV
        last = store.start_run(emit="all", output="o.csv", fmt="csv")
        assert (last.id, last.format, last.output, last.resumed) == (run.id, "csv", "o.csv", True)


def test_a_redone_run_finds_the_state_the_last_complete_run_left(tmp_path: Path) -> None:
    """``redo`` (its output lost, issue 50 item 2): validators, discovery, checkpoints and
    the ledger as the last complete run left them, so the redone run has the same events."""
    path = str(tmp_path / "s.sqlite")

    def dump(db: sqlite3.Connection) -> tuple[list[Any], list[Any], list[Any]]:
        hosts = db.execute("SELECT * FROM hosts WHERE name = 'a.example'").fetchall()
        sitemaps = db.execute(
            "SELECT s.* FROM sitemaps s JOIN hosts h ON h.id = s.host_id "
            "WHERE h.name = 'a.example' ORDER BY s.id"
        ).fetchall()
        return hosts, sitemaps, [u for u in stored_urls(db) if "a.example" in u[1]]

    def read(etag: str) -> HostState:
        ok = SitemapState(SM, None, "ok", 200, True, etag=etag, urls=3)
        return HostState("a.example", [ok], [SM], discovery={"source": etag})

    with StateStore(path) as store:
        store.start_run(emit="delta", output="o.jsonl")
        store.add_urls("a.example", rows("p1", "p2", "p3"))
        store.finish_host(read('"1"'))
        store.finish_run("complete")
        before = dump(store.db)
    with StateStore(path) as store:
        run = store.start_run(emit="delta", output="o.jsonl")
        store.add_urls("a.example", rows("p1", "p4"))
        removed = store.finish_host(read('"2"'))
        store.add_urls("new.example", rows("q1"))
        store.finish_host(HostState("new.example", discovery={"source": "x"}))
        store.commit(5)
        finished = store.finished_hosts()
        assert "a.example" in finished
        store.redo("again.jsonl")
        assert "a.example" not in finished  # its redo harvests it again
        finished.close()
        assert dump(store.db) == before
        row = store.db.execute("SELECT discovery, last_run FROM hosts WHERE name = 'new.example'")
        assert row.fetchone() == (None, None)  # a host new in the run: new again
        assert store.db.execute(
            "SELECT output, output_bytes, hosts, new FROM runs WHERE id = ?", (run.id,)
        ).fetchone() == ("again.jsonl", 0, 0, 0)
        # Redone: the same removals, and the same events for the workers.
        store.add_urls("a.example", rows("p1", "p4"))
        assert store.finish_host(read('"2"')) == removed
        assert [r["url"] for r in removed] == ["https://a.example/p2", "https://a.example/p3"]
        store.finish_run("complete")
        assert store.db.execute("SELECT count(*) FROM undo_retired").fetchone()[0] == 0
    assert [u for _, u, _, _, _ in stored_urls(sqlite3.connect(path))] == [
        "https://a.example/p1",
        "https://a.example/p4",
    ]
