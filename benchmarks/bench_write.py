"""Output write benchmark: JsonlSink with drop-behind against plain buffered writes.

Writes ``--gb`` of JSON lines through ``harvester.output.sink.JsonlSink`` (256 KiB
batches, as the writer gets them) once per mode and round: plainly (drop-behind
off) and with drop-behind at each step of ``--steps`` (MiB; the first is the sink's
own), and prints each write's wall and CPU seconds and how much of the file is left
in the page cache (``fincore``, when installed). ``--pause`` seconds of sleep
before each write let freed memory go cold again (on a VM that returns free
pages to its host, the first touch of a page costs far more than a reused one).
``--rate`` paces the writes to so many MB a second, as a writer that also crawls
writes (a Dask shard writes slower than a pool's parent; benchmarks/README.md):
the slower the writer, the longer a dropped page waits before it is written again.

Usage::

    python -m benchmarks.bench_write                 # 1.2 GB (the many output), 2 rounds
    python -m benchmarks.bench_write --gb 0.3 --rounds 3 --pause 0 --rate 40
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harvester.output import sink as sink_module
from harvester.output.sink import JsonlSink

_LINE = (
    b'{"loc":"http://127.1.0.5:8765/store/new-arrivals/denim-604731.html","url":'
    b'"http://127.1.0.5:8765/store/new-arrivals/denim-604731.html","host":"127.1.0.5:8765",'
    b'"sitemap":"http://127.1.0.5:8765/sitemap-p-1.xml","lastmod":"2022-01-14T09:32:17Z",'
    b'"changefreq":"monthly","priority":0.7}\n'
)


def resident_mb(path: Path) -> float | None:
    """MB of ``path`` in the page cache, or None without ``fincore``."""
    if shutil.which("fincore") is None:
        return None
    out = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return round(int(out.split()[0]) / 1e6, 1)


def write_once(
    directory: Path, gb: float, step_mib: int | None, rate: float | None
) -> dict[str, object]:
    """One output of ``gb`` GB through JsonlSink; the file is removed afterwards.

    ``step_mib``: the drop-behind step (None: drop-behind off). ``rate``: MB a
    second to pace the writes to (None: as fast as they go); the CPU seconds
    exclude the pauses.
    """
    saved, saved_step = sink_module._sync_range, sink_module._DROP_STEP
    if step_mib is None:
        sink_module._sync_range = None
    else:
        sink_module._DROP_STEP = step_mib << 20
    try:
        per_batch = (256 << 10) // len(_LINE)
        batch = _LINE * per_batch
        batches = int(gb * 1e9) // len(batch)
        out = directory / "out.jsonl"
        started, cpu = time.perf_counter(), time.process_time()
        sink = JsonlSink(str(out))
        for n in range(1, batches + 1):
            sink.write(batch, per_batch)
            if rate:
                ahead = n * len(batch) / (rate * 1e6) - (time.perf_counter() - started)
                if ahead > 0:
                    time.sleep(ahead)
        sink.sync()
        seconds, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        cached = resident_mb(directory / "out.jsonl.part")
        dropped = sink.dropped
        sink.close(complete=False)
    finally:
        sink_module._sync_range, sink_module._DROP_STEP = saved, saved_step
    (directory / "out.jsonl.part").unlink()
    return {
        "mode": "plain" if step_mib is None else f"drop-behind, {step_mib} MiB step",
        "rate_mb_s": rate,
        "gb": round(batches * len(batch) / 1e9, 2),
        "seconds": round(seconds, 2),
        "cpu_s": round(cpu_s, 2),
        "dropped_mb": round(dropped / 1e6),
        "page_cache_mb": cached,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--gb", type=float, default=1.2, help="GB per write (default 1.2)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pause", type=float, default=12.0, help="seconds idle before each write")
    ap.add_argument("--dir", help="where to write (default: a temporary directory)")
    ap.add_argument(
        "--steps",
        default=f"{sink_module._DROP_STEP >> 20},32",
        help="drop-behind steps to compare, MiB (default: the sink's own, then 32)",
    )
    ap.add_argument("--rate", type=float, help="pace the writes to this many MB/s")
    args = ap.parse_args(argv)
    steps: list[int | None] = [None, *(int(x) for x in args.steps.split(",") if x)]
    if sink_module._sync_range is None:
        print("# no sync_file_range here: both modes write plainly", file=sys.stderr)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-write-", dir=args.dir) as tmp:
        for _ in range(args.rounds):
            for step in steps:
                time.sleep(args.pause)
                results.append(write_once(Path(tmp), args.gb, step, args.rate))
                print(json.dumps(results[-1]), flush=True)
    print()
    print("| mode | paced MB/s | GB | s | CPU s | dropped MB | left in page cache MB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print(
            f"| {r['mode']} | {r['rate_mb_s'] or '-'} | {r['gb']} | {r['seconds']} "
            f"| {r['cpu_s']} | {r['dropped_mb']} | {r['page_cache_mb']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
