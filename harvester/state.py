"""State stage (writer side): the SQLite file that makes cron runs incremental and resumable.

In: the state path, the run's options, and from the workers ``LedgerRows``
batches (packed chunks, ``chunks.py``) and finished hosts' ``HostState`` (see
``ledger.py``). Out: the state file, the removed-URL records of each finished
host, and the run to resume.

One process writes it: the parent's writer (``shards._Writer``), in batched
transactions; workers read it through ``ledger.LedgerReader`` (WAL mode, so
readers never block the writer). The schema is versioned with ``PRAGMA
user_version`` and migrated forward in order; a file from a newer harvester
is refused, a file that is not a harvester state file (``application_id``) or
is corrupt is an error, never replaced.

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

A lock (``flock`` on ``STATE.lock``) keeps two runs off one state file; the
kernel drops it when its process dies, so a lock left by a killed run is taken
over by the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import sqlite3
from array import array
from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from harvester.chunks import NO_LASTMOD, LedgerView, pack, unpack_fps, unpack_urls
from harvester.errors import StateError, StateLocked
from harvester.ledger import EMIT_EVENTS, dump_json, iso, now

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from harvester.ledger import HostState, LedgerRows

__all__ = [
    "PAGE_SIZE",
    "SCHEMA_VERSION",
    "RunInfo",
    "StateStore",
    "default_state_path",
]

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
            raise StateError(f"state file: {exc}", url=self.path) from exc

    return cast("Callable[Concatenate[StateStore, _P], _R]", translated)


SCHEMA_VERSION = 3
APPLICATION_ID = 0x48525653  # "HRVS": tells our state files from any other SQLite file

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
_INSERT_CHUNK = (
    "INSERT INTO url_chunks (host_id, sitemap_id, run, n, fps, lastmods, urls) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_MIGRATED_CHUNK = 10_000  # URLs per chunk when rows of schema 2 become chunks
# 16 KiB pages, not SQLite's 4 KiB: the writer's WAL appends and checkpoints make a
# quarter of the system calls. Its state calls took 6-20 % less CPU (three runs of
# benchmarks/bench_writer.py) for a file ~6 % larger. 64 KiB pages saved up to 27 %
# but made the file a third larger: a ~24 KB chunk (512 URLs) leaves a third of one
# empty. Existing files keep their page size (changing it means a VACUUM).
PAGE_SIZE = 16384
# INSERT ... RETURNING (SQLite 3.35+): a new host or sitemap row and its id in one
# statement, not an INSERT and a SELECT.
_RETURNING = sqlite3.sqlite_version_info >= (3, 35)


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
            db.execute(_INSERT_CHUNK, (*key, len(part), *pack(fps, lastmods, [r[4] for r in part])))
    db.execute("DROP TABLE urls")


# Migration i takes a file from user_version i to i + 1. Never edit a released one: append.
# A string is a script; a function does what SQL alone cannot (it runs in the same
# transaction as the version bump).
_MIGRATIONS: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
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
    # 3: the ledger as chunks (one row per sitemap per batch, blobs: harvester/chunks.py)
    # instead of a row per URL; see _chunk_the_ledger.
    _chunk_the_ledger,
)


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
    output: str | None  # output path of the run (of its first invocation when resumed)
    output_bytes: int  # committed length of that output


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
        self._lock_fd = _lock(path)
        try:
            self._db = _connect(path, page_size)
            _migrate(self._db, path)
        except BaseException:
            os.close(self._lock_fd)
            raise
        self.run: RunInfo | None = None
        self._host_ids: dict[str, int] = {}
        self._sitemap_ids: dict[tuple[int, str], int] = {}
        self._in_tx = False
        self.counts = {"new": 0, "changed": 0, "unchanged": 0, "removed": 0, "hosts": 0}

    # -- runs ------------------------------------------------------------------

    @property
    def run_emit(self) -> str:
        """The ``--emit`` mode of the run (a resumed run keeps its own)."""
        return self._require_run().emit

    def start_run(self, *, emit: str, output: str | None, resume: bool = True) -> RunInfo:
        """Resume the last run if it did not finish (and ``resume``), else start a new one.

        A run left ``running`` (its process died: we hold the lock), ``interrupted``
        or ``failed`` is resumed with its own ``emit`` mode; with ``resume=False``
        it is marked ``abandoned`` instead (its committed records stay recorded).
        Raises ``StateError`` when the file turns out to be corrupt.
        """
        try:
            return self._start_run(emit, output, resume)
        except sqlite3.DatabaseError as exc:
            if self._in_tx:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                self._in_tx = False
            raise StateError(
                f"corrupt state file ({exc}); move it away to start afresh", url=self.path
            ) from exc

    def _start_run(self, emit: str, output: str | None, resume: bool) -> RunInfo:
        row = self._db.execute(
            "SELECT id, status, emit, output, output_bytes FROM runs ORDER BY id DESC LIMIT 1"
        ).fetchone()
        with self._tx():
            if row is not None and row[1] in ("running", "interrupted", "failed"):
                run_id, _status, old_emit, old_output, committed = row
                if resume:
                    self._db.execute(
                        "UPDATE runs SET status = 'running', pid = ?, "
                        "invocations = invocations + 1 WHERE id = ?",
                        (os.getpid(), run_id),
                    )
                    self.run = RunInfo(run_id, old_emit, True, old_output, committed)
                    for name in ("new", "changed", "unchanged", "removed", "hosts"):
                        self.counts[name] = self._db.execute(
                            f"SELECT {name} FROM runs WHERE id = ?",  # noqa: S608 - fixed names
                            (run_id,),
                        ).fetchone()[0]
                    return self.run
                self._db.execute(
                    "UPDATE runs SET status = 'abandoned', finished = ? WHERE id = ?",
                    (now(), run_id),
                )
            if emit not in EMIT_EVENTS:
                raise StateError(f"unknown emit mode {emit!r}")
            cur = self._db.execute(
                "INSERT INTO runs (started, status, pid, emit, output) "
                "VALUES (?, 'running', ?, ?, ?)",
                (now(), os.getpid(), emit, output),
            )
            assert cur.lastrowid is not None
            self.run = RunInfo(cur.lastrowid, emit, False, output, 0)
        return self.run

    @_sql_errors
    def finish_run(self, status: str) -> None:
        """Mark the run ``complete``, ``interrupted`` or ``failed`` (committing first)."""
        run = self._require_run()
        self.commit(None)
        with self._tx():
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
            host_id = self._host_id(host)
            for (sitemap, n), blobs in zip(rows.sitemaps, rows.chunks, strict=True):
                values.append((host_id, self._sitemap_id(host_id, sitemap), run_id, n, *blobs))
        self._db.executemany(_INSERT_CHUNK, values)

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
        host_id = self._host_id(state.host)
        t = now()
        for s in state.sitemaps:
            sid = self._sitemap_id(host_id, s.url)
            if s.complete and not s.carried:
                self._db.execute(
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
                self._db.execute(
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
                self._db.execute(
                    "UPDATE sitemaps SET status = ?, http_status = ?, fetched_at = ? WHERE id = ?",
                    (s.status, s.http_status, t, sid),
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
        removed: list[dict[str, Any]] = []
        if not state.finished:
            return removed
        scope = {self._sitemap_id(host_id, url) for url in state.removal_scope}
        removed = self._retire(host_id, state.host, scope, run.id)
        self._db.execute(
            "UPDATE hosts SET last_run = ?, last_finished = ? WHERE id = ?", (run.id, t, host_id)
        )
        self.counts["removed"] += len(removed)
        self.counts["hosts"] += 1
        return removed

    def _retire(
        self, host_id: int, host: str, scope: set[int], run_id: int
    ) -> list[dict[str, Any]]:
        """Drop a finished host's chunks this run replaced; return its removed URLs as records.

        Earlier chunks of a sitemap in ``scope`` (read in full this run, or no longer
        listed) are replaced by this run's: those of their URLs that nothing lists any
        more (neither this run's chunks nor an earlier chunk of a sitemap outside the
        scope, say one that failed this time) are the removed ones. An earlier chunk
        of a sitemap read only in part is dropped once this run listed all its URLs
        again, so a sitemap that keeps failing midway does not grow the ledger.
        """
        earlier = self._db.execute(
            "SELECT id, sitemap_id FROM url_chunks WHERE host_id = ? AND run < ?",
            (host_id, run_id),
        ).fetchall()
        if not earlier:
            return []  # a host new to the ledger (every first run): nothing to retire
        read = {
            sid
            for (sid,) in self._db.execute(
                "SELECT DISTINCT sitemap_id FROM url_chunks WHERE host_id = ? AND run = ?",
                (host_id, run_id),
            )
        }
        gone = {cid for cid, sid in earlier if sid in scope}
        partial = {cid for cid, sid in earlier if sid in read and sid not in scope}
        if not gone and not partial:
            return []  # unchanged sitemaps (304) only: their chunks stand
        listed: list[tuple[bytes, bytes]] = []  # this run's chunks, and earlier kept ones
        current: list[tuple[bytes, bytes]] = []  # this run's chunks
        for cid, run, fps, lastmods in self._db.execute(
            "SELECT id, run, fps, lastmods FROM url_chunks WHERE host_id = ?", (host_id,)
        ):
            if run == run_id:
                current.append((fps, lastmods))
                listed.append((fps, lastmods))
            elif cid not in gone:
                listed.append((fps, lastmods))
        still = LedgerView.build(listed)
        now_listed = LedgerView.build(current)
        removed: list[dict[str, Any]] = []
        reported: set[int] = set()
        drop: list[int] = []
        # Newest first: a URL in two retired chunks is reported with its latest lastmod.
        for cid, fps_blob, lastmods_blob in self._db.execute(
            "SELECT id, fps, lastmods FROM url_chunks WHERE host_id = ? AND run < ? "
            "ORDER BY run DESC, id DESC",
            (host_id, run_id),
        ):
            if cid in partial:
                fps = unpack_fps(fps_blob)
                if min(now_listed.find(fps), default=0) >= 0:
                    drop.append(cid)  # every URL of it listed again this run
                continue
            if cid not in gone:
                continue
            drop.append(cid)
            fps = unpack_fps(fps_blob)
            lost = [i for i, at in enumerate(still.find(fps)) if at < 0 and fps[i] not in reported]
            if not lost:
                continue
            lastmods = unpack_fps(lastmods_blob)
            (urls_blob, sitemap) = self._db.execute(
                "SELECT c.urls, s.url FROM url_chunks c JOIN sitemaps s ON s.id = c.sitemap_id "
                "WHERE c.id = ?",
                (cid,),
            ).fetchone()
            urls = unpack_urls(urls_blob)
            for i in lost:
                reported.add(fps[i])
                lastmod = lastmods[i]
                removed.append(
                    {
                        "loc": urls[i],
                        "url": urls[i],
                        "host": host,
                        "sitemap": sitemap,
                        "lastmod": iso(None if lastmod == NO_LASTMOD else lastmod),
                        "event": "removed",
                    }
                )
        for start in range(0, len(drop), 500):
            part = drop[start : start + 500]
            marks = ",".join("?" * len(part))
            self._db.execute(f"DELETE FROM url_chunks WHERE id IN ({marks})", part)  # noqa: S608
        return removed

    @_sql_errors
    def commit(self, output_bytes: int | None) -> None:
        """Commit everything staged, with the output's length (already flushed and fsynced)."""
        if not self._in_tx:
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
        self._in_tx = False

    @property
    def db(self) -> sqlite3.Connection:
        """The writer's connection, for stages that add their own tables (``verify``)."""
        return self._db

    @_sql_errors
    def begin(self) -> None:
        """Open the write transaction if none is open (``commit`` ends it)."""
        self._begin()

    def close(self) -> None:
        """Roll back anything uncommitted, close the database and release the lock."""
        try:
            if self._in_tx:
                self._db.execute("ROLLBACK")
                self._in_tx = False
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
        if not self._in_tx:
            self._db.execute("BEGIN IMMEDIATE")
            self._in_tx = True

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        self._begin()
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            self._in_tx = False
            raise
        self._db.execute("COMMIT")
        self._in_tx = False

    def _host_id(self, host: str) -> int:
        host_id = self._host_ids.get(host)
        if host_id is None:
            host_id = self._insert_id(
                "INSERT OR IGNORE INTO hosts (name) VALUES (?)",
                "SELECT id FROM hosts WHERE name = ?",
                (host,),
            )
            if len(self._host_ids) > 10_000:  # bounded cache: hosts come and go
                self._host_ids.clear()
                self._sitemap_ids.clear()
            self._host_ids[host] = host_id
        return host_id

    def _sitemap_id(self, host_id: int, url: str) -> int:
        key = (host_id, url)
        sid = self._sitemap_ids.get(key)
        if sid is None:
            sid = self._insert_id(
                "INSERT OR IGNORE INTO sitemaps (host_id, url) VALUES (?, ?)",
                "SELECT id FROM sitemaps WHERE host_id = ? AND url = ?",
                (host_id, url),
            )
            self._sitemap_ids[key] = sid
        return sid

    def _insert_id(self, insert: str, select: str, params: tuple[object, ...]) -> int:
        """The id of the row ``insert`` adds, or of the one ``select`` finds if it was there."""
        if _RETURNING:
            # One statement for a new row (every host and sitemap of a first run).
            row = self._db.execute(insert + " RETURNING id", params).fetchone()
            if row is not None:
                return int(row[0])
        else:
            self._db.execute(insert, params)
        return int(self._db.execute(select, params).fetchone()[0])


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


