"""Row ids (writer side): the id of a host's or a sitemap's row, added when it is new.

In: the writer's connection (inside its open transaction), a host name, or a host
id and a sitemap URL. Out: the row's id; a host or sitemap seen for the first
time gets its row (``INSERT OR IGNORE``, with ``RETURNING`` where SQLite has it).

Its own module: ``store.StateStore`` asks for an id for every chunk it inserts and
every sitemap it updates; the bounded cache in front of the tables and the two
ways to learn a new row's id are one concern, apart from what the store writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvester.state.schema import RETURNING

if TYPE_CHECKING:
    import sqlite3

__all__ = ["RowIds"]


class RowIds:
    """The ids of the hosts' and sitemaps' rows, cached (the writer's only).

    Usage::

        ids = RowIds(db)
        host_id = ids.host("example.com")
        sitemap_id = ids.sitemap(host_id, "https://example.com/sitemap.xml")
    """

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._host_ids: dict[str, int] = {}
        self._sitemap_ids: dict[tuple[int, str], int] = {}

    def host(self, host: str) -> int:
        """The id of ``host``'s row (added if it is new)."""
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

    def sitemap(self, host_id: int, url: str) -> int:
        """The id of the row of sitemap ``url`` of host ``host_id`` (added if it is new)."""
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
        if RETURNING:
            # One statement for a new row (every host and sitemap of a first run).
            row = self._db.execute(insert + " RETURNING id", params).fetchone()
            if row is not None:
                return int(row[0])
        else:
            self._db.execute(insert, params)
        return int(self._db.execute(select, params).fetchone()[0])
