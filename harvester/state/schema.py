"""State schema: the SQLite file's tables, their migrations, and how the file is opened.

In: a state file path. Out: a connection in WAL mode whose schema is at
``SCHEMA_VERSION`` (``connect`` then ``migrate``), and the exclusive lock that keeps
two runs off one file (``lock``). Every table of the state file is created here;
``store.py`` writes them, ``ledger.py`` reads them.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from array import array
from itertools import groupby
from typing import TYPE_CHECKING

from harvester.errors import StateError, StateLocked
from harvester.state.access import (
    APPLICATION_ID,
    check_file,
    check_writable,
    forget_created,
    sidecars,
    state_error,
)
from harvester.state.chunks import NO_LASTMOD, pack

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "APPLICATION_ID",
    "INSERT_CHUNK",
    "MIGRATIONS",
    "PAGE_SIZE",
    "RETURNING",
    "SCHEMA_VERSION",
    "connect",
    "lock",
    "migrate",
]

SCHEMA_VERSION = 7

_CHUNKS = """
CREATE TABLE url_chunks (
    id INTEGER PRIMARY KEY,
    host_id INTEGER NOT NULL,
    sitemap_id INTEGER NOT NULL,
    run INTEGER NOT NULL,          -- the run that listed these URLs (runs.id)
    n INTEGER NOT NULL,            -- how many
    fps BLOB NOT NULL,             -- signed 64-bit fingerprints, little-endian
    lastmods BLOB NOT NULL,        -- epoch seconds UTC, little-endian; -2**63: none
    urls BLOB NOT NULL             -- the canonical URLs, newline-joined UTF-8, LZ4 (or zstd, zlib)
)"""
_CHUNKS_INDEX = "CREATE INDEX url_chunks_by_host ON url_chunks (host_id, run)"
INSERT_CHUNK = (
    "INSERT INTO url_chunks (host_id, sitemap_id, run, n, fps, lastmods, urls) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_MIGRATED_CHUNK = 10_000  # URLs per chunk when rows of schema 2 become chunks
# 16 KiB pages, not SQLite's 4 KiB: the writer's WAL appends and checkpoints make a
# quarter of the system calls, for a slightly larger file. 64 KiB pages save a little
# more but a ~24 KB chunk (512 URLs) leaves a third of one empty
# (benchmarks/bench_writer.py compares them). Existing files keep their page size
# (changing it means a VACUUM).
PAGE_SIZE = 16384
# INSERT ... RETURNING (SQLite 3.35+): a new host or sitemap row and its id in one
# statement, not an INSERT and a SELECT.
RETURNING = sqlite3.sqlite_version_info >= (3, 35)


def _chunk_the_ledger(db: sqlite3.Connection) -> None:
    """Schema 3: the rows of ``urls`` become chunks, per (host, sitemap, last run seen).

    Rows marked removed are dropped: a URL that comes back is ``new`` either way.
    """
    db.execute(_CHUNKS)
    db.execute(_CHUNKS_INDEX)
    rows = db.execute(
        "SELECT host_id, sitemap_id, last_seen, fp, url, coalesce(lastmod, ?) FROM urls "
        "WHERE removed IS NULL ORDER BY host_id, sitemap_id, last_seen",
        (NO_LASTMOD,),
    )
    for key, group in groupby(rows, key=lambda r: r[:3]):
        listed = list(group)
        for start in range(0, len(listed), _MIGRATED_CHUNK):
            part = listed[start : start + _MIGRATED_CHUNK]
            fps = array("q", [r[3] for r in part])
            lastmods = array("q", [r[5] for r in part])
            db.execute(INSERT_CHUNK, (*key, len(part), *pack(fps, lastmods, [r[4] for r in part])))
    db.execute("DROP TABLE urls")


# Migration i takes a file from user_version i to i + 1. Never edit a released one: append.
# A string is a script; a function does what SQL alone cannot (it runs in the same
# transaction as the version bump).
MIGRATIONS: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        started REAL NOT NULL,
        finished REAL,
        status TEXT NOT NULL,          -- running | complete | interrupted | failed | abandoned
        pid INTEGER,
        emit TEXT NOT NULL,
        output TEXT,
        output_bytes INTEGER NOT NULL DEFAULT 0,   -- committed length of the output
        invocations INTEGER NOT NULL DEFAULT 1,    -- 1 + times it was resumed
        hosts INTEGER NOT NULL DEFAULT 0,
        new INTEGER NOT NULL DEFAULT 0,
        changed INTEGER NOT NULL DEFAULT 0,
        unchanged INTEGER NOT NULL DEFAULT 0,
        removed INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE hosts (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        discovery BLOB,                -- JSON: source, refs, origin, redirects, missing, robots
        discovered_at REAL,
        last_run INTEGER,              -- the last run that finished this host (its checkpoint)
        last_finished REAL
    );
    CREATE TABLE sitemaps (
        id INTEGER PRIMARY KEY,
        host_id INTEGER NOT NULL REFERENCES hosts(id),
        url TEXT NOT NULL,
        parent TEXT,
        kind TEXT,
        etag TEXT,
        last_modified TEXT,
        content_hash BLOB,
        urls INTEGER,
        children BLOB,                 -- JSON [[url, lastmod epoch], ...] of an index
        index_lastmod INTEGER,
        status TEXT,
        http_status INTEGER,
        complete INTEGER NOT NULL DEFAULT 0,
        fetched_at REAL,
        last_complete REAL,
        UNIQUE (host_id, url)
    );
    CREATE TABLE urls (
        host_id INTEGER NOT NULL,
        fp INTEGER NOT NULL,           -- signed 64-bit fingerprint of the canonical URL
        url TEXT NOT NULL,
        sitemap_id INTEGER NOT NULL,
        first_seen INTEGER NOT NULL,   -- run ids (see runs)
        last_seen INTEGER NOT NULL,
        lastmod INTEGER,               -- epoch seconds UTC
        removed INTEGER,               -- the run that found it no longer listed
        PRIMARY KEY (host_id, fp)
    ) WITHOUT ROWID;
    """,
    # 2: the lastmod audit (issue 7): per-host distribution verdict and trust, and the
    # sampled pages whose content fingerprints are compared across runs; the final URL
    # of a redirected sitemap.
    """
    ALTER TABLE hosts ADD COLUMN audit BLOB;          -- JSON: verdict, reason, figures, histogram
    ALTER TABLE hosts ADD COLUMN trust TEXT;          -- trusted | untrusted | unknown
    ALTER TABLE hosts ADD COLUMN trust_evidence BLOB; -- JSON: the TrustScore
    ALTER TABLE hosts ADD COLUMN audited_at REAL;
    ALTER TABLE sitemaps ADD COLUMN final_url TEXT;   -- where it redirected to (fetched directly)
    CREATE TABLE samples (
        id INTEGER PRIMARY KEY,
        host_id INTEGER NOT NULL,
        fp INTEGER NOT NULL,
        url TEXT NOT NULL,
        sampled_at REAL NOT NULL,
        sitemap_lastmod INTEGER,       -- epoch seconds, as the sitemap said at sampling
        fingerprint INTEGER,           -- signed 64-bit simhash of the page's main text
        page_modified INTEGER,         -- the page's own best modification date, epoch
        agreement TEXT,                -- agree | disagree | no_signal
        http_status INTEGER,
        error TEXT
    );
    CREATE INDEX samples_by_url ON samples (host_id, fp, id);
    """,
    # 3: the ledger as chunks (one row per sitemap per batch, blobs: harvester/state/chunks.py)
    # instead of a row per URL; see _chunk_the_ledger.
    _chunk_the_ledger,
    # 4: a host that answered 429/503 with a Retry-After beyond fetch.retry_after_max is
    # not asked again before this wall-clock time (issue 30 item 6).
    """
    ALTER TABLE hosts ADD COLUMN not_before REAL;
    """,
    # 5: a run's output format, and its undo journal (issue 50 items 2 and 3). A run
    # whose output is lost before it completes is redone from where the last complete
    # run left the state (``undo.py``): the rows a finished host changed are kept
    # here as they were, until the run completes or is abandoned.
    """
    ALTER TABLE runs ADD COLUMN format TEXT;          -- jsonl | csv | parquet
    ALTER TABLE runs ADD COLUMN hosts_before INTEGER; -- max(hosts.id) when the run began
    ALTER TABLE runs ADD COLUMN sitemaps_before INTEGER;
    CREATE TABLE undo_hosts (
        id INTEGER PRIMARY KEY, discovery BLOB, discovered_at REAL, audit BLOB,
        not_before REAL, last_run INTEGER, last_finished REAL
    );
    CREATE TABLE undo_sitemaps (
        id INTEGER PRIMARY KEY, parent TEXT, kind TEXT, etag TEXT, last_modified TEXT,
        content_hash BLOB, urls INTEGER, children BLOB, index_lastmod INTEGER, status TEXT,
        http_status INTEGER, complete INTEGER, fetched_at REAL, last_complete REAL,
        final_url TEXT
    );
    CREATE TABLE undo_retired (id INTEGER PRIMARY KEY);  -- url_chunks to delete on completion
    """,
    # 6: adaptive revisit (issue 53 items 4 and 5, ``revisit.py``): per sitemap, when it
    # was last asked, the interval then set, its unchanged checks in a row and last
    # outcomes, whether it lists news; per index, whether a child whose lastmod in it
    # did not move was found changed (its lastmod then never skips a child). Rows of
    # older files start with no check: due on the next run, as before.
    """
    ALTER TABLE sitemaps ADD COLUMN checked_at REAL;   -- wall-clock time of its last check
    ALTER TABLE sitemaps ADD COLUMN revisit_interval REAL;  -- seconds (NULL, 0: every run)
    ALTER TABLE sitemaps ADD COLUMN quiet INTEGER;  -- unchanged checks in a row
    ALTER TABLE sitemaps ADD COLUMN history TEXT;  -- n, s, c; newest last
    ALTER TABLE sitemaps ADD COLUMN news INTEGER;
    ALTER TABLE sitemaps ADD COLUMN index_lied INTEGER;
    ALTER TABLE undo_sitemaps ADD COLUMN checked_at REAL;
    ALTER TABLE undo_sitemaps ADD COLUMN revisit_interval REAL;
    ALTER TABLE undo_sitemaps ADD COLUMN quiet INTEGER;
    ALTER TABLE undo_sitemaps ADD COLUMN history TEXT;
    ALTER TABLE undo_sitemaps ADD COLUMN news INTEGER;
    ALTER TABLE undo_sitemaps ADD COLUMN index_lied INTEGER;
    """,
    # 7: a host whose patient late attempt failed gets its next one on a backoff (issue 53,
    # ``revisit.late_due``): when the last one failed, the interval then set, failures in
    # a row. Older files start with none: every host gets its late attempt, as before.
    """
    ALTER TABLE hosts ADD COLUMN late_failed_at REAL;
    ALTER TABLE hosts ADD COLUMN late_interval REAL;
    ALTER TABLE hosts ADD COLUMN late_failures INTEGER;
    ALTER TABLE undo_hosts ADD COLUMN late_failed_at REAL;
    ALTER TABLE undo_hosts ADD COLUMN late_interval REAL;
    ALTER TABLE undo_hosts ADD COLUMN late_failures INTEGER;
    """,
)


