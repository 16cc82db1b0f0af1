"""The coverage check's sample of a host's listed URLs (issue 49), kept as records go out.

In: the host's record batches (``ListedSample.wrap`` of its emit). Out: the K listed
URLs of the lowest fingerprints (``picks``): the same sample for the same list in any
order, and uniform. Lowest as the state file orders them (signed 64-bit), as the lastmod
audit picks its pages (``state.samples.picks``, per sitemap): for a host with one
sitemap the two samples are the same pages.

With a state file a batch carries the ledger rows of every URL listed (those ``--emit``
or ``--since`` leave out too): the sample is taken from them, with each URL's lastmod as
the state stores it and its fingerprint as the state keys it, so the pages the check
fetches can be stored as the lastmod audit's samples (``crawl/cover.py``). Without one,
from the records themselves.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from harvester.audit.pageread import read_page
from harvester.errors import HTTPStatusError
from harvester.state.chunks import NO_LASTMOD, unpack_fps, unpack_urls
from harvester.state.codec import now
from harvester.state.rows import signed
from harvester.urls.fingerprint import fingerprint

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from harvester.crawl.batch import RecordBatch
    from harvester.crawl.homepage import Fetched
    from harvester.state.rows import LedgerRows

    Emit = Callable[[RecordBatch], Awaitable[None]]

__all__ = ["AuditSamples", "ListedSample", "Pick", "SampledPages"]

_NO_BOUND = 1 << 64  # above every rank
# A fingerprint's rank: its unsigned value with the top bit flipped sorts as its signed
# value does (the state's order, the audit's), and costs one operation per URL.
_FLIP = 1 << 63
_HTTP = HTTPStatusError.kind  # the audit's error for a page that answered an error status


class Pick(NamedTuple):
    """One sampled listed URL."""

    url: str  # canonical
    fp: int  # its fingerprint (unsigned)
    lastmod: int | None  # its lastmod as the state stores it (None: none, or no state)


class ListedSample:
    """The K listed URLs of the lowest fingerprints, taken from a host's record batches as
    they go out: the same sample for the same list in any order, and uniform."""

    __slots__ = ("_heap", "k")

    def __init__(self, k: int) -> None:
        self.k = k
        # (-rank, canonical URL, lastmod or NO_LASTMOD): a max-heap
        self._heap: list[tuple[int, str, int]] = []

    def wrap(self, emit: Emit) -> Emit:
        """``emit``, each batch sampled on its way."""

        async def sampled(batch: RecordBatch) -> None:
            self.take(batch)
            await emit(batch)

        return sampled

    def take(self, batch: RecordBatch) -> None:
        """Keep what ``batch`` has of the K lowest fingerprints so far."""
        if batch.rows is not None:
            self._take(_rows(batch.rows, self._bound()))
            return
        fps, bound = batch.fingerprints, self._bound()
        # Once K are kept, a URL joins with chance K/n: most batches end here.
        hits = [i for i, fp in enumerate(fps) if fp ^ _FLIP < bound]
        if hits:
            self._take((fp ^ _FLIP, url, NO_LASTMOD) for fp, url in _pairs(batch, hits))

    def _bound(self) -> int:
        """A rank at or above this cannot join the sample."""
        return -self._heap[0][0] if len(self._heap) >= self.k else _NO_BOUND

    def _take(self, found: Iterable[tuple[int, str, int]]) -> None:
        heap, k = self._heap, self.k
        for rank, url, lastmod in found:
            if any(neg == -rank for neg, _, _ in heap):
                continue  # (kept already: a URL two sitemaps list)
            if len(heap) < k:
                heapq.heappush(heap, (-rank, url, lastmod))
            elif rank < -heap[0][0]:
                heapq.heapreplace(heap, (-rank, url, lastmod))

    def picks(self) -> list[Pick]:
        """The sample, lowest fingerprint first."""
        return [
            Pick(url, -neg ^ _FLIP, None if lastmod == NO_LASTMOD else lastmod)
            for neg, url, lastmod in sorted(self._heap, reverse=True)
        ]

    def urls(self) -> list[str]:
        """The sample's URLs, lowest fingerprint first."""
        return [pick.url for pick in self.picks()]


