"""Ledger chunk packing: what a state file costs a worker per URL, compressor by compressor.

The workers pack each batch's canonical URLs into a ledger chunk (``harvester.state.chunks``):
newline-joined UTF-8, compressed. This times, in one process and side by side on the
same URLs (``webgen``'s ``many`` URL shapes, 512 a chunk as ``crawl.batch.BATCH``):

* ``pack_text``: what the workers run (the URLs already joined by the compiled loop,
  then LZ4), and ``pack``: the same from a list of str (join, encode, then LZ4);
* the URL text alone through LZ4, zstd level 1 (used before LZ4), zstd level -3 and
  zlib level 1: ns a URL and how much smaller each makes it.

Usage::

    python -m benchmarks.bench_chunks               # 500,000 URLs, best of 3
    python -m benchmarks.bench_chunks --urls 100000
"""

from __future__ import annotations

import argparse
import random
import time
import zlib
from array import array
from pathlib import Path
from typing import TYPE_CHECKING

import lz4.frame
import zstandard

from benchmarks.webgen import HostFiles, _Text, host_address
from harvester.state.chunks import NO_LASTMOD, pack, pack_text

if TYPE_CHECKING:
    from collections.abc import Callable

CHUNK = 512  # URLs a chunk (crawl.batch.BATCH)


def urls_of(count: int, seed: int = 1) -> list[list[str]]:
    """``count`` URLs shaped like the ``many`` corpus's, in chunks of one host each."""
    rng = random.Random(seed)
    chunks: list[list[str]] = []
    index = 0
    while sum(map(len, chunks)) < count:
        text = _Text(rng, HostFiles(host_address(index), 8765, "many", Path("/nonexistent")))
        chunks.append([text.loc() for _ in range(min(CHUNK, count - sum(map(len, chunks))))])
        index += 1
    return chunks


def best_ns(fn: Callable[[], object], urls: int, rounds: int) -> float:
    """The best of ``rounds`` CPU times of ``fn``, in ns a URL."""
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best * 1e9 / urls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_chunks", description=__doc__)
    ap.add_argument("--urls", type=int, default=500_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    chunks = urls_of(args.urls)
    n = sum(map(len, chunks))
    texts = ["\n".join(c).encode() for c in chunks]
    lines = [bytearray(b"".join(u.encode() + b"\n" for u in c)) for c in chunks]
    raw = sum(map(len, texts))
    cols = [(array("q", range(len(c))), array("q", [NO_LASTMOD] * len(c))) for c in chunks]
    zstd1 = zstandard.ZstdCompressor(level=1)
    zstd_fast = zstandard.ZstdCompressor(level=-3)
    text_ways: list[tuple[str, Callable[[bytes], bytes]]] = [
        ("LZ4 frame (what chunks use)", lz4.frame.compress),
        ("zstd level 1 (used before)", zstd1.compress),
        ("zstd level -3", zstd_fast.compress),
        ("zlib level 1", lambda b: zlib.compress(b, 1)),
    ]
    print(f"{n:,} URLs in {len(chunks):,} chunks, {raw / n:.1f} bytes a URL raw\n")
    print("| step | ns a URL | smaller by |")
    print("| --- | ---: | ---: |")

    def by_text() -> None:
        for (fps, lms), text in zip(cols, lines, strict=True):
            pack_text(fps, lms, memoryview(text)[:-1])

    def by_list() -> None:
        for (fps, lms), urls in zip(cols, chunks, strict=True):
            pack(fps, lms, urls)

    print(f"| `pack_text` (the workers' path) | {best_ns(by_text, n, args.rounds):.0f} | - |")
    print(f"| `pack` from a list of str | {best_ns(by_list, n, args.rounds):.0f} | - |")
    for name, compress in text_ways:

        def each(c: Callable[[bytes], bytes] = compress) -> None:
            for t in texts:
                c(t)  # as pack_text does: the result is not kept here

        ns = best_ns(each, n, args.rounds)
        ratio = raw / sum(len(compress(t)) for t in texts)
        print(f"| URL text, {name} | {ns:.0f} | {ratio:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