def lock(path: str) -> int:
    """Take the exclusive lock beside ``path``; raise ``StateLocked`` naming its holder.

    A lock file that cannot be made (a read-only directory or filesystem) is a
    ``StateError`` saying the state cannot be written, with advice that fits it.
    """
    lock_path = path + ".lock"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise state_error(exc, path, "creating its lock file " + lock_path) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "another process"
        os.close(fd)
        raise StateLocked(
            f"the state file is in use by a run still going ({holder}); "
            "two runs must not share one state file",
            url=path,
        ) from None
    # The lock is the flock, not the file: a file left by a killed run is simply reused.
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
    return fd


def connect(path: str, page_size: int) -> sqlite3.Connection:
    """Open the state file in WAL mode with the writer's settings.

    Before SQLite opens it for writing, the file is checked (``access.check_file``:
    another application's file or a newer harvester's is refused untouched) and so
    is whether it can be written (``access.check_writable``). Raises ``StateError``
    worded by ``access.state_error``; ``-wal``/``-shm`` files this open created are
    removed again when it fails.
    """
    check_file(path, SCHEMA_VERSION)
    check_writable(path)
    existed = tuple(os.path.exists(p) for p in sidecars(path))
    db: sqlite3.Connection | None = None
    try:
        # Used by one thread at a time, not always the one that opened it: a distributed
        # shard opens it in its task's thread and writes from its process's shard loop
        # (harvester.distributed.occupancy), never two at once, which SQLite allows.
        db = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
        # Before WAL mode creates the file (a no-op on an existing one, which keeps its own).
        db.execute(f"PRAGMA page_size = {int(page_size)}")
        db.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode: a power cut may lose the last commits, never corrupt; a lost
        # commit only makes the state lag the output, which resume handles (see above).
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA cache_size = -2048")  # 2 MiB page cache, whatever the ledger size
        db.execute("PRAGMA temp_store = MEMORY")
    except sqlite3.Error as exc:
        if db is not None:
            db.close()
        forget_created(path, (existed[0], existed[1]))
        raise state_error(exc, path, "opening it") from exc
    return db