def _rows(rows: LedgerRows, bound: int) -> Iterable[tuple[int, str, int]]:
    """(rank, URL, lastmod) of the ledger rows whose rank is under ``bound``
    (the sample's at the batch's start: ``_take`` checks each against its own); only the
    URLs of chunks with such a row are unpacked."""
    for fps_blob, lastmods_blob, urls_blob in rows.chunks:
        fps = unpack_fps(fps_blob)
        hits = [i for i, fp in enumerate(fps) if fp + _FLIP < bound]  # (signed: + flips)
        if hits:
            urls, lastmods = unpack_urls(urls_blob), unpack_fps(lastmods_blob)
            yield from ((fps[i] + _FLIP, urls[i], lastmods[i]) for i in hits)


def _pairs(batch: RecordBatch, hits: list[int]) -> Iterable[tuple[int, str]]:
    """(fingerprint, URL) of the records at ``hits``; of every record when a filter left
    fewer records than fingerprints (the indices do not line up then)."""
    fps = batch.fingerprints
    if batch.data is None:
        records = batch.records
        if len(records) == len(fps):
            return ((fps[i], records[i]["url"]) for i in hits)
        return ((fingerprint(r["url"]), r["url"]) for r in records)
    lines = bytes(batch.data).split(b"\n")
    if batch.lines is None:
        return ((fps[i], json.loads(lines[i])["url"]) for i in hits)
    urls = (json.loads(line)["url"] for line in lines if line)
    return ((fingerprint(url), url) for url in urls)


class AuditSamples:
    """The sampled listed pages the coverage check fetched, as rows of the state's samples
    table (``state.samples``; no host id): with a state file, the next lastmod audit
    counts them instead of fetching them again (``run/verify.py``).

    ``cap``: the bytes of a page the audit reads (``audit.max_page_bytes``). A page is
    left to the audit when the check read less of it than that, or it is not HTML (the
    check does not read such a body); a transport failure is left too (it says nothing
    of the page), and an error status other than 404/410 (a 5xx may pass, a 403 may be
    a bot wall the audit classes apart). A 404/410 is a failed sample, as the audit
    stores one.
    """

    __slots__ = ("cap", "rows")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.rows: list[tuple[Any, ...]] = []

    def add(self, pick: Pick, fetched: Fetched) -> None:
        """Store what ``fetched`` (``pick``'s page, its body kept) says, if the audit would."""
        fp, lastmod = signed(pick.fp), pick.lastmod
        if fetched.headers is None:  # an error status (homepage.fetch_page): no body read
            if fetched.status in (404, 410):  # (others may be passing, or a bot wall's)
                row = (fp, pick.url, now(), lastmod, None, None, None, fetched.status, _HTTP)
                self.rows.append(row)
            return
        body, page = fetched.body, fetched.page
        if body is None or page is None or (page.truncated and len(body) < self.cap):
            return
        reading = read_page(body, fetched.headers, lastmod, cap=self.cap)
        simhash = None if reading.fingerprint is None else signed(reading.fingerprint)
        self.rows.append(
            (
                fp,
                pick.url,
                reading.at,
                lastmod,
                simhash,
                reading.page_modified,
                str(reading.agreement),
                fetched.status,
                None,
            )
        )


class SampledPages:
    """The links walk's pages that are in the sample (``links.PageWatch``): each is read
    for the audit (``audit``, when given) and kept, its body dropped, so the sample does
    not fetch it again (``take``)."""

    __slots__ = ("_audit", "_kept", "_wanted")

    def __init__(self, sample: list[Pick], audit: AuditSamples | None) -> None:
        self._wanted = {pick.url: pick for pick in sample}
        self._audit = audit
        self._kept: dict[str, Fetched] = {}

    def wants(self, key: str) -> bool:
        """Whether ``key`` (a canonical URL) is a sampled URL not seen yet."""
        return key in self._wanted and key not in self._kept

    def saw(self, key: str, fetched: Fetched) -> None:
        """The walk fetched the sampled page ``key``: read it for the audit, keep it."""
        if self._audit is not None:
            self._audit.add(self._wanted[key], fetched)
        self._kept[key] = replace(fetched, body=None)

    def take(self, url: str) -> Fetched | None:
        """The walk's answer for the sampled ``url`` (None: the walk did not fetch it)."""
        return self._kept.pop(url, None)