def _lock(path: str) -> int:
    """Take the exclusive lock beside ``path``; raise ``StateLocked`` naming its holder."""
    lock_path = path + ".lock"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StateError(f"cannot create the lock file: {exc.strerror}", url=lock_path) from exc
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


def _connect(path: str, page_size: int) -> sqlite3.Connection:
    try:
        db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        # Before WAL mode creates the file (a no-op on an existing one, which keeps its own).
        db.execute(f"PRAGMA page_size = {int(page_size)}")
        db.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode: a power cut may lose the last commits, never corrupt; a lost
        # commit only makes the state lag the output, which resume handles (see above).
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA cache_size = -2048")  # 2 MiB page cache, whatever the ledger size
        db.execute("PRAGMA temp_store = MEMORY")
    except sqlite3.DatabaseError as exc:
        raise StateError(
            f"not a harvester state file, or a corrupt one ({exc}); move it away to start afresh",
            url=path,
        ) from exc
    return db


def _migrate(db: sqlite3.Connection, path: str) -> None:
    try:
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        empty = db.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0] == 0
    except sqlite3.DatabaseError as exc:
        raise StateError(
            f"not a harvester state file, or a corrupt one ({exc}); move it away to start afresh",
            url=path,
        ) from exc
    if not empty and app_id != APPLICATION_ID:
        raise StateError(
            "not a harvester state file (another application's SQLite database)", url=path
        )
    if version > SCHEMA_VERSION:
        raise StateError(
            f"written by a newer harvester (schema {version}; this one knows up to "
            f"{SCHEMA_VERSION}); upgrade harvester or use another state file",
            url=path,
        )
    for target in range(version, SCHEMA_VERSION):
        step = _MIGRATIONS[target]
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
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
