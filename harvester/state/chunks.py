"""Ledger chunks: the URLs a host's sitemaps listed, as blobs, and the view that finds them.

The state file's ledger keeps what each run listed as **chunks**, one row of
``url_chunks`` per sitemap per batch, not one row per URL:

* ``fps``: the canonical URLs' signed 64-bit fingerprints, little-endian;
* ``lastmods``: their lastmod epoch seconds (``NO_LASTMOD`` for none), likewise;
* ``urls``: the canonical URLs, ``"\\n"``-joined UTF-8, as one LZ4 frame (chunks
  written before 2026-12 hold a zstd frame or zlib data: both still read).

Why blobs: a row per URL made the writer run SQLite's B-tree insert for every
URL, on the one process that also writes the output, and made the file several
times larger. A chunk is one row per sitemap per batch (``bench_state`` measures
the inserts). The workers pack the chunks, in parallel; the writer only inserts
them.

In: a batch's fingerprints, lastmods and URLs (``pack``); a host's stored chunks
(``LedgerView.build``). Out: the blobs; and ``LedgerView.find``, the position of
each fingerprint in the host's sorted view (``-1``: not listed), with its
lastmod: the newest one any chunk gave it.

The view costs 16 bytes per URL the host's earlier runs listed, held while the
host is harvested (a 1-million-URL site: 16 MB), and nothing for a host the state
file has never seen. Sorting and lookups run in C (``harvester/urls/_cdedupe.pyx``)
when it is built, else in Python with the same results.
"""

from __future__ import annotations

import sys
import zlib
from array import array
from bisect import bisect_left
from typing import TYPE_CHECKING

import lz4.frame
import zstandard

from harvester import compiled

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

__all__ = ["NO_LASTMOD", "LedgerView", "pack", "pack_text", "unpack_fps", "unpack_urls"]

NO_LASTMOD = -(1 << 63)  # lastmod epoch seconds in arrays: "none"
# The URL text's compressor: LZ4 frames (the lz4 package), about twice as fast as zstd
# for a somewhat weaker ratio (`python -m benchmarks.bench_chunks` compares them).
# Compressing was most of what a state file cost the workers; the bytes the weaker
# ratio adds cost the writer (which only copies them into SQLite) less than LZ4 saves
# the workers. Chunks of earlier versions (zstd, zlib) stay readable.
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_ZSTD = zstandard.ZstdDecompressor()

_BIG_ENDIAN = sys.byteorder == "big"


def _le(values: array[int]) -> bytes:
    """``values`` as little-endian bytes (the blobs' order, whatever the machine's)."""
    if _BIG_ENDIAN:
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _from_le(data: bytes | memoryview) -> array[int]:
    values = array("q", data)
    if _BIG_ENDIAN:
        values.byteswap()
    return values


def pack(fps: array[int], lastmods: array[int], urls: Sequence[str]) -> tuple[bytes, bytes, bytes]:
    """The blobs of one chunk: ``(fps, lastmods, urls)`` (see the module docstring).

    ``fps`` are signed (``array('q')``), one per URL, like ``lastmods``.
    """
    text = "\n".join(urls).encode("utf-8", "surrogatepass")
    if text.count(b"\n") != max(len(urls) - 1, 0):
        # A canonical URL holds no raw newline (normalize escapes it); should one ever,
        # it is escaped here rather than split into two on the way back.
        text = "\n".join(u.replace("\n", "%0A") for u in urls).encode("utf-8", "surrogatepass")
    return pack_text(fps, lastmods, text)


def pack_text(
    fps: array[int], lastmods: array[int], text: bytes | memoryview
) -> tuple[bytes, bytes, bytes]:
    """``pack`` for URLs already joined: ``text`` is their UTF-8, one ``"\\n"`` between
    each two (none at the end) and none inside one (the compiled loop writes it so).
    """
    return _le(fps), _le(lastmods), lz4.frame.compress(text)


def unpack_fps(blob: bytes | memoryview) -> array[int]:
    """A chunk's ``fps`` or ``lastmods`` blob as ``array('q')``."""
    return _from_le(blob)


