"""The writer's cross-host set as a run grows: is its cost per URL flat?

Every URL of a run goes through one ``CrossHostTracker`` in the writer (the parent
process), which spills a sorted run to disk every 1.5 million URLs
(``dedupe.cross_host_spill_threshold``). This feeds it random fingerprints in
batches of 630 (a worker's message on the ``many`` benchmark) and prints, side by
side, with the spilled runs merged as they spill (``SpilledRuns.merge``, the default),
without (each spill its own run) and as before the merge (each spill its own run,
filters only up to 8 bytes a fingerprint of the threshold, 12 MB, later runs
unfiltered: a ``pread`` a URL each): the CPU ns a URL over each slice
of the run (user + system: a lookup in an unfiltered run is a ``pread``), the runs
at its end and the set's bytes in memory (the table and the runs' filters).

The realweb benchmark's 100,000 domains list 24 million URLs; a million such domains
244 million.

Usage::

    python -m benchmarks.bench_crosshost                      # 24 million URLs
    python -m benchmarks.bench_crosshost --millions 48 --slice 6
"""

from __future__ import annotations

import argparse
import json
import random
import time
from array import array

from harvester.urls import spill
from harvester.urls.crosshost import CrossHostTracker

MESSAGE = 630  # fingerprints a cross-host add (a worker's message, on many)


def feed(millions: int, slice_m: int, way: str) -> list[dict[str, float]]:
    """Add ``millions`` million random fingerprints; one row per ``slice_m`` million:
    ns a URL over the slice, runs and bytes in memory at its end."""
    saved = spill._merge_runs
    if way != "merged":
        spill._merge_runs = None
    rng = random.Random(5)
    tracker = CrossHostTracker()
    if way == "before":
        tracker._seen._spilled.filter_budget = 8 * tracker._seen._threshold
    rows = []
    try:
        for start in range(0, millions, slice_m):
            fps = array("Q", rng.randbytes(8 * slice_m * 1_000_000))
            began = time.process_time()
            for at in range(0, len(fps), MESSAGE):
                tracker.add("h", fps[at : at + MESSAGE])
            spent = time.process_time() - began
            seen = tracker._seen
            rows.append(
                {
                    "urls_m": start + slice_m,
                    "ns_per_url": spent * 1e9 / len(fps),
                    "runs": len(seen._spilled.runs),
                    "unfiltered": sum(f is None for f in seen._spilled.filters),
                    "memory_mb": seen.memory_bytes / 2**20,
                }
            )
    finally:
        tracker.close()
        spill._merge_runs = saved
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_crosshost", description=__doc__)
    ap.add_argument("--millions", type=int, default=24, help="URLs in the run, in millions")
    ap.add_argument("--slice", type=int, default=3, help="millions of URLs a row")
    args = ap.parse_args(argv)
    assert spill._merge_runs is not None, "needs the compiled harvester.urls._cdedupe"
    ways = ("merged", "unmerged", "before")
    table = {way: feed(args.millions, args.slice, way) for way in ways}
    for way, rows in table.items():
        for row in rows:
            print(json.dumps({"bench": "crosshost", "way": way} | row))
    heads = " | ".join(f"{way}: ns a URL | runs | unfiltered | MB in memory" for way in ways)
    print(f"\n| URLs (millions) | {heads} |")
    print("| ---: |" + " ---: | ---: | ---: | ---: |" * len(ways))
    for line in zip(*table.values(), strict=True):
        cells = [f"{line[0]['urls_m']}"]
        for row in line:
            cells += [
                f"{row['ns_per_url']:.0f}",
                f"{row['runs']}",
                f"{row['unfiltered']}",
                f"{row['memory_mb']:.1f}",
            ]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
