"""The writer's own costs: the parent process of a ``harvester run``, step by step.

On the ``many`` pipeline benchmark the writer is the third process on two cores, so
each CPU second it spends is taken from the workers. This times, in one process and
side by side (rounds interleaved, best of ``--rounds``), what it does per run:

* ``state``: the state file's calls as the writer makes them for ``--hosts`` hosts of
  three 512-URL batches each (``add_many`` of a message's batches, ``finish_host``
  with the host's sitemaps, discovery and audit, ``commit`` every 250 hosts, about
  every 2 s at pipeline speed), with chunks packed beforehand as the workers pack
  them, at SQLite pages of 4 KiB (SQLite's default, and state files made before
  ``state.PAGE_SIZE``), 8 KiB, ``PAGE_SIZE`` (16 KiB) and 64 KiB (SQLite's largest):
  CPU seconds by call and the file's size;
* ``cross``: the cross-host set (``CrossHostTracker.add``) over as many random
  fingerprints in batches of 630 (a message's), in table mode (a hash table, what the
  writer uses: ``dedupe.SeenSet(table=True)``) and in the sorted buckets, their lines
  prefetched 8 fingerprints ahead (``_cdedupe.add_many``'s default) or not at all:
  ns a URL, and the set's peak bytes in memory.

Usage::

    python -m benchmarks.bench_writer                 # 2,000 hosts (~3 million URLs)
    python -m benchmarks.bench_writer --hosts 500 --rounds 2
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import statistics
import tempfile
import time
from array import array

from benchmarks.bench_chunks import CHUNK, urls_of
from harvester.state.memory import HostState, SitemapState
from harvester.state.rows import LedgerRows
from harvester.state.store import PAGE_SIZE, StateStore
from harvester.urls import dedupe
from harvester.urls.crosshost import CrossHostTracker

BATCHES = 3  # a host's batches of CHUNK URLs (the many corpus: ~1,600 URLs a host)
COMMIT_EVERY = 250  # hosts between commits
MESSAGE = 630  # fingerprints a cross-host add (a worker's message, on many)

Host = tuple[list[tuple[str, LedgerRows]], HostState]


def hosts_of(count: int, seed: int = 1) -> list[Host]:
    """``count`` hosts as the writer receives them: batches of packed chunks (their
    blobs as views, as the results pipe hands them over) and the finished host's state."""
    rng = random.Random(seed)
    texts = [bytearray(b"".join(u.encode() + b"\n" for u in c)) for c in urls_of(64 * CHUNK)]
    hosts: list[Host] = []
    for h in range(count):
        host = f"127.1.{h // 250}.{h % 250}:8765"
        index = f"http://{host}/sitemap.xml"
        maps = [f"http://{host}/sitemap-pages-{k}.xml.gz" for k in range(BATCHES)]
        batches = []
        for k, sitemap in enumerate(maps):
            text = texts[(h * BATCHES + k) % len(texts)]
            fps = array("q", [rng.getrandbits(64) - 2**63 for _ in range(CHUNK)])
            lastmods = array("q", [1_600_000_000 + rng.randrange(10**8) for _ in range(CHUNK)])
            rows = LedgerRows.pack_text(fps, text, [len(text)], lastmods, [(sitemap, CHUNK)])
            views = [tuple(memoryview(b) for b in chunk) for chunk in rows.chunks]
            batches.append((host, LedgerRows(rows.sitemaps, views)))  # type: ignore[arg-type]
        sitemaps = [
            SitemapState(
                index,
                None,
                "ok",
                200,
                complete=True,
                kind="sitemapindex",
                etag='"5f1e"',
                content_hash=rng.randbytes(16),
                urls=BATCHES,
                children=[(m, 1_700_000_000) for m in maps],
            )
        ]
        sitemaps += [
            SitemapState(
                m, index, "ok", 200, complete=True, kind="urlset", content_hash=rng.randbytes(16)
            )
            for m in maps
        ]
        discovery = {"origin": f"http://{host}", "source": "robots", "refs": [index]}
        audit = {"verdict": "plausible", "figures": {"total": CHUNK * BATCHES}}
        hosts.append((batches, HostState(host, sitemaps, [index, *maps], discovery, audit)))
    return hosts