def unpack_urls(blob: bytes | memoryview) -> list[str]:
    """A chunk's ``urls`` blob as the list of URLs, in the chunk's order.

    An LZ4 frame; a zstd frame or zlib data in chunks written by earlier versions.
    """
    magic = blob[:4]
    if magic == _LZ4_MAGIC:
        text = lz4.frame.decompress(blob)
    elif magic == _ZSTD_MAGIC:
        text = _ZSTD.decompress(blob)
    else:
        text = zlib.decompress(blob)
    return text.decode("utf-8", "surrogatepass").split("\n") if text else []


class LedgerView:
    """A host's listed URLs, sorted by fingerprint, for looking up whole batches.

    Usage::

        view = LedgerView.build((fps_blob, lastmods_blob) for each chunk, oldest first)
        for fp, at in zip(fps, view.find(fps)):
            lastmod = view.lastmods[at] if at >= 0 else None   # NO_LASTMOD: none
    """

    __slots__ = ("fps", "lastmods")

    def __init__(self, fps: array[int], lastmods: array[int]) -> None:
        self.fps = fps  # sorted, unique signed fingerprints
        self.lastmods = lastmods  # the lastmod of each (NO_LASTMOD: no chunk gave one)

    def __len__(self) -> int:
        return len(self.fps)

    @classmethod
    def build(cls, chunks: Iterable[tuple[bytes, bytes]]) -> LedgerView:
        """The view of chunks given oldest first as ``(fps blob, lastmods blob)``.

        A fingerprint in several chunks keeps the newest lastmod any of them gave
        (a later listing without one does not erase it).
        """
        fps: array[int] = array("q")
        lastmods: array[int] = array("q")
        for fp_blob, lm_blob in chunks:
            fps.frombytes(fp_blob)
            lastmods.frombytes(lm_blob)
        if _BIG_ENDIAN:
            fps.byteswap()
            lastmods.byteswap()
        return cls(*_sort_unique(fps, lastmods))

    def find(self, fps: array[int]) -> array[int]:
        """The position of each of ``fps`` in the view (``-1``: not in it)."""
        return _find_many(self.fps, fps)


def _sort_unique_py(fps: array[int], lastmods: array[int]) -> tuple[array[int], array[int]]:
    """``_cdedupe.sort_unique``'s Python twin: sorted unique fps, newest lastmod of each."""
    # sorted() is stable: among equal fingerprints, the older chunk comes first.
    order = sorted(range(len(fps)), key=fps.__getitem__)
    out_fps: array[int] = array("q")
    out_lms: array[int] = array("q")
    last: int | None = None
    for i in order:
        fp, lastmod = fps[i], lastmods[i]
        if fp == last:
            if lastmod != NO_LASTMOD:
                out_lms[-1] = lastmod
            continue
        out_fps.append(fp)
        out_lms.append(lastmod)
        last = fp
    return out_fps, out_lms


def _find_many_py(view: array[int], fps: array[int]) -> array[int]:
    """``_cdedupe.find_many``'s Python twin."""
    n = len(view)
    out: array[int] = array("q")
    for fp in fps:
        i = bisect_left(view, fp)
        out.append(i if i < n and view[i] == fp else -1)
    return out


# The same work in C (harvester/urls/_cdedupe.pyx: qsort, and bisection without objects).
_cdedupe = compiled.load("_cdedupe")
_sort_unique: Callable[[array[int], array[int]], tuple[array[int], array[int]]] = (
    _cdedupe.sort_unique if _cdedupe is not None else _sort_unique_py
)
_find_many: Callable[[array[int], array[int]], array[int]] = (
    _cdedupe.find_many if _cdedupe is not None else _find_many_py
)
# ``LedgerReader.events`` for a whole batch in C (None: its Python loop does it).
classify_many: (
    Callable[
        [array[int], array[int], array[int], array[int], array[int], tuple[str, str, str]],
        list[str | None],
    ]
    | None
) = _cdedupe.classify_many if _cdedupe is not None else None
