"""Ledger stage (worker side): what the state file remembers about a host, and the URL events.

In: the state file (read-only; the parent process is its only writer, see
``store.py``), a host name, and batches of URL fingerprints with their lastmod.
Out: the host's memory (``memory.HostMemory``: discovery, per-sitemap validators and
hashes) and, per URL, its event against the ledger: ``new``, ``changed``,
``unchanged``, or ``None`` for a URL this same run already recorded (a resumed
run replaying a host that was cut short: its records are already in the output).

Events, against what earlier runs listed (the ledger's chunks, ``harvester.state.chunks``):

* ``new``: never listed, or listed and later removed (the URL came back: a removed
  URL leaves the ledger when its removal is recorded);
* ``changed``: its lastmod advanced (also: it had none and now has one);
* ``unchanged``: anything else (a lastmod that went back or vanished is not news).

The worker sends what it learned back to the writer as plain picklable values:
``rows.LedgerRows`` (chunks, packed) per batch and one ``memory.HostState`` per
finished host. Also here: which events each ``--emit`` mode writes
(``EMIT_EVENTS``) and what a shard needs to open its reader (``Incremental``).
"""

from __future__ import annotations

import sqlite3
from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from harvester.errors import StateError
from harvester.state.chunks import (
    NO_LASTMOD,
    LedgerView,
    classify_many,
    unpack_fps,
    unpack_urls,
)
from harvester.state.codec import iso, load_json
from harvester.state.memory import HostMemory, SitemapMemory
from harvester.state.revisit import LateRevisit, Revisit
from harvester.state.undo import LIVE

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

__all__ = ["EMIT_EVENTS", "EmitMode", "Incremental", "LedgerReader", "classify"]


EmitMode = Literal["all", "new", "changed", "delta", "unverified", "delta,unverified"]

# Which events each --emit mode writes to the output ("removed" is decided by the writer).
# "unverified": a listed, not new URL of a host whose lastmod is not trusted (issue 7):
# whether it changed is unknown. "delta" leaves them out (issue 53: a cron user wants
# what changed, not a third of the web every day; the host report counts them), and
# only the modes naming them write them (those read untrusted hosts' sitemaps in full).
EMIT_EVENTS: dict[str, frozenset[str]] = {
    "all": frozenset({"new", "changed", "unchanged", "unverified"}),
    "new": frozenset({"new"}),
    "changed": frozenset({"changed", "unverified"}),
    "delta": frozenset({"new", "changed", "removed"}),
    "unverified": frozenset({"unverified"}),
    "delta,unverified": frozenset({"new", "changed", "removed", "unverified"}),
}

_LABELS = ("new", "changed", "unchanged")  # classify_many's events, in its order
_REVISIT_COLUMNS = ", checked_at, revisit_interval, quiet, history, news, index_lied"
_LATE_COLUMNS = ", late_failed_at, late_interval, late_failures"


def _revisit(values: list[Any]) -> tuple[Revisit, bool]:
    """A sitemap's revisit memory and ``index_lied`` from its schema-6 columns (or none)."""
    if not values:
        return Revisit(), False
    checked_at, interval, quiet, history, news, lied = values
    return Revisit(checked_at, interval or 0.0, quiet or 0, history or "", bool(news)), bool(lied)


@dataclass(frozen=True, slots=True)
class Incremental:
    """Which state file a shard reads (read-only), for which run, with which ``--emit``.

    (Here, not in ``pipeline``: the parent builds it, and importing ``pipeline`` there
    imported aiohttp too, delaying its start before any worker was spawned.)
    """

    path: str
    run_id: int
    emit: str


def classify(
    prev: tuple[int | None, int, int | None] | None, lastmod: int | None, run_id: int
) -> str | None:
    """The event of one URL given its ledger row ``(lastmod, last_seen, removed)``.

    Returns ``None`` when this run already recorded the URL (a resumed run).

    >>> classify(None, 5, 2), classify((5, 1, None), 6, 2), classify((5, 1, None), 5, 2)
    ('new', 'changed', 'unchanged')
    >>> classify((5, 2, None), 5, 2) is None
    True
    """
    if prev is None:
        return "new"
    old_lastmod, last_seen, removed = prev
    if last_seen == run_id:
        return None
    if removed is not None:
        return "new"
    if lastmod is not None and (old_lastmod is None or lastmod > old_lastmod):
        return "changed"
    return "unchanged"


