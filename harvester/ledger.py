"""Ledger stage (worker side): what the state file remembers about a host, and the URL events.

In: the state file (read-only; the parent process is its only writer, see
``state.py``), a host name, and batches of URL fingerprints with their lastmod.
Out: the host's memory (``HostMemory``: discovery, per-sitemap validators and
hashes) and, per URL, its event against the ledger: ``new``, ``changed``,
``unchanged``, or ``None`` for a URL this same run already recorded (a resumed
run replaying a host that was cut short: its records are already in the output).

Events, against the URL's ledger row from earlier runs:

* ``new``: no row, or the row was marked removed (the URL came back);
* ``changed``: its lastmod advanced (also: it had none and now has one);
* ``unchanged``: anything else (a lastmod that went back or vanished is not news).

The worker sends what it learned back to the writer as plain picklable values:
``LedgerRows`` (columns) per batch and one ``HostState`` per finished host.
"""

from __future__ import annotations

import sqlite3
import time
import zlib
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import orjson

from harvester.errors import StateError

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "EMIT_EVENTS",
    "NO_LASTMOD",
    "EmitMode",
    "HostMemory",
    "HostState",
    "LedgerReader",
    "LedgerRow",
    "LedgerRows",
    "SitemapMemory",
    "SitemapState",
    "classify",
    "signed",
]

EmitMode = Literal["all", "new", "changed", "delta"]

# Which events each --emit mode writes to the output ("removed" is decided by the writer).
# "unverified": a listed, not new URL of a host whose lastmod is not trusted (issue 7):
# whether it changed is unknown, so it is written rather than filtered out.
EMIT_EVENTS: dict[str, frozenset[str]] = {
    "all": frozenset({"new", "changed", "unchanged", "unverified"}),
    "new": frozenset({"new"}),
    "changed": frozenset({"changed", "unverified"}),
    "delta": frozenset({"new", "changed", "removed", "unverified"}),
}

NO_LASTMOD = -(1 << 63)  # lastmod epoch seconds in arrays: "none" (SQLite stores NULL)
_SIGN = 1 << 63
_WRAP = 1 << 64


def signed(fp: int) -> int:
    """A 64-bit unsigned fingerprint as the signed integer SQLite stores."""
    return fp - _WRAP if fp >= _SIGN else fp


# One listed URL (upserted into the ``urls`` table): (signed 64-bit fingerprint of the
# canonical URL, the canonical URL, the sitemap that listed it, lastmod epoch seconds
# UTC or None). Batches of them travel as ``LedgerRows``.
LedgerRow = tuple[int, str, str, int | None]


@dataclass(frozen=True, slots=True)
class LedgerRows:
    """The ledger rows of a batch of one host's URLs, column by column, for the writer.

    ``fps``: signed fingerprints (``array('q')``); ``urls``: the canonical URLs;
    ``lastmods``: epoch seconds (``array('q')``, ``NO_LASTMOD`` for none);
    ``sitemaps``: the sitemap of each row as runs ``(sitemap, count)``, in order.

    Why columns: millions of rows cross the process boundary. As one tuple per row
    (two ints each) a row cost the worker its tuple and its pickling and the
    writer the same again plus a Python loop to build SQLite's parameters; as
    columns, the arrays pickle as bytes and ``StateStore.add_urls`` zips them in C.
    """

    fps: array[int]
    urls: list[str]
    lastmods: array[int]
    sitemaps: list[tuple[str, int]]

    def __len__(self) -> int:
        return len(self.urls)

    @classmethod
    def of(cls, rows: Iterable[LedgerRow]) -> LedgerRows:
        """The columns of per-URL ``LedgerRow`` tuples."""
        fps: array[int] = array("q")
        urls: list[str] = []
        lastmods: array[int] = array("q")
        sitemaps: list[tuple[str, int]] = []
        for fp, url, sitemap, lastmod in rows:
            fps.append(fp)
            urls.append(url)
            lastmods.append(NO_LASTMOD if lastmod is None else lastmod)
            if sitemaps and sitemaps[-1][0] == sitemap:
                sitemaps[-1] = (sitemap, sitemaps[-1][1] + 1)
            else:
                sitemaps.append((sitemap, 1))
        return cls(fps, urls, lastmods, sitemaps)


@dataclass(slots=True)
class SitemapMemory:
    """What the state remembers about one sitemap of a host (from its last full read)."""

    url: str
    parent: str | None = None  # the index that listed it (None: robots.txt, a probe, a seed)
    kind: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    content_hash: bytes | None = None
    # An index's children as (url, lastmod epoch or None), to re-admit after a 304.
    children: list[tuple[str, int | None]] = field(default_factory=list)
    index_lastmod: int | None = None  # the lastmod its index gave it at its last full read
    complete: bool = False  # its last read was complete: validators and children are usable
    final_url: str | None = None  # it redirected there: fetched directly next time


