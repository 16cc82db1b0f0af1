"""CPU per URL of ``harvester run`` on a plain corpus and a mixed one of the same size (issue 52).

Two corpora of ``benchmarks.webgen`` at the same ``--hosts``: ``many`` (plain ``<url>``
entries) and ``mixed`` (the same hosts, sitemaps, gzip files and URLs, plus the
extensions sites publish: ``image:image`` on about 40 % of the URLs, hreflang
``xhtml:link`` alternates on a fifth of the hosts, ``news:news`` on a twentieth). Each is
served on loopback by ``benchmarks.server`` and harvested by
``harvester run -i SEEDS -o OUT`` with default settings (the state file on; the config
only allows the loopback addresses), the two alternated ``--rounds`` times. CPU seconds
are the harvester process tree's user + system (``RUSAGE_CHILDREN``), so other load on the
machine moves them far less than wall time.

Output: one line per run, then a table: CPU µs per URL for plain and mixed side by
side, their ratio (issue 52's targets: mixed <= 10 µs/URL and <= 1.3 x plain), wall
seconds and peak RSS; medians over the rounds.

Usage::

    python -m benchmarks.bench_mix                       # 200 hosts (about 100 k URLs), 1 round
    python -m benchmarks.bench_mix --hosts 2000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.bench_pipeline import (
    ServerProcess,
    StepError,
    compile_bytecode,
    harvester_cmd,
    run_measured,
    write_config,
)
from benchmarks.webgen import DEFAULT_PORT, default_out_dir, generate

PROFILES = ("many", "mixed")


def run_once(
    corpus: Path, work: Path, workers: int, timeout: float, harvester: str | None = None
) -> dict[str, Any]:
    """One ``harvester run`` over ``corpus`` (served here); its CPU, wall, RSS and URLs."""
    for stale in work.glob("urls.jsonl*"):
        stale.unlink()
    cfg = write_config(work / "harvester.toml", concurrency=0, rate=0, hosts_in_flight=0)
    output = work / "urls.jsonl"
    with ServerProcess(corpus, 0.0, work / "server.log") as server:
        assert server.seeds is not None
        cmd = [*harvester_cmd(harvester), "run", "-i", str(server.seeds), "-o", str(output)]
        cmd += ["--workers", str(workers), "--config", str(cfg)]
        with (work / "harvester.stderr").open("w") as err:
            res = run_measured(cmd, timeout=timeout, stderr=err)
    if res.timed_out or res.returncode != 0:
        tail = (work / "harvester.stderr").read_text()[-1500:]
        raise StepError(f"harvester run failed (exit {res.returncode}): {tail}")
    with output.open("rb") as fh:
        urls = sum(1 for _ in fh)
    return {
        "urls": urls,
        "cpu_s": round(res.cpu_s, 3),
        "wall_s": round(res.wall_s, 3),
        "peak_rss_mb": round(res.peak_rss_sum_mb, 1),
        "us_per_url": round(res.cpu_s / max(urls, 1) * 1e6, 2),
    }


def main(argv: list[str] | None = None) -> int:
    """Generate (or reuse) both corpora, alternate the runs, print the table; 0 done."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_mix", description=__doc__)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--harvester", help="the command to run instead of this checkout's harvester")
    ap.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="the corpora's port (one not in use)"
    )
    args = ap.parse_args(argv)
    compile_bytecode()
    corpora = {}
    for profile in PROFILES:
        out = default_out_dir(profile, args.hosts, 1, args.port)
        truth = generate(profile, out, hosts=args.hosts, port=args.port)
        corpora[profile] = (out, truth.total_urls)
    results: dict[str, list[dict[str, Any]]] = {p: [] for p in PROFILES}
    with tempfile.TemporaryDirectory(prefix="bench-mix-") as tmp:
        for round_ in range(args.rounds):
            for profile in PROFILES:
                corpus, total = corpora[profile]
                one = run_once(corpus, Path(tmp), args.workers, args.timeout, args.harvester)
                if one["urls"] != total:
                    print(f"# {profile}: {one['urls']} URLs written, corpus has {total}")
                results[profile].append(one)
                print(json.dumps({"round": round_ + 1, "profile": profile, **one}), flush=True)

    def median(profile: str, key: str) -> float:
        return float(statistics.median(r[key] for r in results[profile]))

    plain, mixed = median("many", "us_per_url"), median("mixed", "us_per_url")
    print(f"\nharvester run, default settings, {args.workers} workers, {args.hosts} hosts")
    print("| corpus | URLs | CPU s | CPU µs/URL | wall s | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for profile in PROFILES:
        print(
            f"| {profile} | {results[profile][0]['urls']:,} | {median(profile, 'cpu_s'):.2f}"
            f" | {median(profile, 'us_per_url'):.2f} | {median(profile, 'wall_s'):.2f}"
            f" | {median(profile, 'peak_rss_mb'):.0f} |"
        )
    print(f"\nmixed / plain CPU per URL: {mixed / plain:.2f} x (target <= 1.3 x; mixed <= 10 µs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
