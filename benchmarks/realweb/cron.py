"""``python -m benchmarks.realweb.cron``: harvester as a cron job over the realweb (issue 53).

In: ``--domains N`` (2000), ``--seed`` (1), ``--mix`` (fixed), ``--unchanged K`` (3: runs
on generation 0, the first included), ``--changed M`` (5: then one run on each of
generations 1..M, ``generations.py``: a seeded 5 % of the sitemaps mutated each), the
harvester settings (``--workers 2``; ``--harvester-config`` for tests only). Out: one
JSON line per run and a markdown table (``cronreport``) on stdout; with
``--write-results`` the section of this (domains, seed, mix) in
``benchmarks/realweb/RESULTS.md``; every file of the sequence in
``benchmarks/out/realweb-cron-d<N>-s<seed>/`` (git-ignored): ``run<r>/`` holds the run's
output, its per-host report, the server's counters (``serve.json``) and ``result.json``.

Each run is what a cron user runs, with harvester's defaults::

    harvester run -i seeds.txt -o run<r>/out.jsonl --state state.sqlite --emit delta \\
        --workers 2 --allow 127.0.0.0/8

Run r sees a clock ``(r - 1) * --period`` seconds ahead (``HARVESTER_CLOCK_OFFSET``, the
state's clock for testing): adaptive revisit (``state.revisit``) asks a sitemap again
after a time, and the runs, made one after another, stand for an hourly cron by default.

The whole sequence runs in one network namespace (``netns.set_up``: nftables, the DNS
server up throughout); the HTTP server is started for each run with ``--generation g``
and stopped after it (its counters are the run's requests and bytes; restarting it is
how the web moves to its next generation, and what the web served is the same bytes
whenever the generation is the same). The truth of run r is ``generations.delta`` from
the generation of run r - 1 to that of run r (run 1: every listed URL is new).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Final

from benchmarks.bench_pipeline import ROOT, compile_bytecode, harvester_cmd, run_measured
from benchmarks.realweb import cronreport, netns
from benchmarks.realweb.mix import MIXES, mix_for
from benchmarks.realweb.web import build, write_seeds

DNS_LISTEN: Final = netns.DNS_LISTEN


def plan(unchanged: int, changed: int) -> list[int]:
    """The generation of each run: ``unchanged`` runs on 0, then 1..``changed``."""
    return [0] * max(1, unchanged) + list(range(1, changed + 1))


def harvester_run(run_dir: Path, r: int, args: argparse.Namespace) -> list[str]:
    """The measured command of run ``r``."""
    cmd = [*harvester_cmd(), "run", "-i", str(run_dir / "seeds.txt")]
    cmd += ["-o", str(run_dir / f"run{r}" / "out.jsonl"), "--state", str(run_dir / "state.sqlite")]
    cmd += ["--emit", "delta", "--workers", str(args.workers), "--allow", "127.0.0.0/8"]
    if args.harvester_config:
        cmd += ["--config", str(args.harvester_config.resolve())]
    return cmd


def checks(state: Path, out: Path) -> None:
    """What the run did with each sitemap the state knows (status: ``not_due`` when
    adaptive revisit did not ask it), for checking a run's delta against what it asked."""
    if not state.exists():
        return
    db = sqlite3.connect(f"file:{state}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT h.name, s.url, s.final_url, s.status, s.http_status FROM sitemaps s "
            "JOIN hosts h ON h.id = s.host_id"
        ).fetchall()
    finally:
        db.close()
    out.write_text(json.dumps(rows))


def inner(args: argparse.Namespace) -> int:
    """Inside the namespace: the DNS server, then per run the HTTP server and harvester."""
    run_dir: Path = args.run_dir.resolve()
    if os.getuid() != 0 or not Path("/proc/self/ns/net").exists():
        print("cron: run me through outer (unshare -rnm)", file=sys.stderr)
        return 2
    nft = netns.set_up(run_dir, args.domains, args.seed, args.mix)
    for var in netns.PROXY_VARS:
        os.environ.pop(var, None)
    os.environ["SSL_CERT_FILE"] = str(run_dir / "certs" / "bundle.pem")
    web = ["--domains", str(args.domains), "--seed", str(args.seed), "--mix", args.mix]
    py = sys.executable
    serve_cmd = [py, "-m", "benchmarks.realweb.serve", *web, "--certs", str(run_dir / "certs")]
    if not nft:
        serve_cmd.append("--no-nft")
    with (run_dir / "dns.stderr").open("w") as dns_log:
        dns = netns.start(
            [py, "-m", "benchmarks.realweb.dns", *web, "--listen", DNS_LISTEN], dns_log
        )
        try:
            for r, g in enumerate(plan(args.unchanged, args.changed), start=1):
                one = run_dir / f"run{r}"
                one.mkdir(parents=True, exist_ok=True)
                stats = ["--generation", str(g), "--stats", str(one / "serve.json")]
                # The injected clock (testing only, state.codec.now): run r stands for a
                # cron run (r - 1) periods after the first, though they follow each other.
                os.environ["HARVESTER_CLOCK_OFFSET"] = str((r - 1) * args.period)
                with (one / "serve.stderr").open("w") as log:
                    serve = netns.start([*serve_cmd, *stats], log)
                    try:
                        with (one / "tool.stderr").open("w") as err:
                            res = run_measured(
                                harvester_run(run_dir, r, args), timeout=args.timeout, stderr=err
                            )
                    finally:
                        netns.stop(serve)
                checks(run_dir / "state.sqlite", one / "sitemaps.json")
                result = {"run": r, "generation": g, "process": asdict(res), "nft": nft}
                (one / "result.json").write_text(json.dumps(result, indent=1))
                print(
                    f"# run {r} (generation {g}): {res.wall_s:.1f} s", file=sys.stderr, flush=True
                )
        finally:
            netns.stop(dns)
    return 0


