"""Ledger rows (worker to writer): a batch's listed URLs, packed as ledger chunks.

In: a batch of one host's URLs as columns (signed fingerprints, canonical URLs,
lastmods, the sitemap runs) or as per-URL ``LedgerRow`` tuples. Out:
``LedgerRows``, the batch's chunks (``chunks.pack``), which cross the results
pipe (``harvester.run.transport``) as out-of-band buffers and which the writer
inserts as they are (``store.StateStore.add_many``).

Its own module: the message between the workers that pack and the writer that
inserts; neither side's code is needed to build or carry it.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from pickle import PickleBuffer
from typing import TYPE_CHECKING, Any, SupportsIndex

from harvester.state.chunks import NO_LASTMOD, pack, pack_text

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ["LedgerRow", "LedgerRows", "signed"]

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
