"""Gunzip-throughput benchmark: ``GzipStream`` against one-shot zlib on the same bytes.

Generates (seeded, in memory, ~2 s) a sitemap-like urlset of about 50 MiB
(49.75 MiB, under the 50 MiB default cap) and gzips it at level 6, then
measures, best of ``--repeat`` runs each:

* ``zlib_oneshot`` (a): ``zlib.decompressobj(wbits=31).decompress(all_bytes)``,
  the ceiling: one C call, one output buffer, no streaming and no cap.
* ``gzipstream`` (b): ``GzipStream()`` (default step 256 KiB, default cap) fed
  ``--chunk`` (64 KiB) slices of the file, output pieces counted and dropped.
* ``zlib_stream``: ``decompressobj.decompress(chunk)`` per 64 KiB chunk without
  ``max_length``, i.e. streaming but unbounded (context for the ratio).
* ``gzipstream_step_*``: ``GzipStream`` with other steps, and ``plain``: the
  passthrough of the uncompressed XML.

Every measurement prints one JSON line on stdout (MB = 10**6 bytes; MB/s counts
decompressed bytes; ``ratio`` is MB/s relative to ``zlib_oneshot``), then a
human-readable summary goes to stderr. ``gzipstream`` also reports the
tracemalloc peak of one extra, untimed run.

Usage::

    python -m benchmarks.bench_decompress
    python benchmarks/bench_decompress.py --repeat 7 --chunk 16384
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
import tracemalloc
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Final

if __package__ in (None, ""):  # run as a script: make ``harvester`` importable from the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harvester.reader.decompress import GzipStream

if TYPE_CHECKING:
    from collections.abc import Callable

TARGET_BYTES: Final = round(49.75 * 1024 * 1024)  # "about 50 MiB", under the 52,428,800 cap
_VOCABULARY: Final = (
    "organic cotton slim fit stretch denim jeans classic crew neck shirt merino wool sweater "
    "waterproof hiking jacket leather ankle boots running shoes lightweight mesh trainers "
    "linen summer dress floral print midi skirt hoodie fleece joggers puffer vest scarf"
)
_WORDS: Final = _VOCABULARY.split()


def make_xml(seed: int, target: int = TARGET_BYTES) -> bytes:
    """A seeded urlset of about ``target`` bytes (loc, lastmod, changefreq, priority)."""
    rng = random.Random(seed)
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
    ]
    size = len(parts[0])
    tail = "</urlset>\n"
    i = 0
    while True:
        slug = "-".join(rng.choices(_WORDS, k=rng.randint(3, 7)))
        entry = (
            f"<url><loc>https://www.example-shop.com/products/{slug}-{i}"
            f"?variant={rng.getrandbits(40)}</loc>"
            f"<lastmod>20{rng.randint(10, 24):02d}-{rng.randint(1, 12):02d}-"
            f"{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z"
            f"</lastmod><changefreq>{rng.choice(('daily', 'weekly', 'monthly'))}</changefreq>"
            f"<priority>0.{rng.randint(1, 9)}</priority></url>\n"
        )
        if size + len(entry) + len(tail) > target:
            break
        parts.append(entry)
        size += len(entry)
        i += 1
    parts.append(tail)
    return "".join(parts).encode()


def bench(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    """Best wall time of ``repeat`` calls, and the byte count the last call returned."""
    best = float("inf")
    produced = 0
    for _ in range(repeat):
        started = time.perf_counter()
        produced = fn()
        best = min(best, time.perf_counter() - started)
    return best, produced


def oneshot(data: bytes) -> int:
    return len(zlib.decompressobj(wbits=31).decompress(data))


def zlib_stream(data: bytes, chunk: int) -> int:
    zd = zlib.decompressobj(wbits=31)
    n = 0
    for i in range(0, len(data), chunk):
        n += len(zd.decompress(data[i : i + chunk]))
    return n + len(zd.flush())


def stream(data: bytes, chunk: int, step: int = 256 * 1024) -> int:
    gs = GzipStream(step=step)
    n = 0
    for i in range(0, len(data), chunk):
        for piece in gs.feed(data[i : i + chunk]):
            n += len(piece)
    for piece in gs.flush():
        n += len(piece)
    return n


def traced_peak(fn: Callable[[], int]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--seed", type=int, default=20240501)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--chunk", type=int, default=64 * 1024, help="feed size in bytes")
    args = ap.parse_args(argv)

    started = time.perf_counter()
    xml = make_xml(args.seed)
    gz = gzip.compress(xml, compresslevel=6, mtime=0)
    print(
        f"corpus: {len(xml):,} bytes XML, {len(gz):,} bytes gzip"
        f" (x{len(xml) / len(gz):.1f}), made in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    chunk = args.chunk
    cases: list[tuple[str, bytes, Callable[[], int]]] = [
        ("zlib_oneshot", gz, lambda: oneshot(gz)),
        ("gzipstream", gz, lambda: stream(gz, chunk)),
        ("zlib_stream", gz, lambda: zlib_stream(gz, chunk)),
        ("gzipstream_step_64k", gz, lambda: stream(gz, chunk, 64 * 1024)),
        ("gzipstream_step_1m", gz, lambda: stream(gz, chunk, 1024 * 1024)),
        ("plain", xml, lambda: stream(xml, chunk)),
    ]
    base = 0.0
    peak = 0
    rows: list[dict[str, object]] = []
    for name, data, fn in cases:
        seconds, produced = bench(fn, args.repeat)
        if produced != len(xml):
            raise SystemExit(f"{name}: produced {produced} bytes, expected {len(xml)}")
        mbps = produced / seconds / 1e6
        base = base or mbps  # the first case is the reference
        row: dict[str, object] = {
            "bench": "decompress",
            "case": name,
            "bytes_in": len(data),
            "bytes_out": produced,
            "chunk": chunk,
            "seconds": round(seconds, 4),
            "mb_per_s": round(mbps, 1),
            "ratio": round(mbps / base, 3),
        }
        if name == "gzipstream":
            peak = row["tracemalloc_peak_bytes"] = traced_peak(fn)
        rows.append(row)
        print(json.dumps(row), flush=True)

    print(f"\n{'case':<22}{'MB/s':>9}{'vs oneshot':>12}", file=sys.stderr)
    for row in rows:
        print(f"{row['case']!s:<22}{row['mb_per_s']!s:>9}{row['ratio']!s:>12}", file=sys.stderr)
    ratio = next(r["ratio"] for r in rows if r["case"] == "gzipstream")
    print(
        f"\nGzipStream ({chunk // 1024} KiB feeds, 256 KiB steps) runs at {ratio} x the"
        f" speed of one-shot zlib; tracemalloc peak {peak / 1e6:.2f} MB.",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
