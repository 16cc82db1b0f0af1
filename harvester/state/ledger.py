"""Ledger stage (worker side): what the state file remembers about a host, and the URL events.

In: the state file (read-only; the parent process is its only writer, see
``state.py``), a host name, and batches of URL fingerprints with their lastmod.
Out: the host's memory (``HostMemory``: discovery, per-sitemap validators and
hashes) and, per URL, its event against the ledger: ``new``, ``changed``,
``unchanged``, or ``None`` for a URL this same run already recorded (a resumed
run replaying a host that was cut short: its records are already in the output).

Events, against what earlier runs listed (the ledger's chunks, ``harvester.state.chunks``):

* ``new``: never listed, or listed and later removed (the URL came back: a removed
  URL leaves the ledger when its removal is recorded);
* ``changed``: its lastmod advanced (also: it had none and now has one);
* ``unchanged``: anything else (a lastmod that went back or vanished is not news).

The worker sends what it learned back to the writer as plain picklable values:
``LedgerRows`` (chunks, packed) per batch and one ``HostState`` per finished host.
"""

from __future__ import annotations

import sqlite3
import time
import zlib
from array import array
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pickle import PickleBuffer
from typing import TYPE_CHECKING, Any, Literal, SupportsIndex

import orjson

from harvester.errors import StateError
from harvester.reader.dates import format_utc
from harvester.state.chunks import (
    NO_LASTMOD,
    LedgerView,
    classify_many,
    pack,
    pack_text,
    unpack_fps,
    unpack_urls,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

__all__ = [
    "EMIT_EVENTS",
    "NO_LASTMOD",
    "EmitMode",
    "HostMemory",
    "HostState",
    "Incremental",
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

_LABELS = ("new", "changed", "unchanged")  # classify_many's events, in its order
_SIGN = 1 << 63
_WRAP = 1 << 64


def signed(fp: int) -> int:
    """A 64-bit unsigned fingerprint as the signed integer SQLite stores."""
    return fp - _WRAP if fp >= _SIGN else fp


# One listed URL: (signed 64-bit fingerprint of the canonical URL, the canonical URL,
# the sitemap that listed it, lastmod epoch seconds UTC or None). Batches of them
# travel as ``LedgerRows`` and are stored as chunks (``harvester.state.chunks``).
LedgerRow = tuple[int, str, str, int | None]
Blob = bytes | memoryview  # a chunk's blob: see LedgerRows.__reduce_ex__


@dataclass(frozen=True, slots=True)
class Incremental:
    """Which state file a shard reads (read-only), for which run, with which ``--emit``.

    (Here, not in ``pipeline``: the parent builds it, and importing ``pipeline`` there
    imported aiohttp too, delaying its start before any worker was spawned.)
    """

    path: str
    run_id: int
    emit: str


@dataclass(frozen=True, slots=True)
class LedgerRows:
    """The ledger chunks of a batch of one host's URLs, packed by the worker for the writer.

    ``sitemaps``: the sitemap of the batch's URLs as runs ``(sitemap, count)``, in
    order; ``chunks``: the blobs of each run (``chunks.pack``: fingerprints,
    lastmods, URLs), which the writer inserts as they are.

    Why packed in the worker: millions of URLs cross the process boundary, and the
    writer is one process for all the workers. Packing (and compressing the URL
    text) runs in parallel in the workers; the writer inserts a few rows a batch.
    """

    sitemaps: list[tuple[str, int]]
    # bytes; in the writer, views of the results pipe's buffer (see __reduce_ex__)
    chunks: list[tuple[Blob, Blob, Blob]]

    def __len__(self) -> int:
        return sum(n for _, n in self.sitemaps)

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        """Pickled with protocol 5, the blobs are out-of-band buffers: the results pipe
        (``harvester.run.transport``) sends them as raw bytes after the message instead of
        copying them into the pickle and out again,
        and the writer gets ``memoryview`` blobs over its read buffer.
        """
        if int(protocol) < 5:
            return (LedgerRows, (self.sitemaps, self.chunks))
        wrapped = [(PickleBuffer(f), PickleBuffer(m), PickleBuffer(u)) for f, m, u in self.chunks]
        return (LedgerRows, (self.sitemaps, wrapped))

    @property
    def nbytes(self) -> int:
        """The bytes of its blobs (what it weighs on a message to the writer)."""
        return sum(len(f) + len(m) + len(u) for f, m, u in self.chunks)

    @classmethod
    def pack(
        cls,
        fps: array[int],
        urls: Sequence[str],
        lastmods: array[int],
        sitemaps: list[tuple[str, int]],
    ) -> LedgerRows:
        """One chunk per sitemap run of a batch's columns (signed fps, URLs, lastmods)."""
        chunks: list[tuple[Blob, Blob, Blob]] = []
        start = 0
        for _sitemap, n in sitemaps:
            end = start + n
            chunks.append(pack(fps[start:end], lastmods[start:end], urls[start:end]))
            start = end
        return cls(sitemaps, chunks)

    @classmethod
    def pack_text(
        cls,
        fps: array[int],
        text: bytes | bytearray,
        ends: Sequence[int],
        lastmods: array[int],
        sitemaps: list[tuple[str, int]],
    ) -> LedgerRows:
        """``pack`` for URLs as the compiled loop collects them: ``text`` holds each
        URL's UTF-8 followed by a newline; ``ends[k]`` is where sitemap run ``k`` ends
        in it (one past its last newline). No list of strings, no join, no re-encoding.
        """
        chunks: list[tuple[Blob, Blob, Blob]] = []
        view = memoryview(text)
        start = at = 0
        for (_sitemap, n), end in zip(sitemaps, ends, strict=True):
            chunks.append(pack_text(fps[at : at + n], lastmods[at : at + n], view[start : end - 1]))
            start = end
            at += n
        return cls(sitemaps, chunks)

    @classmethod
    def of(cls, rows: Iterable[LedgerRow]) -> LedgerRows:
        """The chunks of per-URL ``LedgerRow`` tuples."""
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
        return cls.pack(fps, urls, lastmods, sitemaps)


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
    not_before: float | None = None  # wall-clock time before which it is not asked again
    # Its ledger, loaded at the first lookup (``LedgerReader.events``): what earlier
    # runs listed, and what this same run recorded before it was cut short (a resume).
    listed: LedgerView | None = None
    recorded: LedgerView | None = None


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
    # Wall-clock time before which the host is not asked again: it answered a Retry-After
    # beyond fetch.retry_after_max (or still is deferred); None: no longer.
    not_before: float | None = None


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
        except sqlite3.Error as exc:
            raise StateError(f"cannot open the state file read-only: {exc}", url=path) from exc

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def host(self, name: str) -> HostMemory:
        """Everything remembered about ``name`` (an empty memory for a host never seen)."""
        row = self._db.execute(
            "SELECT id, discovery, discovered_at, audit, trust, not_before FROM hosts "
            "WHERE name = ?",
            (name,),
        ).fetchone()
        if row is None:
            return HostMemory()
        host_id, discovery, discovered_at, audit, trust, not_before = row
        memory = HostMemory(host_id, load_json(discovery), discovered_at or 0.0)
        memory.verdict = (load_json(audit) or {}).get("verdict")
        memory.trust = trust
        memory.not_before = not_before
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
                "SELECT c.run, s.url, c.fps, c.lastmods, c.urls FROM url_chunks c "
                "JOIN sitemaps s ON s.id = c.sitemap_id WHERE c.host_id = ? "
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
            "SELECT fps, lastmods FROM url_chunks WHERE host_id = ? AND run {} ? ORDER BY run, id"
        )
        # Streamed from the cursor: a big host's blobs are never all held as well.
        earlier = self._db.execute(query.format("<"), (host_id, self.run_id))
        listed = LedgerView.build(earlier)
        this_run = self._db.execute(query.format("="), (host_id, self.run_id))
        return listed, LedgerView.build(this_run)


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


def iso(epoch: int | None) -> str | None:
    """A ledger lastmod (epoch seconds) as records write lastmods (``dates.format_utc``)."""
    return None if epoch is None else format_utc(datetime.fromtimestamp(epoch, UTC))


def now() -> float:
    """Wall-clock seconds (the state file stores wall time: runs span processes and days)."""
    return time.time()