def migrate(db: sqlite3.Connection, path: str) -> None:
    """Bring the file to ``SCHEMA_VERSION``, one migration per transaction; refuse a file
    that is another application's or a newer harvester's (``StateError``)."""
    try:
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        empty = db.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0] == 0
    except sqlite3.Error as exc:
        raise state_error(exc, path, "reading its schema") from exc
    # (check_file read the header; these read what SQLite sees, a -wal included.)
    if not empty and app_id != APPLICATION_ID:
        raise StateError(
            "not a harvester state file (another application's SQLite database); give"
            " --state a path of its own",
            url=path,
        )
    if version > SCHEMA_VERSION:
        raise StateError(
            f"written by a newer harvester (schema {version}; this one knows up to "
            f"{SCHEMA_VERSION}); upgrade harvester or use another state file",
            url=path,
        )
    try:
        _migrate(db, version)
    except sqlite3.Error as exc:
        doing = f"migrating it from schema {version}" if version else "creating its tables"
        raise state_error(exc, path, doing) from exc


def _migrate(db: sqlite3.Connection, version: int) -> None:
    for target in range(version, SCHEMA_VERSION):
        step = MIGRATIONS[target]
        bump = f"PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {target + 1};"
        if isinstance(step, str):
            # executescript commits first; the whole step then runs in one transaction.
            db.executescript(f"BEGIN IMMEDIATE; {step}; {bump} COMMIT;")
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            step(db)
            for pragma in bump.split(";")[:2]:
                db.execute(pragma)
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