def outer(args: argparse.Namespace) -> int:
    """Build the web, run the sequence in a namespace, check each run against its truth."""
    from benchmarks.realweb.__main__ import make_certs

    why = netns.can_unshare()
    if why is not None:
        print(f"cron: cannot run: {why}", file=sys.stderr)
        return 3
    mix = mix_for(args.mix, args.seed)
    tag = f"s{args.seed}" if args.mix == "fixed" else f"r{args.seed}"
    run_dir: Path = (
        args.out or ROOT / "benchmarks" / "out" / f"realweb-cron-d{args.domains}-{tag}"
    ).resolve()
    if run_dir.exists():
        shutil.rmtree(run_dir)  # the state file of an earlier sequence would be its run 0
    run_dir.mkdir(parents=True)
    sites = build(args.domains, args.seed, mix)
    make_certs(sites, run_dir / "certs")
    write_seeds(sites, run_dir / "seeds.txt")
    gens = plan(args.unchanged, args.changed)
    print(
        f"# cron: {args.domains} domains, web {mix.label}, generations {gens}; {run_dir}",
        file=sys.stderr,
        flush=True,
    )
    compile_bytecode()
    argv = ["--inner", "--run-dir", str(run_dir), "--domains", str(args.domains)]
    argv += ["--seed", str(args.seed), "--mix", args.mix, "--workers", str(args.workers)]
    argv += [
        "--unchanged",
        str(args.unchanged),
        "--changed",
        str(args.changed),
        "--timeout",
        str(args.timeout),
        "--period",
        str(args.period),
    ]
    if args.harvester_config:
        argv += ["--harvester-config", str(args.harvester_config.resolve())]
    cmd = ["unshare", "-rnm", sys.executable, "-m", "benchmarks.realweb.cron", *argv]
    budget = len(gens) * (args.timeout + 60) + 120
    proc = subprocess.run(cmd, cwd=ROOT, text=True, timeout=budget, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"cron: the sequence failed (exit {proc.returncode}); see {run_dir}")
    rows = cronreport.rows(run_dir, sites, args.seed, gens)
    for row in rows:
        print(json.dumps(row.record()), flush=True)
    text = cronreport.markdown(rows, mix.label)
    print(text, flush=True)
    if args.write_results:
        write(text, mix.label, args)
    return 0


def write(text: str, label: str, args: argparse.Namespace) -> None:
    """The sequence's section of RESULTS.md."""
    from benchmarks.realweb.__main__ import write_results

    title = f"## Cron sequence (issue 53): {args.domains} domains, {label}, seed {args.seed}"
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    machine = (
        f"{os.cpu_count()} cores (shared); {when};"
        f" harvester defaults, --state --emit delta, --workers {args.workers};"
        f" runs {args.period:g} s apart on the injected clock"
    )
    write_results(title, text, machine)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.realweb.cron", description=__doc__)
    ap.add_argument("--domains", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mix", choices=MIXES, default="fixed")
    ap.add_argument(
        "--unchanged", type=int, default=3, help="runs on generation 0 (first included)"
    )
    ap.add_argument("--changed", type=int, default=5, help="then one run per generation 1..M")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--period",
        type=float,
        default=3600.0,
        help="seconds between the cron runs the sequence stands for (HARVESTER_CLOCK_OFFSET,"
        " a clock for testing: the runs follow each other); default an hourly cron",
    )
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per run, then killed")
    ap.add_argument("--out", type=Path, help="sequence directory (default benchmarks/out/…)")
    ap.add_argument("--harvester-config", type=Path, help="extra TOML (tests only)")
    ap.add_argument("--write-results", action="store_true")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--run-dir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    return inner(args) if args.inner else outer(args)


if __name__ == "__main__":
    sys.exit(main())
