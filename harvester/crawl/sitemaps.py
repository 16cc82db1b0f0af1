"""The sitemap log of one host: every sitemap it fetched (or skipped), as a tree.

In: the host worker's events (``HostWorker``, host.py): where robots.txt was
read (``robots``), a sitemap admitted or skipped (``skipped``), each attempt at
one (``attempt``), its body's bytes and entries (``chunk``, ``entries``) and
what the attempt came to (``outcome``, an ``attempt.Outcome``). Out:
``as_dict()``, the host report's ``sitemap_log``: where robots.txt was read
and one JSON-ready dict per sitemap in the order they were first met, each
naming its ``parent`` (the index that listed it; None for robots.txt lines,
fallback probes and seeds), which ``harvester tree`` draws
(harvester/view/tree.py).

A node's fields: ``url``, ``parent``, ``source`` (robots | index | fallback |
seed), ``depth``, ``kind`` (urlset | sitemapindex | rss | atom | text; None: not
read), ``urls`` and ``sitemaps`` (entries of each kind its last read yielded),
``bytes`` (of the body as read: a Content-Encoding undone, a .gz file still
compressed), ``gzip`` (gzip layers the reader undid), ``newest`` (its newest
lastmod, ISO-8601 UTC), ``status`` (HTTP),
``outcome`` (ok | partial | failed | missed | not_modified | refused | skipped),
``error`` (the failure's class, ``HarvesterError.kind``) and ``message``.

Kept only when asked (``output.sitemap_log``, or the ``tree`` verb): counting
each entry's lastmod costs a little on the hot path (about 130 ns an entry), so
a log made with ``enabled=False`` does nothing. At most ``MAX_NODES``
sitemaps are kept; ``omitted`` counts the rest.

Usage::

    log = SitemapLog()
    log.attempt(ref)
    log.chunk(len(chunk)); log.entries(entries)
    log.outcome(outcome)
    report.sitemap_log = log.as_dict()
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvester.crawl.attempt import (
    BodyBroken,
    Failed,
    Missed,
    NotModified,
    Read,
    Refused,
    RetryListed,
    Undecodable,
)
from harvester.errors import NotASitemap
from harvester.models import UrlEntry
from harvester.state.codec import iso

if TYPE_CHECKING:
    from datetime import datetime

    from harvester.crawl.attempt import Outcome
    from harvester.crawl.frontier import SitemapRef
    from harvester.models import Entry

__all__ = ["MAX_NODES", "SitemapLog", "SitemapNode"]

# Sitemaps kept per host: an index of 50,000 children would otherwise make a host
# report of megabytes; the tree of the first thousand is what a person reads anyway.
MAX_NODES = 1_000


@dataclass(slots=True)
class SitemapNode:
    """One sitemap of the host, as far as it got (see the module docstring for fields)."""

    url: str
    parent: str | None
    source: str
    depth: int
    kind: str | None = None
    urls: int = 0
    sitemaps: int = 0  # child sitemaps it listed (an index)
    bytes: int = 0
    gzip: int = 0
    newest: datetime | None = None
    status: int | None = None
    outcome: str = "queued"
    error: str | None = None
    message: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape (``newest`` as ISO-8601 UTC text, or None)."""
        out = {name: getattr(self, name) for name in self.__slots__}
        out["newest"] = None if self.newest is None else iso(int(self.newest.timestamp()))
        return out


class SitemapLog:
    """The sitemaps of one host, filled by its worker; one per host."""

    __slots__ = ("_current", "_nodes", "enabled", "omitted", "robots_status", "robots_url")

    def __init__(self, *, enabled: bool = True) -> None:
        """``enabled=False``: every method does nothing (the worker calls them all the same)."""
        self.enabled = enabled
        self._nodes: dict[str, SitemapNode] = {}  # by URL, in the order first met
        self._current: SitemapNode | None = None  # the one being fetched (None: not kept)
        self.omitted = 0  # sitemaps not kept: MAX_NODES were already
        self.robots_url: str | None = None
        self.robots_status: int | None = None

    def robots(self, url: str | None, status: int | None) -> None:
        """Where the host's robots.txt was read from, and its HTTP status (None: not fetched)."""
        self.robots_url, self.robots_status = url, status

    def _node(self, ref: SitemapRef) -> SitemapNode | None:
        if not self.enabled:
            return None
        node = self._nodes.get(ref.url)
        if node is None:
            if len(self._nodes) >= MAX_NODES:
                self.omitted += 1
                return None
            node = SitemapNode(ref.url, ref.parent, ref.source, ref.depth)
            self._nodes[ref.url] = node
        return node

    def skipped(self, ref: SitemapRef, why: str) -> None:
        """``ref`` was not fetched: ``why`` is the policy or cap (``cross_host``, ...)."""
        node = self._node(ref)
        if node is not None and node.outcome == "queued":
            node.outcome, node.error = "skipped", why

    def attempt(self, ref: SitemapRef) -> None:
        """A request for ``ref`` starts: its counts start again (a re-fetch reads it anew)."""
        node = self._current = self._node(ref)
        if node is not None:
            node.urls = node.sitemaps = node.bytes = 0
            node.newest = node.error = node.message = None

    def chunk(self, size: int) -> None:
        """``size`` bytes of the current body arrived."""
        if self._current is not None:
            self._current.bytes += size

    def entries(self, entries: list[Entry]) -> None:
        """Entries the current body yielded: counted, and the newest lastmod kept."""
        node = self._current
        if node is None or not entries:
            return
        newest = node.newest
        urls = 0
        for entry in entries:
            if type(entry) is UrlEntry:
                urls += 1
            when = entry.lastmod
            if when is not None and (newest is None or when > newest):
                newest = when
        node.urls += urls
        node.sitemaps += len(entries) - urls
        node.newest = newest

    def outcome(self, outcome: Outcome) -> None:
        """What the attempt came to; a retried attempt is overwritten by the next one."""
        node = self._current
        if node is None:
            return
        match outcome:
            case Read(result, status):
                node.status = status
                node.kind = None if result.kind is None else str(result.kind)
                node.gzip = result.stats.gzip_layers
                node.outcome = result.status
                if isinstance(result.error, NotASitemap) and node.source == "fallback":
                    node.outcome = "missed"  # a guess that found a page: not a failure
                elif result.error is not None:
                    self._error(node, result.error.kind, result.error.message)
            case NotModified(status):
                node.status, node.outcome = status, "not_modified"
            case Missed():
                node.outcome = "missed"
            case Refused():
                node.outcome = "refused"
            case RetryListed():
                pass  # the listed URL is asked next: another attempt
            case BodyBroken() | Undecodable() | Failed():
                node.status = outcome.status
                node.outcome = "partial" if node.urls or node.sitemaps else "failed"
                self._error(node, outcome.error.kind, outcome.error.message)

    @staticmethod
    def _error(node: SitemapNode, kind: str, message: str) -> None:
        node.error, node.message = kind, message

    def as_dict(self) -> dict[str, Any]:
        """The report's ``sitemap_log``: ``{"robots": {"url", "status"}, "sitemaps": [node
        dicts, in the order first met], "omitted": sitemaps not kept}``."""
        return {
            "robots": {"url": self.robots_url, "status": self.robots_status},
            "sitemaps": [node.as_dict() for node in self._nodes.values()],
            "omitted": self.omitted,
        }
