"""Shards on Dask distributed (issue 31) vs the process pool, and a cluster started by hand.

On one corpus (``benchmarks.webgen`` ``many``, 2,000 hosts by default) served on loopback
by ``benchmarks.server`` in its own process:

1. ``pool`` vs ``dask``, alternated ``--rounds`` times: ``harvester run --workers 2`` (the
   process pool) and ``harvester run --scheduler local:2 --shards S`` (a LocalCluster of two
   one-thread worker processes), both ``--no-state``, each a fresh subprocess measured by
   ``bench_pipeline.run_measured`` (wall time, CPU, the peak RSS of the tree's largest
   process and the peak sum of PSS over the tree: pages shared by processes forked from
   one server counted once, split between them). The
   dask run's output is ``harvester merge``-d and both are checked against the corpus's
   truth (the same URLs, each once). Target: dask URLs/s >= 0.9 of the pool's (median of
   the rounds' ratios).
2. ``startup``: the same two commands on the corpus's first host only, alternated
   ``--rounds`` times: what a run costs before and after its work (interpreter, imports,
   worker processes; for dask the LocalCluster's scheduler, nannies and workers started
   and closed), which a short run pays in full.
3. ``cluster``: the cluster as a user starts it, as if on separate machines: a ``dask
   scheduler`` process (with a scheduler file) and separate ``dask worker --nthreads 1``
   processes over TCP on loopback, with the Dask settings the README recommends
   (``cluster.local_cluster_config``, given as ``DASK_*`` environment variables), then
   ``harvester run --scheduler-file F`` reading the seeds from and writing to one shared
   directory; with 1 and then 2 workers (the scaling table). Worker RSS is sampled from
   /proc while the run goes.

Each row has the load average (1 min) before and after it: the machine may be shared.

Output: one JSON line per measurement on stdout, then markdown tables; exit status 0
(1 with ``--check`` when the ratio target or a URL check fails).

Usage::

    python -m benchmarks.bench_distributed                 # 2,000 hosts, 1 round
    python -m benchmarks.bench_distributed --hosts 200 --rounds 3
    python -m benchmarks.bench_distributed --only startup --rounds 3
    python -m benchmarks.bench_distributed --only cluster
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_pipeline import (  # noqa: E402
    ServerProcess,
    TreeSampler,
    run_measured,
    tally_output,
    write_config,
)
from benchmarks.webgen import DEFAULT_HOSTS, default_out_dir, generate  # noqa: E402

OUT: Final = ROOT / "benchmarks" / "out" / "distributed"
TARGET_RATIO: Final = 0.9


def harvester(*args: str) -> list[str]:
    return [sys.executable, "-m", "harvester", *args]


def check(tally: Any, truth: Any) -> list[str]:
    problems: list[str] = tally.compare(truth)
    if tally.records != tally.distinct:
        problems.append(f"{tally.records} records for {tally.distinct} distinct URLs")
    return problems


def merged(directory: Path) -> Path:
    out = directory.parent / f"{directory.name}.merged.jsonl"
    subprocess.run(harvester("merge", str(directory), "-o", str(out)), check=True, cwd=ROOT)
    return out


def measure(name: str, cmd: list[str], output: Path, truth: Any, timeout: float) -> dict[str, Any]:
    """Run one harvester command (a fresh output), check its URLs, return its record.

    ``truth`` None: no check (the start-up rows harvest one host).
    """
    for stale in output.parent.glob(output.name + "*"):
        shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    log = output.parent / f"{name}.stderr"
    load_before = os.getloadavg()[0]
    with log.open("w") as err:
        res = run_measured(cmd, timeout=timeout, stderr=err)
    if res.returncode != 0:
        raise SystemExit(f"{name} failed ({res.returncode}): {log.read_text()[-2000:]}")
    records = merged(output) if output.is_dir() else output
    tally = tally_output(records)
    problems = check(tally, truth) if truth is not None else []
    return {
        "measure": name,
        "seconds": round(res.wall_s, 3),
        "cpu_s": round(res.cpu_s, 2),
        "urls": tally.distinct,
        "records": tally.records,
        "urls_per_s": round(tally.distinct / res.wall_s),
        "peak_rss_sum_mb": round(res.peak_rss_sum_mb, 1),
        "peak_rss_max_mb": round(res.peak_rss_max_mb, 1),
        # shared pages split between their sharers (workers forked from one server)
        "peak_pss_sum_mb": round(res.peak_pss_sum_mb, 1),
        "processes": res.processes,
        # each process's own peak (name, MB), largest first: which one is the largest
        "per_process_mb": [(name[:70], round(mb, 1)) for _, name, mb in res.per_process],
        "problems": problems[:5],
        "load": [round(load_before, 2), round(os.getloadavg()[0], 2)],  # 1-min, before/after
    }


def pool_vs_dask(
    seeds: Path, cfg: Path, truth: Any, args: argparse.Namespace
) -> list[dict[str, Any]]:
    rows = []
    for round_ in range(1, args.rounds + 1):
        pool = OUT / "pool.jsonl"
        cmd = harvester("run", "-i", str(seeds), "-o", str(pool), "--config", str(cfg))
        cmd += ["--workers", "2", "--no-state", "--no-progress"]
        rows.append({"round": round_, **measure("pool", cmd, pool, truth, args.timeout)})
        dask = OUT / "dask"
        cmd = harvester("run", "-i", str(seeds), "-o", str(dask), "--config", str(cfg))
        cmd += ["--scheduler", "local:2", "--shards", str(args.shards), "--no-state"]
        cmd += ["--no-progress"]
        rows.append({"round": round_, **measure("dask", cmd, dask, truth, args.timeout)})
        rows[-1]["ratio"] = round(rows[-1]["urls_per_s"] / rows[-2]["urls_per_s"], 3)
        print(json.dumps(rows[-2]), flush=True)
        print(json.dumps(rows[-1]), flush=True)
    return rows


def startup(seeds: Path, cfg: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Pool vs dask on one host: the fixed cost of a run (start and close)."""
    one = OUT / "one-host.txt"
    with seeds.open(encoding="utf-8") as fh:
        one.write_text(fh.readline())
    rows = []
    for round_ in range(1, args.rounds + 1):
        for name, extra in (
            ("pool-1host", ["--workers", "2"]),
            ("dask-1host", ["--scheduler", "local:2", "--shards", str(args.shards)]),
        ):
            out = OUT / (f"{name}.jsonl" if name.startswith("pool") else name)
            cmd = harvester("run", "-i", str(one), "-o", str(out), "--config", str(cfg))
            cmd += [*extra, "--no-state", "--no-progress"]
            rows.append({"round": round_, **measure(name, cmd, out, None, args.timeout)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def dask_environ() -> dict[str, str]:
    """The README's Dask settings for a real cluster as ``DASK_*`` environment variables."""
    from harvester.distributed.cluster import local_cluster_config

    env = dict(os.environ)
    for key, value in local_cluster_config().items():
        env["DASK_" + key.replace(".", "__").replace("-", "_").upper()] = str(value)
    return env


@contextlib.contextmanager
def dask_cluster(workers: int, directory: Path) -> Any:
    """A ``dask scheduler`` and ``workers`` ``dask worker`` processes, each its own command."""
    scheduler_file = directory / "scheduler.json"
    scheduler_file.unlink(missing_ok=True)
    dask = str(Path(sys.executable).with_name("dask"))
    procs: list[subprocess.Popen[bytes]] = []
    log = (directory / "cluster.log").open("ab")
    try:
        procs.append(
            subprocess.Popen(
                [
                    *(dask, "scheduler", "--host", "127.0.0.1", "--port", "0"),
                    *(
                        "--dashboard-address",
                        "127.0.0.1:0",
                        "--scheduler-file",
                        str(scheduler_file),
                    ),
                ],
                stdout=log,
                stderr=log,
                env=dask_environ(),
            )
        )
        deadline = time.monotonic() + 30
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        for _ in range(workers):  # one process each, as on separate machines
            procs.append(
                subprocess.Popen(
                    [
                        *(dask, "worker", "--scheduler-file", str(scheduler_file)),
                        *("--nthreads", "1", "--host", "127.0.0.1"),
                        *("--dashboard-address", "127.0.0.1:0"),
                    ],
                    stdout=log,
                    stderr=log,
                    env=dask_environ(),
                )
            )
        _wait_for_workers(scheduler_file, workers)
        yield scheduler_file, procs[1:]
    finally:
        for proc in reversed(procs):
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


def _wait_for_workers(scheduler_file: Path, workers: int) -> None:
    from distributed import Client

    with Client(scheduler_file=str(scheduler_file), timeout=30) as client:
        client.wait_for_workers(workers, timeout=60)


def cluster_scaling(
    seeds: Path, cfg: Path, truth: Any, args: argparse.Namespace
) -> list[dict[str, Any]]:
    rows = []
    shared = OUT / "shared"
    shared.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(seeds, shared / "domains.txt")
    for workers in (1, 2):
        with dask_cluster(workers, shared) as (scheduler_file, procs):
            samplers = [TreeSampler(p.pid) for p in procs]
            for sampler in samplers:
                sampler.start()
            out = shared / f"out-w{workers}"
            cmd = harvester("run", "-i", str(shared / "domains.txt"), "-o", str(out))
            cmd += ["--config", str(cfg), "--scheduler-file", str(scheduler_file)]
            cmd += ["--shards", str(args.shards), "--no-state", "--no-progress"]
            try:
                row = measure(f"cluster-{workers}w", cmd, out, truth, args.timeout)
            finally:
                for sampler in samplers:
                    sampler.stop()
            row["workers"] = workers
            row["worker_peak_rss_mb"] = [round(s.max_single_kib * 1024 / 1e6, 1) for s in samplers]
            rows.append(row)
            print(json.dumps(row), flush=True)
    rows[1]["speedup"] = round(rows[1]["urls_per_s"] / rows[0]["urls_per_s"], 3)
    return rows


def table(rows: list[dict[str, Any]], extra: str) -> str:
    head = "| measurement | s | CPU s (client tree) | URLs | URLs/s | peak RSS MB (largest) |"
    head += f" peak PSS MB (sum) | load before/after | {extra} |"
    lines = [head, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in rows:
        note = r.get(extra, "")
        load = "/".join(f"{x:.1f}" for x in r["load"])
        lines.append(
            f"| {r['measure']} | {r['seconds']:.1f} | {r['cpu_s']:.1f} | {r['urls']:,} |"
            f" {r['urls_per_s']:,} | {r['peak_rss_max_mb']:.0f} | {r['peak_pss_sum_mb']:.0f} |"
            f" {load} | {note} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=DEFAULT_HOSTS["many"])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument(
        "--only", default="pool,startup,cluster", help="pool (pool vs dask), startup, cluster"
    )
    # Not webgen's default 8765: other benchmarks may be serving it on this machine.
    ap.add_argument("--port", type=int, default=8791)
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument(
        "--harvester-defaults",
        action="store_true",
        help="harvester's own politeness (no [politeness.default] rate or concurrency)",
    )
    args = ap.parse_args(argv)
    corpus = default_out_dir("many", args.hosts, 1, args.port)
    truth = generate("many", corpus, seed=1, hosts=args.hosts, port=args.port)
    OUT.mkdir(parents=True, exist_ok=True)
    rate = 0.0 if args.harvester_defaults else 1000.0  # 0: write_config leaves the defaults
    cfg = write_config(OUT / "harvester.toml", concurrency=4, rate=rate, hosts_in_flight=0)
    ok = True
    with ServerProcess(corpus, 0.0, OUT / "server.log") as server:
        assert server.seeds is not None
        if "pool" in args.only:
            rows = pool_vs_dask(server.seeds, cfg, truth, args)
            ratios = [r["ratio"] for r in rows if "ratio" in r]
            print(table(rows, "ratio"))
            median = statistics.median(ratios)
            print(f"\ndask / pool throughput: median {median:.3f} over {ratios} (target >= 0.9)")
            ok &= median >= TARGET_RATIO and not any(r["problems"] for r in rows)
        if "startup" in args.only:
            rows = startup(server.seeds, cfg, args)
            print()
            print(table(rows, "round"))
        if "cluster" in args.only:
            rows = cluster_scaling(server.seeds, cfg, truth, args)
            print()
            print(table(rows, "speedup"))
            for r in rows:
                print(f"{r['measure']}: worker peak RSS MB {r['worker_peak_rss_mb']}")
            ok &= not any(r["problems"] for r in rows)
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
