"""Removals: when a host finishes, the ledger chunks this run replaced, and the URLs that
are no longer listed anywhere.

In: the writer's connection, a finished host and the sitemaps this run read in full
(or found no longer listed). Out: the retired chunks marked for deletion when the
run completes (``undo.retire_later``, in the caller's transaction) and the removed
URLs as ``event: removed`` records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvester.state.chunks import NO_LASTMOD, LedgerView, unpack_fps, unpack_urls
from harvester.state.codec import iso
from harvester.state.undo import LIVE, retire_later

if TYPE_CHECKING:
    import sqlite3
    from array import array

__all__ = ["retire"]


def retire(
    db: sqlite3.Connection, host_id: int, host: str, scope: set[int], run_id: int
) -> list[dict[str, Any]]:
    """Retire a finished host's chunks this run replaced; return its removed URLs as records.

    Earlier chunks of a sitemap in ``scope`` (read in full this run, or no longer
    listed) are replaced by this run's: those of their URLs that nothing lists any
    more (neither this run's chunks nor an earlier chunk of a sitemap outside the
    scope, say one that failed this time) are the removed ones. An earlier chunk
    of a sitemap read only in part is dropped once this run listed all its URLs
    again, so a sitemap that keeps failing midway does not grow the ledger.
    """
    replaced = _replaced(db, host_id, scope, run_id)
    if replaced is None:
        return []
    gone, partial = replaced
    still, now_listed = _listed(db, host_id, run_id, gone)
    removed: list[dict[str, Any]] = []
    reported: set[int] = set()
    drop: list[int] = []
    # Newest first: a URL in two retired chunks is reported with its latest lastmod.
    for cid, fps_blob, lastmods_blob in db.execute(
        f"SELECT id, fps, lastmods FROM url_chunks c WHERE host_id = ? AND run < ? AND {LIVE} "  # noqa: S608
        "ORDER BY run DESC, id DESC",
        (host_id, run_id),
    ):
        if cid in partial:
            if min(now_listed.find(unpack_fps(fps_blob)), default=0) >= 0:
                drop.append(cid)  # every URL of it listed again this run
            continue
        if cid not in gone:
            continue
        drop.append(cid)
        fps = unpack_fps(fps_blob)
        lost = [i for i, at in enumerate(still.find(fps)) if at < 0 and fps[i] not in reported]
        if lost:
            reported.update(fps[i] for i in lost)
            removed += _records(db, cid, host, lost, unpack_fps(lastmods_blob))
    # Deleted when the run completes, not now: should its output be lost before, the
    # run is redone against the ledger as it was (undo.py).
    retire_later(db, drop)
    return removed


def _replaced(
    db: sqlite3.Connection, host_id: int, scope: set[int], run_id: int
) -> tuple[set[int], set[int]] | None:
    """The earlier chunks this run replaces (``gone``) and those of sitemaps it read only in
    part (``partial``); None when there is nothing to retire."""
    earlier = db.execute(
        f"SELECT id, sitemap_id FROM url_chunks c WHERE host_id = ? AND run < ? AND {LIVE}",  # noqa: S608
        (host_id, run_id),
    ).fetchall()
    if not earlier:
        return None  # a host new to the ledger (every first run): nothing to retire
    read = {
        sid
        for (sid,) in db.execute(
            "SELECT DISTINCT sitemap_id FROM url_chunks WHERE host_id = ? AND run = ?",
            (host_id, run_id),
        )
    }
    gone = {cid for cid, sid in earlier if sid in scope}
    partial = {cid for cid, sid in earlier if sid in read and sid not in scope}
    if not gone and not partial:
        return None  # unchanged sitemaps (304) only: their chunks stand
    return gone, partial


def _listed(
    db: sqlite3.Connection, host_id: int, run_id: int, gone: set[int]
) -> tuple[LedgerView, LedgerView]:
    """What stays listed (this run's chunks and the earlier ones kept) and this run's own."""
    listed: list[tuple[bytes, bytes]] = []
    current: list[tuple[bytes, bytes]] = []
    for cid, run, fps, lastmods in db.execute(
        f"SELECT id, run, fps, lastmods FROM url_chunks c WHERE host_id = ? AND {LIVE}",  # noqa: S608
        (host_id,),
    ):
        if run == run_id:
            current.append((fps, lastmods))
            listed.append((fps, lastmods))
        elif cid not in gone:
            listed.append((fps, lastmods))
    return LedgerView.build(listed), LedgerView.build(current)


def _records(
    db: sqlite3.Connection, cid: int, host: str, lost: list[int], lastmods: array[int]
) -> list[dict[str, Any]]:
    """The removed-URL records of positions ``lost`` of chunk ``cid``."""
    (urls_blob, sitemap) = db.execute(
        "SELECT c.urls, s.url FROM url_chunks c JOIN sitemaps s ON s.id = c.sitemap_id "
        "WHERE c.id = ?",
        (cid,),
    ).fetchone()
    urls = unpack_urls(urls_blob)
    return [
        {
            "loc": urls[i],
            "url": urls[i],
            "host": host,
            "sitemap": sitemap,
            "source": "sitemap",
            "lastmod": iso(None if lastmods[i] == NO_LASTMOD else lastmods[i]),
            "event": "removed",
        }
        for i in lost
    ]