def state_calls(hosts: list[Host], page_size: int, directory: str) -> dict[str, float]:
    """CPU seconds of each state call over ``hosts``, and the file's MB once closed."""
    path = os.path.join(directory, f"state-{page_size}.sqlite")
    spent = {"add_many": 0.0, "finish_host": 0.0, "commit": 0.0}
    clock = time.process_time
    with StateStore(path, page_size=page_size) as store:
        store.start_run(emit="all", output=None)
        for i, (batches, state) in enumerate(hosts):
            started = clock()
            store.add_many(batches[:2])  # a message carries a few batches, often of two hosts
            store.add_many(batches[2:])
            added = clock()
            store.finish_host(state)
            finished = clock()
            if i % COMMIT_EVERY == COMMIT_EVERY - 1 or i == len(hosts) - 1:
                store.commit(0)
            spent["add_many"] += added - started
            spent["finish_host"] += finished - added
            spent["commit"] += clock() - finished
        store.finish_run("complete")
    spent["file_mb"] = os.path.getsize(path) / 2**20
    for suffix in ("", "-wal", "-shm", ".lock"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    return spent


def cross_add(fps: array[int], way: str) -> tuple[float, int]:
    """CPU seconds of ``CrossHostTracker.add`` over ``fps`` and the set's peak bytes in
    memory: ``way`` "table" (what the writer uses), "buckets" (sorted buckets, bucket
    lines prefetched 8 ahead) or "buckets, no prefetch"."""
    saved, table, module = dedupe._add_many, dedupe._FpTable, dedupe._cdedupe
    assert module is not None, "needs the compiled harvester.urls._cdedupe"
    if way != "table":
        dedupe._FpTable = None
        dedupe._add_many = functools.partial(module.add_many, ahead=0 if "no" in way else 8)
    tracker = CrossHostTracker()  # the default spill threshold, as the writer's
    peak = 0
    try:
        started = time.process_time()
        for at in range(0, len(fps), MESSAGE):
            tracker.add("h", fps[at : at + MESSAGE])
            if at % (MESSAGE * 64) == 0:
                peak = max(peak, tracker._seen.memory_bytes)
        return time.process_time() - started, peak
    finally:
        tracker.close()
        dedupe._add_many, dedupe._FpTable = saved, table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_writer", description=__doc__)
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    hosts = hosts_of(args.hosts)
    urls = args.hosts * BATCHES * CHUNK
    print(f"{args.hosts:,} hosts, {urls:,} URLs, best of {args.rounds} interleaved rounds")

    pages = (4096, 8192, PAGE_SIZE, 65536)
    best: dict[int, dict[str, float]] = {p: {} for p in pages}
    with tempfile.TemporaryDirectory(prefix="bench-writer-") as directory:
        for _ in range(args.rounds):
            for page in pages:
                for key, value in state_calls(hosts, page, directory).items():
                    best[page][key] = min(best[page].get(key, value), value)
    for page in pages:
        line = {"bench": "writer", "measure": "state_calls", "page_size": page, "hosts": args.hosts}
        print(json.dumps(line | {k: round(v, 3) for k, v in best[page].items()}))
    names = {4096: "SQLite's default", PAGE_SIZE: "state.PAGE_SIZE", 65536: "SQLite's largest"}
    print("| state calls | page | add_many s | finish_host s | commit s | total s | file MB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for page in pages:
        b = best[page]
        total = b["add_many"] + b["finish_host"] + b["commit"]
        print(
            f"| {names.get(page, '')} | {page:,} | "
            f"{b['add_many']:.3f} | {b['finish_host']:.3f} | {b['commit']:.3f} | "
            f"{total:.3f} | {b['file_mb']:.0f} |"
        )

    fps = array("Q", random.Random(2).randbytes(8 * urls))
    ways = ("table", "buckets", "buckets, no prefetch")
    spent: dict[str, list[float]] = {way: [] for way in ways}
    peaks: dict[str, int] = {}
    for _ in range(args.rounds):
        for way in ways:
            seconds, peaks[way] = cross_add(fps, way)
            spent[way].append(seconds)
    for way, times in spent.items():
        line = {"bench": "writer", "measure": "cross_host", "way": way, "urls": urls}
        line |= {"best_s": round(min(times), 3), "median_s": round(statistics.median(times), 3)}
        print(json.dumps(line | {"peak_mb": round(peaks[way] / 2**20, 1)}))
    print("\n| cross-host set | best ns a URL | median ns a URL | peak MB in memory |")
    print("| --- | ---: | ---: | ---: |")
    for way, times in spent.items():
        best_ns, median_ns = min(times) * 1e9 / urls, statistics.median(times) * 1e9 / urls
        print(f"| {way} | {best_ns:.0f} | {median_ns:.0f} | {peaks[way] / 2**20:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
