"""A cProfile of ``harvester run`` on bench_mix's corpora, in one process (issue 52).

In: ``--profile`` (``mixed`` or ``many``), ``--hosts`` (bench_mix's corpora, generated or
reused), ``--top`` rows. The corpus is served on loopback by ``benchmarks.server``; the
harvester runs with ``--workers 1`` (in-process: reading, batching, the state file and
the writer in one interpreter) under cProfile with a CPU clock (``time.process_time``:
on a machine shared with other work, wall-clock profiles charge the waits to whatever
ran). Out: the run's CPU seconds per URL, then the functions with the most own time and
the most cumulative time.

The profiler's own cost inflates Python frames far more than C calls, so the shares
here say where to look, and bench_mix's figures say what a change is worth.

``--reader``: instead, the reading stage alone on both corpora, in this process: every
sitemap file of the corpus read from disk by harvester's ``SitemapReader``
(``bench_parse``'s loop), CPU seconds (best of ``--repeat``) per entry (URLs and index
children), plain and mixed side by side.

Usage::

    python -m benchmarks.profile_mix --profile mixed --hosts 100
    python -m benchmarks.profile_mix --reader --hosts 100
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_parse import run_ours
from benchmarks.bench_pipeline import ServerProcess, StepError, run_measured, write_config
from benchmarks.webgen import DEFAULT_PORT, default_out_dir, generate


def profiled(stats_path: str, args: list[str]) -> int:
    """``harvester`` with ``args`` under cProfile (CPU clock), the stats to ``stats_path``."""
    from harvester.cli import main as harvester_main

    profiler = cProfile.Profile(time.process_time)
    try:
        return int(profiler.runcall(harvester_main, args))
    finally:
        profiler.dump_stats(stats_path)


def reader_only(hosts: int, repeat: int, port: int = DEFAULT_PORT) -> None:
    """Print the reading stage's CPU µs per entry on both corpora."""
    print("| corpus | entries | XML MB | reader CPU µs/entry |")
    print("|---|---:|---:|---:|")
    for profile in ("many", "mixed"):
        corpus = default_out_dir(profile, hosts, 1, port)
        generate(profile, corpus, hosts=hosts, port=port)
        files = sorted(p for p in corpus.rglob("*") if p.name.endswith((".xml", ".xml.gz")))
        best = float("inf")
        counted: list[tuple[int, int]] = []
        for _ in range(repeat):
            start = time.process_time()
            counted = [run_ours(path) for path in files]
            best = min(best, time.process_time() - start)
        urls = sum(n for n, _ in counted)
        size = sum(b for _, b in counted)
        print(f"| {profile} | {urls:,} | {size / 1e6:.1f} | {best / urls * 1e6:.2f} |")


def main(argv: list[str] | None = None) -> int:
    """Profile one run; print the tables; 0 done."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--inner"]:  # the profiled process itself: --inner STATS ARGS...
        return profiled(argv[1], argv[2:])
    ap = argparse.ArgumentParser(prog="python -m benchmarks.profile_mix", description=__doc__)
    ap.add_argument("--profile", default="mixed", choices=("many", "mixed"))
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--top", type=int, default=35)
    ap.add_argument("--reader", action="store_true", help="the reading stage alone, both corpora")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--port", type=int, default=DEFAULT_PORT, help="the corpus's port")
    args = ap.parse_args(argv)
    if args.reader:
        reader_only(args.hosts, args.repeat, args.port)
        return 0
    corpus = default_out_dir(args.profile, args.hosts, 1, args.port)
    total = generate(args.profile, corpus, hosts=args.hosts, port=args.port).total_urls
    with tempfile.TemporaryDirectory(prefix="profile-mix-") as tmp:
        work = Path(tmp)
        cfg = write_config(work / "harvester.toml", concurrency=0, rate=0, hosts_in_flight=0)
        stats_path = work / "run.prof"
        with ServerProcess(corpus, 0.0, work / "server.log") as server:
            assert server.seeds is not None
            cmd = [sys.executable, "-m", "benchmarks.profile_mix", "--inner", str(stats_path)]
            cmd += ["run", "-i", str(server.seeds), "-o", str(work / "urls.jsonl")]
            cmd += ["--workers", "1", "--config", str(cfg)]
            with (work / "harvester.stderr").open("w") as err:
                res = run_measured(cmd, timeout=1800, stderr=err)
        if res.returncode != 0:
            tail = (work / "harvester.stderr").read_text()[-1500:]
            raise StepError(f"harvester run failed (exit {res.returncode}): {tail}")
        print(f"{args.profile}, {args.hosts} hosts, {total:,} URLs: {res.cpu_s:.2f} CPU s")
        print(f"(profiled, 1 worker): {res.cpu_s / total * 1e6:.2f} µs per URL\n")
        stats = pstats.Stats(str(stats_path))
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
