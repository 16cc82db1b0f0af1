"""Output formats: what writing 3 million URLs as CSV and Parquet costs the writer, vs JSON Lines.

Each format runs in a fresh child process (so its peak RSS is its own): the child
makes ``--urls`` records like a ``many`` run's (locs of 60-120 characters over
2,000 hosts, lastmod on most, changefreq and priority on some, images on 5 %,
``event`` as with a state file), encodes them to JSON-line blocks of about
256 KiB as the workers do, and gives each block to the sink ``harvester run``
would use (``formats.make_sink``), with a ``sync`` every ``--commit-every``
records, as the state commits every 2 s do (a run of 3 million URLs at about
50,000 URLs/s commits some 30 times: Parquet then writes 30 parts and assembles
them at the end). Then ``close(complete=True)``.

Measured per format: the CPU seconds of the sink calls only (``time.process_time``
around them, so pyarrow's threads count and making the records does not), of
which the final ``close`` (Parquet: assembling the parts), the wall seconds, the
child's peak RSS (``ru_maxrss``; making the records is the same in every child,
so the JSON Lines row is the floor) and the output's size. One table, the
formats side by side, ratios against JSON Lines.

``--run``: the same comparison end to end instead: ``harvester run --workers 2 -o
urls.FORMAT`` on the ``many`` corpus (``benchmarks.webgen``, 3.2 million URLs,
served on loopback by ``benchmarks.server``; a state file beside the output, as a
user gets by default), each format in turn: wall and CPU seconds of the run (all
its processes), the peak RSS of the writer (the parent process, where the
conversion happens) and of all processes summed (``bench_pipeline.run_measured``),
the records in the output and its size.

Usage::

    python -m benchmarks.bench_formats                      # 3,000,000 URLs, every format
    python -m benchmarks.bench_formats --urls 300000 --formats jsonl,parquet
    python -m benchmarks.bench_formats --run                # harvester run on `many`
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

from harvester.output.formats import make_sink
from harvester.urls.records import encode_records

BLOCK = 256 << 10  # bytes of a worker's record block (pipeline.RecordBatch)
HOSTS = 2000


def records(count: int, seed: int = 1) -> Any:
    """``count`` records in a ``many`` run's mix, host by host."""
    rng = random.Random(seed)
    per_host = max(1, count // HOSTS)
    for i in range(count):
        h = i // per_host
        host = f"127.1.{h // 250}.{h % 250 + 1}:8765"
        path = "/".join(f"{rng.getrandbits(40):x}" for _ in range(rng.randint(3, 8)))
        loc = f"http://{host}/{path}"
        rec: dict[str, Any] = {
            "loc": loc,
            "url": loc,
            "host": host,
            "sitemap": f"http://{host}/sitemap-{i % 5}.xml.gz",
            "lastmod": (
                f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00Z" if i % 5 else None
            ),
            "changefreq": "daily" if h % 5 < 2 else None,
            "priority": (i % 10) / 10 if h % 5 < 2 else None,
        }
        if i % 20 == 0:
            rec["images"] = [{"loc": f"{loc}.jpg", "caption": "a caption, with a comma"}]
        rec["event"] = "new"
        yield rec


def child(fmt: str, urls: int, commit_every: int, directory: str) -> dict[str, Any]:
    """One format, in this process: feed the sink, measure it."""
    path = os.path.join(directory, f"urls.{fmt}")
    sink = make_sink(path, fmt, resume_at=None, row_group_rows=65_536)  # type: ignore[arg-type]
    cpu = 0.0
    wall = time.perf_counter()
    block: list[dict[str, Any]] = []
    size = 0
    since_sync = 0
    for rec in records(urls):
        block.append(rec)
        size += 100 + len(rec["loc"]) * 2  # about its JSON length: no encoding to count
        if size < BLOCK:
            continue
        data = encode_records(block)
        started = time.process_time()
        sink.write(data, len(block))
        since_sync += len(block)
        if since_sync >= commit_every:
            sink.sync()
            since_sync = 0
        cpu += time.process_time() - started
        block, size = [], 0
    started = time.process_time()
    if block:
        sink.write(encode_records(block), len(block))
    before_close = time.process_time()
    sink.close(complete=True)
    closing = time.process_time() - before_close
    cpu += time.process_time() - started
    result = {
        "format": fmt,
        "urls": urls,
        "records": sink.records,
        "cpu_s": round(cpu, 2),
        "close_cpu_s": round(closing, 2),
        "wall_s": round(time.perf_counter() - wall, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1000, 1),
        "file_mb": round(os.path.getsize(path) / 1e6, 1),
    }
    os.remove(path)
    return result


def table(rows: list[dict[str, Any]]) -> str:
    """The formats side by side, with ratios against JSON Lines."""
    base = next((r for r in rows if r["format"] == "jsonl"), rows[0])
    lines = [
        "| format | records | sink CPU s | of which close | wall s | peak RSS MB | file MB"
        " | CPU x jsonl | file x jsonl |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        cpu = r["cpu_s"] / base["cpu_s"] if base["cpu_s"] else float("nan")
        lines.append(
            f"| {r['format']} | {r['records']:,} | {r['cpu_s']:.2f} | {r['close_cpu_s']:.2f}"
            f" | {r['wall_s']:.1f} | {r['peak_rss_mb']:.0f} | {r['file_mb']:.0f}"
            f" | {cpu:.1f} | {r['file_mb'] / base['file_mb']:.2f} |"
        )
    return "\n".join(lines)


def count_records(path: str, fmt: str) -> int:
    """Records in an output (streamed: a CSV row may span lines, so csv counts them)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(path).metadata.num_rows)
    with open(path, newline="", encoding="utf-8") as f:
        if fmt == "csv":
            import csv

            return sum(1 for _ in csv.reader(f)) - 1  # the header
        return sum(1 for _ in f)


def run_mode(args: argparse.Namespace) -> list[dict[str, Any]]:
    """``harvester run`` on the ``many`` corpus once per format; one row each."""
    from pathlib import Path

    from benchmarks.bench_pipeline import (
        OUT_ROOT,
        ServerProcess,
        harvester_cmd,
        prepare_corpus,
        run_measured,
        write_config,
    )
    from benchmarks.webgen import DEFAULT_PORT

    corpus = argparse.Namespace(profile="many", hosts=None, corpus=None, seed=1, port=DEFAULT_PORT)
    truth = prepare_corpus(corpus, "bench_formats")
    if truth is None:
        raise SystemExit(1)
    out_dir = Path(args.dir) if args.dir else OUT_ROOT / "formats"
    out_dir.mkdir(parents=True, exist_ok=True)
    cfg = write_config(out_dir / "harvester.toml", concurrency=4, rate=1000.0, hosts_in_flight=0)
    rows = []
    with ServerProcess(truth.out_dir, 0.0, out_dir / "server.stderr") as server:
        assert server.seeds is not None
        for fmt in args.formats.split(","):
            output = out_dir / f"urls.{fmt}"
            for stale in out_dir.glob(output.name + "*"):  # above all its state file
                if stale.is_dir():
                    for part in stale.iterdir():
                        part.unlink()
                    stale.rmdir()
                else:
                    stale.unlink()
            cmd = [*harvester_cmd(), "run", "-i", str(server.seeds), "-o", str(output)]
            cmd += ["--workers", "2", "--config", str(cfg), "--no-progress"]
            with (out_dir / f"harvester-{fmt}.stderr").open("w") as err:
                res = run_measured(cmd, timeout=1800, stderr=err)
            if res.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)}: exit {res.returncode}")
            row = {
                "format": fmt,
                "records": count_records(str(output), fmt),
                "wall_s": round(res.wall_s, 1),
                "cpu_s": round(res.cpu_s, 1),
                "writer_rss_mb": round(_parent_peak(res), 1),
                "rss_sum_mb": round(res.peak_rss_sum_mb, 1),
                "file_mb": round(output.stat().st_size / 1e6, 1),
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def _parent_peak(res: Any) -> float:
    """The parent process's own peak RSS (VmHWM): the writer, not a harvester-worker."""
    for _pid, name, mb in res.per_process:
        if "harvester run " in name and not name.startswith("harvester-worker"):
            return float(mb)
    return 0.0


def run_table(rows: list[dict[str, Any]]) -> str:
    """The ``--run`` rows side by side."""
    base = next((r for r in rows if r["format"] == "jsonl"), rows[0])
    lines = [
        "| format | records | wall s | CPU s (all processes) | writer peak RSS MB"
        " | RSS sum MB | file MB | CPU x jsonl |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['format']} | {r['records']:,} | {r['wall_s']:.1f} | {r['cpu_s']:.1f}"
            f" | {r['writer_rss_mb']:.0f} | {r['rss_sum_mb']:.0f} | {r['file_mb']:.0f}"
            f" | {r['cpu_s'] / base['cpu_s']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run every format in its own child process; print JSON lines, then the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--urls", type=int, default=3_000_000)
    ap.add_argument("--formats", default="jsonl,csv,parquet")
    ap.add_argument("--commit-every", type=int, default=100_000, help="records between syncs")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help="where the outputs go (default: a temporary directory)")
    ap.add_argument("--run", action="store_true", help="harvester run end to end on `many`")
    args = ap.parse_args(argv)
    if args.run:
        print(run_table(run_mode(args)))
        return 0
    if args.child:
        print(json.dumps(child(args.child, args.urls, args.commit_every, args.dir)))
        return 0
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        for fmt in args.formats.split(","):
            cmd = [sys.executable, "-m", "benchmarks.bench_formats", "--child", fmt]
            cmd += ["--urls", str(args.urls), "--commit-every", str(args.commit_every)]
            cmd += ["--dir", directory]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            row = json.loads(out.splitlines()[-1])
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