class LedgerReader:
    """A worker's read-only view of the state file (WAL: reads never block the writer).

    Usage::

        reader = LedgerReader("urls.state.sqlite", run_id=7)
        memory = reader.host("example.com")
        events = reader.events(memory, fps, lastmods)
    """

    def __init__(self, path: str, run_id: int) -> None:
        self.path = path
        self.run_id = run_id
        try:
            self._db = sqlite3.connect(
                f"file:{path}?mode=ro", uri=True, check_same_thread=False, timeout=30.0
            )
            self._db.execute("PRAGMA query_only = ON")
            # Chunks a run retired stay until it completes (undo.py): left out here. (A
            # file not migrated to schema 5 yet, read by `harvester ledger`, has none.)
            retiring = self._db.execute(
                "SELECT 1 FROM sqlite_schema WHERE name = 'undo_retired'"
            ).fetchone()
        except sqlite3.Error as exc:
            raise StateError(f"cannot open the state file read-only: {exc}", url=path) from exc
        self._live = f" AND {LIVE}" if retiring else ""
        # The revisit columns (schema 6); a file not migrated yet (`harvester ledger`) has none.
        self._revisit = _REVISIT_COLUMNS if self._has_column("sitemaps", "checked_at") else ""
        # The late attempts' backoff (schema 7), likewise.
        self._late = _LATE_COLUMNS if self._has_column("hosts", "late_failed_at") else ""

    def _has_column(self, table: str, column: str) -> bool:
        try:
            columns = self._db.execute(f"PRAGMA table_info({table})").fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"cannot read the state file: {exc}", url=self.path) from exc
        return any(c[1] == column for c in columns)

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def host(self, name: str) -> HostMemory:
        """Everything remembered about ``name`` (an empty memory for a host never seen)."""
        row = self._db.execute(
            "SELECT id, discovery, discovered_at, audit, trust, not_before"  # noqa: S608
            f"{self._late} FROM hosts WHERE name = ?",
            (name,),
        ).fetchone()
        if row is None:
            return HostMemory()
        host_id, discovery, discovered_at, audit, trust, not_before, *late = row
        memory = HostMemory(host_id, load_json(discovery), discovered_at or 0.0)
        memory.verdict = (load_json(audit) or {}).get("verdict")
        memory.trust = trust
        memory.not_before = not_before
        if late:
            failed_at, interval, failures = late
            memory.late = LateRevisit(failed_at, interval or 0.0, failures or 0)
        for (
            url,
            parent,
            kind,
            etag,
            last_modified,
            content_hash,
            children,
            lastmod,
            ok,
            final,
            urls,
            *revisit,
        ) in self._db.execute(
            "SELECT url, parent, kind, etag, last_modified, content_hash, children, "  # noqa: S608
            f"index_lastmod, complete, final_url, urls{self._revisit} FROM sitemaps "
            "WHERE host_id = ?",
            (host_id,),
        ):
            memory.sitemaps[url] = SitemapMemory(
                url,
                parent,
                kind,
                etag,
                last_modified,
                content_hash,
                [(c, m) for c, m in load_json(children) or ()],
                lastmod,
                bool(ok),
                final,
                *_revisit(revisit),
                urls,
            )
        return memory

    def sitemap_fps(self, host_id: int, url: str) -> array[int]:
        """The fingerprints of the URLs earlier runs listed under the sitemap ``url`` of host
        ``host_id`` (its live chunks), unsigned: as the host's seen-set holds them."""
        out: array[int] = array("Q")
        for (blob,) in self._db.execute(
            "SELECT c.fps FROM url_chunks c JOIN sitemaps s ON s.id = c.sitemap_id "  # noqa: S608
            f"WHERE c.host_id = ? AND s.host_id = ? AND s.url = ? AND c.run < ?{self._live}",
            (host_id, host_id, url, self.run_id),
        ):
            out.frombytes(unpack_fps(blob).tobytes())  # (same bits, read unsigned)
        return out

    def fresh(self, memory: HostMemory) -> bool:
        """Whether the ledger holds no URL of this host, so that every URL is ``new``.

        The host's ledger is read once, at its first batch, into ``memory``.
        """
        if memory.host_id is None:
            return True
        if memory.listed is None or memory.recorded is None:
            memory.listed, memory.recorded = self._views(memory.host_id)
        return not memory.listed and not memory.recorded

    def carry(self, memory: HostMemory, fps: array[int], lastmods: array[int]) -> array[int]:
        """``lastmods`` for the ledger rows: a URL listed without one keeps the lastmod the
        ledger holds for it (signed fingerprints; ``NO_LASTMOD`` for none).

        The ledger keeps the last lastmod seen: a URL that drops its lastmod for a run and
        shows the same one again has not changed. This run's rows replace the earlier
        ones of a sitemap read in full, so without the carry that lastmod was lost.
        Returns ``lastmods`` itself when nothing is carried.
        """
        if NO_LASTMOD not in lastmods or self.fresh(memory):
            return lastmods
        listed = memory.listed
        assert listed is not None  # (fresh read it)
        at = listed.find(fps)
        known = listed.lastmods
        out = array("q", lastmods)
        for i, lastmod in enumerate(lastmods):
            if lastmod == NO_LASTMOD and at[i] >= 0:
                out[i] = known[at[i]]
        return out

    def events(self, memory: HostMemory, fps: array[int], lastmods: array[int]) -> list[str | None]:
        """The event of each URL (signed fingerprints; lastmods with ``NO_LASTMOD``).

        The host's ledger is read once, at its first batch, into ``memory``.
        """
        if self.fresh(memory):
            return ["new"] * len(fps)
        listed, recorded = memory.listed, memory.recorded
        assert listed is not None  # (fresh read both)
        assert recorded is not None
        if classify_many is not None:
            return classify_many(listed.fps, listed.lastmods, recorded.fps, fps, lastmods, _LABELS)
        at = listed.find(fps)
        replayed = recorded.find(fps) if recorded else None
        old_lastmods = listed.lastmods
        run_id = self.run_id
        out: list[str | None] = []
        for i, lm in enumerate(lastmods):
            if replayed is not None and replayed[i] >= 0:
                out.append(None)  # this run recorded it before it was cut short
                continue
            j = at[i]
            if j < 0:
                out.append("new")
                continue
            old = old_lastmods[j]
            prev = (None if old == NO_LASTMOD else old, 0, None)
            out.append(classify(prev, None if lm == NO_LASTMOD else lm, run_id))
        return out

    def listed(self, hosts: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """What the ledger lists: one dict per URL and host (all hosts, or ``hosts``).

        Each: ``url``, ``host``, ``sitemap`` (the newest chunk's), ``lastmod``
        (ISO 8601 UTC or None) and ``run`` (the last run that listed it). What
        ``harvester ledger`` prints: the chunks' blobs are not readable in SQL.
        """
        if hosts is None:
            names: Iterable[str] = [n for (n,) in self._db.execute("SELECT name FROM hosts")]
        else:
            names = hosts
        for name in names:
            row = self._db.execute("SELECT id FROM hosts WHERE name = ?", (name,)).fetchone()
            if row is None:
                continue
            seen: set[int] = set()  # newest chunk first: a URL in older ones is skipped
            for run, sitemap, fps, lastmods, urls in self._db.execute(
                "SELECT c.run, s.url, c.fps, c.lastmods, c.urls FROM url_chunks c "  # noqa: S608
                f"JOIN sitemaps s ON s.id = c.sitemap_id WHERE c.host_id = ?{self._live} "
                "ORDER BY c.run DESC, c.id DESC",
                (row[0],),
            ):
                chunk = zip(unpack_fps(fps), unpack_fps(lastmods), unpack_urls(urls), strict=True)
                for fp, lastmod, url in chunk:
                    if fp in seen:
                        continue
                    seen.add(fp)
                    yield {
                        "url": url,
                        "host": name,
                        "sitemap": sitemap,
                        "lastmod": iso(None if lastmod == NO_LASTMOD else lastmod),
                        "run": run,
                    }

    def _views(self, host_id: int) -> tuple[LedgerView, LedgerView]:
        """The host's chunks from earlier runs, and from this run, as two views."""
        query = (
            "SELECT fps, lastmods FROM url_chunks c WHERE host_id = ? AND run {} ?"  # noqa: S608
            + self._live
            + " ORDER BY run, id"
        )
        # Streamed from the cursor: a big host's blobs are never all held as well.
        earlier = self._db.execute(query.format("<"), (host_id, self.run_id))
        listed = LedgerView.build(earlier)
        this_run = self._db.execute(query.format("="), (host_id, self.run_id))
        return listed, LedgerView.build(this_run)
