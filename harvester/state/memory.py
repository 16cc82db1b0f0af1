"""Host memory: what the state file remembers of a host, and what a finished host changes.

In: the rows the worker's ``ledger.LedgerReader.host`` reads (hosts, sitemaps), and
what a host's harvest learned (``crawl.incremental``). Out: ``HostMemory`` and
``SitemapMemory``, the worker's view of a host's earlier runs (discovery memory,
per-sitemap validators, hashes, index children, trust, the ledger views); and
``HostState`` and ``SitemapState``, the plain picklable update one finished host
sends the writer (``store.StateStore.finish_host``).

Its own module: these are values, without SQL or I/O. The crawl code that fills
and reads them, the reader that builds the memory and the writer that applies
the update all import them, and none of those needs the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harvester.state.revisit import LateRevisit, Revisit

if TYPE_CHECKING:
    from harvester.state.chunks import LedgerView

__all__ = ["HostMemory", "HostState", "SitemapMemory", "SitemapState"]


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
    revisit: Revisit = field(default_factory=Revisit)  # its checks (revisit.py)
    # An index that listed a child with an unmoved lastmod whose content had changed:
    # its lastmods never skip a child (state.skip_unchanged_children, issue 53 item 5).
    index_lied: bool = False
    urls: int | None = None  # entries its last full read listed


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
    late: LateRevisit = field(default_factory=LateRevisit)  # its failed late attempts
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
    revisit: Revisit | None = None  # its history after this run's check (None: not asked)


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
    # Indexes found to give an unchanged lastmod to a child that changed (issue 53 item 5).
    lied: list[str] = field(default_factory=list)
    # Its failed late attempts after this run (issue 53, ``revisit.late_after``; None: as
    # they were, a ``LateRevisit()``: none, it answered).
    late: LateRevisit | None = None
    # Issue 49: listed pages the coverage check read, as rows of the samples table without
    # the host id (``samples.SampleRow``): the next lastmod audit does not fetch them again.
    samples: list[tuple[Any, ...]] = field(default_factory=list)
