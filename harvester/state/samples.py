"""Samples: the lastmod audit's reads and writes of the state file.

In: the state store (its writer: an audit holds the lock) and a host. Out: the hosts to
audit, a host's row (discovery memory, distribution verdict), the pages to sample,
the samples of earlier audits, and the stored samples and trust. ``run/verify.py`` does
the fetching and the scoring; every SQL statement it needs is here.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any, Protocol

from harvester.state.chunks import NO_LASTMOD, unpack_fps, unpack_urls
from harvester.state.codec import dump_json, load_json, now
from harvester.state.undo import LIVE

if TYPE_CHECKING:
    import sqlite3
    from array import array
    from collections.abc import Iterator, Sequence

__all__ = [
    "KEEP",
    "audited_hosts",
    "fresh_samples",
    "history",
    "host_row",
    "picks",
    "save_samples",
    "save_trust",
]

# A sample row, in the samples table's column order: host_id, fp, url, sampled_at,
# sitemap_lastmod, fingerprint, page_modified, agreement, http_status, error.
SampleRow = tuple[Any, ...]
KEEP = 10  # samples kept per URL: the pairs of the last audits make the trust score


class StateStore(Protocol):
    """What is read here of ``store.StateStore`` (not imported: it stores the samples a
    run's coverage check took with ``save_samples``)."""

    @property
    def db(self) -> sqlite3.Connection:
        """The writer's connection."""


def audited_hosts(store: StateStore, run_id: int | None = None) -> list[str]:
    """Hosts with a distribution verdict (of run ``run_id`` only, when given)."""
    if run_id is None:
        rows = store.db.execute("SELECT name FROM hosts WHERE audit IS NOT NULL")
    else:
        rows = store.db.execute(
            "SELECT name FROM hosts WHERE last_run = ? AND audit IS NOT NULL", (run_id,)
        )
    return [r[0] for r in rows]


def host_row(store: StateStore, name: str) -> tuple[int, Any, Any] | None:
    """``(host id, discovery memory, distribution verdict)`` of a host; None if unknown."""
    row = store.db.execute(
        "SELECT id, discovery, audit FROM hosts WHERE name = ?", (name,)
    ).fetchone()
    if row is None:
        return None
    host_id, discovery, audit = row
    return host_id, load_json(discovery), load_json(audit)


def picks(store: StateStore, host_id: int, k: int) -> list[tuple[int, str, int | None]]:
    """``k`` listed URLs of a host, spread over its sitemaps: ``(fp, url, lastmod)``.

    Round-robin over the sitemaps, each giving its URLs in fingerprint order: the
    same pages every run (their fingerprints are compared across runs), drawn
    from every part of the site. Reads the chunks' fingerprints, then the URLs of
    only the chunks picked from.
    """
    db = store.db
    # sitemap -> (fp, -chunk id, index): for a URL in two chunks the newest sorts first.
    smallest: dict[int, list[tuple[int, int, int]]] = {}
    for cid, sid, blob in db.execute(
        f"SELECT id, sitemap_id, fps FROM url_chunks c WHERE host_id = ? AND {LIVE}",  # noqa: S608
        (host_id,),
    ):
        fps = unpack_fps(blob)
        best = smallest.get(sid, []) + [(fp, -cid, i) for i, fp in enumerate(fps)]
        smallest[sid] = heapq.nsmallest(k, best)
    ranked: list[tuple[int, int, int, int]] = []  # (rank in its sitemap, fp, chunk, index)
    for entries in smallest.values():
        rank = 0
        last: int | None = None
        for fp, neg_cid, i in entries:  # sorted; a URL in two chunks of one sitemap counts once
            if fp != last:
                ranked.append((rank, fp, -neg_cid, i))
                rank += 1
                last = fp
    ranked.sort()
    picks: list[tuple[int, int, int]] = []
    chosen: set[int] = set()
    for _rank, fp, cid, i in ranked:
        if fp not in chosen and len(picks) < k:  # (a URL listed by two sitemaps: once)
            chosen.add(fp)
            picks.append((fp, cid, i))
    chunks: dict[int, tuple[list[str], array[int]]] = {}
    out: list[tuple[int, str, int | None]] = []
    for fp, cid, i in picks:
        if cid not in chunks:
            urls, lastmods = db.execute(
                "SELECT urls, lastmods FROM url_chunks WHERE id = ?", (cid,)
            ).fetchone()
            chunks[cid] = (unpack_urls(urls), unpack_fps(lastmods))
        urls_of, lastmods_of = chunks[cid]
        lastmod = lastmods_of[i]
        out.append((fp, urls_of[i], None if lastmod == NO_LASTMOD else lastmod))
    return out


def history(store: StateStore, host_id: int) -> Iterator[tuple[int, int | None, int | None]]:
    """``(fp, sitemap lastmod, content fingerprint)`` of a host's successful samples, by
    URL then in the order they were taken."""
    yield from store.db.execute(
        "SELECT fp, sitemap_lastmod, fingerprint FROM samples "
        "WHERE host_id = ? AND error IS NULL ORDER BY fp, id",
        (host_id,),
    )


def fresh_samples(store: StateStore, host_id: int) -> dict[int, tuple[int | None, str | None]]:
    """The samples of a host taken since its last audit (by a run's coverage check, which
    stores the listed pages it fetched): ``fp -> (sitemap lastmod, agreement)``, the
    newest per URL; the agreement is None for a fetch that failed."""
    rows = store.db.execute(
        "SELECT fp, sitemap_lastmod, agreement, error FROM samples WHERE host_id = ? "
        "AND sampled_at > COALESCE((SELECT audited_at FROM hosts WHERE id = ?), 0) ORDER BY id",
        (host_id, host_id),
    )
    return {fp: (lastmod, None if error else agreement) for fp, lastmod, agreement, error in rows}


def save_samples(store: StateStore, host_id: int, rows: Sequence[SampleRow], keep: int) -> None:
    """Add a host's new samples, keeping its last ``keep`` per URL (in the open transaction)."""
    db = store.db
    db.executemany(
        "INSERT INTO samples (host_id, fp, url, sampled_at, sitemap_lastmod, fingerprint, "
        "page_modified, agreement, http_status, error) VALUES (?,?,?,?,?,?,?,?,?,?)",
        rows,
    )
    db.execute(
        "DELETE FROM samples WHERE host_id = ? AND id IN (SELECT id FROM (SELECT id, "
        "ROW_NUMBER() OVER (PARTITION BY fp ORDER BY id DESC) AS n FROM samples "
        "WHERE host_id = ?) WHERE n > ?)",
        (host_id, host_id, keep),
    )


def save_trust(store: StateStore, host_id: int, level: str, evidence: dict[str, Any]) -> None:
    """Store a host's trust level and its evidence (in the open transaction)."""
    store.db.execute(
        "UPDATE hosts SET trust = ?, trust_evidence = ?, audited_at = ? WHERE id = ?",
        (level, dump_json(evidence), now(), host_id),
    )