@dataclass(slots=True)
class HostMemory:
    """A host's memory: its ledger id, discovery memory and sitemaps."""

    host_id: int | None = None  # None: never seen (every URL is new; no lookups needed)
    discovery: dict[str, Any] | None = None
    discovered_at: float = 0.0
    sitemaps: dict[str, SitemapMemory] = field(default_factory=dict)
    verdict: str | None = None  # the lastmod distribution verdict of its last run
    trust: str | None = None  # trusted | untrusted | unknown, from sampled verification


@dataclass(slots=True)
class SitemapState:
    """What happened to one sitemap in this run, for the writer."""

    url: str
    parent: str | None
    status: str  # ok | partial | error | not_modified | skipped
    http_status: int | None = None
    complete: bool = False  # read fully and successfully, or confirmed unchanged (304/skip)
    carried: bool = False  # not downloaded: its URLs are carried over as still listed
    kind: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    content_hash: bytes | None = None
    urls: int = 0
    children: list[tuple[str, int | None]] | None = None
    index_lastmod: int | None = None
    final_url: str | None = None  # where it redirected to, if it did


@dataclass(slots=True)
class HostState:
    """A finished host's state update: sitemaps, removal scope, discovery memory."""

    host: str
    sitemaps: list[SitemapState] = field(default_factory=list)
    # Sitemaps whose previously listed URLs that were not listed this run are now removed:
    # those read fully this run, and those an index or robots.txt read fully no longer lists.
    removal_scope: list[str] = field(default_factory=list)
    discovery: dict[str, Any] | None = None  # new discovery memory (None: keep the old one)
    audit: dict[str, Any] | None = None  # this run's lastmod distribution verdict (None: keep)
    finished: bool = True  # False: cut short (shutdown, time cap): no checkpoint, no removals


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
        events = reader.events(memory.host_id, fps, lastmods)
    """

    def __init__(self, path: str, run_id: int) -> None:
        self.path = path
        self.run_id = run_id
        try:
            self._db = sqlite3.connect(
                f"file:{path}?mode=ro", uri=True, check_same_thread=False, timeout=30.0
            )
            self._db.execute("PRAGMA query_only = ON")
        except sqlite3.Error as exc:
            raise StateError(f"cannot open the state file read-only: {exc}", url=path) from exc

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def host(self, name: str) -> HostMemory:
        """Everything remembered about ``name`` (an empty memory for a host never seen)."""
        row = self._db.execute(
            "SELECT id, discovery, discovered_at, audit, trust FROM hosts WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            return HostMemory()
        host_id, discovery, discovered_at, audit, trust = row
        memory = HostMemory(host_id, load_json(discovery), discovered_at or 0.0)
        memory.verdict = (load_json(audit) or {}).get("verdict")
        memory.trust = trust
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
        ) in self._db.execute(
            "SELECT url, parent, kind, etag, last_modified, content_hash, children, "
            "index_lastmod, complete, final_url FROM sitemaps WHERE host_id = ?",
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
            )
        return memory

    def events(
        self, host_id: int | None, fps: Sequence[int], lastmods: array[int]
    ) -> list[str | None]:
        """The event of each URL (signed fingerprints; lastmods with ``NO_LASTMOD``)."""
        if host_id is None:
            return ["new"] * len(fps)
        known: dict[int, tuple[int | None, int, int | None]] = {}
        # One indexed IN-lookup per batch: the ledger itself never enters memory.
        for start in range(0, len(fps), 500):
            part = fps[start : start + 500]
            marks = ",".join("?" * len(part))
            for fp, old, last_seen, removed in self._db.execute(
                f"SELECT fp, lastmod, last_seen, removed FROM urls "  # noqa: S608 - only '?'
                f"WHERE host_id = ? AND fp IN ({marks})",
                (host_id, *part),
            ):
                known[fp] = (old, last_seen, removed)
        run_id = self.run_id
        return [
            classify(known.get(fp), None if lm == NO_LASTMOD else lm, run_id)
            for fp, lm in zip(fps, lastmods, strict=True)
        ]


def load_json(data: bytes | str | None) -> Any:
    """Decode a memory value written by ``dump_json``."""
    if data is None:
        return None
    if isinstance(data, bytes) and data[:1] == b"x":  # zlib-compressed (robots.txt bodies)
        data = zlib.decompress(data)
    return orjson.loads(data)


def dump_json(value: Any) -> bytes:
    """Encode a memory value for the state file (compressed when large)."""
    data = orjson.dumps(value)
    return zlib.compress(data) if len(data) > 512 else data


def now() -> float:
    """Wall-clock seconds (the state file stores wall time: runs span processes and days)."""
    return time.time()
